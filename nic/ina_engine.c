/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's datapath: a packet in, its slot's state moved on, emits out
 * (semantics: docs/ENGINE.md). */
#include <string.h>

#include "ina_engine_dp.h"
#include "ina_kernels.h"

void ina_dp_emit_of(struct ctx *x, const struct slot *s, uint32_t index, unsigned set, uint8_t type,
		    const struct ina_addr *dst, uint16_t job, uint16_t contributor, uint8_t extra_flags)
{
	ina_dp_emit_fill(&x->out->e[x->out->n++], &x->job->cfg, s, index, set, type, dst, job, contributor,
			 extra_flags);
	x->frames++;
}

static void emit(struct ctx *x, uint8_t type, const struct ina_addr *dst, uint16_t job, uint16_t contributor,
		 uint8_t extra_flags)
{
	ina_dp_emit_of(x, x->slot, x->index, x->set, type, dst, job, contributor, extra_flags);
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
			if (x->eng->group_multicast) {
				x->out->e[x->out->n - 1].group = c;
				x->frames += c->fan_in - 1u - (c->upstream_index >= 0);
				return;
			}
			continue;
		}
		struct ina_emit *e = &x->out->e[x->out->n++];
		*e = *first;
		e->hdr.contributor = (uint16_t)i;
		e->dst = c->contributors[i];
		e->dst.port = ina_addr_port(&c->contributors[i], x->index);
		e->same_as_prev = true;
		x->frames++;
	}
}

/* A chain's slice seq is slice seq + d at the member d hops on (its
 * forward, d = 1) or back (its ACK, d = -1), in slot index seq % nslots
 * there too (and at that index's port of the member, `to`); the set there
 * is found by the key. */
static void chain_shift(struct ctx *x, int d, const struct ina_addr *to)
{
	if (!x->job->cfg.chain_steps)
		return;
	struct ina_emit *e = &x->out->e[x->out->n - 1];
	e->hdr.seq += (uint32_t)d;
	e->hdr.slot = e->hdr.seq % x->job->cfg.nslots;
	e->dst.port = ina_addr_port(to, e->hdr.slot);
}

static void emit_ack_upstream(struct ctx *x)
{
	const struct ina_job_cfg *c = &x->job->cfg;
	emit(x, INA_T_ACK, &c->contributors[c->upstream_index], c->upstream_job, INA_CONTRIB_UPSTREAM, 0);
	chain_shift(x, -1, &c->contributors[c->upstream_index]);
}

/* the downstream's ACK, passed to the contributors (not the upstream) */
static void emit_ack_contributors(struct ctx *x) { emit_to_contributors(x, INA_T_ACK, 0); }

/* A re-sent contribution that leaves its slot waiting for others: the
 * sender learns its contribution is here within a queue's round trip, so
 * a re-send that gets no answer was lost (ring/hcl_ina_win.c).  Not in an
 * agent-ring chain (INA_OUT_ACK: its members wait on timers and ACKs) nor
 * to the upstream member. */
static bool answers_held(const struct ctx *x, unsigned c)
{
	const struct ina_job_cfg *cfg = &x->job->cfg;
	return (x->pkt->hdr.flags & INA_F_RETX) && !(cfg->outputs & INA_OUT_ACK) && (int)c != cfg->upstream_index;
}

static void emit_have(struct ctx *x, unsigned c)
{
	emit(x, INA_T_HAVE, &x->job->cfg.contributors[c], x->job->cfg.id, (uint16_t)c, 0);
}

static void answer_held(struct ctx *x, unsigned c)
{
	x->job->st.retransmits++;
	emit_have(x, c);
}

static void emit_result_to(struct ctx *x, unsigned c, uint8_t flags)
{
	emit(x, INA_T_RESULT, &x->job->cfg.contributors[c], x->job->cfg.id, (uint16_t)c, flags);
}

static void emit_multicast(struct ctx *x) { emit_to_contributors(x, INA_T_RESULT, 0); }

