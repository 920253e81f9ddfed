/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_aring.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hcl_ina_win.h"
#include "hcl_kept.h"
#include "ina_proto.h"

#define GOT_ACK	   1
#define GOT_RESULT 2

struct hcl_aring {
	const struct aring_plan *p;
	unsigned rank, member, index;
	struct dgram_transport *t;
	struct sockaddr_in agg;
	/* UDP ports from agg's its slots spread over (1: that one): an INA
	 * switch's 16 (ina_addr.nports).  Slot s goes to port + s mod 16, as
	 * ps-ina's clients do, and the members' forwards and ACKs go to the
	 * same port of the next switch for the slot they take there, so a
	 * ToR split over lcores by port (swemu's partitions) gets every
	 * slot's contributions in one partition and the slots in all. */
	unsigned ports;
	/* the member's job's slots, every step's slices in seq order: slice q
	 * in slot q % slots (steps differ: a reduce step waits for its
	 * downstream, a gather for the chain) */
	struct hcl_inaw win;
	struct aring_call call;
	size_t done; /* slices of the call finished here */
	size_t next; /* the next slice to start (hcl_aring_fill) */
	uint32_t epoch;
	const uint8_t *src; /* the call's input */
	/* the input, when the call is in place: two buffers in turn, so the
	 * previous call's stays (a rank a call behind may need it, see
	 * ring/hcl_fallback.c); prev_count its elements, or 0 */
	struct hcl_kept kept;
	size_t count, prev_count;
	struct hcl_ina_rx rx;
	uint8_t tx[INA_HDR_LEN + INA_MAX_PAYLOAD]; /* re-sends */
	struct hcl_ina_tx txq;			   /* first sends, one call per window opening */
	struct hcl_aring_stats st;
	int overflowed_job; /* the job of a result whose int32 sum wrapped, or -1 */
	int (*poll)(void *ctx);
	void *poll_ctx;
	int64_t lost_ns;     /* no answer for this long while slices are out: -ENETDOWN (0: never) */
	size_t results_left; /* slices of the call whose result (a final sum) has not come */
	int nacked_job;	     /* a step job the aggregator said it has not (NACK), or -1 */
};

void hcl_aring_set_lost(struct hcl_aring *a, int64_t lost_ns) { a->lost_ns = lost_ns; }

void hcl_aring_set_cc(struct hcl_aring *a, bool on) { a->win.cc.on = on; }

void hcl_aring_cc(const struct hcl_aring *a, uint64_t *marks, uint64_t *cuts, uint32_t *lowest)
{
	*marks = a->win.cc.marks;
	*cuts = a->win.cc.cuts;
	*lowest = a->win.cc.lowest;
}

void hcl_aring_set_timer_scale(struct hcl_aring *a, double scale)
{
	int64_t floor_ns = (int64_t)(HCL_ARING_RTO_FLOOR_NS * (scale > 1 ? scale : 1));
	hcl_inaw_init_timer(&a->win, floor_ns, floor_ns > 500000000 ? floor_ns : 500000000);
}

const void *hcl_aring_input(const struct hcl_aring *a) { return a->src; }

const void *hcl_aring_last_input(const struct hcl_aring *a, size_t *count)
{
	*count = a->count;
	return a->count && a->src == hcl_kept_latest(&a->kept) ? a->src : NULL;
}

const void *hcl_aring_prev_input(const struct hcl_aring *a, size_t *count)
{
	*count = a->prev_count;
	return a->prev_count ? hcl_kept_before(&a->kept) : NULL;
}

void hcl_aring_set_poll(struct hcl_aring *a, int (*fn)(void *ctx), void *ctx)
{
	a->poll = fn;
	a->poll_ctx = ctx;
}

