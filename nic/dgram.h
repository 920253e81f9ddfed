/* SPDX-License-Identifier: BSD-3-Clause */
/* Host transports: how the host collective library (hcl) moves datagrams.
 * A transport is an ops table, so the algorithms run unchanged over kernel
 * UDP (dgram_udp_open) or, in unit tests, over a fake that loses, duplicates
 * and reorders.  Datagrams only: reliability is the layer above. */
#ifndef DGRAM_H
#define DGRAM_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

struct dgram_pkt {
	void *buf;
	uint32_t len;		 /* send: bytes to send; recv: capacity in, bytes received out */
	struct sockaddr_in peer; /* send: destination; recv: source */
};

struct dgram_ops {
	/* Sends up to n datagrams without blocking: the number taken (may be
	 * fewer when the socket is full), or -errno. */
	int (*send_batch)(void *ctx, const struct dgram_pkt *pkts, unsigned n);
	/* Receives up to n datagrams, waiting at most timeout_ns for the first
	 * (0: do not wait): the number received (0 on timeout), or -errno. */
	int (*recv_batch)(void *ctx, struct dgram_pkt *pkts, unsigned n, int64_t timeout_ns);
	/* Waits at most timeout_ns until a send can make progress. */
	int (*wait_send)(void *ctx, int64_t timeout_ns);
	/* Bytes of this endpoint's datagrams the host holds still (its qdisc,
	 * its device queue), in the host's own accounting; -1 when unknown.
	 * May be NULL. */
	long (*tx_queued)(void *ctx);
	void (*close)(void *ctx);
};

struct dgram_transport {
	const struct dgram_ops *ops;
	void *ctx;
};

struct dgram_udp_opts {
	uint32_t sock_buf_bytes; /* SO_RCVBUF/SO_SNDBUF; 0 = 8 MiB */
	int zero_checksum;	 /* send with UDP checksum 0 (as SwitchML hosts do) */
	/* With port 0: ports (host order, 0 = unused) the kernel's choice must
	 * not be, because this process binds them itself later on the same
	 * address (an ephemeral port can be any of them). */
	uint16_t avoid_ports[4];
};

/* Opens a non-blocking UDP socket bound to addr (port 0: any but
 * opts->avoid_ports).  0, or -errno with the reason in err. */
int dgram_udp_open(struct dgram_transport *t, const struct sockaddr_in *addr, const struct dgram_udp_opts *opts,
		   char *err, size_t errlen);
/* The bound address (port resolved). */
int dgram_udp_local(const struct dgram_transport *t, struct sockaddr_in *addr);

static inline void dgram_close(struct dgram_transport *t)
{
	if (t->ops)
		t->ops->close(t->ctx);
	t->ops = NULL;
	t->ctx = NULL;
}

#endif
