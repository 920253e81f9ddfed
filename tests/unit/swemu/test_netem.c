/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu's link emulation: rate, buffer, delay, jitter with order kept,
 * random and bursty loss, against synthetic time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "sw_netem.h"

static void test_emu_rate_and_buffer(void **state)
{
	(void)state;
	struct sw_netem e;
	struct netem_cfg c = { .rate_bps = 1000000000, .buffer_bytes = 3000, .delay_us = 50 };
	void *out[8];
	assert_int_equal(sw_netem_init(&e, &c, 16, 1), 0);
	assert_true(sw_netem_active(&e));
	/* 1500 B at 1 Gbit/s = 12 us each; the buffer holds two */
	assert_int_equal(sw_netem_enqueue(&e, (void *)1, 1500, 0), SW_NETEM_QUEUED);
	assert_int_equal(sw_netem_enqueue(&e, (void *)2, 1500, 0), SW_NETEM_QUEUED);
	assert_int_equal(sw_netem_enqueue(&e, (void *)3, 1500, 0), SW_NETEM_DROP_BUFFER);
	assert_int_equal(sw_netem_next_ns(&e), 12000 + 50000);
	/* after the first departed (12 us) there is room again */
	assert_int_equal(sw_netem_enqueue(&e, (void *)3, 1500, 12000), SW_NETEM_QUEUED);
	assert_int_equal(sw_netem_dequeue(&e, 61999, out, 8), 0);
	assert_int_equal(sw_netem_dequeue(&e, 62000, out, 8), 1);
	assert_ptr_equal(out[0], (void *)1);
	assert_int_equal(sw_netem_dequeue(&e, 86000, out, 8), 2);
	assert_ptr_equal(out[1], (void *)3);
	assert_int_equal(sw_netem_next_ns(&e), UINT64_MAX);
	sw_netem_free(&e);
}

/* Two partitions' emulators of one port share its line: each holds and
 * releases its own frames, but a frame departs after whatever either
 * queued before it, the buffer counts both, ECN sees both, and a rate
 * change re-times them one partition after the other from now. */
static void test_emu_shared_wire(void **state)
{
	(void)state;
	struct sw_netem a, b;
	struct netem_cfg c = { .rate_bps = 1000000000, .buffer_bytes = 4500, .ecn = 0.5 };
	uint64_t wire = 0;
	void *out[8];
	assert_int_equal(sw_netem_init(&a, &c, 16, 1), 0);
	assert_int_equal(sw_netem_init(&b, &c, 16, 2), 0);
	sw_netem_share_wire(&a, &wire);
	sw_netem_share_wire(&b, &wire);
	/* 1500 B at 1 Gbit/s: 12 us each, one after the other on the line */
	assert_int_equal(sw_netem_enqueue(&a, (void *)1, 1500, 0), SW_NETEM_QUEUED);
	assert_false(sw_netem_marks(&b, 0)); /* 1500 of 4500 held: under the mark */
	assert_int_equal(sw_netem_enqueue(&b, (void *)2, 1500, 0), SW_NETEM_QUEUED);
	assert_true(sw_netem_marks(&a, 0)); /* 3000: past 2250, a's and b's together */
	assert_int_equal(sw_netem_enqueue(&a, (void *)3, 1500, 0), SW_NETEM_QUEUED);
	/* the buffer holds three frames, whichever partition queued them */
	assert_int_equal(sw_netem_enqueue(&b, (void *)4, 1500, 0), SW_NETEM_DROP_BUFFER);
	assert_int_equal(wire, 36000);
	assert_int_equal(sw_netem_next_ns(&a), 12000);
	assert_int_equal(sw_netem_next_ns(&b), 24000);
	assert_int_equal(sw_netem_dequeue(&a, 12000, out, 8), 1);
	assert_ptr_equal(out[0], (void *)1);
	/* one frame left the line at 12 us: room for one more, after a's 3 */
	assert_int_equal(sw_netem_enqueue(&b, (void *)4, 1500, 12000), SW_NETEM_QUEUED);
	assert_int_equal(wire, 48000);
	/* half the rate from 12 us (24 us a frame), set as the control channel
	 * does, the line reset to now, then partition after partition: b's 2
	 * and 4, then a's 3 */
	c.rate_bps = 500000000;
	wire = 12000;
	sw_netem_set(&b, &c, 12000);
	sw_netem_set(&a, &c, 12000);
	assert_int_equal(sw_netem_next_ns(&b), 36000);
	assert_int_equal(sw_netem_next_ns(&a), 84000);
	assert_int_equal(wire, 84000);
	assert_int_equal(sw_netem_dequeue(&b, 60000, out, 8), 2); /* b's 2 at 36 us, 4 at 60 */
	assert_int_equal(sw_netem_dequeue(&a, 83999, out, 8), 0);
	assert_int_equal(sw_netem_dequeue(&a, 84000, out, 8), 1);
	sw_netem_free(&a);
	sw_netem_free(&b);
}

