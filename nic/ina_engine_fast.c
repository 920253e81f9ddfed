/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's fast path: the common DATA packet decided on the wire
 * bytes, everything else handed to the general path (ina_engine.c). */
#include <string.h>

#include "ina_engine_dp.h"
#include "ina_kernels.h"

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint32_t be32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return __builtin_bswap32(v);
}

/* Slot s's completion (on_complete) by packet p, with the context the
 * general path's helpers read; returns the frames emitted.  Out of line:
 * the other packets of a round (all but one at fan-in 32) then carry no
 * context on the stack; what it needs of the packet is read again here,
 * so that less is live across the add. */
static __attribute__((noinline)) unsigned complete_round(struct ina_engine *eng, struct job *j, struct slot *s,
							 const uint8_t *p, struct ina_emits *out)
{
	const uint32_t slot = be32(p + 8);
	struct slot *o = slot_at(eng, ((size_t)j->base + ina_slot_index(slot)) * 2 + !ina_slot_set(slot));
	struct ina_pkt pkt;
	pkt.hdr.epoch = s->epoch; /* the packet's: its slice is the slot's */
	pkt.hdr.seq = s->seq;
	pkt.hdr.count = s->nelem;
	struct ctx x = { .eng = eng,
			 .job = j,
			 .pkt = &pkt,
			 .out = out,
			 .index = ina_slot_index(slot),
			 .set = ina_slot_set(slot),
			 .slot = s,
			 .other = o,
			 .data = slot_data(s),
			 .frames = 0 };
	ina_dp_on_complete(&x);
	return x.frames;
}

/* The usual job: its one output the result to every member, handed over
 * as one emit (ina_engine_group_multicast). */
static inline bool plain_multicast(const struct ina_engine *eng, const struct ina_job_cfg *c)
{
	return eng->group_multicast && c->outputs == INA_OUT_MULTICAST && !c->chain_steps && c->upstream_index < 0;
}

/* What on_complete does for such a job, without its dispatch of outputs
 * (22 instructions an input frame at fan-in 4, 790 in all). */
static __attribute__((noinline)) unsigned complete_multicast(struct job *j, struct slot *s, uint32_t slot,
							     struct ina_emits *out)
{
	ina_dp_count_completion(j, s);
	s->state = SLOT_COMPLETE;
	struct ina_emit *e = &out->e[out->n++];
	ina_dp_emit_fill(e, &j->cfg, s, ina_slot_index(slot), ina_slot_set(slot), INA_T_RESULT, &j->cfg.contributors[0],
			 j->cfg.id, 0, 0);
	e->group = &j->cfg;
	return j->cfg.fan_in;
}

/* Whether a DATA packet's bytes 0-7 (version, type, dtype, flags, job,
 * contributor) and its source are those of a member's int32 or fp32 slice
 * to an installed job that the fast path may take: the checks of
 * rx_data_fast that no other byte of the packet changes. */
static inline __attribute__((always_inline)) bool member_kind(const struct job *j, const uint8_t *p,
							      const struct ina_addr *src)
{
	const uint16_t c = be16(p + 6);
	return j && p[0] == INA_VERSION && p[1] == INA_T_DATA && !(p[3] & ~(INA_F_OVERFLOW | INA_F_CE)) &&
	       p[2] == j->cfg.dtype && (p[2] == INA_D_INT32 || p[2] == INA_D_FP32) &&
	       !(j->cfg.outputs & INA_OUT_MISS) && c < j->cfg.fan_in &&
	       !(j->cfg.chain_steps && (int)c == j->cfg.upstream_index) && ina_addr_from(&j->cfg.contributors[c], src);
}

/* The slice of a packet member_kind holds for, into its slot when the slot
 * collects that slice or is free for it; INA_R_MAX_ with nothing changed
 * for anything else (a bad length or range, a re-send, a reclaim, a slot
 * held for the other set), which the general path decides.  len is at
 * least INA_HDR_LEN: both callers checked it before finding the job. */
static inline __attribute__((always_inline)) enum ina_reason take_slice(struct ina_engine *eng, struct job *j,
									const uint8_t *p, size_t len,
									struct ina_emits *out)
{
	const uint16_t count = be16(p + 20), c = be16(p + 6);
	const uint32_t slot = be32(p + 8), index = ina_slot_index(slot);
	uint16_t exponent_rsv; /* bytes 22-23: none for int32 and fp32 */
	memcpy(&exponent_rsv, p + 22, 2);
	if (exponent_rsv || len - INA_HDR_LEN != (size_t)count * INA_ELEM_SIZE || index >= j->cfg.nslots)
		return INA_R_MAX_;
	const uint32_t epoch = be32(p + 12), seq = be32(p + 16);
	const size_t m = ((size_t)j->base + index) * 2;
	struct slot *s = slot_at(eng, m + ina_slot_set(slot)), *o = slot_at(eng, m + !ina_slot_set(slot));
	if (bit_test(o, c) && unfinished(o))
		return INA_R_MAX_;
	bool fresh = s->state == SLOT_EMPTY;
	if (s->state == SLOT_PARTIAL) {
		/* the slice it collects, with elements added already: its count
		 * and epoch passed the checks below when its round started (the
		 * newest epoch only grows) */
		if (s->epoch != epoch || s->seq != seq || s->nelem != count || bit_test(s, c) || !s->ndata)
			return INA_R_MAX_;
	} else if (count == 0 || count > j->cfg.elems_per_slot || (int32_t)(epoch - j->epoch_hi) > INA_EPOCH_WINDOW) {
		return INA_R_MAX_;
	} else if (s->state == SLOT_COMPLETE) {
		/* a newer slice, every member gone on, and not idle (a reclaim) */
		int32_t d = (int32_t)(epoch - s->epoch);
		if (d < 0 || (d == 0 && (int32_t)(seq - s->seq) <= 0) || !bitmap_empty(s) ||
		    eng->now_ms - s->touched_ms >= (j->cfg.reclaim_ms ? j->cfg.reclaim_ms : INA_RECLAIM_MS))
			return INA_R_MAX_;
		fresh = true;
	} else if (!fresh) {
		return INA_R_MAX_;
	}

