/* SPDX-License-Identifier: BSD-3-Clause */
/* Finishing a call on the software ring after its INA aggregator was lost
 * (ring/hcl_fallback.c), over the fake network: ranks that hold different
 * slices' results (one got a result the others lost, some got none) all
 * end with the exact sum, bit-identical, with int32, fp32 and bf16, under
 * loss; with no done map every slice is summed from the inputs; ranks a
 * call apart finish both calls when the earlier's inputs were kept, and
 * all fail alike when not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fake_transport.h"
#include "hcl_fallback.h"
#include "hcl_xfer.h"
#include "testlib.h"

#define WORLD  4
#define SLICE  16
#define SLICES 9
#define COUNT  (SLICES * SLICE - 3) /* the last slice is short */

/* Small integers: exact in int32, binary32 and bf16, in any order; call
 * numbers 0 (one call) or 5 and 6 (ranks a call apart). */
static int32_t input_of(unsigned call, unsigned r, size_t i)
{
	return (int32_t)((r * 37 + i * 11 + call * 7) % 61) - 30;
}
static int32_t input(unsigned r, size_t i) { return input_of(0, r, i); }

static int32_t total_of(unsigned call, size_t i)
{
	int32_t s = 0;
	for (unsigned r = 0; r < WORLD; r++)
		s += input_of(call, r, i);
	return s;
}
static int32_t total(size_t i) { return total_of(0, i); }

/* Which rank holds slice k's result when the aggregator went: slices 0-2
 * everyone, 3 ranks 1 and 3, 4 rank 2 only, 5 rank 0 only, the rest nobody. */
static bool holds(unsigned r, size_t k) { return k < 3 || (k == 3 && r % 2) || (k == 4 && r == 2) || (k == 5 && !r); }

struct rank {
	struct fake_hub *hub;
	unsigned r;
	enum hcl_dtype dt;
	bool with_done;
	int rc;
	char err[320];
	uint32_t buf[COUNT];
};

static bool done(const void *ctx, size_t k) { return holds(((const struct rank *)ctx)->r, k); }

static uint32_t encode(enum hcl_dtype dt, int32_t v)
{
	float f = (float)v;
	uint32_t u;
	memcpy(&u, &f, 4);
	return dt == HCL_INT32 ? (uint32_t)v : dt == HCL_FP32 ? u : u >> 16;
}

static void put(struct rank *k, size_t i, uint32_t v)
{
	if (k->dt == HCL_BF16)
		((uint16_t *)k->buf)[i] = (uint16_t)v;
	else
		k->buf[i] = v;
}

static uint32_t get(const struct rank *k, size_t i)
{
	return k->dt == HCL_BF16 ? ((const uint16_t *)k->buf)[i] : k->buf[i];
}

static void *rank_main(void *arg)
{
	struct rank *k = arg;
	struct dgram_transport t;
	struct hcl_comm c = { .rank = (int)k->r, .world = WORLD };
	c.x = fake_xfer_new(k->hub, k->r, WORLD, 1000, &t, k->err, sizeof(k->err));
	if (!c.x) {
		k->rc = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < COUNT; i++)
		put(k, i, encode(k->dt, k->with_done && holds(k->r, i / SLICE) ? total(i) : input(k->r, i)));
	struct hcl_fallback_in in = { .slice_elems = SLICE, .done = k->with_done ? done : NULL, .ctx = k };
	k->rc = hcl_fallback_allreduce(&c, k->buf, COUNT, k->dt, &in, clock_now_ns() + 20000000000);
	if (k->rc)
		snprintf(k->err, sizeof(k->err), "%s", c.err);
	else if (c.ina_fallback_calls != 1)
		k->rc = -EINVAL;
	hcl_xfer_linger_final(c.x, clock_now_ns() + 2000000000ll);
	hcl_xfer_free(c.x);
	dgram_close(&t);
	return NULL;
}

static void run(enum hcl_dtype dt, bool with_done, struct fake_net net)
{
	struct fake_hub *hub = fake_hub_new(WORLD, &net);
	static struct rank ranks[WORLD];
	pthread_t th[WORLD];
	for (unsigned r = 0; r < WORLD; r++) {
		ranks[r] = (struct rank){ .hub = hub, .r = r, .dt = dt, .with_done = with_done };
		pthread_create(&th[r], NULL, rank_main, &ranks[r]);
	}
	for (unsigned r = 0; r < WORLD; r++)
		pthread_join(th[r], NULL);
	for (unsigned r = 0; r < WORLD; r++) {
		if (ranks[r].rc)
			fail_msg("dtype %d rank %u: rc %d %s", (int)dt, r, ranks[r].rc, ranks[r].err);
		for (size_t i = 0; i < COUNT; i++)
			if (get(&ranks[r], i) != encode(dt, total(i)))
				fail_msg("dtype %d rank %u element %zu (slice %zu): %#x, want %#x", (int)dt, r, i,
					 i / SLICE, get(&ranks[r], i), encode(dt, total(i)));
	}
	fake_hub_free(hub);
}

