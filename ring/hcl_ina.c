/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_ina.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ina_bfp.h"
#include "ina_proto.h"

struct hcl_ina {
	struct hcl_ina_cfg cfg;
	struct dgram_transport *t;
	struct hcl_inaw win[HCL_INA_MAX_SHARDS]; /* per shard: its job's slots */
	uint32_t epoch;
	struct hcl_ina_rx rx;
	uint8_t tx[INA_HDR_LEN + INA_MAX_PAYLOAD];
	struct hcl_ina_stats st;
	size_t overflowed; /* 1 + the first slice whose int32 sum wrapped, or 0 */
	uint16_t overflowed_job;
	int64_t progress_at[HCL_INA_MAX_SHARDS]; /* per shard: its pass began or a result came */
	size_t next[HCL_INA_MAX_SHARDS];	 /* per shard: the pass's next slice to start */
	struct hcl_ina_tx txq;			 /* first sends, one call per window opening */
	int nacked;				 /* 1 + the shard whose aggregator said it has no such job, or 0 */
};

struct hcl_ina *hcl_ina_new(const struct hcl_ina_cfg *cfg, struct dgram_transport *t, char *err, size_t errlen)
{
	if (!cfg || !t || !t->ops || cfg->slots == 0 || cfg->slots > INA_SLOT_INDEX_MASK || cfg->elems == 0 ||
	    cfg->elems > INA_MAX_ELEMS || cfg->shards > HCL_INA_MAX_SHARDS || cfg->window > cfg->slots) {
		snprintf(err, errlen,
			 "ina: need a transport, slots >= 1, a window of at most the slots, 1..%d elements per packet "
			 "and at most %d shards",
			 INA_MAX_ELEMS, HCL_INA_MAX_SHARDS);
		return NULL;
	}
	for (unsigned h = 0; h < (cfg->shards ? cfg->shards : 1); h++)
		if (cfg->ports[h] > INA_UDP_PORTS ||
		    ntohs(cfg->sw[h].sin_port) + (cfg->ports[h] ? cfg->ports[h] : 1u) > 65536) {
			snprintf(err, errlen, "ina: shard %u: %u ports from %u: at most %d, below 65536", h,
				 cfg->ports[h], ntohs(cfg->sw[h].sin_port), INA_UDP_PORTS);
			return NULL;
		}
	struct hcl_ina *a = calloc(1, sizeof(*a));
	if (!a)
		goto nomem;
	a->cfg = *cfg;
	a->cfg.shards = cfg->shards ? cfg->shards : 1;
	if (!a->cfg.rto_us)
		a->cfg.rto_us = 5000;
	a->t = t;
	int64_t floor_ns = (int64_t)((double)a->cfg.rto_us * 1000 * (cfg->timer_scale > 1 ? cfg->timer_scale : 1));
	for (unsigned h = 0; h < a->cfg.shards; h++) {
		if (hcl_inaw_init(&a->win[h], cfg->slots, floor_ns, floor_ns > 500000000 ? floor_ns : 500000000) < 0)
			goto nomem;
		if (cfg->window)
			a->win[h].window = cfg->window;
		a->win[h].rack = true;	  /* one aggregation per slice: they finish in order */
		a->win[h].answers = true; /* every aggregator's engine answers re-sends */
		a->win[h].cc.on = cfg->cc;
	}
	if (hcl_ina_rx_init(&a->rx) < 0 || hcl_ina_tx_init(&a->txq) < 0)
		goto nomem;
	return a;
nomem:
	hcl_ina_free(a);
	snprintf(err, errlen, "ina: out of memory");
	return NULL;
}

void hcl_ina_free(struct hcl_ina *a)
{
	if (!a)
		return;
	hcl_ina_rx_free(&a->rx);
	hcl_ina_tx_free(&a->txq);
	for (unsigned h = 0; h < a->cfg.shards; h++)
		hcl_inaw_free(&a->win[h]);
	free(a);
}

const struct hcl_ina_stats *hcl_ina_stats(const struct hcl_ina *a) { return &a->st; }

/* What one pass over the slices carries. */
enum pass_kind {
	PASS_RAW,      /* int32 / fp32 elements, result copied back */
	PASS_EXPONENT, /* BFP pass 1: one zero element, the slice's exponent; the result has the maximum */
	PASS_BFP,      /* BFP pass 2: mantissas at the agreed exponent, result dequantised */
};

struct pass {
	enum pass_kind kind;
	uint8_t dtype; /* on the wire */
	void *buf;     /* the caller's elements */
	size_t count;
	int8_t *exp;	  /* BFP: per slice, local exponent, then the agreed one */
	unsigned addends; /* BFP: ranks whose values are summed (the scale leaves room for them) */
};

