/* SPDX-License-Identifier: BSD-3-Clause */
/* ina-allreduce-perf: all-reduce bandwidth in the form of nccl-tests.
 *   RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. ina-allreduce-perf -b 1M -e 64M -f 2
 * One line per size on rank 0:  size count type redop time algbw busbw #wrong
 * (time in us per call; algbw = size / time, busbw = algbw * 2(N-1)/N, in
 * GB/s of 1e9 bytes; #wrong summed over all ranks), then "# Avg bus bandwidth".
 *
 * With --compute (and optionally --jitter, --straggler, --seed) every timed
 * call becomes a training iteration: a simulated compute phase (a sleep:
 * the host's CPU is free, as while a GPU computes) then the all-reduce.
 * The injected noise depends only on the seed and the rank, so runs with
 * pacing on and off see the same noise.  Rank 0 then also prints its
 * iteration times (mean, p50, p99, coefficient of variation, iterations/s)
 * and, with the timing layer on (-P or --trace), the layer's summary. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "clock.h"
#include "hcl.h"
#include "hcl_noise.h"
#include "hcl_sync.h" /* hcl_sync_stats */
#include "parse.h"

static void sleep_ms(double ms)
{
	struct timespec ts = { (time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6) };
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ina-allreduce-perf [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-c CHECKS]\n"
		   "                          [-d int32|float|bf16] [-o sum|avg] [-a ring] [-t TIMEOUT_MS]\n"
		   "  Ranks come from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and HCL_DATA_ADDR).\n"
		   "  -b/-e  smallest/largest message in bytes (K, M, G suffixes; default 1M/64M)\n"
		   "  -f     multiply the size by this between lines (default 2)\n"
		   "  -n/-w  timed and warm-up calls per size (default 20/5)\n"
		   "  -c     check the results of this many more calls per size (default 1; 0: none)\n"
		   "  -d     data type (default float)   -o reduction (sum, or avg: sum / ranks)\n"
		   "  -a     algorithm: ring (default), hier (HCL_RACK), ps (server in rank 0, or HCL_PS_SHARDS),\n"
		   "         ps-ina (HCL_INA_SWITCH, HCL_INA_JOB, ...), agent-ring (the same)\n"
		   "  -t     deadline of each call in ms (default 30000)\n"
		   "  -P, --pace         pace early ranks (docs/PACING.md; also HCL_PACE=1)\n"
		   "  --trace DIR        per-rank JSON-lines timing trace DIR/rank<r>.jsonl (also HCL_TRACE)\n"
		   "  --compute MS       make each timed call an iteration: MS of simulated compute first\n"
		   "  --jitter SPEC      compute noise: normal:SD_MS, exp:MEAN_MS or hiccup:PROB:MS\n"
		   "  --straggler R:F    rank R computes F times as long (comma-separated list)\n"
		   "  --seed N           seed of the noise (default 1; rank is mixed in)\n");
}

struct perf {
	uint64_t minb, maxb;
	double factor;
	long long iters, warmup, check;
	enum hcl_dtype dt;
	enum hcl_op op;
	struct hcl_comm_cfg cfg;
	struct hcl_noise z;
	const char *straggler;
	unsigned long long seed;
	bool iterate; /* a timed call is an iteration: compute, then the call */
	int rank, n;
	double cpu_timed; /* CPU seconds of this rank in the timed calls */
};