static void emit_peer(struct ctx *x, const struct ina_peer *p, uint8_t flags)
{
	emit(x, INA_T_DATA, &p->addr, p->job, p->contributor, flags);
	if (p == &x->job->cfg.forward)
		chain_shift(x, 1, &p->addr);
}

/* The slot just reached fan_in: its data is in wire order. */
void ina_dp_on_complete(struct ctx *x)
{
	const struct ina_job_cfg *c = &x->job->cfg;
	const unsigned outs = outputs_of(c, x->slot->seq);

	ina_dp_count_completion(x->job, x->slot);
	if (c->outputs & INA_OUT_PS) {
		x->slot->state = SLOT_WAIT_PARENT;
		emit_peer(x, &c->parent, 0);
		return;
	}
	x->slot->state = SLOT_COMPLETE;
	if (outs & INA_OUT_MULTICAST)
		emit_multicast(x);
	if (outs & INA_OUT_FORWARD)
		emit_peer(x, &c->forward, 0);
	if ((outs & INA_OUT_ACK) && c->upstream_index >= 0 && !chain_first(c, x->slot->seq))
		emit_ack_upstream(x);
	/* a chain's upstream is done with the slice once it has the ACK
	 * (a re-send is answered by the key): the slot's next slice may be
	 * one it has no part in, a step 0 */
	if (c->chain_steps)
		bit_clear(x->slot, (unsigned)c->upstream_index);
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
	bool last = s->count + 1u == fan_in_of(&x->job->cfg, s->seq);
	uint8_t dtype = x->job->cfg.dtype;
	uint32_t ovf = 0;

	if (p->hdr.flags & INA_F_JOIN) {
		/* counted, nothing added; the last contribution turns the
		 * partial into a result in wire order, so a join does too */
		if (last && s->ndata)
			(dtype == INA_D_BF16 ? ina_k_to_wire_bf16 : ina_k_to_wire)(x->data, n);
		else if (last)
			memset(x->data, 0, (size_t)n * ina_wire_elem_size(dtype));
		s->flags |= p->hdr.flags & INA_F_CE;
		bit_set(s, c);
		s->count++;
		x->job->st.contributions++;
		if (last)
			ina_dp_on_complete(x);
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
	s->flags |= (uint8_t)((ovf ? INA_F_OVERFLOW : 0) | (p->hdr.flags & INA_F_CE));
	if (p->hdr.exponent > s->exponent || s->ndata == 0)
		s->exponent = p->hdr.exponent;
	bit_set(s, c);
	s->count++;
	s->ndata++;
	x->job->st.contributions++;
	if (last)
		ina_dp_on_complete(x);
}

void ina_dp_start_round(struct ctx *x)
{
	ina_dp_slot_start(x->eng, x->slot, x->pkt->hdr.epoch, x->pkt->hdr.seq, x->pkt->hdr.count);
	x->data = slot_data(x->slot);
}

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
	slot_release(x->eng, s);
	memset(s, 0, sizeof(*s)); /* SLOT_EMPTY */
}

/* A re-send that finds the slot quiet this long (no packet taken since)
 * goes upstream whatever the count of the round (first_of_round). */
#define INA_UP_QUIET_MS 2

/* Whether this re-send goes upstream: the round's first, for the workers
 * time out together and a rack of H would send it H times on the scarce
 * uplink; or the first after a quiet spell (quiet): then the one sent up
 * was lost too, and the others have backed their timers off.  Counting
 * alone, a lone worker's re-sends went up one in H: 64 hosts behind 8 INA
 * ToRs at 1% loss waited 250 ms and more on a slice whose parent's answer
 * was lost twice (docs/SCALE.md). */
static bool first_of_round(struct ctx *x, bool quiet)
{
	const bool first = x->slot->resends++ % (x->job->cfg.fan_in - (x->job->cfg.upstream_index >= 0)) == 0;
	return first || quiet;
}

