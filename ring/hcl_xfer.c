/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_xfer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hcl_xfer_int.h"

struct hcl_xfer *hcl_xfer_new(const struct hcl_xfer_cfg *cfg, struct dgram_transport *t, char *err, size_t errlen)
{
	if (!cfg || !t || !t->ops || cfg->nranks == 0 || cfg->nranks > HCL_XFER_MAX_PEERS || cfg->rank >= cfg->nranks ||
	    !cfg->peers) {
		snprintf(err, errlen, "xfer: need a transport, 1..%d ranks, rank < nranks and their addresses",
			 HCL_XFER_MAX_PEERS);
		return NULL;
	}
	if (cfg->payload > PKT_MAX - HCL_XFER_HDR || cfg->payload % 4) {
		snprintf(err, errlen, "xfer: payload %u: want a multiple of 4 up to %d bytes per packet", cfg->payload,
			 PKT_MAX - HCL_XFER_HDR);
		return NULL;
	}
	struct hcl_xfer *x = calloc(1, sizeof(*x));
	if (!x)
		goto nomem;
	x->tx = &x->txm[0];
	x->trail = &x->txm[1];
	x->cfg = *cfg;
	x->t = t;
	if (!x->cfg.payload)
		x->cfg.payload = 8948; /* 24 + 8948 + 28 = a 9000-byte jumbo IP packet: fewer packets per byte */
	if (!x->cfg.window)
		x->cfg.window = 64; /* 512 KiB in flight: more overran switch queues on the testbed */
	if (!x->cfg.rto_us)
		x->cfg.rto_us = 10000; /* see hcl_xfer.h */
	if (!x->cfg.rto_max_us)
		x->cfg.rto_max_us = 100000;
	if (x->cfg.timer_scale > 1) {
		double s = x->cfg.timer_scale, cap = 3600e6; /* an hour: the longest call deadline */
		x->cfg.rto_us = (uint32_t)(x->cfg.rto_us * s < cap ? x->cfg.rto_us * s : cap);
		x->cfg.rto_max_us = (uint32_t)(x->cfg.rto_max_us * s < cap ? x->cfg.rto_max_us * s : cap);
	}
	if (!x->cfg.local_queue)
		x->cfg.local_queue = 64 << 10;
	/* before any round trip is measured, assume a loaded queue (TCP
	 * starts at 1 s): resends into a queue only lengthen it */
	x->rto_base_ns = 10 * (int64_t)x->cfg.rto_us * 1000;
	if (x->rto_base_ns > (int64_t)x->cfg.rto_max_us * 1000)
		x->rto_base_ns = (int64_t)x->cfg.rto_max_us * 1000;
	x->rto_initial_ns = x->rto_base_ns;
	x->peers = calloc(cfg->nranks, sizeof(*x->peers));
	x->cc = calloc(cfg->nranks, sizeof(*x->cc));
	x->refused = calloc(cfg->nranks, sizeof(*x->refused));
	x->heard = calloc(cfg->nranks, sizeof(*x->heard));
	x->suspect_at = calloc(cfg->nranks, sizeof(*x->suspect_at));
	if (!x->peers || !x->cc || !x->refused || !x->heard || !x->suspect_at)
		goto nomem;
	for (unsigned i = 0; i < cfg->nranks; i++) {
		x->cc[i] = (struct hcl_xfer_cc){ .cwnd = HCL_XFER_INITIAL_CWND < x->cfg.window ? HCL_XFER_INITIAL_CWND
											       : x->cfg.window,
						 .ssthresh = x->cfg.window };
		x->heard[i] = cfg->peers_ready;
	}
	memcpy(x->peers, cfg->peers, cfg->nranks * sizeof(*x->peers));
	x->rx_bufs = cfg->coalesced ? RX_RUN_BUFS : BATCH;
	x->rx_buf_len = cfg->coalesced ? DGRAM_MAX_RUN : PKT_MAX;
	for (unsigned i = 0; i < x->rx_bufs; i++)
		if (!(x->rxbuf[i] = malloc(x->rx_buf_len)))
			goto nomem;
	return x;
nomem:
	hcl_xfer_free(x);
	snprintf(err, errlen, "xfer: out of memory");
	return NULL;
}

