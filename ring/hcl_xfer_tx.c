/* SPDX-License-Identifier: BSD-3-Clause */
/* The reliable transfer's sending side: the window of packets in flight,
 * losses found by RACK or the timer, the congestion window per peer
 * (TCP's), and the limit on our own data queued in the host. */
#include <errno.h>
#include <limits.h>
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

/* Delivery rate samples over at least a millisecond of sending, smoothed.
 * The clock restarts with each message (xfer_tx_start), so the time
 * between messages does not count. */
static void delivered(struct hcl_xfer *x, uint64_t bytes, int64_t now)
{
	x->dr_bytes += bytes;
	if (now - x->dr_at < 1000000)
		return;
	double r = (double)x->dr_bytes / (double)(now - x->dr_at);
	x->dr_rate = x->dr_rate > 0 ? x->dr_rate + (r - x->dr_rate) / 4 : r;
	x->dr_at = now;
	x->dr_bytes = 0;
}

void xfer_tx_start(struct hcl_xfer *x, int64_t now)
{
	x->dr_at = now;
	x->dr_bytes = 0;
}

/* The send (current or trailing) that a datagram of src about tag concerns, or NULL. */
static struct txs *send_of(struct hcl_xfer *x, int src, uint32_t tag)
{
	struct txs *t = x->tx;
	if (t->active && src == t->to && tag == t->tag)
		return t;
	t = x->trail;
	return t->active && src == t->to && tag == t->tag ? t : NULL;
}

