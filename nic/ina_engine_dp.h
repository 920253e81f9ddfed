/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's datapath internals, shared by its general path
 * (ina_engine.c) and its fast path (ina_engine_fast.c).  Internal to nic/. */
#ifndef INA_ENGINE_DP_H
#define INA_ENGINE_DP_H

#include <string.h>

#include "ina_engine_state.h"

static inline bool bit_test(const struct slot *s, unsigned c) { return s->bitmap[c / 64] >> (c % 64) & 1; }
static inline void bit_set(struct slot *s, unsigned c) { s->bitmap[c / 64] |= 1ull << (c % 64); }
static inline void bit_clear(struct slot *s, unsigned c) { s->bitmap[c / 64] &= ~(1ull << (c % 64)); }

static inline bool bitmap_empty(const struct slot *s)
{
	uint64_t any = 0;
	for (unsigned i = 0; i < INA_BITMAP_WORDS; i++)
		any |= s->bitmap[i];
	return any == 0;
}

/* Order of slice keys with wrap-around (serial number arithmetic), so the
 * epoch and seq counters may wrap in a long run. */
static inline int key_cmp(const struct ina_hdr *h, const struct slot *s)
{
	int32_t d = (int32_t)(h->epoch - s->epoch);
	if (d == 0)
		d = (int32_t)(h->seq - s->seq);
	return (d > 0) - (d < 0);
}

/* A chain job's step of slice seq decides its fan-in and its outputs
 * (ina_job_cfg.chain_steps); any other job has one of each. */
static inline bool chain_first(const struct ina_job_cfg *c, uint32_t seq)
{
	return c->chain_steps && seq % c->chain_steps == 0; /* no upstream yet */
}

static inline unsigned fan_in_of(const struct ina_job_cfg *c, uint32_t seq) { return c->fan_in - chain_first(c, seq); }

static inline unsigned outputs_of(const struct ina_job_cfg *c, uint32_t seq)
{
	if (!c->chain_steps)
		return c->outputs;
	const unsigned s = seq % c->chain_steps, m = (c->chain_steps + 1u) / 2;
	return INA_OUT_ACK | (s + 1u < c->chain_steps ? INA_OUT_FORWARD : 0) | (s + 1u >= m ? INA_OUT_MULTICAST : 0);
}

/* How long a silence is (idle reports, ina_engine_idle.c): at least
 * idle_miss_us, and INA_IDLE_GAPS times the usual time between the job's
 * DATA.  Where its contributors send only as the results reach them,
 * that is a result's time on the aggregator's own link (330 µs per 8 KiB
 * at 200 Mbit/s); where a shard's contributions share uplinks with other
 * shards', they come in bursts.  Four gaps cost ps-ina with 6 of 8 racks
 * INA 8% loss-free (a ToR's partial queued behind other shards' was
 * re-sent), eight nothing; under 1% loss six to eight did as well. */
#define INA_IDLE_GAPS 8u

static inline uint32_t ina_dp_silence_us(const struct job *j)
{
	const uint32_t g = INA_IDLE_GAPS * j->gap_us;
	return g > j->cfg.idle_miss_us ? g : j->cfg.idle_miss_us;
}

/* A DATA of job j (with idle_miss_us) arrived now: it is not idle.  A
 * gap longer than twice the silence (the compute between calls) counts
 * in the mean as that, so that the mean still grows from 0 to a flow's
 * gap, and the silence stays long for the burst that follows a call's
 * start (counted as one silence, ps-ina with 6 of 8 racks INA took 139
 * ms per call, not 133); and never as more than INA_IDLE_MISS_MAX_US, so
 * that sixteen means fit 32 bits. */
static inline void ina_dp_heard(const struct ina_engine *eng, struct job *j)
{
	uint32_t most = 2 * ina_dp_silence_us(j);
	if (most > INA_IDLE_MISS_MAX_US)
		most = INA_IDLE_MISS_MAX_US;
	const uint32_t since = eng->now_us - j->heard_us;
	j->gap_us += (uint32_t)(((int64_t)(since < most ? since : most) - j->gap_us) / 8);
	j->heard_us = eng->now_us;
}

/* A new round of slot s for the slice (epoch, seq) of count elements: the
 * start of both paths' rounds (ina_dp_start_round). */
static inline void ina_dp_slot_start(const struct ina_engine *eng, struct slot *s, uint32_t epoch, uint32_t seq,
				     uint16_t count)
{
	const size_t len = (size_t)count * sizeof(uint32_t);
	if (eng->sink.get && (s->held || len > eng->sink.min_len))
		slot_renew(eng, s, len);
	memset(s->bitmap, 0, sizeof(s->bitmap));
	s->epoch = epoch;
	s->seq = seq;
	s->nelem = count;
	s->count = 0;
	s->ndata = 0;
	s->flags = 0;
	s->exponent = 0;
	s->acked = 0;
	s->resends = 0;
	s->state = SLOT_PARTIAL;
	s->touched_ms = eng->now_ms;
}

/* Job j's counters and newest epoch for its slot s just completed. */
static inline void ina_dp_count_completion(struct job *j, const struct slot *s)
{
	j->st.completions++;
	if ((int32_t)(s->epoch - j->epoch_hi) > 0)
		j->epoch_hi = s->epoch;
	if (s->flags & INA_F_OVERFLOW)
		j->st.overflows++;
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
	unsigned frames; /* emits counted as frames: a grouped multicast is several */
};

static inline bool unfinished(const struct slot *s) { return s->state == SLOT_PARTIAL || s->state == SLOT_WAIT_PARENT; }

/* ACK, HAVE and MISS name a slice and carry none of it */
static inline bool ina_dp_bare(uint8_t type) { return type == INA_T_ACK || type == INA_T_HAVE || type == INA_T_MISS; }

/* Emit e about (slot, set) `s` of slot index `index` of the job c; inline,
 * so that a caller's constants (the fast path's multicast) fold. */
static inline void ina_dp_emit_fill(struct ina_emit *e, const struct ina_job_cfg *c, const struct slot *s,
				    uint32_t index, unsigned set, uint8_t type, const struct ina_addr *dst,
				    uint16_t job, uint16_t contributor, uint8_t extra_flags)
{
	e->hdr = (struct ina_hdr){
		.version = INA_VERSION,
		.type = type,
		.dtype = c->dtype,
		.flags = s->flags | extra_flags,
		.job = job,
		.contributor = contributor,
		.slot = index | (set ? INA_SLOT_SET_BIT : 0),
		.epoch = s->epoch,
		.seq = s->seq,
		.count = s->nelem,
		.exponent = s->exponent,
	};
	e->payload = (const uint8_t *)slot_data((struct slot *)s);
	e->payload_len = ina_dp_bare(type) ? 0 : (size_t)s->nelem * ina_wire_elem_size(c->dtype);
	e->payload_held = s->held && e->payload_len;
	e->dst = *dst;
	e->dst.port = ina_addr_port(dst, index);
	e->same_as_prev = false;
	e->group = NULL;
}

/* An emit about (slot, set) `s` of the job's slot index `index`. */
void ina_dp_emit_of(struct ctx *x, const struct slot *s, uint32_t index, unsigned set, uint8_t type,
		    const struct ina_addr *dst, uint16_t job, uint16_t contributor, uint8_t extra_flags);
/* A new round of the slot for the packet's slice (x->slot, x->pkt). */
void ina_dp_start_round(struct ctx *x);
/* The slot just reached its fan-in: its data is in wire order; emits
 * what the job's outputs (a chain's step) say. */
void ina_dp_on_complete(struct ctx *x);

#endif
