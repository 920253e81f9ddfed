/* SPDX-License-Identifier: BSD-3-Clause */
/* The reliable transfer's sending side: the window of packets in flight,
 * losses found by RACK or the timer, the congestion window per peer
 * (TCP's), and the limit on our own data queued in the host. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "hcl_xfer_int.h"

/* Karn: only packets sent once give a sample.  The timeout follows the
 * measured round trip, so a queue that builds up (a switch port, a busy
 * host) stretches it instead of provoking resends into the queue. */
static void rtt_sample(struct hcl_xfer *x, int64_t rtt)
{
	if (x->srtt_ns == 0) {
		x->srtt_ns = rtt;
		x->rttvar_ns = rtt / 2;
	} else {
		int64_t d = x->srtt_ns > rtt ? x->srtt_ns - rtt : rtt - x->srtt_ns;
		x->rttvar_ns += (d - x->rttvar_ns) / 4;
		x->srtt_ns += (rtt - x->srtt_ns) / 8;
	}
	/* the timer only covers tail loss (see pump_tx), so it may be generous */
	int64_t rto = 2 * x->srtt_ns + 4 * x->rttvar_ns, lo = (int64_t)x->cfg.rto_us * 1000,
		hi = (int64_t)x->cfg.rto_max_us * 1000;
	x->rto_base_ns = rto < lo ? lo : rto > hi ? hi : rto;
}

void xfer_on_ack(struct hcl_xfer *x, int src, const uint8_t *p)
{
	struct txs *t = &x->tx;
	if (!t->active || src != t->to || get32(p + 4) != t->tag)
		return; /* an ACK of an earlier exchange */
	uint32_t cum = get32(p + 8), before = t->nacked;
	uint64_t sack = get32(p + 16) | (uint64_t)get32(p + 20) << 32;
	if (cum > t->total)
		cum = t->total;
	struct hcl_xfer_cc *c = &x->cc[t->to];
	int64_t newest = 0;
	bool spurious = false, genuine = false;
	for (uint32_t k = 0; k < cum + 64 && k < t->total; k++) {
		bool now_acked = k < cum || (sack >> (k - cum) & 1);
		if (!now_acked || t->acked[k])
			continue;
		t->acked[k] = 1;
		t->nacked++;
		if (t->sent_at[k]) {
			if (c->rto_at && t->sent_at[k] < c->rto_at && t->lost[k])
				spurious = true; /* declared lost at the time-out, arrived unsent */
			else if (c->rto_at && t->sent_at[k] >= c->rto_at)
				genuine = true; /* a resend was needed (or came first) */
			if (t->lost[k])
				t->lost[k] = 0; /* it arrived after all */
			else
				t->inflight--;
			if (t->tries[k] == 0 && t->sent_at[k] > newest)
				newest = t->sent_at[k];
			if (t->sent_at[k] > t->delivered_sent_at)
				t->delivered_sent_at = t->sent_at[k];
		}
	}
	if (spurious) { /* even if the resent head was acknowledged with it */
		/* and only if nothing the expiry declared lost is still missing:
		 * after a tail drop, packets in flight before it are acknowledged
		 * too, and undoing then would send the full window into the
		 * queue that has just overflowed */
		bool missing = false;
		for (uint32_t i = 0; i < t->next_new && !missing; i++)
			missing = !t->acked[i] && t->lost[i] && t->sent_at[i] < c->rto_at;
		if (!missing) {
			if (c->cwnd < c->undo_cwnd)
				c->cwnd = c->undo_cwnd;
			c->ssthresh = c->undo_ssthresh;
			x->stats.timeouts_undone++;
		}
	}
	if (spurious || genuine)
		c->rto_at = 0;
	int64_t now = clock_now_ns();
	if (newest)
		rtt_sample(x, now - newest);
	if (t->nacked != before) {
		t->progress_at = now;
		t->peer_waits = false;
		double n = t->nacked - before;
		c->cwnd += c->cwnd < c->ssthresh ? n : n / c->cwnd;
		if (c->cwnd > x->cfg.window)
			c->cwnd = x->cfg.window;
	}
}

int64_t xfer_rto_ns(const struct hcl_xfer *x, uint8_t tries)
{
	int64_t r = x->rto_base_ns << (tries < 16 ? tries : 16);
	int64_t cap = (int64_t)x->cfg.rto_max_us * 1000;
	return r < cap ? r : cap;
}

