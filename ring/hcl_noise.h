/* SPDX-License-Identifier: BSD-3-Clause */
/* Injected compute noise for ina-allreduce-perf's iterations (and the
 * trial file's jitter and straggler settings, checked by the same
 * parsers): a base compute time, a noise model, and a factor per rank.
 * Deterministic per seed and rank, so runs with pacing on and off see the
 * same noise (docs/PACING.md). */
#ifndef HCL_NOISE_H
#define HCL_NOISE_H

#include <stdint.h>

struct hcl_noise {
	double compute_ms; /* base compute time per iteration */
	char kind;	   /* 0 none, 'n' normal(a = sd), 'e' exponential(a = mean), 'h' hiccup(a = p, b = ms) */
	double a, b;
	double slow; /* this rank's compute factor (stragglers) */
	uint64_t rng;
};

/* "normal:SD_MS", "exp:MEAN_MS" or "hiccup:PROB:MS" ("" is none): 0, or -1. */
int hcl_noise_parse_jitter(const char *s, struct hcl_noise *z);
/* "R:F[,R:F...]": rank R computes F times as long.  Sets *slow to the
 * factor of `rank` (left as it is if not listed; rank -1 only checks);
 * ranks must be below world (0: any).  0, or -1. */
int hcl_noise_parse_stragglers(const char *s, int rank, int world, double *slow);
/* Seeds the generator for this rank. */
void hcl_noise_seed(struct hcl_noise *z, uint64_t seed, int rank);
/* The next iteration's compute time in ms (never negative). */
double hcl_noise_compute_ms(struct hcl_noise *z);

#endif
