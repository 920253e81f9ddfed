/* SPDX-License-Identifier: BSD-3-Clause */
/* The aggregation engine's jobs: isolation, installation checks, removal,
 * every refusal under its reason, overflow, and the outputs that chain
 * aggregators (forward with hop-by-hop ACKs, a parent PS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"

/* ---- individual behaviours ---- */

static struct ina_engine *eng1;

static int setup_eng(void **state)
{
	(void)state;
	eng1 = ina_engine_create(64, 256);
	return eng1 ? 0 : -1;
}

static int teardown_eng(void **state)
{
	(void)state;
	ina_engine_destroy(eng1);
	return 0;
}

/* A packet of job A never changes job B's slots or counters. */
static void test_job_isolation(void **state)
{
	(void)state;
	struct tl_rng rng = { 99 };
	struct ina_job_cfg a = tl_job(1, 4, INA_D_INT32, 4, 16);
	struct ina_job_cfg b = tl_job(2, 3, INA_D_INT32, 4, 16);
	assert_int_equal(ina_job_install(eng1, &a, NULL), 0);
	assert_int_equal(ina_job_install(eng1, &b, NULL), 0);
	assert_int_equal(ina_job_slot_base(eng1, 1), 0);
	assert_int_equal(ina_job_slot_base(eng1, 2), 4); /* B right behind A */

	uint32_t v[3][16], want[16];
	for (unsigned c = 0; c < 3; c++)
		for (unsigned e = 0; e < 16; e++)
			v[c][e] = c * 100 + e;
	for (unsigned e = 0; e < 16; e++)
		want[e] = v[0][e] + v[1][e] + v[2][e];
	/* B: slots 0..3, two of three contributions each */
	for (uint32_t sl = 0; sl < 4; sl++)
		for (unsigned c = 0; c < 2; c++) {
			struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 2, (uint16_t)c, sl, 0, sl, 16);
			assert_int_equal(tl_send(eng1, &b.contributors[c], &h, v[c]), INA_OK);
		}
	struct ina_job_stats before = *ina_job_stats(eng1, 2);

	/* hostile and valid traffic for job A: any slot (incl. B's engine slots
	 * 4..7, which an unchecked index would reach), any contributor, any
	 * address including B's members */
	for (int it = 0; it < 20000; it++) {
		uint32_t vals[16];
		for (int e = 0; e < 16; e++)
			vals[e] = (uint32_t)tl_next(&rng);
		struct ina_hdr h = tl_hdr(tl_below(&rng, 4) ? INA_T_DATA : (uint8_t)(1 + tl_below(&rng, 5)),
					  INA_D_INT32, 1, (uint16_t)tl_below(&rng, 6),
					  tl_below(&rng, 12) | (tl_below(&rng, 2) ? INA_SLOT_SET_BIT : 0),
					  tl_below(&rng, 3), tl_below(&rng, 8), (uint16_t)(1 + tl_below(&rng, 16)));
		if (tl_below(&rng, 8) == 0)
			h.contributor = INA_CONTRIB_UPSTREAM;
		const struct ina_addr *src = tl_below(&rng, 3) == 0 ? &b.contributors[tl_below(&rng, 3)]
								    : &a.contributors[tl_below(&rng, 4)];
		tl_send(eng1, src, &h, vals);
		for (unsigned e = 0; e < tl_out.n; e++)
			assert_int_equal(tl_out.e[e].hdr.job, 1);
	}
	assert_memory_equal(ina_job_stats(eng1, 2), &before, sizeof(before));
	assert_true(ina_job_stats(eng1, 1)->drops[INA_R_SLOT_OUT_OF_RANGE] > 0);
	assert_true(ina_job_stats(eng1, 1)->drops[INA_R_NOT_MEMBER] > 0);

	/* B's third contributions complete every slot with B's exact sums */
	for (uint32_t sl = 0; sl < 4; sl++) {
		struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 2, 2, sl, 0, sl, 16);
		assert_int_equal(tl_send(eng1, &b.contributors[2], &h, v[2]), INA_OK);
		tl_assert_results(&tl_out, &b, &h, want, false);
	}
	ina_job_remove(eng1, 1);
	ina_job_remove(eng1, 2);
}

static void expect_install(const struct ina_job_cfg *c, int err, const char *why_part)
{
	const char *why = NULL;
	int r = ina_job_install(eng1, c, &why);
	if (r != err)
		fail_msg("install: got %d want %d (%s)", r, err, why ? why : "-");
	if (why_part)
		assert_non_null(strstr(why, why_part));
}

