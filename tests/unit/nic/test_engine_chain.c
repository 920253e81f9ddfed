/* SPDX-License-Identifier: BSD-3-Clause */
/* A chain job (ina_job_cfg.chain_steps, docs/ENGINE.md "Chains"): an
 * agent-ring member's one job for every step of its ring.  Each slice's
 * step decides its fan-in and outputs; the forward and the ACK name the
 * neighbour's slice (seq + 1, seq - 1); the upstream's contributions find
 * their set by the key, also when the upstream is ahead of the workers;
 * a re-send from an upstream the slot has moved past is acknowledged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "testlib.h"

#define E 4 /* elements per slice */

static const struct ina_addr *W0, *W1;
static struct ina_addr w0, w1, up, down;

/* m = 3 members: steps 0 (reduce, no upstream), 1 (reduce), 2 (owner),
 * 3 (gather), 4 (the gather's last); two workers and the upstream. */
static struct ina_job_cfg chain_job(uint32_t nslots)
{
	w0 = tl_addr(1);
	w1 = tl_addr(2);
	up = tl_addr(50);
	down = tl_addr(60);
	W0 = &w0;
	W1 = &w1;
	struct ina_job_cfg j = tl_job(20, 3, INA_D_INT32, nslots, E);
	j.contributors[0] = w0;
	j.contributors[1] = w1;
	j.contributors[2] = up;
	j.upstream_index = 2;
	j.upstream_job = 20;
	j.chain_steps = 5;
	j.outputs = INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_ACK;
	j.forward = (struct ina_peer){ .addr = down, .job = 20, .contributor = INA_CONTRIB_UPSTREAM };
	return j;
}

/* A worker's slice seq in slot seq % n, set `set`; a join when vals is NULL. */
static enum ina_reason worker(struct ina_engine *e, unsigned c, uint32_t n, unsigned set, uint32_t seq,
			      const uint32_t *vals)
{
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 20, (uint16_t)c, (seq % n) | (set ? INA_SLOT_SET_BIT : 0), 1,
				  seq, E);
	if (!vals)
		h.flags = INA_F_JOIN;
	size_t len = tl_encode(tl_pkt, &h, vals, vals ? E : 0);
	return ina_engine_rx(e, tl_pkt, len, c ? W1 : W0, &tl_out);
}

/* The upstream's forward of slice seq: the slot field carries no set. */
static enum ina_reason upstream(struct ina_engine *e, uint32_t n, uint32_t seq, const uint32_t *vals, uint8_t flags)
{
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 20, INA_CONTRIB_UPSTREAM, seq % n, 1, seq, E);
	h.flags = flags;
	return tl_send(e, &up, &h, vals);
}

static unsigned count_to(uint8_t type, const struct ina_addr *dst)
{
	unsigned n = 0;
	for (unsigned i = 0; i < tl_out.n; i++)
		n += tl_out.e[i].hdr.type == type && tl_out.e[i].dst.ip == dst->ip;
	return n;
}

static const struct ina_emit *find(uint8_t type, const struct ina_addr *dst)
{
	for (unsigned i = 0; i < tl_out.n; i++)
		if (tl_out.e[i].hdr.type == type && tl_out.e[i].dst.ip == dst->ip)
			return &tl_out.e[i];
	fail_msg("no emit of type %u", type);
	return NULL;
}

