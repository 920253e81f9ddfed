/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_ina_win.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int hcl_inaw_init(struct hcl_inaw *w, uint32_t slots, int64_t rto_floor_ns, int64_t rto_cap_ns)
{
	*w = (struct hcl_inaw){ .slots = slots, .window = slots, .end = SIZE_MAX };
	hcl_rtt_init(&w->rtt, rto_floor_ns, rto_cap_ns);
	return (w->s = calloc(slots ? slots : 1, sizeof(*w->s))) ? 0 : -ENOMEM;
}

void hcl_inaw_init_timer(struct hcl_inaw *w, int64_t rto_floor_ns, int64_t rto_cap_ns)
{
	hcl_rtt_init(&w->rtt, rto_floor_ns, rto_cap_ns);
}

void hcl_inaw_free(struct hcl_inaw *w)
{
	free(w->s);
	w->s = NULL;
}

void hcl_inaw_reset(struct hcl_inaw *w)
{
	for (uint32_t i = 0; i < w->slots; i++)
		w->s[i].busy = false;
	w->done_sent_at = 0;
	w->done_at = 0;
}

int hcl_inaw_next_slot(const struct hcl_inaw *w, size_t next, size_t first)
{
	if (next >= w->end || next < first)
		return -1;
	const uint32_t i = (uint32_t)((next - first) % w->slots);
	uint32_t flowing = 0;
	for (uint32_t j = 0; j < w->slots; j++)
		flowing += w->s[j].busy && !w->s[j].stalled;
	return w->s[i].busy || flowing >= hcl_inacc_allowed(&w->cc, w->window) ? -1 : (int)i;
}

struct hcl_inaw_slot *hcl_inaw_start(struct hcl_inaw *w, uint32_t slot, size_t slice, int64_t sent_at, bool early)
{
	struct hcl_inaw_slot *s = &w->s[slot];
	*s = (struct hcl_inaw_slot){
		.busy = true, .early = early, .set = s->set, .slice = slice, .sent_at = sent_at, .first_at = sent_at
	};
	return s;
}

/* the least wait for an answer to a re-send (a scheduler's tick) */
#define HCL_INAW_ANSWER_MIN_NS 500000

/* A chain's slice waits at least this many smoothed round trips
 * (hcl_inaw.chain) */
#define HCL_INAW_CHAIN_SRTTS 3

static int64_t timer(const struct hcl_inaw *w, const struct hcl_inaw_slot *s, int64_t floor_ns)
{
	int64_t rto = hcl_rtt_rto(&w->rtt, s->expiries);
	const unsigned shift = s->expiries < 4 ? s->expiries : 4;
	if (w->chain) {
		int64_t c = (HCL_INAW_CHAIN_SRTTS * w->rtt.srtt) << shift;
		c = c < w->rtt.cap ? c : w->rtt.cap;
		rto = rto > c ? rto : c;
	}
	if (floor_ns) {
		int64_t f = floor_ns << shift;
		if (rto < f)
			rto = f;
	}
	return rto;
}

/* RACK's reorder window after a round trip rtt: a quarter of it, at
 * least a scheduler's tick */
static int64_t reorder(int64_t rtt) { return rtt / 4 > 200000 ? rtt / 4 : 200000; }

/* When RACK counts slot s lost, or INT64_MAX: a smoothed round trip and a
 * reorder window after its send for a slice sent before one that is done,
 * and for a tail slice (no later one can come back); for a held one
 * (hcl_inaw_held), a reorder window of the least round trip after a
 * result that came after its HAVE. */
static int64_t rack_lost_at(const struct hcl_inaw *w, const struct hcl_inaw_slot *s, int64_t floor_ns)
{
	if (floor_ns || !w->rtt.srtt || !s->sent_at)
		return INT64_MAX;
	int64_t at = INT64_MAX;
	if ((w->rack && s->sent_at < w->done_sent_at) || (s->tries == 0 && s->slice + w->window >= w->end))
		at = s->sent_at + w->rtt.srtt + reorder(w->rtt.srtt);
	if (w->rack && s->held && w->done_at > s->held_at) {
		const int64_t probe = w->done_at + reorder(w->min_rtt);
		at = probe < at ? probe : at;
	}
	return at;
}

/* The most doublings of the wait for an answer to a re-send */
#define HCL_INAW_ANSWER_MAX_SHIFT 6

/* When a re-sent slice that got no answer counts as lost (w->answers), or
 * INT64_MAX.  Each re-send of the slice in a row doubles the wait: a
 * burst of re-sends leaves the sender one after another, so the last of
 * them reaches the aggregator a burst's transmit time late; counted lost
 * at a fixed two round trips, they went again into the sender's own
 * queue, which grew with every round (the simulator, 4 hosts on one INA
 * ToR, 1 MiB: a rank that started its call early re-sent 119 MB, 7.1 s a
 * call; 0.10 s with the doubling). */
