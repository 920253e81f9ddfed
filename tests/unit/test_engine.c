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

static struct ina_emits out;
static uint8_t pktbuf[INA_HDR_LEN + INA_MAX_PAYLOAD];

/* Sends DATA/PULL from member `from` (address of job cfg) and returns the
 * engine's verdict. */
static enum ina_reason send_from(struct ina_engine *eng, const struct ina_addr *src,
				 const struct ina_hdr *h, const uint32_t *vals)
{
	size_t len = tl_encode(pktbuf, h, h->type == INA_T_DATA || h->type == INA_T_RESULT ? vals : NULL,
			       h->count);
	return ina_engine_rx(eng, pktbuf, len, src, &out);
}

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
static void reference_sum(uint8_t dtype, unsigned fan_in, unsigned n, uint32_t **vals,
			  const unsigned *order, uint32_t *sum, bool *overflow)
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

static void assert_results(const struct ina_job_cfg *cfg, const struct ina_hdr *h,
			   const uint32_t *want, bool overflow)
{
	assert_int_equal(out.n, cfg->fan_in);
	for (unsigned i = 0; i < out.n; i++) {
		const struct ina_emit *e = &out.e[i];
		assert_int_equal(e->hdr.type, INA_T_RESULT);
		assert_int_equal(e->hdr.contributor, i);
		assert_int_equal(e->dst.ip, cfg->contributors[i].ip);
		assert_int_equal(e->hdr.slot, h->slot);
		assert_int_equal(e->hdr.seq, h->seq);
		assert_int_equal(e->hdr.epoch, h->epoch);
		assert_int_equal(e->hdr.count, h->count);
		assert_int_equal(!!(e->hdr.flags & INA_F_OVERFLOW), overflow);
		assert_int_equal(e->payload_len, 4u * h->count);
		for (unsigned k = 0; k < h->count; k++)
			if (tl_elem(e->payload, k) != want[k])
				fail_msg("element %u: got %08x want %08x", k, tl_elem(e->payload, k),
					 want[k]);
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
						     ? u32((float)((int64_t)tl_below(&rng, 2000001) - 1000000) / 1024.0f)
						     : (uint32_t)tl_next(&rng);
		}
		shuffle(&rng, order, fan_in);
		reference_sum(dtype, fan_in, n, vals, order, want, &ovf);

		struct ina_hdr h = tl_hdr(INA_T_DATA, dtype, 9, 0, slot, 1, (uint32_t)it, n);
		for (unsigned k = 0; k < fan_in; k++) {
			h.contributor = (uint16_t)order[k];
			assert_int_equal(send_from(eng, &cfg.contributors[order[k]], &h, vals[order[k]]),
					 INA_OK);
			if (k + 1 < fan_in)
				assert_int_equal(out.n, 0);
		}
		assert_results(&cfg, &h, want, ovf);
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
			len = encode_bf16(pktbuf, &h, c == joiner ? NULL : vals[c]);
			assert_int_equal(ina_engine_rx(eng, pktbuf, len, &cfg.contributors[c], &out), INA_OK);
			assert_int_equal(out.n, k + 1 < fan_in ? 0 : fan_in);
		}
		for (unsigned i = 0; i < out.n; i++) {
			assert_int_equal(out.e[i].hdr.dtype, INA_D_BF16);
			assert_int_equal(out.e[i].payload_len, 2u * n);
			for (unsigned e = 0; e < n; e++) {
				const uint8_t *p = out.e[i].payload + 2 * e;
				uint16_t got = (uint16_t)(p[0] << 8 | p[1]);
				bool nan = (got & 0x7fff) > 0x7f80; /* any NaN will do for a NaN */
				if (want[e] == 0x7fc0 ? !nan : got != want[e])
					fail_msg("fan-in %u, element %u: got %04x want %04x", fan_in, e, got, want[e]);
			}
		}
		/* a re-send of the last contribution: the stored result again */
		uint8_t first[2 * 4] = { 0 };
		memcpy(first, out.e[0].payload, n < 4 ? 2u * n : sizeof(first));
		h.flags |= INA_F_RETX;
		len = encode_bf16(pktbuf, &h, h.flags & INA_F_JOIN ? NULL : vals[order[fan_in - 1]]);
		assert_int_equal(ina_engine_rx(eng, pktbuf, len, &cfg.contributors[order[fan_in - 1]], &out), INA_OK);
		assert_int_equal(out.n, 1);
		assert_memory_equal(out.e[0].payload, first, n < 4 ? 2u * n : sizeof(first));
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
			ina_hdr_encode(&h, pktbuf);
			memcpy(pktbuf + INA_HDR_LEN, q, 4 * n);
			assert_int_equal(ina_engine_rx(eng, pktbuf, INA_HDR_LEN + 4 * n, &cfg.contributors[c], &out),
					 INA_OK);
		}
		assert_int_equal(out.n, fan_in);
		assert_int_equal(out.e[0].hdr.exponent, e);
		assert_int_equal(out.e[0].hdr.flags & INA_F_OVERFLOW, 0); /* the scale leaves room */
		float got[1024];
		ina_bfp_dequantize(out.e[0].payload, n, out.e[0].hdr.exponent, fan_in, got);
		double bound = ina_bfp_error_bound(e, fan_in);
		for (unsigned i = 0; i < n; i++) {
			double ref = 0;
			for (unsigned c = 0; c < fan_in; c++)
				ref += x[c][i];
			double tol = bound + fabs(ref) * ldexp(1.0, -24);
			if (fabs(got[i] - ref) > tol)
				fail_msg("fan_in %u e %d elem %u: got %.9g want %.9g (bound %.3g)", fan_in,
					 e, i, got[i], ref, tol);
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
		for (unsigned at = 1; at <= F; at++) {           /* after `at` arrivals */
			for (unsigned d = 0; d < at; d++) {      /* duplicate of perm[d] */
				assert_int_equal(ina_job_install(eng, &cfg, NULL), 0);
				struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 1, 0, 0, 0, seq++, N);
				for (unsigned k = 0; k < F; k++) {
					h.contributor = (uint16_t)perm[k];
					h.flags = 0;
					assert_int_equal(send_from(eng, &cfg.contributors[perm[k]], &h,
								   vals[perm[k]]), INA_OK);
					if (k + 1 == F)
						assert_results(&cfg, &h, want, false);
					if (k + 1 != at)
						continue;
					h.contributor = (uint16_t)perm[d];
					h.flags = INA_F_RETX;
					enum ina_reason r = send_from(eng, &cfg.contributors[perm[d]], &h,
								      vals[perm[d]]);
					if (at < F) {
						assert_int_equal(r, INA_R_DUPLICATE);
						assert_int_equal(out.n, 0);
					} else {
						assert_int_equal(r, INA_OK);
						assert_int_equal(out.n, 1);
						assert_int_equal(out.e[0].hdr.contributor, perm[d]);
						assert_true(out.e[0].hdr.flags & INA_F_RETX);
						for (unsigned e = 0; e < N; e++)
							assert_int_equal(tl_elem(out.e[0].payload, e), want[e]);
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
				  i | (s->set_of[w][i] ? INA_SLOT_SET_BIT : 0), s->epoch, slice,
				  (uint16_t)s->n);
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
		enum ina_reason r = ina_engine_rx(s->eng, m.bytes, m.len, &src, &out);
		assert_true(r == INA_OK || r == INA_R_DUPLICATE || r == INA_R_STALE ||
			    r == INA_R_SLOT_BUSY);
		for (unsigned e = 0; e < out.n; e++) {
			struct msg rm = { .to_switch = false, .worker = out.e[e].hdr.contributor };
			ina_hdr_encode(&out.e[e].hdr, rm.bytes);
			memcpy(rm.bytes + INA_HDR_LEN, out.e[e].payload, out.e[e].payload_len);
			rm.len = INA_HDR_LEN + out.e[e].payload_len;
			assert_int_equal(out.e[e].dst.ip, s->cfg.contributors[rm.worker].ip);
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

/* ---- individual behaviours ---- */

static struct ina_engine *eng1;

static int setup_eng(void **state)
{
	(void)state;
	eng1 = ina_engine_create(64, 256);
	return eng1 ? 0 : -1;
}

static int teardown_eng(void **state)
{
	(void)state;
	ina_engine_destroy(eng1);
	return 0;
}

/* A packet of job A never changes job B's slots or counters. */
static void test_job_isolation(void **state)
{
	(void)state;
	struct tl_rng rng = { 99 };
	struct ina_job_cfg a = tl_job(1, 4, INA_D_INT32, 4, 16);
	struct ina_job_cfg b = tl_job(2, 3, INA_D_INT32, 4, 16);
	assert_int_equal(ina_job_install(eng1, &a, NULL), 0);
	assert_int_equal(ina_job_install(eng1, &b, NULL), 0);
	assert_int_equal(ina_job_slot_base(eng1, 1), 0);
	assert_int_equal(ina_job_slot_base(eng1, 2), 4); /* B right behind A */

	uint32_t v[3][16], want[16];
	for (unsigned c = 0; c < 3; c++)
		for (unsigned e = 0; e < 16; e++)
			v[c][e] = c * 100 + e;
	for (unsigned e = 0; e < 16; e++)
		want[e] = v[0][e] + v[1][e] + v[2][e];
	/* B: slots 0..3, two of three contributions each */
	for (uint32_t sl = 0; sl < 4; sl++)
		for (unsigned c = 0; c < 2; c++) {
			struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 2, (uint16_t)c, sl, 0, sl, 16);
			assert_int_equal(send_from(eng1, &b.contributors[c], &h, v[c]), INA_OK);
		}
	struct ina_job_stats before = *ina_job_stats(eng1, 2);

	/* hostile and valid traffic for job A: any slot (incl. B's engine slots
	 * 4..7, which an unchecked index would reach), any contributor, any
	 * address including B's members */
	for (int it = 0; it < 20000; it++) {
		uint32_t vals[16];
		for (int e = 0; e < 16; e++)
			vals[e] = (uint32_t)tl_next(&rng);
		struct ina_hdr h = tl_hdr(tl_below(&rng, 4) ? INA_T_DATA : (uint8_t)(1 + tl_below(&rng, 5)),
					  INA_D_INT32, 1, (uint16_t)tl_below(&rng, 6),
					  tl_below(&rng, 12) | (tl_below(&rng, 2) ? INA_SLOT_SET_BIT : 0),
					  tl_below(&rng, 3), tl_below(&rng, 8), (uint16_t)(1 + tl_below(&rng, 16)));
		if (tl_below(&rng, 8) == 0)
			h.contributor = INA_CONTRIB_UPSTREAM;
		const struct ina_addr *src = tl_below(&rng, 3) == 0
						     ? &b.contributors[tl_below(&rng, 3)]
						     : &a.contributors[tl_below(&rng, 4)];
		send_from(eng1, src, &h, vals);
		for (unsigned e = 0; e < out.n; e++)
			assert_int_equal(out.e[e].hdr.job, 1);
	}
	assert_memory_equal(ina_job_stats(eng1, 2), &before, sizeof(before));
	assert_true(ina_job_stats(eng1, 1)->drops[INA_R_SLOT_OUT_OF_RANGE] > 0);
	assert_true(ina_job_stats(eng1, 1)->drops[INA_R_NOT_MEMBER] > 0);

	/* B's third contributions complete every slot with B's exact sums */
	for (uint32_t sl = 0; sl < 4; sl++) {
		struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 2, 2, sl, 0, sl, 16);
		assert_int_equal(send_from(eng1, &b.contributors[2], &h, v[2]), INA_OK);
		assert_results(&b, &h, want, false);
	}
	ina_job_remove(eng1, 1);
	ina_job_remove(eng1, 2);
}

static void expect_install(const struct ina_job_cfg *c, int err, const char *why_part)
{
	const char *why = NULL;
	int r = ina_job_install(eng1, c, &why);
	if (r != err)
		fail_msg("install: got %d want %d (%s)", r, err, why ? why : "-");
	if (why_part)
		assert_non_null(strstr(why, why_part));
}

static void test_install_checks(void **state)
{
	(void)state;
	struct ina_job_cfg c;

#define BAD(field_stmt, part)                                       \
	do {                                                        \
		c = tl_job(1, 4, INA_D_INT32, 4, 64);               \
		field_stmt;                                         \
		expect_install(&c, -EINVAL, part);                  \
	} while (0)
	BAD(c.fan_in = 0, "fan_in");
	BAD(c.fan_in = INA_MAX_FANIN + 1, "fan_in");
	BAD(c.dtype = INA_D_NONE, "dtype");
	BAD(c.dtype = 9, "dtype");
	BAD(c.nslots = 0, "nslots");
	BAD(c.elems_per_slot = 0, "elems_per_slot");
	BAD(c.elems_per_slot = 257, "elems_per_slot"); /* engine max is 256 */
	BAD(c.outputs = 0, "outputs");
	BAD(c.outputs = 16, "outputs");
	BAD(c.outputs = INA_OUT_ACK, "ack");
	BAD(c.outputs = INA_OUT_ACK | INA_OUT_PS, "exclude");
	BAD(c.outputs = INA_OUT_PS | INA_OUT_FORWARD, "exclude");
	BAD((c.outputs = INA_OUT_PS, c.parent.job = 2), "parent.job");
	BAD(c.upstream_index = 4, "upstream_index");
	BAD(c.upstream_index = -2, "upstream_index");
	BAD(c.contributors[3] = c.contributors[1], "same address");
#undef BAD
	assert_int_equal(ina_job_install(NULL, &c, NULL), -EINVAL);

	/* ids, table, slot space */
	c = tl_job(1, 4, INA_D_INT32, 40, 64);
	expect_install(&c, 0, NULL);
	expect_install(&c, -EEXIST, "installed");
	c = tl_job(2, 4, INA_D_INT32, 25, 64);
	expect_install(&c, -ENOSPC, "slots"); /* 40 + 25 > 64 */
	c.nslots = 24;
	expect_install(&c, 0, NULL);
	assert_int_equal(ina_job_slot_base(eng1, 2), 40);
	assert_int_equal(ina_job_remove(eng1, 1), 0);
	assert_int_equal(ina_job_remove(eng1, 1), -ENOENT);
	c = tl_job(3, 4, INA_D_INT32, 30, 64);
	expect_install(&c, 0, NULL);
	assert_int_equal(ina_job_slot_base(eng1, 3), 0); /* first fit reuses the hole */
	ina_job_remove(eng1, 2);
	ina_job_remove(eng1, 3);

	for (uint16_t id = 0; id < INA_MAX_JOBS; id++) {
		c = tl_job(id, 1, INA_D_INT32, 1, 8);
		c.contributors[0] = tl_addr(id);
		expect_install(&c, 0, NULL);
	}
	c = tl_job(INA_MAX_JOBS, 1, INA_D_INT32, 1, 8);
	expect_install(&c, -ENOSPC, "job table");
	for (uint16_t id = 0; id < INA_MAX_JOBS; id++)
		assert_int_equal(ina_job_remove(eng1, id), 0);
	assert_null(ina_engine_create(0, 8));
	assert_null(ina_engine_create(8, 0));
	assert_null(ina_engine_create(8, INA_MAX_ELEMS + 1));
}

/* Removing a job frees its slots: a re-installed job starts empty, and
 * packets for a removed job are unknown. */
static void test_remove_frees_state(void **state)
{
	(void)state;
	struct ina_job_cfg c = tl_job(4, 2, INA_D_INT32, 2, 8);
	uint32_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 4, 0, 0, 0, 0, 8);

	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);
	assert_int_equal(send_from(eng1, &c.contributors[0], &h, v), INA_OK);
	assert_int_equal(ina_job_slots_busy(eng1, 4), 1);
	assert_int_equal(ina_job_remove(eng1, 4), 0);
	assert_int_equal(send_from(eng1, &c.contributors[1], &h, v), INA_R_UNKNOWN_JOB);
	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);
	assert_int_equal(ina_job_slots_busy(eng1, 4), 0);
	/* the old partial is gone: contributor 0 is not a duplicate */
	assert_int_equal(send_from(eng1, &c.contributors[0], &h, v), INA_OK);
	h.contributor = 1;
	assert_int_equal(send_from(eng1, &c.contributors[1], &h, v), INA_OK);
	assert_int_equal(out.n, 2);
	for (unsigned e = 0; e < 8; e++)
		assert_int_equal(tl_elem(out.e[0].payload, e), 2 * v[e]);
	ina_job_remove(eng1, 4);
}

