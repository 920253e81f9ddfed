/* SPDX-License-Identifier: BSD-3-Clause */
/* The reliable transfer's receiving side: placing packets, early data of
 * the next exchange (staged), acknowledgements, and the batch loop that
 * dispatches every datagram type. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "hcl_xfer_int.h"

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	void *q = realloc(*p, need * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = need;
	return 0;
}

static int rank_of(const struct hcl_xfer *x, const struct sockaddr_in *a)
{
	for (unsigned i = 0; i < x->cfg.nranks; i++)
		if (x->peers[i].sin_addr.s_addr == a->sin_addr.s_addr && x->peers[i].sin_port == a->sin_port)
			return (int)i;
	return -1;
}

static void send_ack(struct hcl_xfer *x, int to, uint32_t tag, uint32_t cum, const uint8_t *got, uint32_t total)
{
	uint8_t b[HCL_XFER_HDR] = { MAGIC, T_ACK };
	uint64_t sack = 0;
	for (uint32_t i = 0; i < 64 && cum + i < total; i++)
		if (got[cum + i])
			sack |= 1ull << i;
	b[2] = (uint8_t)(x->cfg.rank >> 8);
	b[3] = (uint8_t)x->cfg.rank;
	put32(b + 4, tag);
	put32(b + 8, cum);
	put32(b + 16, (uint32_t)sack);
	put32(b + 20, (uint32_t)(sack >> 32));
	struct dgram_pkt p = { .buf = b, .len = sizeof(b), .peer = x->peers[to] };
	if (x->t->ops->send_batch(x->t->ctx, &p, 1) == 1)
		x->stats.acks_sent++;
}

void xfer_send_flow(struct hcl_xfer *x, int to, uint8_t type, uint32_t tag)
{
	uint8_t b[HCL_XFER_HDR] = { MAGIC, type, (uint8_t)(x->cfg.rank >> 8), (uint8_t)x->cfg.rank };
	put32(b + 4, tag);
	struct dgram_pkt p = { .buf = b, .len = sizeof(b), .peer = x->peers[to] };
	x->t->ops->send_batch(x->t->ctx, &p, 1); /* best effort: the sender probes */
}

/* A full ACK for a message we already have in full. */
static void send_full_ack(struct hcl_xfer *x, int to, uint32_t tag, uint32_t total)
{
	uint8_t b[HCL_XFER_HDR] = { MAGIC, T_ACK };
	b[2] = (uint8_t)(x->cfg.rank >> 8);
	b[3] = (uint8_t)x->cfg.rank;
	put32(b + 4, tag);
	put32(b + 8, total);
	struct dgram_pkt p = { .buf = b, .len = sizeof(b), .peer = x->peers[to] };
	if (x->t->ops->send_batch(x->t->ctx, &p, 1) == 1)
		x->stats.acks_sent++;
}

static void place(uint8_t *dst, size_t len, uint32_t payload, uint32_t seq, const uint8_t *data, size_t dlen)
{
	size_t off = (size_t)seq * payload;
	if (off < len)
		memcpy(dst + off, data, dlen);
}

