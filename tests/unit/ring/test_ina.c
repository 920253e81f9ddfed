/* SPDX-License-Identifier: BSD-3-Clause */
/* The INA clients over the fake network, against software aggregators
 * (agent/softsw on fake endpoints): ps-ina's client through one switch,
 * through PS shards, and through ToRs under a parent PS as the ps-ina plan
 * lays them out; every result exact (int32) or bit-equal to the
 * reference (fp32 in a fixed order, bf16) under loss, duplication and
 * reordering; a rank that never comes names the switch it waited for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fake_transport.h"
#include "hcl_algo.h"
#include "hcl_ina.h"
#include "psina_plan.h"
#include "softsw.h"
#include "testlib.h"

#define MAXW  6
#define ELEMS 128
#define SLOTS 4

struct worker {
	struct fake_hub *hub;
	unsigned ep; /* its endpoint */
	struct hcl_ina_cfg cfg;
	enum hcl_dtype dt;
	size_t count;
	unsigned calls, world, rank;
	int64_t timeout_ns;
	uint32_t bias; /* added to every int32 value (wrapping): sums that overflow */
	int rc;
	char err[256];
};

/* Member i's client of job 5 at the aggregator behind endpoint world. */
static struct hcl_ina_cfg one_job(unsigned i, unsigned world)
{
	return (struct hcl_ina_cfg){ .shards = 1,
				     .index = (uint16_t)i,
				     .slots = SLOTS,
				     .elems = ELEMS,
				     .rto_us = 2000,
				     .job = { 5 },
				     .sw = { fake_addr(world) } };
}

static int32_t ival(unsigned rank, unsigned call, size_t i)
{
	return (int32_t)(rank * 1000003u + call * 7919u + i * 31u);
}

/* Small integers times a power of two: every fp32 sum is exact, in any order. */
static float fval(unsigned rank, unsigned call, size_t i) { return (float)((ival(rank, call, i) % 2001) - 1000) / 8; }

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct dgram_transport t;
	fake_hub_endpoint(w->hub, w->ep, &t);
	struct hcl_ina *a = hcl_ina_new(&w->cfg, &t, w->err, sizeof(w->err));
	if (!a) {
		w->rc = -ENOMEM;
		return NULL;
	}
	int32_t *buf = malloc(w->count * 4);
	for (unsigned call = 0; call < w->calls && w->rc == 0; call++) {
		for (size_t i = 0; i < w->count; i++) {
			float f = fval(w->rank, call, i);
			if (w->dt == HCL_FP32)
				memcpy(&buf[i], &f, 4);
			else
				buf[i] = (int32_t)((uint32_t)ival(w->rank, call, i) + w->bias);
		}
		w->rc = hcl_ina_allreduce(a, buf, w->count, w->dt, clock_now_ns() + w->timeout_ns, w->err,
					  sizeof(w->err));
		for (size_t i = 0; w->rc == 0 && i < w->count; i++) {
			int32_t want = 0;
			float fwant = 0;
			for (unsigned r = 0; r < w->world; r++) {
				want = (int32_t)((uint32_t)want + (uint32_t)ival(r, call, i) + w->bias);
				fwant += fval(r, call, i);
			}
			float f;
			memcpy(&f, &buf[i], 4);
			if (w->dt == HCL_FP32 ? f != fwant : buf[i] != want) {
				snprintf(w->err, sizeof(w->err), "call %u element %zu: %d (%g) != %d (%g)", call, i,
					 buf[i], f, want, fwant);
				w->rc = -EBADMSG;
			}
		}
	}
	free(buf);
	hcl_ina_free(a);
	return NULL;
}

static struct softsw *aggregator(struct fake_hub *hub, unsigned ep, const struct ina_job_cfg *jobs, unsigned n)
{
	struct dgram_transport t;
	char err[256];
	fake_hub_endpoint(hub, ep, &t);
	struct softsw *s = softsw_start_on(&t, jobs, n, err, sizeof(err));
	if (!s)
		fail_msg("aggregator on endpoint %u: %s", ep, err);
	return s;
}

