/* SPDX-License-Identifier: BSD-3-Clause */
/* The element loops of the host's reductions (dst += src), in host order.
 * Apart so that they are compiled to vector code, and so that the transfer
 * can add a packet into place as it arrives. */
#ifndef HCL_REDUCE_H
#define HCL_REDUCE_H

#include <stddef.h>
#include <stdint.h>

/* int32 wraps, as in the switch (docs/ENGINE.md) */
void hcl_reduce_i32(uint32_t *restrict dst, const uint32_t *restrict src, size_t n);
void hcl_reduce_f32(float *restrict dst, const float *restrict src, size_t n);

#endif
