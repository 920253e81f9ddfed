/* SPDX-License-Identifier: BSD-3-Clause */
/* Finishing a call whose aggregator was lost mid-job (its switch job
 * removed, its engine refusing it, while the network still forwards): the
 * software ring takes over within the call, the fall-back the Rina paper
 * describes.  Every rank gets here, because an all-reduce through an
 * aggregator that stopped stalls every rank of it; but not always in the
 * same call.
 *
 * The ranks may be one call apart: a rank can finish a call (all its
 * results came) while another still waits (its last result, or an
 * agent-ring ACK, went with the job) and then stall in the next one.  The
 * first exchange, of a fixed size so that it matches whatever call each
 * rank is in, says which call each rank is in and what it can give.  When
 * they differ, the earlier call is finished first, from everyone's inputs
 * of it: the ranks behind give this call's input, those ahead the input
 * of the call they finished, which agent-ring's worker keeps (its copy of
 * an in-place call's input alternates between two buffers).  Those behind
 * return with that; those ahead exchange again, and meet them in the next
 * call.  Without the inputs (ps-ina keeps none) every rank fails, naming
 * the two calls.
 *
 * Slices the aggregator finished may differ between ranks (a result lost on
 * the way to one of them just before the job went), so the ranks first
 * share which slices each holds (as agent-ring shares MACs: each rank's row
 * of a zero matrix, summed).  Then one ring all-reduce over the slices not
 * finished everywhere: where nobody holds the result every rank adds its
 * input; where some do, the lowest holder gives the result and everyone
 * else zero — so every rank ends with the same, exact values. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_fallback.h"
#include "hcl_algo.h"
#include "hcl_ring.h"

static void pack(void *w, size_t at, const void *buf, size_t off, size_t len, enum hcl_dtype dt, bool give);
static void unpack(void *buf, size_t off, const void *w, size_t at, size_t len, enum hcl_dtype dt);

/* What each rank says in the first exchange. */
enum { T_CALL, T_COUNT, T_DT, T_GIVES, T_PREV_COUNT, T_PREV_DT, T_N };
#define GIVES_THIS 1 /* this call's input, whole */
#define GIVES_PREV 2 /* the input of the call before */

/* Every rank's row (call, count, what it can give) into *out; 0 or a
 * negative errno (c->err). */
static int call_table(struct hcl_comm *c, size_t count, enum hcl_dtype dt, const struct hcl_fallback_in *in,
		      int64_t deadline, int32_t **out)
{
	int32_t *v = calloc((size_t)c->world * T_N, sizeof(int32_t));
	if (!v)
		return hcl_fail(-ENOMEM, c->err, sizeof(c->err), "fall-back: out of memory");
	int32_t *mine = v + (size_t)c->rank * T_N;
	mine[T_CALL] = (int32_t)c->calls;
	mine[T_COUNT] = (int32_t)count; /* a mismatch, not the count itself, matters */
	mine[T_GIVES] = (in->input || !in->done ? GIVES_THIS : 0) | (in->prev_input ? GIVES_PREV : 0);
	mine[T_PREV_COUNT] = (int32_t)in->prev_count;
	mine[T_DT] = (int32_t)dt;
	mine[T_PREV_DT] = (int32_t)in->prev_dt;
	int rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, v, (size_t)c->world * T_N, HCL_INT32,
				    ++c->epoch, deadline, c->err, sizeof(c->err));
	if (rc < 0)
		free(v);
	else
		*out = v;
	return rc;
}

/* The sum of the earlier call's inputs (count elements), as every rank
 * computes it when some are a call ahead; a rank behind takes it as its
 * result.  mine: this rank's input of that call. */
static int finish_earlier(struct hcl_comm *c, const void *mine, size_t count, enum hcl_dtype dt, void *result,
			  int64_t deadline)
{
	void *w = count ? malloc(count * 4) : NULL;
	if (count && !w)
		return hcl_fail(-ENOMEM, c->err, sizeof(c->err), "fall-back: out of memory for %zu elements", count);
	pack(w, 0, mine, 0, count, dt, true);
	int rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, w, count,
				    dt == HCL_BF16 ? HCL_FP32 : dt, ++c->epoch, deadline, c->err, sizeof(c->err));
	if (rc == 0 && result)
		unpack(result, 0, w, 0, count, dt);
	free(w);
	return rc;
}

