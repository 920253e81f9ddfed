/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's gap reports (INA_OUT_MISS, docs/ENGINE.md "Gap reports"):
 * what a job reports to its members, and what a ToR does with its
 * parent's report; and its idle reports (idle_miss_us, "Idle reports"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "testlib.h"

static void assert_miss(const struct ina_emit *e, const struct ina_job_cfg *j, unsigned member, uint32_t slot,
			uint32_t seq)
{
	assert_int_equal(e->hdr.type, INA_T_MISS);
	assert_int_equal(e->hdr.job, j->id);
	assert_int_equal(e->hdr.contributor, member);
	assert_int_equal(e->dst.ip, j->contributors[member].ip);
	assert_int_equal(ina_slot_index(e->hdr.slot), slot);
	assert_int_equal(e->hdr.seq, seq);
	assert_int_equal(e->payload_len, 0);
}

/* INA_OUT_MISS: members send slice k to a slot and k + 1 to the next, and
 * the way keeps order, so a member's k + 1 here while slice k collects
 * here without it means its k was lost.  The engine tells the member at
 * once, whichever side of the gap arrives second; re-sends and jobs
 * without the output report nothing. */
static void test_miss_reports(void **state)
{
	(void)state;
	struct ina_engine *eng = ina_engine_create(6, 8);
	struct ina_job_cfg j = tl_job(5, 3, INA_D_INT32, 2, 8), k = tl_job(6, 3, INA_D_INT32, 2, 8),
			   plain = tl_job(7, 3, INA_D_INT32, 2, 8);
	j.outputs |= INA_OUT_MISS;
	k.outputs |= INA_OUT_MISS;
	assert_int_equal(ina_job_install(eng, &j, NULL), 0);
	assert_int_equal(ina_job_install(eng, &k, NULL), 0);
	assert_int_equal(ina_job_install(eng, &plain, NULL), 0);
	uint32_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	/* the gap's far side arrives second: member 1's slice 0 collects in
	 * slot 0, member 0's is lost, member 0's slice 1 comes */
	for (int with = 0; with < 2; with++) {
		const struct ina_job_cfg *c = with ? &j : &plain;
		struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, c->id, 1, 0, 1, 0, 8);
		assert_int_equal(tl_send(eng, &c->contributors[1], &h, v), INA_OK);
		assert_int_equal(tl_out.n, 0);
		h = tl_hdr(INA_T_DATA, INA_D_INT32, c->id, 0, 1, 1, 1, 8);
		assert_int_equal(tl_send(eng, &c->contributors[0], &h, v), INA_OK);
		assert_int_equal(tl_out.n, with);
		if (with)
			assert_miss(&tl_out.e[0], c, 0, 0, 0);
	}
	/* member 1's slice 1 follows its slice 0: nothing to report */
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 5, 1, 1, 1, 1, 8);
	assert_int_equal(tl_send(eng, &j.contributors[1], &h, v), INA_OK);
	assert_int_equal(tl_out.n, 0);
	/* member 0 re-sends its slice 1: HAVE, no second report */
	h = tl_hdr(INA_T_DATA, INA_D_INT32, 5, 0, 1, 1, 1, 8);
	h.flags = INA_F_RETX;
	assert_int_equal(tl_send(eng, &j.contributors[0], &h, v), INA_OK);
	assert_int_equal(tl_out.n, 1);
	assert_int_equal(tl_out.e[0].hdr.type, INA_T_HAVE);
	/* member 2's slices 0 and 1 in order: no report, slot 1 completes;
	 * then member 0's lost slice 0, re-sent, completes slot 0 */
	for (uint32_t s = 0; s < 2; s++) {
		h = tl_hdr(INA_T_DATA, INA_D_INT32, 5, 2, s, 1, s, 8);
		assert_int_equal(tl_send(eng, &j.contributors[2], &h, v), INA_OK);
		assert_int_equal(tl_out.n, s ? 3 : 0);
	}
	assert_int_equal(tl_out.e[0].hdr.type, INA_T_RESULT);
	h = tl_hdr(INA_T_DATA, INA_D_INT32, 5, 0, 0, 1, 0, 8);
	h.flags = INA_F_RETX;
	assert_int_equal(tl_send(eng, &j.contributors[0], &h, v), INA_OK);
	assert_int_equal(tl_out.n, 3); /* the multicast */
	assert_int_equal(tl_out.e[0].hdr.type, INA_T_RESULT);
	assert_int_equal(ina_job_stats(eng, 5)->misses, 1);
	assert_int_equal(ina_job_stats(eng, 7)->misses, 0);

	/* the near side arrives second: member 0's slice 1 is here before
	 * anyone's slice 0, whose round then starts without it */
	h = tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 1, 1, 1, 8);
	assert_int_equal(tl_send(eng, &k.contributors[0], &h, v), INA_OK);
	assert_int_equal(tl_out.n, 0);
	h = tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 1, 0, 8);
	assert_int_equal(tl_send(eng, &k.contributors[1], &h, v), INA_OK);
	assert_int_equal(tl_out.n, 1);
	assert_miss(&tl_out.e[0], &k, 0, 0, 0);
	/* the round's next contribution starts nothing: no report again */
	h.contributor = 2;
	assert_int_equal(tl_send(eng, &k.contributors[2], &h, v), INA_OK);
	assert_int_equal(tl_out.n, 0);
	ina_engine_destroy(eng);
}

