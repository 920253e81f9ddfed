/* SPDX-License-Identifier: BSD-3-Clause */
#include "sw_fdb.h"

#include <string.h>

void sw_fdb_init(struct sw_fdb *f, uint32_t age_s, uint32_t port_limit)
{
	memset(f, 0, sizeof(*f));
	f->age_s = age_s;
	f->port_limit = port_limit;
}

/* per-port counts of learned entries (ports past the array are not limited) */
static void count_port(struct sw_fdb *f, const struct sw_fdb_slot *s, int d)
{
	if (!s->is_static && s->port >= 0 && s->port < SW_FDB_MAX_PORTS)
		f->learned[s->port] = (uint32_t)((int)f->learned[s->port] + d);
}

static bool port_full(const struct sw_fdb *f, int port)
{
	return f->port_limit && port >= 0 && port < SW_FDB_MAX_PORTS && f->learned[port] >= f->port_limit;
}

/* Linear probing; returns the entry of k or the empty slot where it goes. */
static struct sw_fdb_slot *probe(const struct sw_fdb *f, uint64_t k)
{
	uint32_t i = sw_fdb_home(k);
	for (uint32_t n = 0; n < SW_FDB_SIZE; n++, i = (i + 1) & (SW_FDB_SIZE - 1)) {
		const struct sw_fdb_slot *s = &f->slot[i];
		if (s->key == k || s->key == 0)
			return (struct sw_fdb_slot *)s;
	}
	return NULL;
}

/* Backward-shift deletion keeps every probe chain intact without tombstones. */
static void erase(struct sw_fdb *f, uint32_t i)
{
	uint32_t j = i;
	for (;;) {
		j = (j + 1) & (SW_FDB_SIZE - 1);
		if (f->slot[j].key == 0)
			break;
		uint32_t h = sw_fdb_home(f->slot[j].key);
		/* move j back into the hole at i unless its home lies in (i, j] */
		if ((i <= j) ? (h <= i || h > j) : (h <= i && h > j)) {
			f->slot[i] = f->slot[j];
			i = j;
		}
	}
	memset(&f->slot[i], 0, sizeof(f->slot[i]));
	f->n--;
	f->changes++;
}

static void remove_at(struct sw_fdb *f, uint32_t i)
{
	count_port(f, &f->slot[i], -1);
	erase(f, i);
}

static bool expired(const struct sw_fdb *f, const struct sw_fdb_slot *s, uint32_t now_s)
{
	return !s->is_static && now_s - s->last_seen_s > f->age_s;
}

int sw_fdb_add_static(struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, int port)
{
	uint64_t k = sw_fdb_key(mac, vlan);
	struct sw_fdb_slot *s = probe(f, k);
	if (!s || (s->key == 0 && f->n + 1 >= SW_FDB_SIZE))
		return -1;
	if (s->key == 0)
		f->n++;
	else
		count_port(f, s, -1); /* a learned entry becomes static */
	*s = (struct sw_fdb_slot){ .key = k, .port = (int16_t)port, .is_static = true };
	f->changes++;
	return 0;
}

enum sw_fdb_learnt sw_fdb_learn(struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, int port, uint32_t now_s)
{
	if (mac[0] & 1) /* group address: never a source */
		return SW_FDB_KEPT;
	uint64_t k = sw_fdb_key(mac, vlan);
	struct sw_fdb_slot *s = probe(f, k);
	enum sw_fdb_learnt r = SW_FDB_KNOWN;
	if (s && s->key == k) {
		if (s->is_static)
			return SW_FDB_KEPT; /* static entries always win */
		if (s->port != port) {	    /* the station moved, or someone sends from its MAC */
			if (s->moved_s == now_s && now_s) {
				f->moves_damped++;
				return SW_FDB_KEPT;
			}
			if (port_full(f, port))
				return SW_FDB_PORT_FULL;
			count_port(f, s, -1);
			f->last_move = (struct sw_fdb_move){
				.key = k, .from = s->port, .to = (int16_t)port, .s = now_s
			};
			s->port = (int16_t)port;
			count_port(f, s, +1);
			s->moved_s = now_s;
			f->moves++;
			f->changes++;
			r = SW_FDB_MOVED;
		}
		if (s->last_seen_s != now_s)
			s->last_seen_s = now_s;
		return r;
	}
	if (port_full(f, port))
		return SW_FDB_PORT_FULL;
	/* keep one slot free so that probes always end */
	if (!s || f->n + 1 >= SW_FDB_SIZE) {
		f->full_drops++;
		return SW_FDB_KEPT;
	}
	*s = (struct sw_fdb_slot){ .key = k, .port = (int16_t)port, .last_seen_s = now_s };
	count_port(f, s, +1);
	f->n++;
	f->changes++;
	return r;
}

unsigned sw_fdb_age(struct sw_fdb *f, uint32_t now_s)
{
	unsigned removed = 0;
	for (uint32_t i = 0; i < SW_FDB_SIZE; i++)
		while (f->slot[i].key && expired(f, &f->slot[i], now_s)) {
			remove_at(f, i); /* may pull another entry into i: check it too */
			removed++;
		}
	return removed;
}

void sw_fdb_flush_port(struct sw_fdb *f, int port)
{
	for (uint32_t i = 0; i < SW_FDB_SIZE; i++)
		while (f->slot[i].key && !f->slot[i].is_static && f->slot[i].port == port)
			remove_at(f, i);
}