/* Whether a rank's row fits the earlier call lo (n_lo elements of dt_lo):
 * in it, the same count and type, and when others are ahead its input
 * whole; ahead of it, that call's input kept. */
static bool row_fits(const int32_t *row, uint32_t lo, uint32_t hi, int32_t n_lo, int32_t dt_lo)
{
	if ((uint32_t)row[T_CALL] == lo)
		return row[T_COUNT] == n_lo && row[T_DT] == dt_lo && (hi == lo || row[T_GIVES] & GIVES_THIS);
	return row[T_GIVES] & GIVES_PREV && row[T_PREV_COUNT] == n_lo && row[T_PREV_DT] == dt_lo;
}

/* Brings every rank to the same call: 0 when they are there (this rank's
 * call is the one to finish), 1 when this rank was behind and its call is
 * finished (buf holds the sum), or a negative errno, the same on every
 * rank. */
static int align_calls(struct hcl_comm *c, void *buf, size_t count, enum hcl_dtype dt, const struct hcl_fallback_in *in,
		       int64_t deadline)
{
	for (;;) {
		int32_t *t = NULL;
		int rc = call_table(c, count, dt, in, deadline, &t);
		if (rc < 0)
			return rc;
		uint32_t lo = UINT32_MAX, hi = 0;
		int r_lo = 0, r_hi = 0;
		for (int r = 0; r < c->world; r++) {
			uint32_t k = (uint32_t)t[r * T_N + T_CALL];
			if (k < lo)
				lo = k, r_lo = r;
			if (k > hi)
				hi = k, r_hi = r;
		}
		bool ok = hi - lo <= 1;
		int32_t n_lo = t[r_lo * T_N + T_COUNT], dt_lo = t[r_lo * T_N + T_DT];
		int odd = -1; /* the first rank that breaks it */
		for (int r = 0; r < c->world && odd < 0; r++)
			if (!row_fits(t + r * T_N, lo, hi, n_lo, dt_lo))
				odd = r;
		ok = ok && odd < 0;
		free(t);
		if (hi == lo && ok)
			return 0;
		if (hi == lo)
			return hcl_fail(-EPROTO, c->err, sizeof(c->err),
					"rank %d's call %u differs from rank %d's in count or data type", odd, lo,
					r_lo);
		if (!ok)
			return hcl_fail(-EPROTO, c->err, sizeof(c->err),
					"INA was lost while the ranks were in calls that cannot be finished together "
					"(rank %d in call %u, rank %d in call %u; a call behind is finished only from "
					"everyone's inputs of it, which this algorithm does not keep)",
					r_lo, lo, r_hi, hi);
		bool behind = c->calls == lo;
		const void *mine = behind ? (in->input ? in->input : buf) : in->prev_input;
		rc = finish_earlier(c, mine, (size_t)n_lo, (enum hcl_dtype)dt_lo, behind ? buf : NULL, deadline);
		if (rc < 0 || behind)
			return rc < 0 ? rc : 1;
	}
}

/* Every rank's done slices into *out, row r = rank r's bitmap (32 slices
 * a word); without a done function nobody holds any.  0 or a negative
 * errno (c->err). */
static int share_done(struct hcl_comm *c, size_t nslices, const struct hcl_fallback_in *in, int64_t deadline,
		      int32_t **out)
{
	size_t words = (nslices + 31) / 32;
	int32_t *m = calloc((size_t)c->world * words + 1, sizeof(int32_t));
	if (!m)
		return hcl_fail(-ENOMEM, c->err, sizeof(c->err), "fall-back: out of memory");
	uint32_t *row = (uint32_t *)m + (size_t)c->rank * words;
	for (size_t k = 0; in->done && k < nslices; k++)
		if (in->done(in->ctx, k))
			row[k / 32] |= 1u << (k % 32);
	int rc = 0;
	if (in->done)
		rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, m, (size_t)c->world * words,
					HCL_INT32, ++c->epoch, deadline, c->err, sizeof(c->err));
	if (rc < 0)
		free(m);
	else
		*out = m;
	return rc;
}

