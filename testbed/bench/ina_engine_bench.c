/* SPDX-License-Identifier: BSD-3-Clause */
/* ina-engine-bench: packets/s and gradient Gbit/s through the aggregation
 * engine on one core, beside the ceiling measured in the same run: the
 * bare byte-order conversion + add of the same packets into the same slot
 * memory, vectorised and (to show what vectorisation buys) scalar. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "ina_engine.h"
#include "ina_kernels.h"

struct bench_cfg {
	double seconds; /* per figure, split over PIECES alternating pieces */
};

/* Engine, ceiling and scalar ceiling are measured in turns, PIECES times
 * each, and the median of each is reported: drift of a shared machine then
 * hits all three alike instead of biasing their ratio. */
#define PIECES 5

struct run {
	unsigned elems, fan_in;
	uint8_t dtype;
	size_t pool_bytes;
	/* derived */
	uint32_t nslots;
	uint8_t **pkts; /* one per contributor; header patched per send */
	size_t pkt_len;
	struct ina_addr *addrs;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
}

/* binary32 bits for fp32 and bf16 (whose values are exact in bf16) */
static uint32_t elem_value(const struct run *r, unsigned c, unsigned e)
{
	if (r->dtype == INA_D_FP32 || r->dtype == INA_D_BF16) {
		float f = (float)((c + e) % 64) * 0.25f;
		uint32_t v;
		memcpy(&v, &f, 4);
		return v;
	}
	return (c * 7 + e) % 1000;
}

static void build_packets(struct run *r)
{
	size_t esz = ina_wire_elem_size(r->dtype);
	r->pkt_len = INA_HDR_LEN + (size_t)r->elems * esz;
	r->pkts = calloc(r->fan_in, sizeof(*r->pkts));
	r->addrs = calloc(r->fan_in, sizeof(*r->addrs));
	for (unsigned c = 0; c < r->fan_in; c++) {
		/* +2: the payload sits 2 bytes off a 4-byte boundary, as it
		 * does behind Ethernet/IPv4/UDP headers in a real frame */
		r->pkts[c] = (uint8_t *)aligned_alloc(64, r->pkt_len + 64) + 2;
		struct ina_hdr h = { .version = INA_VERSION,
				     .type = INA_T_DATA,
				     .dtype = r->dtype,
				     .job = 1,
				     .contributor = (uint16_t)c,
				     .count = (uint16_t)r->elems };
		ina_hdr_encode(&h, r->pkts[c]);
		for (unsigned e = 0; e < r->elems; e++) {
			uint8_t w[4];
			put32(w, elem_value(r, c, e));
			memcpy(r->pkts[c] + INA_HDR_LEN + esz * e, w, esz); /* bf16: the high half */
		}
		r->addrs[c] = (struct ina_addr){ .ip = 0x0a000001u + c, .port = 0xE0BE };
	}
}

static void free_packets(struct run *r)
{
	for (unsigned c = 0; c < r->fan_in; c++)
		free(r->pkts[c] - 2);
	free(r->pkts);
	free(r->addrs);
}

/* Slot and slice fields of the header, patched in place per packet. */
static void patch(uint8_t *pkt, uint32_t slot, uint32_t seq)
{
	put32(pkt + 8, slot);
	put32(pkt + 16, seq);
}

struct result {
	double pps, gbps;
	bool ok;
};

/* The engine under test, kept across the interleaved measurements. */
struct engine_run {
	struct ina_engine *eng;
	uint32_t round;
	uint64_t results;
	struct ina_emits out;
};

static void engine_setup(struct engine_run *er, const struct run *r)
{
	struct ina_job_cfg job;
	memset(&job, 0, sizeof(job));
	job.id = 1;
	job.fan_in = (uint16_t)r->fan_in;
	job.dtype = r->dtype;
	job.nslots = r->nslots;
	job.elems_per_slot = (uint16_t)r->elems;
	job.outputs = INA_OUT_MULTICAST;
	job.upstream_index = -1;
	memcpy(job.contributors, r->addrs, r->fan_in * sizeof(*r->addrs));
	er->eng = ina_engine_create(r->nslots, (uint16_t)r->elems);
	er->round = 0;
	er->results = 0;
	if (!er->eng || ina_job_install(er->eng, &job, NULL) != 0) {
		fprintf(stderr, "ina-engine-bench: cannot set up an engine of %u slots\n", r->nslots);
		exit(1);
	}
}

