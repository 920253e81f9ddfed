/* SPDX-License-Identifier: BSD-3-Clause */
#include "sw_neigh.h"

#include <string.h>

_Static_assert((SW_NEIGH_SIZE & (SW_NEIGH_SIZE - 1)) == 0, "SW_NEIGH_SIZE must be a power of two");

static unsigned home(uint32_t ip) { return (ip * 2654435761u) >> 22 & (SW_NEIGH_SIZE - 1); }

/* a difference, so that a clock another lcore read a moment earlier
 * (stats) does not age what is live */
static bool live(const struct sw_neigh_entry *e, uint32_t now_s)
{
	return (int32_t)(now_s - e->seen_s) < SW_NEIGH_AGE_S;
}

/* Open addressing, linear probing.  An aged entry keeps its address until
 * another one takes the place over, so the chains that pass it stay
 * intact and nothing is ever deleted. */
static struct sw_neigh_entry *probe(const struct sw_neigh *t, uint32_t ip, uint32_t now_s,
				    const struct sw_neigh_entry **reusable)
{
	unsigned i = home(ip);
	*reusable = NULL;
	for (unsigned k = 0; k < SW_NEIGH_SIZE; k++, i = (i + 1) & (SW_NEIGH_SIZE - 1)) {
		const struct sw_neigh_entry *e = &t->e[i];
		if (e->ip == ip)
			return (struct sw_neigh_entry *)e;
		if (!*reusable && (e->ip == 0 || !live(e, now_s)))
			*reusable = e;
		if (e->ip == 0)
			break; /* ip is not further on */
	}
	return NULL;
}

const struct sw_neigh_entry *sw_neigh_find(const struct sw_neigh *t, uint32_t ip, uint32_t now_s)
{
	const struct sw_neigh_entry *spare, *e = ip ? probe(t, ip, now_s, &spare) : NULL;
	return e && live(e, now_s) ? e : NULL;
}

static bool same_place(const struct sw_neigh_entry *e, const uint8_t mac[6], int port, uint16_t vlan)
{
	return e->port == port && e->vlan == vlan && memcmp(e->mac, mac, 6) == 0;
}

bool sw_neigh_allows(const struct sw_neigh *t, uint32_t ip, const uint8_t mac[6], int port, uint16_t vlan,
		     uint32_t now_s)
{
	if (mac[0] & 1) /* no station sends from a group address */
		return false;
	const struct sw_neigh_entry *e = sw_neigh_find(t, ip, now_s);
	return !e || same_place(e, mac, port, vlan);
}

bool sw_neigh_learn(struct sw_neigh *t, uint32_t ip, const uint8_t mac[6], int port, uint16_t vlan, uint32_t now_s)
{
	if (ip == 0 || mac[0] & 1)
		return false;
	const struct sw_neigh_entry *spare;
	struct sw_neigh_entry *e = probe(t, ip, now_s, &spare);
	if (e && live(e, now_s) && !same_place(e, mac, port, vlan))
		return false;
	if (!e && !(e = (struct sw_neigh_entry *)spare)) {
		t->full++;
		return false;
	}
	if (e->ip != ip || !same_place(e, mac, port, vlan)) {
		e->ip = ip;
		memcpy(e->mac, mac, 6);
		e->port = (int16_t)port;
		e->vlan = vlan;
		t->changes++;
	}
	if (e->seen_s != now_s)
		e->seen_s = now_s;
	return true;
}

unsigned sw_neigh_live(const struct sw_neigh *t, uint32_t now_s)
{
	unsigned n = 0;
	for (unsigned i = 0; i < SW_NEIGH_SIZE; i++)
		n += t->e[i].ip && live(&t->e[i], now_s);
	return n;
}
