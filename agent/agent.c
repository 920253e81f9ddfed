/* The agents of agent-ring (docs/AGENTRING.md), run inside
 * hcl_comm_create by every rank:
 *  - each INA rack's agent (its lowest rank) clears and installs the
 *    rack's step jobs in its ToR over the control channel, and removes
 *    them when the communicator goes (hcl_comm_destroy, after a barrier);
 *  - each host of a rack without INA is a ring member of its own: it runs
 *    the same engine in software (ring/hcl_ps: the engine behind a UDP
 *    socket in a thread) with its step jobs;
 *  - every rank then runs the worker (ring/hcl_aring.c) against its
 *    member's aggregator.
 * The ToRs forward to each other by MAC, which only the agents can learn
 * (ARP after talking to their ToR): they are shared with a one-off
 * all-reduce over the ranks' reliable transfer. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_comm_int.h"
#include "hcl_ctl.h"
#include "hcl_ps.h"
#include "hcl_ring.h"
#include "hcl_xfer.h"

#define SOFT_PORT_DEFAULT 48870

static struct sockaddr_in ctl_of(const struct hcl_comm *c)
{
	return (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = c->info[c->rank].tor.ip,
				     .sin_port = htons(HCL_CTL_PORT) };
}

/* Clears the ids this ring will use (a crashed run's leftovers) and, as a
 * side effect, has the kernel resolve the ToR's MAC. */
static int probe_tor(struct hcl_comm *c, uint16_t id0, unsigned n, int64_t deadline, uint8_t mac[6], char *err,
		     size_t errlen)
{
	struct sockaddr_in ctl = ctl_of(c);
	char text[64], e2[256];
	for (unsigned i = 0; i < n; i++) {
		snprintf(text, sizeof(text), "op = \"remove\"; id = %u;", id0 + i);
		if (hcl_ctl_send(&c->peers[c->rank], &ctl, text, NULL, deadline, e2, sizeof(e2)) == -ETIMEDOUT)
			return hcl_fail(err, errlen, "agent-ring: %s", e2), -ETIMEDOUT;
	}
	if (hcl_mac_neigh(ctl.sin_addr.s_addr, deadline, mac) < 0) {
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &ctl.sin_addr, ip, sizeof(ip));
		return hcl_fail(err, errlen, "agent-ring: no MAC address for switch %s", ip), -EHOSTUNREACH;
	}
	return 0;
}

/* Every rank learns every agent's ToR MAC: rank r's slot holds its ToR's
 * MAC if it is an agent, zeros otherwise, and a sum gathers them. */