/* Every round sweeps the whole slot pool (set alternating per round), the
 * contributions of a slot arriving together, as from synchronised workers. */
static struct result run_engine(struct engine_run *er, struct run *r, double seconds)
{
	uint64_t packets = 0;
	double t0 = now(), t;
	do {
		uint32_t set = er->round & 1 ? INA_SLOT_SET_BIT : 0;
		for (uint32_t i = 0; i < r->nslots; i++) {
			for (unsigned c = 0; c < r->fan_in; c++) {
				patch(r->pkts[c], i | set, er->round * r->nslots + i);
				ina_engine_rx(er->eng, r->pkts[c], r->pkt_len, &r->addrs[c], &er->out);
			}
			er->results += er->out.n;
		}
		packets += (uint64_t)r->nslots * r->fan_in;
		er->round++;
		t = now() - t0;
	} while (t < seconds);
	return (struct result){ packets / t, packets * r->elems * 8.0 * ina_wire_elem_size(r->dtype) / t / 1e9, true };
}

/* Every slot completed once per round, and the last slot's result is the
 * expected sum. */
static bool engine_check(const struct engine_run *er, const struct run *r)
{
	const struct ina_emits *out = &er->out;
	bool ok = out->n == r->fan_in && er->results == (uint64_t)er->round * r->nslots * r->fan_in;
	for (unsigned e = 0; ok && e < r->elems; e++) {
		double want = 0, got;
		uint32_t w = 0;
		if (r->dtype == INA_D_BF16) {
			const uint8_t *b = out->e[0].payload + 2 * e;
			w = (uint32_t)(b[0] << 8 | b[1]) << 16;
		} else {
			memcpy(&w, out->e[0].payload + 4 * e, 4);
			w = __builtin_bswap32(w);
		}
		for (unsigned c = 0; c < r->fan_in; c++) {
			uint32_t v = elem_value(r, c, e);
			float f;
			memcpy(&f, &v, 4);
			want += r->dtype == INA_D_INT32 ? (double)v : f;
		}
		if (r->dtype == INA_D_BF16) { /* the exact sum, rounded once */
			float fw = (float)want;
			uint32_t u;
			memcpy(&u, &fw, 4);
			u = (uint32_t)ina_f32_to_bf16(u) << 16;
			memcpy(&fw, &u, 4);
			want = fw;
		}
		float gf;
		memcpy(&gf, &w, 4);
		got = r->dtype == INA_D_INT32 ? (double)w : gf;
		ok = got == want;
	}
	return ok;
}

typedef uint32_t u32_any __attribute__((aligned(1), may_alias));
typedef uint16_t u16_any __attribute__((aligned(1), may_alias));

/* The ceiling: dst += host(src) over the same packets and the same amount
 * of slot memory, in the same order; no header, no state, no checks. */
#define CEILING_BODY                                                                                   \
	uint64_t packets = 0;                                                                          \
	double t0 = now(), t;                                                                          \
	uint32_t round = 0;                                                                            \
	do {                                                                                           \
		uint32_t *set = slots + (size_t)(round & 1) * r->nslots * stride;                      \
		for (uint32_t i = 0; i < r->nslots; i++) {                                             \
			uint32_t *restrict d = __builtin_assume_aligned(set + (size_t)i * stride, 64); \
			for (unsigned c = 0; c < r->fan_in; c++) {                                     \
				const u32_any *s = (const u32_any *)(r->pkts[c] + INA_HDR_LEN);        \
				ADD_LOOP                                                               \
			}                                                                              \
		}                                                                                      \
		packets += (uint64_t)r->nslots * r->fan_in;                                            \
		round++;                                                                               \
		t = now() - t0;                                                                        \
	} while (t < seconds);                                                                         \
	return (struct result){ packets / t, packets * r->elems * 8.0 * ina_wire_elem_size(r->dtype) / t / 1e9, true };

