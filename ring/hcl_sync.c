/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_sync.h"
#include "hcl_xfer.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void hcl_sync_derive(const struct hcl_sync_rec *all, int world, int rank, struct hcl_sync_point *out)
{
	int64_t rmin = all[0].ready_ns, rmax = rmin;
	int64_t smin = all[0].ready_ns + all[0].delay_ns, smax = smin;
	int last = 0;
	for (int j = 1; j < world; j++) {
		int64_t st = all[j].ready_ns + all[j].delay_ns;
		if (all[j].ready_ns > rmax) {
			rmax = all[j].ready_ns;
			last = j;
		}
		if (all[j].ready_ns < rmin)
			rmin = all[j].ready_ns;
		if (st < smin)
			smin = st;
		if (st > smax)
			smax = st;
	}
	out->early_ns = rmax - all[rank].ready_ns;
	out->wait_ns = smax - (all[rank].ready_ns + all[rank].delay_ns);
	out->spread_ns = rmax - rmin;
	out->start_spread_ns = smax - smin;
	out->last = last;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void hcl_sync_stats(int64_t *t, unsigned long n, struct hcl_sync_stats *o)
{
	memset(o, 0, sizeof(*o));
	o->n = n;
	if (!n)
		return;
	qsort(t, n, sizeof(*t), cmp_i64);
	double sum = 0, sq = 0;
	for (unsigned long i = 0; i < n; i++)
		sum += (double)t[i];
	o->mean_ns = sum / (double)n;
	for (unsigned long i = 0; i < n; i++)
		sq += ((double)t[i] - o->mean_ns) * ((double)t[i] - o->mean_ns);
	o->cv = o->mean_ns > 0 ? sqrt(sq / (double)n) / o->mean_ns : 0;
	/* nearest rank: the smallest value with at least p% at or below it */
	o->p50_ns = (double)t[(unsigned long)ceil(0.50 * (double)n) - 1];
	o->p99_ns = (double)t[(unsigned long)ceil(0.99 * (double)n) - 1];
}

static void put64(uint8_t *p, int64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
}

static int64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (int64_t)v;
}

int hcl_sync_clock(struct hcl_xfer *x, int rank, int world, int samples, int64_t *offset_ns, int64_t *rtt_ns,
		   int64_t deadline_ns, char *err, size_t errlen)
{
	/* Cristian's method: the reply is stamped after the request arrived
	 * and before the answer left, so it lies within [t1, t4] of the
	 * asker; a tag space of its own (high bits 11) */
	*offset_ns = 0;
	*rtt_ns = 0;
	uint8_t b[8] = { 0 };
	int rc = 0;
	int64_t best = INT64_MAX;
	for (int i = 1; i < world && rc == 0; i++) {
		if (rank != 0 && rank != i)
			continue;
		for (int k = 0; k < samples && rc == 0; k++) {
			uint32_t tag = 0xc0000000u | (uint32_t)i << 10 | (uint32_t)k << 1;
			if (rank == 0) {
				rc = hcl_xfer_exchange(x, tag, -1, NULL, 0, i, b, 8, deadline_ns, err, errlen);
				put64(b, clock_now_ns());
				if (rc == 0)
					rc = hcl_xfer_exchange(x, tag | 1, i, b, 8, -1, NULL, 0, deadline_ns, err,
							       errlen);
				continue;
			}
			int64_t t1 = clock_now_ns();
			rc = hcl_xfer_exchange(x, tag, 0, b, 8, -1, NULL, 0, deadline_ns, err, errlen);
			if (rc == 0)
				rc = hcl_xfer_exchange(x, tag | 1, -1, NULL, 0, 0, b, 8, deadline_ns, err, errlen);
			int64_t t4 = clock_now_ns();
			if (rc == 0 && t4 - t1 < best) {
				best = t4 - t1;
				*offset_ns = get64(b) - (t1 + t4) / 2;
				*rtt_ns = best;
			}
		}
	}
	return rc;
}

/* Notes of the current call and of the next (a rank that finished first
 * may already be in the next call). */
struct note_slot {
	uint32_t seq;
	int have;
	struct hcl_sync_rec *rec;
	uint8_t *got;
};

