/* SPDX-License-Identifier: BSD-3-Clause */
/* ina-allreduce-perf: all-reduce bandwidth with nccl-tests' flags and table.
 *   RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. HCL_ALGO=ps-ina ina-allreduce-perf -b 1M -e 64M -f 2
 * One line per size on rank 0, as all_reduce_perf prints it:
 *   size count type redop root | out-of-place: time algbw busbw #wrong | in-place: the same
 * (time in us per call, the mean over ranks unless -a says otherwise;
 * algbw = size / time, busbw = algbw * 2(N-1)/N, in GB/s of 1e9 bytes;
 * #wrong summed over all ranks), then "# Avg bus bandwidth".  The
 * algorithm comes from HCL_ALGO (as NCCL's from NCCL_ALGO) or --algo.
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
#include <time.h>

#include "clock.h"
#include "hcl.h"
#include "hcl_noise.h"
#include "hcl_perf_steps.h"
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
	fprintf(f, "usage: ina-allreduce-perf [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-n ITERS] [-w WARMUP]\n"
		   "                          [-c CHECKS] [-d TYPE] [-o sum|avg] [-a 0..3] [-z 0|1] [-T SECONDS]\n"
		   "                          [--algo NAME] [--only in|out] ...\n"
		   "  nccl-tests' all_reduce_perf flags, with their meanings:\n"
		   "  -b/-e  smallest/largest message in bytes (K, M, G suffixes; default 1M/64M)\n"
		   "  -f     multiply the size by this between lines (default 2)\n"
		   "  -i     add this many bytes between lines instead (when -f is not given)\n"
		   "  -n/-w  timed and warm-up calls per size (default 20/5)\n"
		   "  -c     check the results of this many more calls per size and placement (default 1; 0: none)\n"
		   "  -d     data type: float (float32, fp32), bfloat16 (bf16), int32 (default float)\n"
		   "  -o     reduction: sum, or avg (sum / ranks)\n"
		   "  -a     time reported: 0 rank 0's, 1 the mean over ranks (default), 2 the least, 3 the most\n"
		   "  -z     blocking calls, 0 or 1: every call here blocks, both are accepted\n"
		   "  -t/-g  threads and GPUs per process: 1 only (one rank per process, on the CPU)\n"
		   "  -T     deadline of each call in seconds (default 30)\n"
		   "  Ranks come from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and HCL_DATA_ADDR).\n"
		   "  --algo NAME        ring (default), hier (HCL_RACK), ps (server in rank 0, or HCL_PS_SHARDS),\n"
		   "                     ps-ina (HCL_INA_SWITCH, HCL_INA_JOB, ...), agent-ring; or HCL_ALGO=NAME\n"
		   "  --timeout MS       deadline of each call in ms (default 30000)\n"
		   "  --only in|out      run only the in-place or the out-of-place calls (the other group: N/A)\n"
		   "  -P, --pace         pace early ranks (docs/PACING.md; also HCL_PACE=1)\n"
		   "  --trace DIR        per-rank JSON-lines timing trace DIR/rank<r>.jsonl (also HCL_TRACE)\n"
		   "  --compute MS       make each timed call an iteration: MS of simulated compute first\n"
		   "  --jitter SPEC      compute noise: normal:SD_MS, exp:MEAN_MS or hiccup:PROB:MS\n"
		   "  --straggler R:F    rank R computes F times as long (comma-separated list)\n"
		   "  --seed N           seed of the noise (default 1; rank is mixed in)\n"
		   "  --workload FILE    training steps instead of sizes: a profile's forward, then its gradient\n"
		   "                     buckets all-reduced in order as the backward readies them (docs/TRIAL.md,\n"
		   "                     \"Training-step workloads\"); -n/-w count steps, -c checks the largest bucket;\n"
		   "                     --jitter and --straggler scale each step's compute\n"
		   "  --time-scale K     every time of the profile x K (a trial's time dilation; default 1)\n");
}

enum { OUT_OF_PLACE = 1, IN_PLACE = 2 };

struct perf {
	uint64_t minb, maxb, step;
	double factor;
	bool factor_given;
	int avg_mode; /* -a: the time reported: 0 rank 0's, 1 mean, 2 least, 3 most */
	int places;   /* OUT_OF_PLACE | IN_PLACE */
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
	double call_s;	  /* wall seconds inside those calls (compute left out) */
	const char *workload; /* --workload: training steps from this profile */
	/* the machine's CPU ticks (all cores, /proc/stat: busy, all, stolen)
	 * when the first timed call began and the last ended: its share in the
	 * timed calls alone, without the ranks' start-up, rendezvous and
	 * warm-up */
	unsigned long long mt0[3], mt1[3];
	double time_scale;    /* --time-scale: the profile's times x this */
};

