/* SPDX-License-Identifier: BSD-3-Clause */
#include "psina_plan.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_contributor(struct ina_job_cfg *j, const struct ina_addr *a, char *err, size_t errlen)
{
	if (j->fan_in >= INA_MAX_FANIN) {
		snprintf(err, errlen, "plan: more than %d contributors to one aggregator", INA_MAX_FANIN);
		return -EINVAL;
	}
	j->contributors[j->fan_in++] = *a;
	return 0;
}

/* The INA racks, in order of first appearance, each rank behind one its
 * ToR's contributor. */
static int plan_tors(const struct plan_rank *r, unsigned world, uint16_t job, uint8_t dtype, uint32_t slots,
		     uint16_t elems, struct psina_plan *p, char *err, size_t errlen)
{
	for (unsigned i = 0; i < world; i++) {
		if (!r[i].tor.ip)
			continue;
		unsigned t = 0;
		while (t < p->ntor && p->tor[t].rack != r[i].rack)
			t++;
		if (t == p->ntor) {
			if (p->ntor == PLAN_MAX_RACKS) {
				snprintf(err, errlen, "plan: more than %d INA racks", PLAN_MAX_RACKS);
				return -EINVAL;
			}
			p->ntor++;
			p->tor[t].rack = r[i].rack;
			p->tor[t].agent = (int)i;
			plan_job_init(&p->tor[t].job, job, dtype, slots, elems, INA_OUT_PS);
		}
		const struct ina_addr *first = &r[p->tor[t].agent].tor;
		if (first->ip != r[i].tor.ip || first->port != r[i].tor.port) {
			snprintf(err, errlen, "plan: ranks %d and %u of rack %d name different INA switches",
				 p->tor[t].agent, i, r[i].rack);
			return -EINVAL;
		}
		p->client[i].server = r[i].tor;
		p->client[i].index = p->tor[t].job.fan_in;
		if (add_contributor(&p->tor[t].job, &r[i].ina, err, errlen) < 0)
			return -EINVAL;
	}
	/* a rack without a ToR shares a rack id with an INA rack: refuse, its
	 * ranks would be counted twice or not at all */
	for (unsigned i = 0; i < world; i++)
		for (unsigned t = 0; !r[i].tor.ip && t < p->ntor; t++)
			if (p->tor[t].rack == r[i].rack) {
				snprintf(err, errlen, "plan: rank %u of rack %d has no INA switch, rank %d has", i,
					 r[i].rack, p->tor[t].agent);
				return -EINVAL;
			}
	return 0;
}

/* The plain racks of two or more ranks, each with its ranks listed; and
 * whether the mode gives them aggregators. */
static int plan_rackaggs(const struct plan_rank *r, unsigned world, enum psina_rackagg_mode mode, struct psina_plan *p,
			 char *err, size_t errlen)
{
	unsigned plain = 0, racks = p->ntor;
	for (unsigned i = 0; i < world; i++)
		plain += !r[i].tor.ip;
	for (unsigned i = 0; i < world; i++) { /* count the plain racks: a rack's first rank */
		unsigned j = 0;
		while (j < i && (r[j].tor.ip || r[j].rack != r[i].rack))
			j++;
		racks += !r[i].tor.ip && j == i;
	}
	const bool past_limit = p->ntor + plain > INA_MAX_FANIN;
	if (mode == PSINA_RACKAGG_NEVER || racks < 2 || (mode == PSINA_RACKAGG_PAST_LIMIT && !past_limit) ||
	    (mode == PSINA_RACKAGG_MANY_RACKS && !past_limit && racks < PSINA_RACKAGG_MIN_RACKS))
		return 0;
	if (!(p->rackagg = calloc(racks, sizeof(*p->rackagg))))
		goto nomem;
	for (unsigned i = 0; i < world; i++) {
		if (r[i].tor.ip)
			continue;
		unsigned a = 0;
		while (a < p->nrackagg && p->rackagg[a].rack != r[i].rack)
			a++;
		struct psina_rackagg *g = &p->rackagg[a];
		if (a == p->nrackagg) {
			p->nrackagg++;
			g->rack = r[i].rack;
			if (!(g->ranks = calloc(world, sizeof(*g->ranks))))
				goto nomem;
		}
		g->ranks[g->n++] = (int)i;
	}
	for (unsigned a = 0; a < p->nrackagg; a++)
		if (p->rackagg[a].n > INA_MAX_FANIN) {
			snprintf(err, errlen, "plan: rack %d has %u ranks; one aggregator takes at most %d",
				 p->rackagg[a].rack, p->rackagg[a].n, INA_MAX_FANIN);
			return -EINVAL;
		}
	/* a plain rack of one is its own partial: straight to the PS */
	unsigned kept = 0;
	for (unsigned a = 0; a < p->nrackagg; a++) {
		if (p->rackagg[a].n < 2)
			free(p->rackagg[a].ranks);
		else
			p->rackagg[kept++] = p->rackagg[a];
	}
	p->nrackagg = kept;
	return 0;
nomem:
	snprintf(err, errlen, "plan: out of memory");
	return -ENOMEM;
}