static void test_install_checks(void **state)
{
	(void)state;
	struct ina_job_cfg c;

#define BAD(field_stmt, part)                         \
	do {                                          \
		c = tl_job(1, 4, INA_D_INT32, 4, 64); \
		field_stmt;                           \
		expect_install(&c, -EINVAL, part);    \
	} while (0)
	BAD(c.fan_in = 0, "fan_in");
	BAD(c.fan_in = INA_MAX_FANIN + 1, "fan_in");
	BAD(c.dtype = INA_D_NONE, "dtype");
	BAD(c.dtype = 9, "dtype");
	BAD(c.nslots = 0, "nslots");
	BAD(c.elems_per_slot = 0, "elems_per_slot");
	BAD(c.elems_per_slot = 257, "elems_per_slot"); /* engine max is 256 */
	BAD(c.outputs = 0, "outputs");
	BAD(c.outputs = 32, "outputs");
	BAD(c.outputs = INA_OUT_MISS, "miss");
	BAD(c.outputs = INA_OUT_MULTICAST | INA_OUT_ACK | INA_OUT_MISS, "exclude");
	BAD(c.outputs = INA_OUT_ACK, "ack");
	BAD(c.outputs = INA_OUT_ACK | INA_OUT_PS, "exclude");
	BAD(c.outputs = INA_OUT_PS | INA_OUT_FORWARD, "exclude");
	BAD((c.outputs = INA_OUT_PS, c.parent.job = 2), "parent.job");
	BAD(c.upstream_index = 4, "upstream_index");
	BAD(c.upstream_index = -2, "upstream_index");
	BAD(c.contributors[3] = c.contributors[1], "same address");
#undef BAD
	assert_int_equal(ina_job_install(NULL, &c, NULL), -EINVAL);

	/* ids, table, slot space */
	c = tl_job(1, 4, INA_D_INT32, 40, 64);
	expect_install(&c, 0, NULL);
	expect_install(&c, -EEXIST, "installed");
	c = tl_job(2, 4, INA_D_INT32, 25, 64);
	expect_install(&c, -ENOSPC, "slots"); /* 40 + 25 > 64 */
	c.nslots = 24;
	expect_install(&c, 0, NULL);
	assert_int_equal(ina_job_slot_base(eng1, 2), 40);
	assert_int_equal(ina_job_remove(eng1, 1), 0);
	assert_int_equal(ina_job_remove(eng1, 1), -ENOENT);
	c = tl_job(3, 4, INA_D_INT32, 30, 64);
	expect_install(&c, 0, NULL);
	assert_int_equal(ina_job_slot_base(eng1, 3), 0); /* first fit reuses the hole */
	ina_job_remove(eng1, 2);
	ina_job_remove(eng1, 3);

	assert_null(ina_engine_create(0, 8));
	assert_null(ina_engine_create(8, 0));
	assert_null(ina_engine_create(8, INA_MAX_ELEMS + 1));
}

/* Removing a job frees its slots: a re-installed job starts empty, and
 * packets for a removed job are unknown. */
static void test_remove_frees_state(void **state)
{
	(void)state;
	struct ina_job_cfg c = tl_job(4, 2, INA_D_INT32, 2, 8);
	uint32_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 4, 0, 0, 0, 0, 8);

	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);
	assert_int_equal(tl_send(eng1, &c.contributors[0], &h, v), INA_OK);
	assert_int_equal(ina_job_slots_busy(eng1, 4), 1);
	assert_int_equal(ina_job_remove(eng1, 4), 0);
	assert_int_equal(tl_send(eng1, &c.contributors[1], &h, v), INA_R_UNKNOWN_JOB);
	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);
	assert_int_equal(ina_job_slots_busy(eng1, 4), 0);
	/* the old partial is gone: contributor 0 is not a duplicate */
	assert_int_equal(tl_send(eng1, &c.contributors[0], &h, v), INA_OK);
	h.contributor = 1;
	assert_int_equal(tl_send(eng1, &c.contributors[1], &h, v), INA_OK);
	assert_int_equal(tl_out.n, 2);
	for (unsigned e = 0; e < 8; e++)
		assert_int_equal(tl_elem(tl_out.e[0].payload, e), 2 * v[e]);
	ina_job_remove(eng1, 4);
}