/* Sends packet i of the current message; false when the socket is full. */
static bool send_data(struct hcl_xfer *x, uint32_t i, uint8_t *pkt)
{
	const struct txs *t = &x->tx;
	size_t dl = seg_len(x, t->len, i);
	pkt[0] = MAGIC;
	pkt[1] = T_DATA;
	pkt[2] = (uint8_t)(x->cfg.rank >> 8);
	pkt[3] = (uint8_t)x->cfg.rank;
	put32(pkt + 4, t->tag);
	put32(pkt + 8, i);
	put32(pkt + 12, t->total);
	put32(pkt + 16, (uint32_t)t->len);
	put32(pkt + 20, 0);
	if (dl)
		memcpy(pkt + HCL_XFER_HDR, t->buf + (size_t)i * x->cfg.payload, dl);
	struct dgram_pkt hp = { pkt, (uint32_t)(HCL_XFER_HDR + dl), x->peers[t->to] };
	return x->t->ops->send_batch(x->t->ctx, &hp, 1) == 1;
}

/* Everything in flight is to be sent again (a time-out, a WAIT). */
static void flight_lost(struct txs *t)
{
	for (uint32_t i = 0; i < t->next_new; i++)
		if (!t->acked[i])
			t->lost[i] = 1;
	t->inflight = 0;
}

/* A loss was detected (packet sent at sent_at): halve the window, once per
 * round trip (RFC 6675's recovery point, by send time). */
static void cc_loss(struct hcl_xfer *x, int64_t sent_at, int64_t now)
{
	struct hcl_xfer_cc *c = &x->cc[x->tx.to];
	if (sent_at <= c->recover_at)
		return;
	c->ssthresh = c->cwnd / 2 > 2 ? c->cwnd / 2 : 2;
	c->cwnd = c->ssthresh;
	c->recover_at = now;
	x->stats.cwnd_halved++;
}

/* What TCP Small Queues does for TCP.  A datagram queued in this host
 * (its qdisc: a shaper, a NIC slower than the socket) delays everything
 * queued after it, our ACKs to other peers included.  With the window's
 * worth of a message queued at once (512 KiB, 21 ms at 200 Mbit/s), the
 * peer sending to us saw its first ACK after its timer (10 ms) had fired,
 * at every exchange: the ring took 0.6 s instead of 0.36 s in one run of
 * three to six, with no packet lost anywhere.  So data waits while more
 * than cfg.local_queue bytes of ours are still in the host.  Returns 0
 * when data may go now, otherwise when to look again: when about half the
 * queue will have left, at the drain rate measured between two looks. */
static int64_t local_queue_wait(struct hcl_xfer *x, int64_t now)
{
	if (!x->t->ops->tx_queued || x->cfg.local_queue == UINT32_MAX)
		return 0;
	long q = x->t->ops->tx_queued(x->t->ctx);
	/* since the last look that found it full nothing of ours was added
	 * but a few ACKs: what left is the drain.  Measured also when the
	 * queue has gone below the limit, which is the usual case: one
	 * datagram leaving is enough (between two full looks alone it is
	 * hardly ever measured, and the sender wakes every 100 us). */
	if (x->lq_at && q >= 0 && q < x->lq_bytes && now > x->lq_at) {
		double r = (double)(x->lq_bytes - q) / (double)(now - x->lq_at);
		x->lq_rate = x->lq_rate > 0 ? x->lq_rate + (r - x->lq_rate) / 4 : r;
		x->lq_at = 0;
	}
	if (q < (long)x->cfg.local_queue) { /* also when unknown (-1) */
		x->lq_at = 0;
		return 0;
	}
	if (!x->lq_at) { /* packets leave whole: an unchanged count keeps the older look */
		x->lq_at = now;
		x->lq_bytes = q;
	}
	x->stats.local_waits++;
	int64_t w = x->lq_rate > 0 ? (int64_t)((double)(q - (long)x->cfg.local_queue / 2) / x->lq_rate) : 100000;
	return now + (w < 20000 ? 20000 : w > 2000000 ? 2000000 : w);
}

/* The receiver said WAIT: a probe now and then, in case READY is lost. */
static int64_t probe(struct hcl_xfer *x, int64_t now, uint8_t *pkt)
{
	struct txs *t = &x->tx;
	if (now < t->probe_at)
		return t->probe_at;
	/* the first packet refused, else the first unacknowledged (a probe
	 * whose WAIT was lost) */
	uint32_t i = 0, first = UINT32_MAX;
	for (; i < t->next_new && !(!t->acked[i] && t->lost[i]); i++)
		if (!t->acked[i] && first == UINT32_MAX)
			first = i;
	if (i == t->next_new)
		i = first;
	if (i != UINT32_MAX) {
		if (!send_data(x, i, pkt))
			return now;
		if (t->lost[i]) {
			t->lost[i] = 0;
			t->inflight++;
		}
		t->sent_at[i] = now;
		x->stats.data_resent++;
	}
	t->probe_at = now + xfer_rto_ns(x, t->probes < 255 ? ++t->probes : t->probes);
	return t->probe_at;
}

