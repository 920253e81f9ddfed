/* SPDX-License-Identifier: BSD-3-Clause */
/* Block floating point: fp32 sent over the exact int32 aggregation.  All
 * contributors quantise a slice with one shared exponent e (every |x| <
 * 2^e) and a scale that leaves room for fan_in addends, so the int32 sum
 * can not wrap:  scale = INT32_MAX / (fan_in * 2^e).  Error bound of a
 * dequantised sum element (docs/PROTOCOL.md):
 *   |err| <= fan_in / (2 * scale) = fan_in^2 * 2^e / (2 * INT32_MAX)
 * plus one fp32 rounding of the result. */
#ifndef INA_BFP_H
#define INA_BFP_H

#include <stddef.h>
#include <stdint.h>

#define INA_BFP_EXP_MIN (-126)
#define INA_BFP_EXP_MAX 127

/* Smallest e in [INA_BFP_EXP_MIN, INA_BFP_EXP_MAX] with |x[i]| < 2^e for
 * all i.  0 or -EDOM if a value is NaN, infinite or too large. */
int ina_bfp_exponent(const float *x, size_t n, int8_t *e);

/* The bound above, for documentation and tests. */
double ina_bfp_error_bound(int8_t e, unsigned fan_in);

/* x -> wire-order int32 mantissas (out: n * 4 bytes, any alignment).
 * Values are expected to satisfy |x| < 2^e; larger ones saturate. */
void ina_bfp_quantize(const float *x, size_t n, int8_t e, unsigned fan_in, uint8_t *out);

/* wire-order int32 sums -> fp32. */
void ina_bfp_dequantize(const uint8_t *in, size_t n, int8_t e, unsigned fan_in, float *x);

#endif
