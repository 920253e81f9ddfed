/* SPDX-License-Identifier: BSD-3-Clause */
/* ps and ps-ina (docs/ALGORITHMS.md): the plan (agent/psina_plan.h: which
 * ToRs aggregate, whether a software PS runs, cut in shards over the
 * ranks), the ToR jobs each INA rack's agent installs (agent/tor.h), the
 * software PS shard this rank hosts (agent/softsw.h), and an INA client per
 * data type (ring/hcl_ina.h).  ps is ps-ina with no ToR: everybody at the
 * software PS. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hcl_algo.h"
#include "hcl_fallback.h"
#include "hcl_ina.h"
#include "hcl_kept.h"
#include "hcl_ring.h"
#include "psina_plan.h"
#include "softsw.h"
#include "tor.h"

struct ps_state {
	struct dgram_transport ina_t;		     /* this rank's INA socket */
	struct hcl_ina *client[2];		     /* fp32 (the float wire), int32 */
	struct softsw *ps;			     /* the PS shard this rank hosts, if any */
	struct softsw *rack_agg;		     /* the rack aggregators' shards it hosts, if any */
	bool with_tors;				     /* ps-ina (ps plans no switch) */
	uint16_t rack_port;			     /* theirs: this + the hosting rank (host order) */
	struct ina_addr ps_addr[HCL_INA_MAX_SHARDS]; /* each shard's PS socket */
	struct psina_plan plan[2];		     /* fp32, int32 */
	struct tor tor;				     /* this rank's ToR, if it is a rack's agent */
	/* each call's input, two buffers in turn: results overwrite the
	 * buffer slice by slice, and when an aggregator is lost the ranks can
	 * be a call apart (one has all its results, another lost one as the
	 * job went); the fall-back finishes the call behind from everyone's
	 * inputs of it (ring/hcl_fallback.c) */
	struct hcl_kept kept;
	size_t prev_count; /* elements of the previous call's kept input; 0: none */
	enum hcl_dtype prev_dt;
};

static int prepare(struct hcl_comm *c, struct dgram_udp_opts *o, bool with_tors, char *err, size_t errlen)
{
	struct ps_state *s = calloc(1, sizeof(*s));
	if (!s)
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	c->algo_state = s;
	s->with_tors = with_tors;
	hcl_ina_prepare(c, o);
	if (!with_tors) /* ps announces no switch: its plan has none */
		memset(&c->info[c->rank].tor, 0, sizeof(c->info[c->rank].tor));
	return 0;
}

static int ps_prepare(struct hcl_comm *c, struct dgram_udp_opts *o, char *err, size_t errlen)
{
	return prepare(c, o, false, err, errlen);
}

static int ps_ina_prepare(struct hcl_comm *c, struct dgram_udp_opts *o, char *err, size_t errlen)
{
	return prepare(c, o, true, err, errlen);
}

/* Every rank runs the same shard count and rack aggregator setting: one
 * that differs would send its slices to other aggregators (the sums of a
 * value and of its square match world x and world x squared only if all
 * values are equal). */
static int agree_shards(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen)
{
	unsigned n = c->env.ps_shards, m = (unsigned)(c->env.ps_rack_agg + 2);
	int32_t v[4] = { (int32_t)n, (int32_t)(n * n), (int32_t)m, (int32_t)(m * m) };
	int rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, v, 4, HCL_INT32, ++c->epoch, deadline,
				    err, errlen);
	if (rc == 0 && (int64_t)v[0] * v[0] != (int64_t)v[1] * c->world)
		return hcl_fail(-EINVAL, err, errlen,
				"ranks run different PS shard counts (HCL_PS_SHARDS; this rank %u)", n);
	if (rc == 0 && (int64_t)v[2] * v[2] != (int64_t)v[3] * c->world)
		return hcl_fail(-EINVAL, err, errlen, "ranks run different HCL_PS_RACK_AGG settings");
	return rc;
}

