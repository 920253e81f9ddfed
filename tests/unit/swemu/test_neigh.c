/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu's neighbour table: binding, the source guard, ageing, group MACs,
 * a full table and reuse of aged entries without losing the ones behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <string.h>

#include "sw_neigh.h"

static void mac_of(uint32_t i, uint8_t m[6])
{
	const uint8_t v[6] = { 0x02, 0, (uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i };
	memcpy(m, v, 6);
}

static uint32_t ip_of(uint32_t i) { return htonl(0x0a000000u + i); }

static void test_bind_and_guard(void **state)
{
	(void)state;
	static struct sw_neigh t;
	uint8_t a[6], b[6], grp[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	mac_of(1, a);
	mac_of(2, b);
	memset(&t, 0, sizeof(t));
	const uint32_t ip = ip_of(1), now = 1000;

	assert_null(sw_neigh_find(&t, ip, now));
	assert_true(sw_neigh_allows(&t, ip, b, 4, 1, now)); /* unbound: anyone */
	assert_true(sw_neigh_learn(&t, ip, a, 3, 1, now));
	const struct sw_neigh_entry *e = sw_neigh_find(&t, ip, now);
	assert_non_null(e);
	assert_memory_equal(e->mac, a, 6);
	assert_int_equal(e->port, 3);
	assert_int_equal(e->vlan, 1);
	/* bound: another MAC, port or VLAN may not speak for it nor rebind it */
	assert_true(sw_neigh_allows(&t, ip, a, 3, 1, now + 5));
	assert_false(sw_neigh_allows(&t, ip, b, 3, 1, now + 5));
	assert_false(sw_neigh_allows(&t, ip, a, 4, 1, now + 5));
	assert_false(sw_neigh_allows(&t, ip, a, 3, 2, now + 5));
	assert_false(sw_neigh_learn(&t, ip, b, 4, 1, now + 5));
	assert_memory_equal(sw_neigh_find(&t, ip, now + 5)->mac, a, 6);
	/* never a group MAC, never address 0 */
	assert_false(sw_neigh_allows(&t, ip_of(2), grp, 1, 1, now));
	assert_false(sw_neigh_learn(&t, ip_of(2), grp, 1, 1, now));
	assert_null(sw_neigh_find(&t, ip_of(2), now));
	assert_false(sw_neigh_learn(&t, 0, b, 1, 1, now));
	/* traffic keeps it; silence ages it, and then the host may move */
	assert_true(sw_neigh_learn(&t, ip, a, 3, 1, now + SW_NEIGH_AGE_S - 1));
	assert_non_null(sw_neigh_find(&t, ip, now + 2 * SW_NEIGH_AGE_S - 2));
	assert_null(sw_neigh_find(&t, ip, now + 2 * SW_NEIGH_AGE_S - 1));
	assert_true(sw_neigh_allows(&t, ip, b, 4, 1, now + 2 * SW_NEIGH_AGE_S - 1));
	assert_true(sw_neigh_learn(&t, ip, b, 4, 1, now + 2 * SW_NEIGH_AGE_S));
	assert_int_equal(sw_neigh_find(&t, ip, now + 2 * SW_NEIGH_AGE_S)->port, 4);
}

/* A full table refuses (counted) until entries age; aged places are
 * reused, and every live entry stays findable, however the chains run. */
static void test_full_and_reuse(void **state)
{
	(void)state;
	static struct sw_neigh t;
	uint8_t m[6];
	memset(&t, 0, sizeof(t));
	for (uint32_t i = 1; i <= SW_NEIGH_SIZE; i++) {
		mac_of(i, m);
		assert_true(sw_neigh_learn(&t, ip_of(i), m, 1, 1, 100 + (i & 1) * 10));
	}
	assert_int_equal(sw_neigh_live(&t, 110), SW_NEIGH_SIZE);
	mac_of(5000, m);
	assert_false(sw_neigh_learn(&t, ip_of(5000), m, 1, 1, 110));
	assert_int_equal(t.full, 1);
	/* the even ones (seen at 100) age first: half the places come free */
	const uint32_t later = 100 + SW_NEIGH_AGE_S;
	assert_int_equal(sw_neigh_live(&t, later), SW_NEIGH_SIZE / 2);
	for (uint32_t i = 5000; i < 5000 + SW_NEIGH_SIZE / 2; i++) {
		mac_of(i, m);
		assert_true(sw_neigh_learn(&t, ip_of(i), m, 2, 1, later));
	}
	mac_of(9999, m);
	assert_false(sw_neigh_learn(&t, ip_of(9999), m, 2, 1, later));
	for (uint32_t i = 1; i <= SW_NEIGH_SIZE; i += 2) { /* the odd ones: still there */
		const struct sw_neigh_entry *e = sw_neigh_find(&t, ip_of(i), later);
		assert_non_null(e);
		mac_of(i, m);
		assert_memory_equal(e->mac, m, 6);
	}
	for (uint32_t i = 5000; i < 5000 + SW_NEIGH_SIZE / 2; i++)
		assert_int_equal(sw_neigh_find(&t, ip_of(i), later)->port, 2);
	for (uint32_t i = 2; i <= SW_NEIGH_SIZE; i += 2)
		assert_null(sw_neigh_find(&t, ip_of(i), later));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bind_and_guard),
		cmocka_unit_test(test_full_and_reuse),
	};
	return cmocka_run_group_tests_name("neigh", tests, NULL, NULL);
}