static struct ina_addr ep_addr(unsigned ep)
{
	struct sockaddr_in a = fake_addr(ep);
	return (struct ina_addr){ .ip = a.sin_addr.s_addr, .port = a.sin_port };
}

/* Runs world workers (endpoints 0..world-1; skip: one that never starts). */
static void run_workers(struct worker *w, unsigned world, int skip)
{
	pthread_t th[MAXW];
	for (unsigned i = 0; i < world; i++)
		if ((int)i != skip)
			pthread_create(&th[i], NULL, worker_main, &w[i]);
	for (unsigned i = 0; i < world; i++)
		if ((int)i != skip)
			pthread_join(th[i], NULL);
}

/* world workers through one software switch (endpoint `world`), one job. */
static void one_switch(unsigned world, const struct fake_net *net, uint8_t dtype, enum hcl_dtype dt, size_t count,
		       int skip)
{
	struct fake_hub *hub = fake_hub_new(world + 1, net);
	struct ina_job_cfg job;
	plan_job_init(&job, 5, dtype, SLOTS, ELEMS, INA_OUT_MULTICAST);
	for (unsigned i = 0; i < world; i++)
		job.contributors[job.fan_in++] = ep_addr(i);
	struct softsw *sw = aggregator(hub, world, &job, 1);
	struct worker w[MAXW];
	for (unsigned i = 0; i < world; i++) {
		w[i] = (struct worker){ .hub = hub,
					.ep = i,
					.dt = dt,
					.count = count,
					.calls = 3,
					.world = world,
					.rank = i,
					.timeout_ns = skip >= 0 ? 300000000 : 10000000000,
					.cfg = one_job(i, world) };
	}
	run_workers(w, world, skip);
	for (unsigned i = 0; i < world; i++) {
		if ((int)i == skip)
			continue;
		if (skip < 0 && w[i].rc)
			fail_msg("world %u rank %u: %s", world, i, w[i].err);
		if (skip >= 0 && (w[i].rc != -ETIMEDOUT || !strstr(w[i].err, "127.0.0.1") ||
				  !strstr(w[i].err, "did not answer in time")))
			fail_msg("rank %u without rank %d: rc %d '%s'", i, skip, w[i].rc, w[i].err);
		/* each call's first window went in one call to the transport */
		uint64_t calls, pkts;
		fake_hub_sends(hub, i, &calls, &pkts);
		if (skip < 0 && count >= SLOTS * ELEMS && calls + 3 * (SLOTS - 1) > pkts)
			fail_msg("rank %u: %llu datagrams in %llu sends: the first windows were not batched", i,
				 (unsigned long long)pkts, (unsigned long long)calls);
	}
	softsw_stop(sw);
	fake_hub_free(hub);
}

static void test_one_switch(void **state)
{
	(void)state;
	const struct fake_net clean = { .seed = 1 }, lossy = { .loss = 0.05, .dup = 0.05, .reorder = 0.1, .seed = 2 };
	/* counts: below a slice, not a multiple of the slice, many windows */
	static const size_t counts[] = { 1, ELEMS + 3, 20 * ELEMS + 77 };
	for (unsigned k = 0; k < 3; k++) {
		one_switch(4, &clean, INA_D_INT32, HCL_INT32, counts[k], -1);
		one_switch(3, &lossy, INA_D_INT32, HCL_INT32, counts[k], -1);
		one_switch(4, &lossy, INA_D_FP32, HCL_FP32, counts[k], -1);
	}
}

/* A rank that never comes: the others fail within their deadline, naming
 * the switch that owes them results. */
static void test_dead_member(void **state)
{
	(void)state;
	const struct fake_net clean = { .seed = 3 };
	one_switch(4, &clean, INA_D_INT32, HCL_INT32, 5 * ELEMS, 2);
}

/* What the client takes as a result: a RESULT from the switch's address
 * but another port is not one (it would be summed into the tensor
 * otherwise), and a sum the switch flags as wrapped fails the call with
 * -EOVERFLOW and says so, instead of handing back a wrong tensor. */