/* A data type by nccl-tests' names and ours. */
static enum hcl_dtype dtype_of(const char *v)
{
	if (!strcmp(v, "float") || !strcmp(v, "float32") || !strcmp(v, "fp32"))
		return HCL_FP32;
	if (!strcmp(v, "bfloat16") || !strcmp(v, "bf16"))
		return HCL_BF16;
	return !strcmp(v, "int32") ? HCL_INT32 : 0;
}

enum { O_TRACE = 256, O_COMPUTE, O_JITTER, O_STRAGGLER, O_SEED, O_ALGO, O_TIMEOUT, O_ONLY, O_WORKLOAD, O_TIME_SCALE };

/* One option into p: 0; -1 when its value is not one; -2 when it is not
 * and what is wrong is on stderr already. */
static int option(struct perf *p, int o, const char *v)
{
	long long x;
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
	case O_ALGO: return hcl_algo_from_name(v, &p->cfg.algo);
	case O_TIMEOUT: return parse_int(v, 0, 86400000, &x) < 0 ? -1 : (p->cfg.timeout_ms = x, 0);
	case O_WORKLOAD: p->workload = v; return 0;
	case O_TIME_SCALE: return parse_double(v, 1e-3, 1e6, &p->time_scale);
	case O_ONLY:
		p->places = !strcmp(v, "in") ? IN_PLACE : !strcmp(v, "out") ? OUT_OF_PLACE : 0;
		return p->places ? 0 : -1;
	case 'b': return parse_size(v, &p->minb);
	case 'e': return parse_size(v, &p->maxb);
	case 'f': p->factor_given = true; return parse_double(v, 1, 1e6, &p->factor);
	case 'i': return parse_size(v, &p->step) < 0 || p->step == 0 ? -1 : 0;
	case 'n': return parse_int(v, 1, 1 << 30, &p->iters);
	case 'w': return parse_int(v, 0, 1 << 30, &p->warmup);
	case 'c': return parse_int(v, 0, 1000000, &p->check);
	case 'a': return parse_int(v, 0, 3, &x) < 0 ? -1 : (p->avg_mode = (int)x, 0);
	case 'z': return parse_int(v, 0, 1, &x); /* every call blocks: both mean the same here */
	case 't':
	case 'g':
		if (parse_int(v, 1, 1, &x) == 0)
			return 0;
		fprintf(stderr, "ina-allreduce-perf: -%c %s: one rank per process, on the CPU: only 1 is supported\n",
			o, v);
		return -2;
	case 'T': return parse_int(v, 0, 86400, &x) < 0 ? -1 : (p->cfg.timeout_ms = x * 1000, 0);
	case 'd':
		if ((p->dt = dtype_of(v)))
			return 0;
		fprintf(stderr, "ina-allreduce-perf: -d %s: the types are float, bfloat16 and int32\n", v);
		return -2;
	case 'o':
		p->op = !strcmp(v, "sum") ? HCL_SUM : !strcmp(v, "avg") ? HCL_AVG : 0;
		if (!p->op)
			fprintf(stderr, "ina-allreduce-perf: -o %s: the reductions are sum and avg\n", v);
		return p->op ? 0 : -2;
	default: return -1;
	}
}

