/* SPDX-License-Identifier: BSD-3-Clause */
/* Kernel UDP transport: non-blocking socket, sendmmsg/recvmmsg batches,
 * runs cut by the kernel (UDP GSO) and coalesced by it (UDP GRO), large
 * socket buffers, poll() for the waits. */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/errqueue.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dgram.h"

#define DGRAM_BATCH 64

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103 /* linux/udp.h, 4.18 */
#endif
#ifndef UDP_GRO
#define UDP_GRO 104 /* linux/udp.h, 5.0 */
#endif

/* Destinations reported unreachable and not yet asked for: a few, the
 * oldest overwritten (the caller asks after every receive). */
#define UNREACH_KEEP 8

struct udp_ctx {
	int fd;
	bool gso;  /* the kernel takes runs (until it refuses one) */
	bool gro;  /* received runs come coalesced */
	bool ecn;  /* the IP header's ECN field comes with each receive */
	bool idle; /* the last receive found the socket empty */
	struct sockaddr_in unreach[UNREACH_KEEP];
	unsigned nunreach, unreach_next;
};

/* The errors an ICMP report about an earlier datagram leaves on the socket
 * (IP_RECVERR): the next send or receive fails with one of them, once. */
static bool icmp_error(int e) { return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == EHOSTDOWN; }

/* Reads the socket's error queue: each entry names the destination of a
 * datagram that bounced. */
static void drain_errors(struct udp_ctx *u)
{
	for (;;) {
		struct sockaddr_in dst;
		union {
			char buf[CMSG_SPACE(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in))];
			struct cmsghdr align;
		} ctl;
		char byte;
		struct iovec iov = { &byte, 1 };
		struct msghdr m = { .msg_name = &dst,
				    .msg_namelen = sizeof(dst),
				    .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf) };
		if (recvmsg(u->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			const struct sock_extended_err *ee = (const void *)CMSG_DATA(c);
			if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR ||
			    ee->ee_origin != SO_EE_ORIGIN_ICMP || !icmp_error((int)ee->ee_errno) ||
			    m.msg_namelen < sizeof(dst))
				continue;
			u->unreach[u->unreach_next++ % UNREACH_KEEP] = dst;
			if (u->nunreach < UNREACH_KEEP)
				u->nunreach++;
		}
	}
}

static int udp_unreachable(void *ctx, struct sockaddr_in *peer)
{
	struct udp_ctx *u = ctx;
	if (!u->nunreach)
		return 0;
	*peer = u->unreach[(u->unreach_next - u->nunreach) % UNREACH_KEEP];
	u->nunreach--;
	return 1;
}

/* The control message that makes the kernel cut a run into datagrams. */
union seg_cmsg {
	char buf[CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};

static void set_run(struct msghdr *m, union seg_cmsg *c, uint16_t seg)
{
	m->msg_control = c->buf;
	m->msg_controllen = sizeof(c->buf);
	struct cmsghdr *h = CMSG_FIRSTHDR(m);
	h->cmsg_level = SOL_UDP;
	h->cmsg_type = UDP_SEGMENT;
	h->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	memcpy(CMSG_DATA(h), &seg, sizeof(seg));
}

/* How the kernel refuses a run it cannot segment: no checksum offload in
 * an old kernel (EIO), a zero-checksum socket (EINVAL), a route whose MTU
 * is smaller than a segment (EMSGSIZE, where a lone datagram would be
 * fragmented). */
static bool run_refused(int e) { return e == EIO || e == EINVAL || e == EMSGSIZE; }

static int udp_send(void *ctx, const struct dgram_pkt *pkts, unsigned n)
{
	struct udp_ctx *u = ctx;
	struct mmsghdr msgs[DGRAM_BATCH];
	struct iovec iov[DGRAM_BATCH];
	union seg_cmsg ctl[DGRAM_BATCH];
	unsigned done = 0, reports = 0;

	while (done < n) {
		unsigned k = n - done < DGRAM_BATCH ? n - done : DGRAM_BATCH;
		for (unsigned i = 0; i < k; i++) {
			const struct dgram_pkt *p = &pkts[done + i];
			iov[i] = (struct iovec){ p->buf, p->len };
			msgs[i].msg_hdr = (struct msghdr){ .msg_name = (void *)&p->peer,
							   .msg_namelen = sizeof(p->peer),
							   .msg_iov = p->iovcnt ? (struct iovec *)p->iov : &iov[i],
							   .msg_iovlen = p->iovcnt ? p->iovcnt : 1 };
			if (dgram_segments(p) > 1) {
				if (!u->gso)
					return done ? (int)done : -EMSGSIZE; /* the caller did not ask max_segs */
				set_run(&msgs[i].msg_hdr, &ctl[i], p->seg);
			}
		}
		int r = sendmmsg(u->fd, msgs, k, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EAGAIN || errno == ENOBUFS)
				break;
			if (errno == EINTR)
				continue;
			if (icmp_error(errno) && reports++ < 4) { /* about an earlier datagram: none of these went */
				drain_errors(u);
				continue;
			}
			if (run_refused(errno) && dgram_segments(&pkts[done]) > 1) {
				u->gso = false; /* the caller sends that run again as single datagrams */
				break;
			}
			return done ? (int)done : -errno;
		}
		done += (unsigned)r;
		if ((unsigned)r < k)
			break;
	}
	return (int)done;
}