/* Every engine drop reason, each with its counter. */
static void test_engine_reasons(void **state)
{
	(void)state;
	struct ina_job_cfg c = tl_job(6, 2, INA_D_INT32, 2, 8);
	struct ina_addr stranger = tl_addr(9999);
	uint32_t v[9] = { 0 };
	uint64_t drops_before[INA_R_MAX_];
	memcpy(drops_before, ina_engine_stats(eng1)->drops, sizeof(drops_before));
	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);

	struct {
		enum ina_reason want;
		struct ina_hdr h;
		const struct ina_addr *src;
	} cases[] = {
		{ INA_R_UNKNOWN_JOB, tl_hdr(INA_T_DATA, INA_D_INT32, 7, 0, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_DTYPE_MISMATCH, tl_hdr(INA_T_DATA, INA_D_FP32, 6, 0, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_COUNT_EXCEEDS_SLOT, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0, 0, 0, 9), &c.contributors[0] },
		{ INA_R_SLOT_OUT_OF_RANGE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 2, 0, 0, 8), &c.contributors[0] },
		{ INA_R_SLOT_OUT_OF_RANGE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0x7fffffff, 0, 0, 8),
		  &c.contributors[0] },
		{ INA_R_BAD_CONTRIBUTOR, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 2, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_BAD_CONTRIBUTOR, tl_hdr(INA_T_DATA, INA_D_INT32, 6, INA_CONTRIB_UPSTREAM, 0, 0, 0, 8),
		  &c.contributors[0] },
		{ INA_R_NOT_MEMBER, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0, 0, 0, 8), &stranger },
		{ INA_R_NOT_MEMBER, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_UNEXPECTED_TYPE, tl_hdr(INA_T_ACK, INA_D_INT32, 6, 0, 0, 0, 0, 0), &c.contributors[0] },
		{ INA_R_UNEXPECTED_TYPE, tl_hdr(INA_T_NACK, INA_D_INT32, 6, 0, 0, 0, 0, 0), &c.contributors[0] },
		{ INA_R_UNEXPECTED_TYPE, tl_hdr(INA_T_RESULT, INA_D_INT32, 6, 0, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_NOT_READY, tl_hdr(INA_T_PULL, INA_D_INT32, 6, 0, 0, 0, 5, 8), &c.contributors[0] },
		/* slot 0 set 0 gets slice 5 from contributor 0 */
		{ INA_OK, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0, 0, 5, 8), &c.contributors[0] },
		{ INA_R_DUPLICATE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0, 0, 5, 8), &c.contributors[0] },
		{ INA_R_STALE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 4, 8), &c.contributors[1] },
		{ INA_R_STALE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0xffffffff, 9, 8), &c.contributors[1] },
		{ INA_R_SLOT_BUSY, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 6, 8), &c.contributors[1] },
		{ INA_R_EPOCH_AHEAD, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, INA_EPOCH_WINDOW + 1, 5, 8),
		  &c.contributors[1] },
		{ INA_R_COUNT_MISMATCH, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 5, 7), &c.contributors[1] },
		{ INA_R_NOT_READY, tl_hdr(INA_T_PULL, INA_D_INT32, 6, 1, 0, 0, 5, 8), &c.contributors[1] },
		/* contributor 0 may not use set 1 while its set-0 part is pending */
		{ INA_R_SLOT_BUSY, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, INA_SLOT_SET_BIT, 0, 7, 8),
		  &c.contributors[0] },
		{ INA_OK, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 5, 8), &c.contributors[1] },
		/* complete: pull works, a newer slice waits until both moved on */
		{ INA_OK, tl_hdr(INA_T_PULL, INA_D_INT32, 6, 1, 0, 0, 5, 0), &c.contributors[1] },
		{ INA_R_SLOT_BUSY, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 7, 8), &c.contributors[1] },
		{ INA_R_COUNT_MISMATCH, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 5, 3), &c.contributors[1] },
		{ INA_R_STALE, tl_hdr(INA_T_PULL, INA_D_INT32, 6, 1, 0, 0, 3, 0), &c.contributors[1] },
	};
	uint64_t want_drops[INA_R_MAX_] = { 0 };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum ina_reason r = tl_send(eng1, cases[i].src, &cases[i].h, v);
		if (r != cases[i].want)
			fail_msg("case %zu: got %s want %s", i, ina_reason_name(r), ina_reason_name(cases[i].want));
		if (r != INA_OK)
			assert_int_equal(tl_out.n, 0);
		want_drops[r]++;
	}
	const struct ina_job_stats *st = ina_job_stats(eng1, 6);
	for (int r = INA_R_UNKNOWN_JOB; r < INA_R_MAX_; r++) {
		assert_int_equal(ina_engine_stats(eng1)->drops[r] - drops_before[r], want_drops[r]);
		if (r != INA_R_UNKNOWN_JOB)
			assert_int_equal(st->drops[r], want_drops[r]);
		if (want_drops[r] == 0)
			fail_msg("no case for engine reason %s", ina_reason_name(r));
	}
	assert_int_equal(st->contributions, 2);
	ina_job_remove(eng1, 6);
}

static void test_int32_overflow(void **state)
{
	(void)state;
	struct ina_job_cfg c = tl_job(8, 2, INA_D_INT32, 1, 2);
	uint32_t a[2] = { INT32_MAX, (uint32_t)INT32_MIN }, b[2] = { 1, (uint32_t)-1 };
	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);

	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 8, 0, 0, 0, 0, 2);
	tl_send(eng1, &c.contributors[0], &h, a);
	h.contributor = 1;
	tl_send(eng1, &c.contributors[1], &h, b);
	assert_int_equal(tl_out.n, 2);
	assert_int_equal(tl_elem(tl_out.e[0].payload, 0), (uint32_t)INT32_MIN); /* wrapped */
	assert_int_equal(tl_elem(tl_out.e[0].payload, 1), (uint32_t)INT32_MAX);
	assert_true(tl_out.e[0].hdr.flags & INA_F_OVERFLOW);
	assert_int_equal(ina_job_stats(eng1, 8)->overflows, 1);

	/* the next slice of the other set: no overflow, no flag */
	uint32_t small[2] = { 5, (uint32_t)-7 };
	h = tl_hdr(INA_T_DATA, INA_D_INT32, 8, 0, INA_SLOT_SET_BIT, 0, 1, 2);
	tl_send(eng1, &c.contributors[0], &h, small);
	h.contributor = 1;
	tl_send(eng1, &c.contributors[1], &h, small);
	assert_int_equal(tl_elem(tl_out.e[0].payload, 0), 10);
	assert_int_equal((int32_t)tl_elem(tl_out.e[0].payload, 1), -14);
	assert_false(tl_out.e[0].hdr.flags & INA_F_OVERFLOW);
	ina_job_remove(eng1, 8);
}

/* A contribution a queue marked (INA_F_CE) marks the slot's result to
 * every contributor, as ATP echoes ECN; the next slice, unmarked, is not. */
static void test_congestion_mark_echoed(void **state)
{
	(void)state;
	struct ina_job_cfg c = tl_job(8, 3, INA_D_INT32, 1, 2);
	uint32_t a[2] = { 1, 2 };
	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 8, 0, 0, 0, 0, 2);
	for (uint16_t k = 0; k < 3; k++) {
		h.contributor = k;
		h.flags = k == 1 ? INA_F_CE : 0;
		tl_send(eng1, &c.contributors[k], &h, a);
	}
	assert_int_equal(tl_out.n, 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(tl_out.e[i].hdr.type, INA_T_RESULT);
		assert_int_equal(tl_out.e[i].hdr.flags & INA_F_CE, INA_F_CE);
		assert_int_equal(tl_elem(tl_out.e[i].payload, 1), 6);
	}
	h = tl_hdr(INA_T_DATA, INA_D_INT32, 8, 0, INA_SLOT_SET_BIT, 0, 1, 2);
	for (uint16_t k = 0; k < 3; k++) {
		h.contributor = k;
		tl_send(eng1, &c.contributors[k], &h, a);
	}
	assert_int_equal(tl_out.n, 3);
	assert_false(tl_out.e[0].hdr.flags & INA_F_CE);
	ina_job_remove(eng1, 8);
}