/* With ecn = 0.5 of a 6000-byte buffer, packets arriving while more than
 * 3000 bytes wait are to be marked, and none once the queue drained. */
static void test_emu_ecn_threshold(void **state)
{
	(void)state;
	struct sw_netem e;
	struct netem_cfg c = { .rate_bps = 1000000000, .buffer_bytes = 6000, .ecn = 0.5 };
	void *out[8];
	assert_int_equal(sw_netem_init(&e, &c, 16, 1), 0);
	/* 1500 B at 1 Gbit/s: 12 us each */
	bool want[4] = { false, false, false, true }; /* held before each: 0, 1500, 3000, 4500 */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(sw_netem_marks(&e, 0), want[i]);
		assert_int_equal(sw_netem_enqueue(&e, (void *)(uintptr_t)(i + 1), 1500, 0), SW_NETEM_QUEUED);
	}
	/* one left at 12 us (4500 held: past the mark), two by 24 us (3000: not past it) */
	assert_true(sw_netem_marks(&e, 23999));
	assert_false(sw_netem_marks(&e, 24000));
	assert_int_equal(sw_netem_dequeue(&e, 48000, out, 8), 4);
	assert_false(sw_netem_marks(&e, 48000));
	/* off: never, however full */
	c.ecn = 0;
	sw_netem_set(&e, &c, 48000);
	for (int i = 0; i < 4; i++) {
		assert_false(sw_netem_marks(&e, 48000));
		assert_int_equal(sw_netem_enqueue(&e, (void *)1, 1500, 48000), SW_NETEM_QUEUED);
	}
	sw_netem_free(&e);
}

/* Back-to-back packets leave at exactly the configured rate. */
static void test_emu_rate_exact(void **state)
{
	(void)state;
	static const uint64_t rates[] = { 10000000, 1000000000, 2500000000ull, 40000000000ull };
	for (size_t r = 0; r < 4; r++) {
		struct sw_netem e;
		struct netem_cfg c = { .rate_bps = rates[r] };
		void *out[1];
		uint64_t last = 0;
		assert_int_equal(sw_netem_init(&e, &c, 4096, 2), 0);
		for (int i = 0; i < 4000; i++)
			assert_int_equal(sw_netem_enqueue(&e, (void *)(uintptr_t)(i + 1), 9000, 0), SW_NETEM_QUEUED);
		while (sw_netem_next_ns(&e) != UINT64_MAX) {
			last = sw_netem_next_ns(&e);
			assert_int_equal(sw_netem_dequeue(&e, last, out, 1), 1);
		}
		double rate = 4000.0 * 9000 * 8 / (last * 1e-9);
		assert_true(rate / rates[r] > 0.9999 && rate / rates[r] < 1.0001);
		sw_netem_free(&e);
	}
}

static void test_emu_jitter_order_inflight(void **state)
{
	(void)state;
	struct sw_netem e;
	struct netem_cfg c = { .delay_us = 100, .jitter_us = 50 };
	void *out[64];
	assert_int_equal(sw_netem_init(&e, &c, 64, 3), 0);
	uint64_t prev = 0;
	for (uint64_t i = 0; i < 64; i++) {
		assert_int_equal(sw_netem_enqueue(&e, (void *)(uintptr_t)(i + 1), 100, i * 1000), SW_NETEM_QUEUED);
		uint64_t rel = e.ring[i].release_ns;
		assert_true(rel >= i * 1000 + 100000 && rel >= prev);
		assert_true(rel <= i * 1000 + 150000 || rel == prev);
		prev = rel;
	}
	assert_int_equal(sw_netem_enqueue(&e, (void *)99, 100, 64000), SW_NETEM_DROP_INFLIGHT);
	assert_int_equal(sw_netem_dequeue(&e, UINT64_MAX - 1, out, 64), 64);
	for (uintptr_t i = 0; i < 64; i++)
		assert_ptr_equal(out[i], (void *)(i + 1));
	sw_netem_free(&e);
	struct netem_cfg off = { 0 };
	assert_int_equal(sw_netem_init(&e, &off, 4, 1), 0);
	assert_false(sw_netem_active(&e));
	sw_netem_free(&e);
}

