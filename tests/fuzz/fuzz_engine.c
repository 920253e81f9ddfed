/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: decode + validate + engine processing.
 *
 * Input: 4 bytes of configuration, then records.  A record starts with a
 * source byte (which member, the parent, or a stranger sent it) and a mode
 * byte: raw mode feeds the following bytes as a UDP payload; field mode
 * builds a well-formed header from the following bytes so the fuzzer
 * reaches the slot logic quickly.  After every packet the target checks
 * invariants that must hold whatever arrives and aborts if one breaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ina_engine.h"

static struct ina_emits out;
static uint8_t pkt[INA_HDR_LEN + INA_MAX_PAYLOAD];

#define CHECK(c)                 \
	do {                     \
		if (!(c))        \
			abort(); \
	} while (0)

static struct ina_addr addr_of(unsigned i)
{
	struct ina_addr a = { .ip = 0x0a000001u + i, .port = 0xE0BE };
	return a;
}

struct reader {
	const uint8_t *p;
	size_t n;
};

static unsigned take(struct reader *r, unsigned bytes)
{
	unsigned v = 0;
	while (bytes--) {
		v = v << 8 | (r->n ? *r->p : 0);
		if (r->n) {
			r->p++;
			r->n--;
		}
	}
	return v;
}

static void check_emits(void)
{
	static uint8_t again[INA_HDR_LEN + INA_MAX_PAYLOAD];

	CHECK(out.n <= INA_MAX_EMITS);
	for (unsigned i = 0; i < out.n; i++) {
		const struct ina_emit *e = &out.e[i];
		struct ina_pkt p;
		/* ACK, HAVE and MISS name a slice and carry none of it */
		bool bare = e->hdr.type == INA_T_ACK || e->hdr.type == INA_T_HAVE || e->hdr.type == INA_T_MISS;
		CHECK(e->payload_len == (bare ? 0 : (size_t)e->hdr.count * ina_wire_elem_size(e->hdr.dtype)));
		CHECK(e->payload_len <= INA_MAX_PAYLOAD);
		/* what the engine emits is itself a valid packet */
		ina_hdr_encode(&e->hdr, again);
		memcpy(again + INA_HDR_LEN, e->payload, e->payload_len);
		CHECK(ina_parse(again, INA_HDR_LEN + e->payload_len, &p) == INA_OK);
	}
}

/* Each contributor is counted once per slice: a completion needs fan_in
 * contributions, and a partial slot (or one given up, reclaimed) holds
 * fewer than fan_in. */