/* A ToR told by its parent that a partial is missing sends it again if it
 * went (its slot waits for the parent); one not complete yet goes when it
 * is.  Only the parent may tell it, and only a job with a parent takes
 * the report. */
static void test_miss_tor_resends_partial(void **state)
{
	(void)state;
	struct ina_engine *tor = ina_engine_create(4, 8);
	const struct ina_addr ps_addr = tl_addr(800), other = tl_addr(801);
	struct ina_job_cfg rack = tl_job(12, 2, INA_D_INT32, 2, 8), plain = tl_job(13, 2, INA_D_INT32, 2, 8);
	rack.outputs = INA_OUT_PS | INA_OUT_MISS;
	rack.parent = (struct ina_peer){ .addr = ps_addr, .job = 12, .contributor = 0 };
	assert_int_equal(ina_job_install(tor, &rack, NULL), 0);
	assert_int_equal(ina_job_install(tor, &plain, NULL), 0);
	uint32_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct ina_hdr d = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 0, 0, 1, 0, 8),
		       miss = tl_hdr(INA_T_MISS, INA_D_INT32, 12, 0, 0, 1, 0, 8);
	assert_int_equal(tl_send(tor, &rack.contributors[0], &d, v), INA_OK);
	assert_int_equal(tl_send(tor, &ps_addr, &miss, NULL), INA_OK);
	assert_int_equal(tl_out.n, 0); /* partial here: it goes up when complete */
	d.contributor = 1;
	assert_int_equal(tl_send(tor, &rack.contributors[1], &d, v), INA_OK);
	assert_int_equal(tl_out.n, 1); /* the partial to the parent ("lost") */
	assert_int_equal(tl_send(tor, &other, &miss, NULL), INA_R_NOT_MEMBER);
	assert_int_equal(tl_send(tor, &ps_addr, &miss, NULL), INA_OK);
	assert_int_equal(tl_out.n, 1);
	assert_int_equal(tl_out.e[0].hdr.type, INA_T_DATA);
	assert_true(tl_out.e[0].hdr.flags & INA_F_RETX);
	assert_int_equal(tl_out.e[0].dst.ip, ps_addr.ip);
	assert_int_equal(tl_elem(tl_out.e[0].payload, 7), 16);
	miss.seq = 5; /* another slice: stale */
	assert_int_equal(tl_send(tor, &ps_addr, &miss, NULL), INA_OK);
	assert_int_equal(tl_out.n, 0);
	miss.job = 13;
	assert_int_equal(tl_send(tor, &ps_addr, &miss, NULL), INA_R_UNEXPECTED_TYPE);
	ina_engine_destroy(tor);
}

/* A ToR whose slot waits for its parent sends the partial up again on
 * the first re-send of a round (the workers time out together), and on
 * the first after a quiet spell of INA_UP_QUIET_MS (2 ms): the one sent up
 * was lost as well, and a lone worker re-sending on its backed-off timer
 * would otherwise wait for a whole round of re-sends. */