struct hcl_aring *hcl_aring_new(const struct aring_plan *p, unsigned rank, struct dgram_transport *t, char *err,
				size_t errlen)
{
	struct hcl_aring *a = calloc(1, sizeof(*a));
	if (!a)
		goto nomem;
	a->p = p;
	a->rank = rank;
	a->member = p->member_of[rank];
	a->index = p->index_of[rank];
	a->t = t;
	const struct ina_addr *g = &p->mem[a->member].agg;
	a->agg = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = g->ip, .sin_port = g->port };
	a->ports = g->nports ? g->nports : 1;
	if (hcl_inaw_init(&a->win, p->slots, HCL_ARING_RTO_FLOOR_NS, 500000000) < 0 || hcl_ina_rx_init(&a->rx) < 0 ||
	    hcl_ina_tx_init(&a->txq) < 0)
		goto nomem;
	a->win.chain = true; /* slices wait for the chain to reach their step */
	return a;
nomem:
	hcl_aring_free(a);
	snprintf(err, errlen, "agent-ring: out of memory");
	return NULL;
}

void hcl_aring_free(struct hcl_aring *a)
{
	if (!a)
		return;
	hcl_inaw_free(&a->win);
	hcl_kept_free(&a->kept);
	hcl_ina_rx_free(&a->rx);
	hcl_ina_tx_free(&a->txq);
	free(a);
}

const struct hcl_aring_stats *hcl_aring_stats(const struct hcl_aring *a) { return &a->st; }

/* Slice q of the call through slot `slot`, written into buf: its length.
 * Elements past the call's count (a tensor shorter than the ring) go as
 * zeros. */
static size_t encode_slice(const struct hcl_aring *a, uint32_t slot, size_t q, bool retx, uint8_t *buf)
{
	struct aring_step st;
	aring_slice_of(a->p, &a->call, a->member, q, &st);
	size_t n = st.hi - st.lo;
	struct ina_hdr h = { .version = INA_VERSION,
			     .type = INA_T_DATA,
			     .dtype = a->p->dtype,
			     .flags = (uint8_t)((retx ? INA_F_RETX : 0) | (st.join ? INA_F_JOIN : 0)),
			     .job = a->p->job,
			     .contributor = (uint16_t)a->index,
			     .slot = slot | (a->win.s[slot].set ? INA_SLOT_SET_BIT : 0),
			     .epoch = a->epoch,
			     .seq = (uint32_t)q,
			     .count = (uint16_t)n };
	ina_hdr_encode(&h, buf);
	size_t len = INA_HDR_LEN, esz = ina_wire_elem_size(a->p->dtype);
	if (!st.join) {
		size_t real = aring_real(&a->call, &st);
		hcl_ina_swap_elems(buf + INA_HDR_LEN, a->src + st.lo * esz, real, esz);
		memset(buf + INA_HDR_LEN + real * esz, 0, (n - real) * esz);
		len += esz * n;
	}
	return len;
}

/* Where slot goes: the aggregator's port + slot mod ports. */
static struct sockaddr_in slot_dest(const struct hcl_aring *a, uint32_t slot)
{
	struct sockaddr_in to = a->agg;
	if (a->ports > 1)
		to.sin_port = htons((uint16_t)(ntohs(to.sin_port) + slot % a->ports));
	return to;
}

/* A re-send, at once. */
static bool send_slice(struct hcl_aring *a, uint32_t slot, size_t q, bool retx)
{
	struct dgram_pkt p = { .buf = a->tx,
			       .len = (uint32_t)encode_slice(a, slot, q, retx, a->tx),
			       .peer = slot_dest(a, slot) };
	return a->t->ops->send_batch(a->t->ctx, &p, 1) == 1;
}

/* Slice q always uses slot q % slots.  Until a slice has finished here
 * the chain has not reached this member: no round-trip sample. */
static void start_slice(struct hcl_aring *a, size_t q)
{
	uint32_t slot = (uint32_t)(q % a->p->slots);
	struct hcl_inaw_slot *o = hcl_inaw_start(&a->win, slot, q, clock_now_ns(), a->done == 0);
	uint8_t *buf = hcl_ina_tx_buf(&a->txq, a->t);
	const struct sockaddr_in to = slot_dest(a, slot);
	hcl_ina_tx_push(&a->txq, encode_slice(a, slot, q, false, buf), &to, o); /* flushed before the wait */
	a->st.sent++;
}