static void check_counts(const struct ina_engine *eng, uint16_t id, unsigned fan_in)
{
	const struct ina_job_stats *st = ina_job_stats(eng, id);
	uint64_t busy = ina_job_slots_busy(eng, id);
	CHECK(st->completions * fan_in <= st->contributions);
	CHECK(st->contributions <= (st->completions + busy + st->reclaimed) * fan_in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { data, size };
	unsigned fan_in = 1 + take(&r, 1) % 70; /* > 64 reaches the second bitmap word */
	unsigned mode = take(&r, 1);
	uint16_t elems = (uint16_t)(1 + take(&r, 1) * 9 % INA_MAX_ELEMS);
	uint32_t nslots = 1 + take(&r, 1) % 4;
	uint8_t dtype = (uint8_t)(1 + mode % 4);

	/* one engine for the whole run: install resets a job's slots, and
	 * reusing it also checks that remove leaves nothing behind */
	static struct ina_engine *eng;
	if (!eng)
		eng = ina_engine_create(8, INA_MAX_ELEMS);
	CHECK(eng);
	const struct ina_engine_stats base = *ina_engine_stats(eng);
	static struct ina_job_cfg a, b;
	memset(&a, 0, sizeof(a));
	a.id = 1;
	a.fan_in = (uint16_t)fan_in;
	a.dtype = dtype;
	a.nslots = nslots;
	a.elems_per_slot = elems;
	a.outputs = (mode >> 2 & 1 ? INA_OUT_MULTICAST : 0) | (mode >> 3 & 1 ? INA_OUT_FORWARD : 0);
	if (!a.outputs)
		a.outputs = INA_OUT_MULTICAST;
	if (mode >> 5 & 1) /* gap reports */
		a.outputs |= INA_OUT_MISS;
	if ((mode >> 7 & 1) && (a.outputs & INA_OUT_MISS)) /* idle reports too */
		a.idle_miss_us = 1000;
	a.upstream_index = (mode >> 4 & 1) ? (int)fan_in - 1 : -1;
	a.forward.addr = addr_of(300);
	for (unsigned i = 0; i < fan_in; i++)
		a.contributors[i] = addr_of(i);
	CHECK(ina_job_install(eng, &a, NULL) == 0);
	/* job 2: a ToR job under a parent PS, sharing some members with job 1 */
	b = a;
	b.id = 2;
	b.fan_in = (uint16_t)(fan_in < 3 ? fan_in : 3);
	b.outputs = INA_OUT_PS | (mode >> 6 & 1 ? INA_OUT_MISS : 0);
	b.upstream_index = -1;
	b.idle_miss_us = 0;
	b.parent = (struct ina_peer){ .addr = addr_of(200), .job = 2, .contributor = 0 };
	CHECK(ina_job_install(eng, &b, NULL) == 0);

	static uint64_t now_ns;
	while (r.n) {
		unsigned who = take(&r, 1), how = take(&r, 1);
		if (who == 248 || who == 249) {
			/* time passes (up to 2.5 ms: idle reports may come due, or
			 * 5 s: idle slots may be reclaimed) */
			now_ns += (uint64_t)how * (who == 248 ? 10000u : 20000000u);
			ina_engine_set_time(eng, now_ns);
			ina_engine_poll(eng, &out);
			check_emits();
			for (unsigned i = 0; i < out.n; i++)
				CHECK(out.e[i].hdr.type == INA_T_MISS && (out.e[i].hdr.flags & INA_F_IDLE));
			continue;
		}
		struct ina_addr src = who < 250	   ? addr_of(who % (fan_in + 1))
				      : who == 250 ? addr_of(200)
						   : addr_of(1000);
		size_t len;
		if (how & 1) {
			len = take(&r, 2) % (sizeof(pkt) + 1);
			if (len > r.n)
				len = r.n;
			memcpy(pkt, r.p, len);
			r.p += len;
			r.n -= len;
		} else {
			struct ina_hdr h = {
				.version = INA_VERSION,
				.type = (uint8_t)(1 + (how >> 1) % 8),
				.dtype = (how >> 4 & 3) ? dtype : (uint8_t)(1 + (how >> 6) % 4),
				.flags = (uint8_t)(take(&r, 1) & INA_F_ALL_),
				.job = (uint16_t)(1 + (how >> 6 & 1)),
				.contributor = (uint16_t)take(&r, 1),
				.slot = take(&r, 1),
				.epoch = take(&r, 1) % 3,
				.seq = take(&r, 1) % 8,
				.count = (uint16_t)(1 + take(&r, 2) % elems),
			};
			if (h.contributor == 0xff)
				h.contributor = INA_CONTRIB_UPSTREAM;
			h.slot = (h.slot & 0x7) | (h.slot & 0x80 ? INA_SLOT_SET_BIT : 0);
			if (h.dtype == INA_D_BFP32)
				h.exponent = (int8_t)take(&r, 1);
			if (h.type == INA_T_CONTROL)
				h.dtype = INA_D_NONE;
			ina_hdr_encode(&h, pkt);
			len = INA_HDR_LEN;
			if (h.type == INA_T_DATA || h.type == INA_T_RESULT) {
				size_t plen = (size_t)h.count * ina_wire_elem_size(h.dtype);
				for (size_t i = 0; i < plen; i++)
					pkt[INA_HDR_LEN + i] = r.n ? r.p[i % r.n] : (uint8_t)i;
				len += plen;
			}
		}
		enum ina_reason res = ina_engine_rx(eng, pkt, len, &src, &out);
		CHECK(res < INA_R_MAX_);
		CHECK(res == INA_OK || out.n == 0);
		check_emits();
		check_counts(eng, 1, a.fan_in);
		check_counts(eng, 2, b.fan_in);
	}
	const struct ina_engine_stats *st = ina_engine_stats(eng);
	uint64_t drops = 0;
	for (int i = 0; i < INA_R_MAX_; i++)
		drops += st->drops[i] - base.drops[i];
	/* every packet accounted for: taken or dropped under a reason */
	CHECK(st->accepted - base.accepted + drops == st->rx_packets - base.rx_packets);
	CHECK(ina_job_remove(eng, 1) == 0 && ina_job_remove(eng, 2) == 0);
	return 0;
}