static size_t slice_len(const struct hcl_ina *a, const struct pass *ps, size_t k)
{
	size_t first = k * a->cfg.elems;
	return ps->count - first < a->cfg.elems ? ps->count - first : a->cfg.elems;
}

/* Where shard h's slot goes: the aggregator's port + slot mod ports. */
static struct sockaddr_in slot_peer(const struct hcl_ina *a, unsigned h, uint32_t slot)
{
	struct sockaddr_in to = a->cfg.sw[h];
	if (a->cfg.ports[h] > 1)
		to.sin_port = htons((uint16_t)(ntohs(to.sin_port) + slot % a->cfg.ports[h]));
	return to;
}

/* The first slice of shard h among nslices: shards are runs of
 * consecutive slices, as even as whole slices allow. */
static size_t shard_first(size_t nslices, unsigned shards, unsigned h) { return nslices * h / shards; }

/* Slice k of shard h through slot `slot` of its window, written into buf:
 * its length. */
static size_t encode_slice(const struct hcl_ina *a, const struct pass *ps, unsigned h, uint32_t slot, size_t k,
			   bool retx, uint8_t *buf)
{
	size_t first = k * a->cfg.elems, n = ps->kind == PASS_EXPONENT ? 1 : slice_len(a, ps, k);
	struct ina_hdr hd = { .version = INA_VERSION,
			      .type = INA_T_DATA,
			      .dtype = ps->dtype,
			      .flags = retx ? INA_F_RETX : 0,
			      .job = a->cfg.job[h],
			      .contributor = a->cfg.index,
			      .slot = slot | (a->win[h].s[slot].set ? INA_SLOT_SET_BIT : 0),
			      .epoch = a->epoch,
			      .seq = (uint32_t)k,
			      .count = (uint16_t)n,
			      .exponent = ps->kind == PASS_RAW ? 0 : ps->exp[k] };
	ina_hdr_encode(&hd, buf);
	uint8_t *out = buf + INA_HDR_LEN;
	size_t esz = ina_wire_elem_size(ps->dtype);
	if (ps->kind == PASS_EXPONENT)
		memset(out, 0, 4);
	else if (ps->kind == PASS_BFP)
		ina_bfp_quantize((const float *)ps->buf + first, n, ps->exp[k], ps->addends, out);
	else
		hcl_ina_swap_elems(out, (const uint8_t *)ps->buf + first * esz, n, esz);
	return INA_HDR_LEN + esz * n;
}

/* A re-send, at once. */
static bool send_slice(struct hcl_ina *a, const struct pass *ps, unsigned h, uint32_t slot, size_t k, bool retx)
{
	struct dgram_pkt p = { .buf = a->tx,
			       .len = (uint32_t)encode_slice(a, ps, h, slot, k, retx, a->tx),
			       .peer = slot_peer(a, h, slot) };
	return a->t->ops->send_batch(a->t->ctx, &p, 1) == 1;
}

/* A result for slice k: 0, -EBADMSG if it does not fit what was sent
 * (not the aggregator's answer: the slice waits for one that fits), or
 * -EOVERFLOW if the switch says the int32 sum wrapped. */
static int take_result(struct hcl_ina *a, const struct pass *ps, size_t k, const struct ina_pkt *p)
{
	size_t first = k * a->cfg.elems, n = ps->kind == PASS_EXPONENT ? 1 : slice_len(a, ps, k);
	if (p->hdr.count != n)
		return -EBADMSG;
	if (ps->kind == PASS_EXPONENT) {
		/* the switch keeps the maximum: never below this rank's own */
		if (p->hdr.exponent < INA_BFP_EXP_MIN || p->hdr.exponent < ps->exp[k])
			return -EBADMSG;
		ps->exp[k] = p->hdr.exponent;
		return 0;
	}
	if (p->hdr.flags & INA_F_OVERFLOW)
		return -EOVERFLOW;
	if (ps->kind == PASS_BFP) {
		if (p->hdr.exponent != ps->exp[k])
			return -EBADMSG; /* every contributor used the agreed exponent */
		ina_bfp_dequantize(p->payload, n, ps->exp[k], ps->addends, (float *)ps->buf + first);
	} else {
		size_t esz = ina_wire_elem_size(ps->dtype);
		hcl_ina_swap_elems((uint8_t *)ps->buf + first * esz, p->payload, n, esz);
	}
	return 0;
}

/* Starts shard h's next slice if its window lets it (hcl_inaw_next_slot):
 * whether one went. */
