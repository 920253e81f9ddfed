/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's job table: creating the engine, installing and removing
 * jobs, and what other threads may read of them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ina_engine_state.h"

/* Empties the state of a job's slots (the elements need no clearing: the
 * first contribution of a round writes them). */
static void clear_slots(struct ina_engine *eng, uint32_t base, uint32_t n)
{
	for (size_t m = (size_t)base * 2; m < ((size_t)base + n) * 2; m++) {
		slot_release(eng, slot_at(eng, m));
		memset(slot_at(eng, m), 0, sizeof(struct slot));
	}
}

/* The owner's side of a job entry's generation: odd from begin to end. */
static void job_write_begin(struct job *j)
{
	__atomic_store_n(&j->gen, j->gen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void job_write_end(struct job *j) { __atomic_store_n(&j->gen, j->gen + 1, __ATOMIC_RELEASE); }

/* A reader's consistent copy of job id's slot range; false when the job is
 * not installed.  Retries while the owner rewrites the entry. */
static bool job_range(const struct ina_engine *eng, uint16_t id, uint32_t *base, uint32_t *n)
{
	unsigned i = __atomic_load_n(&eng->job_of_id[id], __ATOMIC_ACQUIRE);
	if (!i)
		return false;
	const struct job *j = eng->jobs[i - 1];
	for (;;) {
		uint32_t g = __atomic_load_n(&j->gen, __ATOMIC_ACQUIRE);
		bool mine = __atomic_load_n(&j->used, __ATOMIC_RELAXED) &&
			    __atomic_load_n(&j->cfg.id, __ATOMIC_RELAXED) == id;
		*base = __atomic_load_n(&j->base, __ATOMIC_RELAXED);
		*n = __atomic_load_n(&j->cfg.nslots, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (g & 1 || __atomic_load_n(&j->gen, __ATOMIC_RELAXED) != g)
			continue;
		/* the engine never installs past its slots; a reader of a torn
		 * entry must not be led past them either */
		return mine && *base <= eng->nslots && *n <= eng->nslots - *base;
	}
}

struct ina_engine *ina_engine_create(uint32_t nslots, uint16_t max_elems)
{
	if (nslots == 0 || nslots > INA_SLOT_INDEX_MASK || max_elems == 0 || max_elems > INA_MAX_ELEMS)
		return NULL;

	struct ina_engine *eng = calloc(1, sizeof(*eng));
	if (!eng)
		return NULL;
	eng->nslots = nslots;
	eng->max_elems = max_elems;
	/* elements rounded up to 16 keep every block 64-byte aligned */
	eng->block = SLOT_HDR + (size_t)((max_elems + 15u) & ~15u) * sizeof(uint32_t);
	eng->mem = aligned_alloc(64, (size_t)nslots * 2 * eng->block);
	if (!eng->mem) {
		ina_engine_destroy(eng);
		return NULL;
	}
	for (size_t m = 0; m < (size_t)nslots * 2; m++) /* held is read before any job */
		memset(slot_at(eng, m), 0, sizeof(struct slot));
	return eng;
}

void ina_engine_destroy(struct ina_engine *eng)
{
	if (!eng)
		return;
	if (eng->mem)
		clear_slots(eng, 0, eng->nslots);
	for (unsigned i = 0; i < eng->njobs; i++)
		free(eng->jobs[i]);
	free(eng->mem);
	free(eng);
}

/* A peer's ports (ina_addr.nports) within INA's 16 and below 65536. */
static bool ports_ok(const struct ina_addr *a)
{
	return a->nports <= INA_UDP_PORTS && (unsigned)ntohs(a->port) + (a->nports ? a->nports : 1u) <= 65536u;
}

/* Whether two peers share an address: one ip, ports that overlap. */
static bool ports_meet(const struct ina_addr *a, const struct ina_addr *b)
{
	const unsigned pa = ntohs(a->port), pb = ntohs(b->port), na = a->nports ? a->nports : 1u,
		       nb = b->nports ? b->nports : 1u;
	return a->ip == b->ip && pa < pb + nb && pb < pa + na;
}

const char *ina_job_cfg_check(const struct ina_job_cfg *c, uint16_t max_elems)
{
	if (c->fan_in == 0 || c->fan_in > INA_MAX_FANIN)
		return "fan_in must be 1..256";
	if (c->dtype != INA_D_INT32 && c->dtype != INA_D_FP32 && c->dtype != INA_D_BFP32 && c->dtype != INA_D_BF16)
		return "dtype must be int32, fp32, bfp32 or bf16";
	if (c->nslots == 0)
		return "nslots must be at least 1";
	if (c->elems_per_slot == 0 || c->elems_per_slot > max_elems)
		return "elems_per_slot must be 1..the engine's max_elems";
	if (c->outputs == 0 ||
	    (c->outputs & ~(unsigned)(INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_PS | INA_OUT_ACK | INA_OUT_MISS)))
		return "outputs must be a non-empty set of multicast, forward, ps, ack, miss";
	if (c->outputs == INA_OUT_MISS)
		return "output \"miss\" goes with one that sends results on";
	if ((c->outputs & INA_OUT_MISS) && (c->outputs & INA_OUT_ACK))
		return "outputs \"miss\" and \"ack\" exclude each other (a chain's members wait on ACKs)";
	if (c->outputs == INA_OUT_ACK)
		return "output \"ack\" goes with \"multicast\" or \"forward\"";
	if ((c->outputs & INA_OUT_ACK) && (c->outputs & INA_OUT_PS))
		return "outputs \"ack\" and \"ps\" exclude each other";
	if ((c->outputs & INA_OUT_PS) && (c->outputs & INA_OUT_FORWARD))
		return "outputs ps and forward exclude each other";
	if ((c->outputs & INA_OUT_PS) && c->parent.job != c->id)
		return "parent.job must equal the job id (its results come back under it)";
	if (c->idle_miss_us && !(c->outputs & INA_OUT_MISS))
		return "idle_miss_us goes with output \"miss\" (its members take MISS reports)";
	if (c->idle_miss_us > INA_IDLE_MISS_MAX_US)
		return "idle_miss_us must be at most 60 s";
	if (c->upstream_index < -1 || c->upstream_index >= (int)c->fan_in)
		return "upstream_index must be -1 or a contributor index";
	if (c->chain_steps) {
		if (c->chain_steps < 3 || !(c->chain_steps & 1))
			return "chain_steps must be 0 or odd and at least 3 (2m - 1 for m ring members)";
		if (c->outputs != (INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_ACK))
			return "a chain's outputs are multicast, forward and ack (its steps pick)";
		if (c->fan_in < 2 || c->upstream_index != c->fan_in - 1)
			return "a chain's upstream is its last contributor, after at least one worker";
		if (c->nslots < 2)
			return "a chain needs at least 2 slots (a slice holds its slot until the next member has it)";
	}
	for (unsigned i = 0; i < c->fan_in; i++) {
		if (!ports_ok(&c->contributors[i]))
			return "a contributor's ports must be 1..16, below 65536";
		for (unsigned k = i + 1; k < c->fan_in; k++)
			if (ports_meet(&c->contributors[i], &c->contributors[k]))
				return "two contributors have the same address";
	}
	if (!ports_ok(&c->forward.addr) || !ports_ok(&c->parent.addr))
		return "a peer's ports must be 1..16, below 65536";
	return NULL;
}

/* One more entry in the job table; readers (ina_job_entries) see it
 * whole.  Entries stay until the engine goes: a reader may hold one. */
static int add_entry(struct ina_engine *eng)
{
	if (!(eng->jobs[eng->njobs] = calloc(1, sizeof(struct job))))
		return -1;
	__atomic_store_n(&eng->njobs, eng->njobs + 1, __ATOMIC_RELEASE);
	return 0;
}

/* First fit over the ranges of the installed jobs. */
static long find_slot_range(const struct ina_engine *eng, uint32_t n)
{
	uint64_t start = 0;

	for (;;) {
		bool moved = false;
		for (unsigned i = 0; i < eng->njobs; i++) {
			const struct job *j = eng->jobs[i];
			if (!j->used)
				continue;
			uint64_t b = j->base, e = b + j->cfg.nslots;
			if (start < e && b < start + n) {
				start = e;
				moved = true;
			}
		}
		if (!moved)
			break;
	}
	return start + n <= eng->nslots ? (long)start : -1;
}

int ina_job_install(struct ina_engine *eng, const struct ina_job_cfg *cfg, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = NULL;
	if (!eng || !cfg) {
		*why = "no engine or no job config";
		return -EINVAL;
	}
	if ((*why = ina_job_cfg_check(cfg, eng->max_elems)))
		return -EINVAL;
	if (find_job(eng, cfg->id)) {
		*why = "a job with this id is installed";
		return -EEXIST;
	}
	unsigned at = 0;
	while (at < eng->njobs && eng->jobs[at]->used)
		at++;
	if (at == INA_MAX_JOBS) {
		*why = "job table full";
		return -ENOSPC;
	}
	long base = find_slot_range(eng, cfg->nslots);
	if (base < 0) {
		*why = "not enough free slots";
		return -ENOSPC;
	}
	if (at == eng->njobs && add_entry(eng) < 0) {
		*why = "no memory for a job entry";
		return -ENOMEM;
	}
	struct job *j = eng->jobs[at];

	job_write_begin(j);
	uint32_t gen = j->gen;
	memset(j, 0, sizeof(*j));
	j->gen = gen;
	j->cfg = *cfg;
	j->base = (uint32_t)base;
	j->used = true;
	clear_slots(eng, j->base, cfg->nslots);
	__atomic_store_n(&eng->job_of_id[cfg->id], (uint16_t)(at + 1), __ATOMIC_RELEASE);
	job_write_end(j);
	eng->jobs_changes++;
	return 0;
}

int ina_job_remove(struct ina_engine *eng, uint16_t id)
{
	struct job *j = eng ? find_job(eng, id) : NULL;
	if (!j)
		return -ENOENT;
	job_write_begin(j);
	clear_slots(eng, j->base, j->cfg.nslots);
	j->used = false;
	__atomic_store_n(&eng->job_of_id[id], 0, __ATOMIC_RELEASE);
	job_write_end(j);
	eng->jobs_changes++;
	return 0;
}

const struct ina_job_stats *ina_job_stats(const struct ina_engine *eng, uint16_t id)
{
	const struct job *j = find_job(eng, id);
	return j ? &j->st : NULL;
}

const struct ina_job_cfg *ina_job_config(const struct ina_engine *eng, uint16_t id)
{
	const struct job *j = find_job(eng, id);
	return j ? &j->cfg : NULL;
}

int ina_job_free_id(const struct ina_engine *eng, uint16_t from)
{
	for (uint32_t id = from; id <= 65535; id++)
		if (!find_job(eng, (uint16_t)id))
			return (int)id;
	return -1;
}

long ina_job_slot_base(const struct ina_engine *eng, uint16_t id)
{
	uint32_t base, n;
	return job_range(eng, id, &base, &n) ? (long)base : -1;
}

uint32_t ina_job_slots_busy(const struct ina_engine *eng, uint16_t id)
{
	uint32_t base, n, busy = 0;

	if (!job_range(eng, id, &base, &n))
		return 0;
	/* a slot's state byte may change under a reader: a snapshot, but of
	 * this job's slots only */
	for (size_t m = (size_t)base * 2; m < ((size_t)base + n) * 2; m++) {
		uint8_t st = __atomic_load_n(&slot_at(eng, m)->state, __ATOMIC_RELAXED);
		busy += st == SLOT_PARTIAL || st == SLOT_WAIT_PARENT;
	}
	return busy;
}

void ina_engine_group_multicast(struct ina_engine *eng, bool on) { eng->group_multicast = on; }

const uint32_t *ina_engine_jobs_changes(const struct ina_engine *eng) { return &eng->jobs_changes; }

void ina_engine_result_sink(struct ina_engine *eng, const struct ina_result_sink *sink)
{
	eng->sink = sink ? *sink : (struct ina_result_sink){ 0 };
}

void ina_engine_set_time(struct ina_engine *eng, uint64_t now_ns)
{
	eng->now_ms = (uint32_t)(now_ns / 1000000);
	eng->now_us = (uint32_t)(now_ns / 1000);
}

const struct ina_engine_stats *ina_engine_stats(const struct ina_engine *eng) { return &eng->st; }