/* Returns the peer that needs an ACK for tag (or -1). */
static int on_data(struct hcl_xfer *x, int src, const uint8_t *p, size_t n, uint32_t *ack_tag, bool *refuse)
{
	uint32_t tag = get32(p + 4), seq = get32(p + 8), total = get32(p + 12), mlen = get32(p + 16);
	const uint8_t *data = p + HCL_XFER_HDR;
	size_t dlen = n - HCL_XFER_HDR;

	if (total != npackets(x, mlen) || seq >= total || dlen != seg_len(x, mlen, seq)) {
		x->stats.malformed++;
		return -1;
	}
	*ack_tag = tag;
	/* data of a later exchange from a peer means that peer finished the
	 * earlier ones (it moves on only when all it sent was acknowledged):
	 * as good as their FIN.  Without this a lost FIN kept a rank
	 * lingering its whole quiet time (200 ms) while the ring waited. */
	for (unsigned d = 0; d < 8; d++)
		if (x->done[d].valid && x->done[d].from == src && (int32_t)(tag - x->done[d].tag) > 0)
			x->done[d].fin = true;
	struct rxs *r = &x->rx;
	if (r->active && tag == r->tag && src == r->from) {
		if (mlen != r->len) {
			xfer_note_mismatch(x, src, tag, mlen);
			return -1;
		}
		r->ack_hint = get32(p + 20);
		if (r->got[seq]) {
			x->stats.duplicates++;
			r->ack_now = true; /* a resend: our ACK may have been lost */
		} else {
			if (seq != r->hi)
				r->ack_now = true; /* a gap or a hole filled: the sender's loss detection waits */
			if (seq >= r->hi)
				r->hi = seq + 1;
			/* straight from the receive buffer into place, added in
			 * when the exchange reduces: each byte is walked once */
			const size_t at = (size_t)seq * x->cfg.payload;
			xfer_combine(r->op, r->buf + at, r->base ? r->base + at : NULL, data, dlen);
			r->got[seq] = 1;
			r->ngot++;
			while (r->cum < r->total && r->got[r->cum])
				r->cum++;
			x->stats.data_received++;
			if (r->ngot == r->total)
				r->ack_now = true;
		}
		if (!r->unacked++)
			r->unacked_since = x->now;
		return src;
	}
	for (unsigned i = 0; i < 8; i++)
		if (x->done[i].valid && tag == x->done[i].tag && src == x->done[i].from) {
			x->stats.stale++;
			return src; /* acknowledged in full again */
		}
	/* early: keep it for the exchange to come (STAGE_DEPTH at a time) */
	struct stage *s = xfer_stage_of(x, src, tag);
	size_t stage_max = x->rx_len_max > STAGE_MIN_BYTES ? x->rx_len_max : STAGE_MIN_BYTES;
	for (unsigned i = 0; i < STAGE_DEPTH && !s && mlen <= stage_max; i++)
		if (!x->st[i].used) {
			s = &x->st[i];
			if (grow((void **)&s->buf, &s->cap, mlen ? mlen : 1, 1) ||
			    grow((void **)&s->got, &s->gcap, total, 1))
				return -1;
			memset(s->got, 0, total);
			*s = (struct stage){ .used = true,
					     .from = src,
					     .tag = tag,
					     .total = total,
					     .len = mlen,
					     .buf = s->buf,
					     .got = s->got,
					     .cap = s->cap,
					     .gcap = s->gcap };
		}
	if (!s) {
		x->stats.early++; /* dropped: WAIT, and READY when we get there */
		x->refused[src].valid = true;
		x->refused[src].tag = tag;
		*refuse = true;
		return src;
	}
	if (s->len != mlen) { /* one sender, one length: adopt_stage drops the stage */
		xfer_note_mismatch(x, src, tag, mlen);
		return -1;
	}
	x->stats.early++;
	if (!s->got[seq]) {
		place(s->buf, s->len, x->cfg.payload, seq, data, dlen);
		s->got[seq] = 1;
		s->ngot++;
	}
	return src;
}

/* What the ACK of the current or staged or previous receive says. */
static void ack_for(struct hcl_xfer *x, int src, uint32_t tag)
{
	struct stage *st;
	for (unsigned i = 0; i < 8; i++)
		if (x->done[i].valid && tag == x->done[i].tag && src == x->done[i].from) {
			send_full_ack(x, src, tag, x->done[i].total);
			return;
		}
	if (x->rx.active && tag == x->rx.tag && src == x->rx.from) {
		send_ack(x, src, tag, x->rx.cum, x->rx.got, x->rx.total);
		x->rx.unacked = 0;
		x->rx.ack_now = false;
	} else if ((st = xfer_stage_of(x, src, tag))) {
		uint32_t cum = 0;
		while (cum < st->total && st->got[cum])
			cum++;
		send_ack(x, src, tag, cum, st->got, st->total);
	}
}

/* Answers owed at the end of a batch: one per (peer, tag) and batch, not
 * one per datagram (that would be a window of them).  The current receive
 * is acknowledged only when due (delayed ACKs, see rxs). */
struct answers {
	int n;
	struct {
		int src;
		uint32_t tag;
	} a[BATCH];
};

static bool is_current(const struct hcl_xfer *x, int src, uint32_t tag)
{
	return x->rx.active && x->rx.from == src && x->rx.tag == tag;
}

static bool ack_due(const struct rxs *r) { return r->unacked && (r->ack_now || r->unacked > r->ack_hint); }

static void answer(struct hcl_xfer *x, bool wait, int src, uint32_t tag)
{
	if (wait) {
		xfer_send_flow(x, src, T_WAIT, tag);
		x->stats.waits_sent++;
	} else if (!is_current(x, src, tag) || ack_due(&x->rx)) {
		ack_for(x, src, tag);
	}
}