/* A contributor re-sent a slice the slot has finished: send again what it
 * would have caused, from the stored bytes. */
static void answer_retransmission(struct ctx *x, unsigned c)
{
	const struct ina_job_cfg *cfg = &x->job->cfg;
	const unsigned outs = outputs_of(cfg, x->slot->seq);

	const bool quiet = x->eng->now_ms - x->slot->touched_ms >= INA_UP_QUIET_MS;
	x->job->st.retransmits++;
	x->slot->touched_ms = x->eng->now_ms;	  /* a straggler still wants it */
	if (x->slot->state == SLOT_WAIT_PARENT) { /* the partial or the parent's answer was lost */
		if (first_of_round(x, quiet))
			emit_peer(x, &cfg->parent, INA_F_RETX);
		/* held here until the parent answers: the sender waits on its timer */
		if (answers_held(x, c))
			emit_have(x, c); /* counted above */
		return;
	}
	if (outs & INA_OUT_ACK) {
		if ((int)c == cfg->upstream_index) { /* our ACK was lost */
			emit_ack_upstream(x);
			return;
		}
		if (outs & INA_OUT_MULTICAST)
			emit_result_to(x, c, INA_F_RETX);
		if (!(outs & INA_OUT_FORWARD))
			return;
		if (x->slot->acked) { /* the downstream has it: tell this contributor */
			emit(x, INA_T_ACK, &cfg->contributors[c], cfg->id, (uint16_t)c, 0);
			return;
		}
		if (first_of_round(x, quiet)) /* the forward or its ACK was lost */
			emit_peer(x, &cfg->forward, INA_F_RETX);
		return;
	}
	/* a PS job's complete slot holds the parent's result, which went to
	 * every contributor like a multicast's */
	if ((outs & (INA_OUT_MULTICAST | INA_OUT_PS)) && (int)c != cfg->upstream_index)
		emit_result_to(x, c, INA_F_RETX);
	if (outs & INA_OUT_FORWARD)
		emit_peer(x, &cfg->forward, INA_F_RETX);
}

/* The job's (slot, set) at slot index `index` that collects slice
 * (epoch, seq), or NULL. */
static struct slot *collecting(const struct ctx *x, uint32_t index, uint32_t epoch, uint32_t seq, unsigned *set)
{
	const size_t m = ((size_t)x->job->base + index) * 2;
	for (unsigned t = 0; t < 2; t++) {
		struct slot *s = slot_at(x->eng, m + t);
		if (s->state == SLOT_PARTIAL && s->epoch == epoch && s->seq == seq) {
			*set = t;
			return s;
		}
	}
	return NULL;
}

static void emit_miss(struct ctx *x, unsigned c, const struct slot *s, uint32_t index, unsigned set)
{
	x->job->st.misses++;
	ina_dp_emit_of(x, s, index, set, INA_T_MISS, &x->job->cfg.contributors[c], x->job->cfg.id, (uint16_t)c, 0);
}

/* INA_OUT_MISS: a member sends slice k to slot index i, then k + 1 to the
 * next index (wrapping); the way to the aggregator keeps order.  So when
 * its k + 1 is here while slice k collects here without it, its k was
 * lost: tell it now, where its own timer or RACK would wait for the
 * slowest member's slices (docs/ENGINE.md, "Gap reports").  Checked when
 * a first send arrives (its predecessor) and when a round starts (the
 * members already in its successor). */