void xfer_on_ack(struct hcl_xfer *x, int src, const uint8_t *p)
{
	struct txs *t = send_of(x, src, get32(p + 4));
	if (!t)
		return; /* an ACK of an earlier exchange */
	uint32_t cum = get32(p + 8), before = t->nacked;
	uint64_t sack = get32(p + 16) | (uint64_t)get32(p + 20) << 32;
	if (cum > t->total)
		cum = t->total;
	struct hcl_xfer_cc *c = &x->cc[t->to];
	int64_t newest = 0;
	bool spurious = false, genuine = false;
	/* below snd_una all is acknowledged already: each packet is looked at
	 * about once, however long the message */
	for (uint32_t k = t->snd_una; k < cum + 64 && k < t->total; k++) {
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
				clear_lost(t, k); /* it arrived after all */
			else
				t->inflight--;
			if (t->tries[k] == 0 && t->sent_at[k] > newest)
				newest = t->sent_at[k];
			if (t->sent_at[k] > t->delivered_sent_at ||
			    (t->sent_at[k] == t->delivered_sent_at && k > t->delivered_seq)) {
				t->delivered_sent_at = t->sent_at[k];
				t->delivered_seq = k;
			}
		}
	}
	if (spurious) { /* even if the resent head was acknowledged with it */
		/* and only if nothing the expiry declared lost is still missing:
		 * after a tail drop, packets in flight before it are acknowledged
		 * too, and undoing then would send the full window into the
		 * queue that has just overflowed */
		bool missing = false;
		for (uint32_t i = t->snd_una; i < t->next_new && !missing; i++)
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
	while (t->snd_una < t->total && t->acked[t->snd_una])
		t->snd_una++;
	int64_t now = clock_now_ns();
	if (newest)
		rtt_sample(x, now - newest);
	if (t->nacked != before) {
		delivered(x, (uint64_t)(t->nacked - before) * x->cfg.payload, now);
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

/* The header of packet i of t's message; ack_hint: how many the
 * receiver may take before it acknowledges. */
static void put_header(const struct hcl_xfer *x, const struct txs *t, uint32_t i, uint32_t ack_hint, uint8_t *h)
{
	h[0] = MAGIC;
	h[1] = T_DATA;
	h[2] = (uint8_t)(x->cfg.rank >> 8);
	h[3] = (uint8_t)x->cfg.rank;
	put32(h + 4, t->tag);
	put32(h + 8, i);
	put32(h + 12, t->total);
	put32(h + 16, (uint32_t)t->len);
	put32(h + 20, ack_hint);
}

/* Sends packet i alone (a probe); false when the socket is full. */
static bool send_one(struct hcl_xfer *x, const struct txs *t, uint32_t i)
{
	uint8_t h[HCL_XFER_HDR];
	size_t dl = seg_len(x, t->len, i);
	put_header(x, t, i, 0, h); /* a probe wants its answer at once */
	struct iovec iov[2] = { { h, sizeof(h) }, { (void *)(t->buf + (size_t)i * x->cfg.payload), dl } };
	struct dgram_pkt p = {
		.len = (uint32_t)(HCL_XFER_HDR + dl), .peer = x->peers[t->to], .iov = iov, .iovcnt = dl ? 2 : 1
	};
	return x->t->ops->send_batch(x->t->ctx, &p, 1) == 1;
}

/* Everything in flight is to be sent again (a time-out, a WAIT). */
static void flight_lost(struct txs *t)
{
	for (uint32_t i = t->snd_una; i < t->next_new; i++)
		if (!t->acked[i] && !t->lost[i])
			set_lost(t, i);
	t->inflight = 0;
}

/* A loss was detected (packet sent at sent_at): halve the window, once per
 * round trip (RFC 6675's recovery point, by send time). */
static void cc_loss(struct hcl_xfer *x, const struct txs *t, int64_t sent_at, int64_t now)
{
	struct hcl_xfer_cc *c = &x->cc[t->to];
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
 * than a millisecond of our delivery rate (at least cfg.local_queue
 * bytes) is still in the host, and a batch adds at most what is left of
 * that.  Not a fixed size: on a software bridge the "queue" is the CPU's
 * backlog, served when the kernel gets to it, and 64 KB there held a ring
 * of four ranks at half the speed it reached without the limit.  Returns
 * the bytes a batch may add (in datagram bytes; at least one datagram
 * goes), or 0; *wake then says when to look again: when about half the
 * queue will have left, at the drain rate measured between two looks. */
static long local_queue_room(struct hcl_xfer *x, int64_t now, int64_t *wake)
{
	if (!x->t->ops->tx_queued || x->cfg.local_queue == UINT32_MAX)
		return LONG_MAX;
	long q = x->t->ops->tx_queued(x->t->ctx), limit = (long)(x->dr_rate * 1e6);
	if (limit < (long)x->cfg.local_queue)
		limit = (long)x->cfg.local_queue;
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
	int64_t w = x->lq_rate > 0 ? (int64_t)((double)(q - limit / 2) / x->lq_rate) : 100000;
	*wake = now + (w < 20000 ? 20000 : w > 2000000 ? 2000000 : w);
	if (q < 0)
		return LONG_MAX; /* unknown */
	if (q < limit) {
		x->lq_at = 0;
		return limit - q;
	}
	if (!x->lq_at) { /* packets leave whole: an unchanged count keeps the older look */
		x->lq_at = now;
		x->lq_bytes = q;
	}
	x->stats.local_waits++;
	return 0;
}

/* The receiver said WAIT: a probe now and then, in case READY is lost. */
static int64_t probe(struct hcl_xfer *x, struct txs *t, int64_t now)
{
	if (now < t->probe_at)
		return t->probe_at;
	/* the first packet refused, else the first unacknowledged (a probe
	 * whose WAIT was lost) */
	uint32_t i = t->snd_una, first = UINT32_MAX;
	for (; i < t->next_new && !(!t->acked[i] && t->lost[i]); i++)
		if (!t->acked[i] && first == UINT32_MAX)
			first = i;
	if (i == t->next_new)
		i = first;
	if (i != UINT32_MAX) {
		if (!send_one(x, t, i))
			return now;
		if (t->lost[i]) {
			clear_lost(t, i);
			t->inflight++;
		}
		t->sent_at[i] = now;
		x->stats.data_resent++;
	}
	t->probe_at = now + xfer_rto_ns(x, t->probes < 255 ? ++t->probes : t->probes);
	return t->probe_at;
}

/* Tail loss probe (RFC 8985): when nothing is known lost but packets are
 * out and no ACK has come for two round trips (plus the receiver's ACK
 * delay), the last of them goes again, once per tail.  Its ACK shows
 * what is missing, and RACK resends that.  Without it a lost last packet
 * (or a lost last ACK) waited for the timer, 10 ms at least: at 1% loss
 * per port a ring of eight stalled so at most steps.  Returns the earlier
 * of next and when the probe is due. */
static int64_t tail_probe(struct hcl_xfer *x, struct txs *t, int64_t now, int64_t next)
{
	if (t->tlp_done || t->nlost || !t->inflight || !x->srtt_ns)
		return next; /* (without a round trip measured the timer is all there is) */
	int64_t pto = 2 * x->srtt_ns + ACK_DELAY_NS, due = t->last_sent_at + (pto > 1000000 ? pto : 1000000);
	if (due > now)
		return due < next ? due : next;
	for (uint32_t i = t->next_new; i-- > t->snd_una;)
		if (!t->acked[i] && !t->lost[i]) {
			set_lost(t, i);
			t->inflight--;
			break;
		}
	t->tlp_done = true;
	x->stats.tail_probes++;
	return now;
}

/* Declares lost what RACK or the timer says is; returns the earliest
 * expiry of what stays in flight.  RACK (RFC 8985): a packet is lost when
 * one sent after it (or in the same batch, later in the message) has been
 * acknowledged and a round trip and a reordering window (a quarter of
 * one, at least 200 us) have passed since it was sent; the timer is left
 * for the tail, where nothing later can be acknowledged.  Packets merely
 * queued behind a burst are never declared lost this way.  "In the same
 * batch" matters since a batch leaves in one system call: one datagram
 * lost inside a run was otherwise found by the timer. */
static int64_t detect_losses(struct hcl_xfer *x, struct txs *t, int64_t now)
{
	struct hcl_xfer_cc *c = &x->cc[t->to];
	int64_t reo = x->srtt_ns / 4 > 200000 ? x->srtt_ns / 4 : 200000, next = INT64_MAX;
	bool timeout = false;
	for (uint32_t i = t->snd_una; i < t->next_new; i++) {
		if (t->acked[i] || t->lost[i])
			continue;
		if (t->sent_at[i] < t->delivered_sent_at ||
		    (t->sent_at[i] == t->delivered_sent_at && i < t->delivered_seq)) {
			int64_t lost_at = t->sent_at[i] + x->srtt_ns + reo;
			if (lost_at <= now) {
				set_lost(t, i);
				t->inflight--;
				cc_loss(x, t, t->sent_at[i], now);
				continue;
			}
			if (lost_at < next)
				next = lost_at;
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
	if (!timeout)
		next = tail_probe(x, t, now, next);
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

/* Packets of t to send now: those declared lost first, then new ones, as
 * the congestion window, the batch and room bytes allow.  The window
 * towards a peer covers both sends to it, current and trailing. */
static unsigned pick(struct hcl_xfer *x, struct txs *t, long room, uint32_t *idx, bool *room_full)
{
	const struct hcl_xfer_cc *c = &x->cc[t->to];
	const struct txs *o = t == x->tx ? x->trail : x->tx;
	uint32_t win = c->cwnd < x->cfg.window ? (uint32_t)c->cwnd : x->cfg.window;
	if (o->active && o->to == t->to)
		win = o->inflight < win ? win - o->inflight : 0;
	unsigned n = 0, lost_seen = 0;
	long bytes = 0;
	for (uint32_t i = t->snd_una; i < t->next_new && lost_seen < t->nlost; i++) {
		if (!t->lost[i])
			continue;
		lost_seen++;
		if (t->inflight + n >= win || n == BATCH || bytes >= room) {
			*room_full = bytes >= room;
			return n;
		}
		idx[n++] = i;
		bytes += HCL_XFER_HDR + (long)seg_len(x, t->len, i);
	}
	for (uint32_t i = t->next_new; i < t->total && t->inflight + n < win && n < BATCH && bytes < room; i++) {
		idx[n++] = i;
		bytes += HCL_XFER_HDR + (long)seg_len(x, t->len, i);
	}
	*room_full = bytes >= room;
	return n;
}

/* Cuts the picked packets into runs of consecutive full-size ones (the
 * transport sends each in one go, the kernel cutting it into datagrams);
 * run r carries idx[first[r] .. first[r + 1]).  Headers go to b->hdr,
 * data straight from the caller's buffer. */
static unsigned make_runs(struct hcl_xfer *x, const struct txs *t, const uint32_t *idx, unsigned n,
			  struct xfer_tx_batch *b)
{
	const uint32_t full = HCL_XFER_HDR + x->cfg.payload;
	unsigned most = dgram_max_segs(x->t), nruns = 0, niov = 0;
	/* ACKs every quarter window: each costs the receiver a send and us a
	 * wake-up (one per 11 datagrams was 15% of the CPU of a ring) */
	uint32_t hint = (uint32_t)(x->cc[t->to].cwnd / 4);
	if (most > DGRAM_MAX_RUN / full)
		most = DGRAM_MAX_RUN / full;
	for (unsigned k = 0; k < n; k++) {
		uint32_t i = idx[k];
		size_t dl = seg_len(x, t->len, i);
		struct dgram_pkt *r = nruns ? &b->run[nruns - 1] : NULL;
		bool joins = r && idx[k - 1] + 1 == i && k - b->first[nruns - 1] < most && r->len % full == 0;
		if (!joins) {
			b->first[nruns] = k;
			r = &b->run[nruns++];
			*r = (struct dgram_pkt){ .peer = x->peers[t->to], .iov = &b->iov[niov] };
		}
		put_header(x, t, i, hint, b->hdr[k]);
		b->iov[niov++] = (struct iovec){ b->hdr[k], HCL_XFER_HDR };
		if (dl)
			b->iov[niov++] = (struct iovec){ (void *)(t->buf + (size_t)i * x->cfg.payload), dl };
		r->iovcnt = (uint16_t)(&b->iov[niov] - r->iov);
		r->len += (uint32_t)(HCL_XFER_HDR + dl);
		if (joins)
			r->seg = (uint16_t)full; /* a lone datagram goes without: no cutting */
	}
	b->first[nruns] = n;
	return nruns;
}

/* Sends what is due of t: packets declared lost first, then new ones, as
 * the congestion window allows, in one batch of runs.  Returns the
 * earliest time a packet in flight expires. */
static int64_t pump(struct hcl_xfer *x, struct txs *t, int64_t now)
{
	if (!t->active || t->nacked == t->total)
		return INT64_MAX;
	if (t->peer_waits)
		return probe(x, t, now);
	int64_t next = detect_losses(x, t, now), wake = 0;
	if (!t->nlost && t->next_new == t->total)
		return next; /* all sent, none to resend (a trailing send's usual state) */
	long room = local_queue_room(x, now, &wake);
	if (!room)
		return wake < next ? wake : next;
	struct xfer_tx_batch *b = &x->txb;
	bool room_full = false;
	unsigned n = pick(x, t, room, b->idx, &room_full);
	if (room_full && wake < next)
		next = wake; /* more may go once the host's queue drains */
	if (!n)
		return next;
	unsigned nruns = make_runs(x, t, b->idx, n, b);
	int r = x->t->ops->send_batch(x->t->ctx, b->run, nruns);
	unsigned sent = r > 0 ? b->first[r] : 0;
	if (r > 0)
		x->stats.data_runs += (unsigned)r;
	for (unsigned k = 0; k < sent; k++) {
		uint32_t i = b->idx[k];
		if (i < t->next_new) {
			clear_lost(t, i);
			if (t->tries[i] < 255)
				t->tries[i]++;
			x->stats.data_resent++;
		} else {
			t->tries[i] = 0;
			t->next_new++;
			t->tlp_done = false; /* new data: a new tail */
			x->stats.data_sent++;
		}
		t->last_sent_at = now;
		t->sent_at[i] = now;
		t->inflight++;
		if (now + xfer_rto_ns(x, t->tries[i]) < next)
			next = now + xfer_rto_ns(x, t->tries[i]);
	}
	return sent < n ? now : next; /* socket full (or a run refused): again soon */
}

int64_t xfer_pump_tx(struct hcl_xfer *x, int64_t now)
{
	int64_t a = pump(x, x->trail, now), b = pump(x, x->tx, now);
	return a < b ? a : b;
}

/* WAIT: what was sent is dropped (not lost to congestion: the window
 * stays); only probe until READY or an ACK.  READY: send it all again. */
void xfer_on_flow(struct hcl_xfer *x, int src, uint8_t type, uint32_t tag)
{
	struct txs *t = send_of(x, src, tag);
	if (!t)
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