void hcl_xfer_free(struct hcl_xfer *x)
{
	if (!x)
		return;
	for (unsigned i = 0; i < x->rx_bufs; i++)
		free(x->rxbuf[i]);
	for (unsigned i = 0; i < 2; i++) {
		free(x->txm[i].acked);
		free(x->txm[i].sent_at);
		free(x->txm[i].tries);
		free(x->txm[i].lost);
	}
	free(x->cc);
	free(x->refused);
	free(x->heard);
	free(x->suspect_at);
	free(x->rx.got);
	for (unsigned i = 0; i < STAGE_DEPTH; i++) {
		free(x->st[i].buf);
		free(x->st[i].got);
	}
	free(x->peers);
	free(x);
}

const struct hcl_xfer_stats *hcl_xfer_stats(const struct hcl_xfer *x) { return &x->stats; }

void hcl_xfer_window(const struct hcl_xfer *x, unsigned peer, double *cwnd, double *ssthresh)
{
	*cwnd = peer < x->cfg.nranks ? x->cc[peer].cwnd : 0;
	*ssthresh = peer < x->cfg.nranks ? x->cc[peer].ssthresh : 0;
}

int64_t hcl_xfer_rto_ns(const struct hcl_xfer *x) { return x->rto_base_ns; }

int64_t hcl_xfer_quiet_ns(const struct hcl_xfer *x)
{
	/* the peer's resend comes one of its timeouts after our ACK was lost,
	 * and that timer may be the initial one or backed off once: twice the
	 * larger of ours and the initial one covers both */
	int64_t q = 2 * x->rto_base_ns;
	return 2 * (q > x->rto_initial_ns ? q : x->rto_initial_ns) + 1000000;
}

static int linger(struct hcl_xfer *x, int64_t quiet_ns, int64_t deadline_ns, bool all);

int hcl_xfer_poll(struct hcl_xfer *x) { return xfer_service(x, 0); }

int hcl_xfer_poll_wait(struct hcl_xfer *x, int64_t wait_ns) { return xfer_service(x, wait_ns > 0 ? wait_ns : 0); }

void hcl_xfer_set_note_handler(struct hcl_xfer *x, void (*cb)(void *ctx, int src, const void *p, size_t len), void *ctx)
{
	x->note_cb = cb;
	x->note_ctx = ctx;
}

int hcl_xfer_send_lost(struct hcl_xfer *x, int to, uint32_t call)
{
	uint8_t b[HCL_XFER_HDR] = { MAGIC, T_LOST };
	if (to < 0 || (unsigned)to >= x->cfg.nranks)
		return -EINVAL;
	b[2] = (uint8_t)(x->cfg.rank >> 8);
	b[3] = (uint8_t)x->cfg.rank;
	put32(b + 4, call);
	struct dgram_pkt p = { .buf = b, .len = sizeof(b), .peer = x->peers[to] };
	return x->t->ops->send_batch(x->t->ctx, &p, 1) == 1 ? 0 : -EAGAIN;
}

uint32_t hcl_xfer_lost_call(const struct hcl_xfer *x, int *from)
{
	*from = x->lost_from;
	return x->lost_call;
}

int hcl_xfer_send_note(struct hcl_xfer *x, int to, const void *buf, size_t len)
{
	uint8_t b[HCL_XFER_HDR + HCL_XFER_NOTE_MAX] = { MAGIC, T_NOTE };
	if (to < 0 || (unsigned)to >= x->cfg.nranks || len > HCL_XFER_NOTE_MAX)
		return -EINVAL;
	b[2] = (uint8_t)(x->cfg.rank >> 8);
	b[3] = (uint8_t)x->cfg.rank;
	memcpy(b + HCL_XFER_HDR, buf, len);
	struct dgram_pkt p = { .buf = b, .len = HCL_XFER_HDR + len, .peer = x->peers[to] };
	if (x->t->ops->send_batch(x->t->ctx, &p, 1) != 1)
		return -EAGAIN;
	x->stats.notes_sent++;
	return 0;
}

