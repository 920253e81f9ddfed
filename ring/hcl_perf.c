/* ina-allreduce-perf: all-reduce bandwidth in the form of nccl-tests.
 *   RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. ina-allreduce-perf -b 1M -e 64M -f 2
 * One line per size on rank 0:  size count type redop time algbw busbw #wrong
 * (time in us per call; algbw = size / time, busbw = algbw * 2(N-1)/N, in
 * GB/s of 1e9 bytes; #wrong summed over all ranks), then "# Avg bus bandwidth". */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl.h"
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

static void usage(FILE *f)
{
	fprintf(f, "usage: ina-allreduce-perf [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-c 0|1]\n"
		   "                          [-d int32|float] [-o sum] [-a ring] [-t TIMEOUT_MS]\n"
		   "  Ranks come from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and HCL_DATA_ADDR).\n"
		   "  -b/-e  smallest/largest message in bytes (K, M, G suffixes; default 1M/64M)\n"
		   "  -f     multiply the size by this between lines (default 2)\n"
		   "  -n/-w  timed and warm-up calls per size (default 20/5)\n"
		   "  -c     check the results (default 1)\n"
		   "  -d     data type (default float)   -o reduction (sum)\n"
		   "  -a     algorithm: ring (default), hier (HCL_RACK), ps (server in rank 0),\n"
		   "         ps-ina (HCL_INA_SWITCH, HCL_INA_JOB, ...), agent-ring (the same)\n");
}

int main(int argc, char **argv)
{
	size_t minb = 1 << 20, maxb = 64 << 20;
	double factor = 2;
	int iters = 20, warmup = 5, check = 1, o;
	enum hcl_dtype dt = HCL_FP32;
	struct hcl_comm_cfg cfg = HCL_COMM_CFG_ENV;
	while ((o = getopt(argc, argv, "b:e:f:n:w:c:d:o:a:t:h")) != -1) {
		switch (o) {
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
			else
				goto bad;
			break;
		case 'o': if (strcmp(optarg, "sum")) goto bad; break;
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
	if (factor <= 1 || iters < 1 || warmup < 0 || minb < 4 || maxb < minb || optind < argc)
		goto bad;

	char err[320];
	struct hcl_comm *c;
	if (hcl_comm_create(&cfg, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "ina-allreduce-perf: %s\n", err);
		return 1;
	}
	int rank = hcl_comm_rank(c), n = hcl_comm_world(c);
	size_t maxn = maxb / 4;
	uint32_t *buf = malloc(maxn * 4 + 4);
	if (!buf) {
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
		size_t count = bytes / 4;
		for (size_t i = 0; i < count; i++)
			buf[i] = 0;
		for (int k = 0; k < warmup && rc == 0; k++)
			rc = hcl_allreduce(buf, buf, count, dt, HCL_SUM, c);
		int64_t t0 = hcl_now_ns();
		for (int k = 0; k < iters && rc == 0; k++)
			rc = hcl_allreduce(buf, buf, count, dt, HCL_SUM, c);
		double us = (hcl_now_ns() - t0) / 1e3 / iters;
		int32_t wrong = 0;
		if (rc == 0 && check) {
			/* rank r contributes r+1 (+ i % 7 for int32): the sums are exact */
			for (size_t i = 0; i < count; i++) {
				if (dt == HCL_FP32) {
					float f = (float)(rank + 1);
					memcpy(&buf[i], &f, 4);
				} else {
					buf[i] = (uint32_t)(rank + 1 + (int)(i % 7));
				}
			}
			rc = hcl_allreduce(buf, buf, count, dt, HCL_SUM, c);
			for (size_t i = 0; rc == 0 && i < count; i++) {
				if (dt == HCL_FP32) {
					float f;
					memcpy(&f, &buf[i], 4);
					wrong += f != (float)(n * (n + 1) / 2);
				} else {
					wrong += buf[i] != (uint32_t)(n * (n + 1) / 2 + n * (int)(i % 7));
				}
			}
			/* summed over ranks in the run's own type: a ps-ina job has one */
			if (rc == 0 && dt == HCL_FP32) {
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
			printf(" %11zu %12zu %8s %6s %10.1f %8.3f %8.3f %7d\n", count * 4, count,
			       dt == HCL_FP32 ? "float" : "int32", "sum", us, algbw, busbw, wrong);
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
	free(buf);
	hcl_comm_destroy(c);
	return rc ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
