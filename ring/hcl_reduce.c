/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_reduce.h"

#include "cpu_dispatch.h"

CPU_DISPATCH void hcl_reduce_i32(uint32_t *restrict dst, const uint32_t *restrict src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += src[i];
}

CPU_DISPATCH void hcl_reduce_f32(float *restrict dst, const float *restrict src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] += src[i];
}

CPU_DISPATCH void hcl_reduce3_i32(uint32_t *restrict dst, const uint32_t *restrict a, const uint32_t *restrict b,
				  size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = a[i] + b[i];
}

CPU_DISPATCH void hcl_reduce3_f32(float *restrict dst, const float *restrict a, const float *restrict b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = a[i] + b[i];
}
