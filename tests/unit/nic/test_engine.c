/* SPDX-License-Identifier: BSD-3-Clause */
/* The aggregation engine against reference sums. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ina_bfp.h"
#include "testlib.h"

static float f32(uint32_t v)
{
	float f;
	memcpy(&f, &v, 4);
	return f;
}

static uint32_t u32(float f)
{
	uint32_t v;
	memcpy(&v, &f, 4);
	return v;
}

/* Reference of the engine's documented arithmetic for one slot, adding in
 * the given arrival order: int32 wraps and flags overflow; fp32 adds in
 * binary32 in arrival order. */
static void reference_sum(uint8_t dtype, unsigned fan_in, unsigned n, uint32_t **vals, const unsigned *order,
			  uint32_t *sum, bool *overflow)
{
	*overflow = false;
	for (unsigned e = 0; e < n; e++) {
		if (dtype == INA_D_FP32) {
			float s = f32(vals[order[0]][e]);
			for (unsigned k = 1; k < fan_in; k++)
				s += f32(vals[order[k]][e]);
			sum[e] = u32(s);
		} else {
			int64_t s = (int32_t)vals[order[0]][e];
			for (unsigned k = 1; k < fan_in; k++) {
				s += (int32_t)vals[order[k]][e];
				if (s > INT32_MAX || s < INT32_MIN) {
					*overflow = true;
					s = (int32_t)(uint32_t)s; /* wrap, as two's complement */
				}
			}
			sum[e] = (uint32_t)s;
		}
	}
}

static void shuffle(struct tl_rng *rng, unsigned *a, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		a[i] = i;
	for (unsigned i = n; i > 1; i--) {
		unsigned k = tl_below(rng, i), t = a[i - 1];
		a[i - 1] = a[k];
		a[k] = t;
	}
}

/* Random fan-ins, counts, dtypes, arrival orders; int32 and fp32 results
 * equal the reference bit for bit. */
static void test_reference_random(void **state)
{
	(void)state;
	static const unsigned fanins[] = { 1, 2, 3, 4, 5, 7, 8, 31, 32, 33, 64, 65, 256 };
	struct tl_rng rng = { 42 };
	struct ina_engine *eng = ina_engine_create(64, INA_MAX_ELEMS);
	assert_non_null(eng);

	for (int it = 0; it < 300; it++) {
		unsigned fan_in = fanins[tl_below(&rng, sizeof(fanins) / sizeof(fanins[0]))];
		uint8_t dtype = tl_below(&rng, 2) ? INA_D_FP32 : INA_D_INT32;
		uint16_t elems = (uint16_t)(1 + tl_below(&rng, INA_MAX_ELEMS));
		uint16_t n = (uint16_t)(1 + tl_below(&rng, elems));
		uint32_t slot = tl_below(&rng, 8) | (tl_below(&rng, 2) ? INA_SLOT_SET_BIT : 0);
		struct ina_job_cfg cfg = tl_job(9, fan_in, dtype, 8, elems);
		assert_int_equal(ina_job_install(eng, &cfg, NULL), 0);

		uint32_t **vals = malloc(fan_in * sizeof(*vals));
		unsigned order[256];
		uint32_t want[INA_MAX_ELEMS];
		bool ovf;
		for (unsigned c = 0; c < fan_in; c++) {
			vals[c] = malloc(n * 4);
			for (unsigned e = 0; e < n; e++)
				vals[c][e] = dtype == INA_D_FP32
						     ? u32((float)((int64_t)tl_below(&rng, 2000001) - 1000000) /
							   1024.0f)
						     : (uint32_t)tl_next(&rng);
		}
		shuffle(&rng, order, fan_in);
		reference_sum(dtype, fan_in, n, vals, order, want, &ovf);

		struct ina_hdr h = tl_hdr(INA_T_DATA, dtype, 9, 0, slot, 1, (uint32_t)it, n);
		for (unsigned k = 0; k < fan_in; k++) {
			h.contributor = (uint16_t)order[k];
			assert_int_equal(tl_send(eng, &cfg.contributors[order[k]], &h, vals[order[k]]), INA_OK);
			if (k + 1 < fan_in)
				assert_int_equal(tl_out.n, 0);
		}
		tl_assert_results(&tl_out, &cfg, &h, want, ovf);
		const struct ina_job_stats *st = ina_job_stats(eng, 9);
		assert_int_equal(st->contributions, fan_in);
		assert_int_equal(st->completions, 1);
		assert_int_equal(st->overflows, ovf);
		for (unsigned c = 0; c < fan_in; c++)
			free(vals[c]);
		free(vals);
		assert_int_equal(ina_job_remove(eng, 9), 0);
	}
	ina_engine_destroy(eng);
}