/* Every engine drop reason, each with its counter. */
static void test_engine_reasons(void **state)
{
	(void)state;
	struct ina_job_cfg c = tl_job(6, 2, INA_D_INT32, 2, 8);
	struct ina_addr stranger = tl_addr(9999);
	uint32_t v[9] = { 0 };
	uint64_t drops_before[INA_R_MAX_];
	memcpy(drops_before, ina_engine_stats(eng1)->drops, sizeof(drops_before));
	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);

	struct {
		enum ina_reason want;
		struct ina_hdr h;
		const struct ina_addr *src;
	} cases[] = {
		{ INA_R_UNKNOWN_JOB, tl_hdr(INA_T_DATA, INA_D_INT32, 7, 0, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_DTYPE_MISMATCH, tl_hdr(INA_T_DATA, INA_D_FP32, 6, 0, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_COUNT_EXCEEDS_SLOT, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0, 0, 0, 9), &c.contributors[0] },
		{ INA_R_SLOT_OUT_OF_RANGE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 2, 0, 0, 8), &c.contributors[0] },
		{ INA_R_SLOT_OUT_OF_RANGE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0x7fffffff, 0, 0, 8), &c.contributors[0] },
		{ INA_R_BAD_CONTRIBUTOR, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 2, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_BAD_CONTRIBUTOR, tl_hdr(INA_T_DATA, INA_D_INT32, 6, INA_CONTRIB_UPSTREAM, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_NOT_MEMBER, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0, 0, 0, 8), &stranger },
		{ INA_R_NOT_MEMBER, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_UNEXPECTED_TYPE, tl_hdr(INA_T_ACK, INA_D_INT32, 6, 0, 0, 0, 0, 0), &c.contributors[0] },
		{ INA_R_UNEXPECTED_TYPE, tl_hdr(INA_T_NACK, INA_D_INT32, 6, 0, 0, 0, 0, 0), &c.contributors[0] },
		{ INA_R_UNEXPECTED_TYPE, tl_hdr(INA_T_RESULT, INA_D_INT32, 6, 0, 0, 0, 0, 8), &c.contributors[0] },
		{ INA_R_NOT_READY, tl_hdr(INA_T_PULL, INA_D_INT32, 6, 0, 0, 0, 5, 8), &c.contributors[0] },
		/* slot 0 set 0 gets slice 5 from contributor 0 */
		{ INA_OK, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0, 0, 5, 8), &c.contributors[0] },
		{ INA_R_DUPLICATE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, 0, 0, 5, 8), &c.contributors[0] },
		{ INA_R_STALE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 4, 8), &c.contributors[1] },
		{ INA_R_STALE, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0xffffffff, 9, 8), &c.contributors[1] },
		{ INA_R_SLOT_BUSY, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 6, 8), &c.contributors[1] },
		{ INA_R_COUNT_MISMATCH, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 5, 7), &c.contributors[1] },
		{ INA_R_NOT_READY, tl_hdr(INA_T_PULL, INA_D_INT32, 6, 1, 0, 0, 5, 8), &c.contributors[1] },
		/* contributor 0 may not use set 1 while its set-0 part is pending */
		{ INA_R_SLOT_BUSY, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 0, INA_SLOT_SET_BIT, 0, 7, 8), &c.contributors[0] },
		{ INA_OK, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 5, 8), &c.contributors[1] },
		/* complete: pull works, a newer slice waits until both moved on */
		{ INA_OK, tl_hdr(INA_T_PULL, INA_D_INT32, 6, 1, 0, 0, 5, 0), &c.contributors[1] },
		{ INA_R_SLOT_BUSY, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 7, 8), &c.contributors[1] },
		{ INA_R_COUNT_MISMATCH, tl_hdr(INA_T_DATA, INA_D_INT32, 6, 1, 0, 0, 5, 3), &c.contributors[1] },
		{ INA_R_STALE, tl_hdr(INA_T_PULL, INA_D_INT32, 6, 1, 0, 0, 3, 0), &c.contributors[1] },
	};
	uint64_t want_drops[INA_R_MAX_] = { 0 };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum ina_reason r = send_from(eng1, cases[i].src, &cases[i].h, v);
		if (r != cases[i].want)
			fail_msg("case %zu: got %s want %s", i, ina_reason_name(r),
				 ina_reason_name(cases[i].want));
		if (r != INA_OK)
			assert_int_equal(out.n, 0);
		want_drops[r]++;
	}
	const struct ina_job_stats *st = ina_job_stats(eng1, 6);
	for (int r = INA_R_UNKNOWN_JOB; r < INA_R_MAX_; r++) {
		assert_int_equal(ina_engine_stats(eng1)->drops[r] - drops_before[r], want_drops[r]);
		if (r != INA_R_UNKNOWN_JOB)
			assert_int_equal(st->drops[r], want_drops[r]);
		if (want_drops[r] == 0)
			fail_msg("no case for engine reason %s", ina_reason_name(r));
	}
	assert_int_equal(st->contributions, 2);
	ina_job_remove(eng1, 6);
}