int psina_plan_racks(const struct plan_rank *r, unsigned world, const struct ina_addr *ps, uint16_t job, uint8_t dtype,
		     uint32_t slots, uint16_t elems, enum psina_rackagg_mode mode, struct psina_plan *p, char *err,
		     size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (!(p->client = calloc(world, sizeof(*p->client)))) {
		snprintf(err, errlen, "plan: out of memory");
		return -ENOMEM;
	}
	p->world = world;
	for (unsigned i = 0; i < world; i++)
		p->client[i].rackagg = -1;
	int rc = plan_tors(r, world, job, dtype, slots, elems, p, err, errlen);
	if (rc < 0)
		goto bad;
	if (p->ntor == 1 && p->tor[0].job.fan_in == world) {
		/* one INA rack holds everybody: the switch alone, as SwitchML */
		p->tor[0].job.outputs = INA_OUT_MULTICAST;
		return 0;
	}
	p->use_ps = true;
	/* gap reports at the software PS only: a ToR's jobs so marked would
	 * leave swemu's fast path, and its windows of one slice per shard never
	 * trigger one (docs/BENCHMARKS.md, "Loss") */
	plan_job_init(&p->ps, job, dtype, slots, elems, INA_OUT_MULTICAST | INA_OUT_MISS);
	p->ps.idle_miss_us = PSINA_IDLE_MISS_US;
	if ((rc = plan_rackaggs(r, world, mode, p, err, errlen)) < 0)
		goto bad;
	rc = -EINVAL;
	for (unsigned t = 0; t < p->ntor; t++) {
		p->tor[t].job.parent = (struct ina_peer){ .addr = *ps, .job = job, .contributor = p->ps.fan_in };
		if (add_contributor(&p->ps, &r[p->tor[t].agent].tor, err, errlen) < 0)
			goto bad;
	}
	for (unsigned a = 0; a < p->nrackagg; a++) {
		struct psina_rackagg *g = &p->rackagg[a];
		/* a software ToR: partials up, the PS's results down to the rack */
		plan_job_init(&g->job, job, dtype, slots, elems, INA_OUT_PS);
		g->job.parent = (struct ina_peer){ .addr = *ps, .job = job, .contributor = p->ps.fan_in };
		for (unsigned k = 0; k < g->n; k++) {
			unsigned i = (unsigned)g->ranks[k];
			p->client[i].rackagg = (int16_t)a;
			p->client[i].index = (uint16_t)k;
			if (add_contributor(&g->job, &r[i].ina, err, errlen) < 0)
				goto bad;
		}
		/* its address at the PS is per shard (psina_shard_ps_job) */
		if (add_contributor(&p->ps, &r[g->ranks[0]].ina, err, errlen) < 0)
			goto bad;
	}
	for (unsigned i = 0; i < world; i++) {
		if (r[i].tor.ip || p->client[i].rackagg >= 0)
			continue;
		p->client[i].server = *ps;
		p->client[i].index = p->ps.fan_in;
		p->client[i].to_ps = true;
		if (add_contributor(&p->ps, &r[i].ina, err, errlen) < 0)
			goto bad;
	}
	return 0;
bad:
	psina_plan_free(p);
	return rc;
}

int psina_plan(const struct plan_rank *r, unsigned world, const struct ina_addr *ps, uint16_t job, uint8_t dtype,
	       uint32_t slots, uint16_t elems, struct psina_plan *p, char *err, size_t errlen)
{
	return psina_plan_racks(r, world, ps, job, dtype, slots, elems, PSINA_RACKAGG_PAST_LIMIT, p, err, errlen);
}