struct hcl_sync {
	bool on, pace_on;
	int rank, world;
	struct hcl_pace pace;
	FILE *trace;
	int64_t t0;	  /* creation: trace times are relative to it */
	int64_t prev_end; /* end of the previous call (or creation) */
	bool marked;	  /* the caller marks iterations */
	bool in_iter;
	unsigned it_ncalls; /* calls so far in the marked iteration */
	bool point;	    /* the current call is a pacing point (paced_point) */
	int64_t iter_start;
	/* the current iteration's parts */
	int64_t it_calls_ns, it_delay_ns, it_wait_ns, it_comm_ns;
	unsigned long calls, iters, paced_calls;
	int64_t tot_compute, tot_delay, tot_wait, tot_comm;
	double spread_sum_ns;
	int64_t *iter_ns;
	unsigned long iter_cap;
	int64_t iter_sum_ns;
	struct hcl_xfer *x;
	int64_t offset_ns, clock_rtt_ns; /* to rank 0's clock */
	uint32_t seq;			 /* the current call */
	int64_t ready, delay;		 /* of the current call */
	struct note_slot slot[2];
	unsigned long incomplete, stale_notes;
	int64_t layer_ns; /* time spent in the layer itself, delays excluded */
	char algo[16];
};

static void on_note(void *ctx, int src, const void *p, size_t len)
{
	struct hcl_sync *s = ctx;
	const uint8_t *b = p;
	if (len != 20 || src < 0 || src >= s->world) {
		s->stale_notes++;
		return;
	}
	uint32_t seq = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	/* only this call and the next can be noted; older ones come too late */
	if (seq - s->seq > 1) {
		s->stale_notes++;
		return;
	}
	struct note_slot *sl = &s->slot[seq & 1];
	if (sl->seq != seq) {
		sl->seq = seq;
		sl->have = 0;
		memset(sl->got, 0, (size_t)s->world);
	}
	if (sl->got[src])
		return; /* a duplicate */
	sl->got[src] = 1;
	sl->have++;
	sl->rec[src] = (struct hcl_sync_rec){ .ready_ns = get64(b + 4), .delay_ns = get64(b + 12) };
}

static double us(int64_t ns) { return (double)ns / 1e3; }

static void emit(struct hcl_sync *s, json_t *o)
{
	if (s->trace && o) {
		json_dumpf(o, s->trace, JSON_COMPACT);
		fputc('\n', s->trace);
	}
	json_decref(o);
}

static void free_sync(struct hcl_sync *s)
{
	if (s->x && s->on)
		hcl_xfer_set_note_handler(s->x, NULL, NULL);
	if (s->trace)
		fclose(s->trace);
	for (int i = 0; i < 2; i++) {
		free(s->slot[i].rec);
		free(s->slot[i].got);
	}
	free(s->iter_ns);
	free(s);
}