static void test_int32_overflow(void **state)
{
	(void)state;
	struct ina_job_cfg c = tl_job(8, 2, INA_D_INT32, 1, 2);
	uint32_t a[2] = { INT32_MAX, (uint32_t)INT32_MIN }, b[2] = { 1, (uint32_t)-1 };
	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);

	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 8, 0, 0, 0, 0, 2);
	send_from(eng1, &c.contributors[0], &h, a);
	h.contributor = 1;
	send_from(eng1, &c.contributors[1], &h, b);
	assert_int_equal(out.n, 2);
	assert_int_equal(tl_elem(out.e[0].payload, 0), (uint32_t)INT32_MIN); /* wrapped */
	assert_int_equal(tl_elem(out.e[0].payload, 1), (uint32_t)INT32_MAX);
	assert_true(out.e[0].hdr.flags & INA_F_OVERFLOW);
	assert_int_equal(ina_job_stats(eng1, 8)->overflows, 1);

	/* the next slice of the other set: no overflow, no flag */
	uint32_t small[2] = { 5, (uint32_t)-7 };
	h = tl_hdr(INA_T_DATA, INA_D_INT32, 8, 0, INA_SLOT_SET_BIT, 0, 1, 2);
	send_from(eng1, &c.contributors[0], &h, small);
	h.contributor = 1;
	send_from(eng1, &c.contributors[1], &h, small);
	assert_int_equal(tl_elem(out.e[0].payload, 0), 10);
	assert_int_equal((int32_t)tl_elem(out.e[0].payload, 1), -14);
	assert_false(out.e[0].hdr.flags & INA_F_OVERFLOW);
	ina_job_remove(eng1, 8);
}

