/* ps and ps-ina on a communicator: the plan, the software PS (one, or in
 * shards over the ranks), the ToR jobs each INA rack's agent installs, and
 * an INA client per data type (docs/HOSTLIB.md, "ps" and "ps-ina"). */
#define _GNU_SOURCE
#include "hcl.h"
#include "hcl_comm_int.h"
#include "hcl_ctl.h"
#include "hcl_ina.h"
#include "hcl_plan.h"
#include "hcl_ps.h"
#include "hcl_ring.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sockaddr_in sock_of(const struct ina_addr *a, uint16_t port_host_order)
{
	return (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = a->ip,
				     .sin_port = port_host_order ? htons(port_host_order) : a->port };
}

/* The PS shard count of ps and ps-ina (cfg, else HCL_PS_SHARDS, else 1). */
int hcl_psina_shard_count(struct hcl_comm *c, const struct hcl_comm_cfg *k, char *err, size_t errlen)
{
	const char *s = getenv("HCL_PS_SHARDS");
	int n = k->ps_shards ? k->ps_shards : 1;
	int most = c->world < HCL_INA_MAX_SHARDS ? c->world : HCL_INA_MAX_SHARDS;
	c->ps_shards = 1;
	if (c->algo != HCL_ALGO_PS && c->algo != HCL_ALGO_PS_INA)
		return 0;
	if (!k->ps_shards && s && *s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (*end || v < 1 || v > most)
			return hcl_fail(err, errlen, "HCL_PS_SHARDS=%s: want 1 to %d", s, most), -EINVAL;
		n = (int)v;
	}
	if (n < 1 || n > most)
		return hcl_fail(err, errlen, "PS shards %d (cfg.ps_shards, HCL_PS_SHARDS): want 1 to %d (at most the "
				"world size and %d)", n, most, HCL_INA_MAX_SHARDS), -EINVAL;
	c->ps_shards = (unsigned)n;
	return 0;
}

/* Every rank runs the same shard count: one that differs would send its
 * slices to other aggregators (the sums of the count and of its square
 * match world x and world x squared only if all counts are equal). */
static int agree_shards(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen)
{
	int32_t v[2] = { (int32_t)c->ps_shards, (int32_t)(c->ps_shards * c->ps_shards) };
	int rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, v, 2, HCL_INT32, ++c->epoch, deadline,
				    err, errlen);
	if (rc < 0)
		return rc;
	if ((int64_t)v[0] * v[0] != (int64_t)v[1] * c->world)
		return hcl_fail(err, errlen, "ranks run different PS shard counts (HCL_PS_SHARDS; this rank %u)",
				c->ps_shards), -EINVAL;
	return 0;
}

/* What a ToR says when it cannot take a job: no room for it (ATP's case),
 * or packets longer than it aggregates. */
static bool refusal_for_capacity(const char *answer)
{
	return strstr(answer, "not enough free slots") || strstr(answer, "job table full") ||
	       strstr(answer, "elems_per_slot must be");
}

/* The shards the plan uses: one aggregator (a single INA rack holding
 * every rank) is never cut. */
static unsigned psina_shards(const struct hcl_comm *c)
{
	return c->plan[0].use_ps ? c->ps_shards : 1;
}

/* A shard's slots, which are also its window: the rank's window (slots)
 * is dealt over the shards, so sharding adds aggregators, not bytes in
 * flight (a full window per shard overflowed the ToR ports in the trial:
 * 8 shards ran at 0.55-0.8x the speed of one slot each). */
static uint32_t psina_shard_slots(const struct hcl_comm *c, uint32_t slots)
{
	unsigned n = psina_shards(c);
	return (slots + n - 1) / n;
}

/* Shard h's copy of a ps-ina job of data type d (0 fp32, 1 int32): ids go
 * fp32, int32 per shard from the plan's (shard 0's) ids. */
static void psina_job(const struct hcl_comm *c, const struct ina_job_cfg *j, unsigned h, unsigned d,
		      struct ina_job_cfg *out)
{
	hcl_psina_shard_job(j, (uint16_t)(c->ina_job + 2 * h + d), &c->ps_addr[h], out);
	out->nslots = psina_shard_slots(c, j->nslots);
}

/* This rank is the agent of an INA rack: (re)install the rack's jobs in
 * its ToR over the control channel, from this rank's data address.
 * -ENOSPC with *refused set: the ToR has no room; nothing of the rack's
 * stays installed and the rack can fall back to the software PS. */
