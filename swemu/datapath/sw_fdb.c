/* SPDX-License-Identifier: BSD-3-Clause */
#include "sw_fdb.h"

#include <string.h>

#define USED (1ull << 48)

/* MAC in bits 0-47, in use at 48, VLAN at 49-60: one compare per probe. */
static uint64_t key(const uint8_t m[6], uint16_t vlan)
{
	return (uint64_t)(vlan & 0xfff) << 49 | USED | (uint64_t)m[0] << 40 | (uint64_t)m[1] << 32 |
	       (uint64_t)m[2] << 24 | (uint64_t)m[3] << 16 | (uint64_t)m[4] << 8 | m[5];
}

static uint32_t home(uint64_t k)
{
	k *= 0x9E3779B97F4A7C15ull;
	return (uint32_t)(k >> 40) & (SW_FDB_SIZE - 1);
}

void sw_fdb_init(struct sw_fdb *f, uint32_t age_s)
{
	memset(f, 0, sizeof(*f));
	f->age_s = age_s;
}

/* Linear probing; returns the entry of k or the empty slot where it goes. */
static struct sw_fdb_slot *probe(const struct sw_fdb *f, uint64_t k)
{
	uint32_t i = home(k);
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
		uint32_t h = home(f->slot[j].key);
		/* move j back into the hole at i unless its home lies in (i, j] */
		if ((i <= j) ? (h <= i || h > j) : (h <= i && h > j)) {
			f->slot[i] = f->slot[j];
			i = j;
		}
	}
	memset(&f->slot[i], 0, sizeof(f->slot[i]));
	f->n--;
}

static bool expired(const struct sw_fdb *f, const struct sw_fdb_slot *s, uint32_t now_s)
{
	return !s->is_static && now_s - s->last_seen_s > f->age_s;
}

int sw_fdb_add_static(struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, int port)
{
	uint64_t k = key(mac, vlan);
	struct sw_fdb_slot *s = probe(f, k);
	if (!s || (s->key == 0 && f->n + 1 >= SW_FDB_SIZE))
		return -1;
	if (s->key == 0)
		f->n++;
	*s = (struct sw_fdb_slot){ .key = k, .port = (int16_t)port, .is_static = true };
	return 0;
}

void sw_fdb_learn(struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, int port, uint32_t now_s)
{
	if (mac[0] & 1) /* group address: never a source */
		return;
	uint64_t k = key(mac, vlan);
	struct sw_fdb_slot *s = probe(f, k);
	if (s && s->key == k) {
		if (s->is_static)
			return;
		if (s->port != port)
			s->port = (int16_t)port; /* station moved */
		if (s->last_seen_s != now_s)
			s->last_seen_s = now_s;
		return;
	}
	/* keep one slot free so that probes always end */
	if (!s || f->n + 1 >= SW_FDB_SIZE) {
		f->full_drops++;
		return;
	}
	*s = (struct sw_fdb_slot){ .key = k, .port = (int16_t)port, .last_seen_s = now_s };
	f->n++;
}

int sw_fdb_lookup(const struct sw_fdb *f, const uint8_t mac[6], uint16_t vlan, uint32_t now_s)
{
	uint64_t k = key(mac, vlan);
	const struct sw_fdb_slot *s = probe(f, k);
	if (!s || s->key != k || expired(f, s, now_s))
		return -1;
	return s->port;
}

unsigned sw_fdb_age(struct sw_fdb *f, uint32_t now_s)
{
	unsigned removed = 0;
	for (uint32_t i = 0; i < SW_FDB_SIZE; i++)
		while (f->slot[i].key && expired(f, &f->slot[i], now_s)) {
			erase(f, i); /* may pull another entry into i: check it too */
			removed++;
		}
	return removed;
}

void sw_fdb_flush_port(struct sw_fdb *f, int port)
{
	for (uint32_t i = 0; i < SW_FDB_SIZE; i++)
		while (f->slot[i].key && !f->slot[i].is_static && f->slot[i].port == port)
			erase(f, i);
}
