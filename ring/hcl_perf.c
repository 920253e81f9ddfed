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
#include <time.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl.h"
#include "hcl_sync.h" /* hcl_sync_stats */
#include "hcl_xfer.h" /* hcl_now_ns */

static int parse_size(const char *s, size_t *v)
{
	char *end;
	double x = strtod(s, &end);
	double m = 1;
	switch (*end) {
	case 'K': case 'k': m = 1 << 10; end++; break;
	case 'M': case 'm': m = 1 << 20; end++; break;
	case 'G': case 'g': m = 1 << 30; end++; break;
	}
	if (end == s || *end || x < 0 || x * m > 1e12)
		return -1;
	*v = (size_t)(x * m);
	return 0;
}

/* The injected compute noise (deterministic per seed and rank). */
struct noise {
	double compute_ms;      /* base compute time per iteration */
	char kind;              /* 0 none, 'n' normal(sd), 'e' exponential(mean), 'h' hiccup(p, ms) */
	double a, b;
	double slow;            /* this rank's compute factor (--straggler) */
	uint64_t rng;
};

static double uniform(struct noise *z)
{
	/* splitmix64: tiny, seedable, identical on every host */
	uint64_t v = (z->rng += 0x9e3779b97f4a7c15ull);
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
	v ^= v >> 31;
	return ((double)(v >> 11) + 0.5) / 9007199254740992.0;
}

static double compute_ms(struct noise *z)
{
	double ms = z->compute_ms * z->slow;
	switch (z->kind) {
	case 'n': ms += z->a * sqrt(-2 * log(uniform(z))) * cos(2 * M_PI * uniform(z)); break;
	case 'e': ms += -z->a * log(uniform(z)); break;
	case 'h': ms += uniform(z) < z->a ? z->b : 0; break;
	}
	return ms > 0 ? ms : 0;
}

static int parse_jitter(const char *s, struct noise *z)
{
	char k[16];
	int n;
	if (sscanf(s, "%15[a-z]:%lf%n", k, &z->a, &n) != 2 || z->a < 0)
		return -1;
	if (!strcmp(k, "normal") && !s[n])
		z->kind = 'n';
	else if (!strcmp(k, "exp") && !s[n])
		z->kind = 'e';
	else if (!strcmp(k, "hiccup") && sscanf(s + n, ":%lf", &z->b) == 1 && z->a <= 1 && z->b >= 0)
		z->kind = 'h';
	else
		return -1;
	return 0;
}

