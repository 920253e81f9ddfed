/* SPDX-License-Identifier: BSD-3-Clause */
/* The INA clients' window (ring/hcl_ina_win.c) on its own, by the clock
 * the tests give it: spare slots, gap and idle reports, RACK, re-sends
 * left unanswered, tail probes, a stretched timer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hcl_ina_win.h"

static bool record_send(void *ctx, uint32_t slot)
{
	((uint32_t *)ctx)[slot]++;
	return true;
}

/* Spare slots: slices go out in order, slice k into slot k % slots, at
 * most `window` in flight that were never re-sent; a re-sent slice is
 * stalled and lets the next go into a spare slot, but none passes a slot
 * still busy. */
static void test_window_spare_slots(void **state)
{
	(void)state;
	struct hcl_inaw w;
	const int64_t ms = 1000000;
	assert_int_equal(hcl_inaw_init(&w, 4, 5000000, 500000000), 0);
	w.window = 2;
	w.end = 16; /* the pass's slices: 10..15 */
	assert_int_equal(hcl_inaw_next_slot(&w, 9, 10), -1);
	for (size_t k = 10; k < 12; k++) {
		assert_int_equal(hcl_inaw_next_slot(&w, k, 10), (int)(k - 10));
		hcl_inaw_start(&w, (uint32_t)(k - 10), k, 1 * ms, false);
	}
	assert_int_equal(hcl_inaw_next_slot(&w, 12, 10), -1); /* the window is full */
	/* both time out (no answer in 5 ms: on a clean network, the wait for
	 * the slowest worker): re-sent, but not stalled */
	uint32_t sends[4] = { 0 };
	uint64_t resent = 0;
	int64_t wake = INT64_MAX;
	hcl_inaw_resend(&w, 7 * ms, 0, record_send, sends, &wake, &resent);
	hcl_inaw_resend(&w, 12 * ms, 0, record_send, sends, &wake, &resent); /* Karn's back-off for the 2nd */
	assert_int_equal(resent, 2);
	assert_int_equal(hcl_inaw_next_slot(&w, 12, 10), -1);
	hcl_inaw_resent(&w, 0, 13 * ms); /* slice 10's loss is seen: it stalls */
	assert_int_equal(w.s[0].tries, 2);
	assert_int_equal(w.s[0].expiries, 1); /* seen lost: no second doubling */
	assert_int_equal(hcl_inaw_next_slot(&w, 12, 10), 2);
	hcl_inaw_start(&w, 2, 12, 13 * ms, false);
	assert_int_equal(hcl_inaw_next_slot(&w, 13, 10), -1);
	hcl_inaw_done(&w, &w.s[1], 14 * ms);
	assert_int_equal(hcl_inaw_next_slot(&w, 13, 10), 3);
	hcl_inaw_start(&w, 3, 13, 14 * ms, false);
	hcl_inaw_resent(&w, 2, 20 * ms);
	hcl_inaw_resent(&w, 3, 20 * ms);
	/* nothing flows, but slice 14's slot still holds slice 10 */
	assert_int_equal(hcl_inaw_next_slot(&w, 14, 10), -1);
	hcl_inaw_done(&w, &w.s[0], 21 * ms);
	assert_int_equal(hcl_inaw_next_slot(&w, 14, 10), 0);
	assert_int_equal(hcl_inaw_next_slot(&w, 16, 10), -1); /* past the pass */
	hcl_inaw_free(&w);
}

/* MISS: the aggregator has a slice's successor from us and not the slice.
 * The successor went after the slice's latest send, so that send was
 * lost: re-send it.  A report about another call, a slice done, one with
 * no successor out, or one that crossed a re-send is stale. */
