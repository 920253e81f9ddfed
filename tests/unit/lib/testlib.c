/* SPDX-License-Identifier: BSD-3-Clause */
#include "testlib.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <string.h>

struct ina_addr tl_addr(unsigned i)
{
	struct ina_addr a = { .ip = htonl(0x0a000000u + 1 + i), .port = htons(INA_UDP_PORT_MIN) };
	a.mac[0] = 0x02;
	a.mac[5] = (uint8_t)i;
	return a;
}

struct ina_job_cfg tl_job(uint16_t id, unsigned fan_in, uint8_t dtype, uint32_t nslots, uint16_t elems)
{
	struct ina_job_cfg c;

	memset(&c, 0, sizeof(c));
	c.id = id;
	c.fan_in = (uint16_t)fan_in;
	c.dtype = dtype;
	c.nslots = nslots;
	c.elems_per_slot = elems;
	c.outputs = INA_OUT_MULTICAST;
	c.upstream_index = -1;
	for (unsigned i = 0; i < fan_in; i++)
		c.contributors[i] = tl_addr(i + 100u * id);
	return c;
}

struct ina_hdr tl_hdr(uint8_t type, uint8_t dtype, uint16_t job, uint16_t contributor, uint32_t slot, uint32_t epoch,
		      uint32_t seq, uint16_t count)
{
	return (struct ina_hdr){ .version = INA_VERSION,
				 .type = type,
				 .dtype = dtype,
				 .job = job,
				 .contributor = contributor,
				 .slot = slot,
				 .epoch = epoch,
				 .seq = seq,
				 .count = count };
}

size_t tl_encode(uint8_t *buf, const struct ina_hdr *h, const uint32_t *vals, unsigned n)
{
	ina_hdr_encode(h, buf);
	for (unsigned i = 0; vals && i < n; i++) {
		uint32_t w = htonl(vals[i]);
		memcpy(buf + INA_HDR_LEN + 4 * i, &w, 4);
	}
	return INA_HDR_LEN + (vals ? 4u * n : 0u);
}

uint32_t tl_elem(const uint8_t *payload, unsigned i)
{
	uint32_t w;
	memcpy(&w, payload + 4 * i, 4);
	return ntohl(w);
}

struct ina_emits tl_out;
uint8_t tl_pkt[INA_HDR_LEN + INA_MAX_PAYLOAD];

enum ina_reason tl_send(struct ina_engine *eng, const struct ina_addr *src, const struct ina_hdr *h,
			const uint32_t *vals)
{
	size_t len = tl_encode(tl_pkt, h, h->type == INA_T_DATA || h->type == INA_T_RESULT ? vals : NULL, h->count);
	return ina_engine_rx(eng, tl_pkt, len, src, &tl_out);
}

void tl_assert_results(const struct ina_emits *out, const struct ina_job_cfg *cfg, const struct ina_hdr *h,
		       const uint32_t *want, int overflow)
{
	assert_int_equal(out->n, cfg->fan_in);
	for (unsigned i = 0; i < out->n; i++) {
		const struct ina_emit *e = &out->e[i];
		assert_int_equal(e->hdr.type, INA_T_RESULT);
		assert_int_equal(e->hdr.contributor, i);
		assert_int_equal(e->dst.ip, cfg->contributors[i].ip);
		assert_int_equal(e->hdr.slot, h->slot);
		assert_int_equal(e->hdr.seq, h->seq);
		assert_int_equal(e->hdr.epoch, h->epoch);
		assert_int_equal(e->hdr.count, h->count);
		assert_int_equal(!!(e->hdr.flags & INA_F_OVERFLOW), overflow);
		assert_int_equal(e->payload_len, 4u * h->count);
		for (unsigned k = 0; k < h->count; k++)
			if (tl_elem(e->payload, k) != want[k])
				fail_msg("element %u: got %08x want %08x", k, tl_elem(e->payload, k), want[k]);
	}
}