static void report_misses(struct ctx *x, unsigned c, bool started)
{
	const struct ina_job_cfg *cfg = &x->job->cfg;
	const struct ina_hdr *h = &x->pkt->hdr;
	unsigned set;
	if (!(cfg->outputs & INA_OUT_MISS) || (h->flags & INA_F_RETX) || cfg->nslots < 2)
		return;
	const uint32_t prev = x->index ? x->index - 1 : cfg->nslots - 1;
	struct slot *s = collecting(x, prev, h->epoch, h->seq - 1, &set);
	if (s && (int)c != cfg->upstream_index && !bit_test(s, c))
		emit_miss(x, c, s, prev, set);
	const uint32_t next = x->index + 1 < cfg->nslots ? x->index + 1 : 0;
	if (!started || !(s = collecting(x, next, h->epoch, h->seq + 1, &set)))
		return;
	for (unsigned i = 0; i < cfg->fan_in; i++)
		if (i != c && (int)i != cfg->upstream_index && bit_test(s, i))
			emit_miss(x, i, x->slot, x->index, x->set);
}

/* The parent has this ToR's next partial and not this one: if it went,
 * it was lost (or crossed the report: the partials go up as they
 * complete, not in order); send it again. */
static enum ina_reason on_miss(struct ctx *x, const struct ina_addr *src)
{
	const struct ina_job_cfg *cfg = &x->job->cfg;
	if (!(cfg->outputs & INA_OUT_PS))
		return INA_R_UNEXPECTED_TYPE;
	if (!ina_addr_from(&cfg->parent.addr, src))
		return INA_R_NOT_MEMBER;
	if (x->slot->state != SLOT_WAIT_PARENT || key_cmp(&x->pkt->hdr, x->slot) != 0)
		return INA_OK; /* not complete here yet (it goes up when it is), or answered since */
	x->job->st.retransmits++;
	emit_peer(x, &cfg->parent, INA_F_RETX);
	return INA_OK;
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
	bool started = true; /* a new round for this slice */

	switch (take_over ? SLOT_EMPTY : s->state) {
	case SLOT_EMPTY:
		if (take_over)
			reclaim(x, s);
		ina_dp_start_round(x);
		break;
	case SLOT_PARTIAL:
		if (cmp < 0)
			return INA_R_STALE;
		if (cmp > 0)
			return INA_R_SLOT_BUSY;
		if (x->pkt->hdr.count != s->nelem)
			return INA_R_COUNT_MISMATCH;
		if (bit_test(s, c)) {
			if (!answers_held(x, c))
				return INA_R_DUPLICATE;
			answer_held(x, c);
			return INA_OK;
		}
		started = false;
		break;
	default: /* WAIT_PARENT, COMPLETE */
		if (cmp < 0)
			return INA_R_STALE;
		if (cmp == 0) {
			/* bit clear: the sender already moved to the other set
			 * (a chain's upstream's is cleared at completion) */
			if (!bit_test(s, c) && !(x->job->cfg.chain_steps && (int)c == x->job->cfg.upstream_index))
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
		ina_dp_start_round(x);
		break;
	}
	if (abandoned)
		reclaim(x, x->other);
	bit_clear(x->other, c);
	add_contribution(x, c);
	s->touched_ms = x->eng->now_ms;
	if (s->state == SLOT_PARTIAL && answers_held(x, c))
		answer_held(x, c);
	report_misses(x, c, started);
	return INA_OK;
}

static enum ina_reason on_parent_result(struct ctx *x, const struct ina_addr *src)
{
	const struct ina_job_cfg *cfg = &x->job->cfg;
	struct slot *s = x->slot;
	int cmp = key_cmp(&x->pkt->hdr, s);

	if (!(cfg->outputs & INA_OUT_PS))
		return INA_R_UNEXPECTED_TYPE;
	if (!ina_addr_from(&cfg->parent.addr, src))
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
	if (s->held) /* the partial may still be on its way up from it */
		slot_renew(x->eng, s, (size_t)s->nelem * sizeof(uint32_t));
	x->data = slot_data(s);
	memcpy(x->data, x->pkt->payload, x->pkt->payload_len);
	s->exponent = x->pkt->hdr.exponent;
	s->flags |= x->pkt->hdr.flags & (INA_F_OVERFLOW | INA_F_CE);
	s->state = SLOT_COMPLETE;
	emit_multicast(x);
	return INA_OK;
}

/* The downstream member acknowledges a forwarded slice. */
static enum ina_reason on_ack(struct ctx *x, const struct ina_addr *src)
{
	const struct ina_job_cfg *cfg = &x->job->cfg;
	struct slot *s = x->slot;