static void test_result_checks(void **state)
{
	(void)state;
	const struct fake_net clean = { .seed = 5 };
	for (int overflow = 0; overflow < 2; overflow++) {
		struct fake_hub *hub = fake_hub_new(4, &clean);
		struct ina_job_cfg job;
		plan_job_init(&job, 5, INA_D_INT32, SLOTS, ELEMS, INA_OUT_MULTICAST);
		for (unsigned i = 0; i < 2; i++)
			job.contributors[job.fan_in++] = ep_addr(i);
		struct softsw *sw = aggregator(hub, 2, &job, 1);
		struct worker w[2];
		for (unsigned i = 0; i < 2; i++) {
			w[i] = (struct worker){ .hub = hub,
						.ep = i,
						.dt = HCL_INT32,
						.count = 3 * ELEMS,
						.calls = 1,
						.world = 2,
						.rank = i,
						.timeout_ns = 10000000000,
						.bias = overflow ? 0x60000000u : 0,
						.cfg = one_job(i, 2) };
			/* a forged result for the first slice, from 127.0.0.1
			 * but not the switch's port, waits in each queue */
			struct dgram_transport rogue;
			fake_hub_endpoint(hub, 3, &rogue);
			uint8_t pkt[INA_HDR_LEN + ELEMS * 4] = { 0 };
			struct ina_hdr h = { .version = INA_VERSION,
					     .type = INA_T_RESULT,
					     .dtype = INA_D_INT32,
					     .job = 5,
					     .contributor = (uint16_t)i,
					     .epoch = 1,
					     .count = ELEMS };
			ina_hdr_encode(&h, pkt);
			struct dgram_pkt d = { .buf = pkt, .len = sizeof(pkt), .peer = fake_addr(i) };
			assert_int_equal(rogue.ops->send_batch(rogue.ctx, &d, 1), 1);
		}
		run_workers(w, 2, -1);
		for (unsigned i = 0; i < 2; i++) {
			if (!overflow && w[i].rc)
				fail_msg("rank %u: %s", i, w[i].err);
			if (overflow && (w[i].rc != -EOVERFLOW || !strstr(w[i].err, "overflowed in the switch")))
				fail_msg("rank %u with a wrapped sum: rc %d '%s'", i, w[i].rc, w[i].err);
		}
		softsw_stop(sw);
		fake_hub_free(hub);
	}
}

/* Every rank of the plan as a worker of 3 lossy int32 calls through its
 * aggregators (job 10 + shard), run to the end; every result exact. */
static void run_plan_workers(struct fake_hub *hub, const struct psina_plan *plan, unsigned world, unsigned shards,
			     const struct ina_addr *ps_addr, uint16_t rack_port, size_t count)
{
	struct worker w[MAXW];
	for (unsigned i = 0; i < world; i++) {
		w[i] = (struct worker){ .hub = hub,
					.ep = i,
					.dt = HCL_INT32,
					.count = count,
					.calls = 3,
					.world = world,
					.rank = i,
					.timeout_ns = 10000000000,
					.cfg = { .shards = shards,
						 .index = plan->client[i].index,
						 .slots = SLOTS + PSINA_SPARE_SLOTS,
						 .window = SLOTS,
						 .elems = ELEMS,
						 .rto_us = 2000 } };
		for (unsigned h = 0; h < shards; h++) {
			struct ina_addr a = psina_client_server(plan, i, h, shards, ps_addr, rack_port);
			w[i].cfg.job[h] = (uint16_t)(10 + h);
			w[i].cfg.sw[h] = (struct sockaddr_in){ .sin_family = AF_INET,
							       .sin_addr.s_addr = a.ip,
							       .sin_port = a.port };
		}
	}
	run_workers(w, world, -1);
	for (unsigned i = 0; i < world; i++)
		if (w[i].rc)
			fail_msg("rank %u: %s", i, w[i].err);
}

/* ps-ina as its plan lays it out: two racks behind ToRs (software here)
 * whose jobs forward to a PS cut in shards over two more endpoints, and a
 * rack-less rank straight at the PS; lossy. */