static void test_window_missed(void **state)
{
	(void)state;
	struct hcl_inaw w;
	const int64_t ms = 1000000;
	assert_int_equal(hcl_inaw_init(&w, 3, 5000000, 500000000), 0);
	w.window = 2;
	hcl_inaw_start(&w, 0, 10, 1 * ms, false);
	hcl_inaw_start(&w, 1, 11, 2 * ms, false);
	struct ina_hdr h = { .version = INA_VERSION, .type = INA_T_MISS, .slot = 0, .epoch = 7, .seq = 10 };
	assert_int_equal(hcl_inaw_missed(&w, &h, 7), 0);
	assert_int_equal(hcl_inaw_missed(&w, &h, 8), -1);
	struct ina_hdr last = h;
	last.slot = 1;
	last.seq = 11;
	assert_int_equal(hcl_inaw_missed(&w, &last, 7), -1); /* slice 12 not sent */
	hcl_inaw_resent(&w, 0, 3 * ms);
	assert_int_equal(hcl_inaw_missed(&w, &h, 7), -1); /* the report crossed this re-send */
	hcl_inaw_start(&w, 2, 12, 4 * ms, false);
	hcl_inaw_done(&w, &w.s[1], 5 * ms);
	assert_int_equal(hcl_inaw_missed(&w, &last, 7), -1); /* slice 11 is done */
	hcl_inaw_free(&w);
}

/* An idle report (INA_F_IDLE) needs no successor in flight: a slice in
 * flight that it names goes again, even with a window of one slot; one
 * not sent yet means the aggregator moved past this sender's older
 * slices, whose answers were lost: the oldest of them that no HAVE holds
 * goes again; none such, or another call's report, and nothing does. */
static void test_window_idle_missed(void **state)
{
	(void)state;
	struct hcl_inaw w;
	const int64_t ms = 1000000;
	assert_int_equal(hcl_inaw_init(&w, 3, 5000000, 500000000), 0);
	w.window = 1;
	hcl_inaw_start(&w, 0, 10, 1 * ms, false);
	struct ina_hdr h = {
		.version = INA_VERSION, .type = INA_T_MISS, .flags = INA_F_IDLE, .slot = 0, .epoch = 7, .seq = 10
	};
	assert_int_equal(hcl_inaw_missed(&w, &h, 7), 0);
	assert_int_equal(hcl_inaw_missed(&w, &h, 8), -1);
	h.flags = 0; /* a gap report needs slice 11 in flight */
	assert_int_equal(hcl_inaw_missed(&w, &h, 7), -1);
	/* the aggregator collects slice 12 without this sender: slices 10
	 * and 11 are out, 10 the oldest; once HAVE holds 10, 11 goes */
	hcl_inaw_start(&w, 1, 11, 2 * ms, false);
	struct ina_hdr ahead = {
		.version = INA_VERSION, .type = INA_T_MISS, .flags = INA_F_IDLE, .slot = 2, .epoch = 7, .seq = 12
	};
	assert_int_equal(hcl_inaw_missed(&w, &ahead, 7), 0);
	w.s[0].held = true;
	assert_int_equal(hcl_inaw_missed(&w, &ahead, 7), 1);
	hcl_inaw_done(&w, &w.s[1], 3 * ms);
	assert_int_equal(hcl_inaw_missed(&w, &ahead, 7), -1);
	ahead.seq = 9; /* older than anything out: stale */
	ahead.slot = 0;
	w.s[0].held = false;
	assert_int_equal(hcl_inaw_missed(&w, &ahead, 7), -1);
	hcl_inaw_free(&w);
}

/* The window's RACK: once a slice sent after another is done, the other
 * goes again a round trip and a reordering window after it was sent, long
 * before its 5 ms timer; slices sent with or after the one done wait. */
static void test_window_rack(void **state)
{
	(void)state;
	struct hcl_inaw w;
	assert_int_equal(hcl_inaw_init(&w, 4, 5000000, 500000000), 0);
	w.rack = true;
	const int64_t ms = 1000000, t0 = 100 * ms;
	hcl_rtt_sample(&w.rtt, ms); /* srtt 1 ms: reordering window 250 us */
	for (uint32_t i = 0; i < 4; i++)
		hcl_inaw_start(&w, i, i, i == 0 ? t0 : t0 + ms / 10, false);
	hcl_inaw_done(&w, &w.s[1], t0 + ms); /* sent 100 us after slot 0's */
	uint32_t sends[4] = { 0 };
	uint64_t resent = 0;
	int64_t wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(resent, 0); /* not yet: 1.25 ms after its send */
	assert_true(wake <= t0 + ms + ms / 4);
	hcl_inaw_resend(&w, t0 + ms + ms / 4, 0, record_send, sends, &wake, &resent);
	assert_int_equal(resent, 1);
	assert_int_equal(sends[0], 1);
	assert_int_equal(sends[2] + sends[3], 0);
	assert_int_equal(w.rtt.backoff, 0); /* a loss found so is no timer expiry */
	hcl_inaw_free(&w);
}