int hcl_xfer_linger(struct hcl_xfer *x, int64_t quiet_ns, int64_t deadline_ns)
{
	return linger(x, quiet_ns, deadline_ns, false);
}

int hcl_xfer_linger_final(struct hcl_xfer *x, int64_t deadline_ns)
{
	/* a peer's timer backs off up to rto_max: stay for two of those */
	return linger(x, 2 * (int64_t)x->cfg.rto_max_us * 1000 + hcl_xfer_quiet_ns(x), deadline_ns, true);
}

static int linger(struct hcl_xfer *x, int64_t quiet_ns, int64_t deadline_ns, bool all)
{
	int64_t last = clock_now_ns();
	for (;;) {
		int64_t now = clock_now_ns();
		bool all_fin = true;
		for (unsigned d = 0; d < 8; d++)
			all_fin &= !x->done[d].valid || !(all || x->done[d].unlinger) || x->done[d].fin;
		if (all_fin || now - last >= quiet_ns || now >= deadline_ns) {
			for (unsigned d = 0; d < 8; d++)
				x->done[d].unlinger = false;
			x->stats.lingers_quiet += !all_fin;
			return 0;
		}
		int64_t wait = quiet_ns - (now - last);
		if (wait > deadline_ns - now)
			wait = deadline_ns - now;
		uint64_t answered = x->stats.stale;
		int n = xfer_service(x, wait);
		if (n < 0)
			return n;
		/* only a re-send of a finished message is what lingering is for;
		 * other traffic (a neighbour's probes for an exchange to come,
		 * notes) came every 100 ms and kept a 200 ms quiet time from ever
		 * passing: ranks lingered to their deadline */
		if (x->stats.stale != answered)
			last = clock_now_ns();
	}
}

static const char *addr_str(const struct sockaddr_in *a, char *b, size_t n)
{
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(b, n, "%s:%u", ip, ntohs(a->sin_port));
	return b;
}

/* Per-packet arrays for a message of n packets: the send's (its pair
 * may trail with arrays of its own) and the receive's. */
static int reserve(struct hcl_xfer *x, size_t n)
{
	struct txs *t = x->tx;
	struct rxs *r = &x->rx;
	if (n > t->cap) {
		void *a = realloc(t->acked, n), *s = realloc(t->sent_at, n * sizeof(int64_t)),
		     *tr = realloc(t->tries, n), *l = realloc(t->lost, n);
		if (a)
			t->acked = a;
		if (s)
			t->sent_at = s;
		if (tr)
			t->tries = tr;
		if (l)
			t->lost = l;
		if (!a || !s || !tr || !l)
			return -ENOMEM;
		t->cap = n;
	}
	if (n > x->cap_pk) {
		void *g = realloc(r->got, n);
		if (!g)
			return -ENOMEM;
		r->got = g;
		x->cap_pk = n;
	}
	return 0;
}

/* What arrived early for this exchange becomes its start.  A stage of
 * another length than this rank expects is dropped, not trusted: stale or
 * forged traffic must not fail the call (a sender that really disagrees
 * is named when the exchange times out).  Stages of other tags stay:
 * tags are not monotonic per peer (hier's last rack ring comes after its
 * cross-rack rings, under lower tags), so none can be called dead. */
static void adopt_stage(struct hcl_xfer *x, uint32_t tag, int from, void *rbuf, size_t rlen)
{
	struct rxs *r = &x->rx;
	struct stage *st = xfer_stage_of(x, from, tag);
	if (!st)
		return; /* staged messages for later exchanges stay: they were acknowledged */
	st->used = false;
	if (st->len != rlen) {
		xfer_note_mismatch(x, from, tag, st->len);
		return;
	}
	for (uint32_t i = 0; i < r->total; i++)
		if (st->got[i]) {
			r->got[i] = 1;
			r->ngot++;
			r->hi = i + 1;
		}
	if (r->op == HCL_XFER_COPY) {
		if (rlen)
			memcpy(rbuf, st->buf, rlen);
	} else { /* only what arrived is added in */
		for (uint32_t i = 0; i < r->total; i++)
			if (st->got[i])
				xfer_combine(r->op, (uint8_t *)rbuf + (size_t)i * x->cfg.payload,
					     r->base ? r->base + (size_t)i * x->cfg.payload : NULL,
					     st->buf + (size_t)i * x->cfg.payload, seg_len(x, rlen, i));
	}
	x->rx_fin = st->fin;
	while (r->cum < r->total && r->got[r->cum])
		r->cum++;
}

