/* SPDX-License-Identifier: BSD-3-Clause */
/* The agent-ring worker over the fake network: two INA racks (their ToRs
 * software aggregators running the plan's step jobs) and a host of a rack
 * without INA (its own software member), exact int32 sums and bf16 sums
 * rounded once, under loss, duplication and reordering, over several
 * calls (the shadow sets carry over); a rank that never comes makes the
 * others fail within the deadline, naming the member they wait for. */
#include <setjmp.h>
#include <stdarg.h>
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
#include "softsw.h"
#include "testlib.h"

enum { WORLD = 5, TOR0 = WORLD, TOR1, SOFT0, EPS = SOFT0 + WORLD };
#define ELEMS 64
#define SLOTS 4

struct worker {
	struct fake_hub *hub;
	const struct aring_plan *plan;
	unsigned rank, calls;
	size_t count;
	int64_t timeout_ns;
	int rc;
	char err[256];
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
			for (unsigned r = 0; r < WORLD; r++)
				want += (uint32_t)ival(r, call, i);
			if ((uint32_t)out[i] != want) {
				snprintf(w->err, sizeof(w->err), "call %u element %zu: %d != %d", call, i, out[i],
					 (int32_t)want);
				w->rc = -EBADMSG;
			}
		}
	}
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

/* The ring of the test's layout, every member's aggregator started:
 * ranks 0-1 behind ToR 0, ranks 2-3 behind ToR 1, rank 4 alone. */
static void run(const struct fake_net *net, size_t count, int skip)
{
	struct fake_hub *hub = fake_hub_new(EPS, net);
	struct plan_rank info[WORLD];
	struct ina_addr soft[WORLD];
	for (unsigned i = 0; i < WORLD; i++) {
		info[i] = (struct plan_rank){ .ina = ep_addr(i), .rack = (int)i / 2 };
		if (i < 4)
			info[i].tor = ep_addr(i < 2 ? TOR0 : TOR1);
		soft[i] = ep_addr(SOFT0 + i);
	}
	struct aring_plan plan;
	char err[256];
	if (aring_plan_build(info, soft, WORLD, 20, INA_D_INT32, SLOTS, ELEMS, &plan, err, sizeof(err)) < 0)
		fail_msg("plan: %s", err);
	assert_int_equal(plan.m, 3); /* two INA racks and one autonomous host */
	struct softsw *agg[3];
	struct ina_job_cfg jobs[2 * 3 - 1];
	for (unsigned k = 0; k < plan.m; k++) {
		for (unsigned s = 0; s < aring_steps(&plan); s++)
			aring_job(&plan, k, s, &jobs[s]);
		struct dgram_transport t;
		unsigned ep = plan.mem[k].ina ? (plan.mem[k].rack == 0 ? TOR0 : TOR1) : SOFT0 + 4;
		fake_hub_endpoint(hub, ep, &t);
		if (!(agg[k] = softsw_start_on(&t, jobs, aring_steps(&plan), err, sizeof(err))))
			fail_msg("member %u: %s", k, err);
	}
	struct worker w[WORLD];
	pthread_t th[WORLD];
	for (unsigned i = 0; i < WORLD; i++) {
		w[i] = (struct worker){ .hub = hub,
					.plan = &plan,
					.rank = i,
					.calls = 4,
					.count = count,
					.timeout_ns = skip >= 0 ? 400000000 : 20000000000 };
		if ((int)i != skip)
			pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (unsigned i = 0; i < WORLD; i++) {
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
	for (unsigned k = 0; k < plan.m; k++)
		softsw_stop(agg[k]);
	aring_plan_free(&plan);
	fake_hub_free(hub);
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

static void test_dead_member(void **state)
{
	(void)state;
	const struct fake_net clean = { .seed = 13 };
	run(&clean, 10 * ELEMS, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_lossy),
		cmocka_unit_test(test_dead_member),
	};
	return cmocka_run_group_tests_name("aring", tests, NULL, NULL);
}