/* A re-send by RACK leaves the slice's timer as it was; an expiry of the
 * timer doubles it (and keeps a doubling for the window). */
static void test_window_rack_resend_keeps_timer(void **state)
{
	(void)state;
	struct hcl_inaw w;
	assert_int_equal(hcl_inaw_init(&w, 2, 5000000, 500000000), 0);
	w.rack = true;
	const int64_t ms = 1000000, t0 = 100 * ms;
	hcl_rtt_sample(&w.rtt, ms); /* srtt 1 ms: the timer is the 5 ms floor */
	hcl_inaw_start(&w, 0, 0, t0, false);
	hcl_inaw_start(&w, 1, 1, t0 + ms / 10, false);
	hcl_inaw_done(&w, &w.s[1], t0 + ms);
	uint32_t sends[2] = { 0 };
	uint64_t resent = 0;
	int64_t wake = INT64_MAX;
	const int64_t rack_at = t0 + ms + ms / 4;
	hcl_inaw_resend(&w, rack_at, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 1);
	assert_int_equal(wake, rack_at + 5 * ms); /* not 10 ms */
	wake = INT64_MAX;
	hcl_inaw_resend(&w, rack_at + 5 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 2); /* now the timer's: doubled for the slice
					* and once more kept by the window (Karn) */
	assert_int_equal(wake, rack_at + 5 * ms + 20 * ms);
	hcl_inaw_free(&w);
}

/* Where the aggregators answer every re-send (by the result or HAVE), a
 * re-send with no answer after two least round trips was lost: it goes
 * again at once, and its timer does not double; after a HAVE the slice
 * waits for its result on the timer. */
static void test_window_unanswered_resend(void **state)
{
	(void)state;
	struct hcl_inaw w;
	assert_int_equal(hcl_inaw_init(&w, 2, 5000000, 500000000), 0);
	w.answers = true;
	const int64_t ms = 1000000, t0 = 100 * ms;
	hcl_inaw_start(&w, 1, 1, t0 - 10 * ms, false);
	hcl_inaw_done(&w, &w.s[1], t0 - 9 * ms); /* least round trip 1 ms */
	hcl_inaw_start(&w, 0, 0, t0, false);
	uint32_t sends[2] = { 0 };
	uint64_t resent = 0;
	int64_t wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 5 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 1);	     /* its timer, the 5 ms floor */
	assert_int_equal(wake, t0 + 7 * ms); /* an answer due within 2 ms */
	wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 7 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 2);
	assert_int_equal(w.s[0].expiries, 1); /* not an expiry */
	/* a second re-send in a row waits twice as long for its answer, a
	 * third four times: a burst of them queued behind each other at
	 * the sender must not go again before it has left */
	assert_int_equal(wake, t0 + 11 * ms);
	wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 10 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 2);
	hcl_inaw_resend(&w, t0 + 11 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 3);
	wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 11 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(wake, t0 + 19 * ms);
	w.s[0].held = true; /* a HAVE came */
	wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 12 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 3);
	/* one expiry: doubled for the slice and kept once by the window */
	assert_int_equal(wake, t0 + 11 * ms + 20 * ms);
	hcl_inaw_free(&w);
}

/* A held slice (its re-send got HAVE) goes again a reorder window (a
 * quarter of the least round trip) after a result of the window that came
 * after its HAVE: its own result may have been lost on the way, and the
 * aggregator answers the probe from the stored result.  Results before
 * the HAVE say nothing; without one after it the slice waits its timer. */
