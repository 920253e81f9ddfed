/* SPDX-License-Identifier: BSD-3-Clause */
/* The public API: ranks as threads rendezvous at a master on loopback and
 * all-reduce; configuration from the environment; the errors a user meets
 * (world mismatch, no master, missing settings) are named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hcl.h"
#include "ina_bfp.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &l);
	close(fd);
	return ntohs(a.sin_port);
}

/* Fixed ports of a run below the kernel's ephemeral range (32768 up),
 * where a socket another test (or this one) opened on any port cannot
 * take them: a rank's INA port, and the software PS's (port + shard). */
static int ina_port_of(int master, int rank) { return 20000 + master % 12000 + rank; }

static void set_ps_port(void)
{
	char port[16];
	snprintf(port, sizeof(port), "%d", 10000 + free_port() % 9000);
	setenv("HCL_PS_PORT", port, 1);
}

struct rk {
	int rank, world, port, claim_world;
	enum hcl_algo algo;
	int ina_bfp; /* cfg.ina_bfp: 3 = the float job is bf16 on the wire */
	int64_t timeout_ms;
	const char *hostfile;  /* instead of world, master address and port */
	const char *trace_dir; /* the timing layer on, with pacing */
	int ring_channels;     /* cfg.ring_channels */
	int ps_shards;	       /* cfg.ps_shards */
	size_t big;	       /* then one int32 call of this many elements */
	struct hcl_sync_summary sum;
	int rc;
	char err[320];
};

/* bf16 bits of x, which must be exactly representable */
static uint16_t bf16_of(double x)
{
	float f = (float)x;
	uint32_t u;
	memcpy(&u, &f, 4);
	assert_true((u & 0xffff) == 0);
	return (uint16_t)(u >> 16);
}

/* x rounded to bf16's 8 significant bits, to nearest even (x > 0) */
static double bf16_round(double x)
{
	double ulp = ldexp(1.0, ilogb(x) - 7);
	return rint(x / ulp) * ulp;
}

/* A bf16 call: even elements are 256 on rank 0 and 1 elsewhere, so a sum
 * rounded once (256 + 3 -> 260 with four ranks) differs from one rounded
 * at every add (256 + 1 -> 256 each time); odd elements are multiples of
 * 1/8 whose sums are exact. */
static int bf16_call(struct hcl_comm *c, int rank, int world, char *err, size_t errlen)
{
	enum { N = 3001 };
	static __thread uint16_t v[N];
	for (int i = 0; i < N; i++)
		v[i] = bf16_of(i % 2 ? ((rank * 3 + i) % 17 - 8) / 8.0 : rank ? 1.0 : 256.0);
	int rc = hcl_allreduce(v, v, N, HCL_BF16, HCL_SUM, c);
	if (rc) {
		snprintf(err, errlen, "bf16: %s", hcl_comm_error(c));
		return rc;
	}
	for (int i = 0; i < N; i++) {
		double want = 0;
		for (int k = 0; k < world; k++)
			want += i % 2 ? ((k * 3 + i) % 17 - 8) / 8.0 : k ? 1.0 : 256.0;
		if (i % 2 == 0)
			want = bf16_round(want);
		if (v[i] != bf16_of(want)) {
			snprintf(err, errlen, "bf16 element %d: %04x != %04x (%g)", i, v[i], bf16_of(want), want);
			return -1;
		}
	}
	return 0;
}

/* HCL_AVG in the three types: int32 rounds toward zero (-7 - 0 ... over
 * two ranks is -3, not -4), fp32 and bf16 divide the exact sum. */