/* The plan's rack aggregators: HCL_PS_RACK_AGG, or by default ps-ina's
 * plain racks where three or more racks feed the PS (a rack's sum then
 * crosses its uplink once, as behind an INA ToR: agent/psina_plan.h),
 * ps's only past the PS's contributor limit (ps stays the flat PS). */
static enum psina_rackagg_mode rack_agg_mode(const struct hcl_comm *c)
{
	if (c->env.ps_rack_agg >= 0)
		return c->env.ps_rack_agg ? PSINA_RACKAGG_ALWAYS : PSINA_RACKAGG_NEVER;
	const struct ps_state *s = c->algo_state;
	return s->with_tors ? PSINA_RACKAGG_MANY_RACKS : PSINA_RACKAGG_PAST_LIMIT;
}

/* The shards the plan uses: one aggregator (a single INA rack holding
 * every rank) is never cut. */
static unsigned shards(const struct hcl_comm *c)
{
	const struct ps_state *s = c->algo_state;
	return s->plan[0].use_ps ? c->env.ps_shards : 1;
}

/* A client's slice to a shard: fewer elements than a packet holds where
 * that gives the shard's window two slices (agent/psina_plan.h). */
static uint16_t shard_elems(const struct hcl_comm *c)
{
	const struct ps_state *s = c->algo_state;
	return psina_shard_elems(&s->plan[0], c->env.ina_slots, shards(c), c->env.ina_elems);
}

/* A shard's window (agent/psina_plan.h: the rank's window dealt over the
 * shards; at least two where they fit, so that RACK can find a
 * lost slice). */
static uint32_t shard_window(const struct hcl_comm *c)
{
	const struct ps_state *s = c->algo_state;
	return psina_shard_slots(&s->plan[0], c->env.ina_slots, shards(c), shard_elems(c));
}

/* A shard's slots: its window and the spares that let it go on past a
 * stalled slice. */
static uint32_t shard_slots(const struct hcl_comm *c)
{
	const struct ps_state *s = c->algo_state;
	return shard_window(c) + psina_shard_spares(&s->plan[0]);
}

/* Shard h's copy of a plan job of data type d (0 fp32, 1 int32): ids go
 * fp32, int32 per shard from the first id. */
static void shard_job(const struct hcl_comm *c, const struct ina_job_cfg *j, unsigned h, unsigned d,
		      struct ina_job_cfg *out)
{
	const struct ps_state *s = c->algo_state;
	psina_shard_job(j, (uint16_t)(c->env.ina_job + 2 * h + d), &s->ps_addr[h], out);
	out->nslots = shard_slots(c);
}

/* The PS's job of shard h, data type d: the rack aggregators' addresses
 * are shard h's. */
static void shard_ps_job(const struct hcl_comm *c, unsigned h, unsigned d, struct ina_job_cfg *out)
{
	const struct ps_state *s = c->algo_state;
	psina_shard_ps_job(&s->plan[d], h, shards(c), (uint16_t)(c->env.ina_job + 2 * h + d), &s->ps_addr[h],
			   s->rack_port, out);
	out->nslots = shard_slots(c);
}

/* This rank is the agent of INA rack t: (re)install the rack's jobs in its
 * ToR.  -ENOSPC: the ToR has no room, or another tenant holds an id;
 * nothing of the rack's stays installed and the rack can fall back to the
 * software PS. */
static int install_tor_jobs(struct hcl_comm *c, unsigned t, int64_t deadline, char *err, size_t errlen)
{
	struct ps_state *s = c->algo_state;
	char e2[256];
	tor_init(&s->tor, &c->peers[c->rank], c->info[c->rank].tor.ip, c->owner);
	tor_set_key(&s->tor, &c->env.ina_key);
	for (unsigned n = 0; n < 2 * shards(c); n++) {
		struct ina_job_cfg job;
		shard_job(c, &s->plan[n % 2].tor[t].job, n / 2, n % 2, &job);
		int rc = tor_install(&s->tor, &job, deadline, e2, sizeof(e2));
		if (rc == -EADDRINUSE) /* another tenant holds the id: as if there were no room */
			rc = -ENOSPC;
		if (rc < 0) {
			hcl_fail(-EINVAL, err, errlen, "ps-ina: installing job %u: %s", job.id, e2);
			if (rc == -ENOSPC)
				tor_remove_all(&s->tor);
			return rc;
		}
	}
	return 0;
}