/* Ring shape: the upstream member is a contributor addressed by the
 * reserved id; the aggregate goes downstream, results to the rack only. */
static void test_forward_and_upstream(void **state)
{
	(void)state;
	struct ina_job_cfg c = tl_job(10, 3, INA_D_INT32, 1, 4);
	c.upstream_index = 2;
	c.outputs = INA_OUT_MULTICAST | INA_OUT_FORWARD;
	c.forward = (struct ina_peer){ .addr = tl_addr(500), .job = 77, .contributor = INA_CONTRIB_UPSTREAM };
	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);
	uint32_t v[4] = { 1, 2, 3, 4 };

	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 10, INA_CONTRIB_UPSTREAM, 0, 3, 0, 4);
	assert_int_equal(tl_send(eng1, &c.contributors[2], &h, v), INA_OK);
	h.contributor = 0;
	assert_int_equal(tl_send(eng1, &c.contributors[0], &h, v), INA_OK);
	h.contributor = 1;
	assert_int_equal(tl_send(eng1, &c.contributors[1], &h, v), INA_OK);
	assert_int_equal(tl_out.n, 3); /* results to 0 and 1, data downstream */
	assert_int_equal(tl_out.e[0].hdr.type, INA_T_RESULT);
	assert_int_equal(tl_out.e[1].hdr.type, INA_T_RESULT);
	assert_int_equal(tl_out.e[1].hdr.contributor, 1);
	assert_int_equal(tl_out.e[2].hdr.type, INA_T_DATA);
	assert_int_equal(tl_out.e[2].hdr.job, 77);
	assert_int_equal(tl_out.e[2].hdr.contributor, INA_CONTRIB_UPSTREAM);
	assert_int_equal(tl_out.e[2].dst.ip, tl_addr(500).ip);
	assert_int_equal(tl_out.e[2].hdr.epoch, 3);
	for (unsigned e = 0; e < 4; e++)
		assert_int_equal(tl_elem(tl_out.e[2].payload, e), 3 * v[e]);

	/* the upstream's re-send is answered downstream only */
	h.contributor = INA_CONTRIB_UPSTREAM;
	assert_int_equal(tl_send(eng1, &c.contributors[2], &h, v), INA_OK);
	assert_int_equal(tl_out.n, 1);
	assert_int_equal(tl_out.e[0].hdr.type, INA_T_DATA);
	assert_true(tl_out.e[0].hdr.flags & INA_F_RETX);
	ina_job_remove(eng1, 10);
}

static void deliver(struct ina_engine *to, const struct ina_emit *e, const struct ina_addr *from, struct ina_emits *o)
{
	ina_hdr_encode(&e->hdr, tl_pkt);
	memcpy(tl_pkt + INA_HDR_LEN, e->payload, e->payload_len);
	assert_int_equal(ina_engine_rx(to, tl_pkt, INA_HDR_LEN + e->payload_len, from, o), INA_OK);
}

/* Two ToRs aggregate their racks and hand the partials to a software PS
 * built from the same engine; the PS result comes back and is multicast.
 * A lost partial is re-sent when the workers re-send, once per round. */