/* 0, 1 after --help, -1 on a bad command line. */
static int parse_args(int argc, char **argv, struct perf *p)
{
	static const struct option longopts[] = { { "pace", no_argument, NULL, 'P' },
						  { "trace", required_argument, NULL, O_TRACE },
						  { "compute", required_argument, NULL, O_COMPUTE },
						  { "jitter", required_argument, NULL, O_JITTER },
						  { "straggler", required_argument, NULL, O_STRAGGLER },
						  { "seed", required_argument, NULL, O_SEED },
						  { "algo", required_argument, NULL, O_ALGO },
						  { "timeout", required_argument, NULL, O_TIMEOUT },
						  { "only", required_argument, NULL, O_ONLY },
						  { "workload", required_argument, NULL, O_WORKLOAD },
						  { "time-scale", required_argument, NULL, O_TIME_SCALE },
						  { "help", no_argument, NULL, 'h' },
						  { 0 } };
	int o;
	while ((o = getopt_long(argc, argv, "b:e:f:i:n:w:c:d:o:a:z:t:g:T:Ph", longopts, NULL)) != -1) {
		if (o == 'h') {
			usage(stdout);
			return 1;
		}
		int bad = option(p, o, optarg);
		if (bad < 0) {
			if (o != '?' && bad == -1)
				fprintf(stderr, "ina-allreduce-perf: bad value '%s'\n", optarg);
			return -1;
		}
	}
	if (p->step && !p->factor_given) /* -i: sizes grow by a step, as nccl-tests' do */
		p->factor = 1;
	double no_rank;
	return p->minb < 4 || p->maxb < p->minb || p->maxb > 1ull << 40 || optind < argc ||
			       (p->factor <= 1 && !p->step && p->maxb > p->minb) ||
			       (p->straggler &&
				hcl_noise_parse_stragglers(p->straggler, -1, 0, &no_rank)) /* before any rendezvous */
		       ? -1
		       : 0;
}

/* Element i of rank r: r + 1 + i % 7, in every type — distinct per
 * element, and every partial sum of up to 16 ranks (at most 232) is exact
 * in binary32 and in bf16. */
static void fill(const struct perf *p, void *buf, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		int v = p->rank + 1 + (int)(i % 7);
		float f = (float)v;
		uint32_t u;
		memcpy(&u, &f, 4);
		if (p->dt == HCL_BF16)
			((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
		else
			((uint32_t *)buf)[i] = p->dt == HCL_FP32 ? u : (uint32_t)v;
	}
}

/* Elements of buf (count of them) that are not what the call should give. */
static int32_t count_wrong(const struct perf *p, const void *buf, size_t count)
{
	const int n = p->n;
	int32_t wrong = 0;
	for (size_t i = 0; i < count; i++) {
		int32_t sum = n * (n + 1) / 2 + n * (int)(i % 7);
		if (p->dt == HCL_INT32) {
			wrong += ((const uint32_t *)buf)[i] != (uint32_t)(p->op == HCL_AVG ? sum / n : sum);
			continue;
		}
		uint32_t w = p->dt == HCL_BF16 ? (uint32_t)((const uint16_t *)buf)[i] << 16
					       : ((const uint32_t *)buf)[i];
		float f, want = p->op == HCL_AVG ? (float)sum / (float)n : (float)sum;
		memcpy(&f, &w, 4);
		wrong += f != want; /* sum / n: exact at these sizes ((n + 1) / 2 + i % 7) */
	}
	return wrong;
}

/* One checked call (in place when send == recv): the wrong elements summed
 * over every rank — out of place, a send buffer the call changed counts
 * too — or a negative errno. */
static int check_call(struct perf *p, struct hcl_comm *c, void *send, void *recv, size_t count, int32_t *wrong)
{
	const size_t esz = p->dt == HCL_BF16 ? 2 : 4;
	fill(p, send, count);
	if (recv != send)
		memset(recv, 0xa5, count * esz); /* no stale right answer */
	int rc = hcl_allreduce(send, recv, count, p->dt, p->op, c);
	*wrong = rc == 0 ? count_wrong(p, recv, count) : 0;
	if (rc == 0 && recv != send) {
		void *want = malloc(count * esz + 1);
		if (!want)
			return -ENOMEM;
		fill(p, want, count);
		*wrong += memcmp(want, send, count * esz) != 0;
		free(want);
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

/* The machine's busy, total and stolen CPU ticks (every core, as
 * /proc/stat counts them: user, nice, system, irq, softirq and steal are
 * busy; steal is the time a hypervisor ran something else on this virtual
 * machine's cores); 0 if unread. */
static void machine_ticks(unsigned long long t[3])
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	t[0] = t[1] = t[2] = 0;
	if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			&v[6], &v[7]) == 8) {
		t[0] = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
		t[1] = t[0] + v[3] + v[4];
		t[2] = v[7];
	}
	if (f)
		fclose(f);
}

