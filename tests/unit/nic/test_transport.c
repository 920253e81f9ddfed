/* SPDX-License-Identifier: BSD-3-Clause */
/* Host transports: kernel UDP on loopback (batches, contents, sources,
 * timeouts, errors) and the fake hub the algorithm tests run on. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "fake_transport.h"
#include "testlib.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void open_loopback(struct dgram_transport *t, struct sockaddr_in *bound)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char err[128];
	int rc = dgram_udp_open(t, &a, NULL, err, sizeof(err));
	if (rc)
		fail_msg("%s", err);
	assert_int_equal(dgram_udp_local(t, bound), 0);
	assert_int_not_equal(bound->sin_port, 0);
}

/* 400 datagrams of 1..8948 bytes in batches: all arrive, intact, from the
 * sender's address. */
static void test_udp_batches(void **state)
{
	(void)state;
	struct dgram_transport a, b;
	struct sockaddr_in aa, ba;
	static uint8_t out[400][8948], in[64][9000];
	struct dgram_pkt p[64];
	struct tl_rng rng = { 3 };
	uint32_t lens[400];

	open_loopback(&a, &aa);
	open_loopback(&b, &ba);
	for (int i = 0; i < 400; i++) {
		lens[i] = 1 + tl_below(&rng, 8948);
		memset(out[i], 0, 4);
		memcpy(out[i], &i, sizeof(i));
		for (uint32_t k = sizeof(i); k < lens[i]; k++)
			out[i][k] = (uint8_t)(i * 7 + k);
	}
	int sent = 0, got = 0;
	bool seen[400] = { false };
	double t0 = now_s();
	while (got < 400) {
		assert_true(now_s() - t0 < 10); /* loopback: everything within 10 s */
		if (sent < 400) {
			struct dgram_pkt s[32];
			int k = 0;
			for (; k < 32 && sent + k < 400; k++)
				s[k] = (struct dgram_pkt){ .buf = out[sent + k], .len = lens[sent + k], .peer = ba };
			int r = a.ops->send_batch(a.ctx, s, (unsigned)k);
			assert_true(r >= 0);
			sent += r;
		}
		for (int i = 0; i < 64; i++)
			p[i] = (struct dgram_pkt){ .buf = in[i], .len = sizeof(in[i]) };
		int r = b.ops->recv_batch(b.ctx, p, 64, 10000000);
		assert_true(r >= 0);
		for (int i = 0; i < r; i++) {
			int idx;
			memcpy(&idx, p[i].buf, sizeof(idx));
			assert_true(idx >= 0 && idx < 400);
			assert_false(seen[idx]);
			seen[idx] = true;
			assert_int_equal(p[i].len, lens[idx]);
			assert_memory_equal(p[i].buf, out[idx], lens[idx]);
			assert_int_equal(p[i].peer.sin_port, aa.sin_port);
			assert_int_equal(p[i].peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
		}
		got += r;
	}
	dgram_close(&a);
	dgram_close(&b);
}

/* A receive on a quiet socket returns 0 after its timeout, not before and
 * not much later. */
static void test_udp_timeout(void **state)
{
	(void)state;
	struct dgram_transport t;
	struct sockaddr_in a;
	uint8_t buf[64];
	struct dgram_pkt p = { .buf = buf, .len = sizeof(buf) };
	open_loopback(&t, &a);
	double t0 = now_s();
	assert_int_equal(t.ops->recv_batch(t.ctx, &p, 1, 50000000), 0);
	double el = now_s() - t0;
	assert_true(el >= 0.045 && el < 2.0);
	assert_int_equal(t.ops->recv_batch(t.ctx, &p, 1, 0), 0); /* no wait */
	assert_true(t.ops->wait_send(t.ctx, 1000000) > 0);
	dgram_close(&t);
}

/* A datagram to a port nothing listens on: the host's ICMP report names
 * that destination (unreachable), and the socket goes on working — the
 * report is neither a failed receive nor a failed send. */
static void test_udp_unreachable(void **state)
{
	(void)state;
	struct dgram_transport a, b, c;
	struct sockaddr_in aa, ba, ca, gone;
	uint8_t msg[16] = { 1 }, buf[64];
	open_loopback(&a, &aa);
	open_loopback(&b, &ba);
	open_loopback(&c, &ca);
	dgram_close(&b); /* b's port is closed now */
	assert_int_equal(a.ops->unreachable(a.ctx, &gone), 0);
	struct dgram_pkt s = { .buf = msg, .len = sizeof(msg), .peer = ba };
	assert_int_equal(a.ops->send_batch(a.ctx, &s, 1), 1);
	double t0 = now_s();
	int found = 0;
	while (!found && now_s() - t0 < 5) {
		struct dgram_pkt p = { .buf = buf, .len = sizeof(buf) };
		assert_int_equal(a.ops->recv_batch(a.ctx, &p, 1, 10000000), 0);
		found = a.ops->unreachable(a.ctx, &gone);
	}
	assert_int_equal(found, 1);
	assert_int_equal(gone.sin_port, ba.sin_port);
	assert_int_equal(gone.sin_addr.s_addr, ba.sin_addr.s_addr);
	assert_int_equal(a.ops->unreachable(a.ctx, &gone), 0); /* reported once */
	/* the same again, then a send elsewhere: the pending report does not
	 * fail it, and the datagram arrives */
	assert_int_equal(a.ops->send_batch(a.ctx, &s, 1), 1);
	struct dgram_pkt p = { .buf = buf, .len = sizeof(buf) };
	for (t0 = now_s(); !a.ops->unreachable(a.ctx, &gone) && now_s() - t0 < 5;)
		assert_true(a.ops->recv_batch(a.ctx, &p, 1, 10000000) >= 0);
	s.peer = ca;
	assert_int_equal(a.ops->send_batch(a.ctx, &s, 1), 1);
	p = (struct dgram_pkt){ .buf = buf, .len = sizeof(buf) };
	assert_int_equal(c.ops->recv_batch(c.ctx, &p, 1, 1000000000), 1);
	assert_memory_equal(buf, msg, sizeof(msg));
	dgram_close(&a);
	dgram_close(&c);
}

static void test_udp_bind_error(void **state)
{
	(void)state;
	struct dgram_transport t = { 0 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(5000) };
	char err[128] = "";
	inet_pton(AF_INET, "192.0.2.1", &a.sin_addr); /* not on this host */
	assert_int_equal(dgram_udp_open(&t, &a, NULL, err, sizeof(err)), -EADDRNOTAVAIL);
	assert_non_null(strstr(err, "bind 192.0.2.1:5000"));
	assert_null(t.ops);
}

/* A transport opened with ecn reports which datagrams arrived marked CE
 * (sent here by a plain socket with each ECN codepoint), and what it
 * sends is ECN-capable (ECT(0)), as a plain receiver reads it; one
 * opened without it reports no mark. */
static void test_udp_ecn(void **state)
{
	(void)state;
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) }, ta, pa;
	struct dgram_transport t;
	char err[128];
	for (int with = 1; with >= 0; with--) {
		struct dgram_udp_opts o = { .ecn = with };
		if (dgram_udp_open(&t, &lo, &o, err, sizeof(err)))
			fail_msg("%s", err);
		assert_int_equal(dgram_udp_local(&t, &ta), 0);
		int s = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
		assert_true(s >= 0);
		assert_int_equal(bind(s, (struct sockaddr *)&lo, sizeof(lo)), 0);
		assert_int_equal(setsockopt(s, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)), 0);
		socklen_t sl = sizeof(pa);
		assert_int_equal(getsockname(s, (struct sockaddr *)&pa, &sl), 0);
		for (int ecn = 0; ecn < 4; ecn++) {
			assert_int_equal(setsockopt(s, IPPROTO_IP, IP_TOS, &ecn, sizeof(ecn)), 0);
			assert_int_equal(sendto(s, &ecn, sizeof(ecn), 0, (struct sockaddr *)&ta, sizeof(ta)),
					 sizeof(ecn));
		}
		uint8_t bufs[4][64];
		struct dgram_pkt in[4];
		int got = 0;
		while (got < 4) {
			for (int i = got; i < 4; i++)
				in[i] = (struct dgram_pkt){ .buf = bufs[i], .len = sizeof(bufs[i]), .ce = 7 };
			int n = t.ops->recv_batch(t.ctx, in + got, (unsigned)(4 - got), 1000000000);
			assert_true(n > 0);
			got += n;
		}
		for (int i = 0; i < 4; i++)
			assert_int_equal(in[i].ce, with && i == 3);
		/* back to the plain socket: its TOS byte as sent */
		struct dgram_pkt out = { .buf = "x", .len = 1, .peer = pa };
		assert_int_equal(t.ops->send_batch(t.ctx, &out, 1), 1);
		char b[8];
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { b, sizeof(b) };
		struct msghdr m = {
			.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl)
		};
		assert_int_equal(recvmsg(s, &m, 0), 1);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		assert_non_null(c);
		assert_int_equal(c->cmsg_type, IP_TOS);
		assert_int_equal(*CMSG_DATA(c), with ? 2 : 0);
		close(s);
		dgram_close(&t);
	}
}