/* The slices a worker may keep in flight under a window that follows the
 * marks: never under two (aring_call_window: with two the chain cannot
 * deadlock), never over the call's cap. */
static uint32_t marked_cap(const struct hcl_inaw *w)
{
	const uint32_t a = hcl_inacc_allowed(&w->cc, w->window);
	return a >= 2 || w->window < 2 ? a : 2;
}

/* The eligible slice to start next under a window that follows the marks,
 * or SIZE_MAX: a slot's next slice once its last one finished (a slot not
 * yet used in this call: its first, *first_uses of them so far, in
 * order), the oldest first; one only while fewer than marked_cap are in
 * flight, or when at most one in flight is older: the lowest unfinished
 * slice of the chain needs its own and the next one sent by every worker,
 * and slices started out of order must not hold those back. */
static size_t gated_next(const struct aring_plan *p, const struct aring_call *c, const struct hcl_inaw *w,
			 size_t first_uses)
{
	size_t old1 = SIZE_MAX, old2 = SIZE_MAX, best = SIZE_MAX; /* the two oldest in flight */
	uint32_t busy = 0;
	for (uint32_t i = 0; i < p->slots; i++) {
		const struct hcl_inaw_slot *s = &w->s[i];
		if (s->busy) {
			busy++;
			if (s->slice < old1) {
				old2 = old1;
				old1 = s->slice;
			} else if (s->slice < old2) {
				old2 = s->slice;
			}
			continue;
		}
		const size_t q = i < first_uses ? s->slice + p->slots : i;
		if (i <= first_uses && q < c->slices && q < best)
			best = q;
	}
	return busy < marked_cap(w) || best < old2 ? best : SIZE_MAX;
}

void hcl_aring_fill(const struct aring_plan *p, const struct aring_call *c, const struct hcl_inaw *w, size_t done,
		    size_t *next, size_t q, void (*start)(void *ctx, size_t slice), void *ctx)
{
	if (w->cc.on && w->window >= p->slots) { /* *next: the slots used so far */
		for (size_t g; (g = gated_next(p, c, w, *next)) != SIZE_MAX;) {
			*next += g < p->slots;
			start(ctx, g);
		}
		return;
	}
	if (w->window >= p->slots && q != SIZE_MAX) {
		if (q + p->slots < c->slices)
			start(ctx, q + p->slots);
		return;
	}
	const uint32_t cap = marked_cap(w); /* the window itself without cc */
	while (*next < c->slices && *next - done < cap && !w->s[*next % p->slots].busy)
		start(ctx, (*next)++);
}

static void start_one(void *a, size_t q) { start_slice(a, q); }

static void fill(struct hcl_aring *a, size_t q)
{
	hcl_aring_fill(a->p, &a->call, &a->win, a->done, &a->next, q, start_one, a);
}

static void describe_member(const struct aring_plan *p, unsigned k, char *b, size_t n)
{
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &p->mem[k].agg.ip, ip, sizeof(ip));
	if (p->mem[k].ina)
		snprintf(b, n, "member %u (rack %d, INA switch %s)", k, p->mem[k].rack, ip);
	else
		snprintf(b, n, "member %u (rank %u at %s)", k, p->worker_rank[p->mem[k].first], ip);
}

/* The error of a call that ran out of time: the member this worker
 * waits for (its downstream for an ACK, its upstream for a result). */
static int timed_out(const struct hcl_aring *a, size_t left, char *err, size_t errlen)
{
	unsigned m = a->p->m, who = a->member;
	const char *what = "";
	for (uint32_t i = 0; i < a->p->slots && !*what; i++) {
		const struct hcl_inaw_slot *o = &a->win.s[i];
		struct aring_step st;
		if (!o->busy)
			continue;
		aring_slice_of(a->p, &a->call, a->member, o->slice, &st);
		bool ack = st.need_ack && !(o->got & GOT_ACK);
		who = (a->member + (ack ? 1 : m - 1)) % m;
		what = ack ? "an acknowledgement" : "a result";
	}
	char mb[128];
	describe_member(a->p, who, mb, sizeof(mb));
	snprintf(err, errlen, "agent-ring: %zu slices left; waiting for %s from %s", left, what, mb);
	return -ETIMEDOUT;
}