/* Marks the start (the first timed call) or the end of the timed calls. */
static void machine_mark(struct perf *p, bool start)
{
	if (p->rank != 0 || (start && p->mt0[1]))
		return;
	machine_ticks(start ? p->mt0 : p->mt1);
}

/* This rank's time per call (us) as -a reports it: rank 0's, or the mean,
 * least or most over ranks (every rank's time gathered by one sum). */
static int reported_time(struct perf *p, struct hcl_comm *c, double mine, double *us)
{
	float *all = calloc((size_t)p->n, sizeof(float));
	if (!all)
		return -ENOMEM;
	all[p->rank] = (float)mine;
	int rc = hcl_allreduce(all, all, (size_t)p->n, HCL_FP32, HCL_SUM, c);
	double sum = 0, lo = INFINITY, hi = 0;
	for (int r = 0; r < p->n; r++) {
		sum += all[r];
		lo = all[r] < lo ? all[r] : lo;
		hi = all[r] > hi ? all[r] : hi;
	}
	*us = p->avg_mode == 0 ? all[0] : p->avg_mode == 1 ? sum / p->n : p->avg_mode == 2 ? lo : hi;
	free(all);
	return rc;
}

/* The timed calls of one size and placement: the time per call in us, or
 * a negative errno. */
static int time_calls(struct perf *p, struct hcl_comm *c, void *send, void *recv, size_t count, int64_t *iter_ns,
		      double *us)
{
	const size_t esz = p->dt == HCL_BF16 ? 2 : 4;
	int rc = 0;
	memset(send, 0, count * esz);
	for (long long k = 0; k < p->warmup && rc == 0; k++)
		rc = hcl_allreduce(send, recv, count, p->dt, p->op, c);
	double cpu0 = clock_cpu_s();
	machine_mark(p, true);
	int64_t t0 = clock_now_ns();
	for (long long k = 0; k < p->iters && rc == 0; k++) {
		int64_t ti = clock_now_ns();
		if (p->iterate) {
			hcl_iter_begin(c);
			sleep_ms(hcl_noise_compute_ms(&p->z));
		}
		int64_t tc = clock_now_ns();
		rc = hcl_allreduce(send, recv, count, p->dt, p->op, c);
		p->call_s += (double)(clock_now_ns() - tc) / 1e9;
		if (p->iterate)
			hcl_iter_end(c);
		iter_ns[k] = clock_now_ns() - ti;
	}
	double mine = (double)(clock_now_ns() - t0) / 1e3 / (double)p->iters;
	p->cpu_timed += clock_cpu_s() - cpu0;
	machine_mark(p, false);
	if (rc == 0)
		rc = reported_time(p, c, mine, us);
	if (rc == 0 && p->iterate && p->rank == 0) {
		struct hcl_sync_stats st;
		hcl_sync_stats(iter_ns, (unsigned long)p->iters, &st);
		printf("# iterations %zu B: mean %.1f us  p50 %.1f  p99 %.1f  cv %.3f  %.2f it/s\n", count * esz,
		       st.mean_ns / 1e3, st.p50_ns / 1e3, st.p99_ns / 1e3, st.cv, 1e6 / mine);
	}
	return rc;
}