/* Ring shape: the upstream member is a contributor addressed by the
 * reserved id; the aggregate goes downstream, results to the rack only. */
static void test_forward_and_upstream(void **state)
{
	(void)state;
	struct ina_job_cfg c = tl_job(10, 3, INA_D_INT32, 1, 4);
	c.upstream_index = 2;
	c.outputs = INA_OUT_MULTICAST | INA_OUT_FORWARD;
	c.forward = (struct ina_peer){ .addr = tl_addr(500), .job = 77, .contributor = INA_CONTRIB_UPSTREAM };
	assert_int_equal(ina_job_install(eng1, &c, NULL), 0);
	uint32_t v[4] = { 1, 2, 3, 4 };

	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 10, INA_CONTRIB_UPSTREAM, 0, 3, 0, 4);
	assert_int_equal(send_from(eng1, &c.contributors[2], &h, v), INA_OK);
	h.contributor = 0;
	assert_int_equal(send_from(eng1, &c.contributors[0], &h, v), INA_OK);
	h.contributor = 1;
	assert_int_equal(send_from(eng1, &c.contributors[1], &h, v), INA_OK);
	assert_int_equal(out.n, 3); /* results to 0 and 1, data downstream */
	assert_int_equal(out.e[0].hdr.type, INA_T_RESULT);
	assert_int_equal(out.e[1].hdr.type, INA_T_RESULT);
	assert_int_equal(out.e[1].hdr.contributor, 1);
	assert_int_equal(out.e[2].hdr.type, INA_T_DATA);
	assert_int_equal(out.e[2].hdr.job, 77);
	assert_int_equal(out.e[2].hdr.contributor, INA_CONTRIB_UPSTREAM);
	assert_int_equal(out.e[2].dst.ip, tl_addr(500).ip);
	assert_int_equal(out.e[2].hdr.epoch, 3);
	for (unsigned e = 0; e < 4; e++)
		assert_int_equal(tl_elem(out.e[2].payload, e), 3 * v[e]);

	/* the upstream's re-send is answered downstream only */
	h.contributor = INA_CONTRIB_UPSTREAM;
	assert_int_equal(send_from(eng1, &c.contributors[2], &h, v), INA_OK);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.e[0].hdr.type, INA_T_DATA);
	assert_true(out.e[0].hdr.flags & INA_F_RETX);
	ina_job_remove(eng1, 10);
}