static void test_ps_hierarchy(void **state)
{
	(void)state;
	static struct ina_emits o2, o3;
	struct ina_engine *tor[2] = { ina_engine_create(2, 8), ina_engine_create(2, 8) };
	struct ina_engine *ps = ina_engine_create(2, 8);
	struct ina_addr tor_addr[2] = { tl_addr(700), tl_addr(701) }, ps_addr = tl_addr(800);
	struct ina_job_cfg rack[2], top = tl_job(12, 2, INA_D_INT32, 2, 8);
	top.contributors[0] = tor_addr[0];
	top.contributors[1] = tor_addr[1];
	assert_int_equal(ina_job_install(ps, &top, NULL), 0);
	for (int r = 0; r < 2; r++) {
		rack[r] = tl_job(12, 2, INA_D_INT32, 2, 8);
		rack[r].contributors[0] = tl_addr(10 + 2 * r);
		rack[r].contributors[1] = tl_addr(11 + 2 * r);
		rack[r].outputs = INA_OUT_PS;
		rack[r].parent = (struct ina_peer){ .addr = ps_addr, .job = 12, .contributor = (uint16_t)r };
		assert_int_equal(ina_job_install(tor[r], &rack[r], NULL), 0);
	}
	uint32_t v[4][8];
	for (int w = 0; w < 4; w++)
		for (int e = 0; e < 8; e++)
			v[w][e] = (uint32_t)(w * 10 + e);

	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 0, 1, 0, 0, 8);
	/* rack 0 completes; its partial to the PS is "lost" */
	tl_send(tor[0], &rack[0].contributors[0], &h, v[0]);
	h.contributor = 1;
	tl_send(tor[0], &rack[0].contributors[1], &h, v[1]);
	assert_int_equal(tl_out.n, 1);
	assert_int_equal(tl_out.e[0].dst.ip, ps_addr.ip);
	assert_int_equal(ina_job_slots_busy(tor[0], 12), 1); /* waiting for the parent */
	/* worker 1 times out and re-sends: the ToR re-sends the partial and
	 * tells the worker it holds its contribution (HAVE) */
	h.flags = INA_F_RETX;
	assert_int_equal(tl_send(tor[0], &rack[0].contributors[1], &h, v[1]), INA_OK);
	assert_int_equal(tl_out.n, 2);
	assert_true(tl_out.e[0].hdr.flags & INA_F_RETX);
	assert_int_equal(tl_out.e[1].hdr.type, INA_T_HAVE);
	assert_int_equal(tl_out.e[1].dst.ip, rack[0].contributors[1].ip);
	/* worker 0 times out in the same round: the uplink carries the
	 * partial once per round, not once per worker */
	h.contributor = 0;
	assert_int_equal(tl_send(tor[0], &rack[0].contributors[0], &h, v[0]), INA_OK);
	assert_int_equal(tl_out.n, 1);
	assert_int_equal(tl_out.e[0].hdr.type, INA_T_HAVE);
	/* the workers' next round of re-sends sends it again */
	h.contributor = 1;
	assert_int_equal(tl_send(tor[0], &rack[0].contributors[1], &h, v[1]), INA_OK);
	assert_int_equal(tl_out.n, 2);
	assert_int_equal(tl_out.e[0].dst.ip, ps_addr.ip);
	deliver(ps, &tl_out.e[0], &tor_addr[0], &o2);
	/* the PS holds it and says so; the ToR takes that and does nothing */
	assert_int_equal(o2.n, 1);
	assert_int_equal(o2.e[0].hdr.type, INA_T_HAVE);
	assert_int_equal(o2.e[0].dst.ip, tor_addr[0].ip);
	deliver(tor[0], &o2.e[0], &ps_addr, &o3);
	assert_int_equal(o3.n, 0);
	/* rack 1 completes, its partial reaches the PS, which multicasts */
	h.flags = 0;
	h.contributor = 0;
	tl_send(tor[1], &rack[1].contributors[0], &h, v[2]);
	h.contributor = 1;
	tl_send(tor[1], &rack[1].contributors[1], &h, v[3]);
	deliver(ps, &tl_out.e[0], &tor_addr[1], &o2);
	assert_int_equal(o2.n, 2);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(o2.e[r].dst.ip, tor_addr[r].ip);
		struct ina_addr stranger = tl_addr(900);
		ina_hdr_encode(&o2.e[r].hdr, tl_pkt);
		memcpy(tl_pkt + INA_HDR_LEN, o2.e[r].payload, o2.e[r].payload_len);
		assert_int_equal(ina_engine_rx(tor[r], tl_pkt, INA_HDR_LEN + 32, &stranger, &o3), INA_R_NOT_MEMBER);
		deliver(tor[r], &o2.e[r], &ps_addr, &o3);
		assert_int_equal(o3.n, 2);
		for (int w = 0; w < 2; w++) {
			assert_int_equal(o3.e[w].hdr.type, INA_T_RESULT);
			assert_int_equal(o3.e[w].dst.ip, rack[r].contributors[w].ip);
			for (int e = 0; e < 8; e++)
				assert_int_equal(tl_elem(o3.e[w].payload, e), v[0][e] + v[1][e] + v[2][e] + v[3][e]);
		}
		/* the same result again is a duplicate */
		ina_hdr_encode(&o2.e[r].hdr, tl_pkt);
		memcpy(tl_pkt + INA_HDR_LEN, o2.e[r].payload, o2.e[r].payload_len);
		assert_int_equal(ina_engine_rx(tor[r], tl_pkt, INA_HDR_LEN + 32, &ps_addr, &o3), INA_R_DUPLICATE);
		/* worker 1's copy of the result was lost: its re-send is answered
		 * from the ToR's stored result, to it alone */
		struct ina_hdr rh = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 1, 1, 0, 0, 8);
		rh.flags = INA_F_RETX;
		assert_int_equal(tl_send(tor[r], &rack[r].contributors[1], &rh, v[2 * r + 1]), INA_OK);
		assert_int_equal(tl_out.n, 1);
		assert_int_equal(tl_out.e[0].hdr.type, INA_T_RESULT);
		assert_int_equal(tl_out.e[0].dst.ip, rack[r].contributors[1].ip);
		for (int e = 0; e < 8; e++)
			assert_int_equal(tl_elem(tl_out.e[0].payload, e), v[0][e] + v[1][e] + v[2][e] + v[3][e]);
	}
	ina_engine_destroy(tor[0]);
	ina_engine_destroy(tor[1]);
	ina_engine_destroy(ps);
}

static enum ina_reason send_join(struct ina_engine *eng, const struct ina_addr *src, struct ina_hdr h)
{
	h.flags |= INA_F_JOIN;
	size_t len = tl_encode(tl_pkt, &h, NULL, h.count);
	return ina_engine_rx(eng, tl_pkt, len, src, &tl_out);
}

static unsigned count_emits(uint8_t type, const struct ina_addr *dst)
{
	unsigned n = 0;
	for (unsigned i = 0; i < tl_out.n; i++)
		n += tl_out.e[i].hdr.type == type && tl_out.e[i].dst.ip == dst->ip && tl_out.e[i].dst.port == dst->port;
	return n;
}

/* Agent-ring hop semantics (INA_OUT_ACK): a reduce step forwards when its
 * rack and the upstream have contributed and ACKs the upstream; it is
 * finished for its workers only when the downstream ACKs, which it passes
 * on; re-sends are answered by what is missing.  A gather step takes the
 * workers' joins (no elements) and the upstream's data. */