/* Reference rounding binary32 -> bfloat16, written apart from the engine's
 * bit trick: the two bf16 neighbours of f, the nearer one, on a tie the
 * one with an even last mantissa bit. */
static uint16_t ref_bf16(float f)
{
	if (isnan(f))
		return 0x7fc0;
	uint32_t u = u32(f);
	uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u; /* hi: one step away from zero */
	double dlo = fabs((double)f32(lo) - f);
	double dhi = isinf(f32(hi)) ? fabs(ldexp(1.0, 128) - fabs((double)f)) : fabs((double)f32(hi) - f);
	if (isinf(f))
		return (uint16_t)(u >> 16);
	if (dlo < dhi || (dlo == dhi && !(lo >> 16 & 1)))
		return (uint16_t)(lo >> 16);
	return (uint16_t)(hi >> 16);
}

static size_t encode_bf16(uint8_t *buf, const struct ina_hdr *h, const uint16_t *vals)
{
	ina_hdr_encode(h, buf);
	for (unsigned i = 0; vals && i < h->count; i++) {
		buf[INA_HDR_LEN + 2 * i] = (uint8_t)(vals[i] >> 8);
		buf[INA_HDR_LEN + 2 * i + 1] = (uint8_t)vals[i];
	}
	return INA_HDR_LEN + (vals ? 2u * h->count : 0u);
}

/* bf16: two bytes per element on the wire, binary32 sums in arrival
 * order, one rounding at the end; random values (finite, some huge so sums
 * overflow to infinity, some NaN), fan-ins, counts, orders; a join among
 * the contributions; a re-send gets the same bytes back. */
static void test_bf16(void **state)
{
	(void)state;
	static const unsigned fanins[] = { 1, 2, 3, 4, 7, 32, 65 };
	struct tl_rng rng = { 7 };
	struct ina_engine *eng = ina_engine_create(16, INA_MAX_ELEMS);
	assert_non_null(eng);

	for (int it = 0; it < 200; it++) {
		unsigned fan_in = fanins[tl_below(&rng, sizeof(fanins) / sizeof(fanins[0]))];
		uint16_t n = (uint16_t)(1 + tl_below(&rng, it % 4 ? 300 : INA_MAX_ELEMS));
		unsigned joiner = fan_in > 1 && tl_below(&rng, 3) == 0 ? tl_below(&rng, fan_in) : fan_in;
		struct ina_job_cfg cfg = tl_job(4, fan_in, INA_D_BF16, 4, INA_MAX_ELEMS);
		assert_int_equal(ina_job_install(eng, &cfg, NULL), 0);

		static uint16_t vals[65][INA_MAX_ELEMS];
		for (unsigned c = 0; c < fan_in; c++)
			for (unsigned e = 0; e < n; e++) {
				unsigned kind = tl_below(&rng, 100);
				uint16_t v = (uint16_t)tl_next(&rng);
				if (kind < 90) /* ordinary gradients: |x| in 2^-20 .. 2^12 */
					v = (uint16_t)((v & 0x807f) | (uint16_t)((107 + tl_below(&rng, 33)) << 7));
				else if (kind < 99) /* near the top of the range */
					v = (uint16_t)((v & 0x807f) | 0x7f00);
				else
					v = 0x7fc1; /* NaN */
				vals[c][e] = v;
			}
		unsigned order[65];
		shuffle(&rng, order, fan_in);
		uint16_t want[INA_MAX_ELEMS];
		for (unsigned e = 0; e < n; e++) {
			float s = 0;
			bool any = false;
			for (unsigned k = 0; k < fan_in; k++) {
				if (order[k] == joiner)
					continue;
				float v = f32((uint32_t)vals[order[k]][e] << 16);
				s = any ? s + v : v;
				any = true;
			}
			want[e] = any ? ref_bf16(s) : 0;
		}

		struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_BF16, 4, 0, (uint32_t)it % 4, 1, (uint32_t)it, n);
		size_t len = 0;
		for (unsigned k = 0; k < fan_in; k++) {
			unsigned c = order[k];
			h.contributor = (uint16_t)c;
			h.flags = c == joiner ? INA_F_JOIN : 0;
			len = encode_bf16(tl_pkt, &h, c == joiner ? NULL : vals[c]);
			assert_int_equal(ina_engine_rx(eng, tl_pkt, len, &cfg.contributors[c], &tl_out), INA_OK);
			assert_int_equal(tl_out.n, k + 1 < fan_in ? 0 : fan_in);
		}
		for (unsigned i = 0; i < tl_out.n; i++) {
			assert_int_equal(tl_out.e[i].hdr.dtype, INA_D_BF16);
			assert_int_equal(tl_out.e[i].payload_len, 2u * n);
			for (unsigned e = 0; e < n; e++) {
				const uint8_t *p = tl_out.e[i].payload + 2 * e;
				uint16_t got = (uint16_t)(p[0] << 8 | p[1]);
				bool nan = (got & 0x7fff) > 0x7f80; /* any NaN will do for a NaN */
				if (want[e] == 0x7fc0 ? !nan : got != want[e])
					fail_msg("fan-in %u, element %u: got %04x want %04x", fan_in, e, got, want[e]);
			}
		}
		/* a re-send of the last contribution: the stored result again */
		uint8_t first[2 * 4] = { 0 };
		memcpy(first, tl_out.e[0].payload, n < 4 ? 2u * n : sizeof(first));
		h.flags |= INA_F_RETX;
		len = encode_bf16(tl_pkt, &h, h.flags & INA_F_JOIN ? NULL : vals[order[fan_in - 1]]);
		assert_int_equal(ina_engine_rx(eng, tl_pkt, len, &cfg.contributors[order[fan_in - 1]], &tl_out),
				 INA_OK);
		assert_int_equal(tl_out.n, 1);
		assert_memory_equal(tl_out.e[0].payload, first, n < 4 ? 2u * n : sizeof(first));
		assert_int_equal(ina_job_remove(eng, 4), 0);
	}
	ina_engine_destroy(eng);
}

