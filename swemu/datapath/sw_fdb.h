/* SPDX-License-Identifier: BSD-3-Clause */
/* The forwarding database of one logical switch: (VLAN, MAC) -> port,
 * learned from source addresses, aged out after a configured idle time;
 * static entries never age and never move.  The same MAC in two VLANs is
 * two entries.  A port learns at most port_limit MACs (so one host cannot
 * fill the table for all), and a MAC moves at most once a second (a host
 * sending from another's MAC cannot take its traffic back and forth at
 * frame rate).  Pure C (no DPDK), unit-tested. */
#ifndef SW_FDB_H
#define SW_FDB_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define SW_FDB_SIZE	 4096 /* entries; a power of two */
#define SW_FDB_MAX_PORTS 64   /* port numbers below this */

struct sw_fdb_slot {
	uint64_t key; /* 48-bit MAC, 1 << 48 when used, VLAN << 49 */
	uint32_t last_seen_s;
	uint32_t moved_s; /* when it last moved */
	int16_t port;
	bool is_static;
};

struct sw_fdb {
	uint32_t age_s;
	uint32_t n;
	uint32_t port_limit;		    /* learned MACs per port; 0: no limit */
	uint32_t learned[SW_FDB_MAX_PORTS]; /* learned (not static) entries per port */
	uint64_t full_drops;		    /* learn attempts refused: table full */
	uint64_t moves;			    /* MACs that moved to another port */
	uint64_t moves_damped;		    /* moves refused: the MAC moved this second */
	uint32_t changes;		    /* entries added, moved or removed: caches of answers compare it */
	/* the latest move, for the stats: a MAC that flaps between ports
	 * (a loop, a reflected frame, two hosts with one address) is named */
	struct sw_fdb_move {
		uint64_t key; /* sw_fdb_key; 0: none yet */
		int16_t from, to;
		uint32_t s;
	} last_move;
	struct sw_fdb_slot slot[SW_FDB_SIZE];
};

/* What sw_fdb_learn did with a source. */
enum sw_fdb_learnt {
	SW_FDB_KNOWN,	  /* learned or refreshed where it was */
	SW_FDB_MOVED,	  /* moved to this port */
	SW_FDB_KEPT,	  /* static, a group address, a move refused this second, or a full table */
	SW_FDB_PORT_FULL, /* a new MAC on a port at its limit: the frame is refused */
};

void sw_fdb_init(struct sw_fdb *f, uint32_t age_s, uint32_t port_limit);
/* 0, or -1 when the table is full. */
int sw_fdb_add_static(struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, int port);
/* Learns (or refreshes) mac in vlan on port; writes only when something
 * changes.  Group addresses are never learned. */
enum sw_fdb_learnt sw_fdb_learn(struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, int port, uint32_t now_s);
#define SW_FDB_USED (1ull << 48)

/* MAC in bits 0-47, in use at 48, VLAN at 49-60: one compare per probe.
 * Two loads and byte swaps, not six byte shifts: every forwarded frame
 * builds one. */
static inline uint64_t sw_fdb_key(const uint8_t m[6], uint16_t vlan)
{
	uint32_t hi;
	uint16_t lo;
	memcpy(&hi, m, 4);
	memcpy(&lo, m + 4, 2);
	return (uint64_t)(vlan & 0xfff) << 49 | SW_FDB_USED | (uint64_t)__builtin_bswap32(hi) << 16 |
	       __builtin_bswap16(lo);
}

/* sw_fdb_key's parts again (for reports, not the datapath). */
static inline void sw_fdb_key_mac(uint64_t k, uint8_t mac[6])
{
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)(k >> (40 - 8 * i));
}

static inline uint16_t sw_fdb_key_vlan(uint64_t k) { return (uint16_t)(k >> 49 & 0xfff); }

static inline uint32_t sw_fdb_home(uint64_t k)
{
	k *= 0x9E3779B97F4A7C15ull;
	return (uint32_t)(k >> 40) & (SW_FDB_SIZE - 1);
}

/* The port for mac in vlan, or -1 (unknown or aged out).  Inline: the
 * forwarding path's one look-up per frame. */
static inline int sw_fdb_lookup(const struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, uint32_t now_s)
{
	const uint64_t k = sw_fdb_key(mac, vlan);
	uint32_t i = sw_fdb_home(k);
	/* a free slot is always left, so the probe ends */
	for (;; i = (i + 1) & (SW_FDB_SIZE - 1)) {
		const struct sw_fdb_slot *s = &f->slot[i];
		if (s->key == k)
			return !s->is_static && now_s - s->last_seen_s > f->age_s ? -1 : s->port;
		if (s->key == 0)
			return -1;
	}
}
/* Removes entries idle for longer than age_s; returns how many. */
unsigned sw_fdb_age(struct sw_fdb *f, uint32_t now_s);
/* Forgets every learned entry on port (port down, topology change). */
void sw_fdb_flush_port(struct sw_fdb *f, int port);

#endif
