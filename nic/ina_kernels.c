/* SPDX-License-Identifier: BSD-3-Clause */
#include "ina_kernels.h"

#include "cpu_dispatch.h"

#include <stdbool.h>
#include <string.h>

/* A 4-byte load that may sit at any address: packet payloads start at
 * offset 66 of the frame, so they are only 2-byte aligned. */
typedef uint32_t u32_any __attribute__((aligned(1), may_alias));

static inline uint32_t ld(const uint8_t *src, unsigned i) { return __builtin_bswap32(((const u32_any *)src)[i]); }

static inline float as_f32(uint32_t v)
{
	float f;
	memcpy(&f, &v, sizeof f);
	return f;
}

static inline uint32_t as_u32(float f)
{
	uint32_t v;
	memcpy(&v, &f, sizeof v);
	return v;
}

CPU_DISPATCH void ina_k_load(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = ld(src, i);
}

/* Signed overflow of a + b shows as a sum whose sign differs from both
 * operands; the sign bits are OR-ed so the loop has no branch. */
CPU_DISPATCH uint32_t ina_k_add_i32(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	uint32_t ovf = 0;

	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++) {
		uint32_t a = dst[i], b = ld(src, i), s = a + b;
		ovf |= (a ^ s) & (b ^ s);
		dst[i] = s;
	}
	return ovf >> 31;
}

CPU_DISPATCH uint32_t ina_k_add_i32_final(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	uint32_t ovf = 0;

	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++) {
		uint32_t a = dst[i], b = ld(src, i), s = a + b;
		ovf |= (a ^ s) & (b ^ s);
		dst[i] = __builtin_bswap32(s);
	}
	return ovf >> 31;
}

CPU_DISPATCH void ina_k_add_f32(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = as_u32(as_f32(dst[i]) + as_f32(ld(src, i)));
}

CPU_DISPATCH void ina_k_add_f32_final(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = __builtin_bswap32(as_u32(as_f32(dst[i]) + as_f32(ld(src, i))));
}

CPU_DISPATCH void ina_k_to_wire(uint32_t *dst, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = __builtin_bswap32(dst[i]);
}

/* ---- bfloat16 ---- */

typedef uint16_t u16_any __attribute__((aligned(1), may_alias));

static inline uint32_t ld_bf16(const uint8_t *src, unsigned i)
{
	return (uint32_t)__builtin_bswap16(((const u16_any *)src)[i]) << 16;
}

/* Static, so the loops below inline it: the exported name may be
 * interposed in a PIC build, and a call per element cost 40x. */
static inline uint16_t f32_to_bf16(uint32_t f)
{
	uint16_t nan = (uint16_t)(f >> 16 | 0x40); /* NaN: keep it one (quiet bit set) */
	uint16_t rne = (uint16_t)((f + 0x7fffu + (f >> 16 & 1)) >> 16);
	return (f & 0x7fffffffu) > 0x7f800000u ? nan : rne;
}

uint16_t ina_f32_to_bf16(uint32_t f) { return f32_to_bf16(f); }

CPU_DISPATCH void ina_k_load_bf16(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = ld_bf16(src, i);
}

CPU_DISPATCH void ina_k_add_bf16(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = as_u32(as_f32(dst[i]) + as_f32(ld_bf16(src, i)));
}

/* Results in wire bf16 at the start of dst, where the binary32 partial
 * was: element i's 2 bytes land at 2i, over the input of element i/2.  In
 * blocks of 64: from the second block on, a block's output (bytes 2k..2k+128)
 * lies below its input (4k..), and everything it overwrites was read by an
 * earlier block, so the block's pointers may be restrict and the loop
 * vectorises; the first block, whose output covers its own input, goes
 * through a buffer.  Blocks are addressed by pointer: an unsigned k + i
 * index had made the loads a gather emulated element by element. */
enum { BF16_BLOCK = 64 };
typedef uint16_t u16_out __attribute__((may_alias));

static inline __attribute__((always_inline)) void bf16_run(u16_out *restrict out, const uint32_t *restrict in,
							   const uint8_t *restrict src, unsigned m, bool add)
{
	for (unsigned i = 0; i < m; i++) {
		uint32_t v = add ? as_u32(as_f32(in[i]) + as_f32(ld_bf16(src, i))) : in[i];
		out[i] = __builtin_bswap16(f32_to_bf16(v));
	}
}

static inline __attribute__((always_inline)) void bf16_finish(uint32_t *dst, const uint8_t *src, unsigned n, bool add)
{
	u16_out *out = (u16_out *)dst;
	uint16_t blk[BF16_BLOCK];
	size_t first = n < BF16_BLOCK ? n : BF16_BLOCK;
	bf16_run(blk, dst, src, (unsigned)first, add);
	memcpy(out, blk, 2 * first);
	for (size_t k = first; k < n; k += BF16_BLOCK)
		bf16_run(out + k, dst + k, add ? src + 2 * k : NULL,
			 n - k < BF16_BLOCK ? (unsigned)(n - k) : BF16_BLOCK, add);
}

CPU_DISPATCH void ina_k_to_wire_bf16(uint32_t *dst, unsigned n) { bf16_finish(dst, NULL, n, false); }

CPU_DISPATCH void ina_k_add_bf16_final(uint32_t *dst, const uint8_t *src, unsigned n)
{
	bf16_finish(dst, src, n, true);
}