static void test_psina_plan_shards(void **state)
{
	(void)state;
	enum { WORLD = 5, TOR0 = WORLD, TOR1, PS0, PS1, EPS };
	const unsigned shards = 2;
	const struct fake_net lossy = { .loss = 0.03, .dup = 0.03, .reorder = 0.05, .seed = 4 };
	struct fake_hub *hub = fake_hub_new(EPS, &lossy);
	struct plan_rank info[WORLD];
	for (unsigned i = 0; i < WORLD; i++) {
		info[i] = (struct plan_rank){ .ina = ep_addr(i), .rack = i < 2 ? 0 : i < 4 ? 1 : 2 };
		if (i < 4)
			info[i].tor = ep_addr(i < 2 ? TOR0 : TOR1);
	}
	struct ina_addr ps_addr[2] = { ep_addr(PS0), ep_addr(PS1) };
	struct psina_plan plan;
	char err[256];
	if (psina_plan(info, WORLD, &ps_addr[0], 10, INA_D_INT32, SLOTS, ELEMS, &plan, err, sizeof(err)) < 0)
		fail_msg("plan: %s", err);
	assert_true(plan.use_ps);
	assert_int_equal(plan.ntor, 2);
	struct softsw *agg[4];
	for (unsigned t = 0; t < 2; t++) {
		struct ina_job_cfg jobs[2];
		for (unsigned h = 0; h < shards; h++) {
			psina_shard_job(&plan.tor[t].job, (uint16_t)(10 + h), &ps_addr[h], &jobs[h]);
			/* spare slots, as where no ToR aggregates: run under loss here */
			jobs[h].nslots = SLOTS + PSINA_SPARE_SLOTS;
		}
		agg[t] = aggregator(hub, TOR0 + t, jobs, shards);
	}
	for (unsigned h = 0; h < shards; h++) {
		struct ina_job_cfg job;
		psina_shard_job(&plan.ps, (uint16_t)(10 + h), &ps_addr[h], &job);
		job.nslots = SLOTS + PSINA_SPARE_SLOTS;
		agg[2 + h] = aggregator(hub, PS0 + h, &job, 1);
	}
	run_plan_workers(hub, &plan, WORLD, shards, ps_addr, 0, 9 * ELEMS + 5);
	/* the ToRs aggregated their racks (their PS jobs saw 2 contributors) */
	assert_true(softsw_stats(agg[0])->accepted > 0 && softsw_stats(agg[1])->accepted > 0);
	for (unsigned k = 0; k < 4; k++)
		softsw_stop(agg[k]);
	psina_plan_free(&plan);
	fake_hub_free(hub);
}

/* More PS shards than the engine once had job entries (64) and the
 * library shards (16): 80, all on one software PS endpoint, behind two
 * ToRs that each hold a job per shard; lossy, every result exact, and
 * every shard's job at the ToRs took its rack's contributions. */
static void test_psina_many_shards(void **state)
{
	(void)state;
	enum { WORLD = 4, TOR0 = WORLD, TOR1, PS, EPS, SHARDS = 80 };
	const struct fake_net lossy = { .loss = 0.02, .dup = 0.02, .reorder = 0.05, .seed = 9 };
	struct fake_hub *hub = fake_hub_new(EPS, &lossy);
	struct plan_rank info[WORLD];
	for (unsigned i = 0; i < WORLD; i++)
		info[i] = (struct plan_rank){ .ina = ep_addr(i), .rack = (int)i / 2, .tor = ep_addr(TOR0 + i / 2) };
	struct ina_addr ps_addr[SHARDS];
	for (unsigned h = 0; h < SHARDS; h++)
		ps_addr[h] = ep_addr(PS);
	struct psina_plan plan;
	char err[256];
	if (psina_plan(info, WORLD, &ps_addr[0], 10, INA_D_INT32, SLOTS, ELEMS, &plan, err, sizeof(err)) < 0)
		fail_msg("plan: %s", err);
	assert_true(plan.use_ps);
	static struct ina_job_cfg jobs[SHARDS]; /* 2 KiB each: off the stack */
	struct softsw *agg[3];
	for (unsigned t = 0; t < 2; t++) {
		for (unsigned h = 0; h < SHARDS; h++) {
			psina_shard_job(&plan.tor[t].job, (uint16_t)(10 + h), &ps_addr[h], &jobs[h]);
			jobs[h].nslots = SLOTS + PSINA_SPARE_SLOTS;
		}
		agg[t] = aggregator(hub, TOR0 + t, jobs, SHARDS);
	}
	for (unsigned h = 0; h < SHARDS; h++) {
		psina_shard_job(&plan.ps, (uint16_t)(10 + h), &ps_addr[h], &jobs[h]);
		jobs[h].nslots = SLOTS + PSINA_SPARE_SLOTS;
	}
	agg[2] = aggregator(hub, PS, jobs, SHARDS);
	run_plan_workers(hub, &plan, WORLD, SHARDS, ps_addr, 0, 3 * SHARDS * ELEMS + 5);
	for (unsigned t = 0; t < 2; t++)
		for (unsigned h = 0; h < SHARDS; h++) {
			const struct ina_job_stats *js = softsw_job_stats(agg[t], (uint16_t)(10 + h));
			assert_non_null(js);
			assert_true(js->contributions >= 3 * 3 * 2); /* 3 calls x 3 slices x 2 ranks */
		}
	for (unsigned k = 0; k < 3; k++)
		softsw_stop(agg[k]);
	psina_plan_free(&plan);
	fake_hub_free(hub);
}