/* What each step takes and gives, in order through one slot index. */
static void test_steps(void **state)
{
	(void)state;
	const uint32_t n = 8;
	struct ina_engine *e = ina_engine_create(n, E);
	struct ina_job_cfg j = chain_job(n);
	assert_int_equal(ina_job_install(e, &j, NULL), 0);
	uint32_t a[E] = { 1, 2, 3, 4 }, b[E] = { 10, 20, 30, 40 }, u[E] = { 100, 200, 300, 400 };
	/* step 0: the two workers alone; forwarded as slice 1, no ACK */
	assert_int_equal(worker(e, 0, n, 0, 0, a), INA_OK);
	assert_int_equal(tl_out.n, 0);
	assert_int_equal(worker(e, 1, n, 0, 0, b), INA_OK);
	assert_int_equal(tl_out.n, 1);
	const struct ina_emit *f = find(INA_T_DATA, &down);
	assert_int_equal(f->hdr.seq, 1);
	assert_int_equal(f->hdr.slot, 1);
	assert_int_equal(f->hdr.job, 20);
	assert_int_equal(f->hdr.contributor, INA_CONTRIB_UPSTREAM);
	for (unsigned k = 0; k < E; k++)
		assert_int_equal(tl_elem(f->payload, k), a[k] + b[k]);
	/* the upstream may not add to a step 0 */
	assert_int_equal(upstream(e, n, 5, u, 0), INA_R_BAD_CONTRIBUTOR);
	/* step 1: the upstream too; forwarded as 2, the upstream's slice 0 acknowledged */
	assert_int_equal(upstream(e, n, 1, u, 0), INA_OK);
	assert_int_equal(worker(e, 0, n, 0, 1, a), INA_OK);
	assert_int_equal(worker(e, 1, n, 0, 1, b), INA_OK);
	assert_int_equal(tl_out.n, 2);
	assert_int_equal(find(INA_T_DATA, &down)->hdr.seq, 2);
	assert_int_equal(find(INA_T_ACK, &up)->hdr.seq, 0);
	assert_int_equal(find(INA_T_ACK, &up)->hdr.slot, 0);
	assert_int_equal(find(INA_T_ACK, &up)->hdr.job, 20);
	/* step 2, the owner: multicast to the workers, forwarded, acknowledged */
	assert_int_equal(upstream(e, n, 2, u, 0), INA_OK);
	assert_int_equal(worker(e, 0, n, 0, 2, a), INA_OK);
	assert_int_equal(worker(e, 1, n, 0, 2, b), INA_OK);
	assert_int_equal(count_to(INA_T_RESULT, &w0) + count_to(INA_T_RESULT, &w1), 2);
	assert_int_equal(count_to(INA_T_RESULT, &up), 0);
	assert_int_equal(find(INA_T_DATA, &down)->hdr.seq, 3);
	assert_int_equal(find(INA_T_ACK, &up)->hdr.seq, 1);
	for (unsigned k = 0; k < E; k++)
		assert_int_equal(tl_elem(find(INA_T_RESULT, &w0)->payload, k), a[k] + b[k] + u[k]);
	/* the downstream's ACK of its slice 1 is this one's 0: passed to the workers */
	struct ina_hdr ack = tl_hdr(INA_T_ACK, INA_D_INT32, 20, 0, 0, 1, 0, E);
	assert_int_equal(tl_send(e, &up, &ack, NULL), INA_R_NOT_MEMBER);
	assert_int_equal(tl_send(e, &down, &ack, NULL), INA_OK);
	assert_int_equal(count_to(INA_T_ACK, &w0) + count_to(INA_T_ACK, &w1), 2);
	/* step 4, the last: joins and the upstream's result; multicast, no forward */
	assert_int_equal(upstream(e, n, 4, u, 0), INA_OK);
	assert_int_equal(worker(e, 0, n, 0, 4, NULL), INA_OK);
	assert_int_equal(worker(e, 1, n, 0, 4, NULL), INA_OK);
	assert_int_equal(count_to(INA_T_DATA, &down), 0);
	assert_int_equal(count_to(INA_T_RESULT, &w0), 1);
	assert_int_equal(find(INA_T_ACK, &up)->hdr.seq, 3);
	for (unsigned k = 0; k < E; k++)
		assert_int_equal(tl_elem(find(INA_T_RESULT, &w1)->payload, k), u[k]);
	/* an ACK for a slice that does not forward */
	ack.seq = 4;
	ack.slot = 4;
	assert_int_equal(tl_send(e, &down, &ack, NULL), INA_R_UNEXPECTED_TYPE);
	ina_engine_destroy(e);
}

/* Two slots.  The upstream may be ahead of the workers only where its
 * window has no earlier slice: its slice 1 (first of its slot) forwarded
 * as this member's 2 before the workers sent 0, both slot 0; it takes the
 * set the workers use for 2.  A step 0 reuses a set the upstream added
 * to; the upstream's re-send of a slice the slot has moved past gets its
 * ACK again. */
static void test_sets_by_key(void **state)
{
	(void)state;
	const uint32_t n = 2;
	struct ina_engine *e = ina_engine_create(n, E);
	struct ina_job_cfg j = chain_job(n);
	assert_int_equal(ina_job_install(e, &j, NULL), 0);
	uint32_t a[E] = { 1, 2, 3, 4 }, u[E] = { 100, 200, 300, 400 };
	/* slot 0 takes slices 0 (set 0), 2 (set 1), 4 ...; slot 1 takes 1, 3, 5 */
	assert_int_equal(upstream(e, n, 2, u, 0), INA_OK); /* ahead: set 1 */
	assert_int_equal(tl_out.n, 0);
	assert_int_equal(worker(e, 0, n, 0, 0, a), INA_OK);
	assert_int_equal(worker(e, 1, n, 0, 0, a), INA_OK);
	assert_int_equal(find(INA_T_DATA, &down)->hdr.seq, 1);
	assert_int_equal(upstream(e, n, 1, u, 0), INA_OK);
	assert_int_equal(worker(e, 0, n, 0, 1, a), INA_OK);
	assert_int_equal(worker(e, 1, n, 0, 1, a), INA_OK);
	assert_int_equal(find(INA_T_ACK, &up)->hdr.seq, 0);
	assert_int_equal(worker(e, 0, n, 1, 2, a), INA_OK); /* set 1: with the upstream's */
	assert_int_equal(worker(e, 1, n, 1, 2, a), INA_OK);
	for (unsigned k = 0; k < E; k++)
		assert_int_equal(tl_elem(find(INA_T_RESULT, &w0)->payload, k), 2 * a[k] + u[k]);
	assert_int_equal(find(INA_T_DATA, &down)->hdr.seq, 3);
	assert_int_equal(upstream(e, n, 3, u, 0), INA_OK); /* set 1, after 1 in set 0 */
	assert_int_equal(worker(e, 0, n, 1, 3, NULL), INA_OK);
	assert_int_equal(worker(e, 1, n, 1, 3, NULL), INA_OK);
	for (unsigned k = 0; k < E; k++)
		assert_int_equal(tl_elem(find(INA_T_RESULT, &w1)->payload, k), u[k]);
	/* slice 5 is a step 0 (5 % 5): set 0 again, though the upstream
	 * added to slice 1 there (its part ends at completion) */
	assert_int_equal(worker(e, 0, n, 0, 5, a), INA_OK);
	assert_int_equal(worker(e, 1, n, 0, 5, a), INA_OK);
	assert_int_equal(find(INA_T_DATA, &down)->hdr.seq, 6);
	/* the ACK of slice 1 was lost: the upstream sends it again */
	assert_int_equal(upstream(e, n, 1, u, INA_F_RETX), INA_OK);
	assert_int_equal(tl_out.n, 1);
	assert_int_equal(find(INA_T_ACK, &up)->hdr.seq, 0);
	assert_int_equal(find(INA_T_ACK, &up)->payload_len, 0);
	/* and of slice 3, which its set still holds */
	assert_int_equal(upstream(e, n, 3, u, INA_F_RETX), INA_OK);
	assert_int_equal(find(INA_T_ACK, &up)->hdr.seq, 2);
	ina_engine_destroy(e);
}