/* Plans, installs, and agrees on which ToRs took their jobs; a ToR without
 * room sends its rack to the software PS (ATP's fallback), which changes
 * the others' jobs too: they are planned and installed again.  A second
 * refusal is an error. */
static int plan_and_install(struct hcl_comm *c, struct plan_rank *info, int64_t deadline, char *err, size_t errlen)
{
	struct ps_state *s = c->algo_state;
	const struct hcl_env *e = &c->env;
	int rc = 0;
	for (int round = 0;; round++) {
		for (int d = 0; d < 2 && rc == 0; d++)
			rc = psina_plan_racks(info, (unsigned)c->world, &s->ps_addr[0], (uint16_t)(e->ina_job + d),
					      d ? INA_D_INT32 : e->float_wire, e->ina_slots, e->ina_elems,
					      rack_agg_mode(c), &s->plan[d], err, errlen);
		int32_t refused[PLAN_MAX_RACKS] = { 0 };
		unsigned ntor = rc == 0 ? s->plan[0].ntor : 0;
		for (unsigned t = 0; t < ntor && rc == 0; t++)
			if (s->plan[0].tor[t].agent == c->rank &&
			    (rc = install_tor_jobs(c, t, deadline, err, errlen)) == -ENOSPC && round == 0) {
				fprintf(stderr, "hcl: rack %d: %s; the rack uses the software PS%s\n",
					s->plan[0].tor[t].rack, err, e->ps_shards > 1 ? " shards" : " on rank 0");
				refused[t] = 1;
				rc = 0;
			}
		/* everybody learns the outcome (an agent that failed otherwise
		 * does not join: the others' call ends at the deadline) */
		if (rc == 0 && ntor)
			rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, refused, ntor, HCL_INT32,
						++c->epoch, deadline, err, errlen);
		bool again = false;
		for (unsigned t = 0; rc == 0 && t < ntor; t++)
			for (int i = 0; refused[t] && i < c->world; i++)
				if (info[i].rack == s->plan[0].tor[t].rack) {
					memset(&info[i].tor, 0, sizeof(info[i].tor));
					again = true;
				}
		if (rc < 0 || !again)
			return rc;
		tor_remove_all(&s->tor); /* planned for the old layout */
		for (int d = 0; d < 2; d++)
			psina_plan_free(&s->plan[d]);
	}
}

/* The shards of rack aggregators this rank hosts, on one socket at
 * rack_port.  0, or -errno. */
static int start_rack_aggs(struct hcl_comm *c, char *err, size_t errlen)
{
	struct ps_state *s = c->algo_state;
	const struct psina_plan *p = &s->plan[0];
	const unsigned n = shards(c);
	struct ina_job_cfg *jobs = calloc(2 * (size_t)n, sizeof(*jobs)); /* a rank is in one rack */
	unsigned njobs = 0;
	if (!jobs)
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	for (unsigned a = 0; a < p->nrackagg; a++)
		for (unsigned h = 0; h < n; h++)
			for (unsigned d = 0; psina_rackagg_host(p, a, h, n) == c->rank && d < 2; d++)
				shard_job(c, &s->plan[d].rackagg[a].job, h, d, &jobs[njobs++]);
	int rc = 0;
	if (njobs) {
		struct sockaddr_in at = { .sin_family = AF_INET,
					  .sin_addr.s_addr = c->info[c->rank].ina.ip,
					  .sin_port = htons((uint16_t)(s->rack_port + c->rank)) };
		if (!(s->rack_agg = softsw_start(&at, jobs, njobs, err, errlen)))
			rc = -EADDRINUSE;
	}
	free(jobs);
	return rc;
}

/* The software PS shards and rack aggregators this rank hosts, and a
 * client per data type. */
