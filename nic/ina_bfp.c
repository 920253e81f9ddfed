/* SPDX-License-Identifier: BSD-3-Clause */
#include "ina_bfp.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static double bfp_scale(int8_t e, unsigned fan_in) { return ldexp((double)INT32_MAX / fan_in, -e); }

int ina_bfp_exponent(const float *x, size_t n, int8_t *e)
{
	int emax = INA_BFP_EXP_MIN;

	for (size_t i = 0; i < n; i++) {
		int ex;
		if (!isfinite(x[i]))
			return -EDOM;
		if (x[i] == 0.0f)
			continue;
		frexpf(x[i], &ex); /* |x| = m * 2^ex, 0.5 <= m < 1, so |x| < 2^ex */
		if (ex > emax)
			emax = ex;
	}
	if (emax > INA_BFP_EXP_MAX)
		return -EDOM;
	*e = (int8_t)emax;
	return 0;
}

double ina_bfp_error_bound(int8_t e, unsigned fan_in)
{
	/* each of fan_in roundings is at most half a quantum, 1/scale */
	return fan_in * 0.5 / bfp_scale(e, fan_in);
}

void ina_bfp_quantize(const float *x, size_t n, int8_t e, unsigned fan_in, uint8_t *out)
{
	double scale = bfp_scale(e, fan_in);
	/* one addend's share of the int32 range, so fan_in of them never wrap */
	double lim = floor((double)INT32_MAX / fan_in);

	for (size_t i = 0; i < n; i++) {
		double q = nearbyint((double)x[i] * scale);
		if (q > lim)
			q = lim;
		if (q < -lim)
			q = -lim;
		uint32_t w = __builtin_bswap32((uint32_t)(int32_t)q);
		memcpy(out + 4 * i, &w, 4);
	}
}

void ina_bfp_dequantize(const uint8_t *in, size_t n, int8_t e, unsigned fan_in, float *x)
{
	double inv = 1.0 / bfp_scale(e, fan_in);

	for (size_t i = 0; i < n; i++) {
		uint32_t w;
		memcpy(&w, in + 4 * i, 4);
		x[i] = (float)((int32_t)__builtin_bswap32(w) * inv);
	}
}