/* One more datagram of (src, tag) to answer. */
static void owe(struct hcl_xfer *x, struct answers *l, bool wait, int src, uint32_t tag)
{
	int k = 0;
	while (k < l->n && !(l->a[k].src == src && l->a[k].tag == tag))
		k++;
	if (k == l->n) {
		if (l->n == BATCH) { /* more pairs than a batch ever holds: answer now */
			answer(x, wait, src, tag);
			return;
		}
		l->a[l->n++] = (typeof(l->a[0])){ src, tag };
	}
}

int64_t xfer_ack_delayed(struct hcl_xfer *x, int64_t now)
{
	struct rxs *r = &x->rx;
	if (!r->active || !r->unacked)
		return INT64_MAX;
	if (now < r->unacked_since + ACK_DELAY_NS)
		return r->unacked_since + ACK_DELAY_NS;
	ack_for(x, r->from, r->tag);
	return INT64_MAX;
}

/* One datagram from rank src. */
static void handle(struct hcl_xfer *x, int src, const uint8_t *p, size_t len, struct answers *acks,
		   struct answers *waits)
{
	if (len < HCL_XFER_HDR || p[0] != MAGIC || (unsigned)(p[2] << 8 | p[3]) != (unsigned)src) {
		x->stats.malformed++;
		return;
	}
	if (!x->heard[src])
		x->heard[src] = true;
	x->suspect_at[src] = 0; /* it spoke: whatever said it was gone was stale */
	switch (p[1]) {
	case T_ACK: xfer_on_ack(x, src, p); return;
	case T_FIN: {
		uint32_t ftag = get32(p + 4);
		struct stage *st;
		for (unsigned d = 0; d < 8; d++)
			if (x->done[d].valid && src == x->done[d].from && ftag == x->done[d].tag)
				x->done[d].fin = true;
		if (x->rx.active && src == x->rx.from && ftag == x->rx.tag)
			x->rx_fin = true; /* the sender finished before we did */
		else if ((st = xfer_stage_of(x, src, ftag)))
			st->fin = true; /* ... before our exchange even began */
		return;
	}
	case T_WAIT:
	case T_READY: xfer_on_flow(x, src, p[1], get32(p + 4)); return;
	case T_PING: return; /* its answer is that this port is open */
	case T_LOST:
		if (get32(p + 4) > x->lost_call) {
			x->lost_call = get32(p + 4);
			x->lost_from = src;
		}
		return;
	case T_NOTE:
		if (x->note_cb) {
			x->stats.notes_received++;
			x->note_cb(x->note_ctx, src, p + HCL_XFER_HDR, len - HCL_XFER_HDR);
		} else {
			x->stats.malformed++;
		}
		return;
	case T_DATA: break;
	default: x->stats.malformed++; return;
	}
	uint32_t atag;
	bool refuse = false;
	int who = on_data(x, src, p, len, &atag, &refuse);
	if (who >= 0)
		owe(x, refuse ? waits : acks, refuse, who, atag);
}

int xfer_service(struct hcl_xfer *x, int64_t wait_ns)
{
	struct dgram_pkt in[BATCH];
	for (unsigned i = 0; i < x->rx_bufs; i++)
		in[i] = (struct dgram_pkt){ .buf = x->rxbuf[i], .len = x->rx_buf_len };
	int n = x->t->ops->recv_batch(x->t->ctx, in, x->rx_bufs, wait_ns);
	if (n <= 0)
		return n;
	struct answers acks = { 0 }, waits = { 0 };
	int datagrams = 0;
	x->now = clock_now_ns();
	for (int i = 0; i < n; i++) {
		const uint8_t *p = in[i].buf;
		int src = rank_of(x, &in[i].peer);
		if (src < 0) {
			x->stats.malformed++;
			continue;
		}
		/* a run the kernel coalesced: its datagrams one by one */
		uint32_t len = in[i].len, seg = in[i].seg && in[i].seg < len ? in[i].seg : len;
		if (seg < len)
			x->stats.rx_runs++;
		if (!len)
			x->stats.malformed++;
		for (uint32_t off = 0; off < len; off += seg, datagrams++)
			handle(x, src, p + off, len - off < seg ? len - off : seg, &acks, &waits);
	}
	for (int k = 0; k < acks.n; k++)
		answer(x, false, acks.a[k].src, acks.a[k].tag);
	for (int k = 0; k < waits.n; k++)
		answer(x, true, waits.a[k].src, waits.a[k].tag);
	return datagrams;
}
