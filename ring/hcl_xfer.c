#include "hcl_xfer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAGIC 0x48
#define T_DATA 1
#define T_ACK 2
#define T_FIN 3 /* "all of tag acknowledged": the receiver may stop lingering */
#define T_NOTE 4 /* unreliable side datagram for the note handler (payload after the header) */
/* Receiver-driven flow control.  A rank that is not yet at the exchange a
 * neighbour sends for, and holds another early message already, drops the
 * data and says WAIT; when it reaches that exchange it says READY.  The
 * sender meanwhile only probes.  Without them, a rank two steps ahead of
 * its slow neighbour (a scheduling hiccup on a busy host) saw only time-outs:
 * its window collapsed to one packet and it waited a timer per step. */
#define T_WAIT 5
#define T_READY 6
#define BATCH 64
#define PKT_MAX 9000

/* Wire header, all fields big-endian:
 *   0 magic  1 type  2 src rank(16)  4 tag  8 seq|cum  12 total
 *  16 msg_len | sack low   20 reserved | sack high */

struct txs {
	bool active;
	int to;
	uint32_t tag, total;
	const uint8_t *buf;
	size_t len;
	uint8_t *acked;    /* per packet */
	int64_t *sent_at;  /* 0 = not sent */
	uint8_t *tries;
	uint8_t *lost;     /* declared lost, waiting to be sent again */
	uint32_t next_new, nacked, inflight; /* inflight: sent, neither acknowledged nor lost */
	int64_t delivered_sent_at; /* latest send time among packets acknowledged */
	int64_t progress_at;       /* last time an ACK acknowledged something new */
	bool peer_waits;           /* the receiver said WAIT: probe only */
	int64_t probe_at;
	uint8_t probes;
};

struct rxs {
	bool active;
	int from;
	uint32_t tag, total;
	uint8_t *buf;
	size_t len;
	uint8_t *got;
	uint32_t ngot, cum;
};

/* Early data of the exchange to come. */
struct stage {
	bool used;
	int from;
	uint32_t tag, total;
	size_t len;
	uint8_t *buf, *got;
	size_t cap, gcap;
	uint32_t ngot;
	bool fin; /* its sender's FIN came already */
};

/* Congestion window towards one peer (RFC 5681 in packets): slow start
 * to ssthresh, then one packet per window acknowledged; halved once per
 * round trip when a loss is detected, back to one packet on a timeout.
 * Without it the fixed window of 64 jumbo packets overran the switch
 * queues of the testbed (256 KiB uplinks), and every timeout resent the
 * whole window into the same full queue. */
struct hcl_xfer_cc {
	double cwnd, ssthresh;
	int64_t recover_at; /* losses of packets sent before this do not halve again */
	/* F-RTO (RFC 5682): the window before a time-out, restored when the
	 * ACKs show that everything it declared lost arrived without being
	 * resent — the receiver was only busy (computing between calls: no one
	 * reads its socket), the network lost nothing. */
	double undo_cwnd, undo_ssthresh;
	int64_t rto_at; /* of the time-out that may be undone; 0: none */
};

struct hcl_xfer {
	struct hcl_xfer_cfg cfg;
	struct sockaddr_in *peers;
	struct hcl_transport *t;
	struct txs tx;
	struct rxs rx;
	struct stage st;
	/* completed receives, to acknowledge again in full when their sender
	 * repeats itself (its last ACK was lost); several, because a rank's
	 * exchanges alternate between peers (hier: gather, then ring) */
	struct {
		bool valid;
		bool fin;      /* its sender confirmed our last ACK arrived */
		bool unlinger; /* completed since the last linger: linger waits for its FIN */
		int from;
		uint32_t tag, total;
	} done[8];
	unsigned done_next;
	bool rx_fin; /* the current receive's FIN came before it completed */
	uint8_t *rxbuf[BATCH];
	struct hcl_xfer_stats stats;
	size_t cap_pk; /* per-packet arrays sized for this many */
	void (*note_cb)(void *ctx, int src, const void *p, size_t len);
	void *note_ctx;
	/* round-trip estimate (RFC 6298), kept across exchanges */
	int64_t srtt_ns, rttvar_ns, rto_base_ns, rto_initial_ns;
	struct hcl_xfer_cc *cc; /* per peer, kept across exchanges */
	struct {
		bool valid;
		uint32_t tag;
	} *refused; /* per peer: the tag we told to WAIT */
	/* the host's queue as last seen full (local_queue_wait) */
	int64_t lq_at;
	long lq_bytes;
	double lq_rate; /* its drain rate, bytes per ns (0: not measured yet) */
};