static void print_header(const struct perf *p, struct hcl_comm *c)
{
	printf("# ina-allreduce-perf: %d ranks, algorithm %s, %lld iterations, %lld warm-up\n", p->n,
	       hcl_algo_name(hcl_comm_algo(c)), p->iters, p->warmup);
	printf("#%58s%s%25s%s\n", "", "out-of-place", "", "in-place"); /* over their columns */
	printf("#%11s %12s %8s %6s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n", "size", "count", "type", "redop", "root",
	       "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
	printf("#%11s %12s %8s %6s %6s %9s %8s %8s %6s %9s %8s %8s %6s\n", "(B)", "(elements)", "", "", "", "(us)",
	       "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
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

/* One size, both placements (as -- only allows): the line's two groups in
 * cols, and the busbw of each measured group added to *bus_sum. */
static int one_size(struct perf *p, struct hcl_comm *c, void *send, void *recv, size_t count, int64_t *iter_ns,
		    char cols[2][64], double *bus_sum, int *groups)
{
	const size_t bytes = count * (p->dt == HCL_BF16 ? 2 : 4);
	for (int g = 0; g < 2; g++) {
		int place = g ? IN_PLACE : OUT_OF_PLACE;
		void *dst = g ? send : recv;
		double us = 0;
		int32_t wrong = 0, w;
		int rc;
		snprintf(cols[g], 64, " %9s %8s %8s %6s", "N/A", "N/A", "N/A", "N/A");
		if (!(p->places & place))
			continue;
		if ((rc = time_calls(p, c, send, dst, count, iter_ns, &us)) < 0)
			return rc;
		for (long long k = 0; k < p->check; k++, wrong += w)
			if ((rc = check_call(p, c, send, dst, count, &w)) < 0)
				return rc;
		double algbw = (double)bytes / us / 1e3, busbw = algbw * 2 * (p->n - 1) / p->n;
		*bus_sum += busbw;
		++*groups;
		char wr[16] = "N/A";
		if (p->check)
			snprintf(wr, sizeof(wr), "%d", wrong);
		snprintf(cols[g], 64, " %9.1f %8.3f %8.3f %6s", us, algbw, busbw, wr);
	}
	return 0;
}

/* What the timed calls cost, summed over the ranks, and each rank's CPU
 * share of one core while in them: a rank near a whole core is bound by its
 * own CPU, not the network (the trial runner flags it); then nccl-tests'
 * closing lines (avg_busbw >= 0) and the timing layer's summary. */
static int report_cpu(struct perf *p, struct hcl_comm *c, double avg_busbw)
{
	float *cpu = calloc((size_t)p->n + 1, sizeof(float));
	int rc;
	if (!cpu)
		return -ENOMEM;
	cpu[0] = (float)p->cpu_timed;
	cpu[1 + p->rank] = p->call_s > 0 ? (float)(p->cpu_timed / p->call_s) : 0;
	if ((rc = hcl_allreduce(cpu, cpu, (size_t)p->n + 1, HCL_FP32, HCL_SUM, c)) < 0) {
		free(cpu);
		return rc;
	}
	if (p->rank == 0) {
		int busiest = 0;
		for (int r = 1; r < p->n; r++)
			busiest = cpu[1 + r] > cpu[1 + busiest] ? r : busiest;
		if (avg_busbw >= 0) {
			printf("# Out of bounds values : 0 OK\n");
			printf("# Avg bus bandwidth    : %.3f\n", avg_busbw);
		}
		printf("# cpu seconds of all ranks in the timed calls: %.3f\n", cpu[0]);
		printf("# busiest rank's cpu share of a core in the timed calls: %.3f (rank %d)\n", cpu[1 + busiest],
		       busiest);
		if (p->mt1[1] > p->mt0[1]) {
			const double all = (double)(p->mt1[1] - p->mt0[1]);
			printf("# the machine's cpu share (all cores) in the timed calls: %.3f\n",
			       (double)(p->mt1[0] - p->mt0[0]) / all);
			printf("# the hypervisor's share of the cpu (steal, all cores) in the timed calls: %.3f\n",
			       (double)(p->mt1[2] - p->mt0[2]) / all);
		}
		print_summary(c);
	}
	free(cpu);
	return 0;
}

/* Every size from -b to -e: one line each on rank 0. */
static int run(struct perf *p, struct hcl_comm *c, void *send, void *recv, int64_t *iter_ns)
{
	const size_t esz = p->dt == HCL_BF16 ? 2 : 4;
	double bus_sum = 0;
	int groups = 0, rc = 0;
	if (p->rank == 0)
		print_header(p, c);
	for (size_t bytes = p->minb;;) {
		size_t count = bytes / esz;
		char cols[2][64];
		if ((rc = one_size(p, c, send, recv, count, iter_ns, cols, &bus_sum, &groups)) < 0)
			return rc;
		if (p->rank == 0) {
			printf(" %11zu %12zu %8s %6s %6d%s%s\n", count * esz, count,
			       p->dt == HCL_FP32   ? "float"
			       : p->dt == HCL_BF16 ? "bfloat16"
						   : "int32",
			       p->op == HCL_AVG ? "avg" : "sum", -1, cols[0], cols[1]);
			fflush(stdout);
		}
		if (bytes >= p->maxb) /* the last line is -e itself */
			break;
		double next = p->factor > 1 ? ceil(bytes * p->factor) : (double)(bytes + p->step);
		bytes = next < (double)p->maxb ? (size_t)next : p->maxb;
	}
	return report_cpu(p, c, groups ? bus_sum / groups : 0);
}

/* --workload: the profile's steps, then a checked call of its largest
 * bucket (#wrong on rank 0's last line of the steps). */
static int run_workload(struct perf *p, struct hcl_comm *c, const struct hcl_workload *w)
{
	void *buf = malloc(w->max_bytes + 4);
	int rc = buf ? 0 : -ENOMEM;
	p->z.compute_ms = (w->fwd_ms + w->bwd_ms) * p->time_scale; /* the noise model's base */
	struct perf_steps s = { .w = w,
				.scale = p->time_scale,
				.z = &p->z,
				.iters = p->iters,
				.warmup = p->warmup,
				.dt = p->dt,
				.rank = p->rank,
				.world = p->n };
	machine_mark(p, true);
	if (rc == 0)
		rc = perf_steps_run(c, &s, buf, &p->cpu_timed, &p->call_s);
	machine_mark(p, false);
	int32_t wrong = 0, wc;
	for (long long k = 0; k < p->check && rc == 0; k++, wrong += wc)
		rc = check_call(p, c, buf, buf, (size_t)(w->max_bytes / 4), &wc);
	if (rc == 0 && p->rank == 0)
		printf("# workload check: %lld calls of %llu bytes, #wrong %d\n", p->check,
		       (unsigned long long)w->max_bytes, wrong);
	free(buf);
	return rc < 0 ? rc : report_cpu(p, c, -1);
}

int main(int argc, char **argv)
{
	struct perf p = { .minb = 1 << 20,
			  .maxb = 64 << 20,
			  .factor = 2,
			  .avg_mode = 1,
			  .places = OUT_OF_PLACE | IN_PLACE,
			  .iters = 20,
			  .warmup = 5,
			  .check = 1,
			  .dt = HCL_FP32,
			  .op = HCL_SUM,
			  .cfg = HCL_COMM_CFG_ENV,
			  .z = { .slow = 1 },
			  .seed = 1,
			  .time_scale = 1 };
	int rc = parse_args(argc, argv, &p);
	if (rc) {
		if (rc < 0)
			usage(stderr);
		return rc < 0 ? 2 : 0;
	}
	char err[320];
	struct hcl_comm *c;
	struct hcl_workload w = { 0 };
	if (p.workload && p.dt == HCL_BF16) {
		fprintf(stderr, "ina-allreduce-perf: --workload and -d bf16: a profile's buckets are fp32 gradients' bytes\n");
		return 2;
	}
	if (p.workload && hcl_workload_load(p.workload, &w, err, sizeof(err)) < 0) {
		fprintf(stderr, "ina-allreduce-perf: %s\n", err);
		return 2;
	}
	if (hcl_comm_create(&p.cfg, &c, err, sizeof(err)) < 0) {
		hcl_workload_free(&w);
		fprintf(stderr, "ina-allreduce-perf: %s\n", err);
		return 1;
	}
	p.rank = hcl_comm_rank(c);
	p.n = hcl_comm_world(c);
	if (p.straggler && hcl_noise_parse_stragglers(p.straggler, p.rank, p.n, &p.z.slow)) {
		fprintf(stderr, "ina-allreduce-perf: --straggler wants RANK:FACTOR[,RANK:FACTOR...], not '%s'\n",
			p.straggler);
		hcl_comm_destroy(c);
		hcl_workload_free(&w);
		return 2;
	}
	hcl_noise_seed(&p.z, p.seed, p.rank);
	if (p.workload) /* its own buffer, of the largest bucket */
		p.maxb = 4;
	int64_t *iter_ns = calloc((size_t)p.iters, sizeof(*iter_ns));
	/* 32-bit words: room for maxb bytes of any type */
	uint32_t *send = malloc(p.maxb / 4 * 4 + 4), *recv = malloc(p.maxb / 4 * 4 + 4);
	if (!send || !recv || !iter_ns) {
		fprintf(stderr, "ina-allreduce-perf: out of memory\n");
		rc = -ENOMEM;
	} else if ((rc = p.workload ? run_workload(&p, c, &w) : run(&p, c, send, recv, iter_ns)) < 0) {
		fprintf(stderr, "ina-allreduce-perf rank %d: %s\n", p.rank, hcl_comm_error(c));
	}
	struct hcl_comm_stats st;
	if (rc == 0 && hcl_comm_stats(c, &st) == 0) {
		char why[256] = ""; /* the aggregator's drops by reason */
		for (unsigned r = 0; r < HCL_DROP_REASONS; r++)
			if (st.agg_drops[r] && hcl_drop_reason(r))
				snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s %llu", *why ? ", " : " (",
					 hcl_drop_reason(r), st.agg_drops[r]);
		printf("# host of rank %d: transfer %llu sent %llu re-sent %llu time-outs; INA client %llu sent %llu "
		       "re-sent %llu answers %llu stale %llu marked; software aggregator %llu packets %llu accepted "
		       "%llu dropped%s%s\n",
		       p.rank, st.xfer_sent, st.xfer_resent, st.xfer_timeouts, st.ina_sent, st.ina_resent,
		       st.ina_results, st.ina_stale, st.ina_marked, st.agg_packets, st.agg_accepted, st.agg_dropped,
		       why, *why ? ")" : "");
	}
	if (rc == 0)
		printf("# transfer of rank %d: %llu sends, %llu coalesced runs received, %llu ACKs sent, %llu window "
		       "halvings, %llu waits for the host's queue, %llu WAITs from a peer\n",
		       p.rank, st.xfer_sends, st.xfer_rx_runs, st.xfer_acks, st.xfer_halved, st.xfer_local_waits,
		       st.xfer_peer_waits);
	if (rc == 0 && st.ina_fallback_calls)
		printf("# INA lost mid-job at rank %d: %llu calls finished on the software ring\n", p.rank,
		       st.ina_fallback_calls);
	free(send);
	free(recv);
	free(iter_ns);
	hcl_comm_destroy(c);
	hcl_workload_free(&w);
	return rc ? 1 : 0;
}