static int avg_call(struct hcl_comm *c, int rank, int world, char *err, size_t errlen)
{
	int32_t iv[3] = { rank ? 0 : -7, rank ? 0 : 7, 3 * rank };
	float fv[2] = { (float)rank, rank ? 0.0f : 1.0f };
	uint16_t hv[2] = { bf16_of(rank), bf16_of(rank ? 0 : 3) };
	int rc = hcl_allreduce(iv, iv, 3, HCL_INT32, HCL_AVG, c);
	if (rc == 0)
		rc = hcl_allreduce(fv, fv, 2, HCL_FP32, HCL_AVG, c);
	if (rc == 0)
		rc = hcl_allreduce(hv, hv, 2, HCL_BF16, HCL_AVG, c);
	if (rc) {
		snprintf(err, errlen, "avg: %s", hcl_comm_error(c));
		return rc;
	}
	int32_t tri = 3 * world * (world - 1) / 2;
	double want_f[2] = { (world - 1) / 2.0, 1.0 / world };
	if (iv[0] != -7 / world || iv[1] != 7 / world || iv[2] != tri / world)
		return snprintf(err, errlen, "avg int32: %d %d %d, want %d %d %d", iv[0], iv[1], iv[2], -7 / world,
				7 / world, tri / world),
		       -1;
	if (fv[0] != (float)want_f[0] || fv[1] != (float)want_f[1])
		return snprintf(err, errlen, "avg fp32: %g %g", fv[0], fv[1]), -1;
	/* bf16: (world-1)/2 is exact; 3/world is rounded once */
	if (hv[0] != bf16_of((world - 1) / 2.0) || hv[1] != bf16_of(bf16_round(3.0 / world)))
		return snprintf(err, errlen, "avg bf16: %04x %04x, want %04x %04x", hv[0], hv[1],
				bf16_of((world - 1) / 2.0), bf16_of(bf16_round(3.0 / world))),
		       -1;
	return 0;
}

/* One int32 call of n elements in place, checked element by element (a
 * part of the split lost, doubled or shifted shows). */
static int big_call(struct hcl_comm *c, int rank, int world, size_t n, char *err, size_t errlen)
{
	int32_t *v = malloc(n * sizeof(*v));
	if (!v)
		return snprintf(err, errlen, "out of memory"), -1;
	for (size_t i = 0; i < n; i++)
		v[i] = (int32_t)(i * 7 + (size_t)rank * 100003);
	int rc = hcl_allreduce(v, v, n, HCL_INT32, HCL_SUM, c);
	if (rc)
		snprintf(err, errlen, "big call: %s", hcl_comm_error(c));
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int32_t want = (int32_t)((size_t)world * i * 7 + (size_t)(world * (world - 1) / 2) * 100003);
		if (v[i] != want)
			rc = -1, snprintf(err, errlen, "big call element %zu of %zu: %d != %d", i, n, v[i], want);
	}
	free(v);
	return rc;
}