static uint16_t open_any(struct dgram_transport *t, const struct dgram_udp_opts *o, int want_rc)
{
	struct sockaddr_in a = { .sin_family = AF_INET }, b;
	char err[128] = "";
	int rc = dgram_udp_open(t, &a, o, err, sizeof(err));
	if (rc != want_rc)
		fail_msg("dgram_udp_open: %d (%s), want %d", rc, err, want_rc);
	if (rc)
		return 0;
	assert_int_equal(dgram_udp_local(t, &b), 0);
	return ntohs(b.sin_port);
}

/* A kernel-chosen port is never one the caller reserved (the INA port a
 * rank binds later on the same address).  In a network namespace of its
 * own whose ephemeral range is two ports, 40000 and 40001; it changes the
 * process's namespace, so it runs last. */
static void test_udp_avoid_ports(void **state)
{
	(void)state;
	if (unshare(CLONE_NEWNET) != 0) { /* not root; cmocka's skip() reads as a failure in TAP */
		printf("# test_udp_avoid_ports skipped: needs root (a network namespace)\n");
		return;
	}
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "w");
	assert_non_null(f);
	fprintf(f, "40000 40001\n");
	assert_int_equal(fclose(f), 0);
	struct dgram_udp_opts avoid = { .avoid_ports = { 40000 } }, none = { 0 };
	struct dgram_transport t = { 0 }, held = { 0 };
	for (int i = 0; i < 20; i++) { /* the kernel would pick 40000 about half the time */
		assert_int_equal(open_any(&t, &avoid, 0), 40001);
		dgram_close(&t);
	}
	/* with 40001 taken, 40000 is the kernel's only choice ... */
	assert_int_equal(open_any(&held, &avoid, 0), 40001);
	assert_int_equal(open_any(&t, &none, 0), 40000);
	dgram_close(&t);
	/* ... so avoiding it fails, and releases what it held on the way */
	assert_int_equal(open_any(&t, &avoid, -EADDRINUSE), 0);
	assert_null(t.ops);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(40000) };
	char err[128];
	assert_int_equal(dgram_udp_open(&t, &a, NULL, err, sizeof(err)), 0);
	dgram_close(&t);
	dgram_close(&held);
}

