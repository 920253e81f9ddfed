/* SPDX-License-Identifier: BSD-3-Clause */
/* The element loops of the host's reductions (dst += src), in host order.
 * Apart so that they are compiled to vector code, and so that the transfer
 * can add a packet into place as it arrives. */
#ifndef HCL_REDUCE_H
#define HCL_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_dispatch.h"

/* int32 wraps, as in the switch (docs/ENGINE.md) */
CPU_DISPATCH_DECL void hcl_reduce_i32(uint32_t *restrict dst, const uint32_t *restrict src, size_t n);
CPU_DISPATCH_DECL void hcl_reduce_f32(float *restrict dst, const float *restrict src, size_t n);
/* dst = a + b: the first add of an out-of-place call, which spares it a
 * copy of its input; dst overlaps neither */
CPU_DISPATCH_DECL void hcl_reduce3_i32(uint32_t *restrict dst, const uint32_t *restrict a, const uint32_t *restrict b,
				       size_t n);
CPU_DISPATCH_DECL void hcl_reduce3_f32(float *restrict dst, const float *restrict a, const float *restrict b, size_t n);

#endif