void hcl_aring_dump(const struct hcl_aring *a, FILE *f)
{
	for (uint32_t i = 0; i < a->p->slots; i++) {
		const struct hcl_inaw_slot *o = &a->win.s[i];
		if (o->busy)
			fprintf(f, "  slot %u set %u slice %zu/%zu (step %zu) got %u tries %u epoch %u\n", i, o->set,
				o->slice, a->call.slices, o->slice % aring_steps(a->p), o->got, o->tries, a->epoch);
	}
}

static bool resend_one(void *ctx, uint32_t slot)
{
	struct hcl_aring *a = ctx;
	return send_slice(a, slot, a->win.s[slot].slice, true);
}

/* A RESULT or ACK from the member's aggregator: returns 1 when it finished
 * a slice here, 0 otherwise (counted stale when it fits nothing). */
static int take(struct hcl_aring *a, const struct dgram_pkt *in, uint8_t *dst)
{
	struct ina_pkt p;
	const unsigned from = (uint16_t)(ntohs(in->peer.sin_port) - ntohs(a->agg.sin_port)); /* any of its ports */
	if (in->peer.sin_addr.s_addr != a->agg.sin_addr.s_addr || from >= a->ports ||
	    ina_parse(in->buf, in->len, &p) != INA_OK || p.hdr.job != a->p->job) {
		a->st.stale++;
		return 0;
	}
	if (p.hdr.type == INA_T_NACK && p.hdr.epoch == a->epoch) {
		a->nacked_job = p.hdr.job; /* gone there: the chain cannot go on */
		return 0;
	}
	if (p.hdr.type == INA_T_HAVE)
		return 0; /* a re-send held; agent-ring's windows wait on their timers */
	if ((p.hdr.type != INA_T_RESULT && p.hdr.type != INA_T_ACK) || p.hdr.dtype != a->p->dtype) {
		a->st.stale++;
		return 0;
	}
	struct hcl_inaw_slot *o = hcl_inaw_match(&a->win, &p.hdr, a->epoch);
	uint8_t what = p.hdr.type == INA_T_ACK ? GOT_ACK : GOT_RESULT;
	struct aring_step st = { 0 };
	if (o)
		aring_slice_of(a->p, &a->call, a->member, o->slice, &st);
	bool wanted = what == GOT_ACK ? st.need_ack : st.need_result;
	if (!o || p.hdr.count != st.hi - st.lo || !wanted || (o->got & what)) {
		a->st.stale++; /* a duplicate, or for a slice already done */
		return 0;
	}
	if (what == GOT_RESULT && (p.hdr.flags & INA_F_OVERFLOW)) {
		a->st.overflows++; /* the call fails: a wrapped sum is no result */
		if (a->overflowed_job < 0)
			a->overflowed_job = p.hdr.job;
		return 0;
	}
	o->got |= what;
	hcl_inaw_answer(&a->win, p.hdr.flags & INA_F_CE, clock_now_ns()); /* with cc on: a queue marked it */
	a->st.marked += !!(p.hdr.flags & INA_F_CE);
	if (what == GOT_ACK) {
		a->st.acks++;
	} else {
		size_t esz = ina_wire_elem_size(a->p->dtype);
		size_t real = aring_real(&a->call, &st);
		hcl_ina_swap_elems(dst + st.lo * esz, p.payload, real, esz); /* not the padding */
		a->st.results++;
		a->results_left--;
	}
	if ((st.need_ack && !(o->got & GOT_ACK)) || (st.need_result && !(o->got & GOT_RESULT)))
		return 0;
	/* this slice is finished here: the slot's next slice uses the other set */
	hcl_inaw_done(&a->win, o, clock_now_ns());
	a->done++;
	fill(a, o->slice);
	return 1;
}

/* The input of a call: src, or a copy of it when the call is in place
 * (contributions must not see results).  NULL when out of memory. */