struct hcl_sync *hcl_sync_new(const struct hcl_sync_cfg *cfg, struct hcl_xfer *x, int rank, int world, const char *algo,
			      int64_t deadline_ns, char *err, size_t errlen)
{
	struct hcl_sync *s = calloc(1, sizeof(*s));
	if (!s)
		return snprintf(err, errlen, "timing layer: out of memory"), NULL;
	s->rank = rank;
	s->world = world;
	s->pace_on = cfg->pace;
	s->on = cfg->pace || cfg->trace_dir;
	snprintf(s->algo, sizeof(s->algo), "%s", algo);
	hcl_pace_init(&s->pace, &cfg->pace_cfg);
	s->t0 = s->prev_end = clock_now_ns();
	if (!s->on)
		return s;
	for (int i = 0; i < 2; i++) {
		s->slot[i].rec = calloc((size_t)world, sizeof(*s->slot[i].rec));
		s->slot[i].got = calloc((size_t)world, 1);
		s->slot[i].seq = (uint32_t)i;
		if (!s->slot[i].rec || !s->slot[i].got) {
			snprintf(err, errlen, "timing layer: out of memory");
			free_sync(s);
			return NULL;
		}
	}
	if (cfg->trace_dir) { /* before any exchange: a bad directory fails at once */
		char path[4096];
		if (mkdir(cfg->trace_dir, 0755) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "trace directory %s: %s", cfg->trace_dir, strerror(errno));
			free_sync(s);
			return NULL;
		}
		snprintf(path, sizeof(path), "%s/rank%d.jsonl", cfg->trace_dir, rank);
		if (!(s->trace = fopen(path, "w"))) {
			snprintf(err, errlen, "trace %s: %s", path, strerror(errno));
			free_sync(s);
			return NULL;
		}
	}
	s->x = x;
	/* before the clock exchange: a rank done with it may already be in
	 * the first call, and its note must not find us deaf */
	hcl_xfer_set_note_handler(x, on_note, s);
	char e[256];
	if (hcl_sync_clock(x, rank, world, 8, &s->offset_ns, &s->clock_rtt_ns, deadline_ns, e, sizeof(e)) < 0) {
		/* the likeliest cause: the layer is on here but not everywhere */
		snprintf(err, errlen,
			 "timing layer: clock exchange failed (is HCL_PACE or HCL_TRACE set on every rank?): %s", e);
		free_sync(s);
		return NULL;
	}
	emit(s, json_pack("{si,si,ss,sf,sf}", "rank", rank, "world", world, "algo", s->algo, "clock_offset_us",
			  us(s->offset_ns), "clock_rtt_us", us(s->clock_rtt_ns)));
	s->t0 = s->prev_end = clock_now_ns();
	return s;
}

bool hcl_sync_on(const struct hcl_sync *s) { return s && s->on; }

static void push_iter(struct hcl_sync *s, int64_t time_ns, int64_t compute_ns)
{
	if (s->iters == s->iter_cap) {
		unsigned long cap = s->iter_cap ? 2 * s->iter_cap : 256;
		int64_t *n = realloc(s->iter_ns, cap * sizeof(*n));
		if (!n)
			return; /* the summary loses an iteration, the run goes on */
		s->iter_ns = n;
		s->iter_cap = cap;
	}
	s->iter_ns[s->iters++] = time_ns;
	s->iter_sum_ns += time_ns;
	s->tot_compute += compute_ns;
	s->tot_delay += s->it_delay_ns;
	s->tot_wait += s->it_wait_ns;
	s->tot_comm += s->it_comm_ns;
	emit(s, json_pack("{si,sI,sf,sf,sf,sf,sf}", "rank", s->rank, "iter", (json_int_t)s->iters - 1, "time_us",
			  us(time_ns), "compute_us", us(compute_ns), "delay_us", us(s->it_delay_ns), "wait_us",
			  us(s->it_wait_ns), "comm_us", us(s->it_comm_ns)));
	s->it_calls_ns = s->it_delay_ns = s->it_wait_ns = s->it_comm_ns = 0;
}

void hcl_sync_iter_begin(struct hcl_sync *s)
{
	if (!hcl_sync_on(s))
		return;
	s->marked = s->in_iter = true;
	s->it_ncalls = 0;
	s->iter_start = clock_now_ns();
	s->it_calls_ns = s->it_delay_ns = s->it_wait_ns = s->it_comm_ns = 0;
}

void hcl_sync_iter_end(struct hcl_sync *s)
{
	if (!hcl_sync_on(s) || !s->in_iter)
		return;
	s->in_iter = false;
	int64_t t = clock_now_ns() - s->iter_start;
	push_iter(s, t, t - s->it_calls_ns);
}

/* Which calls the pacing rule learns from and delays: every call while
 * the caller marks no iterations (each call is then an iteration); once it
 * does, only an iteration's first call.  A training step's later buckets
 * follow the first in order, each right after the one before: a rank is
 * early at the step, not at those (docs/PACING.md, "Which calls are
 * points"). */
static bool paced_point(const struct hcl_sync *s) { return !s->marked || (s->in_iter && s->it_ncalls == 0); }