static void test_partial_holders(void **state)
{
	(void)state;
	run(HCL_INT32, true, (struct fake_net){ .seed = 1 });
	run(HCL_FP32, true, (struct fake_net){ .seed = 2 });
	run(HCL_BF16, true, (struct fake_net){ .seed = 3 });
	run(HCL_INT32, true, (struct fake_net){ .loss = 0.05, .dup = 0.02, .reorder = 0.1, .seed = 4 });
}

static void test_inputs_whole(void **state)
{
	(void)state;
	run(HCL_INT32, false, (struct fake_net){ .seed = 5 });
	run(HCL_BF16, false, (struct fake_net){ .seed = 6 });
}

/* Ranks a call apart: 0 and 1 still in call 5, 2 and 3 in call 6, having
 * finished 5.  With the inputs of call 5 kept by those ahead, those
 * behind finish it (exact) and then all finish call 6; without them every
 * rank fails, naming the two calls. */
struct skew {
	struct fake_hub *hub;
	unsigned r;
	bool kept; /* those ahead kept call 5's input */
	int rc[2];
	char err[320];
	uint32_t got[2][COUNT], prev[COUNT];
};

static void *skew_main(void *arg)
{
	struct skew *k = arg;
	struct dgram_transport t;
	bool ahead = k->r >= 2;
	struct hcl_comm c = { .rank = (int)k->r, .world = WORLD, .calls = ahead ? 6 : 5 };
	c.x = fake_xfer_new(k->hub, k->r, WORLD, 1000, &t, k->err, sizeof(k->err));
	if (!c.x) {
		k->rc[0] = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < COUNT; i++)
		k->prev[i] = (uint32_t)input_of(5, k->r, i);
	for (int n = ahead; n < 2 && !k->rc[0]; n++) { /* call 5 (behind only), call 6 */
		c.calls = 5 + (unsigned)n;
		for (size_t i = 0; i < COUNT; i++)
			k->got[n][i] = (uint32_t)input_of(c.calls, k->r, i);
		struct hcl_fallback_in in = { 0 };
		if (ahead && k->kept)
			in = (struct hcl_fallback_in){ .prev_input = k->prev,
						       .prev_count = COUNT,
						       .prev_dt = HCL_INT32 };
		k->rc[n] = hcl_fallback_allreduce(&c, k->got[n], COUNT, HCL_INT32, &in, clock_now_ns() + 20000000000);
		if (k->rc[n]) {
			snprintf(k->err, sizeof(k->err), "%s", c.err);
			break;
		}
	}
	hcl_xfer_linger_final(c.x, clock_now_ns() + 2000000000ll);
	hcl_xfer_free(c.x);
	dgram_close(&t);
	return NULL;
}

static void test_ranks_a_call_apart(void **state)
{
	(void)state;
	for (int kept = 1; kept >= 0; kept--) {
		struct fake_hub *hub = fake_hub_new(WORLD, &(struct fake_net){ .seed = 7u + (unsigned)kept });
		static struct skew k[WORLD];
		pthread_t th[WORLD];
		for (unsigned r = 0; r < WORLD; r++) {
			k[r] = (struct skew){ .hub = hub, .r = r, .kept = kept };
			pthread_create(&th[r], NULL, skew_main, &k[r]);
		}
		for (unsigned r = 0; r < WORLD; r++)
			pthread_join(th[r], NULL);
		for (unsigned r = 0; r < WORLD; r++) {
			int n0 = r >= 2, last = kept ? 1 : n0;
			for (int n = n0; n <= last; n++) {
				if (!kept) {
					if (k[r].rc[n] != -EPROTO ||
					    !strstr(k[r].err, "rank 0 in call 5, rank 2 in call 6"))
						fail_msg("rank %u without the inputs: rc %d %s", r, k[r].rc[n],
							 k[r].err);
					continue;
				}
				if (k[r].rc[n])
					fail_msg("rank %u call %d: rc %d %s", r, 5 + n, k[r].rc[n], k[r].err);
				for (size_t i = 0; i < COUNT; i++)
					if (k[r].got[n][i] != (uint32_t)total_of(5u + (unsigned)n, i))
						fail_msg("rank %u call %d element %zu: %d", r, 5 + n, i,
							 (int)k[r].got[n][i]);
			}
		}
		fake_hub_free(hub);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partial_holders),
		cmocka_unit_test(test_inputs_whole),
		cmocka_unit_test(test_ranks_a_call_apart),
	};
	return cmocka_run_group_tests_name("fallback", tests, NULL, NULL);
}
