/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu's FDB: learning, moves, ageing, VLANs, a full table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "sw_fdb.h"

static void mac_of(uint32_t i, uint8_t m[6])
{
	m[0] = 0x02;
	m[1] = 0;
	m[2] = (uint8_t)(i >> 24);
	m[3] = (uint8_t)(i >> 16);
	m[4] = (uint8_t)(i >> 8);
	m[5] = (uint8_t)i;
}

static void test_fdb_learn_move_age(void **state)
{
	(void)state;
	static struct sw_fdb f;
	uint8_t a[6], b[6], grp[6] = { 0x01, 0x00, 0x5e, 0, 0, 1 }, st[6];
	mac_of(1, a);
	mac_of(2, b);
	mac_of(3, st);
	sw_fdb_init(&f, 10, 0);
	assert_int_equal(sw_fdb_lookup(&f, a, 1, 0), -1);
	sw_fdb_learn(&f, a, 1, 3, 100);
	assert_int_equal(sw_fdb_lookup(&f, a, 1, 100), 3);
	sw_fdb_learn(&f, a, 1, 5, 101); /* station moved */
	assert_int_equal(sw_fdb_lookup(&f, a, 1, 101), 5);
	sw_fdb_learn(&f, grp, 1, 1, 101);
	assert_int_equal(sw_fdb_lookup(&f, grp, 1, 101), -1);
	assert_int_equal(sw_fdb_add_static(&f, st, 1, 7), 0);
	sw_fdb_learn(&f, st, 1, 1, 101); /* static entries do not move */
	assert_int_equal(sw_fdb_lookup(&f, st, 1, 101), 7);
	sw_fdb_learn(&f, b, 1, 2, 105);
	/* a is idle for 10 s: still there; 11 s: gone, before and after the sweep */
	assert_int_equal(sw_fdb_lookup(&f, a, 1, 111), 5);
	assert_int_equal(sw_fdb_lookup(&f, a, 1, 112), -1);
	assert_int_equal(sw_fdb_age(&f, 112), 1);
	assert_int_equal(sw_fdb_lookup(&f, b, 1, 112), 2);
	assert_int_equal(sw_fdb_lookup(&f, st, 1, 100000), 7);
	assert_int_equal(f.n, 2);
	sw_fdb_flush_port(&f, 2);
	assert_int_equal(sw_fdb_lookup(&f, b, 1, 112), -1);
	assert_int_equal(f.n, 1);
}

/* The same station in two VLANs: two entries, each found only in its own
 * VLAN, learned and aged apart; a static entry belongs to one VLAN. */
static void test_fdb_vlans(void **state)
{
	(void)state;
	static struct sw_fdb f;
	uint8_t a[6], st[6];
	mac_of(1, a);
	mac_of(3, st);
	sw_fdb_init(&f, 10, 0);
	sw_fdb_learn(&f, a, 1, 2, 100);
	assert_int_equal(sw_fdb_lookup(&f, a, 1, 100), 2);
	assert_int_equal(sw_fdb_lookup(&f, a, 2, 100), -1);
	sw_fdb_learn(&f, a, 2, 5, 105);
	assert_int_equal(sw_fdb_lookup(&f, a, 1, 105), 2); /* not a move */
	assert_int_equal(sw_fdb_lookup(&f, a, 2, 105), 5);
	assert_int_equal(f.n, 2);
	assert_int_equal(sw_fdb_age(&f, 111), 1); /* VLAN 1's entry idle 11 s */
	assert_int_equal(sw_fdb_lookup(&f, a, 1, 111), -1);
	assert_int_equal(sw_fdb_lookup(&f, a, 2, 111), 5);
	assert_int_equal(sw_fdb_add_static(&f, st, 4094, 7), 0);
	assert_int_equal(sw_fdb_lookup(&f, st, 4094, 111), 7);
	assert_int_equal(sw_fdb_lookup(&f, st, 1, 111), -1);
	sw_fdb_learn(&f, st, 1, 3, 111); /* learned in VLAN 1, the static one stays */
	assert_int_equal(sw_fdb_lookup(&f, st, 1, 111), 3);
	assert_int_equal(sw_fdb_lookup(&f, st, 4094, 111), 7);
}

/* Fill the table, age out every other entry, and check that all the rest
 * are still found: deletion must not break probe chains. */