/* The fake hub loses, duplicates and reorders at the rates it is given, and
 * the same seed gives the same run. */
static void test_fake_hub(void **state)
{
	(void)state;
	struct fake_net net = { .loss = 0.2, .dup = 0.1, .reorder = 0.3, .seed = 77 };
	uint64_t first_delivered = 0;
	for (int run = 0; run < 2; run++) {
		struct fake_hub *h = fake_hub_new(2, &net);
		struct dgram_transport a, b;
		fake_hub_endpoint(h, 0, &a);
		fake_hub_endpoint(h, 1, &b);
		uint32_t seq[20000], got[30000];
		unsigned ngot = 0;
		for (uint32_t i = 0; i < 20000; i++) {
			seq[i] = i;
			struct dgram_pkt p = { .buf = &seq[i], .len = 4, .peer = fake_addr(1) };
			assert_int_equal(a.ops->send_batch(a.ctx, &p, 1), 1);
		}
		for (;;) {
			struct dgram_pkt p[64];
			for (int i = 0; i < 64; i++)
				p[i] = (struct dgram_pkt){
					.buf = &got[ngot + (unsigned)i < 30000 ? ngot + (unsigned)i : 0], .len = 4
				};
			int r = b.ops->recv_batch(b.ctx, p, 64, 0);
			if (r == 0)
				break;
			for (int i = 0; i < r; i++)
				assert_int_equal(p[i].peer.sin_port, htons(1000));
			ngot += (unsigned)r;
		}
		struct fake_stats st = fake_hub_stats(h);
		assert_int_equal(st.sent, 20000);
		assert_true(st.lost > 3700 && st.lost < 4300);
		assert_true(st.duplicated > 1400 && st.duplicated < 1800);
		assert_int_equal(ngot, 20000 - st.lost + st.duplicated);
		unsigned inversions = 0;
		for (unsigned i = 1; i < ngot; i++)
			inversions += got[i] < got[i - 1];
		assert_true(inversions > 1000); /* reordered */
		if (run == 0)
			first_delivered = st.delivered;
		else
			assert_int_equal(st.delivered, first_delivered);
		fake_hub_free(h);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_udp_batches),	cmocka_unit_test(test_udp_timeout),
		cmocka_unit_test(test_udp_bind_error),	cmocka_unit_test(test_fake_hub),
		cmocka_unit_test(test_udp_ecn),		cmocka_unit_test(test_udp_unreachable),
		cmocka_unit_test(test_udp_avoid_ports), /* last: a netns */
	};
	return cmocka_run_group_tests_name("transport", tests, NULL, NULL);
}