static void deliver(struct ina_engine *to, const struct ina_emit *e, const struct ina_addr *from,
		    struct ina_emits *o)
{
	ina_hdr_encode(&e->hdr, pktbuf);
	memcpy(pktbuf + INA_HDR_LEN, e->payload, e->payload_len);
	assert_int_equal(ina_engine_rx(to, pktbuf, INA_HDR_LEN + e->payload_len, from, o), INA_OK);
}

/* Two ToRs aggregate their racks and hand the partials to a software PS
 * built from the same engine; the PS result comes back and is multicast.
 * A lost partial is re-sent when a worker re-sends. */
static void test_ps_hierarchy(void **state)
{
	(void)state;
	static struct ina_emits o2, o3;
	struct ina_engine *tor[2] = { ina_engine_create(2, 8), ina_engine_create(2, 8) };
	struct ina_engine *ps = ina_engine_create(2, 8);
	struct ina_addr tor_addr[2] = { tl_addr(700), tl_addr(701) }, ps_addr = tl_addr(800);
	struct ina_job_cfg rack[2], top = tl_job(12, 2, INA_D_INT32, 2, 8);
	top.contributors[0] = tor_addr[0];
	top.contributors[1] = tor_addr[1];
	assert_int_equal(ina_job_install(ps, &top, NULL), 0);
	for (int r = 0; r < 2; r++) {
		rack[r] = tl_job(12, 2, INA_D_INT32, 2, 8);
		rack[r].contributors[0] = tl_addr(10 + 2 * r);
		rack[r].contributors[1] = tl_addr(11 + 2 * r);
		rack[r].outputs = INA_OUT_PS;
		rack[r].parent = (struct ina_peer){ .addr = ps_addr, .job = 12, .contributor = (uint16_t)r };
		assert_int_equal(ina_job_install(tor[r], &rack[r], NULL), 0);
	}
	uint32_t v[4][8];
	for (int w = 0; w < 4; w++)
		for (int e = 0; e < 8; e++)
			v[w][e] = (uint32_t)(w * 10 + e);

	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 0, 1, 0, 0, 8);
	/* rack 0 completes; its partial to the PS is "lost" */
	send_from(tor[0], &rack[0].contributors[0], &h, v[0]);
	h.contributor = 1;
	send_from(tor[0], &rack[0].contributors[1], &h, v[1]);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.e[0].dst.ip, ps_addr.ip);
	assert_int_equal(ina_job_slots_busy(tor[0], 12), 1); /* waiting for the parent */
	/* worker 1 times out and re-sends: the ToR re-sends the partial */
	h.flags = INA_F_RETX;
	assert_int_equal(send_from(tor[0], &rack[0].contributors[1], &h, v[1]), INA_OK);
	assert_int_equal(out.n, 1);
	assert_true(out.e[0].hdr.flags & INA_F_RETX);
	deliver(ps, &out.e[0], &tor_addr[0], &o2);
	assert_int_equal(o2.n, 0);
	/* rack 1 completes, its partial reaches the PS, which multicasts */
	h.flags = 0;
	h.contributor = 0;
	send_from(tor[1], &rack[1].contributors[0], &h, v[2]);
	h.contributor = 1;
	send_from(tor[1], &rack[1].contributors[1], &h, v[3]);
	deliver(ps, &out.e[0], &tor_addr[1], &o2);
	assert_int_equal(o2.n, 2);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(o2.e[r].dst.ip, tor_addr[r].ip);
		struct ina_addr stranger = tl_addr(900);
		ina_hdr_encode(&o2.e[r].hdr, pktbuf);
		memcpy(pktbuf + INA_HDR_LEN, o2.e[r].payload, o2.e[r].payload_len);
		assert_int_equal(ina_engine_rx(tor[r], pktbuf, INA_HDR_LEN + 32, &stranger, &o3),
				 INA_R_NOT_MEMBER);
		deliver(tor[r], &o2.e[r], &ps_addr, &o3);
		assert_int_equal(o3.n, 2);
		for (int w = 0; w < 2; w++) {
			assert_int_equal(o3.e[w].hdr.type, INA_T_RESULT);
			assert_int_equal(o3.e[w].dst.ip, rack[r].contributors[w].ip);
			for (int e = 0; e < 8; e++)
				assert_int_equal(tl_elem(o3.e[w].payload, e),
						 v[0][e] + v[1][e] + v[2][e] + v[3][e]);
		}
		/* the same result again is a duplicate */
		ina_hdr_encode(&o2.e[r].hdr, pktbuf);
		memcpy(pktbuf + INA_HDR_LEN, o2.e[r].payload, o2.e[r].payload_len);
		assert_int_equal(ina_engine_rx(tor[r], pktbuf, INA_HDR_LEN + 32, &ps_addr, &o3),
				 INA_R_DUPLICATE);
		/* worker 1's copy of the result was lost: its re-send is answered
		 * from the ToR's stored result, to it alone */
		struct ina_hdr rh = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 1, 1, 0, 0, 8);
		rh.flags = INA_F_RETX;
		assert_int_equal(send_from(tor[r], &rack[r].contributors[1], &rh, v[2 * r + 1]), INA_OK);
		assert_int_equal(out.n, 1);
		assert_int_equal(out.e[0].hdr.type, INA_T_RESULT);
		assert_int_equal(out.e[0].dst.ip, rack[r].contributors[1].ip);
		for (int e = 0; e < 8; e++)
			assert_int_equal(tl_elem(out.e[0].payload, e), v[0][e] + v[1][e] + v[2][e] + v[3][e]);
	}
	ina_engine_destroy(tor[0]);
	ina_engine_destroy(tor[1]);
	ina_engine_destroy(ps);
}