static void *rank_main(void *arg)
{
	struct rk *r = arg;
	struct hcl_comm_cfg cfg = { .rank = r->rank,
				    .world = r->claim_world ? r->claim_world : r->world,
				    .master_addr = "127.0.0.1",
				    .master_port = r->port,
				    .timeout_ms = r->timeout_ms ? r->timeout_ms : 10000,
				    .algo = r->algo,
				    .ina_port = ina_port_of(r->port, r->rank),
				    .ina_slots = 8,
				    .ina_elems = 512,
				    .rack = r->rank / 2,
				    .ina_bfp = r->ina_bfp,
				    .ring_channels = r->ring_channels,
				    .ps_shards = r->ps_shards };
	if (r->hostfile)
		cfg = (struct hcl_comm_cfg){
			.rank = r->rank, .world = -1, .rack = -1, .hostfile = r->hostfile, .timeout_ms = 10000
		};
	cfg.trace_dir = r->trace_dir;
	cfg.pace = r->trace_dir ? 1 : -1;
	struct hcl_comm *c;
	r->rc = hcl_comm_create(&cfg, &c, r->err, sizeof(r->err));
	if (r->rc)
		return NULL;
	enum { N = 10007 };
	static __thread int32_t in[N], out[N];
	for (int call = 0; call < 3 && r->rc == 0; call++) {
		for (int i = 0; i < N; i++)
			in[i] = r->rank * 1000 + i + call;
		/* calls 0 and 2 out of place, call 1 in place */
		int32_t *dst = call == 1 ? in : out;
		r->rc = hcl_allreduce(in, dst, N, HCL_INT32, HCL_SUM, c);
		if (r->rc) {
			snprintf(r->err, sizeof(r->err), "%s", hcl_comm_error(c));
			break;
		}
		for (int i = 0; i < N; i++) {
			int32_t want = 0;
			for (int k = 0; k < r->world; k++)
				want += k * 1000 + i + call;
			if (dst[i] != want) {
				snprintf(r->err, sizeof(r->err), "call %d element %d: %d != %d", call, i, dst[i], want);
				r->rc = -1;
				break;
			}
		}
	}
	if (r->rc == 0 && !r->trace_dir) /* the timing test counts three calls */
		r->rc = bf16_call(c, r->rank, r->world, r->err, sizeof(r->err));
	if (r->rc == 0 && !r->trace_dir)
		r->rc = avg_call(c, r->rank, r->world, r->err, sizeof(r->err));
	if (r->rc == 0 && r->ina_bfp == 3) {
		/* fp32 over a bf16 job: 1 + 2^-10 leaves as 1, so the sum is the
		 * world size; in fp32 it would be world * (1 + 2^-10) */
		float f[5] = { 1 + 0x1p-10f, 1 + 0x1p-10f, 1 + 0x1p-10f, 1 + 0x1p-10f, 1 + 0x1p-10f };
		r->rc = hcl_allreduce(f, f, 5, HCL_FP32, HCL_SUM, c);
		for (int i = 0; r->rc == 0 && i < 5; i++)
			if (f[i] != (float)r->world) {
				snprintf(r->err, sizeof(r->err), "fp32 over bf16: element %d is %.9g, want %d", i, f[i],
					 r->world);
				r->rc = -1;
			}
	}
	if (r->rc == 0 && r->big)
		r->rc = big_call(c, r->rank, r->world, r->big, r->err, sizeof(r->err));
	if (r->rc == 0 && r->trace_dir && hcl_comm_sync_summary(c, &r->sum) != 0)
		r->rc = -2;
	hcl_comm_destroy(c);
	return NULL;
}

static void run(int world, struct rk *rks, int port)
{
	pthread_t th[16];
	for (int i = 0; i < world; i++) {
		rks[i].rank = i;
		rks[i].world = world;
		rks[i].port = port;
		pthread_create(&th[i], NULL, rank_main, &rks[i]);
	}
	for (int i = 0; i < world; i++)
		pthread_join(th[i], NULL);
}

/* Every rank of a run that should pass: all failures are printed before
 * the test fails (one rank's error is often the echo of another's). */
static void all_ok(int world, const struct rk *rks, const char *what)
{
	int bad = -1;
	for (int i = 0; i < world; i++)
		if (rks[i].rc) {
			print_error("%s rank %d: %s\n", what, i, rks[i].err);
			bad = bad < 0 ? i : bad;
		}
	if (bad >= 0)
		fail_msg("%s: rank %d failed", what, bad);
}

/* Four ranks of which rank 2 announces itself wrongly: the master fails
 * saying master_says, rank 2 is refused with rank2_says. */
static void run_refused(struct rk *rks, const char *master_says, const char *rank2_says)
{
	for (int i = 0; i < 4; i++)
		rks[i].timeout_ms = 3000;
	run(4, rks, free_port());
	assert_int_not_equal(rks[0].rc, 0);
	assert_non_null(strstr(rks[0].err, master_says));
	assert_int_not_equal(rks[2].rc, 0);
	assert_non_null(strstr(rks[2].err, rank2_says));
}

static void test_allreduce(void **state)
{
	(void)state;
	for (int world = 1; world <= 5; world++) {
		struct rk rks[16] = { 0 };
		run(world, rks, free_port());
		char what[32];
		snprintf(what, sizeof(what), "world %d", world);
		all_ok(world, rks, what);
	}
}