int64_t hcl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return ntohl(v);
}

struct hcl_xfer *hcl_xfer_new(const struct hcl_xfer_cfg *cfg, struct hcl_transport *t, char *err, size_t errlen)
{
	if (!cfg || !t || !t->ops || cfg->nranks == 0 || cfg->nranks > HCL_XFER_MAX_PEERS ||
	    cfg->rank >= cfg->nranks || !cfg->peers) {
		snprintf(err, errlen, "xfer: need a transport, 1..%d ranks, rank < nranks and their addresses",
			 HCL_XFER_MAX_PEERS);
		return NULL;
	}
	if (cfg->payload > PKT_MAX - HCL_XFER_HDR) {
		snprintf(err, errlen, "xfer: payload %u exceeds %d bytes per packet", cfg->payload,
			 PKT_MAX - HCL_XFER_HDR);
		return NULL;
	}
	struct hcl_xfer *x = calloc(1, sizeof(*x));
	if (!x)
		goto nomem;
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
	if (!x->peers || !x->cc || !x->refused)
		goto nomem;
	for (unsigned i = 0; i < cfg->nranks; i++)
		x->cc[i] = (struct hcl_xfer_cc){ .cwnd = HCL_XFER_INITIAL_CWND < x->cfg.window ? HCL_XFER_INITIAL_CWND : x->cfg.window,
						 .ssthresh = x->cfg.window };
	memcpy(x->peers, cfg->peers, cfg->nranks * sizeof(*x->peers));
	for (int i = 0; i < BATCH; i++)
		if (!(x->rxbuf[i] = malloc(PKT_MAX)))
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
	for (int i = 0; i < BATCH; i++)
		free(x->rxbuf[i]);
	free(x->tx.acked);
	free(x->tx.sent_at);
	free(x->tx.tries);
	free(x->tx.lost);
	free(x->cc);
	free(x->refused);
	free(x->rx.got);
	free(x->st.buf);
	free(x->st.got);
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

static uint32_t npackets(const struct hcl_xfer *x, size_t len)
{
	return len ? (uint32_t)((len + x->cfg.payload - 1) / x->cfg.payload) : 1; /* an empty message is one packet */
}

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
	struct hcl_pkt p = { b, sizeof(b), x->peers[to] };
	if (x->t->ops->send_batch(x->t->ctx, &p, 1) == 1)
		x->stats.acks_sent++;
}

/* A header-only WAIT or READY for tag. */
static void send_flow(struct hcl_xfer *x, int to, uint8_t type, uint32_t tag)
{
	uint8_t b[HCL_XFER_HDR] = { MAGIC, type, (uint8_t)(x->cfg.rank >> 8), (uint8_t)x->cfg.rank };
	put32(b + 4, tag);
	struct hcl_pkt p = { b, sizeof(b), x->peers[to] };
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
	struct hcl_pkt p = { b, sizeof(b), x->peers[to] };
	if (x->t->ops->send_batch(x->t->ctx, &p, 1) == 1)
		x->stats.acks_sent++;
}

static void place(uint8_t *dst, size_t len, uint32_t payload, uint32_t seq, const uint8_t *data, size_t dlen)
{
	size_t off = (size_t)seq * payload;
	if (off < len)
		memcpy(dst + off, data, dlen);
}