static int timed_out(const struct hcl_xfer *x, uint32_t tag, char *err, size_t errlen)
{
	/* the current send, or the trailing one this exchange waited for */
	const struct txs *t = x->tx->active && x->tx->nacked < x->tx->total ? x->tx : x->trail;
	const struct rxs *r = &x->rx;
	char a[64];
	const struct stage *st = NULL; /* what was held early, for the reader of the error */
	for (unsigned i = 0; i < STAGE_DEPTH && !st; i++)
		st = x->st[i].used ? &x->st[i] : NULL;
	if (r->active && x->mismatch.valid && x->mismatch.from == r->from && x->mismatch.tag == tag)
		snprintf(err, errlen, "xfer: rank %d (%s) sends %zu bytes for tag %u, this rank expects %zu", r->from,
			 addr_str(&x->peers[r->from], a, sizeof(a)), x->mismatch.len, tag, r->len);
	else if (r->active && r->ngot < r->total)
		snprintf(err, errlen,
			 "rank %d (%s) did not deliver: %u of %u packets of tag %u arrived (held early: %s%d tag %u)",
			 r->from, addr_str(&x->peers[r->from], a, sizeof(a)), r->ngot, r->total, tag,
			 st ? "from " : "none ", st ? st->from : -1, st ? st->tag : 0);
	else
		snprintf(err, errlen, "rank %d (%s) did not acknowledge: %u of %u packets of tag %u", t->to,
			 addr_str(&x->peers[t->to], a, sizeof(a)), t->nacked, t->total, t->tag);
	return -ETIMEDOUT;
}

static bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/* A rank this exchange still needs whose host said its port is closed
 * (the transport's ICMP reports): the process exited or crashed, and
 * waiting for the deadline would only delay the error. */
static int peer_gone(struct hcl_xfer *x, char *err, size_t errlen)
{
	const struct dgram_ops *ops = x->t->ops;
	struct sockaddr_in a;
	while (ops->unreachable && ops->unreachable(x->t->ctx, &a) > 0) {
		int k = -1;
		if (x->rx.active && x->rx.ngot < x->rx.total && same_addr(&x->peers[x->rx.from], &a))
			k = x->rx.from;
		else if (x->tx->active && x->tx->nacked < x->tx->total && same_addr(&x->peers[x->tx->to], &a))
			k = x->tx->to;
		else if (x->trail->active && same_addr(&x->peers[x->trail->to], &a))
			k = x->trail->to;
		/* a rank this exchange does not wait on, or one never heard
		 * from: not started yet (ranks start in any order), not gone */
		if (k < 0 || !x->heard[k])
			continue;
		int64_t now = clock_now_ns();
		if (!x->suspect_at[k] || now - x->suspect_at[k] < 1000000) {
			/* first word of it (or one the PING cannot have caused
			 * yet): ask again, and believe the answer to that */
			if (!x->suspect_at[k]) {
				x->suspect_at[k] = now;
				xfer_send_flow(x, k, T_PING, x->rx.active ? x->rx.tag : x->tx->tag);
				x->stats.pings_sent++;
			}
			continue;
		}
		char s[64];
		snprintf(err, errlen,
			 "xfer: rank %d (%s) is gone: its host says nothing listens on its port (it exited or crashed)",
			 k, addr_str(&x->peers[k], s, sizeof(s)));
		return -ECONNREFUSED;
	}
	return 0;
}

/* Every PING_NS while a receive waits: see T_PING. */
static void ping(struct hcl_xfer *x, int64_t now)
{
	if (!x->rx.active || x->rx.ngot >= x->rx.total || now < x->ping_at)
		return;
	xfer_send_flow(x, x->rx.from, T_PING, x->rx.tag);
	x->stats.pings_sent++;
	x->ping_at = now + PING_NS;
}