void hcl_sync_before(struct hcl_sync *s)
{
	if (!hcl_sync_on(s))
		return;
	s->ready = clock_now_ns();
	s->point = paced_point(s);
	s->it_ncalls++;
	s->delay = s->pace_on && s->point ? s->pace.delay_ns : 0;
	uint8_t b[20];
	uint32_t seq = s->seq;
	b[0] = (uint8_t)(seq >> 24), b[1] = (uint8_t)(seq >> 16), b[2] = (uint8_t)(seq >> 8), b[3] = (uint8_t)seq;
	put64(b + 4, s->ready + s->offset_ns);
	put64(b + 12, s->delay);
	for (int j = 0; j < s->world; j++)
		if (j != s->rank)
			hcl_xfer_send_note(s->x, j, b, sizeof(b));
	on_note(s, s->rank, b, sizeof(b));
	s->layer_ns += clock_now_ns() - s->ready;
	/* the delay is a bounded wait, not a synchronisation: sleep in 1 ms
	 * pieces and answer peers (and notes) in between */
	int64_t until = s->ready + s->delay;
	for (int64_t now = s->ready; now < until; now = clock_now_ns())
		hcl_xfer_poll_wait(s->x, until - now < 1000000 ? until - now : 1000000);
}

/* How long to wait after the call for notes still on their way: everyone
 * sent theirs before the call could end, so only a lost note needs more. */
#define NOTE_GRACE_NS 5000000

void hcl_sync_after(struct hcl_sync *s, size_t bytes)
{
	if (!hcl_sync_on(s))
		return;
	int64_t end = clock_now_ns();
	struct note_slot *sl = &s->slot[s->seq & 1];
	while (sl->seq == s->seq && sl->have < s->world) {
		int64_t left = end + NOTE_GRACE_NS - clock_now_ns();
		if (left <= 0 || hcl_xfer_poll_wait(s->x, left) < 0)
			break;
	}
	int64_t after = clock_now_ns();
	s->layer_ns += after - end; /* collecting the notes: the layer's own cost */
	int64_t ready = s->ready, delay = s->delay, call_ns = end - ready;
	int64_t compute = ready - s->prev_end;
	bool complete = sl->seq == s->seq && sl->have == s->world;
	struct hcl_sync_point pt = { 0 };
	int64_t wait = 0;
	if (complete) {
		hcl_sync_derive(sl->rec, s->world, s->rank, &pt);
		wait = pt.wait_ns < 0 ? 0 : pt.wait_ns < call_ns - delay ? pt.wait_ns : call_ns - delay;
		if (s->pace_on && s->point)
			hcl_pace_update(&s->pace, pt.early_ns, s->iters ? s->iter_sum_ns / (int64_t)s->iters : 0);
		s->spread_sum_ns += (double)pt.spread_ns;
	} else {
		s->incomplete++;
	}
	int64_t comm = call_ns - delay - wait;
	s->calls++;
	s->paced_calls += delay > 0;
	s->it_calls_ns += after - ready;
	s->it_delay_ns += delay;
	s->it_wait_ns += wait;
	s->it_comm_ns += comm + (after - end);
	json_t *o = json_pack("{si,sI,sI,sf,sf,sf,sf,sf,sb,sb,sf}", "rank", s->rank, "call", (json_int_t)s->seq,
			      "bytes", (json_int_t)bytes, "ready_us", us(ready - s->t0), "compute_us", us(compute),
			      "delay_us", us(delay), "wait_us", us(wait), "comm_us", us(comm), "paced", delay > 0,
			      "complete", complete, "next_delay_us", us(s->pace_on ? s->pace.delay_ns : 0));
	if (o && complete)
		json_object_update_new(o, json_pack("{sf,sf,sf,sf,si}", "early_us", us(pt.early_ns), "after_first_us",
						    us(pt.spread_ns - pt.early_ns), "spread_us", us(pt.spread_ns),
						    "start_spread_us", us(pt.start_spread_ns), "last", pt.last));
	else if (o)
		json_object_set_new(o, "missing_notes", json_integer(s->world - (sl->seq == s->seq ? sl->have : 0)));
	emit(s, o);
	if (!s->marked) /* every call ends an iteration */
		push_iter(s, after - s->prev_end, compute);
	s->prev_end = after;
	s->seq++;
}