/* Bytes packet seq of a len-byte message carries. */
static size_t seg_len(const struct hcl_xfer *x, size_t len, uint32_t seq)
{
	size_t off = (size_t)seq * x->cfg.payload;
	return off >= len ? 0 : (len - off < x->cfg.payload ? len - off : x->cfg.payload);
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
	struct rxs *r = &x->rx;
	if (r->active && tag == r->tag && src == r->from) {
		if (mlen != r->len) {
			x->stats.malformed++;
			return -1;
		}
		if (r->got[seq]) {
			x->stats.duplicates++;
		} else {
			place(r->buf, r->len, x->cfg.payload, seq, data, dlen);
			r->got[seq] = 1;
			r->ngot++;
			while (r->cum < r->total && r->got[r->cum])
				r->cum++;
			x->stats.data_received++;
		}
		return src;
	}
	for (unsigned i = 0; i < 8; i++)
		if (x->done[i].valid && tag == x->done[i].tag && src == x->done[i].from) {
			x->stats.stale++;
			return src; /* acknowledged in full again */
		}
	/* early: keep it for the exchange to come (one at a time) */
	struct stage *s = &x->st;
	if (s->used && (s->tag != tag || s->from != src || s->len != mlen)) {
		x->stats.early++; /* dropped: WAIT, and READY when we get there */
		x->refused[src].valid = true;
		x->refused[src].tag = tag;
		*refuse = true;
		return src;
	}
	if (!s->used) {
		if (grow((void **)&s->buf, &s->cap, mlen ? mlen : 1, 1) || grow((void **)&s->got, &s->gcap, total, 1))
			return -1;
		memset(s->got, 0, total);
		*s = (struct stage){ .used = true, .from = src, .tag = tag, .total = total, .len = mlen,
				     .buf = s->buf, .got = s->got, .cap = s->cap, .gcap = s->gcap };
	}
	x->stats.early++;
	if (!s->got[seq]) {
		place(s->buf, s->len, x->cfg.payload, seq, data, dlen);
		s->got[seq] = 1;
		s->ngot++;
	}
	return src;
}

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

static void on_ack(struct hcl_xfer *x, int src, const uint8_t *p)
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
		 * too, and undoing then (as a first version did) sent the full
		 * window into the queue that had just overflowed */
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
	int64_t now = hcl_now_ns();
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

/* What the ACK of the current or staged or previous receive says. */
static void ack_for(struct hcl_xfer *x, int src, uint32_t tag)
{
	for (unsigned i = 0; i < 8; i++)
		if (x->done[i].valid && tag == x->done[i].tag && src == x->done[i].from) {
			send_full_ack(x, src, tag, x->done[i].total);
			return;
		}
	if (x->rx.active && tag == x->rx.tag && src == x->rx.from)
		send_ack(x, src, tag, x->rx.cum, x->rx.got, x->rx.total);
	else if (x->st.used && tag == x->st.tag && src == x->st.from) {
		uint32_t cum = 0;
		while (cum < x->st.total && x->st.got[cum])
			cum++;
		send_ack(x, src, tag, cum, x->st.got, x->st.total);
	}
}

static int64_t rto_ns(const struct hcl_xfer *x, uint8_t tries)
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
	struct hcl_pkt hp = { pkt, (uint32_t)(HCL_XFER_HDR + dl), x->peers[t->to] };
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
	 * datagram leaving is enough (a first version measured only between
	 * two full looks, never did, and woke every 100 us). */
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

/* Sends what is due: packets declared lost first, then new ones, as the
 * congestion window allows.  Returns the earliest time a packet in flight
 * expires. */
static int64_t pump_tx(struct hcl_xfer *x, int64_t now, uint8_t *pkt)
{
	struct txs *t = &x->tx;
	struct hcl_xfer_cc *c = &x->cc[t->to];
	int64_t next = INT64_MAX;
	if (!t->active || t->nacked == t->total)
		return next;
	if (t->peer_waits) { /* a probe now and then, in case READY is lost */
		if (now < t->probe_at)
			return t->probe_at;
		/* the first packet refused, else the first unacknowledged (a
		 * probe whose WAIT was lost) */
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
		int64_t gap = rto_ns(x, t->probes < 255 ? ++t->probes : t->probes);
		t->probe_at = now + gap;
		return t->probe_at;
	}
	/* RACK: a packet is lost once one sent after it (by more than a quarter
	 * of a round trip, for reordering) has been acknowledged; the timer is
	 * left for the tail, where nothing later can be acknowledged.  Packets
	 * merely queued behind a burst are never declared lost this way. */
	int64_t reo = x->srtt_ns / 4 > 200000 ? x->srtt_ns / 4 : 200000;
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
		int64_t due = since + rto_ns(x, t->tries[i]);
		if (due <= now)
			timeout = true;
		else if (due < next)
			next = due;
	}
	if (timeout) {
		/* as TCP: all that is out is presumed lost and goes again one
		 * packet per round trip at first; resending the whole window at
		 * once (as before) refilled the queue that had overflowed, and
		 * a receiver that was only busy got it all twice */
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
		if (now + rto_ns(x, t->tries[i]) < next)
			next = now + rto_ns(x, t->tries[i]);
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
		if (now + rto_ns(x, 0) < next)
			next = now + rto_ns(x, 0);
	}
	return next;
}