static int install_tor_jobs(struct hcl_comm *c, unsigned t, int64_t deadline, bool *refused, char *err,
			    size_t errlen)
{
	struct sockaddr_in ctl = { .sin_family = AF_INET, .sin_addr.s_addr = c->info[c->rank].tor.ip,
				   .sin_port = htons(HCL_CTL_PORT) };
	char text[12288], e2[256];
	for (unsigned n = 0; n < 2 * psina_shards(c); n++) {
		struct ina_job_cfg job;
		const struct ina_job_cfg *j = &job;
		psina_job(c, &c->plan[n % 2].tor[t].job, n / 2, n % 2, &job);
		snprintf(text, sizeof(text), "op = \"remove\"; id = %u;", j->id); /* a crashed run's leftover */
		int rc = hcl_ctl_send(&c->peers[c->rank], &ctl, text, NULL, deadline, e2, sizeof(e2));
		if (rc == -ETIMEDOUT)
			return hcl_fail(err, errlen, "ps-ina: %s", e2), rc;
		if (hcl_ctl_install_text(j, text, sizeof(text)) < 0)
			return hcl_fail(err, errlen, "ps-ina: job %u does not fit a control datagram", j->id), -ENOSPC;
		if ((rc = hcl_ctl_send(&c->peers[c->rank], &ctl, text, "is installed", deadline, e2, sizeof(e2))) < 0) {
			hcl_fail(err, errlen, "ps-ina: installing job %u: %s", j->id, e2);
			if (rc != -EIO || !refusal_for_capacity(e2))
				return rc;
			*refused = true;
			hcl_comm_remove_tor_jobs(c);
			return -ENOSPC;
		}
		c->tor_jobs = true;
		c->tor_ids[c->ntor_ids++] = j->id;
	}
	return 0;
}

/* ps and ps-ina: a socket on this rank's data address at its INA port, the
 * plan (which ToRs aggregate, whether rank 0 runs a software PS), the jobs
 * installed by each rack's agent, a client per data type. */
