/* SPDX-License-Identifier: BSD-3-Clause */
#include "sw_netem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool cfg_active(const struct netem_cfg *c)
{
	return c->rate_bps || c->delay_us || c->jitter_us || c->loss > 0 || c->ge_p_gb > 0;
}

int sw_netem_init(struct sw_netem *e, const struct netem_cfg *cfg, uint32_t cap_pkts, uint64_t seed)
{
	uint32_t cap = 1;
	memset(e, 0, sizeof(*e));
	while (cap < cap_pkts)
		cap <<= 1;
	e->ring = calloc(cap, sizeof(*e->ring));
	if (!e->ring)
		return -ENOMEM;
	e->cap = cap;
	e->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	sw_netem_set(e, cfg, 0);
	return 0;
}

void sw_netem_free(struct sw_netem *e)
{
	free(e->ring);
	e->ring = NULL;
}

static uint64_t serialise_ns(const struct netem_cfg *c, uint32_t len)
{
	return c->rate_bps ? (uint64_t)len * 8 * 1000000000ull / c->rate_bps : 0;
}

void sw_netem_share_wire(struct sw_netem *e, uint64_t *wire_ns) { e->wire_ns = wire_ns; }

static uint64_t wire_load(const struct sw_netem *e) { return __atomic_load_n(e->wire_ns, __ATOMIC_RELAXED); }

/* Bytes the rate sends in ns: what a shared line busy that much longer
 * has yet to send. */
static uint64_t line_bytes(const struct netem_cfg *c, uint64_t ns)
{
	return (uint64_t)((double)ns * (double)c->rate_bps / 8e9);
}

static uint64_t wire_backlog(const struct sw_netem *e, uint64_t now_ns)
{
	uint64_t busy = wire_load(e);
	return busy > now_ns ? line_bytes(&e->cfg, busy - now_ns) : 0;
}

/* A frame's time on a shared line: it starts when the line is free, unless
 * the buffer (what the line has yet to send) has no room for it. */
