/* SPDX-License-Identifier: BSD-3-Clause */
/* The timing layer (ring/hcl_sync.h): the arithmetic of one
 * synchronisation point, the iteration statistics, and the whole layer
 * on four ranks (threads over the fake transport, a ring all-reduce as
 * the collective) where one rank is always late: the clocks agree, every
 * point is complete, the late rank is named, the others' earliness is
 * measured and they are paced after a window; with iterations marked,
 * only each iteration's first call is a pacing point. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_transport.h"
#include "hcl_ring.h"
#include "hcl_sync.h"
#include "hcl_xfer.h"

#define MS 1000000ll

static void test_derive(void **st)
{
	(void)st;
	/* ready at 0, 5, 30, 10 ms; rank 0 delays 20 ms, rank 1 10 ms */
	struct hcl_sync_rec r[4] = { { 0, 20 * MS }, { 5 * MS, 10 * MS }, { 30 * MS, 0 }, { 10 * MS, 0 } };
	struct hcl_sync_point p;
	hcl_sync_derive(r, 4, 0, &p);
	assert_int_equal(p.early_ns, 30 * MS);
	assert_int_equal(p.wait_ns, 10 * MS); /* started at 20, the last at 30 */
	assert_int_equal(p.spread_ns, 30 * MS);
	assert_int_equal(p.start_spread_ns, 20 * MS); /* starts 20, 15, 30, 10 */
	assert_int_equal(p.last, 2);
	hcl_sync_derive(r, 4, 2, &p);
	assert_int_equal(p.early_ns, 0);
	assert_int_equal(p.wait_ns, 0);
	hcl_sync_derive(r, 1, 0, &p); /* one rank: nothing to wait for */
	assert_int_equal(p.early_ns, 0);
	assert_int_equal(p.spread_ns, 0);
}

static void test_stats(void **st)
{
	(void)st;
	int64_t t[100];
	for (int i = 0; i < 100; i++)
		t[i] = (int64_t)((i * 37) % 100 + 1); /* 1..100 shuffled */
	struct hcl_sync_stats s;
	hcl_sync_stats(t, 100, &s);
	assert_int_equal(s.n, 100);
	assert_true(fabs(s.mean_ns - 50.5) < 1e-9);
	assert_true(s.p50_ns == 50 && s.p99_ns == 99);
	assert_true(fabs(s.cv - sqrt((100.0 * 100 - 1) / 12) / 50.5) < 1e-9);
	int64_t same[3] = { 7, 7, 7 };
	hcl_sync_stats(same, 3, &s);
	assert_true(s.cv == 0 && s.p99_ns == 7);
	hcl_sync_stats(NULL, 0, &s);
	assert_int_equal(s.n, 0);
}

#define NR    4
#define LATE  2
#define CALLS 12

struct job {
	struct fake_hub *hub;
	const char *dir;
	int rank, rc;
	int buckets; /* 0: every call an iteration; else calls per marked iteration */
	struct hcl_sync_summary sum;
	char err[256];
};

static void *rank_main(void *arg)
{
	struct job *j = arg;
	struct dgram_transport t;
	struct hcl_xfer *x = fake_xfer_new(j->hub, (unsigned)j->rank, NR, 500, &t, j->err, sizeof(j->err));
	int64_t deadline = clock_now_ns() + 20000 * MS;
	struct hcl_sync_cfg cfg = { .pace = true,
				    .trace_dir = j->dir,
				    .pace_cfg = { .window = 2, .threshold_ns = 5 * MS, .rel_threshold = -1 } };
	struct hcl_sync *s = x ? hcl_sync_new(&cfg, x, j->rank, NR, "ring", deadline, j->err, sizeof(j->err)) : NULL;
	j->rc = s ? 0 : -1;
	for (int k = 0; k < CALLS && j->rc == 0; k++) {
		bool first = !j->buckets || k % j->buckets == 0;
		if (j->buckets && first)
			hcl_sync_iter_begin(s);
		if (j->rank == LATE && first) { /* the straggler's longer compute */
			struct timespec ts = { 0, 40 * MS };
			nanosleep(&ts, NULL);
		}
		hcl_sync_before(s);
		int32_t v = 1;
		j->rc = hcl_ring_allreduce(x, (unsigned)j->rank, NR, &v, 1, HCL_INT32, (uint32_t)k + 1, deadline,
					   j->err, sizeof(j->err));
		if (j->rc == 0 && v != NR)
			j->rc = -2;
		if (j->rc == 0)
			hcl_sync_after(s, 4);
		if (j->buckets && (k + 1) % j->buckets == 0)
			hcl_sync_iter_end(s);
	}
	if (s)
		hcl_sync_summary(s, &j->sum);
	if (x) /* the others may still need our last ACK */
		hcl_xfer_linger_final(x, clock_now_ns() + 200 * MS);
	hcl_sync_free(s);
	hcl_xfer_free(x);
	return NULL;
}

