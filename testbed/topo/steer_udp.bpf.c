/* SPDX-License-Identifier: BSD-3-Clause */
/* A host's steering, as a NIC's flow rules would do it for a partitioned
 * ToR (docs/SWEMU.md, "One switch on several lcores"): on the egress of
 * the host's veth, a datagram to INA port P gets the flow hash that puts
 * it on transmit queue (P - 48864) mod N, which veth hands to the switch
 * side's receive queue of the same number, where partition (P - 48864)
 * mod N's af_xdp socket waits; control datagrams (48863) go to queue 0.
 * Everything else keeps its own hash, so plain flows spread over the
 * partitions too.  The hash and not skb->queue_mapping: the kernel picks
 * the transmit queue after this program runs, from the hash (veth has no
 * XPS map), and overwrites a queue a program set.  One program per N. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define INA_PORT_MIN 48864
#define INA_PORT_MAX 48879
#define CTRL_PORT    48863

static __always_inline int steer(struct __sk_buff *skb, __u32 n)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	struct iphdr *ip = (void *)(eth + 1);
	/* the library's datagrams carry no IP options; a fragment's tail has
	 * no UDP header, and its head alone would be steered */
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3fff)))
		return TC_ACT_OK;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end)
		return TC_ACT_OK;
	__u32 port = bpf_ntohs(udp->dest), q;
	if (port >= INA_PORT_MIN && port <= INA_PORT_MAX)
		q = (port - INA_PORT_MIN) % n;
	else if (port == CTRL_PORT)
		q = 0;
	else
		return TC_ACT_OK;
	/* the queue is (hash * n) >> 32: the first hash of q's range */
	bpf_set_hash(skb, (__u32)(((__u64)q << 32) / n) + 1);
	return TC_ACT_OK;
}

SEC("steer2") int steer_2(struct __sk_buff *skb) { return steer(skb, 2); }
SEC("steer3") int steer_3(struct __sk_buff *skb) { return steer(skb, 3); }
SEC("steer4") int steer_4(struct __sk_buff *skb) { return steer(skb, 4); }

char _license[] SEC("license") = "GPL";