/* One option into p: 0, or -1 when its value is not one. */
static int option(struct perf *p, int o, const char *v)
{
	long long x;
	enum { O_TRACE = 256, O_COMPUTE, O_JITTER, O_STRAGGLER, O_SEED };
	switch (o) {
	case 'P': p->cfg.pace = 1; return 0;
	case O_TRACE: p->cfg.trace_dir = v; return 0;
	case O_COMPUTE: p->iterate = true; return parse_double(v, 0, 1e6, &p->z.compute_ms);
	case O_JITTER: p->iterate = true; return hcl_noise_parse_jitter(v, &p->z);
	case O_STRAGGLER:
		p->iterate = true;
		p->straggler = v;
		return 0;
	case O_SEED: return parse_int(v, 0, INT64_MAX, &x) < 0 ? -1 : (p->seed = (unsigned long long)x, 0);
	case 'b': return parse_size(v, &p->minb);
	case 'e': return parse_size(v, &p->maxb);
	case 'f': return parse_double(v, 1.0001, 1e6, &p->factor);
	case 'n': return parse_int(v, 1, 1 << 30, &p->iters);
	case 'w': return parse_int(v, 0, 1 << 30, &p->warmup);
	case 'c': return parse_int(v, 0, 1000000, &p->check);
	case 't': return parse_int(v, 0, 86400000, &x) < 0 ? -1 : (p->cfg.timeout_ms = x, 0);
	case 'd':
		p->dt = !strcmp(v, "int32")			    ? HCL_INT32
			: !strcmp(v, "float") || !strcmp(v, "fp32") ? HCL_FP32
			: !strcmp(v, "bf16")			    ? HCL_BF16
								    : 0;
		return p->dt ? 0 : -1;
	case 'o': p->op = !strcmp(v, "sum") ? HCL_SUM : !strcmp(v, "avg") ? HCL_AVG : 0; return p->op ? 0 : -1;
	case 'a': return hcl_algo_from_name(v, &p->cfg.algo);
	default: return -1;
	}
}

/* 0, 1 after --help, -1 on a bad command line. */
static int parse_args(int argc, char **argv, struct perf *p)
{
	static const struct option longopts[] = { { "pace", no_argument, NULL, 'P' },
						  { "trace", required_argument, NULL, 256 },
						  { "compute", required_argument, NULL, 257 },
						  { "jitter", required_argument, NULL, 258 },
						  { "straggler", required_argument, NULL, 259 },
						  { "seed", required_argument, NULL, 260 },
						  { "help", no_argument, NULL, 'h' },
						  { 0 } };
	int o;
	while ((o = getopt_long(argc, argv, "b:e:f:n:w:c:d:o:a:t:Ph", longopts, NULL)) != -1) {
		if (o == 'h') {
			usage(stdout);
			return 1;
		}
		if (option(p, o, optarg) < 0) {
			if (o != '?')
				fprintf(stderr, "ina-allreduce-perf: bad value '%s'\n", optarg);
			return -1;
		}
	}
	double no_rank;
	return p->minb < 4 || p->maxb < p->minb || p->maxb > 1ull << 40 || optind < argc ||
			       (p->straggler &&
				hcl_noise_parse_stragglers(p->straggler, -1, 0, &no_rank)) /* before any rendezvous */
		       ? -1
		       : 0;
}

/* Rank r contributes r+1 (+ i % 7 for int32): the sums are exact.  Returns
 * the wrong elements summed over every rank, or a negative errno. */
static int check_call(struct perf *p, struct hcl_comm *c, uint32_t *buf, size_t count, int32_t *wrong)
{
	const int n = p->n;
	uint16_t *half = (uint16_t *)buf;
	float mine = (float)(p->rank + 1);
	uint32_t u;
	memcpy(&u, &mine, 4);
	for (size_t i = 0; i < count; i++) {
		if (p->dt == HCL_BF16) /* small integers: exact in bf16 */
			half[i] = (uint16_t)(u >> 16);
		else
			buf[i] = p->dt == HCL_FP32 ? u : (uint32_t)(p->rank + 1 + (int)(i % 7));
	}
	int rc = hcl_allreduce(buf, buf, count, p->dt, p->op, c);
	/* (n + 1) / 2 is exact in binary32 and in bf16 */
	float want_f = p->op == HCL_AVG ? (float)(n + 1) / 2 : (float)(n * (n + 1) / 2);
	*wrong = 0;
	for (size_t i = 0; rc == 0 && i < count; i++) {
		float f;
		uint32_t w = p->dt == HCL_BF16 ? (uint32_t)half[i] << 16 : buf[i];
		memcpy(&f, &w, 4);
		int32_t sum = n * (n + 1) / 2 + n * (int)(i % 7);
		*wrong += p->dt == HCL_INT32 ? buf[i] != (uint32_t)(p->op == HCL_AVG ? sum / n : sum) : f != want_f;
	}
	/* summed over ranks in the run's own type: a ps-ina job has one */
	if (rc == 0 && p->dt != HCL_INT32) {
		float fw = (float)*wrong;
		rc = hcl_allreduce(&fw, &fw, 1, HCL_FP32, HCL_SUM, c);
		*wrong = (int32_t)fw;
	} else if (rc == 0) {
		rc = hcl_allreduce(wrong, wrong, 1, HCL_INT32, HCL_SUM, c);
	}
	return rc;
}