/* "R:F[,R:F...]": rank R computes F times as long; sets this rank's factor */
static int parse_straggler(const char *s, int rank, double *slow)
{
	for (const char *p = s; *p;) {
		int r, n;
		double f;
		if (sscanf(p, "%d:%lf%n", &r, &f, &n) != 2 || r < 0 || f <= 0)
			return -1;
		if (r == rank)
			*slow = f;
		p += n;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return 0;
}

static void sleep_ms(double ms)
{
	struct timespec ts = { (time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6) };
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ina-allreduce-perf [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-c 0|1]\n"
		   "                          [-d int32|float|bf16] [-o sum|avg] [-a ring] [-t TIMEOUT_MS]\n"
		   "  Ranks come from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and HCL_DATA_ADDR).\n"
		   "  -b/-e  smallest/largest message in bytes (K, M, G suffixes; default 1M/64M)\n"
		   "  -f     multiply the size by this between lines (default 2)\n"
		   "  -n/-w  timed and warm-up calls per size (default 20/5)\n"
		   "  -c     check the results (default 1)\n"
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

int main(int argc, char **argv)
{
	size_t minb = 1 << 20, maxb = 64 << 20;
	double factor = 2;
	int iters = 20, warmup = 5, check = 1, o;
	enum hcl_dtype dt = HCL_FP32;
	enum hcl_op op = HCL_SUM;
	struct hcl_comm_cfg cfg = HCL_COMM_CFG_ENV;
	struct noise z = { .slow = 1 };
	const char *straggler = NULL;
	unsigned long long seed = 1;
	bool iterate = false;
	enum { O_TRACE = 256, O_COMPUTE, O_JITTER, O_STRAGGLER, O_SEED };
	static const struct option longopts[] = {
		{ "pace", no_argument, NULL, 'P' },	       { "trace", required_argument, NULL, O_TRACE },
		{ "compute", required_argument, NULL, O_COMPUTE }, { "jitter", required_argument, NULL, O_JITTER },
		{ "straggler", required_argument, NULL, O_STRAGGLER }, { "seed", required_argument, NULL, O_SEED },
		{ "help", no_argument, NULL, 'h' },	       { 0 }
	};
	while ((o = getopt_long(argc, argv, "b:e:f:n:w:c:d:o:a:t:Ph", longopts, NULL)) != -1) {
		switch (o) {
		case 'P': cfg.pace = 1; break;
		case O_TRACE: cfg.trace_dir = optarg; break;
		case O_COMPUTE: {
			char *end;
			z.compute_ms = strtod(optarg, &end);
			iterate = true;
			if (end == optarg || *end || z.compute_ms < 0)
				goto bad;
			break;
		}
		case O_JITTER:
			if (parse_jitter(optarg, &z))
				goto bad;
			iterate = true;
			break;
		case O_STRAGGLER: straggler = optarg; iterate = true; break;
		case O_SEED: {
			char *end;
			seed = strtoull(optarg, &end, 10);
			if (end == optarg || *end)
				goto bad;
			break;
		}
		case 'b': if (parse_size(optarg, &minb)) goto bad; break;
		case 'e': if (parse_size(optarg, &maxb)) goto bad; break;
		case 'f': factor = atof(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 'w': warmup = atoi(optarg); break;
		case 'c': check = atoi(optarg); break;
		case 't': cfg.timeout_ms = atoll(optarg); break;
		case 'd':
			if (!strcmp(optarg, "int32"))
				dt = HCL_INT32;
			else if (!strcmp(optarg, "float") || !strcmp(optarg, "fp32"))
				dt = HCL_FP32;
			else if (!strcmp(optarg, "bf16"))
				dt = HCL_BF16;
			else
				goto bad;
			break;
		case 'o':
			if (!strcmp(optarg, "sum"))
				op = HCL_SUM;
			else if (!strcmp(optarg, "avg"))
				op = HCL_AVG;
			else
				goto bad;
			break;
		case 'a':
			if (!strcmp(optarg, "ring"))
				cfg.algo = HCL_ALGO_RING;
			else if (!strcmp(optarg, "ps-ina"))
				cfg.algo = HCL_ALGO_PS_INA;
			else if (!strcmp(optarg, "ps"))
				cfg.algo = HCL_ALGO_PS;
			else if (!strcmp(optarg, "hier"))
				cfg.algo = HCL_ALGO_HIER;
			else if (!strcmp(optarg, "agent-ring"))
				cfg.algo = HCL_ALGO_AGENT_RING;
			else
				goto bad;
			break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	double no_rank;
	if (factor <= 1 || iters < 1 || warmup < 0 || minb < 4 || maxb < minb || optind < argc ||
	    (straggler && parse_straggler(straggler, -1, &no_rank))) /* its syntax, before any rendezvous */
		goto bad;

	char err[320];
	struct hcl_comm *c;
	if (hcl_comm_create(&cfg, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "ina-allreduce-perf: %s\n", err);
		return 1;
	}
	int rank = hcl_comm_rank(c), n = hcl_comm_world(c);
	if (straggler && parse_straggler(straggler, rank, &z.slow)) {
		fprintf(stderr, "ina-allreduce-perf: --straggler wants RANK:FACTOR[,RANK:FACTOR...], not '%s'\n",
			straggler);
		hcl_comm_destroy(c);
		return 2;
	}
	z.rng = seed * 0x100000001b3ull + (uint64_t)rank;
	int64_t *iter_ns = calloc((size_t)iters, sizeof(*iter_ns));
	const size_t esz = dt == HCL_BF16 ? 2 : 4;
	size_t maxn = maxb / 4; /* 32-bit words: room for maxb bytes of any type */
	uint32_t *buf = malloc(maxn * 4 + 4);
	if (!buf || !iter_ns) {
		fprintf(stderr, "ina-allreduce-perf: out of memory\n");
		return 1;
	}
	if (rank == 0) {
		printf("# ina-allreduce-perf: %d ranks, algorithm %s, %d iterations, %d warm-up\n", n,
		       cfg.algo == HCL_ALGO_PS_INA	 ? "ps-ina"
		       : cfg.algo == HCL_ALGO_AGENT_RING ? "agent-ring"
		       : cfg.algo == HCL_ALGO_PS ? "ps"
		       : cfg.algo == HCL_ALGO_HIER ? "hier"
						   : "ring",
		       iters, warmup);
		printf("#%11s %12s %8s %6s %10s %8s %8s %7s\n", "size", "count", "type", "redop", "time", "algbw",
		       "busbw", "#wrong");
		printf("#%11s %12s %8s %6s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)",
		       "(GB/s)", "");
	}
	double bus_sum = 0;
	int lines = 0, rc = 0;
	for (size_t bytes = minb, next; rc == 0; bytes = next) {
		size_t count = bytes / esz;
		memset(buf, 0, count * esz);
		for (int k = 0; k < warmup && rc == 0; k++)
			rc = hcl_allreduce(buf, buf, count, dt, op, c);
		int64_t t0 = hcl_now_ns();
		for (int k = 0; k < iters && rc == 0; k++) {
			int64_t ti = hcl_now_ns();
			if (iterate) {
				hcl_iter_begin(c);
				sleep_ms(compute_ms(&z));
			}
			rc = hcl_allreduce(buf, buf, count, dt, op, c);
			if (iterate)
				hcl_iter_end(c);
			iter_ns[k] = hcl_now_ns() - ti;
		}
		double us = (hcl_now_ns() - t0) / 1e3 / iters;
		if (rc == 0 && iterate && rank == 0) {
			struct hcl_sync_stats st;
			hcl_sync_stats(iter_ns, (unsigned long)iters, &st);
			printf("# iterations %zu B: mean %.1f us  p50 %.1f  p99 %.1f  cv %.3f  %.2f it/s\n", count * esz,
			       st.mean_ns / 1e3, st.p50_ns / 1e3, st.p99_ns / 1e3, st.cv, 1e6 / us);
		}
		int32_t wrong = 0;
		if (rc == 0 && check) {
			/* rank r contributes r+1 (+ i % 7 for int32): the sums are exact */
			uint16_t *half = (uint16_t *)buf;
			for (size_t i = 0; i < count; i++) {
				if (dt == HCL_BF16) { /* small integers: exact in bf16 */
					float f = (float)(rank + 1);
					uint32_t u;
					memcpy(&u, &f, 4);
					half[i] = (uint16_t)(u >> 16);
				} else if (dt == HCL_FP32) {
					float f = (float)(rank + 1);
					memcpy(&buf[i], &f, 4);
				} else {
					buf[i] = (uint32_t)(rank + 1 + (int)(i % 7));
				}
			}
			rc = hcl_allreduce(buf, buf, count, dt, op, c);
			/* (n + 1) / 2 is exact in binary32 and in bf16 */
			float want_f = op == HCL_AVG ? (float)(n + 1) / 2 : (float)(n * (n + 1) / 2);
			for (size_t i = 0; rc == 0 && i < count; i++) {
				if (dt == HCL_BF16) {
					uint32_t u = (uint32_t)half[i] << 16;
					float f;
					memcpy(&f, &u, 4);
					wrong += f != want_f;
				} else if (dt == HCL_FP32) {
					float f;
					memcpy(&f, &buf[i], 4);
					wrong += f != want_f;
				} else {
					int32_t sum = n * (n + 1) / 2 + n * (int)(i % 7);
					wrong += buf[i] != (uint32_t)(op == HCL_AVG ? sum / n : sum);
				}
			}
			/* summed over ranks in the run's own type: a ps-ina job has one */
			if (rc == 0 && dt != HCL_INT32) {
				float fw = (float)wrong;
				rc = hcl_allreduce(&fw, &fw, 1, HCL_FP32, HCL_SUM, c);
				wrong = (int32_t)fw;
			} else if (rc == 0) {
				rc = hcl_allreduce(&wrong, &wrong, 1, HCL_INT32, HCL_SUM, c);
			}
		}
		if (rc)
			break;
		double algbw = bytes / us / 1e3, busbw = algbw * 2 * (n - 1) / n;
		bus_sum += busbw;
		lines++;
		if (rank == 0) {
			printf(" %11zu %12zu %8s %6s %10.1f %8.3f %8.3f %7d\n", count * esz, count,
			       dt == HCL_FP32 ? "float" : dt == HCL_BF16 ? "bf16" : "int32", op == HCL_AVG ? "avg" : "sum", us,
			       algbw, busbw, wrong);
			fflush(stdout);
		}
		if (bytes >= maxb)
			break;
		next = (size_t)ceil(bytes * factor);
		if (next > maxb)
			next = maxb; /* the last line is -e itself */
	}
	if (rc)
		fprintf(stderr, "ina-allreduce-perf rank %d: %s\n", rank, hcl_comm_error(c));
	else if (rank == 0)
		printf("# Avg bus bandwidth    : %.3f\n", lines ? bus_sum / lines : 0);
	struct hcl_sync_summary m;
	if (rc == 0 && rank == 0 && hcl_comm_sync_summary(c, &m) == 0)
		printf("# timing layer (rank 0, all calls): %lu iterations, cv %.3f, compute %.1f%% delay %.1f%% "
		       "wait %.1f%% comm %.1f%%, paced %lu of %lu calls, mean spread %.1f us, layer's own cost %.3f%%\n",
		       m.iterations, m.iter_cv, 100 * m.compute_share, 100 * m.delay_share, 100 * m.wait_share,
		       100 * m.comm_share, m.paced_calls, m.calls, m.spread_mean_us, 100 * m.layer_share);
	free(buf);
	free(iter_ns);
	hcl_comm_destroy(c);
	return rc ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