static void test_emu_loss(void **state)
{
	(void)state;
	struct sw_netem e;
	void *out[1];
	struct netem_cfg c = { .loss = 0.05 };
	assert_int_equal(sw_netem_init(&e, &c, 4, 9), 0);
	int lost = 0;
	for (int i = 0; i < 200000; i++) {
		if (sw_netem_enqueue(&e, (void *)1, 100, 0) == SW_NETEM_DROP_LOSS)
			lost++;
		else
			sw_netem_dequeue(&e, 0, out, 1);
	}
	assert_true(lost > 200000 * 0.047 && lost < 200000 * 0.053);
	sw_netem_free(&e);

	/* bursty: stationary loss p_gb/(p_gb+p_bg) * loss_bad = 0.0476; bursts long */
	struct netem_cfg g = { .ge_p_gb = 0.01, .ge_p_bg = 0.2, .ge_loss_bad = 1.0 };
	assert_int_equal(sw_netem_init(&e, &g, 4, 9), 0);
	int runs = 0, prev = 0;
	lost = 0;
	for (int i = 0; i < 200000; i++) {
		int l = sw_netem_enqueue(&e, (void *)1, 100, 0) == SW_NETEM_DROP_LOSS;
		if (!l)
			sw_netem_dequeue(&e, 0, out, 1);
		lost += l;
		runs += l && !prev;
		prev = l;
	}
	double frac = lost / 200000.0, mean_run = (double)lost / runs;
	assert_true(frac > 0.040 && frac < 0.056);
	assert_true(mean_run > 4.0 && mean_run < 6.0); /* 1 / p_bg = 5 */
	sw_netem_free(&e);
}

/* A rate change applies to what is queued: packets held at a crawl leave
 * at the new rate, not at the release times the crawl gave them. */
static void test_emu_rate_change_retimes_queue(void **state)
{
	(void)state;
	struct sw_netem e;
	struct netem_cfg slow = { .rate_bps = 1000000, .buffer_bytes = 1 << 20, .delay_us = 10 };
	void *out[8];
	assert_int_equal(sw_netem_init(&e, &slow, 16, 1), 0);
	/* 3 x 1250 B at 1 Mbit/s: 10 ms each, the last leaves at 30 ms */
	for (uintptr_t i = 1; i <= 3; i++)
		assert_int_equal(sw_netem_enqueue(&e, (void *)i, 1250, 0), SW_NETEM_QUEUED);
	assert_int_equal(sw_netem_next_ns(&e), 10000000 + 10000);
	/* at 5 ms the rate becomes 1 Gbit/s (10 us each) and the delay 20 us:
	 * the first is still serialising, so all three leave from 5 ms on */
	struct netem_cfg fast = { .rate_bps = 1000000000, .buffer_bytes = 1 << 20, .delay_us = 20 };
	sw_netem_set(&e, &fast, 5000000);
	assert_int_equal(sw_netem_next_ns(&e), 5000000 + 10000 + 20000);
	assert_int_equal(sw_netem_dequeue(&e, 5000000 + 30000 + 20000 - 1, out, 8), 2);
	assert_int_equal(sw_netem_dequeue(&e, 5000000 + 30000 + 20000, out, 8), 1);
	assert_ptr_equal(out[0], (void *)3);
	/* the next packet follows at the new rate, not behind the old schedule */
	assert_int_equal(sw_netem_enqueue(&e, (void *)4, 1250, 6000000), SW_NETEM_QUEUED);
	assert_int_equal(sw_netem_next_ns(&e), 6000000 + 10000 + 20000);
	/* switching emulation off releases what is held at once, in order */
	assert_int_equal(sw_netem_enqueue(&e, (void *)5, 1250, 6000000), SW_NETEM_QUEUED);
	struct netem_cfg off = { 0 };
	sw_netem_set(&e, &off, 6000001);
	assert_int_equal(sw_netem_dequeue(&e, 6000001, out, 8), 2);
	assert_ptr_equal(out[0], (void *)4);
	assert_ptr_equal(out[1], (void *)5);
	assert_false(sw_netem_active(&e));
	sw_netem_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_emu_rate_and_buffer),
		cmocka_unit_test(test_emu_shared_wire),
		cmocka_unit_test(test_emu_ecn_threshold),
		cmocka_unit_test(test_emu_rate_exact),
		cmocka_unit_test(test_emu_jitter_order_inflight),
		cmocka_unit_test(test_emu_loss),
		cmocka_unit_test(test_emu_rate_change_retimes_queue),
	};
	return cmocka_run_group_tests_name("netem", tests, NULL, NULL);
}