static int start_aggregators(struct hcl_comm *c, char *err, size_t errlen)
{
	struct ps_state *s = c->algo_state;
	const unsigned n = shards(c);
	int rc = start_rack_aggs(c, err, errlen);
	if (rc < 0)
		return rc;
	for (unsigned h = 0; h < n; h++) {
		if (!s->plan[0].use_ps || psina_shard_host(h, n, (unsigned)c->world) != c->rank)
			continue;
		struct ina_job_cfg jobs[2];
		for (unsigned d = 0; d < 2; d++)
			shard_ps_job(c, h, d, &jobs[d]);
		struct sockaddr_in at = { .sin_family = AF_INET,
					  .sin_addr.s_addr = s->ps_addr[h].ip,
					  .sin_port = s->ps_addr[h].port };
		if (!(s->ps = softsw_start(&at, jobs, 2, err, errlen)))
			return -EADDRINUSE;
	}
	for (unsigned d = 0; d < 2; d++) {
		const struct psina_plan *p = &s->plan[d];
		struct hcl_ina_cfg ic = { .shards = n,
					  .lost_ns = c->env.ina_lost_ns,
					  .timer_scale = c->env.timer_scale,
					  .index = p->client[c->rank].index,
					  .slots = shard_slots(c),
					  .window = shard_window(c),
					  .elems = shard_elems(c),
					  .poll = hcl_comm_poll_xfer,
					  .poll_ctx = c,
					  .cc = c->env.ina_cc };
		for (unsigned h = 0; h < n; h++) {
			const struct ina_addr at = psina_client_server(p, (unsigned)c->rank, h, n, s->ps_addr,
								       s->rack_port);
			const struct ina_addr *a = &at;
			ic.job[h] = (uint16_t)(c->env.ina_job + 2 * h + d);
			ic.sw[h] = (struct sockaddr_in){ .sin_family = AF_INET,
							 .sin_addr.s_addr = a->ip,
							 .sin_port = a->port };
			/* a switch's slots spread over its ports (ina_addr.nports),
			 * for one split over lcores by port; its parent PS
			 * sends each result to the slot's port too */
			ic.ports[h] = a->nports;
		}
		if (!(s->client[d] = hcl_ina_new(&ic, &s->ina_t, err, errlen)))
			return -ENOMEM;
	}
	return 0;
}

static int ps_setup(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen)
{
	struct ps_state *s = c->algo_state;
	const struct hcl_env *e = &c->env;
	const char *name = c->algo->name;
	if (e->ina_job > 65535 - (2 * (int)e->ps_shards - 1))
		return hcl_fail(-EINVAL, err, errlen, "%s: job id %u out of range (it uses id to id+%u)", name,
				e->ina_job, 2 * e->ps_shards - 1);
	int rc = hcl_ina_mtu_check(c, name, err, errlen);
	if (rc < 0 || (rc = agree_shards(c, deadline, err, errlen)) < 0 ||
	    (rc = hcl_ina_socket(c, &s->ina_t, err, errlen)) < 0)
		return rc;
	struct plan_rank *info = malloc((size_t)c->world * sizeof(*info));
	if (!info)
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	memcpy(info, c->info, (size_t)c->world * sizeof(*info));
	for (unsigned h = 0; h < e->ps_shards; h++) {
		s->ps_addr[h] = c->info[psina_shard_host(h, e->ps_shards, (unsigned)c->world)].ina;
		s->ps_addr[h].port = htons((uint16_t)(e->ps_port + h));
	}
	s->rack_port = (uint16_t)(e->ps_port + e->ps_shards);
	c->wire_bf16 = e->float_wire == INA_D_BF16;
	rc = plan_and_install(c, info, deadline, err, errlen);
	free(info);
	if (rc == 0)
		rc = start_aggregators(c, err, errlen);
	/* nobody sends before every aggregator is in place */
	return rc < 0 ? rc : hcl_comm_barrier(c, deadline, err, errlen);
}