/* ps-ina with a rack aggregator (agent/psina_plan.h): plain rack 0's three
 * ranks sum at a software aggregator (shard 0's on rank 1, shard 1's on
 * rank 2: the ranks that host no PS shard; at the base port + the rank,
 * which the fake network routes to endpoints RACK1 and RACK2) whose
 * partials join a ToR's and a lone rank's at the PS shards; lossy, every
 * result exact. */
static void test_psina_rack_aggregator(void **state)
{
	(void)state;
	enum { WORLD = 6, TOR1 = WORLD, PS0, PS1, RACK1, RACK2, EPS };
	const unsigned shards = 2;
	const struct fake_net lossy = { .loss = 0.03, .dup = 0.03, .reorder = 0.05, .seed = 9 };
	struct fake_hub *hub = fake_hub_new(EPS, &lossy);
	struct plan_rank info[WORLD];
	for (unsigned i = 0; i < WORLD; i++) {
		info[i] = (struct plan_rank){ .ina = ep_addr(i), .rack = i < 3 ? 0 : i < 5 ? 1 : 2 };
		if (i == 3 || i == 4)
			info[i].tor = ep_addr(TOR1);
	}
	const struct ina_addr ps_addr[2] = { ep_addr(PS0), ep_addr(PS1) };
	const uint16_t rack_port = (uint16_t)(ntohs(ep_addr(RACK1).port) - 1);
	struct psina_plan plan;
	char err[256];
	if (psina_plan_racks(info, WORLD, &ps_addr[0], 10, INA_D_INT32, SLOTS, ELEMS, PSINA_RACKAGG_ALWAYS, &plan, err,
			     sizeof(err)) < 0)
		fail_msg("plan: %s", err);
	assert_int_equal(plan.nrackagg, 1);
	assert_int_equal(plan.ps.fan_in, 3); /* the ToR, the rack aggregator, rank 5 */
	assert_int_equal(psina_rackagg_host(&plan, 0, 0, shards), 1);
	assert_int_equal(psina_rackagg_host(&plan, 0, 1, shards), 2);
	struct ina_job_cfg tor_jobs[2], rack_jobs[2];
	struct softsw *agg[5];
	for (unsigned h = 0; h < shards; h++) {
		psina_shard_job(&plan.tor[0].job, (uint16_t)(10 + h), &ps_addr[h], &tor_jobs[h]);
		psina_shard_job(&plan.rackagg[0].job, (uint16_t)(10 + h), &ps_addr[h], &rack_jobs[h]);
		tor_jobs[h].nslots = rack_jobs[h].nslots = SLOTS + PSINA_SPARE_SLOTS;
		struct ina_job_cfg job;
		psina_shard_ps_job(&plan, h, shards, (uint16_t)(10 + h), &ps_addr[h], rack_port, &job);
		job.nslots = SLOTS + PSINA_SPARE_SLOTS;
		agg[2 + h] = aggregator(hub, PS0 + h, &job, 1);
	}
	agg[0] = aggregator(hub, TOR1, tor_jobs, shards);
	agg[1] = aggregator(hub, RACK1, &rack_jobs[0], 1);
	agg[4] = aggregator(hub, RACK2, &rack_jobs[1], 1);
	run_plan_workers(hub, &plan, WORLD, shards, ps_addr, rack_port, 9 * ELEMS + 5);
	/* rack 0's three ranks summed at its aggregators: every slice's three
	 * contributions (10 slices a call, 3 calls) */
	assert_true(softsw_stats(agg[1])->accepted + softsw_stats(agg[4])->accepted >= 3 * 3 * 10);
	assert_true(softsw_stats(agg[1])->accepted > 0 && softsw_stats(agg[4])->accepted > 0);
	for (unsigned k = 0; k < 5; k++)
		softsw_stop(agg[k]);
	psina_plan_free(&plan);
	fake_hub_free(hub);
}