	if ((outputs_of(cfg, x->pkt->hdr.seq) & (INA_OUT_ACK | INA_OUT_FORWARD)) != (INA_OUT_ACK | INA_OUT_FORWARD))
		return INA_R_UNEXPECTED_TYPE;
	if (!ina_addr_from(&cfg->forward.addr, src))
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
	if (!ina_addr_from(&j->cfg.contributors[i], src))
		return INA_R_NOT_MEMBER;
	*c = i;
	return INA_OK;
}

static void select_slot(struct ctx *x)
{
	size_t m = ((size_t)x->job->base + x->index) * 2;
	x->slot = slot_at(x->eng, m + x->set);
	x->other = slot_at(x->eng, m + !x->set);
	x->data = slot_data(x->slot);
}

static bool slot_newer(const struct slot *a, const struct slot *b)
{
	int32_t d = (int32_t)(a->epoch - b->epoch);
	return d > 0 || (d == 0 && (int32_t)(a->seq - b->seq) > 0);
}

/* A chain's upstream's contribution or downstream's ACK names the slice,
 * not the set: each member's workers keep their own alternation, and the
 * upstream may be ahead of them.  Every slice of a call goes through its
 * slot index (seq % nslots) in turn, the sets alternating, so the set of
 * slice q follows from the newest slice of the same call the index holds
 * (p: the same set if (q - p) / nslots is even); with none, the workers'
 * first of the call takes the set with the older slice (an empty one
 * first), and q the set (q / nslots) turns on from it.  -1: its set holds
 * a newer slice (it was done here), or an ACK's key is older than one the
 * index holds; 1: an ACK for a slice not here yet; 0: x->set chosen. */
static int chain_locate(struct ctx *x, bool contribution)
{
	const struct ina_hdr *h = &x->pkt->hdr;
	const uint32_t n = x->job->cfg.nslots;
	const size_t m = ((size_t)x->job->base + x->index) * 2;
	const struct slot *s[2] = { slot_at(x->eng, m), slot_at(x->eng, m + 1) };
	for (unsigned t = 0; t < 2; t++)
		if (s[t]->state != SLOT_EMPTY && key_cmp(h, s[t]) == 0) {
			x->set = t;
			return 0;
		}
	int same = -1; /* the set with the newest slice of this call */
	for (unsigned t = 0; t < 2; t++) {
		if (s[t]->state == SLOT_EMPTY)
			continue;
		if (!contribution && key_cmp(h, s[t]) < 0)
			return -1;
		if (s[t]->epoch == h->epoch && (same < 0 || slot_newer(s[t], s[same])))
			same = (int)t;
		if ((int32_t)(h->epoch - s[t]->epoch) < 0)
			return -1; /* a call the workers have left */
	}
	if (!contribution)
		return 1;
	unsigned t;
	if (same >= 0) {
		int32_t d = (int32_t)(h->seq - s[same]->seq) / (int32_t)n; /* both in this index */
		t = (unsigned)same ^ (unsigned)(d & 1);
	} else {
		unsigned older = s[0]->state == SLOT_EMPTY ? 0 : s[1]->state == SLOT_EMPTY ? 1 : slot_newer(s[0], s[1]);
		t = older ^ ((h->seq / n) & 1);
	}
	if (s[t]->state != SLOT_EMPTY && key_cmp(h, s[t]) < 0)
		return -1; /* its set has moved past it */
	x->set = t;
	return 0;
}

/* The upstream sent again a slice finished here long ago: our ACK was
 * lost, and the slot has moved on; the ACK again, from its key. */
static void ack_stale_upstream(struct ctx *x)
{
	const struct ina_job_cfg *c = &x->job->cfg;
	struct slot key = { .epoch = x->pkt->hdr.epoch, .seq = x->pkt->hdr.seq, .nelem = x->pkt->hdr.count };
	x->job->st.retransmits++;
	ina_dp_emit_of(x, &key, x->index, 0, INA_T_ACK, &c->contributors[c->upstream_index], c->upstream_job,
		       INA_CONTRIB_UPSTREAM, 0);
	static const uint8_t none[1];
	x->out->e[x->out->n - 1].payload = none; /* bare, and nothing may point at the key */
	chain_shift(x, -1, &c->contributors[c->upstream_index]);
}

static enum ina_reason chain_dispatch(struct ctx *x, const struct ina_addr *src)
{
	const struct ina_hdr *h = &x->pkt->hdr;
	const bool ack = h->type == INA_T_ACK;
	unsigned c = 0;
	enum ina_reason r;
	x->index = h->seq % x->job->cfg.nslots;
	if (!ack && ((r = member_index(x->job, h, src, &c)) != INA_OK))
		return r;
	if (!ack && chain_first(&x->job->cfg, h->seq))
		return INA_R_BAD_CONTRIBUTOR; /* step 0 takes the workers' data alone */
	int where = chain_locate(x, !ack);
	if (where > 0)
		return INA_R_NOT_READY;
	if (where < 0) {
		if (ack)
			return INA_R_STALE;
		ack_stale_upstream(x);
		return INA_OK;
	}
	select_slot(x);
	return ack ? on_ack(x, src) : on_data(x, c);
}

static enum ina_reason dispatch(struct ctx *x, const struct ina_addr *src)
{
	const struct ina_hdr *h = &x->pkt->hdr;
	const struct ina_job_cfg *cfg = &x->job->cfg;
	enum ina_reason r;
	unsigned c;

