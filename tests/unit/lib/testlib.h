/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the unit tests: addresses, packet building, a seeded
 * RNG (tests are reproducible: the seed is printed on failure paths). */
#ifndef TESTLIB_H
#define TESTLIB_H

#include <stddef.h>
#include <stdint.h>

#include "ina_engine.h"
#include "ina_proto.h"

struct tl_rng {
	uint64_t s;
};

static inline uint64_t tl_next(struct tl_rng *r)
{
	/* xorshift64*: enough for test data, fully reproducible */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1Dull;
}

static inline uint32_t tl_below(struct tl_rng *r, uint32_t n) { return (uint32_t)(tl_next(r) % n); }

/* Address of test member i (10.0.x.y, port 0xBEE0). */
struct ina_addr tl_addr(unsigned i);

/* A job of fan_in members tl_addr(0..fan_in-1) with multicast output. */
struct ina_job_cfg tl_job(uint16_t id, unsigned fan_in, uint8_t dtype, uint32_t nslots, uint16_t elems);

/* Header of a DATA packet for (slot|set, epoch, seq). */
struct ina_hdr tl_hdr(uint8_t type, uint8_t dtype, uint16_t job, uint16_t contributor, uint32_t slot, uint32_t epoch,
		      uint32_t seq, uint16_t count);

/* Encodes hdr + elements (host order, converted to wire order) into buf;
 * returns the length.  vals may be NULL for an element-less packet. */
size_t tl_encode(uint8_t *buf, const struct ina_hdr *h, const uint32_t *vals, unsigned n);

/* Element i of a wire-order payload, in host order. */
uint32_t tl_elem(const uint8_t *payload, unsigned i);

/* The engine tests' packet buffer and the emits of the last packet. */
extern struct ina_emits tl_out;
extern uint8_t tl_pkt[INA_HDR_LEN + INA_MAX_PAYLOAD];
/* Sends a packet of h (DATA or RESULT with vals) from src through the
 * engine into tl_out; the engine's verdict. */
enum ina_reason tl_send(struct ina_engine *eng, const struct ina_addr *src, const struct ina_hdr *h,
			const uint32_t *vals);
/* out is the multicast of a complete slot of h: one RESULT per member of
 * cfg, holding want (overflow flagged or not). */
void tl_assert_results(const struct ina_emits *out, const struct ina_job_cfg *cfg, const struct ina_hdr *h,
		       const uint32_t *want, int overflow);

#endif