/* A software aggregator's refusals reach hcl_comm_stats by reason: the
 * same contribution twice is one "duplicate", a stranger's slice one
 * "not_member" (the report shows them per reason). */
static void test_aggregator_drops_by_reason(void **state)
{
	(void)state;
	struct fake_hub *hub = fake_hub_new(3, &(struct fake_net){ .seed = 1 });
	struct ina_job_cfg job = { .id = 5,
				   .fan_in = 2,
				   .dtype = INA_D_INT32,
				   .nslots = 4,
				   .elems_per_slot = 8,
				   .outputs = INA_OUT_MULTICAST,
				   .upstream_index = -1 };
	job.contributors[0] = ep_addr(1);
	job.contributors[1] = ep_addr(0); /* the aggregator's own endpoint: never sends here */
	struct softsw *agg = aggregator(hub, 0, &job, 1);
	struct dgram_transport me, stranger;
	fake_hub_endpoint(hub, 1, &me);
	fake_hub_endpoint(hub, 2, &stranger);
	uint8_t pkt[INA_HDR_LEN + 32] = { 0 };
	struct ina_hdr h = {
		.version = INA_VERSION, .type = INA_T_DATA, .dtype = INA_D_INT32, .job = 5, .epoch = 1, .count = 8
	};
	ina_hdr_encode(&h, pkt);
	struct dgram_pkt out = { .buf = pkt, .len = sizeof(pkt), .peer = fake_addr(0) };
	for (int i = 0; i < 2; i++)
		assert_int_equal(me.ops->send_batch(me.ctx, &out, 1), 1);
	assert_int_equal(stranger.ops->send_batch(stranger.ctx, &out, 1), 1);
	int64_t deadline = clock_now_ns() + 5000000000;
	while (softsw_stats(agg)->rx_packets + softsw_stats(agg)->drops[INA_R_NOT_MEMBER] < 3 &&
	       clock_now_ns() < deadline)
		sched_yield();
	struct hcl_comm_stats st = { 0 };
	hcl_softsw_stats(agg, &st);
	assert_int_equal(st.agg_drops[INA_R_DUPLICATE], 1);
	assert_int_equal(st.agg_drops[INA_R_NOT_MEMBER], 1);
	assert_int_equal(st.agg_dropped, 2);
	assert_string_equal(hcl_drop_reason(INA_R_DUPLICATE), "duplicate");
	assert_null(hcl_drop_reason(0));
	assert_null(hcl_drop_reason(HCL_DROP_REASONS));
	softsw_stop(agg);
	fake_hub_free(hub);
}

/* An aggregator lost mid-job: a switch (played here, for one member) that
 * answers slices 0..K-1 with the input plus one and then nothing, or a
 * NACK (what swemu sends for a job it does not have).  The call ends
 * -ENETDOWN well before its deadline — after lost_ns, or at the NACK with
 * lost_ns far away — naming the switch; slices before K hold their
 * results and say so, the rest hold the input and say so. */
struct lost_call {
	struct worker w;
	struct hcl_ina *a;
	int32_t *buf;
};

static void *lost_call_main(void *arg)
{
	struct lost_call *l = arg;
	l->w.rc = hcl_ina_allreduce(l->a, l->buf, l->w.count, HCL_INT32, clock_now_ns() + l->w.timeout_ns, l->w.err,
				    sizeof(l->w.err));
	return NULL;
}