/* fp32 over int32: quantise with the shared exponent, aggregate exactly,
 * dequantise within the documented bound of the real sum. */
static void test_bfp_path(void **state)
{
	(void)state;
	struct tl_rng rng = { 7 };
	struct ina_engine *eng = ina_engine_create(4, 1024);

	for (int it = 0; it < 100; it++) {
		unsigned fan_in = 1 + tl_below(&rng, 32);
		unsigned n = 1 + tl_below(&rng, 1024);
		float mag = ldexpf(1.0f, (int)tl_below(&rng, 40) - 20);
		struct ina_job_cfg cfg = tl_job(3, fan_in, INA_D_BFP32, 4, 1024);
		assert_int_equal(ina_job_install(eng, &cfg, NULL), 0);

		static float x[32][1024];
		int8_t e_each[32], e = INA_BFP_EXP_MIN;
		for (unsigned c = 0; c < fan_in; c++) {
			/* magnitudes differ per contributor, so the proposals do */
			float mag_c = ldexpf(mag, -(int)tl_below(&rng, 6));
			for (unsigned i = 0; i < n; i++)
				x[c][i] = mag_c * (float)((int64_t)tl_below(&rng, 2000001) - 1000000) / 1e6f;
			assert_int_equal(ina_bfp_exponent(x[c], n, &e_each[c]), 0);
			if (e_each[c] > e)
				e = e_each[c];
		}
		/* every contributor proposes its own exponent; the slot keeps the max */
		uint8_t q[4096];
		struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_BFP32, 3, 0, 1, 0, (uint32_t)it, (uint16_t)n);
		for (unsigned c = 0; c < fan_in; c++) {
			ina_bfp_quantize(x[c], n, e, fan_in, q);
			h.contributor = (uint16_t)c;
			h.exponent = e_each[c];
			ina_hdr_encode(&h, tl_pkt);
			memcpy(tl_pkt + INA_HDR_LEN, q, 4 * n);
			assert_int_equal(ina_engine_rx(eng, tl_pkt, INA_HDR_LEN + 4 * n, &cfg.contributors[c], &tl_out),
					 INA_OK);
		}
		assert_int_equal(tl_out.n, fan_in);
		assert_int_equal(tl_out.e[0].hdr.exponent, e);
		assert_int_equal(tl_out.e[0].hdr.flags & INA_F_OVERFLOW, 0); /* the scale leaves room */
		float got[1024];
		ina_bfp_dequantize(tl_out.e[0].payload, n, tl_out.e[0].hdr.exponent, fan_in, got);
		double bound = ina_bfp_error_bound(e, fan_in);
		for (unsigned i = 0; i < n; i++) {
			double ref = 0;
			for (unsigned c = 0; c < fan_in; c++)
				ref += x[c][i];
			double tol = bound + fabs(ref) * ldexp(1.0, -24);
			if (fabs(got[i] - ref) > tol)
				fail_msg("fan_in %u e %d elem %u: got %.9g want %.9g (bound %.3g)", fan_in, e, i,
					 got[i], ref, tol);
		}
		ina_job_remove(eng, 3);
	}
	ina_engine_destroy(eng);
}

