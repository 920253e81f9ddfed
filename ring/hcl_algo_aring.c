/* SPDX-License-Identifier: BSD-3-Clause */
/* agent-ring (Rina, docs/AGENTRING.md), run by every rank:
 *  - the plan (agent/aring_plan.h) from the rendezvous table;
 *  - each INA rack's agent (its lowest rank) installs the rack's job (one
 *    per data type, for every step of the ring) in its ToR (agent/tor.h) and removes them when the communicator goes;
 *  - each host of a rack without INA is a ring member of its own: the
 *    engine in software behind a socket (agent/softsw.h);
 *  - every rank runs the worker (ring/hcl_aring.c) against its member.
 * The ToRs forward to each other by MAC, which only the agents can learn
 * (ARP after talking to their ToR): shared with a one-off all-reduce. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aring_plan.h"
#include "clock.h"
#include "hcl_algo.h"
#include "hcl_aring.h"
#include "hcl_fallback.h"
#include "hcl_ring.h"
#include "softsw.h"
#include "tor.h"

struct aring_state {
	struct dgram_transport ina_t;
	struct aring_plan plan[2]; /* the float ring, the int32 ring */
	struct hcl_aring *worker[2];
	struct softsw *member;	      /* this host's software member, in a rack without INA */
	struct tor tor;		      /* this rank's ToR, if it is a rack's agent */
	unsigned long long expect[2]; /* slices the ToR should have completed so far (reports) */
	int last_d;		      /* the worker of the last call (0 float, 1 int32), -1 before any */
};

static int aring_prepare(struct hcl_comm *c, struct dgram_udp_opts *o, char *err, size_t errlen)
{
	struct aring_state *s = calloc(1, sizeof(*s));
	if (!(c->algo_state = s))
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	s->last_d = -1;
	return hcl_ina_prepare(c, o);
}

/* Every rank learns every agent's ToR MAC: rank r's slot holds its ToR's
 * MAC if it is an agent, zeros otherwise, and a sum gathers them. */
static int share_macs(struct hcl_comm *c, const uint8_t mine[6], uint8_t (*macs)[6], int64_t deadline, char *err,
		      size_t errlen)
{
	int32_t *v = calloc((size_t)c->world * 2, sizeof(int32_t));
	if (!v)
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	uint8_t b[8] = { 0 };
	memcpy(b, mine, 6);
	memcpy(&v[2 * c->rank], b, 8);
	int rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, v, (size_t)c->world * 2, HCL_INT32,
				    ++c->epoch, deadline, err, errlen);
	for (int r = 0; rc == 0 && r < c->world; r++) {
		memcpy(b, &v[2 * r], 8);
		memcpy(macs[r], b, 6);
	}
	free(v);
	return rc;
}

/* The two plans: the float ring on job ina_job (fp32, or bf16 when asked
 * for; BFP's two passes are not an agent-ring mode, so bfp means fp32
 * here), the int32 ring on the next id. */
static int build_plans(struct hcl_comm *c, char *err, size_t errlen)
{
	struct aring_state *s = c->algo_state;
	const struct hcl_env *e = &c->env;
	struct ina_addr *soft = calloc((size_t)c->world, sizeof(*soft));
	if (!soft)
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	for (int i = 0; i < c->world; i++) {
		soft[i] = c->info[i].ina;
		soft[i].port = htons(e->ps_port);
	}
	uint8_t wire = e->float_wire == INA_D_BF16 ? INA_D_BF16 : INA_D_FP32;
	c->wire_bf16 = wire == INA_D_BF16;
	int rc = aring_plan_build(c->info, soft, (unsigned)c->world, e->ina_job, wire, e->ina_slots, e->ina_elems,
				  &s->plan[0], err, errlen);
	if (rc == 0 && e->ina_job == 65535)
		rc = hcl_fail(-EINVAL, err, errlen, "agent-ring: job ids %u and %u: past 65535", e->ina_job,
			      e->ina_job + 1);
	if (rc == 0)
		rc = aring_plan_build(c->info, soft, (unsigned)c->world, (uint16_t)(e->ina_job + 1), INA_D_INT32,
				      e->ina_slots, e->ina_elems, &s->plan[1], err, errlen);
	free(soft);
	return rc;
}

