/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent-ring plan: ring members for every mix of INA and plain racks,
 * and the schedule's invariants — each member adds its data to every chunk
 * exactly once, forwards go to the next member's next step on the same
 * chunk, ACKs name the upstream's job, every member receives every
 * complete chunk exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <cmocka.h>

#include "aring_plan.h"

static struct ina_addr A(uint32_t host, uint16_t port) {
	return (struct ina_addr){ .ip = htonl(0x0a000000u | host), .port = htons(port) };
}

/* racks of the given sizes; bit r of ina_mask: rack r has ToR 10.0.0.(250-r) */
static unsigned
layout(struct plan_rank *r, struct ina_addr *soft, const unsigned *sizes, unsigned nracks, unsigned ina_mask)
{
	unsigned n = 0;
	for (unsigned k = 0; k < nracks; k++)
		for (unsigned i = 0; i < sizes[k]; i++, n++) {
			r[n] = (struct plan_rank){ .ina = A(n + 1, 48864), .rack = (int)k };
			if (ina_mask >> k & 1)
				r[n].tor = A(250 - k, 48864);
			soft[n] = A(n + 1, 48870);
		}
	return n;
}

static void check_schedule(const struct aring_plan *p, size_t count)
{
	unsigned m = p->m, S = aring_steps(p);
	struct ina_job_cfg j, n;
	for (unsigned k = 0; k < m; k++) {
		unsigned added[ARING_MAX_MEMBERS] = { 0 }, got[ARING_MAX_MEMBERS] = { 0 };
		for (unsigned s = 0; s < S; s++) {
			struct aring_step st, nx;
			aring_step_of(p, k, s, count, &st);
			aring_job(p, k, s, &j);
			assert_null(ina_job_cfg_check(&j, 2048));
			assert_int_equal(j.id, p->job0 + s);
			assert_int_equal(j.fan_in, p->mem[k].n + (s > 0));
			assert_int_equal(st.join, s >= m);
			assert_int_equal(st.lo, count * st.chunk / m);
			assert_int_equal(st.hi, count * (st.chunk + 1) / m);
			if (!st.join)
				added[st.chunk]++;
			if (st.need_result)
				got[st.chunk]++;
			assert_int_equal(st.need_ack, !!(j.outputs & INA_OUT_FORWARD));
			if (m > 1)
				assert_true(j.outputs & INA_OUT_ACK);
			if (s > 0) { /* the upstream is the previous member, acknowledged under its job */
				unsigned up = (k + m - 1) % m;
				assert_int_equal(j.upstream_index, p->mem[k].n);
				assert_int_equal(j.contributors[j.upstream_index].ip, p->mem[up].agg.ip);
				assert_int_equal(j.contributors[j.upstream_index].port, p->mem[up].agg.port);
				assert_int_equal(j.upstream_job, p->job0 + s - 1);
			} else {
				assert_int_equal(j.upstream_index, -1);
			}
			if (j.outputs & INA_OUT_FORWARD) { /* to the next member's next step, same chunk */
				unsigned dn = (k + 1) % m;
				assert_int_equal(j.forward.addr.ip, p->mem[dn].agg.ip);
				assert_int_equal(j.forward.job, p->job0 + s + 1);
				assert_int_equal(j.forward.contributor, INA_CONTRIB_UPSTREAM);
				aring_step_of(p, dn, s + 1, count, &nx);
				assert_int_equal(nx.chunk, st.chunk);
				aring_job(p, dn, s + 1, &n);
				assert_int_equal(n.upstream_job, j.id);
			}
			/* the owner step completes the chunk: all m members added */
			if (s == m - 1)
				assert_int_equal(st.chunk, (k + 1) % m);
		}
		for (unsigned c = 0; c < m; c++) {
			assert_int_equal(added[c], 1);
			assert_int_equal(got[c], 1);
		}
	}
}

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
	struct ina_job_cfg j;
	aring_job(&p, 0, 0, &j);
	assert_int_equal(j.outputs, INA_OUT_MULTICAST);
	assert_int_equal(j.fan_in, 4);
	struct aring_step s;
	aring_step_of(&p, 0, 0, 100, &s);
	assert_true(s.need_result && !s.need_ack && !s.join);
	assert_int_equal(s.hi - s.lo, 100);
	aring_plan_free(&p);
}

static void test_refusals(void **st)
{
	(void)st;
	static const unsigned big[] = { 17 }, two[] = { 2, 2 };
	struct plan_rank r[17];
	struct ina_addr soft[17];
	struct aring_plan p;
	char err[200];
	layout(r, soft, big, 1, 0); /* 17 autonomous hosts */
	assert_int_equal(aring_plan_build(r, soft, 17, 1, INA_D_FP32, 8, 256, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 16 ring members"));
	layout(r, soft, two, 2, 0x1);
	r[1].tor = A(200, 48864);
	assert_int_equal(aring_plan_build(r, soft, 4, 1, INA_D_FP32, 8, 256, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "different INA switches"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mixes),
		cmocka_unit_test(test_one_member_is_switchml),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