/* NR ranks, one thread each, CALLS calls: buckets 0 makes every call an
 * iteration, else iterations of that many calls are marked. */
static void run_ranks(struct job *jobs, const char *dir, int buckets)
{
	struct fake_net net = { .seed = 5 };
	struct fake_hub *hub = fake_hub_new(NR, &net);
	pthread_t th[NR];
	for (int r = 0; r < NR; r++) {
		jobs[r] = (struct job){ .hub = hub, .dir = dir, .rank = r, .buckets = buckets };
		pthread_create(&th[r], NULL, rank_main, &jobs[r]);
	}
	for (int r = 0; r < NR; r++)
		pthread_join(th[r], NULL);
	fake_hub_free(hub);
	for (int r = 0; r < NR; r++)
		if (jobs[r].rc)
			fail_msg("rank %d: %d %s", r, jobs[r].rc, jobs[r].err);
}

static void test_layer_on_fake_ranks(void **st)
{
	(void)st;
	char dir[] = "/tmp/test_sync.XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct job jobs[NR];
	run_ranks(jobs, dir, 0);
	for (int r = 0; r < NR; r++) {
		assert_int_equal(jobs[r].sum.calls, CALLS);
		assert_int_equal(jobs[r].sum.incomplete_calls, 0);
		/* the straggler's 40 ms show as everyone's spread */
		assert_true(jobs[r].sum.spread_mean_us > 30000 && jobs[r].sum.spread_mean_us < 60000);
		if (r == LATE)
			assert_int_equal(jobs[r].sum.paced_calls, 0);
		else /* paced from the third call on (window 2) */
			assert_int_equal(jobs[r].sum.paced_calls, CALLS - 2);
	}
	/* the trace: a header, one line per call naming the late rank, one
	 * per iteration, the summary */
	char path[256], line[1024];
	snprintf(path, sizeof(path), "%s/rank0.jsonl", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	int calls = 0, named = 0, iters = 0, summary = 0;
	while (fgets(line, sizeof(line), f)) {
		calls += strstr(line, "\"call\"") != NULL;
		named += strstr(line, "\"last\":2") != NULL;
		iters += strstr(line, "\"iter\"") != NULL;
		summary += strstr(line, "\"summary\"") != NULL;
	}
	fclose(f);
	assert_int_equal(calls, CALLS);
	assert_int_equal(named, CALLS);
	assert_int_equal(iters, CALLS);
	assert_int_equal(summary, 1);
	for (int r = 0; r < NR; r++) {
		snprintf(path, sizeof(path), "%s/rank%d.jsonl", dir, r);
		unlink(path);
	}
	rmdir(dir);
}

/* Marked iterations of three calls, the straggler late before the first
 * only (a training step's buckets): the rule learns from and delays only
 * an iteration's first call, so the others are paced from the third
 * iteration on (window 2), once per iteration.  Fed every call, it would
 * never pace: the second and third calls of an iteration are not early. */
static void test_layer_paces_per_iteration(void **st)
{
	(void)st;
	struct job jobs[NR];
	run_ranks(jobs, NULL, 3);
	for (int r = 0; r < NR; r++) {
		assert_int_equal(jobs[r].sum.calls, CALLS);
		assert_int_equal(jobs[r].sum.iterations, CALLS / 3);
		assert_int_equal(jobs[r].sum.paced_calls, r == LATE ? 0 : CALLS / 3 - 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_derive),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_layer_on_fake_ranks),
		cmocka_unit_test(test_layer_paces_per_iteration),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
