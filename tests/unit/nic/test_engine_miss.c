/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's gap reports (INA_OUT_MISS, docs/ENGINE.md "Gap reports"):
 * what a job reports to its members, and what a ToR does with its
 * parent's report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_miss_reports),
		cmocka_unit_test(test_miss_tor_resends_partial),
	};
	return cmocka_run_group_tests_name("engine_miss", tests, NULL, NULL);
}