/* User + system time of this rank so far, every thread. */
static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The timed calls of one size: the time per call in us, or a negative errno. */
static int time_calls(struct perf *p, struct hcl_comm *c, uint32_t *buf, size_t count, int64_t *iter_ns, double *us)
{
	const size_t esz = p->dt == HCL_BF16 ? 2 : 4;
	int rc = 0;
	memset(buf, 0, count * esz);
	for (long long k = 0; k < p->warmup && rc == 0; k++)
		rc = hcl_allreduce(buf, buf, count, p->dt, p->op, c);
	double cpu0 = cpu_seconds();
	int64_t t0 = clock_now_ns();
	for (long long k = 0; k < p->iters && rc == 0; k++) {
		int64_t ti = clock_now_ns();
		if (p->iterate) {
			hcl_iter_begin(c);
			sleep_ms(hcl_noise_compute_ms(&p->z));
		}
		rc = hcl_allreduce(buf, buf, count, p->dt, p->op, c);
		if (p->iterate)
			hcl_iter_end(c);
		iter_ns[k] = clock_now_ns() - ti;
	}
	*us = (double)(clock_now_ns() - t0) / 1e3 / (double)p->iters;
	p->cpu_timed += cpu_seconds() - cpu0;
	if (rc == 0 && p->iterate && p->rank == 0) {
		struct hcl_sync_stats st;
		hcl_sync_stats(iter_ns, (unsigned long)p->iters, &st);
		printf("# iterations %zu B: mean %.1f us  p50 %.1f  p99 %.1f  cv %.3f  %.2f it/s\n", count * esz,
		       st.mean_ns / 1e3, st.p50_ns / 1e3, st.p99_ns / 1e3, st.cv, 1e6 / *us);
	}
	return rc;
}