	out->n = 0;
	eng->st.rx_packets++;
	j->st.rx_packets++;
	const bool last = (fresh ? 0u : s->count) + 1u == fan_in_of(&j->cfg, seq);
	if (fresh)
		ina_dp_slot_start(eng, s, epoch, seq, count);
	bit_clear(o, c);
	/* add_contribution's steps for elements of int32 or fp32; what does
	 * not need the sum first (less is live across the add's call) */
	const bool first = s->ndata == 0;
	s->exponent = 0; /* int32 and fp32 carry none */
	bit_set(s, c);
	s->count++;
	s->ndata++;
	j->st.contributions++;
	eng->st.accepted++;
	eng->fast_packets++;
	uint32_t *data = slot_data(s), ovf = 0;
	const uint8_t *payload = p + INA_HDR_LEN;
	if (first) {
		if (last)
			memcpy(data, payload, (size_t)count * INA_ELEM_SIZE);
		else
			ina_k_load(data, payload, count);
	} else if (p[2] == INA_D_FP32) {
		(last ? ina_k_add_f32_final : ina_k_add_f32)(data, payload, count);
	} else {
		ovf = (last ? ina_k_add_i32_final : ina_k_add_i32)(data, payload, count);
	}
	if (ovf | (p[3] & INA_F_CE))
		s->flags |= (uint8_t)((ovf ? INA_F_OVERFLOW : 0) | (p[3] & INA_F_CE));
	if (last)
		j->st.emits += plain_multicast(eng, &j->cfg) ? complete_multicast(j, s, be32(p + 8), out)
							     : complete_round(eng, j, s, p, out);
	s->touched_ms = eng->now_ms;
	return INA_OK;
}

/* The packet nearly every one is: an int32 or fp32 slice from a member to
 * a slot that collects that slice or is free for it.  Decided straight on
 * the wire bytes, with the checks of ina_parse, dispatch and on_data
 * reordered so that this case is cheap; it then takes the same steps as
 * on_data.  Anything else (other types and dtypes, joins, refusals,
 * re-sends, reclaims, a slot held for the other set) returns INA_R_MAX_
 * with nothing changed, for the general path to decide.  Both must agree
 * on every packet: test_engine_fast drives them side by side. */
static enum ina_reason rx_data_fast(struct ina_engine *eng, const uint8_t *p, size_t len, const struct ina_addr *src,
				    struct ina_emits *out)
{
	if (len < INA_HDR_LEN)
		return INA_R_MAX_;
	struct job *j = find_job(eng, be16(p + 4));
	if (!member_kind(j, p, src))
		return INA_R_MAX_;
	return take_slice(eng, j, p, len, out);
}

/* Apart from the fast path, so that its frame and saved registers are
 * not paid by every packet */
static __attribute__((noinline)) enum ina_reason rx_general(struct ina_engine *eng, const void *buf, size_t len,
							    const struct ina_addr *src, struct ina_emits *out)
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

enum ina_reason ina_engine_rx(struct ina_engine *eng, const void *buf, size_t len, const struct ina_addr *src,
			      struct ina_emits *out)
{
	if (!eng->general_only) {
		enum ina_reason r = rx_data_fast(eng, buf, len, src, out);
		if (r != INA_R_MAX_)
			return r;
	}
	return rx_general(eng, buf, len, src, out);
}

bool ina_engine_member_kind(const struct ina_engine *eng, const void *buf, size_t len, const struct ina_addr *src)
{
	const uint8_t *p = buf;
	return eng && !eng->general_only && len >= INA_HDR_LEN && member_kind(find_job(eng, be16(p + 4)), p, src);
}

enum ina_reason ina_engine_rx_member(struct ina_engine *eng, const void *buf, size_t len, const struct ina_addr *src,
				     struct ina_emits *out)
{
	const uint8_t *p = buf;
	struct job *j = len >= INA_HDR_LEN ? find_job(eng, be16(p + 4)) : NULL;
	if (j) {
		enum ina_reason r = take_slice(eng, j, p, len, out);
		if (r != INA_R_MAX_)
			return r;
	}
	return rx_general(eng, buf, len, src, out);
}
