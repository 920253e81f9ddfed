/* SPDX-License-Identifier: BSD-3-Clause */
/* The floors of swemu-bench: what they are and why, sw_bench_floor.h. */
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>

#include "ina_kernels.h"
#include "ina_proto.h"
#include "sw_bench_floor.h"
#include "sw_frame.h"
#include "sw_rt.h"

#define OFF_IP	 SW_ETH_HLEN
#define OFF_UDP	 (SW_ETH_HLEN + SW_IP_HLEN)
#define OFF_INA	 (OFF_UDP + SW_UDP_HLEN)
#define OFF_DATA (OFF_INA + INA_HDR_LEN)
#define BURST	 32
#define OUT_MAX	 64

static uint16_t be16_at(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint32_t be32_at(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return rte_be_to_cpu_32(v);
}

static uint64_t word_at(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* What one pass sends, per output port. */
struct floor_out {
	struct rte_mbuf *m[FLOOR_PORTS][OUT_MAX];
	unsigned n[FLOOR_PORTS];
};

static void out_send(struct bench_floor *fl, struct floor_out *o, unsigned p)
{
	uint16_t sent = rte_eth_tx_burst(fl->port_id[p], fl->queue, o->m[p], (uint16_t)o->n[p]);
	if (sent < o->n[p]) {
		fl->refused += o->n[p] - sent;
		rte_pktmbuf_free_bulk(o->m[p] + sent, o->n[p] - sent);
	}
	o->n[p] = 0;
}

static inline void out_add(struct bench_floor *fl, struct floor_out *o, unsigned p, struct rte_mbuf *m)
{
	o->m[p][o->n[p]++] = m;
	if (o->n[p] == OUT_MAX)
		out_send(fl, o, p);
}

static void out_flush(struct bench_floor *fl, struct floor_out *o)
{
	for (unsigned p = 0; p < FLOOR_PORTS; p++)
		if (o->n[p])
			out_send(fl, o, p);
}

unsigned bench_floor_l2(struct bench_floor *fl)
{
	struct rte_mbuf *pkts[BURST];
	struct floor_out o;
	memset(o.n, 0, sizeof(o.n)); /* not the 2 KiB of pointers: a pass sends a few */
	unsigned work = 0;
	for (unsigned p = 0; p < FLOOR_PORTS; p++) {
		uint16_t n = rte_eth_rx_burst(fl->port_id[p], fl->queue, pkts, BURST);
		for (uint16_t k = 0; k < n; k++) {
			const uint8_t *f = rte_pktmbuf_mtod(pkts[k], const uint8_t *);
			if (fl->fdb[f[5]].mac == sw_mac64_at(f)) {
				out_add(fl, &o, (unsigned)fl->fdb[f[5]].port, pkts[k]);
			} else {
				fl->refused++;
				rte_pktmbuf_free(pkts[k]);
			}
		}
		out_flush(fl, &o);
		work += n;
	}
	return work;
}

/* Whether a frame's first 50 bytes are what its member's frames repeat:
 * 0-31 under fl->mask, 32-35 (the IPv4 destination's end, the UDP source
 * port), 42-49 (the INA header's version, type, dtype, flags, job and
 * contributor); the UDP destination port and lengths are checked apart. */
static bool headers_are_members(const struct bench_floor *fl, const uint8_t *f, const uint8_t *t)
{
	uint64_t diff = 0;
	for (unsigned w = 0; w < 4; w++)
		diff |= (word_at(f + 8 * w) ^ word_at(t + 8 * w)) & fl->mask[w];
	diff |= (uint64_t)(be32_at(f + 32) ^ be32_at(t + 32)); /* the IPv4 destination's end, UDP source port */
	diff |= word_at(f + OFF_INA) ^ word_at(t + OFF_INA);
	return diff == 0;
}

/* A frame the checked floor takes: its member's headers, good lengths and
 * checksum (its slot's range is every floor's check). */
static bool frame_ok(const struct bench_floor *fl, const struct rte_mbuf *m, const uint8_t *f)
{
	if (m->nb_segs != 1 || m->data_len < OFF_DATA)
		return false;
	const unsigned c = be16_at(f + OFF_INA + 6), tot = be16_at(f + OFF_IP + 2), ulen = be16_at(f + OFF_UDP + 4);
	const uint16_t dport = be16_at(f + OFF_UDP + 2);
	return c < fl->fan_in && headers_are_members(fl, f, fl->member[c]) &&
	       sw_csum_fold_native(sw_csum_words(f + OFF_IP, SW_IP_HLEN / 4)) == 0xffff &&
	       tot + SW_ETH_HLEN == m->data_len && ulen + SW_IP_HLEN == tot &&
	       ulen == SW_UDP_HLEN + INA_HDR_LEN + fl->elems * 4u && be16_at(f + OFF_UDP + 6) == 0 &&
	       be16_at(f + OFF_INA + 20) == fl->elems && dport >= INA_UDP_PORT_MIN && dport <= INA_UDP_PORT_MAX;
}

/* The slice the slot collects, and a contributor not yet in it. */
static bool slice_ok(struct floor_slot *s, const uint8_t *f)
{
	const unsigned c = be16_at(f + OFF_INA + 6);
	const uint32_t epoch = be32_at(f + OFF_INA + 12), seq = be32_at(f + OFF_INA + 16);
	if (s->count == 0) {
		s->epoch = epoch;
		s->seq = seq;
		memset(s->bits, 0, sizeof(s->bits));
	} else if (s->epoch != epoch || s->seq != seq || (s->bits[c / 64] >> (c % 64) & 1)) {
		return false;
	}
	s->bits[c / 64] |= 1ull << (c % 64);
	return true;
}

/* Where a slot of long elements makes its sum: its mbuf when no frame
 * holds it any more, else a fresh one (swemu's held_get).  NULL: in slot
 * memory, copied into each frame. */
static uint32_t *sum_buffer(struct floor_slot *s, struct rte_mempool *pool, size_t plen)
{
	if (plen <= SW_SHARE_MIN)
		return NULL;
	if (s->sum && rte_mbuf_refcnt_read(s->sum) != 1) {
		rte_pktmbuf_free(s->sum);
		s->sum = NULL;
	}
	if (!s->sum && (s->sum = rte_pktmbuf_alloc(pool)) &&
	    (rte_pktmbuf_tailroom(s->sum) < plen || (uintptr_t)rte_pktmbuf_mtod(s->sum, void *) % 64)) {
		rte_pktmbuf_free(s->sum);
		s->sum = NULL;
	}
	if (!s->sum)
		return NULL;
	s->sum->data_len = (uint16_t)plen;
	s->sum->pkt_len = (uint32_t)plen;
	return rte_pktmbuf_mtod(s->sum, uint32_t *);
}

/* Each held frame back to its sender with the sum: addresses and ports
 * swapped (the IPv4 checksum stays), type RESULT. */
static void complete(struct bench_floor *fl, struct floor_slot *s, const uint32_t *sum, struct floor_out *o)
{
	const size_t plen = (size_t)fl->elems * 4;
	const bool chained = s->sum && rte_pktmbuf_mtod(s->sum, const uint32_t *) == sum;
	if (chained)
		rte_mbuf_refcnt_update(s->sum, (int16_t)s->count);
	for (unsigned c = 0; c < s->count; c++) {
		uint8_t *g = rte_pktmbuf_mtod(s->held[c], uint8_t *), t[8];
		memcpy(t, g, 6);
		memcpy(g, g + 6, 6);
		memcpy(g + 6, t, 6);
		memcpy(t, g + OFF_IP + 12, 8);
		memcpy(g + OFF_IP + 12, t + 4, 4);
		memcpy(g + OFF_IP + 16, t, 4);
		memcpy(t, g + OFF_UDP, 4);
		memcpy(g + OFF_UDP, t + 2, 2);
		memcpy(g + OFF_UDP + 2, t, 2);
		g[OFF_INA + 1] = INA_T_RESULT;
		if (chained) {
			struct rte_mbuf *h = s->held[c];
			h->data_len = OFF_DATA;
			h->pkt_len = (uint32_t)(OFF_DATA + plen);
			h->next = s->sum;
			h->nb_segs = 2;
		} else {
			memcpy(g + OFF_DATA, sum, plen);
		}
		out_add(fl, o, s->from[c], s->held[c]);
	}
	fl->completions++;
	fl->wrong += sum[0] != fl->sums[2 * (size_t)fl->window * fl->elems] ||
		     sum[fl->elems - 1] != fl->sums[2 * (size_t)fl->window * fl->elems + 1];
	s->count = 0;
}

unsigned bench_floor_ina(struct bench_floor *fl)
{
	struct rte_mbuf *pkts[BURST];
	struct floor_out o;
	memset(o.n, 0, sizeof(o.n)); /* not the 2 KiB of pointers: a pass sends a few */
	const unsigned n_in = fl->fan_in, elems = fl->elems;
	const size_t plen = (size_t)elems * 4;
	unsigned work = 0;
	for (unsigned p = 0; p < FLOOR_PORTS; p++) {
		uint16_t n = rte_eth_rx_burst(fl->port_id[p], fl->queue, pkts, BURST);
		for (uint16_t k = 0; k < n; k++) {
			struct rte_mbuf *m = pkts[k];
			const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
			const uint32_t slot = be32_at(f + OFF_INA + 8), index = ina_slot_index(slot);
			const size_t at = (size_t)index * 2 + ina_slot_set(slot);
			struct floor_slot *s = index < fl->window ? &fl->slots[at] : NULL;
			if (!s || (fl->checked && (!frame_ok(fl, m, f) || !slice_ok(s, f)))) {
				fl->refused++;
				rte_pktmbuf_free(m);
				continue;
			}
			uint32_t *sum = s->count && s->sum ? rte_pktmbuf_mtod(s->sum, uint32_t *)
							   : fl->sums + at * elems;
			if (s->count == 0 && plen > SW_SHARE_MIN) {
				uint32_t *b = sum_buffer(s, m->pool, plen);
				sum = b ? b : sum;
			}
			const uint8_t *data = f + OFF_DATA;
			if (n_in == 1)
				memcpy(sum, data, (size_t)elems * 4);
			else if (s->count == 0)
				ina_k_load(sum, data, elems);
			else if (s->count + 1 == n_in)
				ina_k_add_i32_final(sum, data, elems);
			else
				ina_k_add_i32(sum, data, elems);
			s->held[s->count] = m;
			s->from[s->count++] = (uint8_t)p;
			if (s->count == n_in)
				complete(fl, s, sum, &o);
		}
		out_flush(fl, &o);
		work += n;
	}
	return work;
}

int bench_floor_init(struct bench_floor *fl, unsigned fan_in, unsigned elems, unsigned window, bool checked,
		     const uint16_t *port_id, uint16_t queue, struct rte_mbuf *const *tmpl)
{
	memset(fl, 0, sizeof(*fl));
	if (fan_in == 0 || fan_in > 256 || elems == 0 || window == 0)
		return -1;
	fl->fan_in = fan_in;
	fl->elems = elems;
	fl->window = window;
	fl->checked = checked;
	fl->queue = queue;
	memcpy(fl->port_id, port_id, sizeof(fl->port_id));
	/* hosts 0..fan_in: MAC 02:00:00:00:(c >> 8):c, on port c % 4 */
	memset(fl->fdb, 0xff, sizeof(fl->fdb));
	for (unsigned c = 0; c <= fan_in && c < 256; c++) {
		const uint8_t mac[6] = { 2, 0, 0, 0, (uint8_t)(c >> 8), (uint8_t)c };
		fl->fdb[c].mac = sw_mac64(mac);
		fl->fdb[c].port = c % FLOOR_PORTS;
	}
	/* bytes 16-19 (IPv4 length, id) and 24-25 (its checksum) change */
	uint8_t mask[32];
	memset(mask, 0xff, sizeof(mask));
	memset(mask + 16, 0, 4);
	memset(mask + 24, 0, 2);
	memcpy(fl->mask, mask, sizeof(mask));
	const size_t nslots = 2 * (size_t)window, sum_bytes = (nslots * elems + 16) * 4;
	fl->member = calloc(fan_in, sizeof(*fl->member));
	fl->slots = calloc(nslots, sizeof(*fl->slots));
	fl->sums = aligned_alloc(64, (sum_bytes + 63) / 64 * 64);
	if (!fl->member || !fl->slots || !fl->sums) {
		bench_floor_fini(fl);
		return -1;
	}
	for (size_t i = 0; i < nslots; i++) {
		fl->slots[i].held = calloc(fan_in, sizeof(*fl->slots[i].held));
		fl->slots[i].from = calloc(fan_in, 1);
		if (!fl->slots[i].held || !fl->slots[i].from) {
			bench_floor_fini(fl);
			return -1;
		}
	}
	/* each member's headers, and the sum every slot must come to (its
	 * first and last elements, in wire order, after the slots' memory) */
	uint32_t first = 0, last = 0;
	for (unsigned c = 0; c < fan_in; c++) {
		const uint8_t *f = rte_pktmbuf_mtod(tmpl[(size_t)c * window], const uint8_t *);
		memcpy(fl->member[c], f, RTE_MIN((size_t)FLOOR_HEAD, (size_t)tmpl[(size_t)c * window]->data_len));
		first += be32_at(f + OFF_DATA);
		last += be32_at(f + OFF_DATA + 4 * (elems - 1));
	}
	fl->sums[nslots * elems] = rte_cpu_to_be_32(first);
	fl->sums[nslots * elems + 1] = rte_cpu_to_be_32(last);
	return 0;
}

void bench_floor_fini(struct bench_floor *fl)
{
	if (fl->slots)
		for (size_t i = 0; i < 2 * (size_t)fl->window; i++) {
			for (unsigned c = 0; c < fl->slots[i].count; c++)
				rte_pktmbuf_free(fl->slots[i].held[c]);
			rte_pktmbuf_free(fl->slots[i].sum);
			free(fl->slots[i].held);
			free(fl->slots[i].from);
		}
	free(fl->slots);
	free(fl->member);
	free(fl->sums);
	fl->slots = NULL;
	fl->member = NULL;
	fl->sums = NULL;
}
