/* SPDX-License-Identifier: BSD-3-Clause */
/* The pacing decision on synthetic arrival traces: the documented rule
 * (ring/hcl_pace.h) for balanced ranks, a persistent straggler, hiccups,
 * the bound, switching off, and a window that is not full yet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hcl_pace.h"

#define MS 1000000ll

static void test_balanced_never_paces(void **st)
{
	(void)st;
	struct hcl_pace p;
	hcl_pace_init(&p, NULL);
	for (int i = 0; i < 200; i++) /* jitter below the 2 ms threshold */
		assert_int_equal(hcl_pace_update(&p, (i * 7919) % (2 * MS), 0), 0);
	assert_false(hcl_pace_active(&p));
}

static void test_straggler_paces_after_a_window(void **st)
{
	(void)st;
	struct hcl_pace p;
	hcl_pace_init(&p, NULL); /* window 8, fraction 0.5 */
	for (int i = 0; i < 7; i++)
		assert_int_equal(hcl_pace_update(&p, 10 * MS + i * MS, 0), 0);
	/* the eighth sample fills the window: half the least earliness (10 ms) */
	assert_int_equal(hcl_pace_update(&p, 12 * MS, 0), 5 * MS);
	assert_true(hcl_pace_active(&p));
	assert_int_equal(hcl_pace_update(&p, 30 * MS, 0), 5500000); /* least is now 11 ms */
}

static void test_bounded(void **st)
{
	(void)st;
	struct hcl_pace p;
	struct hcl_pace_cfg c = { .max_delay_ns = 3 * MS, .window = 4, .fraction = 1.0 };
	hcl_pace_init(&p, &c);
	int64_t d = 0;
	for (int i = 0; i < 4; i++)
		d = hcl_pace_update(&p, 100 * MS, 0);
	assert_int_equal(d, 3 * MS);
}

static void test_hiccups_do_not_pace(void **st)
{
	(void)st;
	struct hcl_pace p;
	hcl_pace_init(&p, NULL);
	/* early by 10 ms, but every fourth iteration this rank is the late one */
	for (int i = 0; i < 100; i++)
		assert_int_equal(hcl_pace_update(&p, i % 4 == 3 ? 0 : 10 * MS, 0), 0);
}

static void test_switches_off(void **st)
{
	(void)st;
	struct hcl_pace p;
	hcl_pace_init(&p, &(struct hcl_pace_cfg){ .window = 3 });
	hcl_pace_update(&p, 8 * MS, 0);
	hcl_pace_update(&p, 8 * MS, 0);
	assert_int_equal(hcl_pace_update(&p, 8 * MS, 0), 4 * MS);
	/* the imbalance is gone: the next decision is no delay */
	assert_int_equal(hcl_pace_update(&p, 0, 0), 0);
	assert_false(hcl_pace_active(&p));
	/* and it comes back only after a full window of earliness */
	assert_int_equal(hcl_pace_update(&p, 8 * MS, 0), 0);
	assert_int_equal(hcl_pace_update(&p, 8 * MS, 0), 0);
	assert_int_equal(hcl_pace_update(&p, 8 * MS, 0), 4 * MS);
	/* negative earliness (clock skew) counts as none */
	assert_int_equal(hcl_pace_update(&p, -5 * MS, 0), 0);
}

static void test_relative_threshold(void **st)
{
	(void)st;
	struct hcl_pace p;
	hcl_pace_init(&p, NULL); /* 20% of the period */
	/* 12 ms early at a 100 ms period is below 20 ms: noise, never paced */
	for (int i = 0; i < 20; i++)
		assert_int_equal(hcl_pace_update(&p, 12 * MS, 100 * MS), 0);
	/* the same earliness at a 50 ms period (threshold 10 ms) is paced */
	for (int i = 0; i < 7; i++)
		assert_int_equal(hcl_pace_update(&p, 12 * MS, 50 * MS), 0);
	assert_int_equal(hcl_pace_update(&p, 12 * MS, 50 * MS), 6 * MS);
	/* a negative rel_threshold turns the relative part off */
	struct hcl_pace_cfg c = { .rel_threshold = -1 };
	hcl_pace_init(&p, &c);
	for (int i = 0; i < 7; i++)
		hcl_pace_update(&p, 8 * MS, 100 * MS);
	assert_int_equal(hcl_pace_update(&p, 8 * MS, 100 * MS), 4 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_balanced_never_paces),
		cmocka_unit_test(test_straggler_paces_after_a_window),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_relative_threshold),
		cmocka_unit_test(test_hiccups_do_not_pace),
		cmocka_unit_test(test_switches_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