void hcl_sync_summary(const struct hcl_sync *s, struct hcl_sync_summary *o)
{
	memset(o, 0, sizeof(*o));
	if (!hcl_sync_on(s))
		return;
	struct hcl_sync_stats st = { 0 };
	int64_t *t = s->iters ? malloc(s->iters * sizeof(*t)) : NULL;
	if (t) {
		memcpy(t, s->iter_ns, s->iters * sizeof(*t));
		hcl_sync_stats(t, s->iters, &st);
		free(t);
	}
	o->iterations = s->iters;
	o->calls = s->calls;
	o->paced_calls = s->paced_calls;
	o->iter_mean_us = st.mean_ns / 1e3;
	o->iter_p50_us = st.p50_ns / 1e3;
	o->iter_p99_us = st.p99_ns / 1e3;
	o->iter_cv = st.cv;
	double tot = (double)(s->tot_compute + s->tot_delay + s->tot_wait + s->tot_comm);
	if (tot > 0) {
		o->compute_share = (double)s->tot_compute / tot;
		o->delay_share = (double)s->tot_delay / tot;
		o->wait_share = (double)s->tot_wait / tot;
		o->comm_share = (double)s->tot_comm / tot;
	}
	o->incomplete_calls = s->incomplete;
	unsigned long measured = s->calls - s->incomplete;
	o->spread_mean_us = measured ? s->spread_sum_ns / (double)measured / 1e3 : 0;
	o->layer_share = tot > 0 ? (double)s->layer_ns / tot : 0;
}

void hcl_sync_trace_host(struct hcl_sync *s, const struct hcl_comm_stats *st)
{
	if (!s || !s->trace)
		return;
	json_t *drops = json_object(); /* the software aggregators' refusals by reason, non-zero ones */
	for (unsigned r = 0; r < HCL_DROP_REASONS; r++)
		if (st->agg_drops[r] && hcl_drop_reason(r))
			json_object_set_new(drops, hcl_drop_reason(r), json_integer((json_int_t)st->agg_drops[r]));
	emit(s, json_pack("{si,s{sI,sI,sI,sI,sI,sI,sI,sI,sI,sI,sI,so}}", "rank", s->rank, "host", "xfer_sent",
			  (json_int_t)st->xfer_sent, "xfer_resent", (json_int_t)st->xfer_resent, "xfer_timeouts",
			  (json_int_t)st->xfer_timeouts, "ina_sent", (json_int_t)st->ina_sent, "ina_resent",
			  (json_int_t)st->ina_resent, "ina_results", (json_int_t)st->ina_results, "ina_stale",
			  (json_int_t)st->ina_stale, "ina_marked", (json_int_t)st->ina_marked, "agg_packets",
			  (json_int_t)st->agg_packets, "agg_accepted", (json_int_t)st->agg_accepted, "agg_dropped",
			  (json_int_t)st->agg_dropped, "agg_drops", drops));
}

void hcl_sync_free(struct hcl_sync *s)
{
	if (!s)
		return;
	if (s->trace) {
		struct hcl_sync_summary m;
		hcl_sync_summary(s, &m);
		/* late_notes: notes of calls already closed (lost time, not data) */
		emit(s, json_pack("{si,ss,sI,s{sI,sI,sI,sI,sf,sf,sf,sf,sf,sf,sf,sf,sf,sf}}", "rank", s->rank, "algo",
				  s->algo, "late_notes", (json_int_t)s->stale_notes, "summary", "iterations",
				  (json_int_t)m.iterations, "calls", (json_int_t)m.calls, "paced_calls",
				  (json_int_t)m.paced_calls, "incomplete_calls", (json_int_t)m.incomplete_calls,
				  "iter_mean_us", m.iter_mean_us, "iter_p50_us", m.iter_p50_us, "iter_p99_us",
				  m.iter_p99_us, "iter_cv", m.iter_cv, "compute_share", m.compute_share, "delay_share",
				  m.delay_share, "wait_share", m.wait_share, "comm_share", m.comm_share,
				  "spread_mean_us", m.spread_mean_us, "layer_share", m.layer_share));
	}
	free_sync(s);
}