static bool next_perm(unsigned *a, unsigned n)
{
	int i = (int)n - 2;
	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return false;
	int j = (int)n - 1;
	while (a[j] <= a[i])
		j--;
	unsigned t = a[i];
	a[i] = a[j];
	a[j] = t;
	for (unsigned l = (unsigned)i + 1, r = n - 1; l < r; l++, r--) {
		t = a[l];
		a[l] = a[r];
		a[r] = t;
	}
	return true;
}

/* Every arrival order of 4 contributors, with a duplicate of every
 * already-arrived contributor inserted at every point: a duplicate before
 * completion is dropped, one after it gets the stored result again. */
static void test_permutations_duplicates(void **state)
{
	(void)state;
	enum { F = 4, N = 37 };
	struct ina_engine *eng = ina_engine_create(2, 64);
	struct ina_job_cfg cfg = tl_job(1, F, INA_D_INT32, 2, 64);
	uint32_t vals[F][N], want[N];
	unsigned perm[F] = { 0, 1, 2, 3 }, seq = 0, nperm = 0;

	for (unsigned c = 0; c < F; c++)
		for (unsigned e = 0; e < N; e++)
			vals[c][e] = 1000u * c + e * 7 + 1;
	for (unsigned e = 0; e < N; e++)
		want[e] = vals[0][e] + vals[1][e] + vals[2][e] + vals[3][e];

	do {
		nperm++;
		for (unsigned at = 1; at <= F; at++) {	    /* after `at` arrivals */
			for (unsigned d = 0; d < at; d++) { /* duplicate of perm[d] */
				assert_int_equal(ina_job_install(eng, &cfg, NULL), 0);
				struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 1, 0, 0, 0, seq++, N);
				for (unsigned k = 0; k < F; k++) {
					h.contributor = (uint16_t)perm[k];
					h.flags = 0;
					assert_int_equal(tl_send(eng, &cfg.contributors[perm[k]], &h, vals[perm[k]]),
							 INA_OK);
					if (k + 1 == F)
						tl_assert_results(&tl_out, &cfg, &h, want, false);
					if (k + 1 != at)
						continue;
					h.contributor = (uint16_t)perm[d];
					h.flags = INA_F_RETX;
					enum ina_reason r = tl_send(eng, &cfg.contributors[perm[d]], &h, vals[perm[d]]);
					if (at < F) {
						/* held while the slot waits: HAVE to the sender */
						assert_int_equal(r, INA_OK);
						assert_int_equal(tl_out.n, 1);
						assert_int_equal(tl_out.e[0].hdr.type, INA_T_HAVE);
						assert_int_equal(tl_out.e[0].hdr.contributor, perm[d]);
						assert_int_equal(tl_out.e[0].hdr.seq, h.seq);
						assert_int_equal(tl_out.e[0].payload_len, 0);
					} else {
						assert_int_equal(r, INA_OK);
						assert_int_equal(tl_out.n, 1);
						assert_int_equal(tl_out.e[0].hdr.contributor, perm[d]);
						assert_true(tl_out.e[0].hdr.flags & INA_F_RETX);
						for (unsigned e = 0; e < N; e++)
							assert_int_equal(tl_elem(tl_out.e[0].payload, e), want[e]);
					}
				}
				const struct ina_job_stats *st = ina_job_stats(eng, 1);
				assert_int_equal(st->contributions, F);
				assert_int_equal(st->completions, 1);
				assert_int_equal(st->drops[INA_R_DUPLICATE] + st->retransmits, 1);
				ina_job_remove(eng, 1);
			}
		}
	} while (next_perm(perm, F));
	assert_int_equal(nperm, 24);
	ina_engine_destroy(eng);
}

/* ---- a lossy network of SwitchML-style clients ---- */

struct msg {
	bool to_switch;
	unsigned worker; /* source (to switch) or destination */
	size_t len;
	uint8_t bytes[INA_HDR_LEN + 4 * 16];
};