int hcl_psina_setup(struct hcl_comm *c, const struct hcl_comm_cfg *k, int64_t deadline, char *err, size_t errlen)
{
	const char *name = c->algo == HCL_ALGO_PS ? "ps" : "ps-ina";
	int slots, elems;
	int rc = hcl_ina_packets(c, k, name, &slots, &elems, err, errlen);
	if (rc < 0)
		return rc;
	int job = hcl_cfg_or_env(k->ina_job, "HCL_INA_JOB", 1);
	int njobs = 2 * (int)c->ps_shards; /* fp32 and int32 per shard */
	if (job < 0 || job > 65535 - (njobs - 1))
		return hcl_fail(err, errlen, "%s: job id %d out of range (it uses id to id+%d)", name, job, njobs - 1);
	c->ina_job = (uint16_t)job;
	int psport = hcl_cfg_or_env(0, "HCL_PS_PORT", HCL_PS_PORT_DEFAULT);
	if (psport < 1 || psport > 65535 - ((int)c->ps_shards - 1))
		return hcl_fail(err, errlen, "%s: HCL_PS_PORT %d out of range (shards use it to +%u)", name, psport,
				c->ps_shards - 1);
	if ((rc = agree_shards(c, deadline, err, errlen)) < 0)
		return rc;
	struct sockaddr_in me = c->peers[c->rank];
	me.sin_port = htons(c->ina_ports[c->rank]);
	struct hcl_udp_opts uo = { .zero_checksum = 1 }; /* as SwitchML hosts: saves the switch a pass */
	rc = hcl_udp_open(&c->ina_t, &me, &uo, err, errlen);
	if (rc < 0)
		return rc;

	struct hcl_rank_info *info = calloc((size_t)c->world, sizeof(*info));
	if (!info)
		return hcl_fail(err, errlen, "out of memory"), -ENOMEM;
	for (int i = 0; i < c->world; i++) {
		c->info[i].ina.ip = c->peers[i].sin_addr.s_addr;
		c->info[i].ina.port = htons(c->ina_ports[i]);
		c->info[i].rack = c->racks[i];
		info[i] = c->info[i];
		if (c->algo == HCL_ALGO_PS) /* everybody at the software PS */
			memset(&info[i].tor, 0, sizeof(info[i].tor));
	}
	for (unsigned h = 0; h < c->ps_shards; h++) {
		c->ps_addr[h] = c->info[hcl_psina_shard_host(h, c->ps_shards, (unsigned)c->world)].ina;
		c->ps_addr[h].port = htons((uint16_t)(psport + h));
	}
	const struct ina_addr ps = c->ps_addr[0];
	if ((rc = hcl_float_dtype(k, name, &c->float_dtype, err, errlen)) < 0) {
		free(info);
		return rc;
	}
	/* Plan, install, and agree on which ToRs took their jobs; a ToR
	 * without room sends its rack to the software PS (ATP's fallback),
	 * which changes the others' jobs too: they are planned and installed
	 * again.  A second refusal is an error. */
	for (int round = 0;; round++) {
		for (int d = 0; d < 2 && rc == 0; d++)
			rc = hcl_psina_plan(info, (unsigned)c->world, &ps, (uint16_t)(job + d),
					    d ? INA_D_INT32 : c->float_dtype, (uint32_t)slots, (uint16_t)elems, &c->plan[d],
					    err, errlen);
		int32_t refused[HCL_MAX_RACKS] = { 0 };
		unsigned ntor = rc == 0 ? c->plan[0].ntor : 0;
		for (unsigned t = 0; t < ntor && rc == 0; t++) {
			bool no_room = false;
			if (c->plan[0].tor[t].agent == c->rank &&
			    (rc = install_tor_jobs(c, t, deadline, &no_room, err, errlen)) < 0 && no_room && round == 0) {
				fprintf(stderr, "hcl: rack %d: %s; the rack uses the software PS%s\n",
					c->plan[0].tor[t].rack, err, c->ps_shards > 1 ? " shards" : " on rank 0");
				refused[t] = 1;
				rc = 0;
			}
		}
		/* everybody learns the outcome (an agent that failed otherwise
		 * does not join: the others' call ends at the deadline) */
		if (rc == 0 && ntor)
			rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, refused, ntor, HCL_INT32,
						++c->epoch, deadline, err, errlen);
		bool again = false;
		for (unsigned t = 0; rc == 0 && t < ntor; t++)
			if (refused[t]) {
				again = true;
				for (int i = 0; i < c->world; i++)
					if (info[i].rack == c->plan[0].tor[t].rack)
						memset(&info[i].tor, 0, sizeof(info[i].tor));
			}
		if (rc < 0 || !again)
			break;
		hcl_comm_remove_tor_jobs(c); /* planned for the old layout */
		for (int d = 0; d < 2; d++)
			hcl_psina_plan_free(&c->plan[d]);
	}
	free(info);
	if (rc < 0)
		return rc;
	const unsigned shards = psina_shards(c);
	for (unsigned h = 0; h < shards; h++) {
		if (!c->plan[0].use_ps || hcl_psina_shard_host(h, shards, (unsigned)c->world) != c->rank)
			continue;
		struct ina_job_cfg jobs[2];
		for (unsigned d = 0; d < 2; d++)
			psina_job(c, &c->plan[d].ps, h, d, &jobs[d]);
		struct sockaddr_in psa = sock_of(&c->ps_addr[h], 0);
		if (!(c->ps = hcl_ps_start(&psa, jobs, 2, err, errlen)))
			return -ENOMEM;
	}
	for (unsigned d = 0; d < 2; d++) {
		struct hcl_ina_cfg ic = { .shards = shards, .index = c->plan[d].client[c->rank].index,
					  .slots = psina_shard_slots(c, (uint32_t)slots), .elems = (uint16_t)elems, .poll = hcl_comm_poll_xfer,
					  .poll_ctx = c };
		for (unsigned h = 0; h < shards; h++) {
			ic.job[h] = (uint16_t)(job + 2 * h + d);
			ic.sw[h] = sock_of(c->plan[d].client[c->rank].to_ps ? &c->ps_addr[h]
									   : &c->plan[d].client[c->rank].server,
					   0);
		}
		if (!(*(d ? &c->ina_i32 : &c->ina) = hcl_ina_new(&ic, &c->ina_t, err, errlen)))
			return -ENOMEM;
	}
	/* nobody sends before every aggregator is in place */
	return hcl_comm_barrier(c, deadline, err, errlen);
}
