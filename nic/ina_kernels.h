/* SPDX-License-Identifier: BSD-3-Clause */
/* The element loops of the engine: byte-order conversion fused with the
 * add.  Slot memory holds host-order partial sums; the last contribution
 * stores the sum back in wire order, so a complete slot is sent (and
 * re-sent) by plain copy.  Written so that the compiler vectorises them
 * (see the engine benchmark); dst must be 64-byte aligned, src need not be. */
#ifndef INA_KERNELS_H
#define INA_KERNELS_H

#include <stdint.h>

#include "cpu_dispatch.h"

/* dst = host(src) */
CPU_DISPATCH_DECL void ina_k_load(uint32_t *dst, const uint8_t *src, unsigned n);
/* dst += host(src) as int32, wrapping; returns nonzero if any element
 * overflowed.  The _final variant stores the sum in wire order. */
CPU_DISPATCH_DECL uint32_t ina_k_add_i32(uint32_t *dst, const uint8_t *src, unsigned n);
CPU_DISPATCH_DECL uint32_t ina_k_add_i32_final(uint32_t *dst, const uint8_t *src, unsigned n);
/* dst += host(src) as IEEE binary32 (round to nearest even). */
CPU_DISPATCH_DECL void ina_k_add_f32(uint32_t *dst, const uint8_t *src, unsigned n);
CPU_DISPATCH_DECL void ina_k_add_f32_final(uint32_t *dst, const uint8_t *src, unsigned n);
/* dst = wire(dst): turns a host-order partial into a result in place. */
CPU_DISPATCH_DECL void ina_k_to_wire(uint32_t *dst, unsigned n);

/* bfloat16 (2 bytes on the wire, big-endian): slots hold binary32 partial
 * sums, so the result is rounded once (to nearest even), not per add. */
CPU_DISPATCH_DECL void ina_k_load_bf16(uint32_t *dst, const uint8_t *src, unsigned n);
CPU_DISPATCH_DECL void ina_k_add_bf16(uint32_t *dst, const uint8_t *src, unsigned n);
/* the binary32 partial in dst becomes n bf16 results in wire order at the
 * start of the same memory (2n bytes); _final adds src first */
CPU_DISPATCH_DECL void ina_k_to_wire_bf16(uint32_t *dst, unsigned n);
CPU_DISPATCH_DECL void ina_k_add_bf16_final(uint32_t *dst, const uint8_t *src, unsigned n);
/* binary32 bits -> bfloat16 bits, round to nearest even; NaN stays NaN */
uint16_t ina_f32_to_bf16(uint32_t f);

#endif