/* WAIT: what was sent is dropped (not lost to congestion: the window
 * stays); only probe until READY or an ACK.  READY: send it all again. */
static void on_flow(struct hcl_xfer *x, int src, uint8_t type, uint32_t tag)
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
		t->probe_at = hcl_now_ns() + rto_ns(x, 0);
	}
}

/* Adds (who, tag) to a batch's list of answers unless it is there. */
static void answer_once(int *src, uint32_t *tag, int *n, int who, uint32_t t)
{
	for (int k = 0; k < *n; k++)
		if (src[k] == who && tag[k] == t)
			return;
	src[*n] = who;
	tag[(*n)++] = t;
}

/* Receives one batch (waiting at most wait_ns), handles it, and sends one
 * ACK per (peer, tag) that sent data.  Returns the datagrams seen or -errno. */
static int service(struct hcl_xfer *x, int64_t wait_ns)
{
	struct hcl_pkt in[BATCH];
	for (int i = 0; i < BATCH; i++)
		in[i] = (struct hcl_pkt){ .buf = x->rxbuf[i], .len = PKT_MAX };
	int n = x->t->ops->recv_batch(x->t->ctx, in, BATCH, wait_ns);
	if (n <= 0)
		return n;
	int ack_src[BATCH], wait_src[BATCH];
	uint32_t ack_tag[BATCH], wait_tag[BATCH];
	int nack = 0, nwait = 0;
	for (int i = 0; i < n; i++) {
		const uint8_t *p = in[i].buf;
		int src = rank_of(x, &in[i].peer);
		if (in[i].len < HCL_XFER_HDR || p[0] != MAGIC || src < 0 || (unsigned)(p[2] << 8 | p[3]) != (unsigned)src) {
			x->stats.malformed++;
			continue;
		}
		if (p[1] == T_ACK) {
			on_ack(x, src, p);
			continue;
		}
		if (p[1] == T_FIN) {
			uint32_t ftag = get32(p + 4);
			for (unsigned d = 0; d < 8; d++)
				if (x->done[d].valid && src == x->done[d].from && ftag == x->done[d].tag)
					x->done[d].fin = true;
			if (x->rx.active && src == x->rx.from && ftag == x->rx.tag)
				x->rx_fin = true; /* the sender finished before we did */
			else if (x->st.used && src == x->st.from && ftag == x->st.tag)
				x->st.fin = true; /* ... before our exchange even began */
			continue;
		}
		if (p[1] == T_WAIT || p[1] == T_READY) {
			on_flow(x, src, p[1], get32(p + 4));
			continue;
		}
		if (p[1] == T_NOTE) {
			if (x->note_cb) {
				x->stats.notes_received++;
				x->note_cb(x->note_ctx, src, p + HCL_XFER_HDR, in[i].len - HCL_XFER_HDR);
			} else {
				x->stats.malformed++;
			}
			continue;
		}
		if (p[1] != T_DATA) {
			x->stats.malformed++;
			continue;
		}
		uint32_t atag;
		bool refuse = false;
		int who = on_data(x, src, p, in[i].len, &atag, &refuse);
		if (who < 0)
			continue;
		/* one answer per (peer, tag) and batch: one per datagram would
		 * be a window of them */
		if (refuse)
			answer_once(wait_src, wait_tag, &nwait, who, atag);
		else
			answer_once(ack_src, ack_tag, &nack, who, atag);
	}
	for (int k = 0; k < nack; k++)
		ack_for(x, ack_src[k], ack_tag[k]);
	for (int k = 0; k < nwait; k++) {
		send_flow(x, wait_src[k], T_WAIT, wait_tag[k]);
		x->stats.waits_sent++;
	}
	return n;
}