/* Best effort: a lost FIN costs the peer its linger. */
static void send_fin(struct hcl_xfer *x, int to, uint32_t tag)
{
	uint8_t b[HCL_XFER_HDR] = { MAGIC, T_FIN, (uint8_t)(x->cfg.rank >> 8), (uint8_t)x->cfg.rank };
	put32(b + 4, tag);
	struct dgram_pkt p = { .buf = b, .len = sizeof(b), .peer = x->peers[to] };
	x->t->ops->send_batch(x->t->ctx, &p, 1);
}

/* The exchange is complete: its receive is remembered (to acknowledge
 * again in full), its sender is told (FIN). */
static void finish(struct hcl_xfer *x, uint32_t tag)
{
	if (x->rx.active) {
		x->done[x->done_next % 8] = (typeof(x->done[0])){ .valid = true,
								  .fin = x->rx_fin,
								  .unlinger = true,
								  .from = x->rx.from,
								  .tag = tag,
								  .total = x->rx.total };
		x->done_next++;
	}
	if (x->tx->active)
		send_fin(x, x->tx->to, tag);
}

/* The trailing send, once all of it is acknowledged, is over: FIN. */
static void trail_settle(struct hcl_xfer *x)
{
	struct txs *t = x->trail;
	if (t->active && t->nacked == t->total) {
		send_fin(x, t->to, t->tag);
		t->active = false;
	}
}

int hcl_xfer_exchange(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from, void *rbuf,
		      size_t rlen, int64_t deadline_ns, char *err, size_t errlen)
{
	return hcl_xfer_exchange_op(x, tag, to, sbuf, slen, from, rbuf, rlen, HCL_XFER_COPY, deadline_ns, err, errlen);
}

int hcl_xfer_exchange_op(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from, void *rbuf,
			 size_t rlen, enum hcl_xfer_op op, int64_t deadline_ns, char *err, size_t errlen)
{
	return hcl_xfer_exchange_from(x, tag, to, sbuf, slen, from, rbuf, NULL, rlen, op, deadline_ns, err, errlen);
}

/* Sets up the exchange's send and receive; 0 or -errno with err. */
static int exchange_start(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from, void *rbuf,
			  const void *rbase, size_t rlen, enum hcl_xfer_op op, char *err, size_t errlen)
{
	if ((to >= 0 && (unsigned)to >= x->cfg.nranks) || (from >= 0 && (unsigned)from >= x->cfg.nranks) ||
	    (slen && !sbuf) || (rlen && !rbuf) || slen > UINT32_MAX || rlen > UINT32_MAX ||
	    (unsigned)op > HCL_XFER_SUM_F32 || (op != HCL_XFER_COPY && rlen % 4)) {
		snprintf(err, errlen, "xfer: bad arguments (to %d, from %d, %zu/%zu bytes, op %d)", to, from, slen,
			 rlen, (int)op);
		return -EINVAL;
	}
	if (x->trail->active && to >= 0 && x->trail->to == to && x->trail->tag == tag) {
		snprintf(err, errlen, "xfer: tag %u to rank %d is still being sent", tag, to);
		return -EINVAL;
	}
	struct txs *t = x->tx;
	struct rxs *r = &x->rx;
	uint32_t tn = to >= 0 ? npackets(x, slen) : 0, rn = from >= 0 ? npackets(x, rlen) : 0;
	if (reserve(x, tn > rn ? tn : rn) < 0) {
		snprintf(err, errlen, "xfer: out of memory");
		return -ENOMEM;
	}
	if (to >= 0) {
		x->cc[to].rto_at = 0; /* an undo concerns one message's packets */
		xfer_tx_start(x, clock_now_ns());
	}
	*t = (struct txs){ .active = to >= 0,
			   .to = to,
			   .tag = tag,
			   .total = tn,
			   .buf = sbuf,
			   .len = slen,
			   .cap = t->cap,
			   .acked = t->acked,
			   .sent_at = t->sent_at,
			   .tries = t->tries,
			   .lost = t->lost };
	if (tn) { /* the arrays may not exist yet */
		memset(t->acked, 0, tn);
		memset(t->lost, 0, tn);
		memset(t->sent_at, 0, tn * sizeof(int64_t));
	}
	*r = (struct rxs){ .active = from >= 0,
			   .from = from,
			   .op = op,
			   .tag = tag,
			   .total = rn,
			   .buf = rbuf,
			   .base = op == HCL_XFER_COPY ? NULL : rbase,
			   .len = rlen,
			   .got = r->got };
	if (rn)
		memset(r->got, 0, rn);
	x->rx_fin = false;
	x->mismatch.valid = false;
	if (rlen > x->rx_len_max)
		x->rx_len_max = rlen;
	x->ping_at = clock_now_ns() + PING_NS;
	if (from >= 0)
		adopt_stage(x, tag, from, rbuf, rlen);
	if (r->active && x->refused[from].valid && x->refused[from].tag == tag) {
		x->refused[from].valid = false;
		xfer_send_flow(x, from, T_READY, tag);
	}
	return 0;
}