static int share_macs(struct hcl_comm *c, const uint8_t mine[6], uint8_t (*macs)[6], int64_t deadline, char *err,
		      size_t errlen)
{
	int32_t *v = calloc((size_t)c->world * 2, sizeof(int32_t));
	if (!v)
		return hcl_fail(err, errlen, "out of memory"), -ENOMEM;
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

static int install(struct hcl_comm *c, const struct ina_job_cfg *j, int64_t deadline, char *err, size_t errlen)
{
	char text[12288], e2[256];
	struct sockaddr_in ctl = ctl_of(c);
	if (hcl_ctl_install_text(j, text, sizeof(text)) < 0)
		return hcl_fail(err, errlen, "agent-ring: job %u does not fit a control datagram", j->id), -ENOSPC;
	int rc = hcl_ctl_send(&c->peers[c->rank], &ctl, text, "is installed", deadline, e2, sizeof(e2));
	if (rc < 0)
		return hcl_fail(err, errlen, "agent-ring: installing job %u: %s", j->id, e2), rc;
	c->tor_jobs = true;
	c->tor_ids[c->ntor_ids++] = j->id;
	return 0;
}

int hcl_aring_setup(struct hcl_comm *c, const struct hcl_comm_cfg *k, int64_t deadline, char *err, size_t errlen)
{
	int slots, elems;
	int rc = hcl_ina_packets(c, k, "agent-ring", &slots, &elems, err, errlen);
	if (rc < 0)
		return rc;
	int job = hcl_cfg_or_env(k->ina_job, "HCL_INA_JOB", 1), port = hcl_cfg_or_env(0, "HCL_PS_PORT", SOFT_PORT_DEFAULT);
	if (job < 0 || port < 1 || port > 65535)
		return hcl_fail(err, errlen, "agent-ring: job %d or port %d out of range", job, port), -EINVAL;
	struct sockaddr_in me = c->peers[c->rank];
	me.sin_port = htons(c->ina_ports[c->rank]);
	struct hcl_udp_opts uo = { .zero_checksum = 1 };
	rc = hcl_udp_open(&c->ina_t, &me, &uo, err, errlen);
	if (rc < 0)
		return rc;

	struct ina_addr *soft = calloc((size_t)c->world, sizeof(*soft));
	uint8_t(*macs)[6] = calloc((size_t)c->world, 6);
	if (!soft || !macs) {
		free(soft);
		free(macs);
		return hcl_fail(err, errlen, "out of memory"), -ENOMEM;
	}
	for (int i = 0; i < c->world; i++) {
		c->info[i].ina.ip = c->peers[i].sin_addr.s_addr;
		c->info[i].ina.port = htons(c->ina_ports[i]);
		c->info[i].rack = c->racks[i];
		soft[i] = c->info[i].ina;
		soft[i].port = htons((uint16_t)port);
	}
	/* the plans: the float ring on jobs job.. (fp32, or bf16 when asked
	 * for; BFP's two passes are not an agent-ring mode, so bfp means fp32
	 * here), the int32 ring after it */
	rc = hcl_float_dtype(k, "agent-ring", &c->float_dtype, err, errlen);
	if (c->float_dtype == INA_D_BFP32)
		c->float_dtype = INA_D_FP32;
	if (rc == 0)
		rc = aring_plan_build(c->info, soft, (unsigned)c->world, (uint16_t)job, c->float_dtype,
				      (uint32_t)slots, (uint16_t)elems, &c->aplan[0], err, errlen);
	unsigned steps = rc == 0 ? aring_steps(&c->aplan[0]) : 0;
	if (rc == 0 && job + 2 * steps > 65536)
		rc = (hcl_fail(err, errlen, "agent-ring: job ids %d.. run past 65535", job), -EINVAL);
	if (rc == 0)
		rc = aring_plan_build(c->info, soft, (unsigned)c->world, (uint16_t)(job + steps), INA_D_INT32,
				      (uint32_t)slots, (uint16_t)elems, &c->aplan[1], err, errlen);
	free(soft);
	unsigned me_k = rc == 0 ? c->aplan[0].member_of[c->rank] : 0;
	const struct aring_member *mine = rc == 0 ? &c->aplan[0].mem[me_k] : NULL;
	bool agent = mine && mine->ina && c->aplan[0].worker_rank[mine->first] == (unsigned)c->rank;
	uint8_t tor_mac[6] = { 0 };
	if (rc == 0 && agent)
		rc = probe_tor(c, (uint16_t)job, 2 * steps, deadline, tor_mac, err, errlen);
	/* an agent that failed above does not join: the others' exchange ends
	 * at the deadline with an error naming a rank, not in a hang */
	if (rc == 0)
		rc = share_macs(c, tor_mac, macs, deadline, err, errlen);
	for (int d = 0; rc == 0 && d < 2; d++)
		for (unsigned m = 0; m < c->aplan[d].m; m++)
			if (c->aplan[d].mem[m].ina)
				memcpy(c->aplan[d].mem[m].agg.mac, macs[c->aplan[d].worker_rank[c->aplan[d].mem[m].first]], 6);
	free(macs);
	if (rc < 0)
		return rc;

	struct ina_job_cfg *jobs = calloc(2 * steps, sizeof(*jobs));
	if (!jobs)
		return hcl_fail(err, errlen, "out of memory"), -ENOMEM;
	for (int d = 0; d < 2; d++)
		for (unsigned s = 0; s < steps; s++)
			aring_job(&c->aplan[d], me_k, s, &jobs[d * steps + s]);
	if (agent) {
		for (unsigned i = 0; rc == 0 && i < 2 * steps; i++)
			rc = install(c, &jobs[i], deadline, err, errlen);
	} else if (!mine->ina) {
		/* this host is a member of its own: the engine in software */
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = mine->agg.ip, .sin_port = mine->agg.port };
		if (!(c->ps = hcl_ps_start(&sa, jobs, 2 * steps, err, errlen)))
			rc = -EADDRINUSE;
	}
	free(jobs);
	for (int d = 0; rc == 0 && d < 2; d++)
		if (!(c->aring[d] = hcl_aring_new(&c->aplan[d], (unsigned)c->rank, &c->ina_t, err, errlen)))
			rc = -ENOMEM;
		else
			hcl_aring_set_poll(c->aring[d], hcl_comm_poll_xfer, c);
	/* nobody sends before every member's jobs are in place */
	return rc < 0 ? rc : hcl_comm_barrier(c, deadline, err, errlen);
}

void hcl_aring_report(struct hcl_comm *c, int d, size_t count)
{
	if (!c->tor_jobs || !getenv("HCL_AGENT_REPORT"))
		return;
	const struct aring_plan *p = &c->aplan[d];
	unsigned k = p->member_of[c->rank];
	unsigned long long sum[5] = { 0 }, expect = 0;
	char text[64], ans[256], e2[256];
	struct sockaddr_in ctl = ctl_of(c);
	int64_t deadline = hcl_now_ns() + 2000000000;
	for (unsigned s = 0; s < aring_steps(p); s++) {
		struct aring_step st;
		aring_step_of(p, k, s, count, &st);
		expect += (st.hi - st.lo + p->elems - 1) / p->elems;
		unsigned long long v[5];
		snprintf(text, sizeof(text), "op = \"stats\"; id = %u;", p->job0 + s);
		if (hcl_ctl_query(&c->peers[c->rank], &ctl, text, ans, sizeof(ans), deadline, e2, sizeof(e2)) < 0 ||
		    sscanf(ans, "ok job=%*u completions=%llu contributions=%llu retransmits=%llu slots_busy=%llu drops=%llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4]) != 5) {
			fprintf(stderr, "agent rack %d: no stats from the switch: %s\n", p->mem[k].rack, e2);
			return;
		}
		for (int i = 0; i < 5; i++)
			sum[i] += v[i];
	}
	c->report_expect[d] += expect;
	fprintf(stderr,
		"agent rack %d: %s ring, %u steps: %llu of %llu slices complete in the switch, %llu contributions, "
		"%llu re-sends answered, %llu slots busy, %llu refused\n",
		p->mem[k].rack, d ? "int32" : "fp32", aring_steps(p), sum[0], c->report_expect[d], sum[1], sum[2],
		sum[3], sum[4]);
}

void hcl_aring_teardown(struct hcl_comm *c)
{
	for (int d = 0; d < 2; d++) {
		hcl_aring_free(c->aring[d]);
		c->aring[d] = NULL;
		aring_plan_free(&c->aplan[d]);
	}
}