static void test_ring_ack(void **state)
{
	(void)state;
	struct ina_engine *e = ina_engine_create(8, 8);
	struct ina_addr w0 = tl_addr(1), w1 = tl_addr(2), up = tl_addr(50), down = tl_addr(60), stranger = tl_addr(99);
	struct ina_job_cfg red = tl_job(20, 3, INA_D_INT32, 2, 8);
	red.contributors[0] = w0;
	red.contributors[1] = w1;
	red.contributors[2] = up;
	red.upstream_index = 2;
	red.upstream_job = 9;
	red.outputs = INA_OUT_FORWARD | INA_OUT_ACK;
	red.forward = (struct ina_peer){ .addr = down, .job = 31, .contributor = INA_CONTRIB_UPSTREAM };
	assert_int_equal(ina_job_install(e, &red, NULL), 0);
	uint32_t a[8], b[8], u[8];
	for (int i = 0; i < 8; i++) {
		a[i] = (uint32_t)i;
		b[i] = (uint32_t)(100 * i);
		u[i] = (uint32_t)(7 + i);
	}
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 20, 0, 1, 5, 3, 8);
	assert_int_equal(tl_send(e, &w0, &h, a), INA_OK);
	h.contributor = INA_CONTRIB_UPSTREAM;
	assert_int_equal(tl_send(e, &up, &h, u), INA_OK);
	assert_int_equal(tl_out.n, 0);
	/* a chain's re-sends while it waits get no HAVE (its members wait on
	 * timers and ACKs), neither a worker's nor the upstream's */
	h.flags = INA_F_RETX;
	assert_int_equal(tl_send(e, &up, &h, u), INA_R_DUPLICATE);
	assert_int_equal(tl_out.n, 0);
	h.contributor = 0;
	assert_int_equal(tl_send(e, &w0, &h, a), INA_R_DUPLICATE);
	assert_int_equal(tl_out.n, 0);
	h.flags = 0;
	h.contributor = 1;
	assert_int_equal(tl_send(e, &w1, &h, b), INA_OK);
	/* complete: the sum goes downstream, the upstream is acknowledged */
	assert_int_equal(tl_out.n, 2);
	assert_int_equal(count_emits(INA_T_DATA, &down), 1);
	assert_int_equal(count_emits(INA_T_ACK, &up), 1);
	for (unsigned i = 0; i < tl_out.n; i++) {
		const struct ina_emit *x = &tl_out.e[i];
		if (x->hdr.type == INA_T_DATA) {
			assert_int_equal(x->hdr.job, 31);
			assert_int_equal(x->hdr.contributor, INA_CONTRIB_UPSTREAM);
			for (int k = 0; k < 8; k++)
				assert_int_equal(tl_elem(x->payload, k), a[k] + b[k] + u[k]);
		} else {
			assert_int_equal(x->hdr.job, 9);
			assert_int_equal(x->payload_len, 0);
			assert_int_equal(x->hdr.seq, 3);
		}
	}
	/* before the downstream's ACK, a worker's re-send re-forwards; the
	 * other worker's re-send of the same round does not send it again */
	h.contributor = 0;
	h.flags = INA_F_RETX;
	assert_int_equal(tl_send(e, &w0, &h, a), INA_OK);
	assert_int_equal(tl_out.n, 1);
	assert_int_equal(count_emits(INA_T_DATA, &down), 1);
	h.contributor = 1;
	assert_int_equal(tl_send(e, &w1, &h, b), INA_OK);
	assert_int_equal(tl_out.n, 0);
	h.contributor = 0;
	assert_int_equal(tl_send(e, &w0, &h, a), INA_OK);
	assert_int_equal(count_emits(INA_T_DATA, &down), 1);
	/* the ACK must come from the downstream and name the slice */
	struct ina_hdr ack = tl_hdr(INA_T_ACK, INA_D_INT32, 20, 0, 1, 5, 3, 8);
	size_t len = tl_encode(tl_pkt, &ack, NULL, 8);
	assert_int_equal(ina_engine_rx(e, tl_pkt, len, &stranger, &tl_out), INA_R_NOT_MEMBER);
	ack.seq = 4;
	len = tl_encode(tl_pkt, &ack, NULL, 8);
	assert_int_equal(ina_engine_rx(e, tl_pkt, len, &down, &tl_out), INA_R_NOT_READY);
	ack.seq = 3;
	len = tl_encode(tl_pkt, &ack, NULL, 8);
	assert_int_equal(ina_engine_rx(e, tl_pkt, len, &down, &tl_out), INA_OK);
	assert_int_equal(tl_out.n, 2); /* passed to both workers, not the upstream */
	assert_int_equal(count_emits(INA_T_ACK, &w0), 1);
	assert_int_equal(count_emits(INA_T_ACK, &w1), 1);
	assert_int_equal(ina_engine_rx(e, tl_pkt, len, &down, &tl_out), INA_R_DUPLICATE);
	/* after it: a worker's re-send gets the ACK, the upstream's gets ours */
	h.contributor = 1;
	assert_int_equal(tl_send(e, &w1, &h, b), INA_OK);
	assert_int_equal(tl_out.n, 1);
	assert_int_equal(count_emits(INA_T_ACK, &w1), 1);
	h.contributor = INA_CONTRIB_UPSTREAM;
	assert_int_equal(tl_send(e, &up, &h, u), INA_OK);
	assert_int_equal(tl_out.n, 1);
	assert_int_equal(count_emits(INA_T_ACK, &up), 1);

	/* a terminal gather step: joins from the workers, data from the
	 * upstream, in both orders (a join last must still leave a result in
	 * wire order) */
	struct ina_job_cfg gat = red;
	gat.id = 21;
	gat.outputs = INA_OUT_MULTICAST | INA_OUT_ACK;
	assert_int_equal(ina_job_install(e, &gat, NULL), 0);
	for (int order = 0; order < 2; order++) {
		struct ina_hdr g = tl_hdr(INA_T_DATA, INA_D_INT32, 21, 0, (uint32_t)order, 5, (uint32_t)order, 8);
		if (order == 1) {
			g.contributor = INA_CONTRIB_UPSTREAM;
			assert_int_equal(tl_send(e, &up, &g, u), INA_OK);
		}
		g.contributor = 0;
		assert_int_equal(send_join(e, &w0, g), INA_OK);
		g.contributor = 1;
		assert_int_equal(send_join(e, &w1, g), INA_OK);
		if (order == 0) {
			assert_int_equal(tl_out.n, 0);
			g.contributor = INA_CONTRIB_UPSTREAM;
			assert_int_equal(tl_send(e, &up, &g, u), INA_OK);
		}
		assert_int_equal(count_emits(INA_T_RESULT, &w0), 1);
		assert_int_equal(count_emits(INA_T_RESULT, &w1), 1);
		assert_int_equal(count_emits(INA_T_ACK, &up), 1);
		for (unsigned i = 0; i < tl_out.n; i++)
			if (tl_out.e[i].hdr.type == INA_T_RESULT)
				for (int k = 0; k < 8; k++)
					assert_int_equal(tl_elem(tl_out.e[i].payload, k), u[k]);
	}
	assert_int_equal(ina_job_stats(e, 21)->completions, 2);
	ina_engine_destroy(e);
}