static void test_tor_resends_partial_after_quiet(void **state)
{
	(void)state;
	const uint64_t ms = 1000000;
	struct ina_engine *tor = ina_engine_create(4, 8);
	const struct ina_addr ps_addr = tl_addr(800);
	struct ina_job_cfg rack = tl_job(12, 4, INA_D_INT32, 2, 8);
	rack.outputs = INA_OUT_PS;
	rack.parent = (struct ina_peer){ .addr = ps_addr, .job = 12, .contributor = 0 };
	assert_int_equal(ina_job_install(tor, &rack, NULL), 0);
	uint32_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct ina_hdr d = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 0, 0, 1, 0, 8);
	ina_engine_set_time(tor, 10 * ms);
	for (unsigned c = 0; c < 4; c++) {
		d.contributor = (uint16_t)c;
		assert_int_equal(tl_send(tor, &rack.contributors[c], &d, v), INA_OK);
	}
	assert_int_equal(tl_out.n, 1); /* the partial up ("lost") */
	d.flags = INA_F_RETX;
	/* {worker re-sending, ms since the slot's last packet, goes up} */
	static const struct {
		unsigned c, at_ms;
		bool up;
	} steps[] = {
		{ 1, 20, true },  /* the round's first */
		{ 2, 20, false }, /* the same round */
		{ 3, 21, false }, /* 1 ms quiet */
		{ 3, 40, true },  /* 19 ms quiet: the partial went missing again */
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		ina_engine_set_time(tor, steps[i].at_ms * ms);
		d.contributor = (uint16_t)steps[i].c;
		assert_int_equal(tl_send(tor, &rack.contributors[steps[i].c], &d, v), INA_OK);
		const struct ina_emit *last = &tl_out.e[tl_out.n - 1];
		assert_int_equal(last->hdr.type, INA_T_HAVE); /* the worker is told, each time */
		assert_int_equal(tl_out.n, steps[i].up ? 2 : 1);
		if (steps[i].up)
			assert_int_equal(tl_out.e[0].dst.ip, ps_addr.ip);
	}
	ina_engine_destroy(tor);
}

#define US 1000ull /* ns */

/* Slice seq of a job of two slots (slot seq % 2, its sets taken in
 * turn) from the members in `who` (a bit each), the clock at t_us. */
static void contribute(struct ina_engine *eng, const struct ina_job_cfg *j, uint32_t seq, unsigned who, uint64_t t_us)
{
	uint32_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	ina_engine_set_time(eng, t_us * US);
	for (unsigned m = 0; m < j->fan_in; m++)
		if (who >> m & 1) {
			const uint32_t slot = seq % 2 | (seq / 2 % 2 ? INA_SLOT_SET_BIT : 0);
			struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, j->id, (uint16_t)m, slot, 1, seq, 8);
			assert_int_equal(tl_send(eng, &j->contributors[m], &h, v), INA_OK);
		}
}

/* The reports due at t_us: each a valid MISS flagged idle. */
static unsigned poll_at(struct ina_engine *eng, uint64_t t_us)
{
	uint8_t f[INA_HDR_LEN];
	struct ina_pkt p;
	ina_engine_set_time(eng, t_us * US);
	ina_engine_poll(eng, &tl_out);
	for (unsigned i = 0; i < tl_out.n; i++) {
		ina_hdr_encode(&tl_out.e[i].hdr, f);
		assert_int_equal(ina_parse(f, sizeof(f), &p), INA_OK);
		assert_int_equal(p.hdr.flags & INA_F_IDLE, INA_F_IDLE);
	}
	return tl_out.n;
}

/* The members in `who` of slice seq, one every step_us from *t_us on. */
static void flow(struct ina_engine *eng, const struct ina_job_cfg *j, uint32_t seq, unsigned who, uint64_t *t_us,
		 uint64_t step_us)
{
	for (unsigned m = 0; m < j->fan_in; m++)
		if (who >> m & 1)
			contribute(eng, j, seq, 1u << m, *t_us += step_us);
}

/* Job 5 of four members and two slots in eng, reporting silences of
 * idle_us at least. */
static struct ina_job_cfg idle_job(struct ina_engine *eng, uint32_t idle_us)
{
	struct ina_job_cfg j = tl_job(5, 4, INA_D_INT32, 2, 8);
	j.outputs |= INA_OUT_MISS;
	j.idle_miss_us = idle_us;
	assert_int_equal(ina_job_install(eng, &j, NULL), 0);
	return j;
}

/* idle_miss_us: once the job heard nothing for that long, each slot that
 * waits for at most a quarter of its members (at least one) is reported
 * to those missing, once per silence; a contribution starts the silence
 * over; a slot waiting for many (workers not started yet) is not
 * reported, nor is a job without the setting. */