static unsigned udp_max_segs(void *ctx)
{
	const struct udp_ctx *u = ctx;
	return u->gso ? DGRAM_MAX_SEGS : 1;
}

static int udp_wait(int fd, short events, int64_t timeout_ns)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	/* to the microsecond: a wait for the host's queue to drain is a
	 * fraction of a millisecond, and poll() would round it up to one */
	struct timespec ts = { 0, 0 };
	if (timeout_ns > 0)
		ts = (struct timespec){ timeout_ns / 1000000000, timeout_ns % 1000000000 };
	int r;
	while ((r = ppoll(&pfd, 1, &ts, NULL)) < 0 && errno == EINTR)
		;
	return r < 0 ? -errno : r;
}

/* What a receive's control messages say: the segment size of a run the
 * kernel coalesced (0: a lone datagram; the kernel coalesces only
 * datagrams of one TOS) and whether the IP header said CE. */
static void rx_cmsgs(const struct msghdr *m, struct dgram_pkt *p)
{
	p->seg = 0;
	p->ce = 0;
	for (const struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR((struct msghdr *)m, (struct cmsghdr *)c))
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int v;
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			p->seg = v > 0 && v <= UINT16_MAX ? (uint16_t)v : 0;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			p->ce = (*CMSG_DATA(c) & 3) == 3; /* ECN's CE codepoint */
		}
}

static int udp_recv(void *ctx, struct dgram_pkt *pkts, unsigned n, int64_t timeout_ns)
{
	struct udp_ctx *u = ctx;
	struct mmsghdr msgs[DGRAM_BATCH];
	struct iovec iov[DGRAM_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(int))]; /* UDP_GRO, IP_TOS */
		struct cmsghdr align;
	} ctl[DGRAM_BATCH];
	const bool cmsgs = u->gro || u->ecn;

	if (n > DGRAM_BATCH)
		n = DGRAM_BATCH;
	for (unsigned i = 0; i < n; i++) {
		iov[i] = (struct iovec){ pkts[i].buf, pkts[i].len };
		msgs[i].msg_hdr = (struct msghdr){ .msg_name = &pkts[i].peer,
						   .msg_namelen = sizeof(pkts[i].peer),
						   .msg_iov = &iov[i],
						   .msg_iovlen = 1,
						   .msg_control = cmsgs ? ctl[i].buf : NULL,
						   .msg_controllen = cmsgs ? sizeof(ctl[i].buf) : 0 };
	}
	/* an idle socket is waited on first: a receive that finds nothing is
	 * a system call for nothing */
	bool waited = false;
	unsigned reports = 0;
	if (u->idle && timeout_ns > 0) {
		int w = udp_wait(u->fd, POLLIN, timeout_ns);
		if (w <= 0)
			return w;
		waited = true;
	}
	for (;;) {
		int r = recvmmsg(u->fd, msgs, n, MSG_DONTWAIT, NULL);
		if (r > 0) {
			for (int i = 0; i < r; i++) {
				pkts[i].len = msgs[i].msg_len;
				if (cmsgs)
					rx_cmsgs(&msgs[i].msg_hdr, &pkts[i]);
				else
					pkts[i].seg = pkts[i].ce = 0;
			}
			u->idle = false;
			return r;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && icmp_error(errno) &&
		    reports++ < 4) { /* a report of an earlier send, not of this receive */
			drain_errors(u);
			continue;
		}
		if (r < 0 && errno != EAGAIN)
			return -errno;
		if (waited) {
			drain_errors(u); /* woken by an error report (POLLERR), not by data */
			break;
		}
		if (timeout_ns <= 0)
			break;
		int w = udp_wait(u->fd, POLLIN, timeout_ns);
		if (w <= 0)
			return w;
		waited = true;
	}
	u->idle = true;
	return 0;
}

static int udp_wait_send(void *ctx, int64_t timeout_ns)
{
	struct udp_ctx *u = ctx;
	return udp_wait(u->fd, POLLOUT, timeout_ns);
}

/* For UDP the kernel's output queue count is the memory of the socket's
 * datagrams not yet sent by the device (qdisc included). */
