#include "ina_kernels.h"

#include <string.h>

/* A 4-byte load that may sit at any address: packet payloads start at
 * offset 66 of the frame, so they are only 2-byte aligned. */
typedef uint32_t u32_any __attribute__((aligned(1), may_alias));

static inline uint32_t ld(const uint8_t *src, unsigned i)
{
	return __builtin_bswap32(((const u32_any *)src)[i]);
}

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

void ina_k_load(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = ld(src, i);
}

/* Signed overflow of a + b shows as a sum whose sign differs from both
 * operands; the sign bits are OR-ed so the loop has no branch. */
uint32_t ina_k_add_i32(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
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

uint32_t ina_k_add_i32_final(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
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

void ina_k_add_f32(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = as_u32(as_f32(dst[i]) + as_f32(ld(src, i)));
}

void ina_k_add_f32_final(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = __builtin_bswap32(as_u32(as_f32(dst[i]) + as_f32(ld(src, i))));
}

void ina_k_to_wire(uint32_t *dst, unsigned n)
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

uint16_t ina_f32_to_bf16(uint32_t f)
{
	if ((f & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it one (quiet bit set) */
		return (uint16_t)(f >> 16 | 0x40);
	return (uint16_t)((f + 0x7fffu + (f >> 16 & 1)) >> 16);
}

void ina_k_load_bf16(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = ld_bf16(src, i);
}

void ina_k_add_bf16(uint32_t *restrict dst, const uint8_t *restrict src, unsigned n)
{
	dst = __builtin_assume_aligned(dst, 64);
	for (unsigned i = 0; i < n; i++)
		dst[i] = as_u32(as_f32(dst[i]) + as_f32(ld_bf16(src, i)));
}

/* In blocks through a buffer: block k's output (bytes 128k..) ends before
 * block k+1's input (bytes 256(k+1)..) starts, so nothing unread is
 * overwritten, and the loops stay free of aliasing. */
void ina_k_to_wire_bf16(uint32_t *dst, unsigned n)
{
	enum { B = 64 };
	uint8_t *out = (uint8_t *)dst;
	for (unsigned k = 0; k < n; k += B) {
		uint16_t blk[B];
		unsigned m = n - k < B ? n - k : B;
		for (unsigned i = 0; i < m; i++)
			blk[i] = __builtin_bswap16(ina_f32_to_bf16(dst[k + i]));
		memcpy(out + 2 * (size_t)k, blk, 2 * (size_t)m);
	}
}