/* The agents resolve their ToR's MAC, and every rank learns them all. */
static int learn_tor_macs(struct hcl_comm *c, bool agent, int64_t deadline, char *err, size_t errlen)
{
	struct aring_state *s = c->algo_state;
	uint8_t mine[6] = { 0 }, (*macs)[6] = calloc((size_t)c->world, 6);
	int rc = macs ? 0 : hcl_fail(-ENOMEM, err, errlen, "out of memory");
	if (rc == 0 && agent) {
		tor_init(&s->tor, &c->peers[c->rank], c->info[c->rank].tor.ip, c->owner);
		tor_set_key(&s->tor, &c->env.ina_key);
		if (tor_mac(&s->tor, deadline, mine) < 0)
			rc = hcl_fail(-EHOSTUNREACH, err, errlen, "agent-ring: no MAC address for switch %s",
				      inet_ntoa(s->tor.ctl.sin_addr));
	}
	/* an agent that failed does not join: the others' exchange ends at the
	 * deadline with an error naming a rank, not in a hang */
	if (rc == 0)
		rc = share_macs(c, mine, macs, deadline, err, errlen);
	for (int d = 0; rc == 0 && d < 2; d++)
		for (unsigned m = 0; m < s->plan[d].m; m++)
			if (s->plan[d].mem[m].ina)
				memcpy(s->plan[d].mem[m].agg.mac, macs[s->plan[d].worker_rank[s->plan[d].mem[m].first]],
				       6);
	free(macs);
	return rc;
}

/* This rank's member's jobs (float and int32): installed in the ToR by the
 * agent, or run in software by an autonomous host. */
static int start_member(struct hcl_comm *c, bool agent, int64_t deadline, char *err, size_t errlen)
{
	struct aring_state *s = c->algo_state;
	unsigned k = s->plan[0].member_of[c->rank];
	const struct aring_member *mine = &s->plan[0].mem[k];
	struct ina_job_cfg *jobs = calloc(2, sizeof(*jobs));
	int rc = 0;
	if (!jobs)
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	for (int d = 0; d < 2; d++)
		aring_job(&s->plan[d], k, &jobs[d]);
	for (unsigned i = 0; agent && rc == 0 && i < 2; i++) {
		char e2[256];
		if ((rc = tor_install(&s->tor, &jobs[i], deadline, e2, sizeof(e2))) < 0)
			hcl_fail(-EINVAL, err, errlen, "agent-ring: installing job %u: %s", jobs[i].id, e2);
	}
	if (!mine->ina) {
		struct sockaddr_in at = { .sin_family = AF_INET,
					  .sin_addr.s_addr = mine->agg.ip,
					  .sin_port = mine->agg.port };
		if (!(s->member = softsw_start(&at, jobs, 2, err, errlen)))
			rc = -EADDRINUSE;
	}
	free(jobs);
	return rc;
}

static int aring_setup(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen)
{
	struct aring_state *s = c->algo_state;
	int rc = hcl_ina_mtu_check(c, "agent-ring", err, errlen);
	if (rc < 0 || (rc = hcl_ina_socket(c, &s->ina_t, err, errlen)) < 0 || (rc = build_plans(c, err, errlen)) < 0)
		return rc;
	const struct aring_member *mine = &s->plan[0].mem[s->plan[0].member_of[c->rank]];
	bool agent = mine->ina && s->plan[0].worker_rank[mine->first] == (unsigned)c->rank;
	if ((rc = learn_tor_macs(c, agent, deadline, err, errlen)) < 0 ||
	    (rc = start_member(c, agent, deadline, err, errlen)) < 0)
		return rc;
	for (int d = 0; d < 2; d++) {
		if (!(s->worker[d] = hcl_aring_new(&s->plan[d], (unsigned)c->rank, &s->ina_t, err, errlen)))
			return -ENOMEM;
		hcl_aring_set_poll(s->worker[d], hcl_comm_poll_xfer, c);
		hcl_aring_set_lost(s->worker[d], c->env.ina_lost_ns);
		hcl_aring_set_timer_scale(s->worker[d], c->env.timer_scale);
		hcl_aring_set_cc(s->worker[d], c->env.ina_cc);
	}
	/* nobody sends before every member's jobs are in place */
	return hcl_comm_barrier(c, deadline, err, errlen);
}