/* The ring split over channels: 1, 2 and 3 channels (and 4 asked for, of
 * which a 3 MiB call uses 3), 3 and 4 ranks, a call of 3 MiB + 7
 * elements (odd, not divisible by ranks or channels); exact. */
static void test_channels(void **state)
{
	(void)state;
	for (int ch = 1; ch <= 4; ch++)
		for (int world = 3; world <= 4; world++) {
			struct rk rks[16] = { 0 };
			for (int i = 0; i < world; i++) {
				rks[i].ring_channels = ch;
				rks[i].big = (3u << 20) / 4 + 7; /* 3 MiB + 28 bytes */
			}
			run(world, rks, free_port());
			char what[48];
			snprintf(what, sizeof(what), "%d channels, world %d", ch, world);
			all_ok(world, rks, what);
		}
	/* every rank must split alike: a rank with another count is refused */
	struct rk rks[16] = { 0 };
	for (int i = 0; i < 4; i++)
		rks[i].ring_channels = i == 2 ? 1 : 2;
	run_refused(rks, "another number of ring channels", "refused: ERR rank 2: another number of ring channels");
	/* and one that leaves the choice to the library among ranks that set it */
	memset(rks, 0, sizeof(rks));
	for (int i = 0; i < 4; i++)
		rks[i].ring_channels = i == 2 ? 0 : 2;
	run_refused(rks, "ring channels auto there", "refused: ERR rank 2: ring channels auto there");
}

/* The timing layer through the public API: every call of every rank is a
 * complete point, the summary adds up, each rank's trace ends with it. */
static void test_timing_layer(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_comm_trace.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char sub[sizeof(dir) + 8];
	snprintf(sub, sizeof(sub), "%s/t", dir); /* made by the layer */
	struct rk rks[16] = { 0 };
	for (int i = 0; i < 4; i++)
		rks[i].trace_dir = sub;
	run(4, rks, free_port());
	for (int i = 0; i < 4; i++) {
		if (rks[i].rc)
			fail_msg("rank %d: %d %s", i, rks[i].rc, rks[i].err);
		const struct hcl_sync_summary *m = &rks[i].sum;
		assert_int_equal(m->calls, 3);
		assert_int_equal(m->iterations, 3);
		assert_int_equal(m->incomplete_calls, 0);
		assert_true(fabs(m->compute_share + m->delay_share + m->wait_share + m->comm_share - 1) < 1e-9);
		char path[sizeof(sub) + 32], line[2048], last[2048] = "";
		snprintf(path, sizeof(path), "%s/rank%d.jsonl", sub, i);
		FILE *f = fopen(path, "r");
		assert_non_null(f);
		int calls = 0;
		while (fgets(line, sizeof(line), f)) {
			calls += strstr(line, "\"call\"") && strstr(line, "\"complete\":true");
			snprintf(last, sizeof(last), "%s", line);
		}
		fclose(f);
		unlink(path);
		assert_int_equal(calls, 3);
		assert_non_null(strstr(last, "\"summary\""));
	}
	rmdir(sub);
	rmdir(dir);
}

/* The software parameter server in rank 0, used like an INA switch, its
 * float job as configured by ina_bfp (0: native fp32). */
static void run_ps(int ina_bfp)
{
	for (int world = 1; world <= 4; world += 3) {
		struct rk rks[16] = { 0 };
		for (int i = 0; i < world; i++) {
			rks[i].algo = HCL_ALGO_PS;
			rks[i].ina_bfp = ina_bfp;
		}
		set_ps_port();
		run(world, rks, free_port());
		char what[48];
		snprintf(what, sizeof(what), "ps (ina_bfp %d) world %d", ina_bfp, world);
		all_ok(world, rks, what);
	}
	unsetenv("HCL_PS_PORT");
}

static void test_ps(void **state)
{
	(void)state;
	run_ps(0);
}

/* The float job in bf16 (cfg.ina_bfp = 3): bf16 calls go as they are,
 * fp32 calls are rounded to bf16 on the way out. */
static void test_ps_bf16_wire(void **state)
{
	(void)state;
	run_ps(3);
}