static void test_window_held_probe(void **state)
{
	(void)state;
	struct hcl_inaw w;
	assert_int_equal(hcl_inaw_init(&w, 2, 5000000, 500000000), 0);
	w.rack = true;
	w.answers = true;
	const int64_t ms = 1000000, t0 = 100 * ms;
	hcl_inaw_start(&w, 0, 0, t0 - 10 * ms, false);
	hcl_inaw_done(&w, &w.s[0], t0 - 6 * ms); /* round trip 4 ms: reorder window 1 ms */
	hcl_inaw_start(&w, 0, 2, t0, false);
	hcl_inaw_start(&w, 1, 1, t0, false);
	hcl_inaw_resent(&w, 0, t0 + ms); /* slice 2 went again (a gap report) */
	hcl_inaw_held(&w.s[0], t0 + 2 * ms);
	uint32_t sends[2] = { 0 };
	uint64_t resent = 0;
	int64_t wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 3 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 0);
	assert_true(wake > t0 + 10 * ms);	 /* nothing after the HAVE: the timer */
	hcl_inaw_done(&w, &w.s[1], t0 + 4 * ms); /* slice 1's result, after the HAVE */
	wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 4 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 0);
	assert_int_equal(wake, t0 + 5 * ms);
	hcl_inaw_resend(&w, t0 + 5 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 1);
	assert_int_equal(w.s[0].expiries, 0); /* seen, not an expiry */
	assert_false(w.s[0].held);
	hcl_inaw_free(&w);
}

/* RACK after a re-send: an answer that comes sooner after the re-send
 * than the least round trip answers the first send (the slice was only
 * waiting, as a PS shard's wait for the slowest worker looks), so it dates
 * the slices done by that send and the slices sent in between are not
 * taken for lost; an answer a round trip after the re-send dates it by
 * the re-send. */
static void test_window_rack_after_resend(void **state)
{
	(void)state;
	const int64_t ms = 1000000, t0 = 100 * ms;
	for (int late = 0; late < 2; late++) {
		struct hcl_inaw w;
		assert_int_equal(hcl_inaw_init(&w, 2, 5000000, 500000000), 0);
		w.rack = true;
		/* srtt 1 ms: the reordering window is 250 us; the least round trip 1 ms */
		hcl_inaw_start(&w, 0, 0, t0 - 10 * ms, false);
		hcl_inaw_done(&w, &w.s[0], t0 - 9 * ms);
		hcl_inaw_start(&w, 0, 2, t0, false);
		hcl_inaw_start(&w, 1, 1, t0 + 3 * ms, false);
		uint32_t sends[2] = { 0 };
		uint64_t resent = 0;
		int64_t wake = INT64_MAX;
		hcl_inaw_resend(&w, t0 + 5 * ms, 0, record_send, sends, &wake, &resent);
		assert_int_equal(sends[0], 1); /* slot 0's timer (the 5 ms floor) */
		assert_int_equal(sends[1], 0);
		const int64_t answered = t0 + 5 * ms + (late ? 2 * ms : ms / 5);
		hcl_inaw_done(&w, &w.s[0], answered);
		hcl_inaw_resend(&w, answered + ms / 10, 0, record_send, sends, &wake, &resent);
		/* slot 1 went at t0 + 3 ms: after the first send, before the re-send */
		assert_int_equal(sends[1], late ? 1 : 0);
		hcl_inaw_free(&w);
	}
}

/* A tail loss probe: the pass's last slices (nothing follows them in
 * their slot) go again once at RACK's time, a round trip and a reordering
 * window after they went, though no later slice is done; a slice with a
 * successor waits for its timer, and so does the tail's second re-send. */
