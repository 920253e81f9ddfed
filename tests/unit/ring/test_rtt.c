/* SPDX-License-Identifier: BSD-3-Clause */
/* The INA clients' retransmission timer: follows the samples, backs off
 * per re-send, and keeps a back-off for new slices after an expiry until a
 * sample comes (Karn), growing once per round of expiries, not per slot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hcl_rtt.h"

#define MS 1000000ll

static void test_floor_and_samples(void **st)
{
	(void)st;
	struct hcl_rtt r;
	hcl_rtt_init(&r, 5 * MS, 500 * MS);
	assert_int_equal(hcl_rtt_rto(&r, 0), 5 * MS); /* no sample: the floor */
	assert_int_equal(hcl_rtt_rto(&r, 2), 20 * MS);
	hcl_rtt_sample(&r, 8 * MS); /* srtt 8, rttvar 4 */
	assert_int_equal(hcl_rtt_rto(&r, 0), 24 * MS);
	hcl_rtt_sample(&r, 1 * MS);
	assert_true(hcl_rtt_rto(&r, 0) >= 5 * MS);
	hcl_rtt_init(&r, 5 * MS, 500 * MS);
	hcl_rtt_sample(&r, 2000 * MS);
	assert_int_equal(hcl_rtt_rto(&r, 0), 500 * MS); /* the cap */
	hcl_rtt_init(&r, 5 * MS, 500 * MS);
	hcl_rtt_sample(&r, 100 * MS); /* 300 ms; doubled it would pass the cap */
	assert_int_equal(hcl_rtt_rto(&r, 0), 300 * MS);
	assert_int_equal(hcl_rtt_rto(&r, 1), 500 * MS);
	assert_int_equal(hcl_rtt_rto(&r, 9), 500 * MS);
}

static void test_expiry_backs_off_new_slices(void **st)
{
	(void)st;
	struct hcl_rtt r;
	hcl_rtt_init(&r, 5 * MS, 500 * MS);
	/* a window of slots sent at 1..3 ms all expire around 10 ms: one doubling */
	hcl_rtt_expired(&r, 1 * MS, 10 * MS);
	hcl_rtt_expired(&r, 2 * MS, 10 * MS);
	hcl_rtt_expired(&r, 3 * MS, 11 * MS);
	assert_int_equal(hcl_rtt_rto(&r, 0), 10 * MS); /* a slice sent now: not 5 ms again */
	assert_int_equal(hcl_rtt_rto(&r, 1), 20 * MS);
	/* one sent after that round expires too: another doubling */
	hcl_rtt_expired(&r, 12 * MS, 25 * MS);
	assert_int_equal(hcl_rtt_rto(&r, 0), 20 * MS);
	/* never past 64x, however many rounds */
	for (int64_t t = 30; t < 400; t += 20)
		hcl_rtt_expired(&r, t * MS, (t + 10) * MS);
	assert_int_equal(hcl_rtt_rto(&r, 0), 5 * MS << HCL_RTT_MAX_SHIFT);
	assert_int_equal(hcl_rtt_rto(&r, 5), 5 * MS << HCL_RTT_MAX_SHIFT);
	/* a clean sample ends the back-off */
	hcl_rtt_sample(&r, 8 * MS);
	assert_int_equal(hcl_rtt_rto(&r, 0), 24 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_floor_and_samples),
		cmocka_unit_test(test_expiry_backs_off_new_slices),
	};
	return cmocka_run_group_tests_name("rtt", tests, NULL, NULL);
}
