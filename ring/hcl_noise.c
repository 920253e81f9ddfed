/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_noise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double uniform(struct hcl_noise *z)
{
	/* splitmix64: tiny, seedable, identical on every host */
	uint64_t v = (z->rng += 0x9e3779b97f4a7c15ull);
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
	v ^= v >> 31;
	return ((double)(v >> 11) + 0.5) / 9007199254740992.0;
}

void hcl_noise_seed(struct hcl_noise *z, uint64_t seed, int rank) { z->rng = seed * 0x100000001b3ull + (uint64_t)rank; }

double hcl_noise_compute_ms(struct hcl_noise *z)
{
	double ms = z->compute_ms * z->slow;
	switch (z->kind) {
	case 'n': ms += z->a * sqrt(-2 * log(uniform(z))) * cos(2 * M_PI * uniform(z)); break;
	case 'e': ms += -z->a * log(uniform(z)); break;
	case 'h': ms += uniform(z) < z->a ? z->b : 0; break;
	}
	return ms > 0 ? ms : 0;
}

int hcl_noise_parse_jitter(const char *s, struct hcl_noise *z)
{
	char k[16];
	int n = 0;
	double a, b = 0;
	if (!*s) {
		z->kind = 0;
		return 0;
	}
	if (sscanf(s, "%15[a-z]:%lf%n", k, &a, &n) != 2 || a < 0 || !isfinite(a))
		return -1;
	char kind = !strcmp(k, "normal") ? 'n' : !strcmp(k, "exp") ? 'e' : !strcmp(k, "hiccup") ? 'h' : 0;
	if (kind == 'h') {
		int m = 0;
		if (sscanf(s + n, ":%lf%n", &b, &m) != 1 || s[n + m] || a > 1 || b < 0 || !isfinite(b))
			return -1;
	} else if (!kind || s[n]) {
		return -1;
	}
	z->kind = kind;
	z->a = a;
	z->b = b;
	return 0;
}

int hcl_noise_parse_stragglers(const char *s, int rank, int world, double *slow)
{
	for (const char *p = s; *p;) {
		int r, n;
		double f;
		if (sscanf(p, "%d:%lf%n", &r, &f, &n) != 2 || r < 0 || (world && r >= world) || !(f > 0) ||
		    !isfinite(f))
			return -1;
		if (r == rank)
			*slow = f;
		p += n;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return -1;
	}
	return 0;
}
