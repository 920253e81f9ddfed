/* SPDX-License-Identifier: BSD-3-Clause */
/* Host transports: how the host collective library (hcl) moves datagrams.
 * A transport is an ops table, so the algorithms run unchanged over kernel
 * UDP (dgram_udp_open) or, in unit tests, over a fake that loses, duplicates
 * and reorders.  Datagrams only: reliability is the layer above.
 *
 * A send may carry a run of datagrams in one pkt, gathered from an iovec
 * (the caller's buffers, no copy) and cut into datagrams of `seg` bytes by
 * the transport (UDP GSO: one system call and one trip through the stack
 * for up to 64 KB); a receive may return a run the kernel coalesced (UDP
 * GRO), `seg` bytes each.  Either way the wire carries single datagrams,
 * and each is lost, duplicated or reordered on its own. */
#ifndef DGRAM_H
#define DGRAM_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/uio.h>

struct dgram_pkt {
	void *buf;		 /* send: the datagram (when iovcnt is 0); recv: the buffer */
	uint32_t len;		 /* send: bytes to send; recv: capacity in, bytes received out */
	struct sockaddr_in peer; /* send: destination; recv: source */
	/* send: the bytes come from iov[0..iovcnt) instead of buf; recv: unused */
	const struct iovec *iov;
	uint16_t iovcnt;
	/* send: 0, or the datagrams' size when len bytes are a run of them (the
	 * last may be shorter); recv: the same for a run the kernel coalesced */
	uint16_t seg;
	/* recv: a queue on the way marked it congestion-experienced (ECN CE;
	 * on a transport opened with dgram_udp_opts.ecn); send: unused */
	uint8_t ce;
};

/* Most datagrams in one sent run (the kernel's UDP GSO limit), and most
 * bytes in any run (a UDP datagram's largest payload). */
#define DGRAM_MAX_SEGS 64
#define DGRAM_MAX_RUN  65507

struct dgram_ops {
	/* Sends up to n pkts without blocking: the number taken (may be fewer
	 * when the socket is full), or -errno. */
	int (*send_batch)(void *ctx, const struct dgram_pkt *pkts, unsigned n);
	/* Receives up to n pkts, waiting at most timeout_ns for the first (0:
	 * do not wait): the number received (0 on timeout), or -errno.  A pkt
	 * is a run of datagrams (seg > 0) only on a transport opened to
	 * coalesce (dgram_udp_opts.gro), whose buffers hold DGRAM_MAX_RUN. */
	int (*recv_batch)(void *ctx, struct dgram_pkt *pkts, unsigned n, int64_t timeout_ns);
	/* How many datagrams one sent pkt may carry now: 1 (no runs) for a
	 * transport without them, or one that found the kernel refusing them
	 * (it then sends nothing of that pkt and answers 1 from then on).
	 * NULL: 1. */
	unsigned (*max_segs)(void *ctx);
	/* Waits at most timeout_ns until a send can make progress. */
	int (*wait_send)(void *ctx, int64_t timeout_ns);
	/* Bytes of this endpoint's datagrams the host holds still (its qdisc,
	 * its device queue), in the host's own accounting; -1 when unknown.
	 * May be NULL. */
	long (*tx_queued)(void *ctx);
	/* A destination the host reported unreachable since the last call
	 * (an ICMP port or host unreachable for a datagram sent to it: nothing
	 * listens there any more).  1 with *peer set, 0 when there is none.
	 * The sends and receives that meet such a report carry on.  May be
	 * NULL: never reported. */
	int (*unreachable)(void *ctx, struct sockaddr_in *peer);
	void (*close)(void *ctx);
};

struct dgram_transport {
	const struct dgram_ops *ops;
	void *ctx;
};

struct dgram_udp_opts {
	uint32_t sock_buf_bytes; /* SO_RCVBUF/SO_SNDBUF; 0 = 8 MiB */
	int zero_checksum;	 /* send with UDP checksum 0 (as SwitchML hosts do) */
	int gro;		 /* coalesce received runs (UDP GRO): the caller's buffers hold DGRAM_MAX_RUN */
	/* send ECN-capable (ECT(0)) and report CE marks on what arrives
	 * (dgram_pkt.ce): for senders whose windows follow the marks */
	int ecn;
	/* With port 0: ports (host order, 0 = unused) the kernel's choice must
	 * not be, because this process binds them itself later on the same
	 * address (an ephemeral port can be any of them). */
	uint16_t avoid_ports[4];
};

/* Opens a non-blocking UDP socket bound to addr (port 0: any but
 * opts->avoid_ports).  0, or -errno with the reason in err. */
int dgram_udp_open(struct dgram_transport *t, const struct sockaddr_in *addr, const struct dgram_udp_opts *opts,
		   char *err, size_t errlen);
/* Bytes [off, off + len) of a sent pkt, from its buf or its iovec, into
 * out (len bytes); for transports that cut runs themselves. */
void dgram_gather(const struct dgram_pkt *p, uint32_t off, uint32_t len, uint8_t *out);
/* How many datagrams pkt p carries. */
static inline uint32_t dgram_segments(const struct dgram_pkt *p)
{
	return p->seg && p->len > p->seg ? (p->len + p->seg - 1) / p->seg : 1;
}
/* Datagrams one pkt may carry on t. */
static inline unsigned dgram_max_segs(const struct dgram_transport *t)
{
	return t->ops->max_segs ? t->ops->max_segs(t->ctx) : 1;
}

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