static bool start_next(struct hcl_ina *a, const struct pass *ps, unsigned h, size_t nslices)
{
	const int slot = hcl_inaw_next_slot(&a->win[h], a->next[h], shard_first(nslices, a->cfg.shards, h));
	if (slot < 0)
		return false;
	const size_t k = a->next[h]++;
	struct hcl_inaw_slot *s = hcl_inaw_start(&a->win[h], (uint32_t)slot, k, clock_now_ns(), false);
	uint8_t *buf = hcl_ina_tx_buf(&a->txq, a->t);
	const struct sockaddr_in to = slot_peer(a, h, (uint32_t)slot);
	hcl_ina_tx_push(&a->txq, encode_slice(a, ps, h, (uint32_t)slot, k, false, buf), &to, s);
	a->st.sent++;
	return true;
}

static void fill(struct hcl_ina *a, const struct pass *ps, unsigned h, size_t nslices)
{
	while (start_next(a, ps, h, nslices))
		;
}

/* The shard whose aggregator sent p (its address and one of its ports),
 * or -1.  Any of the ports, not only the slot's: a gap report names a
 * slot but leaves from the port of the slice that revealed the gap. */
static bool from_shard(const struct hcl_ina *a, unsigned h, const struct dgram_pkt *in, const struct ina_pkt *p)
{
	unsigned from = ntohs(in->peer.sin_port) - ntohs(a->cfg.sw[h].sin_port);
	return a->cfg.job[h] == p->hdr.job && a->cfg.sw[h].sin_addr.s_addr == in->peer.sin_addr.s_addr &&
	       from < (a->cfg.ports[h] ? a->cfg.ports[h] : 1u);
}

static int shard_of(const struct hcl_ina *a, const struct dgram_pkt *in, const struct ina_pkt *p)
{
	/* the plans number a pass's shards' jobs evenly (ring/hcl_algo_ps.c:
	 * the first + 2h): the shard at once, where there are hundreds */
	const unsigned n = a->cfg.shards, step = n > 1 ? (uint16_t)(a->cfg.job[1] - a->cfg.job[0]) : 0;
	const unsigned guess = step ? (uint16_t)(p->hdr.job - a->cfg.job[0]) / step : 0;
	if (guess < n && from_shard(a, guess, in, p))
		return (int)guess;
	for (unsigned h = 0; h < n; h++)
		if (from_shard(a, h, in, p))
			return (int)h;
	return -1;
}

struct resend_ctx {
	struct hcl_ina *a;
	const struct pass *ps;
	unsigned h;
};

static bool resend_one(void *ctx, uint32_t slot)
{
	struct resend_ctx *r = ctx;
	return send_slice(r->a, r->ps, r->h, slot, r->a->win[r->h].s[slot].slice, true);
}

static bool any_busy(const struct hcl_inaw *w)
{
	for (uint32_t i = 0; i < w->slots; i++)
		if (w->s[i].busy)
			return true;
	return false;
}

static int timed_out(const struct hcl_ina *a, size_t done, size_t nslices, char *err, size_t errlen)
{
	char ip[INET_ADDRSTRLEN];
	unsigned h = a->cfg.shards; /* the aggregator that still owes a result */
	while (h > 0 && !any_busy(&a->win[h - 1]))
		h--;
	h = h ? h - 1 : 0;
	inet_ntop(AF_INET, &a->cfg.sw[h].sin_addr, ip, sizeof(ip));
	snprintf(err, errlen, "switch %s:%u did not answer in time: %zu of %zu slices of job %u done", ip,
		 ntohs(a->cfg.sw[h].sin_port), done, nslices, a->cfg.job[h]);
	return -ETIMEDOUT;
}

/* An aggregator that said it has no such job (a NACK for this pass), or
 * that has had slices out and answered none for lost_ns (the engine
 * refusing the job): -ENETDOWN naming it, else 0. */
static int lost(const struct hcl_ina *a, int64_t now, size_t done, size_t nslices, char *err, size_t errlen)
{
	if (a->nacked) {
		char ip[INET_ADDRSTRLEN];
		const unsigned h = (unsigned)a->nacked - 1;
		inet_ntop(AF_INET, &a->cfg.sw[h].sin_addr, ip, sizeof(ip));
		snprintf(err, errlen, "switch %s:%u no longer has job %u (it answered NACK; %zu of %zu slices done)",
			 ip, ntohs(a->cfg.sw[h].sin_port), a->cfg.job[h], done, nslices);
		return -ENETDOWN;
	}
	for (unsigned h = 0; a->cfg.lost_ns && h < a->cfg.shards; h++) {
		if (!any_busy(&a->win[h]) || now - a->progress_at[h] < a->cfg.lost_ns)
			continue;
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &a->cfg.sw[h].sin_addr, ip, sizeof(ip));
		snprintf(err, errlen,
			 "switch %s:%u stopped aggregating job %u: no result for %lld ms (%zu of %zu slices done)", ip,
			 ntohs(a->cfg.sw[h].sin_port), a->cfg.job[h], (long long)(a->cfg.lost_ns / 1000000), done,
			 nslices);
		return -ENETDOWN;
	}
	return 0;
}