static bool wire_claim(struct sw_netem *e, uint32_t len, uint64_t now_ns, uint64_t *depart)
{
	const struct netem_cfg *c = &e->cfg;
	uint64_t busy = wire_load(e);
	for (;;) {
		uint64_t start = busy > now_ns ? busy : now_ns;
		if (c->buffer_bytes && line_bytes(c, start - now_ns) + len > c->buffer_bytes)
			return false;
		*depart = start + serialise_ns(c, len);
		if (__atomic_compare_exchange_n(e->wire_ns, &busy, *depart, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
	}
}

/* Held packets take the new parameters: those not yet departed are
 * serialised again at the new rate from now, and every held packet is
 * released at its departure + the new delay (order kept).  Without this, a
 * packet queued at a tiny rate keeps a release time hours away after the
 * rate is raised, and the port stays dark. */
static void retime_held(struct sw_netem *e, uint64_t now_ns)
{
	uint32_t mask = e->cap - 1;
	uint64_t depart = now_ns, release = 0;
	if (e->wire_ns && wire_load(e) > now_ns) /* after the sharers set before */
		depart = wire_load(e);
	for (uint32_t i = e->head; i != e->tail; i++) {
		struct sw_netem_item *it = &e->ring[i & mask];
		if (it->depart_ns > now_ns) {
			it->depart_ns = (depart > now_ns ? depart : now_ns) + serialise_ns(&e->cfg, it->len);
			depart = it->depart_ns;
		}
		uint64_t r = it->depart_ns + (uint64_t)e->cfg.delay_us * 1000;
		it->release_ns = r > release ? r : release;
		release = it->release_ns;
	}
	if (e->head != e->tail) {
		e->last_depart_ns = depart;
		e->last_release_ns = release;
	}
	if (e->wire_ns) /* never behind where it was: depart started there */
		__atomic_store_n(e->wire_ns, depart, __ATOMIC_RELAXED);
}

void sw_netem_set(struct sw_netem *e, const struct netem_cfg *cfg, uint64_t now_ns)
{
	e->cfg = *cfg;
	e->ecn_bytes = 0;
	if (cfg->rate_bps && cfg->ecn > 0) { /* at least a byte: 0 is "never" */
		const uint64_t b = (uint64_t)(cfg->ecn * (double)cfg->buffer_bytes);
		e->ecn_bytes = b ? b : 1;
	}
	retime_held(e, now_ns);
	/* once active, stay active while packets are held, so they drain */
	e->active = cfg_active(cfg) || e->head != e->tail;
}

static double uniform(struct sw_netem *e)
{
	e->rng ^= e->rng >> 12;
	e->rng ^= e->rng << 25;
	e->rng ^= e->rng >> 27;
	return (double)((e->rng * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
}

static bool lose(struct sw_netem *e)
{
	const struct netem_cfg *c = &e->cfg;
	if (c->ge_p_gb > 0) {
		/* Gilbert-Elliott: move between states, then lose by the state */
		if (e->ge_bad ? uniform(e) < c->ge_p_bg : uniform(e) < c->ge_p_gb)
			e->ge_bad = !e->ge_bad;
		if (e->ge_bad && uniform(e) < c->ge_loss_bad)
			return true;
	}
	return c->loss > 0 && uniform(e) < c->loss;
}

/* Bytes that departed by now leave the buffer. */
static void leave_buffer(struct sw_netem *e, uint64_t now_ns)
{
	uint32_t mask = e->cap - 1;
	while (e->backlog != e->tail && e->ring[e->backlog & mask].depart_ns <= now_ns) {
		e->backlog_bytes -= e->ring[e->backlog & mask].len;
		e->backlog++;
	}
}

bool sw_netem_marks(struct sw_netem *e, uint64_t now_ns)
{
	if (!e->ecn_bytes)
		return false;
	if (e->wire_ns)
		return wire_backlog(e, now_ns) > e->ecn_bytes;
	leave_buffer(e, now_ns);
	return e->backlog_bytes > e->ecn_bytes;
}

enum sw_netem_verdict sw_netem_enqueue(struct sw_netem *e, void *pkt, uint32_t len, uint64_t now_ns)
{
	const struct netem_cfg *c = &e->cfg;
	uint32_t mask = e->cap - 1;

	if (lose(e))
		return SW_NETEM_DROP_LOSS;
	leave_buffer(e, now_ns);
	if (!e->wire_ns && c->rate_bps && c->buffer_bytes && e->backlog_bytes + len > c->buffer_bytes)
		return SW_NETEM_DROP_BUFFER;
	if (e->tail - e->head == e->cap)
		return SW_NETEM_DROP_INFLIGHT;

	uint64_t depart = now_ns;
	if (c->rate_bps && e->wire_ns) {
		if (!wire_claim(e, len, now_ns, &depart))
			return SW_NETEM_DROP_BUFFER;
	} else if (c->rate_bps) {
		uint64_t start = e->last_depart_ns > now_ns ? e->last_depart_ns : now_ns;
		depart = start + serialise_ns(c, len);
	}
	uint64_t release = depart + (uint64_t)c->delay_us * 1000;
	if (c->jitter_us)
		release += (uint64_t)(uniform(e) * c->jitter_us * 1000.0);
	if (release < e->last_release_ns)
		release = e->last_release_ns;
	e->last_depart_ns = depart;
	e->last_release_ns = release;
	e->ring[e->tail & mask] = (struct sw_netem_item){ pkt, len, depart, release };
	e->tail++;
	e->backlog_bytes += len;
	e->active = true;
	return SW_NETEM_QUEUED;
}

unsigned sw_netem_dequeue(struct sw_netem *e, uint64_t now_ns, void **out, unsigned max)
{
	uint32_t mask = e->cap - 1;
	unsigned n = 0;
	while (n < max && e->head != e->tail && e->ring[e->head & mask].release_ns <= now_ns) {
		struct sw_netem_item *it = &e->ring[e->head & mask];
		if (e->backlog == e->head) { /* released implies departed */
			e->backlog_bytes -= it->len;
			e->backlog++;
		}
		out[n++] = it->pkt;
		e->head++;
	}
	if (e->head == e->tail && !cfg_active(&e->cfg))
		e->active = false;
	return n;
}

uint64_t sw_netem_next_ns(const struct sw_netem *e)
{
	return e->head == e->tail ? UINT64_MAX : e->ring[e->head & (e->cap - 1)].release_ns;
}

uint32_t sw_netem_held(const struct sw_netem *e) { return e->tail - e->head; }