#define ADD_I32                                 \
	for (unsigned e = 0; e < r->elems; e++) \
		d[e] += __builtin_bswap32(s[e]);
#define ADD_F32                                       \
	for (unsigned e = 0; e < r->elems; e++) {     \
		float a, b;                           \
		uint32_t v = __builtin_bswap32(s[e]); \
		memcpy(&a, &d[e], 4);                 \
		memcpy(&b, &v, 4);                    \
		a += b;                               \
		memcpy(&d[e], &a, 4);                 \
	}

#define ADD_BF16                                                                         \
	for (unsigned e = 0; e < r->elems; e++) {                                        \
		float a, b;                                                              \
		uint32_t v = (uint32_t)__builtin_bswap16(((const u16_any *)s)[e]) << 16; \
		memcpy(&a, &d[e], 4);                                                    \
		memcpy(&b, &v, 4);                                                       \
		a += b;                                                                  \
		memcpy(&d[e], &a, 4);                                                    \
	}

#define ADD_INLINE                           \
	if (r->dtype == INA_D_FP32) {        \
		ADD_F32                      \
	} else if (r->dtype == INA_D_BF16) { \
		ADD_BF16                     \
	} else {                             \
		ADD_I32                      \
	}

/* Vectorised, the ceiling is the engine's own kernels (nic/ina_kernels.c):
 * the loop the CPU's level picked at load, as in the engine */
static struct result ceiling_vec(const struct run *r, uint32_t *slots, size_t stride, double seconds)
{
#undef ADD_LOOP
#define ADD_LOOP                                                 \
	if (r->dtype == INA_D_FP32)                              \
		ina_k_add_f32(d, (const uint8_t *)s, r->elems);  \
	else if (r->dtype == INA_D_BF16)                         \
		ina_k_add_bf16(d, (const uint8_t *)s, r->elems); \
	else                                                     \
		(void)ina_k_add_i32(d, (const uint8_t *)s, r->elems);
	CEILING_BODY
}

__attribute__((optimize("no-tree-vectorize", "no-tree-slp-vectorize"))) static struct result ceiling_scalar(
	const struct run *r, uint32_t *slots, size_t stride, double seconds)
{
#undef ADD_LOOP
#define ADD_LOOP ADD_INLINE
	CEILING_BODY
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ina-engine-bench [-s SECONDS] [-e ELEMS,...] [-n FANIN,...] [--quick]\n"
		   "  Aggregation engine throughput on one core beside the bare add ceiling.\n"
		   "  -s, --seconds S   time per table row, all three figures (default 1.5)\n"
		   "  -e, --elems LIST  elements per packet (default 64,256,1024,2048)\n"
		   "  -n, --fanin LIST  contributors per slot (default 4,32)\n"
		   "  -p, --pools LIST  slot pool sizes in KiB (default 256,65536)\n"
		   "  -q, --quick       0.15 s per table row\n"
		   "  -h, --help        this text\n");
}