static int64_t unanswered_at(const struct hcl_inaw *w, const struct hcl_inaw_slot *s)
{
	if (!w->answers || !s->tries || s->held || !w->min_rtt || !s->sent_at)
		return INT64_MAX;
	const unsigned shift = s->tries - 1u < HCL_INAW_ANSWER_MAX_SHIFT ? s->tries - 1u : HCL_INAW_ANSWER_MAX_SHIFT;
	const int64_t wait = 2 * w->min_rtt > HCL_INAW_ANSWER_MIN_NS ? 2 * w->min_rtt : HCL_INAW_ANSWER_MIN_NS;
	return s->sent_at + (wait << shift);
}

/* Slot s went again now; seen: its loss was seen (RACK, a probe, an
 * unanswered re-send, a MISS), so its timer is not doubled. */
static void note_resend(struct hcl_inaw_slot *s, int64_t now, bool seen)
{
	s->sent_at = now;
	s->held = false;
	if (!s->first_at)
		s->first_at = now; /* its first send went now */
	if (s->tries < 255)
		s->tries++;
	if (!seen && s->expiries < 255)
		s->expiries++;
	s->stalled |= seen;
}

void hcl_inaw_resend(struct hcl_inaw *w, int64_t now, int64_t floor_ns, bool (*send)(void *ctx, uint32_t slot),
		     void *ctx, int64_t *wake, uint64_t *resent)
{
	for (uint32_t i = 0; i < w->slots; i++) {
		struct hcl_inaw_slot *s = &w->s[i];
		if (!s->busy)
			continue;
		int64_t due = s->sent_at + timer(w, s, floor_ns);
		bool rack = false;
		const int64_t lost_at = rack_lost_at(w, s, floor_ns);
		if (lost_at < INT64_MAX) {
			rack = lost_at <= now;
			if (lost_at < due)
				due = lost_at;
		}
		const int64_t unanswered = unanswered_at(w, s);
		if (unanswered < due) {
			due = unanswered;
			rack = rack || due <= now; /* seen lost, no expiry */
		}
		if (due <= now) {
			if (!send(ctx, i))
				return; /* socket full: the next round */
			/* a slice that waits for others says nothing of the round
			 * trip, nor does one found lost by RACK */
			if (!floor_ns && !rack)
				hcl_rtt_expired(&w->rtt, s->sent_at, now);
			note_resend(s, now, rack);
			(*resent)++;
			due = now + timer(w, s, floor_ns);
			const int64_t next = unanswered_at(w, s);
			if (next < due)
				due = next;
		}
		if (due < *wake)
			*wake = due;
	}
}

/* An idle report (INA_F_IDLE): the aggregator heard nothing for a while
 * with slice h->seq collecting and this sender's contribution not in it.
 * Sent, it was lost; not sent, the sender's window is full of slices the
 * aggregator has moved past, whose answers were lost: the oldest of those
 * that no HAVE holds goes again (the aggregator answers it from the
 * stored result). */
static int idle_missed(const struct hcl_inaw *w, const struct ina_hdr *h)
{
	const uint32_t i = ina_slot_index(h->slot);
	if (w->s[i].busy && w->s[i].slice == h->seq && w->s[i].sent_at)
		return (int)i;
	int oldest = -1;
	for (uint32_t j = 0; j < w->slots; j++) {
		const struct hcl_inaw_slot *o = &w->s[j];
		if (o->busy && !o->held && o->sent_at && o->slice < h->seq &&
		    (oldest < 0 || o->slice < w->s[oldest].slice))
			oldest = (int)j;
	}
	return oldest;
}

int hcl_inaw_missed(const struct hcl_inaw *w, const struct ina_hdr *h, uint32_t epoch)
{
	const uint32_t i = ina_slot_index(h->slot);
	if (h->epoch != epoch || i >= w->slots)
		return -1;
	if (h->flags & INA_F_IDLE)
		return idle_missed(w, h);
	if (w->slots < 2)
		return -1;
	const struct hcl_inaw_slot *s = &w->s[i], *next = &w->s[i + 1 < w->slots ? i + 1 : 0];
	/* what made the report went after this slot's latest send: the way
	 * keeps order, so that send is lost (a report that crossed a re-send
	 * is stale) */
	if (!s->busy || s->slice != h->seq || !s->sent_at || !next->busy || next->slice != (size_t)h->seq + 1 ||
	    next->first_at <= s->sent_at)
		return -1;
	return (int)i;
}

void hcl_inaw_held(struct hcl_inaw_slot *s, int64_t now)
{
	s->held = true;
	s->held_at = now;
}

void hcl_inaw_resent(struct hcl_inaw *w, uint32_t slot, int64_t now) { note_resend(&w->s[slot], now, true); }

