/* SPDX-License-Identifier: BSD-3-Clause */
/* Link emulation for one egress port: rate, buffer with tail drop,
 * propagation delay, jitter, random and bursty loss.  Pure C with the clock
 * passed in (ns), so tests drive it with synthetic time.
 *
 * The rate is enforced by serialisation: a packet's departure time is
 * max(arrival, previous departure) + bits / rate, i.e. a token bucket one
 * packet deep; the buffer holds the bytes that have arrived but not yet
 * departed.  A packet is released to the peer at departure + delay +
 * uniform(0, jitter), never before the packet ahead of it (order kept).
 * With cfg.ecn, a packet that arrives while the buffer holds more than
 * that share of it is to be marked (sw_netem_marks), as DCTCP's and
 * ATP's switches mark on the instantaneous queue. */
#ifndef SW_NETEM_H
#define SW_NETEM_H

#include <stdbool.h>
#include <stdint.h>

#include "sw_cfg.h"

enum sw_netem_verdict {
	SW_NETEM_QUEUED = 0,
	SW_NETEM_DROP_LOSS,	/* emulated random or bursty loss */
	SW_NETEM_DROP_BUFFER,	/* buffer full: tail drop */
	SW_NETEM_DROP_INFLIGHT, /* more packets in flight than the emulator holds */
};

struct sw_netem_item {
	void *pkt;
	uint32_t len;
	uint64_t depart_ns;
	uint64_t release_ns;
};

struct sw_netem {
	struct netem_cfg cfg;
	bool active;
	uint32_t cap;		      /* ring size, a power of two */
	uint32_t head, backlog, tail; /* release ... buffer ... */
	struct sw_netem_item *ring;
	uint64_t backlog_bytes;
	uint64_t ecn_bytes; /* mark past this backlog; 0: never */
	uint64_t last_depart_ns, last_release_ns;
	uint64_t rng;
	bool ge_bad;
	/* a line the partitions of a switch share (sw_netem_share_wire): when
	 * the last departure any of them queued ends; NULL: its own
	 * (last_depart_ns) */
	uint64_t *wire_ns;
};

/* cap_pkts: packets the emulator may hold (rounded up to a power of two). */
int sw_netem_init(struct sw_netem *e, const struct netem_cfg *cfg, uint32_t cap_pkts, uint64_t seed);
void sw_netem_free(struct sw_netem *e);
/* One port of a switch on several lcores: each partition holds its own
 * frames, but their departures follow each other on one line, *wire_ns
 * (0 at first; every partition's emulator points to it), and the buffer
 * is what that line has yet to send, whoever queued it.  Departure order
 * between partitions is the order of their enqueues. */
void sw_netem_share_wire(struct sw_netem *e, uint64_t *wire_ns);
/* Replaces the parameters at run time (now_ns: the datapath's clock); what
 * is queued is re-timed by the new rate and delay (on a shared line, after
 * what it has yet to send: set it to now_ns first, then every sharer). */
void sw_netem_set(struct sw_netem *e, const struct netem_cfg *cfg, uint64_t now_ns);
/* True when any emulation is configured (otherwise bypass the emulator). */
static inline bool sw_netem_active(const struct sw_netem *e) { return e->active; }

/* Whether a packet arriving now is to be marked congestion-experienced
 * (before its sw_netem_enqueue). */
bool sw_netem_marks(struct sw_netem *e, uint64_t now_ns);
enum sw_netem_verdict sw_netem_enqueue(struct sw_netem *e, void *pkt, uint32_t len, uint64_t now_ns);
/* Up to max packets whose release time has come, in order. */
unsigned sw_netem_dequeue(struct sw_netem *e, uint64_t now_ns, void **out, unsigned max);
/* Release time of the next packet, or UINT64_MAX when empty. */
uint64_t sw_netem_next_ns(const struct sw_netem *e);
uint32_t sw_netem_held(const struct sw_netem *e);

#endif