/* Takes what arrived: results matched to what is outstanding, each done
 * slot starting its next slice.  Returns the slices finished. */
static size_t take_batch(struct hcl_ina *a, const struct pass *ps, struct dgram_pkt *in, int n, size_t nslices)
{
	size_t done = 0;
	for (int i = 0; i < n; i++) {
		struct ina_pkt p;
		int h = -1;
		if (ina_parse(in[i].buf, in[i].len, &p) != INA_OK) {
			a->st.foreign++;
			continue;
		}
		if (p.hdr.type == INA_T_NACK && p.hdr.epoch == a->epoch && (h = shard_of(a, &in[i], &p)) >= 0) {
			a->nacked = h + 1; /* the job is gone there: no answer will come */
			continue;
		}
		if (p.hdr.type == INA_T_HAVE && p.hdr.epoch == a->epoch && (h = shard_of(a, &in[i], &p)) >= 0) {
			struct hcl_inaw_slot *o = hcl_inaw_match(&a->win[h], &p.hdr, a->epoch);
			if (o)
				hcl_inaw_held(o, clock_now_ns()); /* its result comes when the others' do */
			continue;
		}
		if (p.hdr.type == INA_T_MISS && (h = shard_of(a, &in[i], &p)) >= 0) {
			int slot = hcl_inaw_missed(&a->win[h], &p.hdr, a->epoch);
			if (slot >= 0 &&
			    send_slice(a, ps, (unsigned)h, (uint32_t)slot, a->win[h].s[slot].slice, true)) {
				hcl_inaw_resent(&a->win[h], (uint32_t)slot, clock_now_ns());
				a->st.resent++;
				fill(a, ps, (unsigned)h, nslices); /* it stalled: the next ones may go */
			}
			continue;
		}
		if (p.hdr.type != INA_T_RESULT || p.hdr.dtype != ps->dtype || (h = shard_of(a, &in[i], &p)) < 0) {
			a->st.foreign++;
			continue;
		}
		struct hcl_inaw *w = &a->win[h];
		struct hcl_inaw_slot *o = hcl_inaw_match(w, &p.hdr, a->epoch);
		if (!o) {
			a->st.duplicates++; /* a result already taken */
			continue;
		}
		int rc = take_result(a, ps, o->slice, &p);
		if (rc == -EOVERFLOW) {
			a->st.overflows++;
			if (!a->overflowed) {
				a->overflowed = o->slice + 1;
				a->overflowed_job = p.hdr.job;
			}
			continue;
		}
		if (rc < 0) {
			a->st.foreign++;
			continue;
		}
		a->st.results++;
		done++;
		a->progress_at[h] = clock_now_ns();
		a->st.marked += !!(p.hdr.flags & INA_F_CE);
		hcl_inaw_answer(w, p.hdr.flags & INA_F_CE, a->progress_at[h]);
		hcl_inaw_done(w, o, a->progress_at[h]);
		fill(a, ps, (unsigned)h, nslices);
	}
	return done;
}

/* One pass of every slice through the job(s): each shard's window of
 * slices in order, resends on timeout, results matched to what is
 * outstanding. */
