/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent-ring worker over the fake network: two INA racks (their ToRs
 * software aggregators running each member's one job) and a host of a rack
 * without INA (its own software member), exact int32 sums and bf16 sums
 * rounded once, under loss, duplication and reordering, over several
 * calls (the shadow sets carry over); a rank that never comes makes the
 * others fail within the deadline, naming the member they wait for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aring_plan.h"
#include "clock.h"
#include "fake_transport.h"
#include "hcl_aring.h"
#include "hcl_ina_win.h"
#include "softsw.h"
#include "testlib.h"

#define ELEMS	  64
#define SLOTS	  4
#define MAX_WORLD 40

struct worker {
	struct fake_hub *hub;
	const struct aring_plan *plan;
	unsigned rank, calls, world;
	size_t count;
	int64_t timeout_ns;
	bool cc; /* the window follows the marks */
	int rc;
	char err[256];
	uint64_t marks, cuts;
	uint32_t lowest;
};

static int32_t ival(unsigned rank, unsigned call, size_t i)
{
	return (int32_t)(rank * 7919u + call * 104729u + i * 13u);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct dgram_transport t;
	fake_hub_endpoint(w->hub, w->rank, &t);
	struct hcl_aring *a = hcl_aring_new(w->plan, w->rank, &t, w->err, sizeof(w->err));
	if (!a) {
		w->rc = -ENOMEM;
		return NULL;
	}
	hcl_aring_set_cc(a, w->cc);
	int32_t *src = malloc(w->count * 4), *dst = malloc(w->count * 4);
	for (unsigned call = 0; call < w->calls && w->rc == 0; call++) {
		for (size_t i = 0; i < w->count; i++)
			src[i] = ival(w->rank, call, i);
		/* in place on odd calls: the worker keeps a copy of its input */
		int32_t *out = call % 2 ? src : dst;
		w->rc = hcl_aring_allreduce(a, src, out, w->count, clock_now_ns() + w->timeout_ns, w->err,
					    sizeof(w->err));
		for (size_t i = 0; w->rc == 0 && i < w->count; i++) {
			uint32_t want = 0;
			for (unsigned r = 0; r < w->world; r++)
				want += (uint32_t)ival(r, call, i);
			if ((uint32_t)out[i] != want) {
				snprintf(w->err, sizeof(w->err), "call %u element %zu: %d != %d", call, i, out[i],
					 (int32_t)want);
				w->rc = -EBADMSG;
			}
		}
	}
	hcl_aring_cc(a, &w->marks, &w->cuts, &w->lowest);
	free(src);
	free(dst);
	hcl_aring_free(a);
	return NULL;
}

static struct ina_addr ep_addr(unsigned ep)
{
	struct sockaddr_in a = fake_addr(ep);
	return (struct ina_addr){ .ip = a.sin_addr.s_addr, .port = a.sin_port };
}

/* A layout: `world` ranks, rank i in rack rack_of[i], racks whose bit is
 * set in ina_mask behind an INA ToR.  Endpoints: the ranks 0..world-1,
 * rack r's ToR world + r, rank i's software member 2 * world + i. */
struct layout {
	unsigned world, members;
	const int *rack_of;
	unsigned ina_mask;
	bool cc; /* the workers' windows follow the marks */
};

/* The ring of the layout, every member's aggregator started; four calls
 * (every rank but `skip`, if not -1). */
static void run_layout(const struct layout *l, const struct fake_net *net, size_t count, int skip)
{
	const unsigned W = l->world;
	struct fake_hub *hub = fake_hub_new(3 * W, net);
	struct plan_rank info[MAX_WORLD];
	struct ina_addr soft[MAX_WORLD];
	for (unsigned i = 0; i < W; i++) {
		int rack = l->rack_of[i];
		info[i] = (struct plan_rank){ .ina = ep_addr(i), .rack = rack };
		if (rack < 32 && (l->ina_mask >> rack & 1))
			info[i].tor = ep_addr(W + (unsigned)rack);
		soft[i] = ep_addr(2 * W + i);
	}
	struct aring_plan plan;
	char err[256];
	if (aring_plan_build(info, soft, W, 20, INA_D_INT32, SLOTS, ELEMS, &plan, err, sizeof(err)) < 0)
		fail_msg("plan: %s", err);
	assert_int_equal(plan.m, l->members);
	struct softsw *agg[MAX_WORLD];
	for (unsigned k = 0; k < plan.m; k++) {
		struct ina_job_cfg job;
		aring_job(&plan, k, &job);
		struct dgram_transport t;
		const struct aring_member *mb = &plan.mem[k];
		fake_hub_endpoint(hub, mb->ina ? W + (unsigned)mb->rack : 2 * W + plan.worker_rank[mb->first], &t);
		if (!(agg[k] = softsw_start_on(&t, &job, 1, err, sizeof(err))))
			fail_msg("member %u: %s", k, err);
	}
	struct worker w[MAX_WORLD];
	pthread_t th[MAX_WORLD];
	for (unsigned i = 0; i < W; i++) {
		w[i] = (struct worker){ .hub = hub,
					.plan = &plan,
					.rank = i,
					.calls = 4,
					.world = W,
					.count = count,
					.timeout_ns = skip >= 0 ? 400000000 : 20000000000,
					.cc = l->cc };
		if ((int)i != skip)
			pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (unsigned i = 0; i < W; i++) {
		if ((int)i == skip)
			continue;
		pthread_join(th[i], NULL);
		if (skip < 0 && w[i].rc)
			fail_msg("rank %u: %s", i, w[i].err);
		uint64_t calls, pkts; /* a call's first windows go in one send */
		fake_hub_sends(hub, i, &calls, &pkts);
		if (skip < 0 && count > 2 * ELEMS && calls >= pkts)
			fail_msg("rank %u: %llu datagrams in %llu sends: not batched", i, (unsigned long long)pkts,
				 (unsigned long long)calls);
		if (skip >= 0 &&
		    (w[i].rc != -ETIMEDOUT || !strstr(w[i].err, "waiting for") || !strstr(w[i].err, "member")))
			fail_msg("rank %u without rank %d: rc %d '%s'", i, skip, w[i].rc, w[i].err);
	}
	uint64_t marks = 0, cuts = 0;
	for (unsigned i = 0; i < W; i++) {
		if ((int)i == skip)
			continue;
		if (w[i].cuts && !w[i].lowest)
			fail_msg("rank %u: %llu cuts and no least window", i, (unsigned long long)w[i].cuts);
		marks += w[i].marks;
		cuts += w[i].cuts;
	}
	if (l->cc && net->ce > 0 && (marks == 0 || cuts == 0))
		fail_msg("%llu marked answers, %llu cuts", (unsigned long long)marks, (unsigned long long)cuts);
	for (unsigned k = 0; k < plan.m; k++)
		softsw_stop(agg[k]);
	aring_plan_free(&plan);
	fake_hub_free(hub);
}

/* ranks 0-1 behind ToR 0, ranks 2-3 behind ToR 1, rank 4 alone */
static void run(const struct fake_net *net, size_t count, int skip)
{
	static const int racks[] = { 0, 0, 1, 1, 2 };
	const struct layout l = { .world = 5, .members = 3, .rack_of = racks, .ina_mask = 0x3 };
	run_layout(&l, net, count, skip);
}

static void test_clean(void **state)
{
	(void)state;
	const struct fake_net clean = { .seed = 11 };
	static const size_t counts[] = { 1, 3 * ELEMS + 2, 40 * ELEMS + 17 };
	for (unsigned k = 0; k < 3; k++)
		run(&clean, counts[k], -1);
}

static void test_lossy(void **state)
{
	(void)state;
	const struct fake_net lossy = { .loss = 0.03, .dup = 0.03, .reorder = 0.05, .seed = 12 };
	run(&lossy, 25 * ELEMS + 9, -1);
}

/* 36 ranks: a rack of 4 behind INA and 32 autonomous hosts, 33 members,
 * past the 16 the step-per-job plan held; a tensor shorter than the ring
 * (padded) and one of many rounds, clean and lossy. */
static void test_many_members(void **state)
{
	(void)state;
	int racks[36];
	for (unsigned i = 0; i < 36; i++)
		racks[i] = i < 4 ? 0 : (int)i - 3;
	const struct layout l = { .world = 36, .members = 33, .rack_of = racks, .ina_mask = 0x1 };
	const struct fake_net clean = { .seed = 14 }, lossy = { .loss = 0.02, .reorder = 0.05, .seed = 15 };
	run_layout(&l, &clean, 20, -1);
	run_layout(&l, &clean, 100 * ELEMS + 5, -1);
	run_layout(&l, &lossy, 70 * ELEMS + 3, -1);
}

/* Windows that follow the marks (hcl_aring_set_cc): a fifth of the
 * datagrams marked CE cuts them (a worker still keeps two in flight), slices
 * start out of order (a slot each at the job's slots: 3 members) or in
 * order (under them: 33 members), with losses and reordering, and every
 * sum stays exact and every call ends. */
static void test_marked(void **state)
{
	(void)state;
	static const int racks5[] = { 0, 0, 1, 1, 2 };
	const struct layout few = { .world = 5, .members = 3, .rack_of = racks5, .ina_mask = 0x3, .cc = true };
	const struct fake_net marked = { .ce = 0.2, .seed = 16 },
			      lossy = { .ce = 0.2, .loss = 0.02, .reorder = 0.05, .seed = 17 };
	run_layout(&few, &marked, 40 * ELEMS + 17, -1);
	run_layout(&few, &lossy, 25 * ELEMS + 9, -1);
	int racks36[36];
	for (unsigned i = 0; i < 36; i++)
		racks36[i] = i < 4 ? 0 : (int)i - 3;
	const struct layout many = { .world = 36, .members = 33, .rack_of = racks36, .ina_mask = 0x1, .cc = true };
	run_layout(&many, &lossy, 70 * ELEMS + 3, -1);
}

static void start_in(struct hcl_inaw *w, uint32_t slots, size_t q)
{
	hcl_inaw_start(w, (uint32_t)(q % slots), q, 1, false);
}

/* What hcl_aring_fill started, into the window as a worker does. */
struct started {
	struct hcl_inaw *w;
	size_t q[8];
	unsigned n;
};

static void record(void *ctx, size_t q)
{
	struct started *s = ctx;
	start_in(s->w, s->w->slots, q);
	if (s->n < 8)
		s->q[s->n++] = q;
}

/* The rule under a cut window, on its own (hcl_aring_fill): the oldest
 * waiting slice first, none past the window while two older ones are in
 * flight, and one older than all but one in flight even past it. */
static void test_marked_fill(void **state)
{
	(void)state;
	static const int racks[] = { 0, 0, 1, 1, 2 };
	struct plan_rank info[5];
	struct ina_addr soft[5];
	for (unsigned i = 0; i < 5; i++) {
		info[i] = (struct plan_rank){ .ina = ep_addr(i), .rack = racks[i] };
		if (racks[i] < 2)
			info[i].tor = ep_addr(5 + (unsigned)racks[i]);
		soft[i] = ep_addr(10 + i);
	}
	struct aring_plan p;
	char err[256];
	assert_int_equal(aring_plan_build(info, soft, 5, 20, INA_D_INT32, SLOTS, ELEMS, &p, err, sizeof(err)), 0);
	struct aring_call c;
	aring_call_of(&p, 40 * ELEMS * p.m, &c);
	struct hcl_inaw w;
	assert_int_equal(hcl_inaw_init(&w, p.slots, HCL_ARING_RTO_FLOOR_NS, 500000000), 0);
	w.end = c.slices;
	w.window = aring_call_window(&p, &c);
	assert_true(w.window >= p.slots && c.slices > 3 * p.slots);
	w.cc.on = true;
	w.cc.cwnd = HCL_INACC_ONE; /* cut to one slice: the floor of two holds */
	const uint32_t S = p.slots;
	struct started st = { .w = &w, .n = 0 };
	size_t next = 0;
	hcl_aring_fill(&p, &c, &w, 0, &next, SIZE_MAX, record, &st);
	assert_int_equal(st.n, 2); /* slices 0 and 1 */
	assert_int_equal(st.q[0], 0);
	assert_int_equal(st.q[1], 1);
	/* every slot used once, slices 2 .. S - 1 done, 0 and 1 too: the
	 * eligible are S .. 2S - 1, started oldest first, two at a time */
	for (size_t q = 2; q < S; q++) {
		start_in(&w, S, q); /* as if started while 0 and 1 were slow */
		hcl_inaw_done(&w, &w.s[q], 2);
	}
	next = S;
	hcl_inaw_done(&w, &w.s[0], 2);
	hcl_inaw_done(&w, &w.s[1], 2);
	st.n = 0;
	hcl_aring_fill(&p, &c, &w, 0, &next, 1, record, &st);
	assert_int_equal(st.n, 2);
	assert_int_equal(st.q[0], S);
	assert_int_equal(st.q[1], S + 1);
	/* S + 1 done: S + 2 is next, and starts (one in flight) */
	hcl_inaw_done(&w, &w.s[1], 3);
	st.n = 0;
	hcl_aring_fill(&p, &c, &w, 0, &next, S + 1, record, &st);
	assert_int_equal(st.n, 1);
	assert_int_equal(st.q[0], S + 2);
	/* S, S + 2 in flight, the window full: S + 3 waits (one older than
	 * it in flight is S, another S + 2) */
	st.n = 0;
	hcl_aring_fill(&p, &c, &w, 0, &next, SIZE_MAX - 1, record, &st);
	assert_int_equal(st.n, 0);
	/* S done and 2S + 1 (slot 1's next) started out of order meanwhile:
	 * S + 2 and 2S + 1 in flight fill the window, yet S + 3 starts, older
	 * than all but one of them (the chain's lowest slice needs it) */
	hcl_inaw_done(&w, &w.s[0], 4);
	start_in(&w, S, 2 * S + 1);
	st.n = 0;
	hcl_aring_fill(&p, &c, &w, 0, &next, S, record, &st);
	assert_int_equal(st.n, 1);
	assert_int_equal(st.q[0], S + 3);
	hcl_inaw_free(&w);
	aring_plan_free(&p);
}

static void test_dead_member(void **state)
{
	(void)state;
	const struct fake_net clean = { .seed = 13 };
	run(&clean, 10 * ELEMS, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),  cmocka_unit_test(test_lossy),	   cmocka_unit_test(test_many_members),
		cmocka_unit_test(test_marked), cmocka_unit_test(test_marked_fill), cmocka_unit_test(test_dead_member),
	};
	return cmocka_run_group_tests_name("aring", tests, NULL, NULL);
}