static bool hosts_ps_shard(unsigned rank, unsigned shards, unsigned world)
{
	const unsigned h = (unsigned)(((size_t)rank * shards + world - 1) / world); /* the least h at or past rank */
	return h < shards && (unsigned)psina_shard_host(h, shards, world) == rank;
}

/* The position in its rack of aggregator a's shard h.  Where the rack has
 * a rank for every shard besides the PS shards' hosts, one shard on each
 * of those (at 1024 hosts, 16 shards, a PS host that also aggregated its
 * rack carried twice what the others did: 256 ms a 1 MiB call); else the
 * shards dealt over all its ranks, but not onto the rank that hosts PS
 * shard h (both take a whole round in through one link: one PS at 64
 * hosts, 1 MiB, 200M, no INA rack, 1476 ms a call with both on rank 0,
 * 679 apart). */
static unsigned rackagg_pos(const struct psina_plan *p, unsigned a, unsigned h, unsigned shards)
{
	const struct psina_rackagg *g = &p->rackagg[a];
	unsigned free_ranks = 0;
	for (unsigned k = 0; k < g->n; k++)
		free_ranks += !hosts_ps_shard((unsigned)g->ranks[k], shards, p->world);
	if (free_ranks >= shards)
		for (unsigned k = 0, seen = 0; k < g->n; k++)
			if (!hosts_ps_shard((unsigned)g->ranks[k], shards, p->world) && seen++ == h)
				return k;
	unsigned k = h % g->n;
	if (g->ranks[k] == psina_shard_host(h, shards, p->world))
		k = (k + 1) % g->n;
	return k;
}

int psina_rackagg_host(const struct psina_plan *p, unsigned a, unsigned h, unsigned shards)
{
	return p->rackagg[a].ranks[rackagg_pos(p, a, h, shards)];
}

struct ina_addr psina_rackagg_addr(const struct psina_plan *p, unsigned a, unsigned h, unsigned shards,
				   uint16_t base_port)
{
	const unsigned k = rackagg_pos(p, a, h, shards);
	struct ina_addr at = p->rackagg[a].job.contributors[k];
	at.port = htons((uint16_t)(base_port + p->rackagg[a].ranks[k]));
	return at;
}

struct ina_addr psina_client_server(const struct psina_plan *p, unsigned i, unsigned h, unsigned shards,
				    const struct ina_addr *ps, uint16_t rack_base_port)
{
	if (p->client[i].rackagg >= 0)
		return psina_rackagg_addr(p, (unsigned)p->client[i].rackagg, h, shards, rack_base_port);
	return p->client[i].to_ps ? ps[h] : p->client[i].server;
}

unsigned psina_soft_fan_in(const struct psina_plan *p)
{
	unsigned most = p->ps.fan_in;
	for (unsigned a = 0; a < p->nrackagg; a++)
		if (p->rackagg[a].job.fan_in > most)
			most = p->rackagg[a].job.fan_in;
	return most;
}

int psina_shard_host(unsigned h, unsigned shards, unsigned world) { return (int)((size_t)h * world / shards); }

unsigned psina_auto_shards(unsigned world, unsigned racks, bool rack_partials)
{
	size_t k = rack_partials ? (size_t)racks * PSINA_AUTO_SHARDS_PER_RACK : 0;
	if (k < PSINA_AUTO_SHARDS_MIN)
		k = PSINA_AUTO_SHARDS_MIN;
	return k < world ? (unsigned)k : world;
}

uint32_t psina_shard_slots(const struct psina_plan *p, uint32_t slots, unsigned shards, uint16_t elems)
{
	uint32_t n = (slots + shards - 1) / shards;
	const size_t slice = (size_t)elems * INA_ELEM_SIZE;
	const size_t fan_in = psina_soft_fan_in(p);
	size_t window = fan_in * PSINA_MIN_SHARD_SLOTS * slice;
	if (p->use_ps && n < PSINA_MIN_SHARD_SLOTS && window <= PSINA_SHARD_WINDOW_BYTES)
		n = PSINA_MIN_SHARD_SLOTS;
	/* every contributor's window reaches the shard's one link at once */
	if (p->use_ps && fan_in && fan_in * n * slice > PSINA_SHARD_INFLIGHT_BYTES) {
		size_t fit = PSINA_SHARD_INFLIGHT_BYTES / (fan_in * slice);
		n = fit > 1 ? (uint32_t)fit : 1;
	}
	return n;
}