static int run_pass(struct hcl_ina *a, const struct pass *ps, int64_t deadline_ns, char *err, size_t errlen)
{
	const unsigned shards = a->cfg.shards;
	size_t nslices = (ps->count + a->cfg.elems - 1) / a->cfg.elems, done = 0;
	a->epoch++;
	a->nacked = 0;
	a->txq.n = 0; /* a failed pass may have left some */
	for (unsigned h = 0; h < shards; h++) {
		hcl_inaw_reset(&a->win[h]);
		a->win[h].end = shard_first(nslices, shards, h + 1);
		a->progress_at[h] = clock_now_ns();
		a->next[h] = shard_first(nslices, shards, h);
	}
	/* the first windows, the shards' in turn so every aggregator starts at once */
	for (bool more = true; more;) {
		more = false;
		for (unsigned h = 0; h < shards; h++)
			more |= start_next(a, ps, h, nslices);
	}
	while (done < nslices) {
		int peer = a->cfg.poll ? a->cfg.poll(a->cfg.poll_ctx) : 0;
		if (peer) {
			snprintf(err, errlen, "rank %d lost its INA aggregator (%zu of %zu slices done here)", peer - 1,
				 done, nslices);
			return -ENETDOWN;
		}
		int64_t now = clock_now_ns(), wake = now + 1000000;
		if (now >= deadline_ns)
			return timed_out(a, done, nslices, err, errlen);
		int rc = lost(a, now, done, nslices, err, errlen);
		if (rc < 0)
			return rc;
		for (unsigned h = 0; h < shards; h++) {
			struct resend_ctx r = { a, ps, h };
			hcl_inaw_resend(&a->win[h], now, 0, resend_one, &r, &wake, &a->st.resent);
			fill(a, ps, h, nslices); /* a slice re-sent is stalled: the next may go */
		}
		/* what the pass's start, the last batch of answers and these
		 * re-sends opened, in one call */
		hcl_ina_tx_flush(&a->txq, a->t);
		struct dgram_pkt in[HCL_INA_BATCH];
		int n = hcl_ina_rx_batch(&a->rx, a->t, in, now, wake, deadline_ns);
		if (n < 0) {
			snprintf(err, errlen, "ina: receive: %s", strerror(-n));
			return n;
		}
		done += take_batch(a, ps, in, n, nslices);
		if ((rc = lost(a, clock_now_ns(), done, nslices, err, errlen)) < 0)
			return rc;
		if (a->overflowed) {
			snprintf(err, errlen,
				 "the int32 sum of slice %zu (elements from %zu) overflowed in the switch (job %u): "
				 "the result would be wrong; scale the values down or use fp32",
				 a->overflowed - 1, (a->overflowed - 1) * a->cfg.elems, a->overflowed_job);
			a->overflowed = 0;
			return -EOVERFLOW;
		}
	}
	return 0;
}

static int check_count(size_t count, const struct hcl_ina *a, char *err, size_t errlen)
{
	if ((count + a->cfg.elems - 1) / a->cfg.elems > UINT32_MAX) {
		snprintf(err, errlen, "ina: %zu elements make too many slices", count);
		return -EINVAL;
	}
	return 0;
}

int hcl_ina_allreduce(struct hcl_ina *a, void *vbuf, size_t count, enum hcl_dtype dt, int64_t deadline_ns, char *err,
		      size_t errlen)
{
	if (dt != HCL_INT32 && dt != HCL_FP32 && dt != HCL_BF16) {
		snprintf(err, errlen, "ina: data type must be int32, fp32 or bf16");
		return -EINVAL;
	}
	if (check_count(count, a, err, errlen) < 0)
		return -EINVAL;
	struct pass ps = { PASS_RAW, dt == HCL_FP32 ? INA_D_FP32 : dt == HCL_BF16 ? INA_D_BF16 : INA_D_INT32,
			   vbuf,     count,
			   NULL,     0 };
	return run_pass(a, &ps, deadline_ns, err, errlen);
}

int hcl_ina_allreduce_bfp(struct hcl_ina *a, float *buf, size_t count, unsigned addends, int64_t deadline_ns, char *err,
			  size_t errlen)
{
	if (addends < 1 || check_count(count, a, err, errlen) < 0) {
		snprintf(err, errlen, "ina: bfp needs addends >= 1 and a countable tensor");
		return -EINVAL;
	}
	size_t nslices = (count + a->cfg.elems - 1) / a->cfg.elems;
	int8_t *exp = malloc(nslices ? nslices : 1);
	if (!exp) {
		snprintf(err, errlen, "ina: out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < nslices; k++) {
		size_t first = k * a->cfg.elems, n = count - first < a->cfg.elems ? count - first : a->cfg.elems;
		if (ina_bfp_exponent(buf + first, n, &exp[k]) < 0) {
			snprintf(err, errlen, "ina: bfp: a value in elements %zu..%zu is not finite or too large",
				 first, first + n - 1);
			free(exp);
			return -EDOM;
		}
	}
	/* pass 1 agrees on each slice's exponent (the switch keeps the
	 * maximum); pass 2 sums mantissas at that exponent, exactly */
	struct pass ps = { PASS_EXPONENT, INA_D_BFP32, buf, count, exp, addends };
	int rc = run_pass(a, &ps, deadline_ns, err, errlen);
	if (rc == 0) {
		ps.kind = PASS_BFP;
		rc = run_pass(a, &ps, deadline_ns, err, errlen);
	}
	free(exp);
	return rc;
}