struct hcl_inaw_slot *hcl_inaw_match(struct hcl_inaw *w, const struct ina_hdr *h, uint32_t epoch)
{
	uint32_t i = ina_slot_index(h->slot);
	struct hcl_inaw_slot *s = i < w->slots ? &w->s[i] : NULL;
	if (!s || !s->busy || h->epoch != epoch || h->seq != (uint32_t)s->slice || ina_slot_set(h->slot) != s->set)
		return NULL;
	return s;
}

void hcl_inaw_done(struct hcl_inaw *w, struct hcl_inaw_slot *s, int64_t now)
{
	if (s->tries == 0 && s->sent_at && !s->early) {
		hcl_rtt_sample(&w->rtt, now - s->sent_at);
		if (!w->min_rtt || now - s->sent_at < w->min_rtt)
			w->min_rtt = now - s->sent_at;
	}
	/* an answer sooner after a re-send than any round trip answers an
	 * earlier send: RACK dates it by the first, or a spurious re-send would
	 * make every slice sent before it look lost (RFC 8985 keeps this rule) */
	int64_t at = s->tries && now - s->sent_at < w->min_rtt ? s->first_at : s->sent_at;
	if (at > w->done_sent_at)
		w->done_sent_at = at;
	w->done_at = now;
	s->set ^= 1;
	s->busy = false;
}

void hcl_inaw_answer(struct hcl_inaw *w, bool marked, int64_t now)
{
	hcl_inacc_answer(&w->cc, w->window, marked, now, w->rtt.srtt);
}

#define RXBUF (INA_HDR_LEN + INA_MAX_PAYLOAD + 64)

/* n datagram buffers: 0, or -ENOMEM with what was allocated in b[] */
static int bufs_alloc(uint8_t **b, int n)
{
	for (int i = 0; i < n; i++)
		if (!(b[i] = malloc(RXBUF)))
			return -ENOMEM;
	return 0;
}

static void bufs_free(uint8_t **b, int n)
{
	for (int i = 0; i < n; i++) {
		free(b[i]);
		b[i] = NULL;
	}
}

int hcl_ina_rx_init(struct hcl_ina_rx *r) { return bufs_alloc(r->buf, HCL_INA_BATCH); }

void hcl_ina_rx_free(struct hcl_ina_rx *r) { bufs_free(r->buf, HCL_INA_BATCH); }

int hcl_ina_rx_batch(struct hcl_ina_rx *r, struct dgram_transport *t, struct dgram_pkt in[HCL_INA_BATCH], int64_t now,
		     int64_t wake, int64_t deadline_ns)
{
	if (wake > deadline_ns)
		wake = deadline_ns;
	for (int i = 0; i < HCL_INA_BATCH; i++)
		in[i] = (struct dgram_pkt){ .buf = r->buf[i], .len = RXBUF };
	int n = t->ops->recv_batch(t->ctx, in, HCL_INA_BATCH, wake > now ? wake - now : 0);
	for (int i = 0; i < n; i++) /* a mark on the last hop (the switch carried any before it) */
		ina_take_ce(in[i].buf, in[i].len, in[i].ce);
	return n;
}

int hcl_ina_tx_init(struct hcl_ina_tx *q)
{
	*q = (struct hcl_ina_tx){ .n = 0 };
	return bufs_alloc(q->buf, HCL_INA_TX_BATCH);
}

void hcl_ina_tx_free(struct hcl_ina_tx *q) { bufs_free(q->buf, HCL_INA_TX_BATCH); }

uint8_t *hcl_ina_tx_buf(struct hcl_ina_tx *q, struct dgram_transport *t)
{
	if (q->n == HCL_INA_TX_BATCH)
		hcl_ina_tx_flush(q, t);
	return q->buf[q->n];
}

void hcl_ina_tx_push(struct hcl_ina_tx *q, size_t len, const struct sockaddr_in *peer, struct hcl_inaw_slot *s)
{
	q->pkt[q->n] = (struct dgram_pkt){ .buf = q->buf[q->n], .len = (uint32_t)len, .peer = *peer };
	q->slot[q->n++] = s;
}

void hcl_ina_tx_flush(struct hcl_ina_tx *q, struct dgram_transport *t)
{
	if (!q->n)
		return;
	int sent = t->ops->send_batch(t->ctx, q->pkt, q->n);
	for (unsigned i = sent > 0 ? (unsigned)sent : 0; i < q->n; i++)
		q->slot[i]->sent_at = 0; /* the socket is full: the timer path sends it */
	q->n = 0;
}

void hcl_ina_swap_elems(void *dst, const void *src, size_t n, size_t esz)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	for (size_t i = 0; i < n; i++) {
		if (esz == 2) {
			uint16_t v;
			memcpy(&v, s + 2 * i, 2);
			v = htons(v);
			memcpy(d + 2 * i, &v, 2);
		} else {
			uint32_t v;
			memcpy(&v, s + 4 * i, 4);
			v = htonl(v);
			memcpy(d + 4 * i, &v, 4);
		}
	}
}
