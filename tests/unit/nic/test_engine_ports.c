/* SPDX-License-Identifier: BSD-3-Clause */
/* A peer on a switch's INA ports (ina_addr.nports): heard from any of
 * them, none past them, and sent each slot's frames at the slot's port;
 * the job's addresses may not overlap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "testlib.h"

/* A PS whose child is a switch on 16 ports (ina_addr.nports): the ToR's
 * partial of slot 5 may come from its port 5 (any of the 16, none past
 * them), and the PS's result goes back to that port, where the ToR
 * partition holding the slot listens. */
static void test_ps_switch_ports(void **state)
{
	(void)state;
	struct ina_engine *ps = ina_engine_create(64, 8);
	struct ina_addr tor = tl_addr(700), other = tl_addr(701);
	tor.nports = 16;
	struct ina_job_cfg top = tl_job(12, 2, INA_D_INT32, 8, 8);
	top.contributors[0] = tor;
	top.contributors[1] = other;
	assert_int_equal(ina_job_install(ps, &top, NULL), 0);
	uint32_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 12, 0, 5, 0, 0, 8);
	struct ina_addr from = tor;
	from.nports = 0;
	from.port = htons(INA_UDP_PORT_MIN + 16); /* past its ports */
	assert_int_equal(tl_send(ps, &from, &h, v), INA_R_NOT_MEMBER);
	from.port = htons(INA_UDP_PORT_MIN + 5);
	assert_int_equal(tl_send(ps, &from, &h, v), INA_OK);
	h.contributor = 1;
	assert_int_equal(tl_send(ps, &other, &h, v), INA_OK);
	assert_int_equal(tl_out.n, 2);
	for (unsigned i = 0; i < 2; i++) {
		const struct ina_emit *e = &tl_out.e[i];
		assert_int_equal(e->hdr.type, INA_T_RESULT);
		/* the switch at the slot's port, the host at its own */
		assert_int_equal(ntohs(e->dst.port), e->dst.ip == tor.ip ? INA_UDP_PORT_MIN + 5 : INA_UDP_PORT_MIN);
	}
	/* slot 21 of a job of 32 slots: port 21 % 16 = 5 too */
	struct ina_job_cfg wide = tl_job(13, 2, INA_D_INT32, 32, 8);
	wide.contributors[0] = tor;
	wide.contributors[1] = other;
	assert_int_equal(ina_job_install(ps, &wide, NULL), 0);
	h = tl_hdr(INA_T_DATA, INA_D_INT32, 13, 1, 21, 0, 0, 8);
	assert_int_equal(tl_send(ps, &other, &h, v), INA_OK);
	h.contributor = 0;
	assert_int_equal(tl_send(ps, &from, &h, v), INA_OK);
	assert_int_equal(ntohs(tl_out.e[0].dst.port), INA_UDP_PORT_MIN + 5);
	/* a host on one of the switch's ports at its address is refused */
	struct ina_job_cfg clash = tl_job(14, 2, INA_D_INT32, 8, 8);
	clash.contributors[0] = tor;
	clash.contributors[1] = tor;
	clash.contributors[1].nports = 0;
	clash.contributors[1].port = htons(INA_UDP_PORT_MIN + 15);
	const char *why = NULL;
	assert_int_equal(ina_job_install(ps, &clash, &why), -EINVAL);
	assert_non_null(strstr(why, "same address"));
	clash.contributors[1].port = htons(INA_UDP_PORT_MIN + 16);
	assert_int_equal(ina_job_install(ps, &clash, NULL), 0);
	clash.id = 15;
	clash.contributors[1].nports = 17;
	assert_int_equal(ina_job_install(ps, &clash, &why), -EINVAL);
	assert_non_null(strstr(why, "ports"));
	ina_engine_destroy(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ps_switch_ports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