/* The software PS in shards (BytePS-style), one per rank or fewer: every
 * call exact, also one of 3 MiB + 28 bytes whose 1537 slices do not
 * divide by the shards, and the fp32 job as block floating point (two
 * passes, each sharded); and under rack aggregators.  A rank with another
 * count fails them all by name; counts and settings out of range are
 * refused. */
static void test_ps_shards(void **state)
{
	(void)state;
	set_ps_port();
	for (int world = 3; world <= 4; world++)
		for (int shards = 2; shards <= world; shards++) {
			struct rk rks[16] = { 0 };
			for (int i = 0; i < world; i++) {
				rks[i].algo = HCL_ALGO_PS;
				rks[i].ps_shards = shards;
				rks[i].ina_bfp = shards == 3 ? 1 : 0;
				rks[i].big = (3u << 20) / 4 + 7;
			}
			run(world, rks, free_port());
			char what[48];
			snprintf(what, sizeof(what), "ps, %d shards, world %d", shards, world);
			all_ok(world, rks, what);
		}
	struct rk rks[16] = { 0 };
	for (int i = 0; i < 4; i++) {
		rks[i].algo = HCL_ALGO_PS;
		rks[i].ps_shards = i == 2 ? 1 : 2;
		rks[i].timeout_ms = 3000;
	}
	run(4, rks, free_port());
	for (int i = 0; i < 4; i++) {
		assert_int_not_equal(rks[i].rc, 0);
		if (!strstr(rks[i].err, "different PS shard counts"))
			fail_msg("rank %d: %s", i, rks[i].err);
	}
	/* six ranks in racks of two under rack aggregators (agent/psina_plan.h),
	 * all on one IP: each hosting rank at its own port; exact, one PS and
	 * three shards */
	setenv("HCL_PS_RACK_AGG", "always", 1);
	for (int shards = 1; shards <= 3; shards += 2) {
		struct rk six[16] = { 0 };
		for (int i = 0; i < 6; i++) {
			six[i].algo = HCL_ALGO_PS_INA;
			six[i].ps_shards = shards;
		}
		run(6, six, free_port());
		all_ok(6, six, "ps-ina, rack aggregators");
	}
	setenv("HCL_PS_RACK_AGG", "sometimes", 1);
	struct rk one[16] = { { .algo = HCL_ALGO_PS } };
	run(1, one, free_port());
	unsetenv("HCL_PS_RACK_AGG");
	assert_int_equal(one[0].rc, -EINVAL);
	assert_non_null(strstr(one[0].err, "HCL_PS_RACK_AGG=sometimes"));
	for (int bad = 0; bad < 3; bad++) {
		struct rk one[16] = { 0 };
		one[0].algo = HCL_ALGO_PS;
		one[0].ps_shards = bad == 0 ? 2 : bad == 1 ? 17 : 0; /* world 1 */
		if (bad == 2)
			setenv("HCL_PS_SHARDS", "two", 1);
		run(1, one, free_port());
		unsetenv("HCL_PS_SHARDS");
		assert_int_equal(one[0].rc, -EINVAL);
		assert_non_null(strstr(one[0].err, bad == 2 ? "HCL_PS_SHARDS=two" : "PS shards"));
	}
	unsetenv("HCL_PS_PORT");
}

/* Hierarchical, racks of two ranks each (an odd world leaves one alone). */
static void test_hier(void **state)
{
	(void)state;
	for (int world = 1; world <= 5; world += 2) {
		struct rk rks[16] = { 0 };
		for (int i = 0; i < world; i++)
			rks[i].algo = HCL_ALGO_HIER;
		run(world, rks, free_port());
		char what[32];
		snprintf(what, sizeof(what), "hier world %d", world);
		all_ok(world, rks, what);
	}
}

/* fp32 over the PS's BFP32 job: each slice's values span a different
 * magnitude; every element within the documented bound of the exact sum. */
enum { BFP_N = 5003, BFP_ELEMS = 512 };

