/* SPDX-License-Identifier: BSD-3-Clause */
#include "ina_engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ina_kernels.h"

enum slot_state {
	SLOT_EMPTY = 0,	  /* never used since the job was installed */
	SLOT_PARTIAL,	  /* some contributions added, host order */
	SLOT_WAIT_PARENT, /* aggregate complete (wire order), sent to the parent */
	SLOT_COMPLETE,	  /* result stored (wire order) and emitted */
};

/* State of one (slot index, set).  Its slice key (epoch, seq) lets the engine
 * refuse a contribution for another slice rather than add it to the wrong
 * one.  It fills the line in front of the set's elements: one run of memory. */
struct slot {
	uint64_t bitmap[INA_BITMAP_WORDS]; /* contributors counted this round */
	uint32_t epoch;
	uint32_t seq;
	uint16_t count; /* contributions this round */
	uint16_t ndata; /* ... of them with elements (not joins) */
	uint16_t nelem;
	uint8_t state;
	uint8_t acked;	 /* INA_OUT_ACK with FORWARD: the downstream acknowledged */
	uint8_t resends; /* re-sends answered while waiting upstream (ACK, parent) */
	uint8_t flags;	 /* INA_F_OVERFLOW */
	int8_t exponent;
	uint32_t touched_ms; /* engine time of the last packet it took */
};

struct job {
	uint32_t gen; /* odd while rewritten: a reader (stats, telemetry) retries, never mixes two jobs */
	bool used;
	uint32_t base; /* first engine slot index */
	struct ina_job_cfg cfg;
	struct ina_job_stats st;
	uint32_t epoch_hi; /* newest epoch a slot completed (0 at install) */
};

#define SLOT_HDR 64

struct ina_engine {
	uint32_t nslots;
	uint16_t max_elems;
	size_t block; /* bytes per (slot, set): header + elements, 64-byte multiple */
	uint8_t *mem;
	uint8_t job_of_id[65536]; /* jobs[] index + 1, 0 = none */
	struct job jobs[INA_MAX_JOBS];
	struct ina_engine_stats st;
	uint32_t now_ms; /* ina_engine_set_time; wraps after 49 days, compared as a difference */
};

_Static_assert(sizeof(struct slot) <= SLOT_HDR, "slot state must fit its header line");

/* (slot, set) number m = 2 * engine slot index + set */
static struct slot *slot_at(const struct ina_engine *eng, size_t m)
{
	return (struct slot *)(eng->mem + m * eng->block);
}

static uint32_t *slot_data(struct slot *s) { return (uint32_t *)((uint8_t *)s + SLOT_HDR); }

/* Empties the state of a job's slots (the elements need no clearing: the
 * first contribution of a round writes them). */
static void clear_slots(struct ina_engine *eng, uint32_t base, uint32_t n)
{
	for (size_t m = (size_t)base * 2; m < ((size_t)base + n) * 2; m++)
		memset(slot_at(eng, m), 0, sizeof(struct slot));
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
	const struct job *j = &eng->jobs[i - 1];
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
	return eng;
}

void ina_engine_destroy(struct ina_engine *eng)
{
	if (!eng)
		return;
	free(eng->mem);
	free(eng);
}

static struct job *find_job(const struct ina_engine *eng, uint16_t id)
{
	unsigned i = eng->job_of_id[id];
	return i ? (struct job *)&eng->jobs[i - 1] : NULL;
}

static bool addr_eq(const struct ina_addr *a, const struct ina_addr *b) { return a->ip == b->ip && a->port == b->port; }

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
	    (c->outputs & ~(unsigned)(INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_PS | INA_OUT_ACK)))
		return "outputs must be a non-empty set of multicast, forward, ps, ack";
	if (c->outputs == INA_OUT_ACK)
		return "output \"ack\" goes with \"multicast\" or \"forward\"";
	if ((c->outputs & INA_OUT_ACK) && (c->outputs & INA_OUT_PS))
		return "outputs \"ack\" and \"ps\" exclude each other";
	if ((c->outputs & INA_OUT_PS) && (c->outputs & INA_OUT_FORWARD))
		return "outputs ps and forward exclude each other";
	if ((c->outputs & INA_OUT_PS) && c->parent.job != c->id)
		return "parent.job must equal the job id (its results come back under it)";
	if (c->upstream_index < -1 || c->upstream_index >= (int)c->fan_in)
		return "upstream_index must be -1 or a contributor index";
	for (unsigned i = 0; i < c->fan_in; i++)
		for (unsigned k = i + 1; k < c->fan_in; k++)
			if (addr_eq(&c->contributors[i], &c->contributors[k]))
				return "two contributors have the same address";
	return NULL;
}

