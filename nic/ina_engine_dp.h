/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's datapath internals, shared by its general path
 * (ina_engine.c) and its fast path (ina_engine_fast.c).  Internal to nic/. */
#ifndef INA_ENGINE_DP_H
#define INA_ENGINE_DP_H

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

/* A new round of the slot for the packet's slice (x->slot, x->pkt). */
void ina_dp_start_round(struct ctx *x);
/* The slot just reached its fan-in: its data is in wire order; emits
 * what the job's outputs (a chain's step) say. */
void ina_dp_on_complete(struct ctx *x);

#endif