struct sim {
	struct tl_rng rng;
	struct ina_engine *eng;
	struct ina_job_cfg cfg;
	unsigned nw, window, nslices, n;
	struct msg *q; /* in flight, delivered in random order */
	size_t nq, cap;
	/* per worker, per slot index: slice outstanding, set it uses */
	uint32_t next_slice[8][4];
	uint8_t set_of[8][4];
	bool done[8][64];
	uint32_t epoch;
	unsigned ndone;
	double loss, dup;
};

static uint32_t sim_val(const struct sim *s, unsigned w, uint32_t slice, unsigned e)
{
	return (s->epoch * 1000003u) ^ (w * 7919u + slice * 104729u + e * 31u);
}

static void sim_push(struct sim *s, const struct msg *m)
{
	if (tl_below(&s->rng, 1000) < s->loss * 1000)
		return;
	int copies = tl_below(&s->rng, 1000) < s->dup * 1000 ? 2 : 1;
	while (copies--) {
		if (s->nq == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 64;
			s->q = realloc(s->q, s->cap * sizeof(*s->q));
		}
		s->q[s->nq++] = *m;
	}
}

static void sim_send(struct sim *s, unsigned w, unsigned i, bool retx)
{
	uint32_t slice = s->next_slice[w][i], v[16];
	if (slice >= s->nslices)
		return;
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, s->cfg.id, (uint16_t)w,
				  i | (s->set_of[w][i] ? INA_SLOT_SET_BIT : 0), s->epoch, slice, (uint16_t)s->n);
	h.flags = retx ? INA_F_RETX : 0;
	for (unsigned e = 0; e < s->n; e++)
		v[e] = sim_val(s, w, slice, e);
	struct msg m = { .to_switch = true, .worker = w };
	m.len = tl_encode(m.bytes, &h, v, s->n);
	sim_push(s, &m);
}

static void sim_worker_rx(struct sim *s, const struct msg *m)
{
	struct ina_pkt p;
	assert_int_equal(ina_parse(m->bytes, m->len, &p), INA_OK);
	unsigned w = m->worker, i = ina_slot_index(p.hdr.slot);
	if (p.hdr.type == INA_T_HAVE)
		return; /* a re-send is held: the worker waits on */
	assert_int_equal(p.hdr.type, INA_T_RESULT);
	if (p.hdr.seq != s->next_slice[w][i] || p.hdr.epoch != s->epoch)
		return; /* duplicate of a result already taken */
	assert_int_equal(ina_slot_set(p.hdr.slot), s->set_of[w][i]);
	for (unsigned e = 0; e < s->n; e++) {
		uint32_t want = 0;
		for (unsigned k = 0; k < s->nw; k++)
			want += sim_val(s, k, p.hdr.seq, e);
		assert_int_equal(tl_elem(p.payload, e), want);
	}
	assert_false(s->done[w][p.hdr.seq]);
	s->done[w][p.hdr.seq] = true;
	s->ndone++;
	s->next_slice[w][i] += s->window;
	s->set_of[w][i] ^= 1;
	sim_send(s, w, i, false);
}

/* Runs one collective (epoch) to the end; timeouts are modelled as "the
 * network went quiet", upon which every worker re-sends what it waits for. */
static void sim_run_epoch(struct sim *s)
{
	unsigned quiet = 0;

	s->ndone = 0;
	memset(s->done, 0, sizeof(s->done));
	for (unsigned w = 0; w < s->nw; w++)
		for (unsigned i = 0; i < s->window; i++) {
			s->next_slice[w][i] = i;
			sim_send(s, w, i, false);
		}
	while (s->ndone < s->nw * s->nslices) {
		if (s->nq == 0) {
			assert_true(++quiet < 10000); /* no livelock */
			for (unsigned w = 0; w < s->nw; w++)
				for (unsigned i = 0; i < s->window; i++)
					sim_send(s, w, i, true);
			continue;
		}
		size_t k = tl_below(&s->rng, (uint32_t)s->nq);
		struct msg m = s->q[k];
		s->q[k] = s->q[--s->nq];
		if (!m.to_switch) {
			sim_worker_rx(s, &m);
			continue;
		}
		struct ina_addr src = s->cfg.contributors[m.worker];
		enum ina_reason r = ina_engine_rx(s->eng, m.bytes, m.len, &src, &tl_out);
		assert_true(r == INA_OK || r == INA_R_DUPLICATE || r == INA_R_STALE || r == INA_R_SLOT_BUSY);
		for (unsigned e = 0; e < tl_out.n; e++) {
			struct msg rm = { .to_switch = false, .worker = tl_out.e[e].hdr.contributor };
			ina_hdr_encode(&tl_out.e[e].hdr, rm.bytes);
			memcpy(rm.bytes + INA_HDR_LEN, tl_out.e[e].payload, tl_out.e[e].payload_len);
			rm.len = INA_HDR_LEN + tl_out.e[e].payload_len;
			assert_int_equal(tl_out.e[e].dst.ip, s->cfg.contributors[rm.worker].ip);
			sim_push(s, &rm);
		}
	}
	s->nq = 0; /* what is still in flight is dropped by the next epoch's rules */
}

