/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent-ring plan: ring members for every mix of INA and plain racks,
 * and the schedule's invariants — each member adds its data to every
 * element exactly once, a forward is the same elements at the next
 * member's next slice, every member receives every result exactly once,
 * every member's one job names its neighbours — also past the 16 members
 * the step-per-job plan held, and for tensors shorter than the ring. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aring_plan.h"

static struct ina_addr A(uint32_t host, uint16_t port) {
	return (struct ina_addr){ .ip = htonl(0x0a000000u | host), .port = htons(port) };
}

/* racks of the given sizes; bit r of ina_mask: rack r has ToR 10.240.0.r */
static unsigned
layout(struct plan_rank *r, struct ina_addr *soft, const unsigned *sizes, unsigned nracks, unsigned ina_mask)
{
	unsigned n = 0;
	for (unsigned k = 0; k < nracks; k++)
		for (unsigned i = 0; i < sizes[k]; i++, n++) {
			r[n] = (struct plan_rank){ .ina = A(n + 1, 48864), .rack = (int)k };
			if (ina_mask >> k & 1)
				r[n].tor = A(0xF00000u | k, 48864);
			soft[n] = A(n + 1, 48870);
		}
	return n;
}

/* Member k's job: every step in one, the upstream its last contributor
 * and the downstream its forward, both under the plan's job id. */
static void check_job(const struct aring_plan *p, unsigned k)
{
	unsigned m = p->m;
	struct ina_job_cfg j;
	aring_job(p, k, &j);
	assert_null(ina_job_cfg_check(&j, 2048));
	assert_int_equal(j.id, p->job);
	assert_int_equal(j.nslots, p->slots);
	assert_int_equal(j.fan_in, p->mem[k].n + (m > 1));
	if (m == 1) {
		assert_int_equal(j.chain_steps, 0);
		assert_int_equal(j.upstream_index, -1);
		return;
	}
	unsigned up = (k + m - 1) % m, dn = (k + 1) % m;
	assert_int_equal(j.chain_steps, aring_steps(p));
	assert_int_equal(j.upstream_index, p->mem[k].n);
	assert_int_equal(j.contributors[j.upstream_index].ip, p->mem[up].agg.ip);
	assert_int_equal(j.contributors[j.upstream_index].port, p->mem[up].agg.port);
	assert_int_equal(j.upstream_job, p->job);
	assert_int_equal(j.forward.addr.ip, p->mem[dn].agg.ip);
	assert_int_equal(j.forward.addr.port, p->mem[dn].agg.port);
	assert_int_equal(j.forward.job, p->job);
	assert_int_equal(j.forward.contributor, INA_CONTRIB_UPSTREAM);
}

/* Every member adds every element of the (padded) tensor exactly once and
 * gets every result exactly once; a forwarded slice is the same elements
 * at the next member's next seq; slices are never empty nor longer than
 * the plan's elems. */
static void check_members(const struct aring_plan *p, size_t count, unsigned every)
{
	unsigned m = p->m, S = aring_steps(p);
	struct aring_call c;
	aring_call_of(p, count, &c);
	assert_int_equal(c.padded, count < m ? m : count);
	assert_int_equal(c.slices, c.rounds * S);
	uint8_t *added = malloc(c.padded), *got = malloc(c.padded);
	for (unsigned k = 0; k < m; k += every) {
		memset(added, 0, c.padded);
		memset(got, 0, c.padded);
		for (size_t q = 0; q < c.slices; q++) {
			struct aring_step st, nx;
			aring_slice_of(p, &c, k, q, &st);
			assert_int_equal(st.step, q % S);
			assert_true(st.lo < st.hi && st.hi - st.lo <= p->elems && st.hi <= c.padded);
			assert_int_equal(st.join, st.step >= m);
			assert_int_equal(st.need_ack, m > 1 && st.step + 1 < S);
			assert_int_equal(st.need_result, st.step + 1 >= m);
			for (size_t e = st.lo; e < st.hi; e++) {
				added[e] += !st.join;
				got[e] += st.need_result;
			}
			if (st.step == m - 1) /* the owner completes the chunk: all m added */
				assert_int_equal(st.chunk, (k + 1) % m);
			if (!st.need_ack)
				continue;
			aring_slice_of(p, &c, (k + 1) % m, q + 1, &nx); /* the downstream's slice q + 1 */
			assert_int_equal(nx.step, st.step + 1);
			assert_int_equal(nx.lo, st.lo);
			assert_int_equal(nx.hi, st.hi);
		}
		for (size_t e = 0; e < c.padded; e++) {
			assert_int_equal(added[e], 1);
			assert_int_equal(got[e], 1);
		}
		check_job(p, k);
	}
	free(added);
	free(got);
}