static void test_fdb_full_and_chains(void **state)
{
	(void)state;
	static struct sw_fdb f;
	uint8_t m[6];
	sw_fdb_init(&f, 5, 0);
	for (uint32_t i = 0; i < SW_FDB_SIZE - 1; i++) {
		mac_of(i * 2654435761u, m);
		sw_fdb_learn(&f, m, 1, (int)(i % 16), i % 2 ? 100 : 50);
	}
	assert_int_equal(f.n, SW_FDB_SIZE - 1);
	mac_of(0xdeadbeef, m);
	sw_fdb_learn(&f, m, 1, 1, 100);
	assert_int_equal(f.full_drops, 1);
	assert_int_equal(sw_fdb_lookup(&f, m, 1, 100), -1);
	assert_int_equal(sw_fdb_age(&f, 100), SW_FDB_SIZE / 2);
	for (uint32_t i = 0; i < SW_FDB_SIZE - 1; i++) {
		mac_of(i * 2654435761u, m);
		assert_int_equal(sw_fdb_lookup(&f, m, 1, 100), i % 2 ? (int)(i % 16) : -1);
	}
}

/* A port learns at most port_limit MACs (its frames from more are to be
 * refused), freed by ageing; a MAC moves at most once a second (counted),
 * never over a static entry; the counts follow moves and removals. */
static void test_fdb_port_limit_and_moves(void **state)
{
	(void)state;
	static struct sw_fdb f;
	uint8_t m[6], st[6];
	sw_fdb_init(&f, 10, 3);
	for (uint32_t i = 0; i < 3; i++) {
		mac_of(i, m);
		assert_int_equal(sw_fdb_learn(&f, m, 1, 2, 100), SW_FDB_KNOWN);
	}
	mac_of(3, m);
	assert_int_equal(sw_fdb_learn(&f, m, 1, 2, 100), SW_FDB_PORT_FULL);
	assert_int_equal(sw_fdb_lookup(&f, m, 1, 100), -1);
	assert_int_equal(sw_fdb_learn(&f, m, 1, 4, 100), SW_FDB_KNOWN); /* another port has room */
	mac_of(0, m);
	assert_int_equal(sw_fdb_learn(&f, m, 1, 2, 101), SW_FDB_KNOWN); /* known ones refresh */
	/* MAC 0 moves to port 4, and in the same second back: refused */
	assert_int_equal(sw_fdb_learn(&f, m, 1, 4, 102), SW_FDB_MOVED);
	assert_int_equal(sw_fdb_learn(&f, m, 1, 2, 102), SW_FDB_KEPT);
	assert_int_equal(sw_fdb_lookup(&f, m, 1, 102), 4);
	assert_int_equal(f.moves, 1);
	assert_int_equal(f.moves_damped, 1);
	/* the move is named for the stats; the refused one is not */
	assert_true(f.last_move.key == sw_fdb_key(m, 1));
	assert_int_equal(f.last_move.from, 2);
	assert_int_equal(f.last_move.to, 4);
	assert_int_equal(f.last_move.s, 102);
	uint8_t back[6];
	sw_fdb_key_mac(f.last_move.key, back);
	assert_memory_equal(back, m, 6);
	assert_int_equal(sw_fdb_key_vlan(f.last_move.key), 1);
	assert_int_equal(f.learned[2], 2);
	assert_int_equal(f.learned[4], 2);
	/* port 2 has room again for a new MAC, not for a third move-in */
	mac_of(5, m);
	assert_int_equal(sw_fdb_learn(&f, m, 1, 2, 103), SW_FDB_KNOWN);
	mac_of(0, m);
	assert_int_equal(sw_fdb_learn(&f, m, 1, 2, 104), SW_FDB_PORT_FULL);
	assert_int_equal(sw_fdb_lookup(&f, m, 1, 104), 4);
	/* static entries always win and do not count */
	mac_of(9, st);
	assert_int_equal(sw_fdb_add_static(&f, st, 1, 7), 0);
	assert_int_equal(sw_fdb_learn(&f, st, 1, 2, 104), SW_FDB_KEPT);
	assert_int_equal(sw_fdb_lookup(&f, st, 1, 104), 7);
	assert_int_equal(f.learned[7], 0);
	/* ageing frees the places */
	assert_int_equal(sw_fdb_age(&f, 112), 3); /* MACs 1, 2 on port 2 and 3 on port 4, seen at 100 */
	assert_int_equal(f.learned[2], 1);
	assert_int_equal(f.learned[4], 1);
	mac_of(6, m);
	assert_int_equal(sw_fdb_learn(&f, m, 1, 2, 112), SW_FDB_KNOWN);
	sw_fdb_flush_port(&f, 2);
	assert_int_equal(f.learned[2], 0);
	assert_int_equal(sw_fdb_lookup(&f, st, 1, 112), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fdb_learn_move_age),
		cmocka_unit_test(test_fdb_vlans),
		cmocka_unit_test(test_fdb_full_and_chains),
		cmocka_unit_test(test_fdb_port_limit_and_moves),
	};
	return cmocka_run_group_tests_name("fdb", tests, NULL, NULL);
}