	if (h->type == INA_T_HAVE) /* the parent holds our re-sent partial: nothing to do */
		return (cfg->outputs & INA_OUT_PS) && ina_addr_from(&cfg->parent.addr, src) ? INA_OK
											    : INA_R_UNEXPECTED_TYPE;
	if (h->type != INA_T_DATA && h->type != INA_T_PULL && h->type != INA_T_RESULT && h->type != INA_T_ACK &&
	    h->type != INA_T_MISS)
		return INA_R_UNEXPECTED_TYPE;
	if (h->dtype != cfg->dtype)
		return INA_R_DTYPE_MISMATCH;
	if (h->count > cfg->elems_per_slot)
		return INA_R_COUNT_EXCEEDS_SLOT;
	x->index = ina_slot_index(h->slot);
	if (x->index >= cfg->nslots)
		return INA_R_SLOT_OUT_OF_RANGE;
	x->set = ina_slot_set(h->slot);
	if (cfg->chain_steps &&
	    (h->type == INA_T_ACK || (h->type == INA_T_DATA && (h->contributor == INA_CONTRIB_UPSTREAM ||
								h->contributor == cfg->upstream_index))))
		return chain_dispatch(x, src);
	select_slot(x);

	if (h->type == INA_T_RESULT)
		return on_parent_result(x, src);
	if (h->type == INA_T_MISS)
		return on_miss(x, src);
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
	x.frames = 0;

	out->n = 0;
	eng->st.rx_packets++;
	x.job = find_job(eng, pkt->hdr.job);
	if (!x.job) {
		eng->st.drops[INA_R_UNKNOWN_JOB]++;
		return INA_R_UNKNOWN_JOB;
	}
	x.job->st.rx_packets++;
	if (pkt->hdr.type == INA_T_DATA && x.job->cfg.idle_miss_us)
		ina_dp_heard(eng, x.job);
	r = dispatch(&x, src);
	if (r != INA_OK) {
		eng->st.drops[r]++;
		x.job->st.drops[r]++;
		return r;
	}
	eng->st.accepted++;
	x.job->st.emits += x.frames;
	return INA_OK;
}