static long udp_tx_queued(void *ctx)
{
	struct udp_ctx *u = ctx;
	int q;
	return ioctl(u->fd, SIOCOUTQ, &q) == 0 ? q : -1;
}

static void udp_close(void *ctx)
{
	struct udp_ctx *u = ctx;
	close(u->fd);
	free(u);
}

static const struct dgram_ops udp_ops = {
	.send_batch = udp_send,
	.recv_batch = udp_recv,
	.max_segs = udp_max_segs,
	.wait_send = udp_wait_send,
	.tx_queued = udp_tx_queued,
	.unreachable = udp_unreachable,
	.close = udp_close,
};

/* Asks for buf bytes; as root the *FORCE variants pass net.core.*mem_max. */
static void set_buf(int fd, int opt, int force_opt, uint32_t bytes)
{
	int v = (int)bytes;
	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) != 0)
		setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

static bool avoided(const struct dgram_udp_opts *opts, uint16_t port)
{
	for (unsigned i = 0; opts && i < sizeof(opts->avoid_ports) / sizeof(opts->avoid_ports[0]); i++)
		if (opts->avoid_ports[i] && opts->avoid_ports[i] == port)
			return true;
	return false;
}

/* A socket with the options applied, bound to addr; -errno on failure. */
static int open_bound(const struct sockaddr_in *addr, const struct dgram_udp_opts *opts, char *err, size_t errlen)
{
	char ip[INET_ADDRSTRLEN];
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return rc;
	}
	uint32_t buf = opts && opts->sock_buf_bytes ? opts->sock_buf_bytes : 8u << 20;
	set_buf(fd, SO_RCVBUF, SO_RCVBUFFORCE, buf);
	set_buf(fd, SO_SNDBUF, SO_SNDBUFFORCE, buf);
	if (opts && opts->zero_checksum) {
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one));
	}
	/* ICMP reports on an unconnected socket (udp_unreachable): a peer
	 * whose process died is seen at its next datagram, not at a deadline */
	int recverr = 1;
	setsockopt(fd, IPPROTO_IP, IP_RECVERR, &recverr, sizeof(recverr));
	if (opts && opts->gro) {
		int one = 1;
		setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)); /* without it (before 5.0): lone datagrams */
	}
	if (opts && opts->ecn) {
		int ect0 = 2, one = 1;
		if (setsockopt(fd, IPPROTO_IP, IP_TOS, &ect0, sizeof(ect0)) != 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) != 0) {
			int rc = -errno;
			snprintf(err, errlen, "IP_TOS/IP_RECVTOS (ECN): %s", strerror(errno));
			close(fd);
			return rc;
		}
	}
	if (bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) != 0) {
		int rc = -errno;
		inet_ntop(AF_INET, &addr->sin_addr, ip, sizeof(ip));
		snprintf(err, errlen, "bind %s:%u: %s", ip, ntohs(addr->sin_port), strerror(errno));
		close(fd);
		return rc;
	}
	return fd;
}

/* The port the kernel gave fd. */
static uint16_t bound_port(int fd)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	return getsockname(fd, (struct sockaddr *)&a, &al) == 0 ? ntohs(a.sin_port) : 0;
}

int dgram_udp_open(struct dgram_transport *t, const struct sockaddr_in *addr, const struct dgram_udp_opts *opts,
		   char *err, size_t errlen)
{
	struct udp_ctx *u = calloc(1, sizeof(*u));
	if (!u) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* A kernel-chosen port that this process will need itself is held
	 * open while asking again, so the next choice differs; eight tries
	 * cover four avoided ports many times over. */
	int held[8], nheld = 0, fd;
	for (;;) {
		fd = open_bound(addr, opts, err, errlen);
		if (fd < 0 || addr->sin_port || !avoided(opts, bound_port(fd)))
			break;
		if (nheld == (int)(sizeof(held) / sizeof(held[0]))) {
			close(fd);
			snprintf(err, errlen, "bind: the kernel kept choosing ports reserved for INA");
			fd = -EADDRINUSE;
			break;
		}
		held[nheld++] = fd;
	}
	while (nheld)
		close(held[--nheld]);
	if (fd < 0) {
		free(u);
		return fd;
	}
	u->fd = fd;
	u->gso = !(opts && opts->zero_checksum); /* the kernel cuts runs only with checksums */
	u->gro = opts && opts->gro;
	u->ecn = opts && opts->ecn;
	t->ops = &udp_ops;
	t->ctx = u;
	return 0;
}

int dgram_udp_local(const struct dgram_transport *t, struct sockaddr_in *addr)
{
	const struct udp_ctx *u = t->ctx;
	socklen_t len = sizeof(*addr);
	return getsockname(u->fd, (struct sockaddr *)addr, &len) == 0 ? 0 : -errno;
}