/* Sends (epoch, seq) with values base + contributor to slot|set from each
 * of the members in who[]; returns the last verdict. */
static enum ina_reason send_from(struct ina_engine *e, const struct ina_job_cfg *c, const unsigned *who, unsigned n,
				 uint32_t slot, uint32_t epoch, uint32_t base)
{
	enum ina_reason r = INA_OK;
	for (unsigned i = 0; i < n; i++) {
		uint32_t v[4] = { base + who[i], base + who[i], base + who[i], base + who[i] };
		struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, c->id, (uint16_t)who[i], slot, epoch, 0, 4);
		r = tl_send(e, &c->contributors[who[i]], &h, v);
		if (r != INA_OK)
			return r;
	}
	return r;
}

/* Wedged slots: a call that failed part-way leaves a partial round, which
 * the next call's slice takes over at once (a newer epoch under an
 * unfinished round: no member finishes a call with a slice unfinished);
 * a forged slice far ahead is refused, one within the window holds the
 * slot only until it has been idle for the reclaim time; a finished slot
 * whose straggler never moved on gives way after the same time, but not
 * while someone still re-sends to it.  Every sum stays exact: a reclaimed
 * round's contributions are not in the next. */
static void test_slot_reclaim(void **state)
{
	(void)state;
	struct ina_engine *e = ina_engine_create(8, 16);
	struct ina_job_cfg c = tl_job(12, 3, INA_D_INT32, 2, 4);
	const unsigned first2[] = { 0, 1 }, last2[] = { 1, 2 }, all[] = { 0, 1, 2 }, one[] = { 2 };
	const uint64_t ms = 1000000;
	assert_int_equal(ina_job_install(e, &c, NULL), 0);
	ina_engine_set_time(e, 5000 * ms);

	/* epoch 1 fails part-way: members 0 and 1 are in, 2 never comes */
	assert_int_equal(send_from(e, &c, first2, 2, 0, 1, 100), INA_OK);
	/* epoch 2 on the same slot and set: member 2 first, then 0 and 1 */
	assert_int_equal(send_from(e, &c, one, 1, 0, 2, 200), INA_OK);
	assert_int_equal(ina_job_stats(e, 12)->reclaimed, 1);
	assert_int_equal(send_from(e, &c, first2, 2, 0, 2, 200), INA_OK);
	uint32_t want[4] = { 603, 603, 603, 603 }; /* 200 + 201 + 202: nothing of epoch 1 */
	struct ina_hdr h2 = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 0, 0, 2, 0, 4);
	tl_assert_results(&tl_out, &c, &h2, want, 0);

	/* a forged slice far ahead of the newest completed epoch (2) */
	assert_int_equal(send_from(e, &c, first2, 1, 1, 2 + INA_EPOCH_WINDOW + 1, 0), INA_R_EPOCH_AHEAD);
	/* one within the window wedges slot 1 ... */
	assert_int_equal(send_from(e, &c, first2, 1, 1, 90, 0), INA_OK);
	assert_int_equal(send_from(e, &c, last2, 1, 1, 3, 300), INA_R_STALE);
	ina_engine_set_time(e, 6999 * ms);
	assert_int_equal(send_from(e, &c, last2, 1, 1, 3, 300), INA_R_STALE);
	/* ... until it sat idle for the reclaim time */
	ina_engine_set_time(e, 7000 * ms);
	assert_int_equal(send_from(e, &c, last2, 2, 1, 3, 300), INA_OK);
	assert_int_equal(ina_job_stats(e, 12)->reclaimed, 2);
	assert_int_equal(send_from(e, &c, first2, 1, 1, 3, 300), INA_OK);
	for (int k = 0; k < 4; k++)
		want[k] = 903;
	struct ina_hdr h3 = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 0, 1, 3, 0, 4);
	tl_assert_results(&tl_out, &c, &h3, want, 0);

	/* slot 1 finished, but member 2 (its result lost, its call failed)
	 * comes back on the same set: it waits for the others to move on */
	assert_int_equal(send_from(e, &c, one, 1, 1, 4, 400), INA_R_SLOT_BUSY);
	ina_engine_set_time(e, 8500 * ms);
	assert_int_equal(send_from(e, &c, first2, 1, 1, 3, 300), INA_OK); /* a straggler re-sends: answered */
	assert_int_equal(tl_out.n, 1);
	ina_engine_set_time(e, 9500 * ms); /* 1 s after that re-send */
	assert_int_equal(send_from(e, &c, one, 1, 1, 4, 400), INA_R_SLOT_BUSY);
	ina_engine_set_time(e, 10500 * ms);
	assert_int_equal(send_from(e, &c, all, 3, 1, 4, 400), INA_OK);
	assert_int_equal(ina_job_stats(e, 12)->reclaimed, 3);
	for (int k = 0; k < 4; k++)
		want[k] = 1203;
	struct ina_hdr h4 = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 0, 1, 4, 0, 4);
	tl_assert_results(&tl_out, &c, &h4, want, 0);

	/* a refused slice changes nothing, not even a round its sender left:
	 * member 0 is in slot 0 set 1 at epoch 5 when its epoch-6 slice meets
	 * set 0 holding a newer slice of epoch 6 (stale), then goes in */
	ina_engine_set_time(e, 11000 * ms);
	assert_int_equal(send_from(e, &c, first2, 1, INA_SLOT_SET_BIT, 5, 500), INA_OK);
	struct ina_hdr newer = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 1, 0, 6, 1, 4);
	uint32_t v1[4] = { 1, 1, 1, 1 };
	assert_int_equal(tl_send(e, &c.contributors[1], &newer, v1), INA_OK);
	uint64_t reclaimed = ina_job_stats(e, 12)->reclaimed;
	assert_int_equal(send_from(e, &c, first2, 1, 0, 6, 600), INA_R_STALE);
	assert_int_equal(ina_job_stats(e, 12)->reclaimed, reclaimed);
	assert_int_equal(ina_job_slots_busy(e, 12), 2); /* set 1's epoch 5 and set 0's epoch 6 */
	ina_engine_destroy(e);
}