/* A copy of buf's count elements in the next of the two kept buffers:
 * the kept input, or NULL (out of memory, said in c->err). */
static const void *keep_input(struct hcl_comm *c, struct ps_state *s, const void *buf, size_t count, enum hcl_dtype dt)
{
	const size_t bytes = count * (dt == HCL_BF16 ? 2 : 4);
	uint8_t *k = hcl_kept_next(&s->kept, bytes);
	if (!k) {
		hcl_fail(-ENOMEM, c->err, sizeof(c->err), "out of memory for a copy of the call's %zu bytes", bytes);
		return NULL;
	}
	if (bytes)
		memcpy(k, buf, bytes);
	return k;
}

/* Through the aggregators; when one is lost mid-job, this call and the
 * later ones on the software ring, from the kept inputs. */
static int ps_allreduce(struct hcl_comm *c, void *buf, size_t count, enum hcl_dtype dt, int64_t deadline)
{
	struct ps_state *s = c->algo_state;
	struct hcl_fallback_in left = { 0 }; /* the buffer holds the input whole */
	if (!c->ina_lost) {
		const void *input = keep_input(c, s, buf, count, dt);
		if (!input)
			return -ENOMEM;
		int rc;
		if (dt == HCL_FP32 && c->env.float_wire == INA_D_BFP32)
			rc = hcl_ina_allreduce_bfp(s->client[0], buf, count, (unsigned)c->world, deadline, c->err,
						   sizeof(c->err));
		else
			rc = hcl_ina_allreduce(s->client[dt == HCL_INT32], buf, count, dt, deadline, c->err,
					       sizeof(c->err));
		if (rc != -ENETDOWN) {
			s->prev_count = rc == 0 ? count : 0;
			s->prev_dt = dt;
			return rc;
		}
		hcl_fallback_begin(c, c->err);
		/* from inputs alone: a rank behind needs its own whole, a rank
		 * ahead gives the call before's */
		left = (struct hcl_fallback_in){ .input = input,
						 .prev_input = s->prev_count ? hcl_kept_before(&s->kept) : NULL,
						 .prev_count = s->prev_count,
						 .prev_dt = s->prev_dt };
	}
	return hcl_fallback_allreduce(c, buf, count, dt, &left, deadline);
}

static void ps_stats(const struct hcl_comm *c, struct hcl_comm_stats *out)
{
	const struct ps_state *s = c->algo_state;
	for (int d = 0; d < 2 && s; d++) {
		const struct hcl_ina_stats *st = s->client[d] ? hcl_ina_stats(s->client[d]) : NULL;
		if (st) {
			out->ina_sent += st->sent;
			out->ina_resent += st->resent;
			out->ina_results += st->results;
			out->ina_marked += st->marked;
			out->ina_stale += st->duplicates + st->foreign;
		}
	}
	if (s) {
		hcl_softsw_stats(s->ps, out);
		hcl_softsw_stats(s->rack_agg, out);
	}
}

static void ps_teardown(struct hcl_comm *c)
{
	struct ps_state *s = c->algo_state;
	if (!s)
		return;
	tor_remove_all(&s->tor);
	for (int d = 0; d < 2; d++) {
		hcl_ina_free(s->client[d]);
		psina_plan_free(&s->plan[d]);
	}
	softsw_stop(s->ps);
	softsw_stop(s->rack_agg);
	dgram_close(&s->ina_t);
	hcl_kept_free(&s->kept);
	free(s);
	c->algo_state = NULL;
}

const struct hcl_algo_ops hcl_algo_ps = {
	.name = "ps",
	.prepare = ps_prepare,
	.setup = ps_setup,
	.allreduce = ps_allreduce,
	.stats = ps_stats,
	.teardown = ps_teardown,
	.serves_others = true,
};

const struct hcl_algo_ops hcl_algo_ps_ina = {
	.name = "ps-ina",
	.prepare = ps_ina_prepare,
	.setup = ps_setup,
	.allreduce = ps_allreduce,
	.stats = ps_stats,
	.teardown = ps_teardown,
	.serves_others = true,
};