static enum ina_reason send_join(struct ina_engine *eng, const struct ina_addr *src, struct ina_hdr h)
{
	h.flags |= INA_F_JOIN;
	size_t len = tl_encode(pktbuf, &h, NULL, h.count);
	return ina_engine_rx(eng, pktbuf, len, src, &out);
}

static unsigned count_emits(uint8_t type, const struct ina_addr *dst)
{
	unsigned n = 0;
	for (unsigned i = 0; i < out.n; i++)
		n += out.e[i].hdr.type == type && out.e[i].dst.ip == dst->ip && out.e[i].dst.port == dst->port;
	return n;
}

/* Agent-ring hop semantics (INA_OUT_ACK): a reduce step forwards when its
 * rack and the upstream have contributed and ACKs the upstream; it is
 * finished for its workers only when the downstream ACKs, which it passes
 * on; re-sends are answered by what is missing.  A gather step takes the
 * workers' joins (no elements) and the upstream's data. */
static void test_ring_ack(void **state)
{
	(void)state;
	struct ina_engine *e = ina_engine_create(8, 8);
	struct ina_addr w0 = tl_addr(1), w1 = tl_addr(2), up = tl_addr(50), down = tl_addr(60), stranger = tl_addr(99);
	struct ina_job_cfg red = tl_job(20, 3, INA_D_INT32, 2, 8);
	red.contributors[0] = w0;
	red.contributors[1] = w1;
	red.contributors[2] = up;
	red.upstream_index = 2;
	red.upstream_job = 9;
	red.outputs = INA_OUT_FORWARD | INA_OUT_ACK;
	red.forward = (struct ina_peer){ .addr = down, .job = 31, .contributor = INA_CONTRIB_UPSTREAM };
	assert_int_equal(ina_job_install(e, &red, NULL), 0);
	uint32_t a[8], b[8], u[8];
	for (int i = 0; i < 8; i++) {
		a[i] = (uint32_t)i;
		b[i] = (uint32_t)(100 * i);
		u[i] = (uint32_t)(7 + i);
	}
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 20, 0, 1, 5, 3, 8);
	assert_int_equal(send_from(e, &w0, &h, a), INA_OK);
	h.contributor = INA_CONTRIB_UPSTREAM;
	assert_int_equal(send_from(e, &up, &h, u), INA_OK);
	assert_int_equal(out.n, 0);
	h.contributor = 1;
	assert_int_equal(send_from(e, &w1, &h, b), INA_OK);
	/* complete: the sum goes downstream, the upstream is acknowledged */
	assert_int_equal(out.n, 2);
	assert_int_equal(count_emits(INA_T_DATA, &down), 1);
	assert_int_equal(count_emits(INA_T_ACK, &up), 1);
	for (unsigned i = 0; i < out.n; i++) {
		const struct ina_emit *x = &out.e[i];
		if (x->hdr.type == INA_T_DATA) {
			assert_int_equal(x->hdr.job, 31);
			assert_int_equal(x->hdr.contributor, INA_CONTRIB_UPSTREAM);
			for (int k = 0; k < 8; k++)
				assert_int_equal(tl_elem(x->payload, k), a[k] + b[k] + u[k]);
		} else {
			assert_int_equal(x->hdr.job, 9);
			assert_int_equal(x->payload_len, 0);
			assert_int_equal(x->hdr.seq, 3);
		}
	}
	/* before the downstream's ACK, a worker's re-send re-forwards; the
	 * other worker's re-send of the same round does not send it again */
	h.contributor = 0;
	h.flags = INA_F_RETX;
	assert_int_equal(send_from(e, &w0, &h, a), INA_OK);
	assert_int_equal(out.n, 1);
	assert_int_equal(count_emits(INA_T_DATA, &down), 1);
	h.contributor = 1;
	assert_int_equal(send_from(e, &w1, &h, b), INA_OK);
	assert_int_equal(out.n, 0);
	h.contributor = 0;
	assert_int_equal(send_from(e, &w0, &h, a), INA_OK);
	assert_int_equal(count_emits(INA_T_DATA, &down), 1);
	/* the ACK must come from the downstream and name the slice */
	struct ina_hdr ack = tl_hdr(INA_T_ACK, INA_D_INT32, 20, 0, 1, 5, 3, 8);
	size_t len = tl_encode(pktbuf, &ack, NULL, 8);
	assert_int_equal(ina_engine_rx(e, pktbuf, len, &stranger, &out), INA_R_NOT_MEMBER);
	ack.seq = 4;
	len = tl_encode(pktbuf, &ack, NULL, 8);
	assert_int_equal(ina_engine_rx(e, pktbuf, len, &down, &out), INA_R_NOT_READY);
	ack.seq = 3;
	len = tl_encode(pktbuf, &ack, NULL, 8);
	assert_int_equal(ina_engine_rx(e, pktbuf, len, &down, &out), INA_OK);
	assert_int_equal(out.n, 2); /* passed to both workers, not the upstream */
	assert_int_equal(count_emits(INA_T_ACK, &w0), 1);
	assert_int_equal(count_emits(INA_T_ACK, &w1), 1);
	assert_int_equal(ina_engine_rx(e, pktbuf, len, &down, &out), INA_R_DUPLICATE);
	/* after it: a worker's re-send gets the ACK, the upstream's gets ours */
	h.contributor = 1;
	assert_int_equal(send_from(e, &w1, &h, b), INA_OK);
	assert_int_equal(out.n, 1);
	assert_int_equal(count_emits(INA_T_ACK, &w1), 1);
	h.contributor = INA_CONTRIB_UPSTREAM;
	assert_int_equal(send_from(e, &up, &h, u), INA_OK);
	assert_int_equal(out.n, 1);
	assert_int_equal(count_emits(INA_T_ACK, &up), 1);

	/* a terminal gather step: joins from the workers, data from the
	 * upstream, in both orders (a join last must still leave a result in
	 * wire order) */
	struct ina_job_cfg gat = red;
	gat.id = 21;
	gat.outputs = INA_OUT_MULTICAST | INA_OUT_ACK;
	assert_int_equal(ina_job_install(e, &gat, NULL), 0);
	for (int order = 0; order < 2; order++) {
		struct ina_hdr g = tl_hdr(INA_T_DATA, INA_D_INT32, 21, 0, (uint32_t)order, 5, (uint32_t)order, 8);
		if (order == 1) {
			g.contributor = INA_CONTRIB_UPSTREAM;
			assert_int_equal(send_from(e, &up, &g, u), INA_OK);
		}
		g.contributor = 0;
		assert_int_equal(send_join(e, &w0, g), INA_OK);
		g.contributor = 1;
		assert_int_equal(send_join(e, &w1, g), INA_OK);
		if (order == 0) {
			assert_int_equal(out.n, 0);
			g.contributor = INA_CONTRIB_UPSTREAM;
			assert_int_equal(send_from(e, &up, &g, u), INA_OK);
		}
		assert_int_equal(count_emits(INA_T_RESULT, &w0), 1);
		assert_int_equal(count_emits(INA_T_RESULT, &w1), 1);
		assert_int_equal(count_emits(INA_T_ACK, &up), 1);
		for (unsigned i = 0; i < out.n; i++)
			if (out.e[i].hdr.type == INA_T_RESULT)
				for (int k = 0; k < 8; k++)
					assert_int_equal(tl_elem(out.e[i].payload, k), u[k]);
	}
	assert_int_equal(ina_job_stats(e, 21)->completions, 2);
	ina_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_random),
		cmocka_unit_test(test_bfp_path),
		cmocka_unit_test(test_bf16),
		cmocka_unit_test(test_permutations_duplicates),
		cmocka_unit_test(test_shadow_sets_lossless),
		cmocka_unit_test(test_shadow_sets_lossy),
		cmocka_unit_test(test_job_isolation),
		cmocka_unit_test(test_install_checks),
		cmocka_unit_test(test_remove_frees_state),
		cmocka_unit_test(test_engine_reasons),
		cmocka_unit_test(test_int32_overflow),
		cmocka_unit_test(test_forward_and_upstream),
		cmocka_unit_test(test_ps_hierarchy),
		cmocka_unit_test(test_ring_ack),
	};
	return cmocka_run_group_tests_name("engine", tests, setup_eng, teardown_eng);
}