/* Through the ring of members; when the chain stops mid-job, this call
 * (from its input, which the worker keeps, as it keeps the call before's)
 * and the later ones on the software ring. */
static int aring_allreduce(struct hcl_comm *c, void *buf, size_t count, enum hcl_dtype dt, int64_t deadline)
{
	struct aring_state *s = c->algo_state;
	const int d = dt == HCL_INT32, prev_d = s->last_d;
	struct hcl_aring *w = s->worker[d];
	struct hcl_fallback_in kept = { 0 }; /* later calls: the buffer holds the input */
	s->last_d = d;
	if (!c->ina_lost) {
		int rc = hcl_aring_allreduce(w, buf, buf, count, deadline, c->err, sizeof(c->err));
		if ((rc == -ETIMEDOUT || rc == -ENETDOWN) && c->env.debug)
			hcl_aring_dump(w, stderr);
		if (rc != -ENETDOWN)
			return rc;
		hcl_fallback_begin(c, c->err);
		/* the call before this one ran on this worker or the other */
		kept.input = hcl_aring_input(w);
		if (prev_d == d)
			kept.prev_input = hcl_aring_prev_input(w, &kept.prev_count);
		else if (prev_d >= 0)
			kept.prev_input = hcl_aring_last_input(s->worker[prev_d], &kept.prev_count);
		kept.prev_dt = prev_d == 1 ? HCL_INT32 : c->wire_bf16 ? HCL_BF16 : HCL_FP32;
	}
	return hcl_fallback_allreduce(c, buf, count, dt, &kept, deadline);
}

/* An agent prints its rack's progress after each call: the ToR's counters
 * for the ring's job against the slices the calls so far should have
 * completed there. */
static void aring_report(struct hcl_comm *c, enum hcl_dtype dt, size_t count)
{
	struct aring_state *s = c->algo_state;
	if (!s->tor.njobs)
		return;
	int d = dt == HCL_INT32;
	const struct aring_plan *p = &s->plan[d];
	unsigned k = p->member_of[c->rank];
	int64_t deadline = clock_now_ns() + 2000000000;
	char e2[256];
	struct aring_call call;
	struct ctl_job_report r;
	aring_call_of(p, count, &call);
	if (tor_report(&s->tor, p->job, &r, deadline, e2, sizeof(e2)) < 0) {
		fprintf(stderr, "agent rack %d: no stats from the switch: %s\n", p->mem[k].rack, e2);
		return;
	}
	s->expect[d] += call.slices;
	fprintf(stderr,
		"agent rack %d: %s ring, %u steps: %llu of %llu slices complete in the switch, %llu contributions, "
		"%llu re-sends answered, %llu slots busy, %llu refused\n",
		p->mem[k].rack, d ? "int32" : "fp32", aring_steps(p), (unsigned long long)r.completions, s->expect[d],
		(unsigned long long)r.contributions, (unsigned long long)r.retransmits,
		(unsigned long long)r.slots_busy, (unsigned long long)r.drops);
}

static void aring_stats(const struct hcl_comm *c, struct hcl_comm_stats *out)
{
	const struct aring_state *s = c->algo_state;
	for (int d = 0; d < 2 && s; d++) {
		const struct hcl_aring_stats *st = s->worker[d] ? hcl_aring_stats(s->worker[d]) : NULL;
		if (st) {
			out->ina_sent += st->sent;
			out->ina_resent += st->resent;
			out->ina_results += st->results + st->acks;
			out->ina_marked += st->marked;
			out->ina_stale += st->stale;
		}
	}
	if (s)
		hcl_softsw_stats(s->member, out);
}

static void aring_teardown(struct hcl_comm *c)
{
	struct aring_state *s = c->algo_state;
	if (!s)
		return;
	tor_remove_all(&s->tor);
	for (int d = 0; d < 2; d++) {
		hcl_aring_free(s->worker[d]);
		aring_plan_free(&s->plan[d]);
	}
	softsw_stop(s->member);
	dgram_close(&s->ina_t);
	free(s);
	c->algo_state = NULL;
}

const struct hcl_algo_ops hcl_algo_aring = {
	.name = "agent-ring",
	.prepare = aring_prepare,
	.setup = aring_setup,
	.allreduce = aring_allreduce,
	.report = aring_report,
	.stats = aring_stats,
	.teardown = aring_teardown,
	.serves_others = true,
};