/* Whether the current send holds the exchange: until all of it is
 * acknowledged, or, when it may trail, until all of it went out once. */
static bool send_pending(const struct txs *t, bool trailing)
{
	return t->active && (trailing ? t->next_new < t->total : t->nacked < t->total);
}

/* Runs the exchange (or, with nothing current, the trailing send) to its
 * end or the deadline; the trailing send of the exchange before always
 * ends first, so at most one trails. */
static int exchange_wait(struct hcl_xfer *x, uint32_t tag, bool trailing, int64_t deadline_ns, char *err, size_t errlen)
{
	struct rxs *r = &x->rx;
	int rc = 0;
	while (rc == 0 && (send_pending(x->tx, trailing) || (r->active && r->ngot < r->total) || x->trail->active)) {
		int64_t now = clock_now_ns();
		if (now >= deadline_ns) {
			rc = timed_out(x, tag, err, errlen);
			break;
		}
		int64_t next = xfer_pump_tx(x, now), ack = xfer_ack_delayed(x, now);
		if (ack < next)
			next = ack;
		int64_t wait = next == INT64_MAX ? 1000000 : next - now;
		if (wait > 1000000)
			wait = 1000000; /* look at the deadline at least every ms */
		if (wait > deadline_ns - now)
			wait = deadline_ns - now;
		int n = xfer_service(x, wait > 0 ? wait : 0);
		if (n < 0) {
			snprintf(err, errlen, "xfer: receive: %s", strerror(-n));
			rc = n;
		} else {
			ping(x, now);
			rc = peer_gone(x, err, errlen);
			trail_settle(x);
		}
	}
	if (rc == 0 && trailing && x->tx->active && x->tx->nacked < x->tx->total) {
		struct txs *t = x->tx; /* its ACKs are awaited from now on by whatever runs next */
		x->tx = x->trail;
		x->trail = t;
	}
	if (rc == 0)
		finish(x, tag);
	else
		x->trail->active = false; /* the call fails: its sends with it */
	x->tx->active = false;
	r->active = false;
	return rc;
}

int hcl_xfer_exchange_from(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from,
			   void *rbuf, const void *rbase, size_t rlen, enum hcl_xfer_op op, int64_t deadline_ns,
			   char *err, size_t errlen)
{
	int rc = exchange_start(x, tag, to, sbuf, slen, from, rbuf, rbase, rlen, op, err, errlen);
	return rc ? rc : exchange_wait(x, tag, false, deadline_ns, err, errlen);
}

int hcl_xfer_exchange_trailing(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from,
			       void *rbuf, const void *rbase, size_t rlen, enum hcl_xfer_op op, int64_t deadline_ns,
			       char *err, size_t errlen)
{
	int rc = exchange_start(x, tag, to, sbuf, slen, from, rbuf, rbase, rlen, op, err, errlen);
	return rc ? rc : exchange_wait(x, tag, true, deadline_ns, err, errlen);
}

int hcl_xfer_drain(struct hcl_xfer *x, int64_t deadline_ns, char *err, size_t errlen)
{
	if (!x->trail->active)
		return 0;
	x->tx->active = false;
	x->rx.active = false;
	return exchange_wait(x, x->trail->tag, false, deadline_ns, err, errlen);
}