/* First fit over the ranges of the installed jobs. */
static long find_slot_range(const struct ina_engine *eng, uint32_t n)
{
	uint64_t start = 0;

	for (;;) {
		bool moved = false;
		for (unsigned i = 0; i < INA_MAX_JOBS; i++) {
			const struct job *j = &eng->jobs[i];
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
	struct job *j = NULL;
	for (unsigned i = 0; i < INA_MAX_JOBS && !j; i++)
		if (!eng->jobs[i].used)
			j = &eng->jobs[i];
	if (!j) {
		*why = "job table full";
		return -ENOSPC;
	}
	long base = find_slot_range(eng, cfg->nslots);
	if (base < 0) {
		*why = "not enough free slots";
		return -ENOSPC;
	}

	job_write_begin(j);
	uint32_t gen = j->gen;
	memset(j, 0, sizeof(*j));
	j->gen = gen;
	j->cfg = *cfg;
	j->base = (uint32_t)base;
	j->used = true;
	clear_slots(eng, j->base, cfg->nslots);
	__atomic_store_n(&eng->job_of_id[cfg->id], (uint8_t)(j - eng->jobs + 1), __ATOMIC_RELEASE);
	job_write_end(j);
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

void ina_engine_set_time(struct ina_engine *eng, uint64_t now_ns) { eng->now_ms = (uint32_t)(now_ns / 1000000); }

const struct ina_engine_stats *ina_engine_stats(const struct ina_engine *eng) { return &eng->st; }

/* ---- datapath ---- */

static bool bit_test(const struct slot *s, unsigned c) { return s->bitmap[c / 64] >> (c % 64) & 1; }
static void bit_set(struct slot *s, unsigned c) { s->bitmap[c / 64] |= 1ull << (c % 64); }
static void bit_clear(struct slot *s, unsigned c) { s->bitmap[c / 64] &= ~(1ull << (c % 64)); }

static bool bitmap_empty(const struct slot *s)
{
	uint64_t any = 0;
	for (unsigned i = 0; i < INA_BITMAP_WORDS; i++)
		any |= s->bitmap[i];
	return any == 0;
}

/* Order of slice keys with wrap-around (serial number arithmetic), so the
 * epoch and seq counters may wrap in a long run. */
static int key_cmp(const struct ina_hdr *h, const struct slot *s)
{
	int32_t d = (int32_t)(h->epoch - s->epoch);
	if (d == 0)
		d = (int32_t)(h->seq - s->seq);
	return (d > 0) - (d < 0);
}

struct ctx {
	struct ina_engine *eng;
	struct job *job;
	const struct ina_pkt *pkt;
	struct ina_emits *out;
	uint32_t index; /* slot index within the job */
	unsigned set;
	struct slot *slot, *other;
	uint32_t *data;
};

static void emit(struct ctx *x, uint8_t type, const struct ina_addr *dst, uint16_t job, uint16_t contributor,
		 uint8_t extra_flags)
{
	const struct slot *s = x->slot;
	struct ina_emit *e = &x->out->e[x->out->n++];

	e->hdr = (struct ina_hdr){
		.version = INA_VERSION,
		.type = type,
		.dtype = x->job->cfg.dtype,
		.flags = s->flags | extra_flags,
		.job = job,
		.contributor = contributor,
		.slot = x->index | (x->set ? INA_SLOT_SET_BIT : 0),
		.epoch = s->epoch,
		.seq = s->seq,
		.count = s->nelem,
		.exponent = s->exponent,
	};
	e->payload = (const uint8_t *)x->data;
	e->payload_len = type == INA_T_ACK ? 0 : (size_t)s->nelem * ina_wire_elem_size(x->job->cfg.dtype);
	e->dst = *dst;
	e->same_as_prev = false;
}

/* The same frame to every contributor but the upstream: the first emit
 * built field by field, the others copied from it. */
static void emit_to_contributors(struct ctx *x, uint8_t type, uint8_t flags)
{
	const struct ina_job_cfg *c = &x->job->cfg;
	const struct ina_emit *first = NULL;
	for (unsigned i = 0; i < c->fan_in; i++) {
		if ((int)i == c->upstream_index)
			continue;
		if (!first) {
			first = &x->out->e[x->out->n];
			emit(x, type, &c->contributors[i], c->id, (uint16_t)i, flags);
			continue;
		}
		struct ina_emit *e = &x->out->e[x->out->n++];
		*e = *first;
		e->hdr.contributor = (uint16_t)i;
		e->dst = c->contributors[i];
		e->same_as_prev = true;
	}
}

static void emit_ack_upstream(struct ctx *x)
{
	const struct ina_job_cfg *c = &x->job->cfg;
	emit(x, INA_T_ACK, &c->contributors[c->upstream_index], c->upstream_job, INA_CONTRIB_UPSTREAM, 0);
}

/* the downstream's ACK, passed to the contributors (not the upstream) */
static void emit_ack_contributors(struct ctx *x) { emit_to_contributors(x, INA_T_ACK, 0); }

static void emit_result_to(struct ctx *x, unsigned c, uint8_t flags)
{
	emit(x, INA_T_RESULT, &x->job->cfg.contributors[c], x->job->cfg.id, (uint16_t)c, flags);
}

static void emit_multicast(struct ctx *x) { emit_to_contributors(x, INA_T_RESULT, 0); }

static void emit_peer(struct ctx *x, const struct ina_peer *p, uint8_t flags)
{
	emit(x, INA_T_DATA, &p->addr, p->job, p->contributor, flags);
}

/* The slot just reached fan_in: its data is in wire order. */
static void on_complete(struct ctx *x)
{
	const struct ina_job_cfg *c = &x->job->cfg;

	x->job->st.completions++;
	if ((int32_t)(x->slot->epoch - x->job->epoch_hi) > 0)
		x->job->epoch_hi = x->slot->epoch;
	if (x->slot->flags & INA_F_OVERFLOW)
		x->job->st.overflows++;
	if (c->outputs & INA_OUT_PS) {
		x->slot->state = SLOT_WAIT_PARENT;
		emit_peer(x, &c->parent, 0);
		return;
	}
	x->slot->state = SLOT_COMPLETE;
	if (c->outputs & INA_OUT_MULTICAST)
		emit_multicast(x);
	if (c->outputs & INA_OUT_FORWARD)
		emit_peer(x, &c->forward, 0);
	if ((c->outputs & INA_OUT_ACK) && c->upstream_index >= 0)
		emit_ack_upstream(x);
}

/* bf16 slots add in binary32 and round once, at completion. */
static void add_bf16(struct ctx *x, unsigned n, bool first, bool last)
{
	if (first && last) {
		memcpy(x->data, x->pkt->payload, (size_t)n * 2);
		return;
	}
	if (first)
		ina_k_load_bf16(x->data, x->pkt->payload, n);
	else
		(last ? ina_k_add_bf16_final : ina_k_add_bf16)(x->data, x->pkt->payload, n);
}

static void add_contribution(struct ctx *x, unsigned c)
{
	const struct ina_pkt *p = x->pkt;
	struct slot *s = x->slot;
	unsigned n = p->hdr.count;
	bool last = s->count + 1u == x->job->cfg.fan_in;
	uint8_t dtype = x->job->cfg.dtype;
	uint32_t ovf = 0;

	if (p->hdr.flags & INA_F_JOIN) {
		/* counted, nothing added; the last contribution turns the
		 * partial into a result in wire order, so a join does too */
		if (last && s->ndata)
			(dtype == INA_D_BF16 ? ina_k_to_wire_bf16 : ina_k_to_wire)(x->data, n);
		else if (last)
			memset(x->data, 0, (size_t)n * ina_wire_elem_size(dtype));
		bit_set(s, c);
		s->count++;
		x->job->st.contributions++;
		if (last)
			on_complete(x);
		return;
	}
	if (dtype == INA_D_BF16) {
		add_bf16(x, n, s->ndata == 0, last);
	} else if (s->ndata == 0) {
		if (last)
			memcpy(x->data, p->payload, (size_t)n * INA_ELEM_SIZE);
		else
			ina_k_load(x->data, p->payload, n);
	} else if (dtype == INA_D_FP32) {
		(last ? ina_k_add_f32_final : ina_k_add_f32)(x->data, p->payload, n);
	} else {
		ovf = (last ? ina_k_add_i32_final : ina_k_add_i32)(x->data, p->payload, n);
	}
	if (ovf)
		s->flags |= INA_F_OVERFLOW;
	if (p->hdr.exponent > s->exponent || s->ndata == 0)
		s->exponent = p->hdr.exponent;
	bit_set(s, c);
	s->count++;
	s->ndata++;
	x->job->st.contributions++;
	if (last)
		on_complete(x);
}

static void start_round(struct ctx *x)
{
	struct slot *s = x->slot;

	memset(s->bitmap, 0, sizeof(s->bitmap));
	s->epoch = x->pkt->hdr.epoch;
	s->seq = x->pkt->hdr.seq;
	s->nelem = x->pkt->hdr.count;
	s->count = 0;
	s->ndata = 0;
	s->flags = 0;
	s->exponent = 0;
	s->acked = 0;
	s->resends = 0;
	s->state = SLOT_PARTIAL;
	s->touched_ms = x->eng->now_ms;
}

static bool unfinished(const struct slot *s) { return s->state == SLOT_PARTIAL || s->state == SLOT_WAIT_PARENT; }

static bool newer_epoch(const struct ina_hdr *h, const struct slot *s) { return (int32_t)(h->epoch - s->epoch) > 0; }

/* Nothing was taken into the slot for the job's reclaim time: its round
 * is abandoned (a member died or a call failed), or a forged slice holds
 * it.  A living member re-sends well within that time. */
static bool idle(const struct ctx *x, const struct slot *s)
{
	uint32_t limit = x->job->cfg.reclaim_ms ? x->job->cfg.reclaim_ms : INA_RECLAIM_MS;
	return x->eng->now_ms - s->touched_ms >= limit;
}

/* Whether a member's slice with another key may take over the slot from
 * the round it holds (key order cmp), which is then lost to its members.
 * A newer epoch under an unfinished round means the members moved to the
 * next call without finishing this one: no member can finish a call while
 * one of its slices is unfinished, so the call failed part-way.  Any other
 * takes an idle slot only: an older slice one holding a forged newer key,
 * a newer one a finished slot whose stragglers never moved on. */
static bool may_reclaim(const struct ctx *x, const struct slot *s, int cmp)
{
	if (unfinished(s))
		return newer_epoch(&x->pkt->hdr, s) || idle(x, s);
	return cmp > 0 && idle(x, s); /* finished: an older slice is only stale */
}

static void reclaim(struct ctx *x, struct slot *s)
{
	x->job->st.reclaimed++;
	memset(s, 0, sizeof(*s)); /* SLOT_EMPTY */
}

/* Whether this re-send upstream is its round's first: the workers time out
 * together, and a rack of H would send it H times on the scarce uplink. */
static bool first_of_round(struct ctx *x)
{
	return x->slot->resends++ % (x->job->cfg.fan_in - (x->job->cfg.upstream_index >= 0)) == 0;
}

/* A contributor re-sent a slice the slot has finished: send again what it
 * would have caused, from the stored bytes. */
static void answer_retransmission(struct ctx *x, unsigned c)
{
	const struct ina_job_cfg *cfg = &x->job->cfg;

	x->job->st.retransmits++;
	x->slot->touched_ms = x->eng->now_ms;	  /* a straggler still wants it */
	if (x->slot->state == SLOT_WAIT_PARENT) { /* the partial or the parent's answer was lost */
		if (first_of_round(x))
			emit_peer(x, &cfg->parent, INA_F_RETX);
		return;
	}
	if (cfg->outputs & INA_OUT_ACK) {
		if ((int)c == cfg->upstream_index) { /* our ACK was lost */
			emit_ack_upstream(x);
			return;
		}
		if (cfg->outputs & INA_OUT_MULTICAST)
			emit_result_to(x, c, INA_F_RETX);
		if (!(cfg->outputs & INA_OUT_FORWARD))
			return;
		if (x->slot->acked) { /* the downstream has it: tell this contributor */
			emit(x, INA_T_ACK, &cfg->contributors[c], cfg->id, (uint16_t)c, 0);
			return;
		}
		if (first_of_round(x)) /* the forward or its ACK was lost */
			emit_peer(x, &cfg->forward, INA_F_RETX);
		return;
	}
	/* a PS job's complete slot holds the parent's result, which went to
	 * every contributor like a multicast's */
	if ((cfg->outputs & (INA_OUT_MULTICAST | INA_OUT_PS)) && (int)c != cfg->upstream_index)
		emit_result_to(x, c, INA_F_RETX);
	if (cfg->outputs & INA_OUT_FORWARD)
		emit_peer(x, &cfg->forward, INA_F_RETX);
}

static enum ina_reason on_data(struct ctx *x, unsigned c)
{
	struct slot *s = x->slot;
	int cmp = key_cmp(&x->pkt->hdr, s);

	if ((int32_t)(x->pkt->hdr.epoch - x->job->epoch_hi) > INA_EPOCH_WINDOW)
		return INA_R_EPOCH_AHEAD;
	/* A contributor uses the other set only after that set finished for
	 * it; while its contribution there is still pending, refuse this one
	 * (clearing its bit there would let it be counted twice) — unless that
	 * round belongs to a call the members have left. */
	bool abandoned = false; /* given up once this slice is taken: a refusal changes nothing */
	if (bit_test(x->other, c) && unfinished(x->other)) {
		if (!newer_epoch(&x->pkt->hdr, x->other))
			return INA_R_SLOT_BUSY;
		abandoned = true;
	}
	bool take_over = s->state != SLOT_EMPTY && cmp != 0 && may_reclaim(x, s, cmp);

	switch (take_over ? SLOT_EMPTY : s->state) {
	case SLOT_EMPTY:
		if (take_over)
			reclaim(x, s);
		start_round(x);
		break;
	case SLOT_PARTIAL:
		if (cmp < 0)
			return INA_R_STALE;
		if (cmp > 0)
			return INA_R_SLOT_BUSY;
		if (x->pkt->hdr.count != s->nelem)
			return INA_R_COUNT_MISMATCH;
		if (bit_test(s, c))
			return INA_R_DUPLICATE;
		break;
	default: /* WAIT_PARENT, COMPLETE */
		if (cmp < 0)
			return INA_R_STALE;
		if (cmp == 0) {
			/* bit clear: the sender already moved to the other set */
			if (!bit_test(s, c))
				return INA_R_STALE;
			if (x->pkt->hdr.count != s->nelem)
				return INA_R_COUNT_MISMATCH;
			if (abandoned)
				reclaim(x, x->other);
			answer_retransmission(x, c);
			return INA_OK;
		}
		/* Newer slice: only once every contributor has moved on, so a
		 * straggler can still get the stored result. */
		if (!bitmap_empty(s))
			return INA_R_SLOT_BUSY;
		start_round(x);
		break;
	}
	if (abandoned)
		reclaim(x, x->other);
	bit_clear(x->other, c);
	add_contribution(x, c);
	s->touched_ms = x->eng->now_ms;
	return INA_OK;
}

static enum ina_reason on_parent_result(struct ctx *x, const struct ina_addr *src)
{
	const struct ina_job_cfg *cfg = &x->job->cfg;
	struct slot *s = x->slot;
	int cmp = key_cmp(&x->pkt->hdr, s);

	if (!(cfg->outputs & INA_OUT_PS))
		return INA_R_UNEXPECTED_TYPE;
	if (!addr_eq(src, &cfg->parent.addr))
		return INA_R_NOT_MEMBER;
	if (s->state == SLOT_EMPTY)
		return INA_R_NOT_READY;
	if (cmp < 0)
		return INA_R_STALE;
	if (cmp > 0 || s->state == SLOT_PARTIAL)
		return INA_R_NOT_READY;
	if (s->state == SLOT_COMPLETE)
		return INA_R_DUPLICATE;
	if (x->pkt->hdr.count != s->nelem)
		return INA_R_COUNT_MISMATCH;
	memcpy(x->data, x->pkt->payload, x->pkt->payload_len);
	s->exponent = x->pkt->hdr.exponent;
	s->flags |= x->pkt->hdr.flags & INA_F_OVERFLOW;
	s->state = SLOT_COMPLETE;
	emit_multicast(x);
	return INA_OK;
}

/* The downstream member acknowledges a forwarded slice. */
static enum ina_reason on_ack(struct ctx *x, const struct ina_addr *src)
{
	const struct ina_job_cfg *cfg = &x->job->cfg;
	struct slot *s = x->slot;

	if ((cfg->outputs & (INA_OUT_ACK | INA_OUT_FORWARD)) != (INA_OUT_ACK | INA_OUT_FORWARD))
		return INA_R_UNEXPECTED_TYPE;
	if (!addr_eq(src, &cfg->forward.addr))
		return INA_R_NOT_MEMBER;
	if (s->state == SLOT_EMPTY)
		return INA_R_NOT_READY;
	int cmp = key_cmp(&x->pkt->hdr, s);
	if (cmp < 0)
		return INA_R_STALE;
	if (cmp > 0 || s->state != SLOT_COMPLETE)
		return INA_R_NOT_READY;
	if (s->acked)
		return INA_R_DUPLICATE;
	s->acked = 1;
	emit_ack_contributors(x);
	return INA_OK;
}

static enum ina_reason on_pull(struct ctx *x, unsigned c)
{
	const struct slot *s = x->slot;
	int cmp = key_cmp(&x->pkt->hdr, s);

	if (s->state != SLOT_EMPTY && cmp < 0)
		return INA_R_STALE;
	if (s->state != SLOT_COMPLETE || cmp != 0)
		return INA_R_NOT_READY;
	x->job->st.retransmits++;
	emit_result_to(x, c, INA_F_RETX);
	return INA_OK;
}

/* Maps the header's contributor id to an index and checks the source. */
static enum ina_reason member_index(const struct job *j, const struct ina_hdr *h, const struct ina_addr *src,
				    unsigned *c)
{
	unsigned i = h->contributor;

	if (i == INA_CONTRIB_UPSTREAM && j->cfg.upstream_index >= 0)
		i = (unsigned)j->cfg.upstream_index;
	if (i >= j->cfg.fan_in)
		return INA_R_BAD_CONTRIBUTOR;
	if (!addr_eq(src, &j->cfg.contributors[i]))
		return INA_R_NOT_MEMBER;
	*c = i;
	return INA_OK;
}

static enum ina_reason dispatch(struct ctx *x, const struct ina_addr *src)
{
	const struct ina_hdr *h = &x->pkt->hdr;
	const struct ina_job_cfg *cfg = &x->job->cfg;
	enum ina_reason r;
	unsigned c;

	if (h->type != INA_T_DATA && h->type != INA_T_PULL && h->type != INA_T_RESULT && h->type != INA_T_ACK)
		return INA_R_UNEXPECTED_TYPE;
	if (h->dtype != cfg->dtype)
		return INA_R_DTYPE_MISMATCH;
	if (h->count > cfg->elems_per_slot)
		return INA_R_COUNT_EXCEEDS_SLOT;
	x->index = ina_slot_index(h->slot);
	if (x->index >= cfg->nslots)
		return INA_R_SLOT_OUT_OF_RANGE;
	x->set = ina_slot_set(h->slot);
	size_t m = ((size_t)x->job->base + x->index) * 2;
	x->slot = slot_at(x->eng, m + x->set);
	x->other = slot_at(x->eng, m + !x->set);
	x->data = slot_data(x->slot);

	if (h->type == INA_T_RESULT)
		return on_parent_result(x, src);
	if (h->type == INA_T_ACK)
		return on_ack(x, src);
	if ((r = member_index(x->job, h, src, &c)) != INA_OK)
		return r;
	return h->type == INA_T_DATA ? on_data(x, c) : on_pull(x, c);
}

enum ina_reason ina_engine_process(struct ina_engine *eng, const struct ina_pkt *pkt, const struct ina_addr *src,
				   struct ina_emits *out)
{
	struct ctx x; /* filled field by field: zeroing it showed in profiles */
	enum ina_reason r;

	x.eng = eng;
	x.pkt = pkt;
	x.out = out;

	out->n = 0;
	eng->st.rx_packets++;
	x.job = find_job(eng, pkt->hdr.job);
	if (!x.job) {
		eng->st.drops[INA_R_UNKNOWN_JOB]++;
		return INA_R_UNKNOWN_JOB;
	}
	x.job->st.rx_packets++;
	r = dispatch(&x, src);
	if (r != INA_OK) {
		eng->st.drops[r]++;
		x.job->st.drops[r]++;
		return r;
	}
	eng->st.accepted++;
	x.job->st.emits += out->n;
	return INA_OK;
}

enum ina_reason ina_engine_rx(struct ina_engine *eng, const void *buf, size_t len, const struct ina_addr *src,
			      struct ina_emits *out)
{
	struct ina_pkt pkt;
	enum ina_reason r = ina_parse(buf, len, &pkt);

	if (r != INA_OK) {
		out->n = 0;
		eng->st.rx_packets++;
		eng->st.drops[r]++;
		return r;
	}
	return ina_engine_process(eng, &pkt, src, out);
}