static int linger(struct hcl_xfer *x, int64_t quiet_ns, int64_t deadline_ns, bool all);

int hcl_xfer_poll(struct hcl_xfer *x)
{
	return service(x, 0);
}

int hcl_xfer_poll_wait(struct hcl_xfer *x, int64_t wait_ns)
{
	return service(x, wait_ns > 0 ? wait_ns : 0);
}

void hcl_xfer_set_note_handler(struct hcl_xfer *x, void (*cb)(void *ctx, int src, const void *p, size_t len),
			       void *ctx)
{
	x->note_cb = cb;
	x->note_ctx = ctx;
}

int hcl_xfer_send_note(struct hcl_xfer *x, int to, const void *buf, size_t len)
{
	uint8_t b[HCL_XFER_HDR + HCL_XFER_NOTE_MAX] = { MAGIC, T_NOTE };
	if (to < 0 || (unsigned)to >= x->cfg.nranks || len > HCL_XFER_NOTE_MAX)
		return -EINVAL;
	b[2] = (uint8_t)(x->cfg.rank >> 8);
	b[3] = (uint8_t)x->cfg.rank;
	memcpy(b + HCL_XFER_HDR, buf, len);
	struct hcl_pkt p = { b, HCL_XFER_HDR + len, x->peers[to] };
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
	int64_t last = hcl_now_ns();
	for (;;) {
		int64_t now = hcl_now_ns();
		bool all_fin = true;
		for (unsigned d = 0; d < 8; d++)
			all_fin &= !x->done[d].valid || !(all || x->done[d].unlinger) || x->done[d].fin;
		if (all_fin || now - last >= quiet_ns || now >= deadline_ns) {
			for (unsigned d = 0; d < 8; d++)
				x->done[d].unlinger = false;
			return 0;
		}
		int64_t wait = quiet_ns - (now - last);
		if (wait > deadline_ns - now)
			wait = deadline_ns - now;
		uint64_t answered = x->stats.stale;
		int n = service(x, wait);
		if (n < 0)
			return n;
		/* only a re-send of a finished message is what lingering is for;
		 * other traffic (a neighbour's probes for an exchange to come,
		 * notes) came every 100 ms and kept a 200 ms quiet time from ever
		 * passing: ranks lingered to their deadline */
		if (x->stats.stale != answered)
			last = hcl_now_ns();
	}
}

static const char *addr_str(const struct sockaddr_in *a, char *b, size_t n)
{
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(b, n, "%s:%u", ip, ntohs(a->sin_port));
	return b;
}