/* The owner thread installs and removes job X over and over, at bases and
 * sizes that change, beside a job Y holding a partial slot; a stats reader
 * on another thread must see X whole or not at all: never Y's range (or a
 * mix of X's old and new one), so never a busy slot. */
struct churn {
	struct ina_engine *eng;
	unsigned rounds;
	int done, failed;
	int reader_saw_x; /* set by the reader: the owner churns on until then */
};

static void *churn_x(void *arg)
{
	struct churn *c = arg;
	struct ina_job_cfg small = tl_job(21, 2, INA_D_INT32, 4, 8), big = tl_job(21, 2, INA_D_INT32, 12, 8);
	struct ina_job_cfg pad = tl_job(22, 2, INA_D_INT32, 4, 8);
	/* on a loaded machine both threads may share one core, and a reader's
	 * few time slices can all fall where X is out: churn on (up to a
	 * deadline) until the reader has seen X at least once */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned r = 0; !c->failed; r++) {
		if (r >= c->rounds && (r % 1024) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (__atomic_load_n(&c->reader_saw_x, __ATOMIC_ACQUIRE) || now.tv_sec - t0.tv_sec > 30)
				break;
		}
		/* with the pad in front, X starts at 8, else at 4 */
		bool padded = r & 2;
		if ((padded && ina_job_install(c->eng, &pad, NULL)) ||
		    ina_job_install(c->eng, r & 1 ? &big : &small, NULL) || ina_job_remove(c->eng, 21) ||
		    (padded && ina_job_remove(c->eng, 22)))
			c->failed = 1;
	}
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_stats_read_beside_installs(void **state)
{
	(void)state;
	struct ina_engine *e = ina_engine_create(32, 8);
	struct ina_job_cfg y = tl_job(20, 2, INA_D_INT32, 4, 8);
	uint32_t v[8] = { 1 };
	assert_int_equal(ina_job_install(e, &y, NULL), 0);
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 20, 0, 0, 0, 1, 8);
	assert_int_equal(tl_send(e, &y.contributors[0], &h, v), INA_OK);
	assert_int_equal(ina_job_slots_busy(e, 20), 1);

	struct churn c = { .eng = e, .rounds = 300000 };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, churn_x, &c), 0);
	unsigned long reads = 0, seen = 0, bad_busy = 0, bad_base = 0;
	while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE)) {
		long base = ina_job_slot_base(e, 21);
		bad_busy += ina_job_slots_busy(e, 21) != 0;
		bad_base += base != -1 && base != 4 && base != 8;
		seen += base != -1;
		if (seen == 1)
			__atomic_store_n(&c.reader_saw_x, 1, __ATOMIC_RELEASE);
		reads++;
	}
	pthread_join(t, NULL);
	print_message("# %lu reads, %lu saw X installed\n", reads, seen);
	assert_false(c.failed);
	assert_int_equal(bad_busy, 0);
	assert_int_equal(bad_base, 0);
	assert_true(seen > 0);
	assert_int_equal(ina_job_slots_busy(e, 20), 1);
	ina_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_isolation),
		cmocka_unit_test(test_install_checks),
		cmocka_unit_test(test_remove_frees_state),
		cmocka_unit_test(test_engine_reasons),
		cmocka_unit_test(test_int32_overflow),
		cmocka_unit_test(test_congestion_mark_echoed),
		cmocka_unit_test(test_forward_and_upstream),
		cmocka_unit_test(test_ps_hierarchy),
		cmocka_unit_test(test_ring_ack),
		cmocka_unit_test(test_slot_reclaim),
		cmocka_unit_test(test_stats_read_beside_installs),
	};
	return cmocka_run_group_tests_name("engine_jobs", tests, setup_eng, teardown_eng);
}
