/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring all-reduce against a reference sum: ranks as threads over the fake
 * hub, clean and lossy, counts that do not divide, several calls in a row;
 * int32 exact, fp32 within the rounding bound of N additions; in place and
 * out of place (the input left as it was, every output element written). */
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

#include "fake_transport.h"
#include "hcl_ring.h"
#include "testlib.h"

#define MAXR 8

static const size_t counts[] = { 1, 3, 7, 100, 4097, 65537, 300001 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

struct rank_job {
	struct fake_hub *hub;
	unsigned rank, n;
	enum hcl_dtype dtype;
	const int *rack; /* hierarchical when set */
	bool oop;	 /* out of place: from an input buffer into a poisoned output */
	int rc;
	char err[256];
};

static uint32_t val(unsigned r, unsigned call, size_t i)
{
	struct tl_rng g = { (uint64_t)r * 1000003 + call * 7919 + i * 104729 + 1 };
	return (uint32_t)tl_next(&g);
}

static float fval(unsigned r, unsigned call, size_t i)
{
	return (float)((int32_t)(val(r, call, i) % 2000001) - 1000000) / 1024.0f;
}

static void *rank_main(void *arg)
{
	struct rank_job *j = arg;
	struct dgram_transport t;
	struct hcl_xfer *x = fake_xfer_new(j->hub, j->rank, j->n, 1000, &t, j->err, sizeof(j->err));
	if (!x) {
		j->rc = -1;
		return NULL;
	}
	uint32_t *buf = malloc(counts[NCOUNTS - 1] * 4), *src = malloc(counts[NCOUNTS - 1] * 4);
	for (unsigned call = 0; call < NCOUNTS && j->rc == 0; call++) {
		size_t n = counts[call];
		uint32_t *in = j->oop ? src : buf;
		for (size_t i = 0; i < n; i++) {
			if (j->dtype == HCL_FP32) {
				float f = fval(j->rank, call, i);
				memcpy(&in[i], &f, 4);
			} else {
				in[i] = val(j->rank, call, i);
			}
		}
		if (j->oop) /* what no write reached stays a NaN / a wrong sum */
			memset(buf, 0xff, n * 4);
		int64_t dl = clock_now_ns() + 10000000000ll;
		j->rc = j->rack ? hcl_hier_allreduce(x, j->rank, j->n, j->rack, buf, n, j->dtype, call + 1, dl, j->err,
						     sizeof(j->err))
				: hcl_ring_allreduce_from(x, j->rank, j->n, j->oop ? src : NULL, buf, n, j->dtype,
							  call + 1, dl, j->err, sizeof(j->err));
		for (size_t i = 0; j->oop && j->rc == 0 && i < n; i++) {
			uint32_t v = val(j->rank, call, i);
			if (j->dtype == HCL_FP32) {
				float f = fval(j->rank, call, i);
				memcpy(&v, &f, 4);
			}
			if (src[i] != v) {
				snprintf(j->err, sizeof(j->err), "call %u elem %zu: the input changed", call, i);
				j->rc = -1;
			}
		}
		for (size_t i = 0; j->rc == 0 && i < n; i++) {
			if (j->dtype == HCL_INT32) {
				uint32_t want = 0;
				for (unsigned r = 0; r < j->n; r++)
					want += val(r, call, i);
				if (buf[i] != want) {
					snprintf(j->err, sizeof(j->err), "call %u elem %zu: %u != %u", call, i, buf[i],
						 want);
					j->rc = -1;
				}
			} else {
				double want = 0, mag = 0;
				for (unsigned r = 0; r < j->n; r++) {
					want += fval(r, call, i);
					mag += fabs(fval(r, call, i));
				}
				float got;
				memcpy(&got, &buf[i], 4);
				if (fabs(got - want) > j->n * mag * 0x1p-24) {
					snprintf(j->err, sizeof(j->err), "call %u elem %zu: %g != %g", call, i, got,
						 want);
					j->rc = -1;
				}
			}
		}
	}
	if (j->rc == 0)
		hcl_xfer_linger(x, 60000000, clock_now_ns() + 2000000000ll);
	free(buf);
	free(src);
	hcl_xfer_free(x);
	return NULL;
}

static void run_jobs(unsigned n, enum hcl_dtype dt, struct fake_net net, const int *rack, bool oop)
{
	struct fake_hub *hub = fake_hub_new(n, &net);
	struct rank_job jobs[MAXR];
	pthread_t th[MAXR];
	for (unsigned r = 0; r < n; r++) {
		jobs[r] = (struct rank_job){ .hub = hub, .rank = r, .n = n, .dtype = dt, .rack = rack, .oop = oop };
		pthread_create(&th[r], NULL, rank_main, &jobs[r]);
	}
	for (unsigned r = 0; r < n; r++)
		pthread_join(th[r], NULL);
	for (unsigned r = 0; r < n; r++)
		if (jobs[r].rc)
			fail_msg("%u ranks, rank %u: %s", n, r, jobs[r].err);
	fake_hub_free(hub);
}

static void run_racks(unsigned n, enum hcl_dtype dt, struct fake_net net, const int *rack)
{
	run_jobs(n, dt, net, rack, false);
}

static void run(unsigned n, enum hcl_dtype dt, struct fake_net net) { run_racks(n, dt, net, NULL); }

/* Hierarchical: uneven and non-contiguous racks (sizes that do not divide
 * each other, so one rank holds several shards and racks cut parts
 * differently), one rack, all singletons, the trial's two racks of four;
 * counts from 1 (fewer elements than shards) up. */
static void test_hier(void **state)
{
	(void)state;
	static const int uneven[] = { 0, 0, 0, 1, 1, 2 }, mixed[] = { 1, 0, 1, 0, 2 }, one[] = { 5, 5, 5, 5 },
			 single[] = { 0, 1, 2, 3 }, odd[] = { 0, 0, 1, 0, 2, 0, 2 },
			 two4[] = { 0, 0, 0, 0, 1, 1, 1, 1 };
	run_racks(7, HCL_INT32, (struct fake_net){ .seed = 26 }, odd);
	run_racks(8, HCL_FP32, (struct fake_net){ .seed = 27 }, two4);
	run_racks(6, HCL_INT32, (struct fake_net){ .seed = 21 }, uneven);
	run_racks(5, HCL_FP32, (struct fake_net){ .seed = 22 }, mixed);
	run_racks(4, HCL_INT32, (struct fake_net){ .seed = 23 }, one);
	run_racks(4, HCL_INT32, (struct fake_net){ .seed = 24 }, single);
	run_racks(6, HCL_INT32, (struct fake_net){ .loss = 0.05, .dup = 0.02, .reorder = 0.1, .seed = 25 }, uneven);
	run_racks(8, HCL_INT32, (struct fake_net){ .loss = 0.05, .dup = 0.02, .reorder = 0.1, .seed = 28 }, two4);
}

static void test_ring_int32(void **state)
{
	(void)state;
	for (unsigned n = 1; n <= 5; n++)
		run(n, HCL_INT32, (struct fake_net){ .seed = n });
	run(8, HCL_INT32, (struct fake_net){ .seed = 8 });
}

static void test_ring_fp32(void **state)
{
	(void)state;
	run(4, HCL_FP32, (struct fake_net){ .seed = 4 });
	run(7, HCL_FP32, (struct fake_net){ .seed = 7 });
}

static void test_ring_lossy(void **state)
{
	(void)state;
	run(4, HCL_INT32, (struct fake_net){ .loss = 0.05, .dup = 0.05, .reorder = 0.2, .seed = 11 });
	run(8, HCL_INT32, (struct fake_net){ .loss = 0.05, .dup = 0.02, .reorder = 0.1, .seed = 12 });
	run(5, HCL_FP32, (struct fake_net){ .loss = 0.05, .dup = 0.02, .reorder = 0.1, .seed = 13 });
	/* two ranks: AllGather's first step overwrites the chunk that
	 * ScatterReduce's step sent and whose ACKs may still be due (a resend
	 * then carries the sum, a duplicate at the peer that made it) */
	for (uint64_t seed = 14; seed < 18; seed++)
		run(2, HCL_INT32, (struct fake_net){ .loss = 0.1, .dup = 0.02, .reorder = 0.1, .seed = seed });
}

/* Out of place: early (staged), repeated and lost packets all sum from the
 * input into the output; one rank copies. */
static void test_ring_out_of_place(void **state)
{
	(void)state;
	run_jobs(1, HCL_INT32, (struct fake_net){ .seed = 31 }, NULL, true);
	run_jobs(4, HCL_INT32, (struct fake_net){ .seed = 32 }, NULL, true);
	run_jobs(3, HCL_FP32, (struct fake_net){ .seed = 33 }, NULL, true);
	run_jobs(5, HCL_INT32, (struct fake_net){ .loss = 0.05, .dup = 0.05, .reorder = 0.2, .seed = 34 }, NULL, true);
	run_jobs(4, HCL_FP32, (struct fake_net){ .loss = 0.05, .dup = 0.02, .reorder = 0.1, .seed = 35 }, NULL, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_int32), cmocka_unit_test(test_ring_fp32),
		cmocka_unit_test(test_ring_lossy), cmocka_unit_test(test_ring_out_of_place),
		cmocka_unit_test(test_hier),
	};
	return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