int hcl_xfer_exchange(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from,
		      void *rbuf, size_t rlen, int64_t deadline_ns, char *err, size_t errlen)
{
	if ((to >= 0 && (unsigned)to >= x->cfg.nranks) || (from >= 0 && (unsigned)from >= x->cfg.nranks) ||
	    (slen && !sbuf) || (rlen && !rbuf) || slen > UINT32_MAX || rlen > UINT32_MAX) {
		snprintf(err, errlen, "xfer: bad arguments (to %d, from %d, %zu/%zu bytes)", to, from, slen, rlen);
		return -EINVAL;
	}
	struct txs *t = &x->tx;
	struct rxs *r = &x->rx;
	uint32_t tn = to >= 0 ? npackets(x, slen) : 0, rn = from >= 0 ? npackets(x, rlen) : 0;
	size_t need = tn > rn ? tn : rn;
	if (need > x->cap_pk) {
		void *a = realloc(t->acked, need), *s = realloc(t->sent_at, need * sizeof(int64_t)),
		     *tr = realloc(t->tries, need), *l = realloc(t->lost, need), *g = realloc(r->got, need);
		if (a)
			t->acked = a;
		if (s)
			t->sent_at = s;
		if (tr)
			t->tries = tr;
		if (l)
			t->lost = l;
		if (g)
			r->got = g;
		if (!a || !s || !tr || !l || !g) {
			snprintf(err, errlen, "xfer: out of memory");
			return -ENOMEM;
		}
		x->cap_pk = need;
	}
	if (to >= 0)
		x->cc[to].rto_at = 0; /* an undo concerns one message's packets */
	*t = (struct txs){ .active = to >= 0, .to = to, .tag = tag, .total = tn, .buf = sbuf, .len = slen,
			   .acked = t->acked, .sent_at = t->sent_at, .tries = t->tries, .lost = t->lost };
	if (tn) {
		memset(t->acked, 0, tn);
		memset(t->lost, 0, tn);
		memset(t->sent_at, 0, tn * sizeof(int64_t));
	}
	*r = (struct rxs){ .active = from >= 0, .from = from, .tag = tag, .total = rn, .buf = rbuf, .len = rlen,
			   .got = r->got };
	if (rn)
		memset(r->got, 0, rn);
	x->rx_fin = false;
	/* adopt what arrived early for this exchange */
	if (x->st.used && x->st.tag == tag && x->st.from == from) {
		if (x->st.len != rlen) {
			snprintf(err, errlen, "xfer: rank %d sends %zu bytes for tag %u, this rank expects %zu", from,
				 x->st.len, tag, rlen);
			x->st.used = false;
			return -EPROTO;
		}
		for (uint32_t i = 0; i < rn; i++)
			if (x->st.got[i]) {
				r->got[i] = 1;
				r->ngot++;
			}
		if (rlen)
			memcpy(rbuf, x->st.buf, rlen);
		x->rx_fin = x->st.fin;
		while (r->cum < rn && r->got[r->cum])
			r->cum++;
		x->st.used = false;
	}
	/* a staged message for another exchange stays: it was acknowledged, so
	 * its sender will not send it again */
	if (r->active && x->refused[from].valid && x->refused[from].tag == tag) {
		x->refused[from].valid = false;
		send_flow(x, from, T_READY, tag);
	}

	uint8_t pkt[PKT_MAX];
	int rc = 0;
	while ((t->active && t->nacked < t->total) || (r->active && r->ngot < r->total)) {
		int64_t now = hcl_now_ns();
		if (now >= deadline_ns) {
			char a[64];
			if (r->active && r->ngot < r->total)
				snprintf(err, errlen,
					 "rank %d (%s) did not deliver: %u of %u packets of tag %u arrived (held early: %s%d tag %u)",
					 from, addr_str(&x->peers[from], a, sizeof(a)), r->ngot, r->total, tag,
					 x->st.used ? "from " : "none ", x->st.used ? x->st.from : -1, x->st.used ? x->st.tag : 0);
			else
				snprintf(err, errlen, "rank %d (%s) did not acknowledge: %u of %u packets of tag %u",
					 to, addr_str(&x->peers[to], a, sizeof(a)), t->nacked, t->total, tag);
			rc = -ETIMEDOUT;
			break;
		}
		int64_t next = pump_tx(x, now, pkt);
		int64_t wait = next == INT64_MAX ? 1000000 : next - now;
		if (wait > 1000000)
			wait = 1000000; /* look at the deadline at least every ms */
		if (wait > deadline_ns - now)
			wait = deadline_ns - now;
		int n = service(x, wait > 0 ? wait : 0);
		if (n < 0) {
			snprintf(err, errlen, "xfer: receive: %s", strerror(-n));
			rc = n;
			break;
		}
	}
	if (r->active && rc == 0) {
		x->done[x->done_next % 8].valid = true;
		x->done[x->done_next % 8].fin = x->rx_fin;
		x->done[x->done_next % 8].unlinger = true;
		x->done[x->done_next % 8].from = from;
		x->done[x->done_next % 8].tag = tag;
		x->done[x->done_next % 8].total = rn;
		x->done_next++;
	}
	if (t->active && rc == 0) { /* best effort: a lost FIN costs the peer its linger */
		uint8_t b[HCL_XFER_HDR] = { MAGIC, T_FIN, (uint8_t)(x->cfg.rank >> 8), (uint8_t)x->cfg.rank };
		put32(b + 4, tag);
		struct hcl_pkt p = { b, sizeof(b), x->peers[to] };
		x->t->ops->send_batch(x->t->ctx, &p, 1);
	}
	t->active = false;
	r->active = false;
	return rc;
}