static const uint8_t *input(struct hcl_aring *a, const uint8_t *src, const uint8_t *dst, size_t count)
{
	size_t bytes = count * ina_wire_elem_size(a->p->dtype);
	/* the last call's copy, if it made one, becomes the previous input */
	a->prev_count = a->src == hcl_kept_latest(&a->kept) ? a->count : 0;
	a->count = count;
	if (src != dst || !bytes)
		return src;
	uint8_t *k = hcl_kept_next(&a->kept, bytes);
	if (k)
		memcpy(k, src, bytes);
	return k;
}

int hcl_aring_allreduce(struct hcl_aring *a, const void *vsrc, void *vdst, size_t count, int64_t deadline_ns, char *err,
			size_t errlen)
{
	uint8_t *dst = vdst;
	if (count && (!vsrc || !dst)) {
		snprintf(err, errlen, "agent-ring: no buffers");
		return -EINVAL;
	}
	if (!(a->src = input(a, vsrc, dst, count))) {
		snprintf(err, errlen, "agent-ring: out of memory");
		return -ENOMEM;
	}
	a->epoch++;
	a->txq.n = 0; /* a failed call may have left some */
	a->overflowed_job = -1;
	a->nacked_job = -1;
	aring_call_of(a->p, count, &a->call);
	/* every round multicasts m of its 2m - 1 steps */
	a->results_left = a->call.rounds * a->p->m;
	a->done = 0;
	hcl_inaw_reset(&a->win);
	a->win.end = a->call.slices;			   /* its tails get a probe */
	a->win.window = aring_call_window(a->p, &a->call); /* the call's cap */
	a->next = 0;
	size_t left = a->call.slices;
	fill(a, SIZE_MAX);
	int64_t progress_at = clock_now_ns();
	while (left) {
		int peer = a->poll ? a->poll(a->poll_ctx) : 0;
		int64_t now = clock_now_ns(), wake = now + 1000000;
		if (now >= deadline_ns)
			return timed_out(a, left, err, errlen);
		if (peer || a->nacked_job >= 0 || (a->lost_ns && now - progress_at >= a->lost_ns)) {
			/* the chain stopped: a member's job went (an INA rack's
			 * ToR lost it, or refuses it), stalling every rank.
			 * Results are final sums (only steps from the end of the
			 * reduce on multicast): with all of them here only ACKs
			 * are missing and this rank's call is done; the others
			 * then meet it in the next call, where all stall */
			if (!a->results_left)
				return 0;
			timed_out(a, left, err, errlen);
			size_t n = strlen(err);
			if (a->nacked_job >= 0)
				snprintf(err + n, errlen > n ? errlen - n : 0,
					 " (its switch no longer has job %d: it answered NACK)", a->nacked_job);
			else if (peer)
				snprintf(err + n, errlen > n ? errlen - n : 0, " (rank %d lost its INA aggregator)",
					 peer - 1);
			else
				snprintf(err + n, errlen > n ? errlen - n : 0,
					 " (nothing for %lld ms: the chain stopped aggregating)",
					 (long long)(a->lost_ns / 1000000));
			return -ENETDOWN;
		}
		uint64_t answers = a->st.results + a->st.acks;
		hcl_inaw_resend(&a->win, now, a->done ? 0 : HCL_ARING_CHAIN_WAIT_NS, resend_one, a, &wake,
				&a->st.resent);
		hcl_ina_tx_flush(&a->txq, a->t); /* what the call's start and the last answers opened */
		struct dgram_pkt in[HCL_INA_BATCH];
		int n = hcl_ina_rx_batch(&a->rx, a->t, in, now, wake, deadline_ns);
		if (n < 0) {
			snprintf(err, errlen, "agent-ring: receive: %s", strerror(-n));
			return n;
		}
		for (int i = 0; i < n; i++)
			left -= (size_t)take(a, &in[i], dst);
		if (a->st.results + a->st.acks != answers)
			progress_at = now;
		if (a->overflowed_job >= 0) {
			snprintf(err, errlen,
				 "agent-ring: the int32 sum of job %d overflowed in the switch: the result would be "
				 "wrong; scale the values down or use fp32",
				 a->overflowed_job);
			return -EOVERFLOW;
		}
	}
	return 0;
}