/* e, or smaller where two-slice shard windows would put more than the
 * rank's own window (slots slices of elems) in flight over all shards */
static uint16_t within_rank_window(const struct psina_plan *p, uint32_t slots, unsigned shards, uint16_t e,
				   uint16_t elems)
{
	const uint32_t w = psina_shard_slots(p, slots, shards, e);
	const size_t budget = (size_t)slots * elems;
	if (w < PSINA_MIN_SHARD_SLOTS || (size_t)shards * w * e <= budget)
		return e;
	size_t fit = budget / ((size_t)shards * w) / 16 * 16;
	if (fit < PSINA_MIN_SLICE_ELEMS)
		fit = PSINA_MIN_SLICE_ELEMS;
	return fit < e ? (uint16_t)fit : e;
}

static uint16_t two_slice_elems(const struct psina_plan *p, uint32_t slots, unsigned shards, uint16_t elems)
{
	const size_t fan_in = psina_soft_fan_in(p);
	if (!p->use_ps || !fan_in || psina_shard_slots(p, slots, shards, elems) >= PSINA_MIN_SHARD_SLOTS)
		return elems;
	/* the largest slice, in whole cache lines of elements, at which the
	 * in-flight share or the two-slot window rule gives two */
	const size_t per = fan_in * PSINA_MIN_SHARD_SLOTS * INA_ELEM_SIZE;
	const size_t fits[2] = { PSINA_SHARD_INFLIGHT_BYTES / per, PSINA_SHARD_WINDOW_BYTES / per };
	for (unsigned i = 0; i < 2; i++) {
		size_t e = fits[i] / 16 * 16;
		if (e >= PSINA_MIN_SLICE_ELEMS && e < elems &&
		    psina_shard_slots(p, slots, shards, (uint16_t)e) >= PSINA_MIN_SHARD_SLOTS)
			return (uint16_t)e;
	}
	/* not two: then one slice each that all contributors' together (with
	 * their frames' headers) fit the in-flight share, where that is a
	 * slice at all; a larger one overflows the shard's queue every round
	 * whatever the windows do (256 workers x 8 KiB into 512 KiB: no call
	 * finished, docs/SCALE.md) */
	const size_t share = PSINA_SHARD_INFLIGHT_BYTES / fan_in;
	size_t e = share > PSINA_FRAME_OVERHEAD ? (share - PSINA_FRAME_OVERHEAD) / INA_ELEM_SIZE / 16 * 16 : 0;
	return e >= PSINA_MIN_SLICE_ELEMS && e < elems ? (uint16_t)e : elems;
}

uint16_t psina_shard_elems(const struct psina_plan *p, uint32_t slots, unsigned shards, uint16_t elems)
{
	return within_rank_window(p, slots, shards, two_slice_elems(p, slots, shards, elems), elems);
}

uint32_t psina_shard_spares(const struct psina_plan *p) { return p->use_ps && p->ntor == 0 ? PSINA_SPARE_SLOTS : 0; }

void psina_shard_job(const struct ina_job_cfg *j, uint16_t id, const struct ina_addr *ps, struct ina_job_cfg *out)
{
	*out = *j;
	out->id = id;
	if (j->outputs & INA_OUT_PS) {
		out->parent.addr = *ps;
		out->parent.job = id;
	}
}

void psina_shard_ps_job(const struct psina_plan *p, unsigned h, unsigned shards, uint16_t id, const struct ina_addr *ps,
			uint16_t rack_base_port, struct ina_job_cfg *out)
{
	psina_shard_job(&p->ps, id, ps, out);
	for (unsigned a = 0; a < p->nrackagg; a++)
		out->contributors[p->rackagg[a].job.parent.contributor] = psina_rackagg_addr(p, a, h, shards,
											     rack_base_port);
}

void psina_plan_free(struct psina_plan *p)
{
	free(p->client);
	p->client = NULL;
	for (unsigned a = 0; a < p->nrackagg; a++)
		free(p->rackagg[a].ranks);
	free(p->rackagg);
	p->rackagg = NULL;
	p->nrackagg = 0;
}