static float bfp_value(int rank, int i)
{
	int slice = i / BFP_ELEMS;
	return (float)ldexp(sin(i * 0.37 + rank * 1.3) * (1 + rank), slice * 3 - 12);
}

static void *bfp_rank_main(void *arg)
{
	struct rk *r = arg;
	struct hcl_comm_cfg cfg = { .rank = r->rank,
				    .world = r->world,
				    .master_addr = "127.0.0.1",
				    .master_port = r->port,
				    .timeout_ms = 10000,
				    .algo = HCL_ALGO_PS,
				    .ina_port = ina_port_of(r->port, r->rank),
				    .ina_slots = 4,
				    .ina_elems = BFP_ELEMS,
				    .rack = -1,
				    .ina_bfp = 1 };
	struct hcl_comm *c;
	static __thread float buf[BFP_N];
	if ((r->rc = hcl_comm_create(&cfg, &c, r->err, sizeof(r->err))) < 0)
		return NULL;
	for (int call = 0; call < 2 && r->rc == 0; call++) {
		for (int i = 0; i < BFP_N; i++)
			buf[i] = bfp_value(r->rank, i);
		if ((r->rc = hcl_allreduce(buf, buf, BFP_N, HCL_FP32, HCL_SUM, c)) < 0) {
			snprintf(r->err, sizeof(r->err), "%s", hcl_comm_error(c));
			break;
		}
		for (int s0 = 0; s0 < BFP_N && r->rc == 0; s0 += BFP_ELEMS) {
			int n = BFP_N - s0 < BFP_ELEMS ? BFP_N - s0 : BFP_ELEMS;
			int8_t e = INA_BFP_EXP_MIN, ek;
			float col[BFP_ELEMS];
			for (int k = 0; k < r->world; k++) { /* the slice's agreed exponent */
				for (int i = 0; i < n; i++)
					col[i] = bfp_value(k, s0 + i);
				ina_bfp_exponent(col, (size_t)n, &ek);
				e = ek > e ? ek : e;
			}
			for (int i = 0; i < n; i++) {
				double want = 0;
				for (int k = 0; k < r->world; k++)
					want += bfp_value(k, s0 + i);
				double bound = ina_bfp_error_bound(e, (unsigned)r->world) + fabs(want) * 0x1p-23;
				if (fabs(buf[s0 + i] - want) > bound) {
					snprintf(r->err, sizeof(r->err), "element %d: %g vs %g, bound %g", s0 + i,
						 buf[s0 + i], want, bound);
					r->rc = -1;
					break;
				}
			}
		}
	}
	hcl_comm_destroy(c);
	return NULL;
}