/* Declares lost what RACK or the timer says is; returns the earliest
 * expiry of what stays in flight.  RACK: a packet is lost once one sent
 * after it (by more than a quarter of a round trip, for reordering) has
 * been acknowledged; the timer is left for the tail, where nothing later
 * can be acknowledged.  Packets merely queued behind a burst are never
 * declared lost this way. */
static int64_t detect_losses(struct hcl_xfer *x, int64_t now)
{
	struct txs *t = &x->tx;
	struct hcl_xfer_cc *c = &x->cc[t->to];
	int64_t reo = x->srtt_ns / 4 > 200000 ? x->srtt_ns / 4 : 200000, next = INT64_MAX;
	bool timeout = false;
	for (uint32_t i = 0; i < t->next_new; i++) {
		if (t->acked[i] || t->lost[i])
			continue;
		if (t->sent_at[i] + reo < t->delivered_sent_at && t->sent_at[i] + reo < now) {
			t->lost[i] = 1;
			t->inflight--;
			cc_loss(x, t->sent_at[i], now);
			continue;
		}
		/* as TCP: the timer restarts while ACKs make progress, so a long
		 * queue that drains steadily never fires it */
		int64_t since = t->sent_at[i] > t->progress_at ? t->sent_at[i] : t->progress_at;
		int64_t due = since + xfer_rto_ns(x, t->tries[i]);
		if (due <= now)
			timeout = true;
		else if (due < next)
			next = due;
	}
	if (timeout) {
		/* as TCP: all that is out is presumed lost and goes again one
		 * packet per round trip at first; resending the whole window at
		 * once refilled the queue that had overflowed, and a receiver
		 * that was only busy got it all twice */
		flight_lost(t);
		if (!c->rto_at) { /* a second expiry keeps the first's window to undo */
			c->undo_cwnd = c->cwnd;
			c->undo_ssthresh = c->ssthresh;
		}
		c->rto_at = now;
		c->ssthresh = c->cwnd / 2 > 2 ? c->cwnd / 2 : 2;
		c->cwnd = 1;
		c->recover_at = now;
		x->stats.timeouts++;
	}
	return next;
}

/* Sends what is due: packets declared lost first, then new ones, as the
 * congestion window allows.  Returns the earliest time a packet in flight
 * expires. */
int64_t xfer_pump_tx(struct hcl_xfer *x, int64_t now, uint8_t *pkt)
{
	struct txs *t = &x->tx;
	struct hcl_xfer_cc *c = &x->cc[t->to];
	if (!t->active || t->nacked == t->total)
		return INT64_MAX;
	if (t->peer_waits)
		return probe(x, now, pkt);
	int64_t next = detect_losses(x, now);
	const uint32_t win = c->cwnd < x->cfg.window ? (uint32_t)c->cwnd : x->cfg.window;
	for (uint32_t i = 0; i < t->next_new && t->inflight < win; i++) {
		if (!t->lost[i])
			continue;
		int64_t lw = local_queue_wait(x, now);
		if (lw)
			return lw < next ? lw : next;
		if (!send_data(x, i, pkt))
			return now; /* socket full: try again soon */
		t->lost[i] = 0;
		if (t->tries[i] < 255)
			t->tries[i]++;
		t->sent_at[i] = now;
		t->inflight++;
		x->stats.data_resent++;
		if (now + xfer_rto_ns(x, t->tries[i]) < next)
			next = now + xfer_rto_ns(x, t->tries[i]);
	}
	while (t->next_new < t->total && t->inflight < win) {
		uint32_t i = t->next_new;
		int64_t lw = local_queue_wait(x, now);
		if (lw)
			return lw < next ? lw : next;
		if (!send_data(x, i, pkt))
			return now;
		t->sent_at[i] = now;
		t->tries[i] = 0;
		t->next_new++;
		t->inflight++;
		x->stats.data_sent++;
		if (now + xfer_rto_ns(x, 0) < next)
			next = now + xfer_rto_ns(x, 0);
	}
	return next;
}

/* WAIT: what was sent is dropped (not lost to congestion: the window
 * stays); only probe until READY or an ACK.  READY: send it all again. */
void xfer_on_flow(struct hcl_xfer *x, int src, uint8_t type, uint32_t tag)
{
	struct txs *t = &x->tx;
	if (!t->active || src != t->to || tag != t->tag)
		return;
	if (type == T_READY) {
		t->peer_waits = false;
		return;
	}
	x->stats.waits_received++;
	flight_lost(t); /* a probe too, when it is refused */
	if (!t->peer_waits) {
		t->peer_waits = true;
		t->probes = 0;
		t->probe_at = clock_now_ns() + xfer_rto_ns(x, 0);
	}
}