static void check_schedule(const struct aring_plan *p, size_t count) { check_members(p, count, 1); }

static void test_mixes(void **st)
{
	(void)st;
	static const unsigned sizes4[] = { 4, 4, 4, 4 }, uneven[] = { 3, 1, 5, 2 };
	static const struct {
		const unsigned *sizes;
		unsigned ina_mask, members;
	} cases[] = {
		{ sizes4, 0x0, 16 }, { sizes4, 0x1, 13 }, { sizes4, 0x5, 10 }, { sizes4, 0xf, 4 },
		{ uneven, 0x0, 11 }, { uneven, 0x6, 7 },  { uneven, 0xf, 4 },
	};
	for (unsigned t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
		struct plan_rank r[16];
		struct ina_addr soft[16];
		struct aring_plan p;
		char err[200];
		unsigned w = layout(r, soft, cases[t].sizes, 4, cases[t].ina_mask);
		assert_int_equal(aring_plan_build(r, soft, w, 10, INA_D_INT32, 8, 256, &p, err, sizeof(err)), 0);
		assert_int_equal(p.m, cases[t].members);
		assert_int_equal(aring_chain(&p), 2 * (p.m - 1));
		/* a worker's window: 8 slots x (2m - 1) steps, up to 8; the
		 * job's slots as many (a slot per step is fewer here) */
		assert_int_equal(p.window, 8 * (2 * p.m - 1 < ARING_WINDOW_STEPS ? 2 * p.m - 1 : ARING_WINDOW_STEPS));
		assert_int_equal(p.slots, p.window);
		struct aring_call c;
		aring_call_of(&p, 1u << 20, &c); /* any call: the window */
		assert_int_equal(aring_call_window(&p, &c), p.window);
		/* every rank is a worker of the member of its rack, INA racks once */
		for (unsigned i = 0; i < w; i++) {
			const struct aring_member *mb = &p.mem[p.member_of[i]];
			assert_int_equal(mb->rack, r[i].rack);
			assert_int_equal(mb->ina, r[i].tor.ip != 0);
			assert_int_equal(p.worker_rank[mb->first + p.index_of[i]], i);
			assert_int_equal(mb->agg.ip, mb->ina ? r[i].tor.ip : soft[i].ip);
			if (!mb->ina)
				assert_int_equal(mb->n, 1);
		}
		for (size_t count = 1; count < 40; count += 13)
			check_schedule(&p, count);
		check_schedule(&p, 1000003);
		aring_plan_free(&p);
	}
}

static void test_one_member_is_switchml(void **st)
{
	(void)st;
	static const unsigned one[] = { 4 };
	struct plan_rank r[4];
	struct ina_addr soft[4];
	struct aring_plan p;
	char err[200];
	layout(r, soft, one, 1, 1);
	assert_int_equal(aring_plan_build(r, soft, 4, 1, INA_D_FP32, 8, 256, &p, err, sizeof(err)), 0);
	assert_int_equal(p.m, 1);
	assert_int_equal(aring_steps(&p), 1);
	assert_int_equal(p.slots, 8); /* no chain: the window asked for */
	struct ina_job_cfg j;
	aring_job(&p, 0, &j);
	assert_int_equal(j.outputs, INA_OUT_MULTICAST);
	assert_int_equal(j.fan_in, 4);
	struct aring_call c;
	aring_call_of(&p, 1000, &c);
	assert_int_equal(c.rounds, 4); /* 1000 elements in slices of 256 at most */
	struct aring_step s;
	aring_slice_of(&p, &c, 0, 0, &s);
	assert_true(s.need_result && !s.need_ack && !s.join);
	assert_int_equal(s.hi - s.lo, 250);
	check_schedule(&p, 1000);
	aring_plan_free(&p);
}