static void test_window_tail_probe(void **state)
{
	(void)state;
	struct hcl_inaw w;
	assert_int_equal(hcl_inaw_init(&w, 2, 5000000, 500000000), 0);
	w.rack = true;
	w.end = 3; /* slices 0..2: slot 0 has 0 then 2, slot 1 has 1 alone */
	const int64_t ms = 1000000, t0 = 100 * ms;
	hcl_rtt_sample(&w.rtt, ms); /* srtt 1 ms, rttvar 0.5: timer 5 ms (floor) */
	hcl_inaw_start(&w, 0, 0, t0, false);
	hcl_inaw_start(&w, 1, 1, t0, false);
	uint32_t sends[2] = { 0 };
	uint64_t resent = 0;
	int64_t wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(resent, 0);
	assert_int_equal(wake, t0 + ms + ms / 4); /* the tail's probe */
	hcl_inaw_resend(&w, t0 + ms + ms / 4, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[1], 1); /* slice 1: the tail of slot 1 */
	assert_int_equal(sends[0], 0); /* slice 0: slice 2 follows it */
	assert_int_equal(w.rtt.backoff, 0);
	wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 4 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(resent, 1); /* no second probe: its timer now */
	assert_int_equal(wake, t0 + 5 * ms);
	/* without an end the window knows no tail: the 5 ms timer alone */
	w.end = SIZE_MAX;
	hcl_inaw_start(&w, 1, 1, t0, false);
	wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 2 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(resent, 1);
	assert_int_equal(wake, t0 + 5 * ms);
	hcl_inaw_free(&w);
}

/* Agent-ring's windows: no RACK (its slices need not finish in order), but
 * the tail loss probe all the same. */
static void test_window_tail_probe_without_rack(void **state)
{
	(void)state;
	struct hcl_inaw w;
	assert_int_equal(hcl_inaw_init(&w, 2, 5000000, 500000000), 0);
	w.end = 3; /* slot 0: slice 0 (slice 2 follows it), slot 1: slice 1, a tail */
	const int64_t ms = 1000000, t0 = 100 * ms;
	hcl_rtt_sample(&w.rtt, ms);
	hcl_inaw_start(&w, 0, 0, t0, false);
	hcl_inaw_start(&w, 1, 1, t0, false);
	w.done_sent_at = t0 + 1; /* a slice sent after both is done */
	uint32_t sends[2] = { 0 };
	uint64_t resent = 0;
	int64_t wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + ms + ms / 4, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[1], 1); /* the tail's probe */
	assert_int_equal(sends[0], 0); /* no RACK: slice 0 waits for its timer */
	assert_int_equal(wake, t0 + 5 * ms);
	/* the same moment with RACK: slice 0 goes too */
	w.rack = true;
	hcl_inaw_start(&w, 1, 1, t0, false);
	hcl_inaw_resend(&w, t0 + ms + ms / 4, 0, record_send, sends, &wake, &resent);
	assert_int_equal(sends[0], 1);
	assert_int_equal(sends[1], 2);
	hcl_inaw_free(&w);
}

/* A window whose timer floor was stretched (time dilation, as agent-ring's
 * windows get it from HCL_TIMER_SCALE): before any round trip is measured
 * a slice waits the new floor, not the old one. */