static void lost_aggregator(bool nack)
{
	const struct fake_net clean = { .seed = 9 };
	const size_t nslices = 10, answered = 6;
	struct fake_hub *hub = fake_hub_new(2, &clean);
	struct lost_call l = { .w = { .count = nslices * ELEMS - 5, .timeout_ns = 20000000000, .cfg = one_job(0, 1) } };
	l.w.cfg.lost_ns = nack ? 60000000000 : 200000000;
	struct dgram_transport t, sw;
	fake_hub_endpoint(hub, 0, &t);
	fake_hub_endpoint(hub, 1, &sw);
	l.a = hcl_ina_new(&l.w.cfg, &t, l.w.err, sizeof(l.w.err));
	assert_non_null(l.a);
	l.buf = malloc(l.w.count * 4);
	for (size_t i = 0; i < l.w.count; i++)
		l.buf[i] = ival(0, 0, i);
	int64_t t0 = clock_now_ns();
	pthread_t th;
	pthread_create(&th, NULL, lost_call_main, &l);
	/* the switch: until the member has been quiet for a second */
	static uint8_t rx[INA_HDR_LEN + ELEMS * 4], tx[INA_HDR_LEN + ELEMS * 4];
	struct dgram_pkt in = { .buf = rx, .len = sizeof(rx) };
	while (sw.ops->recv_batch(sw.ctx, &in, 1, 1000000000) == 1) {
		struct ina_pkt p;
		assert_int_equal(ina_parse(rx, in.len, &p), INA_OK);
		if (p.hdr.seq >= answered && nack) {
			struct ina_hdr h = p.hdr;
			h.type = INA_T_NACK;
			h.count = 0;
			ina_hdr_encode(&h, tx);
			struct dgram_pkt out = { .buf = tx, .len = INA_HDR_LEN, .peer = in.peer };
			assert_int_equal(sw.ops->send_batch(sw.ctx, &out, 1), 1);
		} else if (p.hdr.seq < answered) {
			struct ina_hdr h = p.hdr;
			h.type = INA_T_RESULT;
			ina_hdr_encode(&h, tx);
			for (unsigned e = 0; e < h.count; e++) {
				uint32_t v;
				memcpy(&v, p.payload + 4 * e, 4);
				v = htonl(ntohl(v) + 1);
				memcpy(tx + INA_HDR_LEN + 4 * e, &v, 4);
			}
			struct dgram_pkt out = { .buf = tx, .len = INA_HDR_LEN + 4u * h.count, .peer = in.peer };
			assert_int_equal(sw.ops->send_batch(sw.ctx, &out, 1), 1);
		}
		in.len = sizeof(rx);
	}
	pthread_join(th, NULL);
	int64_t took = clock_now_ns() - t0;
	if (l.w.rc != -ENETDOWN || !strstr(l.w.err, nack ? "no longer has job 5" : "stopped aggregating job 5") ||
	    !strstr(l.w.err, "6 of 10 slices done"))
		fail_msg("rc %d '%s'", l.w.rc, l.w.err);
	assert_true(took < 5000000000); /* lost_ns, not the deadline */
	for (size_t k = 0; k < nslices; k++) {
		for (size_t i = k * ELEMS; i < (k + 1) * ELEMS && i < l.w.count; i++)
			if (l.buf[i] != ival(0, 0, i) + (k < answered))
				fail_msg("slice %zu element %zu: %d", k, i, l.buf[i]);
	}
	free(l.buf);
	hcl_ina_free(l.a);
	fake_hub_free(hub);
}

static void test_lost_aggregator(void **state)
{
	(void)state;
	lost_aggregator(false);
	lost_aggregator(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_switch),
		cmocka_unit_test(test_dead_member),
		cmocka_unit_test(test_result_checks),
		cmocka_unit_test(test_psina_plan_shards),
		cmocka_unit_test(test_psina_many_shards),
		cmocka_unit_test(test_psina_rack_aggregator),
		cmocka_unit_test(test_aggregator_drops_by_reason),
		cmocka_unit_test(test_lost_aggregator),
	};
	return cmocka_run_group_tests_name("ina", tests, NULL, NULL);
}