static void test_install_checks(void **state)
{
	(void)state;
	struct ina_engine *e = ina_engine_create(8, E);
	struct ina_job_cfg j = chain_job(4);
	const char *why = NULL;
	j.chain_steps = 4;
	assert_int_equal(ina_job_install(e, &j, &why), -EINVAL);
	assert_non_null(strstr(why, "odd"));
	j = chain_job(4);
	j.outputs &= ~INA_OUT_MULTICAST;
	assert_int_equal(ina_job_install(e, &j, &why), -EINVAL);
	j = chain_job(4);
	j.upstream_index = 0;
	assert_int_equal(ina_job_install(e, &j, &why), -EINVAL);
	assert_non_null(strstr(why, "upstream"));
	j = chain_job(1);
	assert_int_equal(ina_job_install(e, &j, &why), -EINVAL);
	assert_non_null(strstr(why, "2 slots"));
	j = chain_job(4);
	assert_int_equal(ina_job_install(e, &j, &why), 0);
	ina_engine_destroy(e);
}

/* Neighbours that are switches on 16 ports (ina_addr.nports): the
 * upstream's forward is taken from any of its ports and none past them;
 * the forward of slice seq goes to the downstream's port for the slot it
 * takes there (seq + 1), the ACK to the upstream's port for seq - 1, the
 * downstream's ACK is taken from any of its ports. */
static void test_switch_ports(void **state)
{
	(void)state;
	const uint32_t n = 32;
	struct ina_engine *e = ina_engine_create(n, E);
	struct ina_job_cfg j = chain_job(n);
	j.contributors[2].nports = 16;
	j.forward.addr.nports = 16;
	assert_int_equal(ina_job_install(e, &j, NULL), 0);
	uint32_t a[E] = { 1, 2, 3, 4 };
	/* slice 16 is step 1 (16 % 5), in slot 16 */
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 20, INA_CONTRIB_UPSTREAM, 16, 1, 16, E);
	struct ina_addr from = up;
	from.port = htons(INA_UDP_PORT_MIN + 16);
	assert_int_equal(tl_send(e, &from, &h, a), INA_R_NOT_MEMBER);
	from.port = htons(INA_UDP_PORT_MIN + 9);
	assert_int_equal(tl_send(e, &from, &h, a), INA_OK);
	assert_int_equal(worker(e, 0, n, 0, 16, a), INA_OK);
	assert_int_equal(worker(e, 1, n, 0, 16, a), INA_OK);
	const struct ina_emit *f = find(INA_T_DATA, &down), *k = find(INA_T_ACK, &up);
	assert_int_equal(f->hdr.slot, 17);
	assert_int_equal(ntohs(f->dst.port), INA_UDP_PORT_MIN + 1);
	assert_int_equal(k->hdr.slot, 15);
	assert_int_equal(ntohs(k->dst.port), INA_UDP_PORT_MIN + 15);
	/* the downstream's ACK of its 17, from its port 1 */
	struct ina_hdr ack = tl_hdr(INA_T_ACK, INA_D_INT32, 20, 0, 16, 1, 16, E);
	struct ina_addr dfrom = down;
	dfrom.port = htons(INA_UDP_PORT_MIN + 1);
	assert_int_equal(tl_send(e, &dfrom, &ack, NULL), INA_OK);
	assert_int_equal(count_to(INA_T_ACK, &w0) + count_to(INA_T_ACK, &w1), 2);
	/* the workers, listed on one port, are sent to at that port */
	assert_int_equal(ntohs(find(INA_T_ACK, &w0)->dst.port), ntohs(w0.port));
	ina_engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steps),
		cmocka_unit_test(test_sets_by_key),
		cmocka_unit_test(test_install_checks),
		cmocka_unit_test(test_switch_ports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