static int parse_list(const char *s, unsigned *v, int max, unsigned lo, unsigned hi)
{
	int n = 0;
	char *end;
	while (*s && n < max) {
		errno = 0;
		unsigned long x = strtoul(s, &end, 10);
		if (errno || end == s || x < lo || x > hi)
			return -1;
		v[n++] = (unsigned)x;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

int main(int argc, char **argv)
{
	struct bench_cfg bc = { .seconds = 1.5 };
	unsigned elems[8] = { 64, 256, 1024, 2048 }, fanins[8] = { 4, 32 }, pools[4] = { 256, 65536 };
	int nelems = 4, nfanins = 2, npools = 2;
	static const struct option opts[] = { { "seconds", required_argument, 0, 's' },
					      { "elems", required_argument, 0, 'e' },
					      { "fanin", required_argument, 0, 'n' },
					      { "pools", required_argument, 0, 'p' },
					      { "quick", no_argument, 0, 'q' },
					      { "help", no_argument, 0, 'h' },
					      { 0, 0, 0, 0 } };
	int o;
	while ((o = getopt_long(argc, argv, "s:e:n:p:qh", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			bc.seconds = strtod(optarg, NULL);
			if (bc.seconds <= 0 || bc.seconds > 60) {
				fprintf(stderr, "ina-engine-bench: -s wants 0 < seconds <= 60\n");
				return 2;
			}
			break;
		case 'e':
			if ((nelems = parse_list(optarg, elems, 8, 1, INA_MAX_ELEMS)) <= 0) {
				fprintf(stderr, "ina-engine-bench: -e wants a list of 1..%d\n", INA_MAX_ELEMS);
				return 2;
			}
			break;
		case 'n':
			if ((nfanins = parse_list(optarg, fanins, 8, 1, INA_MAX_FANIN)) <= 0) {
				fprintf(stderr, "ina-engine-bench: -n wants a list of 1..%d\n", INA_MAX_FANIN);
				return 2;
			}
			break;
		case 'p':
			if ((npools = parse_list(optarg, pools, 4, 16, 1u << 22)) <= 0) {
				fprintf(stderr, "ina-engine-bench: -p wants a list of 16..4194304 KiB\n");
				return 2;
			}
			break;
		case 'q': bc.seconds = 0.15; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}

	printf("# ina-engine-bench: one core, %.2f s per row, medians of %d alternating pieces\n", bc.seconds, PIECES);
	printf("# Gbit/s = gradient bytes added; eng/ceil = median of per-piece ratios\n");
	printf("# ceiling = the bare add kernels on the same packets and slot memory; scal = a scalar loop\n");
	printf("# %6s %5s %5s %8s | %9s %9s | %9s %9s | %7s %5s\n", "elems", "dtype", "fanin", "pool", "eng_Mpps",
	       "eng_Gbps", "ceil_Gbps", "scal_Gbps", "eng/ceil", "check");
	bool all_ok = true;
	for (int p = 0; p < npools; p++)
		for (int d = 0; d < 3; d++)
			for (int f = 0; f < nfanins; f++)
				for (int e = 0; e < nelems; e++) {
					struct run r = { .elems = elems[e],
							 .fan_in = fanins[f],
							 .dtype = d == 2 ? INA_D_BF16
								  : d	 ? INA_D_FP32
									 : INA_D_INT32,
							 .pool_bytes = (size_t)pools[p] << 10 };
					size_t stride = (r.elems + 15u) & ~15u;
					r.nslots = (uint32_t)(r.pool_bytes / (2 * stride * 4));
					if (r.nslots == 0)
						r.nslots = 1;
					build_packets(&r);
					static struct engine_run er;
					engine_setup(&er, &r);
					uint32_t *slots = aligned_alloc(64, (size_t)r.nslots * 2 * stride * 4);
					memset(slots, 0, (size_t)r.nslots * 2 * stride * 4);
					double piece = bc.seconds / 3 / PIECES;
					double epps[PIECES], egb[PIECES], vgb[PIECES], sgb[PIECES], ratio[PIECES];
					for (int k = 0; k < PIECES; k++) {
						struct result e1 = run_engine(&er, &r, piece);
						struct result v1 = ceiling_vec(&r, slots, stride, piece);
						struct result s1 = ceiling_scalar(&r, slots, stride, piece);
						epps[k] = e1.pps;
						egb[k] = e1.gbps;
						vgb[k] = v1.gbps;
						sgb[k] = s1.gbps;
						ratio[k] = e1.gbps / v1.gbps; /* neighbours in time */
					}
					bool ok = engine_check(&er, &r);
					ina_engine_destroy(er.eng);
					free(slots);
					free_packets(&r);
					all_ok &= ok;
					printf("  %6u %5s %5u %6zuKi | %9.2f %9.1f | %9.1f %9.1f | %7.2f %5s\n",
					       r.elems, ina_dtype_name(r.dtype), r.fan_in, r.pool_bytes >> 10,
					       bench_median(epps, PIECES) / 1e6, bench_median(egb, PIECES),
					       bench_median(vgb, PIECES), bench_median(sgb, PIECES),
					       bench_median(ratio, PIECES), ok ? "ok" : "WRONG");
					fflush(stdout);
				}
	return all_ok ? 0 : 1;
}