static void print_header(const struct perf *p)
{
	printf("# ina-allreduce-perf: %d ranks, algorithm %s, %lld iterations, %lld warm-up\n", p->n,
	       hcl_algo_name(p->cfg.algo ? p->cfg.algo : HCL_ALGO_RING), p->iters, p->warmup);
	printf("#%11s %12s %8s %6s %10s %8s %8s %7s\n", "size", "count", "type", "redop", "time", "algbw", "busbw",
	       "#wrong");
	printf("#%11s %12s %8s %6s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static void print_summary(struct hcl_comm *c)
{
	struct hcl_sync_summary m;
	if (hcl_comm_sync_summary(c, &m) == 0)
		printf("# timing layer (rank 0, all calls): %lu iterations, cv %.3f, compute %.1f%% delay %.1f%% "
		       "wait %.1f%% comm %.1f%%, paced %lu of %lu calls, mean spread %.1f us, layer's own cost "
		       "%.3f%%\n",
		       m.iterations, m.iter_cv, 100 * m.compute_share, 100 * m.delay_share, 100 * m.wait_share,
		       100 * m.comm_share, m.paced_calls, m.calls, m.spread_mean_us, 100 * m.layer_share);
}

/* Every size from -b to -e: one line each on rank 0. */
static int run(struct perf *p, struct hcl_comm *c, uint32_t *buf, int64_t *iter_ns)
{
	const size_t esz = p->dt == HCL_BF16 ? 2 : 4;
	double bus_sum = 0;
	int lines = 0, rc = 0;
	if (p->rank == 0)
		print_header(p);
	for (size_t bytes = p->minb;;
	     bytes = bytes * p->factor < (double)p->maxb ? (size_t)ceil(bytes * p->factor) : p->maxb) {
		size_t count = bytes / esz;
		double us;
		int32_t wrong = 0, w;
		if ((rc = time_calls(p, c, buf, count, iter_ns, &us)) < 0)
			return rc;
		for (long long k = 0; k < p->check; k++, wrong += w)
			if ((rc = check_call(p, c, buf, count, &w)) < 0)
				return rc;
		double algbw = (double)bytes / us / 1e3, busbw = algbw * 2 * (p->n - 1) / p->n;
		bus_sum += busbw;
		lines++;
		if (p->rank == 0) {
			printf(" %11zu %12zu %8s %6s %10.1f %8.3f %8.3f %7d\n", count * esz, count,
			       p->dt == HCL_FP32   ? "float"
			       : p->dt == HCL_BF16 ? "bf16"
						   : "int32",
			       p->op == HCL_AVG ? "avg" : "sum", us, algbw, busbw, wrong);
			fflush(stdout);
		}
		if (bytes >= p->maxb) /* the last line is -e itself */
			break;
	}
	/* what the timed calls cost, summed over the ranks */
	float cpu = (float)p->cpu_timed;
	if ((rc = hcl_allreduce(&cpu, &cpu, 1, HCL_FP32, HCL_SUM, c)) < 0)
		return rc;
	if (p->rank == 0) {
		printf("# Avg bus bandwidth    : %.3f\n", lines ? bus_sum / lines : 0);
		printf("# cpu seconds of all ranks in the timed calls: %.3f\n", cpu);
		print_summary(c);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct perf p = { .minb = 1 << 20,
			  .maxb = 64 << 20,
			  .factor = 2,
			  .iters = 20,
			  .warmup = 5,
			  .check = 1,
			  .dt = HCL_FP32,
			  .op = HCL_SUM,
			  .cfg = HCL_COMM_CFG_ENV,
			  .z = { .slow = 1 },
			  .seed = 1 };
	int rc = parse_args(argc, argv, &p);
	if (rc) {
		if (rc < 0)
			usage(stderr);
		return rc < 0 ? 2 : 0;
	}
	char err[320];
	struct hcl_comm *c;
	if (hcl_comm_create(&p.cfg, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "ina-allreduce-perf: %s\n", err);
		return 1;
	}
	p.rank = hcl_comm_rank(c);
	p.n = hcl_comm_world(c);
	if (p.straggler && hcl_noise_parse_stragglers(p.straggler, p.rank, p.n, &p.z.slow)) {
		fprintf(stderr, "ina-allreduce-perf: --straggler wants RANK:FACTOR[,RANK:FACTOR...], not '%s'\n",
			p.straggler);
		hcl_comm_destroy(c);
		return 2;
	}
	hcl_noise_seed(&p.z, p.seed, p.rank);
	int64_t *iter_ns = calloc((size_t)p.iters, sizeof(*iter_ns));
	uint32_t *buf = malloc(p.maxb / 4 * 4 + 4); /* 32-bit words: room for maxb bytes of any type */
	if (!buf || !iter_ns) {
		fprintf(stderr, "ina-allreduce-perf: out of memory\n");
		rc = -ENOMEM;
	} else if ((rc = run(&p, c, buf, iter_ns)) < 0) {
		fprintf(stderr, "ina-allreduce-perf rank %d: %s\n", p.rank, hcl_comm_error(c));
	}
	struct hcl_comm_stats st;
	if (rc == 0 && hcl_comm_stats(c, &st) == 0)
		printf("# host of rank %d: transfer %llu sent %llu re-sent %llu time-outs; INA client %llu sent %llu "
		       "re-sent "
		       "%llu answers %llu stale; software aggregator %llu packets %llu accepted %llu dropped\n",
		       p.rank, st.xfer_sent, st.xfer_resent, st.xfer_timeouts, st.ina_sent, st.ina_resent,
		       st.ina_results, st.ina_stale, st.agg_packets, st.agg_accepted, st.agg_dropped);
	if (rc == 0)
		printf("# transfer of rank %d: %llu sends, %llu coalesced runs received, %llu ACKs sent, %llu window "
		       "halvings, %llu waits for the host's queue, %llu WAITs from a peer\n",
		       p.rank, st.xfer_sends, st.xfer_rx_runs, st.xfer_acks, st.xfer_halved, st.xfer_local_waits,
		       st.xfer_peer_waits);
	if (rc == 0 && st.ina_fallback_calls)
		printf("# INA lost mid-job at rank %d: %llu calls finished on the software ring\n", p.rank,
		       st.ina_fallback_calls);
	free(buf);
	free(iter_ns);
	hcl_comm_destroy(c);
	return rc ? 1 : 0;
}