static void test_ps_bfp(void **state)
{
	(void)state;
	set_ps_port();
	struct rk rks[3] = { 0 };
	pthread_t th[3];
	int master = free_port();
	for (int i = 0; i < 3; i++) {
		rks[i] = (struct rk){ .rank = i, .world = 3, .port = master };
		pthread_create(&th[i], NULL, bfp_rank_main, &rks[i]);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	unsetenv("HCL_PS_PORT");
	for (int i = 0; i < 3; i++)
		if (rks[i].rc)
			fail_msg("bfp rank %d: %s", i, rks[i].err);
}

static const char *write_file(const char *text)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/hcl-hostfile-%d.cfg", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* The host file gives world, master and each rank's address. */
static void test_hostfile(void **state)
{
	(void)state;
	char text[512];
	snprintf(text, sizeof(text),
		 "master_port = %d;\nranks = (\n  { addr = \"127.0.0.1\"; rack = 0; },\n"
		 "  { addr = \"127.0.0.1\"; rack = 0; },\n  { addr = \"127.0.0.1\"; rack = 1; }\n);\n",
		 free_port());
	const char *path = write_file(text);
	struct rk rks[16] = { 0 };
	for (int i = 0; i < 3; i++)
		rks[i].hostfile = path;
	run(3, rks, 0);
	for (int i = 0; i < 3; i++)
		if (rks[i].rc)
			fail_msg("hostfile rank %d: %s", i, rks[i].err);

	/* every mistake names file and line, before any socket is opened */
	static const struct {
		const char *text;
		int rank;
		const char *want;
	} bad[] = {
		{ "ranks = (\n { addr = \"127.0.0.1\" }\n", 0, ":3: syntax error" },
		{ "ranks = (\n { addr = \"127.0.0.1\"; },\n { addr = \"10.0.0\"; }\n);\n", 0, ":3: 'addr' must be" },
		{ "ranks = (\n { addr = \"127.0.0.1\"; ina_switch = \"1.2.3.4:0\"; }\n);\n", 0,
		  ":2: 'ina_switch' must be" },
		{ "ranks = (\n { addr = \"127.0.0.1\"; rack = -1; }\n);\n", 0, ":2: 'rack' must be" },
		{ "ranks = (\n { addr = \"127.0.0.1\"; }\n);\n", 1, ":1: rank 1 is not listed" },
		{ "master_port = 70000;\nranks = ( { addr = \"127.0.0.1\"; } );\n", 0, ":1: 'master_port' must be" },
		{ "mastr_port = 1;\nranks = ( { addr = \"127.0.0.1\"; } );\n", 0, ":1: unknown setting 'mastr_port'" },
		{ "ranks = ( { addr = \"127.0.0.1\"; port = 3; } );\n", 0, ":1: unknown setting 'port'" },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		path = write_file(bad[i].text);
		struct hcl_comm_cfg cfg = { .rank = bad[i].rank, .world = -1, .rack = -1, .hostfile = path };
		struct hcl_comm *c;
		char err[320];
		assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
		if (!strstr(err, path) || !strstr(err, bad[i].want))
			fail_msg("case %u: '%s' does not contain '%s'", i, err, bad[i].want);
	}
	unlink(path);
}

static void test_world_mismatch(void **state)
{
	(void)state;
	struct rk rks[16] = { 0 };
	rks[2].claim_world = 5; /* thinks the world is larger */
	run_refused(rks, "world size differs", "refused: ERR rank 2: world size differs");
}

/* A stranger at the master's port: connects (retrying until it listens),
 * sends text unless it is NULL, and returns the connection. */
static int stranger(int port, const char *text)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)port) };
	for (int tries = 0; tries < 500; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
			if (text)
				assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
			return fd;
		}
		close(fd);
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL); /* the master is starting */
	}
	fail_msg("the master never listened on %d", port);
	return -1;
}

/* The master's answer to a stranger's hello. */
static void answer_to(int port, const char *hello, char *ans, size_t n)
{
	int fd = stranger(port, hello);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 5000), 1);
	ssize_t r = read(fd, ans, n - 1);
	ans[r > 0 ? r : 0] = 0;
	close(fd);
}

/* Strangers at the rendezvous: a connection that says nothing, junk, a
 * rank out of range, and — with a job token — a well-formed claim of
 * rank 1 that is not signed with it.  Each is refused (an ERR answer),
 * none holds up or aborts the rendezvous: the job's four ranks, started
 * after the strangers, come together in a fraction of the 8 s deadline.
 * (The master used to read one connection at a time under the global
 * deadline, and a bad hello ended the rendezvous.) */
