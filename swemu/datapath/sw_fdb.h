/* SPDX-License-Identifier: BSD-3-Clause */
/* The forwarding database of one logical switch: (VLAN, MAC) -> port,
 * learned from source addresses, aged out after a configured idle time;
 * static entries never age and never move.  The same MAC in two VLANs is
 * two entries.  Pure C (no DPDK), unit-tested. */
#ifndef SW_FDB_H
#define SW_FDB_H

#include <stdbool.h>
#include <stdint.h>

#define SW_FDB_SIZE 4096 /* entries; a power of two */

struct sw_fdb_slot {
	uint64_t key; /* 48-bit MAC, 1 << 48 when used, VLAN << 49 */
	uint32_t last_seen_s;
	int16_t port;
	bool is_static;
};

struct sw_fdb {
	uint32_t age_s;
	uint32_t n;
	uint64_t full_drops; /* learn attempts refused: table full */
	struct sw_fdb_slot slot[SW_FDB_SIZE];
};

void sw_fdb_init(struct sw_fdb *f, uint32_t age_s);
/* 0, or -1 when the table is full. */
int sw_fdb_add_static(struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, int port);
/* Learns (or refreshes) mac in vlan on port; writes only when something
 * changes.  Group addresses are never learned. */
void sw_fdb_learn(struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, int port, uint32_t now_s);
/* The port for mac in vlan, or -1 (unknown or aged out). */
int sw_fdb_lookup(const struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, uint32_t now_s);
/* Removes entries idle for longer than age_s; returns how many. */
unsigned sw_fdb_age(struct sw_fdb *f, uint32_t now_s);
/* Forgets every learned entry on port (port down, topology change). */
void sw_fdb_flush_port(struct sw_fdb *f, int port);

#endif
