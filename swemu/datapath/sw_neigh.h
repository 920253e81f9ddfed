/* SPDX-License-Identifier: BSD-3-Clause */
/* The neighbour table of an INA switch: the IPv4 address of each member
 * that spoke to the switch's engine -> the MAC, port and VLAN it spoke
 * from.  Results go there, out of that port, never flooded; and while an
 * entry is live no frame from another MAC, port or VLAN may speak for that
 * address (an IP source guard).  Entries are made only for packets the
 * engine accepted (a job's member), never for a group MAC, and age out
 * after SW_NEIGH_AGE_S without traffic.  Pure C (no DPDK), unit-tested. */
#ifndef SW_NEIGH_H
#define SW_NEIGH_H

#include <stdbool.h>
#include <stdint.h>

#define SW_NEIGH_SIZE  1024 /* entries; a power of two */
/* A member that sends nothing for this long may be bound anew (a host
 * that moved); a living one sends every call. */
#define SW_NEIGH_AGE_S 300

struct sw_neigh_entry {
	uint32_t ip; /* network order; 0: never used */
	uint32_t seen_s;
	uint16_t vlan;
	int16_t port;
	uint8_t mac[6];
};

struct sw_neigh {
	uint64_t full;	  /* members not bound: every entry live */
	uint32_t changes; /* bindings made or moved: caches of answers compare it */
	struct sw_neigh_entry e[SW_NEIGH_SIZE];
};

/* The live entry of ip, or NULL. */
const struct sw_neigh_entry *sw_neigh_find(const struct sw_neigh *t, uint32_t ip, uint32_t now_s);
/* Whether a frame from (mac, port, vlan) may speak for ip: yes unless mac
 * is a group address or ip is bound, live, to another MAC, port or VLAN. */
bool sw_neigh_allows(const struct sw_neigh *t, uint32_t ip, const uint8_t mac[6], int port, uint16_t vlan,
		     uint32_t now_s);
/* Binds ip to (mac, port, vlan), or refreshes its binding; writes only
 * what changes.  False, nothing written, for address 0, a group MAC, an
 * address bound live elsewhere, or a full table (counted in full). */
bool sw_neigh_learn(struct sw_neigh *t, uint32_t ip, const uint8_t mac[6], int port, uint16_t vlan, uint32_t now_s);
/* Live entries (for the stats). */
unsigned sw_neigh_live(const struct sw_neigh *t, uint32_t now_s);

#endif