static void test_rendezvous_strangers(void **state)
{
	(void)state;
	for (int token = 0; token < 2; token++) {
		if (token)
			setenv("HCL_JOB_TOKEN", "job-token-0123456789", 1);
		struct rk rks[4] = { 0 };
		int port = free_port();
		pthread_t th[4];
		for (int i = 0; i < 4; i++)
			rks[i] = (struct rk){ .rank = i, .world = 4, .port = port, .timeout_ms = 8000 };
		pthread_create(&th[0], NULL, rank_main, &rks[0]);
		int idle = stranger(port, NULL);
		char ans[256];
		answer_to(port, "garbage\n", ans, sizeof(ans));
		assert_memory_equal(ans, "ERR ", 4);
		answer_to(port, "HCL1 9 4 junk\n", ans, sizeof(ans));
		assert_memory_equal(ans, "ERR ", 4);
		if (token) {
			answer_to(port, "HCL1 1 4 127.0.0.1 5555 0 0 00:00:00:00:00:00 - -\n", ans, sizeof(ans));
			if (!strstr(ans, "ERR job token"))
				fail_msg("an unsigned claim of rank 1: '%s'", ans);
		}
		double t0 = now_s();
		for (int i = 1; i < 4; i++)
			pthread_create(&th[i], NULL, rank_main, &rks[i]);
		for (int i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		double el = now_s() - t0;
		close(idle);
		unsetenv("HCL_JOB_TOKEN");
		for (int i = 0; i < 4; i++)
			if (rks[i].rc)
				fail_msg("token %d rank %d: %s", token, i, rks[i].err);
		printf("# rendezvous beside strangers (token %d): %.2f s\n", token, el);
		assert_true(el < 4);
	}
}

static void test_errors(void **state)
{
	(void)state;
	char err[320];
	struct hcl_comm *c;
	struct hcl_comm_cfg cfg = HCL_COMM_CFG_ENV;
	unsetenv("RANK");
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "RANK"));
	setenv("RANK", "1", 1);
	setenv("WORLD_SIZE", "2", 1);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	setenv("MASTER_PORT", "notaport", 1);
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "MASTER_PORT"));
	/* nobody listens: the error names the master within the deadline */
	char p[16];
	snprintf(p, sizeof(p), "%d", free_port());
	setenv("MASTER_PORT", p, 1);
	cfg.timeout_ms = 300;
	assert_true(hcl_comm_create(&cfg, &c, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "not reachable"));
	assert_non_null(strstr(err, "127.0.0.1"));
	/* a bad timing setting fails at once, before any rendezvous */
	setenv("HCL_PACE", "sometimes", 1);
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "HCL_PACE='sometimes'"));
	setenv("HCL_PACE", "1", 1);
	setenv("HCL_PACE_WINDOW", "100", 1);
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "HCL_PACE_WINDOW"));
	unsetenv("HCL_PACE_WINDOW");
	unsetenv("HCL_PACE");
	setenv("HCL_XFER_LOCAL_QUEUE", "64k", 1); /* bytes, or off */
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "HCL_XFER_LOCAL_QUEUE=64k"));
	unsetenv("HCL_XFER_LOCAL_QUEUE");
	setenv("HCL_TIMER_SCALE", "0.5", 1); /* dilation only stretches timers */
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "HCL_TIMER_SCALE=0.5: want a factor from 1"));
	unsetenv("HCL_TIMER_SCALE");
	setenv("HCL_XFER_PAYLOAD", "8950", 1); /* a packet must hold whole elements */
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "HCL_XFER_PAYLOAD=8950: want a multiple of 4"));
	unsetenv("HCL_XFER_PAYLOAD");
	cfg.ring_channels = 5;
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ring channels 5: want 1 to 4"));
	cfg.ring_channels = 0;
	setenv("HCL_RING_CHANNELS", "two", 1);
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "HCL_RING_CHANNELS=two"));
	unsetenv("HCL_RING_CHANNELS");
	cfg.timeout_ms = -5; /* a deadline in the past */
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "timeout -5 ms"));
	cfg.timeout_ms = 300;
	cfg.rank = 3; /* rank beyond the world */
	assert_int_equal(hcl_comm_create(&cfg, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "out of range"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allreduce),
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_timing_layer),
		cmocka_unit_test(test_ps),
		cmocka_unit_test(test_ps_bf16_wire),
		cmocka_unit_test(test_ps_shards),
		cmocka_unit_test(test_hier),
		cmocka_unit_test(test_hostfile),
		cmocka_unit_test(test_ps_bfp),
		cmocka_unit_test(test_world_mismatch),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_rendezvous_strangers),
	};
	return cmocka_run_group_tests_name("comm", tests, NULL, NULL);
}