static void test_idle_reports(void **state)
{
	(void)state;
	struct ina_engine *eng = ina_engine_create(4, 8);
	const struct ina_job_cfg j = idle_job(eng, 1000);
	struct ina_job_cfg plain = tl_job(6, 4, INA_D_INT32, 2, 8);
	plain.outputs |= INA_OUT_MISS;
	assert_int_equal(ina_job_install(eng, &plain, NULL), 0);
	assert_int_equal(ina_engine_idle_wait(eng), -1); /* nothing collects */

	/* a flow of a contribution every 100 µs (eight of its gaps are less
	 * than idle_miss_us), then slice 10 without member 3's: it was lost */
	uint64_t t = 10000;
	for (uint32_t seq = 0; seq < 10; seq++)
		flow(eng, &j, seq, 0xf, &t, 100);
	flow(eng, &j, 10, 0x7, &t, 100);
	contribute(eng, &plain, 0, 0x7, t);
	assert_true(ina_engine_idle_wait(eng) > 0 && ina_engine_idle_wait(eng) <= 1000);
	assert_int_equal(poll_at(eng, t + 500), 0);
	assert_int_equal(poll_at(eng, t + 1000), 1);
	assert_miss(&tl_out.e[0], &j, 3, 0, 10);
	assert_int_equal(poll_at(eng, t + 1500), 0); /* once per silence */
	assert_int_equal(poll_at(eng, t + 2000), 1);
	/* slice 11 has two of four (more than a quarter missing): not
	 * reported; its contributions start the silence over */
	t += 2000;
	flow(eng, &j, 11, 0x3, &t, 100);
	assert_int_equal(poll_at(eng, t + 500), 0);
	assert_int_equal(poll_at(eng, t + 10000), 1); /* slice 10's again, not 11's */
	assert_miss(&tl_out.e[0], &j, 3, 0, 10);
	/* member 3's re-send completes slice 10: reported no more */
	contribute(eng, &j, 10, 0x8, t + 10100);
	assert_int_equal(tl_out.e[0].hdr.type, INA_T_RESULT);
	assert_int_equal(poll_at(eng, t + 30000), 0);
	assert_int_equal(ina_job_stats(eng, 5)->idle_misses, 3);
	assert_int_equal(ina_job_stats(eng, 5)->misses, 3);
	assert_int_equal(ina_job_stats(eng, 6)->misses, 0);

	/* only with gap reports (the members must take MISS), at most 60 s */
	const char *why = NULL;
	struct ina_job_cfg bad = tl_job(7, 4, INA_D_INT32, 2, 8);
	bad.idle_miss_us = 1000;
	assert_int_equal(ina_job_install(eng, &bad, &why), -EINVAL);
	assert_non_null(strstr(why, "idle_miss_us"));
	bad.outputs |= INA_OUT_MISS;
	bad.idle_miss_us = INA_IDLE_MISS_MAX_US + 1;
	assert_int_equal(ina_job_install(eng, &bad, &why), -EINVAL);
	ina_engine_destroy(eng);
}

/* A member counted in an older slice that still collects is held back
 * by its window, not lost: slice 1 misses member 3, who is in slice 0,
 * which waits for member 2: only member 2 is told, about slice 0. */
static void test_idle_held_back(void **state)
{
	(void)state;
	struct ina_engine *eng = ina_engine_create(2, 8);
	const struct ina_job_cfg j = idle_job(eng, 1000);
	uint64_t t = 10000;
	flow(eng, &j, 0, 0xb, &t, 100);
	flow(eng, &j, 1, 0x7, &t, 100);
	assert_int_equal(poll_at(eng, t + 5000), 1);
	assert_miss(&tl_out.e[0], &j, 2, 0, 0);
	ina_engine_destroy(eng);
}

/* A silence is at least eight times the usual gap between the job's
 * contributions: members that send only as results reach them over the
 * aggregator's own link arrive that far apart, and that is no silence. */
static void test_idle_silence_follows_the_flow(void **state)
{
	(void)state;
	struct ina_engine *eng = ina_engine_create(2, 8);
	const struct ina_job_cfg j = idle_job(eng, 100);
	/* 40 slices, a contribution every 600 µs */
	uint64_t t = 1000;
	for (uint32_t seq = 0; seq < 40; seq++)
		flow(eng, &j, seq, 0xf, &t, 600);
	flow(eng, &j, 40, 0x7, &t, 600);
	assert_int_equal(poll_at(eng, t + 4000), 0); /* 6.7 gaps */
	assert_int_equal(poll_at(eng, t + 5000), 1); /* past 8 */
	ina_engine_destroy(eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_miss_reports),
		cmocka_unit_test(test_miss_tor_resends_partial),
		cmocka_unit_test(test_tor_resends_partial_after_quiet),
		cmocka_unit_test(test_idle_reports),
		cmocka_unit_test(test_idle_held_back),
		cmocka_unit_test(test_idle_silence_follows_the_flow),
	};
	return cmocka_run_group_tests_name("engine_miss", tests, NULL, NULL);
}