/* The lowest rank holding slice k's result, world if all do, -1 if none. */
static int holder(const struct hcl_comm *c, const int32_t *m, size_t words, size_t k)
{
	int first = -1, n = 0;
	for (int r = 0; r < c->world; r++)
		if ((uint32_t)m[(size_t)r * words + k / 32] >> (k % 32) & 1) {
			first = first < 0 ? r : first;
			n++;
		}
	return n == c->world ? c->world : first;
}

/* Copies slice [off, off+len) of buf into or out of the packed sum w (as
 * binary32 for bf16), or zeros when this rank gives nothing. */
static void pack(void *w, size_t at, const void *buf, size_t off, size_t len, enum hcl_dtype dt, bool give)
{
	if (dt != HCL_BF16) {
		if (give)
			memcpy((uint8_t *)w + at * 4, (const uint8_t *)buf + off * 4, len * 4);
		else
			memset((uint8_t *)w + at * 4, 0, len * 4);
		return;
	}
	for (size_t i = 0; i < len; i++)
		((float *)w)[at + i] = give ? hcl_bf16_widen(((const uint16_t *)buf)[off + i]) : 0.0f;
}

static void unpack(void *buf, size_t off, const void *w, size_t at, size_t len, enum hcl_dtype dt)
{
	if (dt != HCL_BF16) {
		memcpy((uint8_t *)buf + off * 4, (const uint8_t *)w + at * 4, len * 4);
		return;
	}
	for (size_t i = 0; i < len; i++)
		((uint16_t *)buf)[off + i] = hcl_bf16_narrow(((const float *)w)[at + i]);
}

void hcl_fallback_begin(struct hcl_comm *c, const char *why)
{
	size_t n = strlen(c->algo->name);
	bool named = !strncmp(why, c->algo->name, n) && why[n] == ':'; /* agent-ring's errors say who they are */
	fprintf(stderr, "hcl: rank %d: %s%s%s; this call and the later ones run on the software ring\n", c->rank,
		named ? "" : c->algo->name, named ? "" : ": ", why);
	c->ina_lost = true;
	/* the others' calls stall too, but their own switch may still answer:
	 * tell them (twice: it is one datagram; the timer is behind it) */
	for (int k = 0; k < 2; k++)
		for (int r = 0; r < c->world; r++)
			if (r != c->rank)
				hcl_xfer_send_lost(c->x, r, c->calls);
}

int hcl_fallback_allreduce(struct hcl_comm *c, void *buf, size_t count, enum hcl_dtype dt,
			   const struct hcl_fallback_in *in, int64_t deadline)
{
	const size_t se = in->slice_elems ? in->slice_elems : (count ? count : 1);
	const size_t nslices = (count + se - 1) / se, words = (nslices + 31) / 32;
	c->ina_fallback_calls++;
	int32_t *m = NULL;
	int rc = c->fallback_aligned ? 0 : align_calls(c, buf, count, dt, in, deadline);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	c->fallback_aligned = true; /* all in this call: from here on they stay together */
	if (in->input && count && in->input != buf)
		memcpy(buf, in->input, count * (dt == HCL_BF16 ? 2 : 4));
	if ((rc = share_done(c, nslices, in, deadline, &m)) < 0)
		return rc;
	size_t need = 0;
	for (size_t k = 0; k < nslices; k++)
		if (holder(c, m, words, k) < c->world)
			need += k * se + se <= count ? se : count - k * se;
	void *w = need ? malloc(need * 4) : NULL;
	if (need && !w)
		rc = hcl_fail(-ENOMEM, c->err, sizeof(c->err), "fall-back: out of memory for %zu elements", need);
	for (size_t k = 0, at = 0; rc == 0 && k < nslices; k++) {
		int h = holder(c, m, words, k);
		size_t off = k * se, len = off + se <= count ? se : count - off;
		if (h == c->world)
			continue;
		pack(w, at, buf, off, len, dt, h < 0 || h == c->rank);
		at += len;
	}
	if (rc == 0 && need)
		rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, w, need,
					dt == HCL_BF16 ? HCL_FP32 : dt, ++c->epoch, deadline, c->err, sizeof(c->err));
	for (size_t k = 0, at = 0; rc == 0 && k < nslices; k++) {
		size_t off = k * se, len = off + se <= count ? se : count - off;
		if (holder(c, m, words, k) == c->world)
			continue;
		unpack(buf, off, w, at, len, dt);
		at += len;
	}
	free(w);
	free(m);
	return rc;
}