static void test_window_timer_scale(void **state)
{
	(void)state;
	struct hcl_inaw w;
	const int64_t ms = 1000000, t0 = 100 * ms;
	assert_int_equal(hcl_inaw_init(&w, 2, 5 * ms, 500 * ms), 0);
	hcl_inaw_init_timer(&w, 50 * ms, 500 * ms);
	hcl_inaw_start(&w, 0, 0, t0, false);
	uint32_t sends[2] = { 0 };
	uint64_t resent = 0;
	int64_t wake = INT64_MAX;
	hcl_inaw_resend(&w, t0 + 49 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(resent, 0); /* the 5 ms floor would have fired */
	assert_int_equal(wake, t0 + 50 * ms);
	hcl_inaw_resend(&w, t0 + 50 * ms, 0, record_send, sends, &wake, &resent);
	assert_int_equal(resent, 1);
	assert_int_equal(sends[0], 1);
	hcl_inaw_free(&w);
}

/* A chain's window (agent-ring) waits at least three smoothed round
 * trips before it re-sends a slice, where another re-sends at srtt +
 * 4 rttvar: its sampled slices are the quick ones. */
static void test_window_chain_timer(void **state)
{
	(void)state;
	const int64_t ms = 1000000, t0 = 100 * ms;
	for (int chain = 0; chain < 2; chain++) {
		struct hcl_inaw w;
		assert_int_equal(hcl_inaw_init(&w, 2, ms, 500 * ms), 0);
		w.chain = chain;
		for (int i = 0; i < 12; i++)
			hcl_rtt_sample(&w.rtt, 2 * ms); /* srtt 2 ms, rttvar near 0 */
		hcl_inaw_start(&w, 0, 0, t0, false);
		uint32_t sends[2] = { 0 };
		uint64_t resent = 0;
		int64_t wake = INT64_MAX;
		hcl_inaw_resend(&w, t0 + 3 * ms, 0, record_send, sends, &wake, &resent);
		assert_int_equal(resent, chain ? 0 : 1);
		if (chain) {
			assert_int_equal(wake, t0 + 6 * ms);
			hcl_inaw_resend(&w, t0 + 6 * ms, 0, record_send, sends, &wake, &resent);
			assert_int_equal(resent, 1);
		}
		hcl_inaw_free(&w);
	}
}

/* Congestion control (ring/hcl_ina_cc.h): marked answers cut the window,
 * at most once per round trip and by at most half, as deep as the share
 * of marked answers says; never under one slice; unmarked ones grow it
 * back to the cap; the window holds what goes out. */
static void test_window_congestion(void **state)
{
	(void)state;
	struct hcl_inaw w;
	const int64_t ms = 1000000;
	assert_int_equal(hcl_inaw_init(&w, 8, 5000000, 500000000), 0);
	w.rtt.srtt = 2 * ms;
	hcl_inaw_answer(&w, true, 1 * ms); /* off: nothing moves */
	assert_int_equal(hcl_inacc_allowed(&w.cc, w.window), 8);
	w.cc.on = true;
	hcl_inaw_answer(&w, false, 1 * ms);
	assert_int_equal(hcl_inacc_allowed(&w.cc, w.window), 8); /* at the cap */
	hcl_inaw_answer(&w, true, 2 * ms);			 /* the first mark: a small cut */
	assert_int_equal(w.cc.cuts, 1);
	assert_int_equal(hcl_inacc_allowed(&w.cc, w.window), 7);
	hcl_inaw_answer(&w, true, 3 * ms); /* within a round trip of the cut */
	assert_int_equal(w.cc.cuts, 1);
	/* every answer marked, for a while: the cuts deepen to halvings and
	 * stop at one slice */
	int64_t t = 3 * ms;
	uint32_t before = w.cc.cwnd;
	for (int i = 0; i < 400; i++) {
		t += ms / 2;
		before = w.cc.cwnd;
		hcl_inaw_answer(&w, true, t);
		assert_true(w.cc.cwnd >= before / 2);
	}
	assert_int_equal(hcl_inacc_allowed(&w.cc, w.window), 1);
	assert_int_equal(w.cc.lowest, 1);
	assert_int_equal(w.cc.marks, 402);
	/* one slice flows, the next waits */
	w.end = 100;
	assert_int_equal(hcl_inaw_next_slot(&w, 0, 0), 0);
	hcl_inaw_start(&w, 0, 0, t, false);
	assert_int_equal(hcl_inaw_next_slot(&w, 1, 0), -1);
	/* unmarked answers: a slice more per window of answers, up to the cap */
	for (int i = 0; i < 200; i++)
		hcl_inaw_answer(&w, false, t += ms);
	assert_int_equal(hcl_inacc_allowed(&w.cc, w.window), 8);
	assert_int_equal(hcl_inaw_next_slot(&w, 1, 0), 1);
	hcl_inaw_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_spare_slots),	 cmocka_unit_test(test_window_missed),
		cmocka_unit_test(test_window_idle_missed),	 cmocka_unit_test(test_window_rack),
		cmocka_unit_test(test_window_held_probe),	 cmocka_unit_test(test_window_rack_resend_keeps_timer),
		cmocka_unit_test(test_window_unanswered_resend), cmocka_unit_test(test_window_rack_after_resend),
		cmocka_unit_test(test_window_tail_probe),	 cmocka_unit_test(test_window_tail_probe_without_rack),
		cmocka_unit_test(test_window_timer_scale),	 cmocka_unit_test(test_window_chain_timer),
		cmocka_unit_test(test_window_congestion),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