/* 1024 hosts in 32 racks, a quarter of them INA: 8 + 768 members, one
 * job each, where the step-per-job plan stopped at 16 members. */
static void test_large(void **st)
{
	(void)st;
	enum { RACKS = 32, HOSTS = 32, N = RACKS * HOSTS };
	unsigned sizes[RACKS];
	for (unsigned k = 0; k < RACKS; k++)
		sizes[k] = HOSTS;
	static struct plan_rank r[N];
	static struct ina_addr soft[N];
	struct aring_plan p;
	char err[200];
	unsigned w = layout(r, soft, sizes, RACKS, 0x11111111u);
	assert_int_equal(aring_plan_build(r, soft, w, 7, INA_D_FP32, 16, 2048, &p, err, sizeof(err)), 0);
	assert_int_equal(p.m, 8 + 24 * HOSTS);
	/* a chain of 1551 steps: a slot per step up to the most, which
	 * every call fills (a quarter of one round's 1551 slices is more) */
	assert_int_equal(p.window, 16 * ARING_WINDOW_STEPS);
	assert_int_equal(p.slots, ARING_CHAIN_SLOTS_MAX);
	struct aring_call c;
	aring_call_of(&p, 100, &c);
	assert_int_equal(c.slices, 1551);
	assert_int_equal(aring_call_window(&p, &c), ARING_CHAIN_SLOTS_MAX);
	check_members(&p, 4u << 20, 97); /* members 0, 97, ... 679 (each runs every step) */
	check_schedule(&p, 100);	 /* shorter than the ring: padded */
	aring_plan_free(&p);
}

/* 64 host members, a chain of 127 steps: a slot per step, and a call
 * keeps the plan's window of 8 x 8 in flight, or a quarter of its slices
 * where that is more, up to the 127 slots. */
static void test_window_grows_with_call(void **st)
{
	(void)st;
	static const unsigned sizes[8] = { 8, 8, 8, 8, 8, 8, 8, 8 };
	static struct plan_rank r[64];
	static struct ina_addr soft[64];
	struct aring_plan p;
	struct aring_call c;
	char err[200];
	unsigned w = layout(r, soft, sizes, 8, 0);
	assert_int_equal(aring_plan_build(r, soft, w, 7, INA_D_FP32, 8, 2048, &p, err, sizeof(err)), 0);
	assert_int_equal(p.m, 64);
	assert_int_equal(p.window, 64);
	assert_int_equal(p.slots, 127);
	const size_t round = (size_t)64 * 2048; /* elements of one round */
	aring_call_of(&p, 2 * round, &c);	/* 254 slices: a quarter is 63 */
	assert_int_equal(aring_call_window(&p, &c), 64);
	aring_call_of(&p, 3 * round, &c); /* 381: 95 */
	assert_int_equal(aring_call_window(&p, &c), 95);
	aring_call_of(&p, 32 * round, &c); /* 4064: the 127 slots */
	assert_int_equal(aring_call_window(&p, &c), 127);
	aring_plan_free(&p);
}

static void test_refusals(void **st)
{
	(void)st;
	static const unsigned two[] = { 2, 2 };
	struct plan_rank r[4];
	struct ina_addr soft[4];
	struct aring_plan p;
	char err[200];
	layout(r, soft, two, 2, 0x1);
	assert_int_equal(aring_plan_build(r, soft, 4, 1, INA_D_FP32, 1, 256, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at least 2 slots"));
	assert_int_equal(aring_plan_build(r, soft, 4, 1, INA_D_FP32, 8, 1, &p, err, sizeof(err)), -EINVAL);
	r[1].tor = A(200, 48864);
	assert_int_equal(aring_plan_build(r, soft, 4, 1, INA_D_FP32, 8, 256, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "different INA switches"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mixes),	 cmocka_unit_test(test_one_member_is_switchml),
		cmocka_unit_test(test_large),	 cmocka_unit_test(test_window_grows_with_call),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