static void run_sim(unsigned nw, unsigned window, double loss, double dup, uint64_t seed)
{
	struct sim s;
	memset(&s, 0, sizeof(s));
	s.rng.s = seed;
	s.nw = nw;
	s.window = window;
	s.nslices = 40;
	s.n = 16;
	s.loss = loss;
	s.dup = dup;
	s.eng = ina_engine_create(window, 16);
	s.cfg = tl_job(5, nw, INA_D_INT32, window, 16);
	assert_int_equal(ina_job_install(s.eng, &s.cfg, NULL), 0);

	/* two collectives: a worker's set alternation continues across them */
	for (s.epoch = 1; s.epoch <= 2; s.epoch++)
		sim_run_epoch(&s);

	const struct ina_job_stats *st = ina_job_stats(s.eng, 5);
	/* each contributor counted exactly once per slice, whatever the network did */
	assert_int_equal(st->contributions, 2u * nw * s.nslices);
	assert_int_equal(st->completions, 2u * s.nslices);
	free(s.q);
	ina_engine_destroy(s.eng);
}

static void test_shadow_sets_lossless(void **state)
{
	(void)state;
	run_sim(4, 4, 0, 0, 11);
	run_sim(1, 2, 0, 0, 12);
}

static void test_shadow_sets_lossy(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		run_sim(2 + (unsigned)(seed % 7), 1 + (unsigned)(seed % 4), 0.1, 0.05, seed);
		run_sim(8, 4, 0.3, 0.2, seed * 977);
	}
}

/* The job table's INA_MAX_JOBS entries: every one takes a job, one more
 * does not, and a removed one's entry and slot serve the next. */
static void test_job_table(void **state)
{
	(void)state;
	struct ina_engine *big = ina_engine_create(INA_MAX_JOBS + 1, 8);
	struct ina_job_cfg c;
	const char *why = NULL;
	assert_non_null(big);
	for (uint16_t id = 0; id < INA_MAX_JOBS; id++) {
		c = tl_job(id, 1, INA_D_INT32, 1, 8);
		c.contributors[0] = tl_addr(id);
		assert_int_equal(ina_job_install(big, &c, &why), 0);
	}
	c = tl_job(60000, 2, INA_D_INT32, 1, 8);
	assert_int_equal(ina_job_install(big, &c, &why), -ENOSPC);
	assert_non_null(strstr(why, "job table"));
	assert_int_equal(ina_job_remove(big, 700), 0);
	assert_int_equal(ina_job_install(big, &c, &why), 0);
	assert_int_equal(ina_job_slot_base(big, 60000), 700);
	/* entry 700 (past what a byte indexes) aggregates as any other */
	const uint32_t a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[8] = { 10, 20, 30, 40, 50, 60, 70, 80 };
	const uint32_t want[8] = { 11, 22, 33, 44, 55, 66, 77, 88 };
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 60000, 0, 0, 1, 0, 8);
	assert_int_equal(tl_send(big, &c.contributors[0], &h, a), INA_OK);
	h.contributor = 1;
	assert_int_equal(tl_send(big, &c.contributors[1], &h, b), INA_OK);
	tl_assert_results(&tl_out, &c, &h, want, 0);
	for (uint32_t id = 0; id < INA_MAX_JOBS; id++)
		assert_int_equal(ina_job_remove(big, (uint16_t)id), id == 700 ? -ENOENT : 0);
	assert_int_equal(ina_job_remove(big, 60000), 0);
	ina_engine_destroy(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_random),
		cmocka_unit_test(test_job_table),
		cmocka_unit_test(test_bfp_path),
		cmocka_unit_test(test_bf16),
		cmocka_unit_test(test_permutations_duplicates),
		cmocka_unit_test(test_shadow_sets_lossless),
		cmocka_unit_test(test_shadow_sets_lossy),
	};
	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
