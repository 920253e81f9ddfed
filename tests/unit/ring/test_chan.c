/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring channels left to the library (ring/hcl_chan.c): the count every rank
 * computes from the rendezvous fields, and the fields it refuses.  The
 * channels at work are test_comm's (test_channels) and netns-ring's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "hcl_chan.h"

/* Auto: every rank's CPUs shared among the ranks on its machine, the fewest
 * of any rank, 1 to 4; the same answer from the same rendezvous fields. */
static unsigned settle(int world, const char *const *fields)
{
	struct hcl_chan ch;
	char err[64];
	assert_int_equal(hcl_chan_init(&ch, 0, 0, world, err, sizeof(err)), 0);
	for (int i = 0; i < world; i++)
		assert_int_equal(hcl_chan_parse(&ch, i, fields[i]), 0);
	unsigned n = hcl_chan_settle(&ch);
	free(ch.ports);
	free(ch.machine);
	free(ch.cpus);
	return n;
}

static void test_channels_auto(void **state)
{
	(void)state;
	/* 4 ranks on one 16-core machine: a core each for 4 channels */
	const char *one16[] = { "a1f/16:1,2,3", "a1f/16:4,5,6", "a1f/16:7,8,9", "a1f/16:10,11,12" };
	assert_int_equal(settle(4, one16), 4);
	/* 8 ranks on one 16-core machine: 2 each; 4 on each of two: 4 each */
	const char *eight16[] = { "a1/16:1,2,3", "a1/16:1,2,3", "a1/16:1,2,3", "a1/16:1,2,3",
				  "a1/16:1,2,3", "a1/16:1,2,3", "a1/16:1,2,3", "a1/16:1,2,3" };
	assert_int_equal(settle(8, eight16), 2);
	const char *two16[] = { "a1/16:1,2,3", "a1/16:1,2,3", "a1/16:1,2,3", "a1/16:1,2,3",
				"a2/16:1,2,3", "a2/16:1,2,3", "a2/16:1,2,3", "a2/16:1,2,3" };
	assert_int_equal(settle(8, two16), 4);
	/* one host per machine, a small one among them: the fewest decides */
	const char *mixed[] = { "a1/64:1,2,3", "a2/3:1,2,3", "a3/64:1,2,3" };
	assert_int_equal(settle(3, mixed), 3);
	/* this machine's kind: 2 cores for 4 ranks */
	const char *small[] = { "a9/2:1,2,3", "a9/2:1,2,3", "a9/2:1,2,3", "a9/2:1,2,3" };
	assert_int_equal(settle(4, small), 1);
	/* never more than 4 */
	const char *big[] = { "ab/256:1,2,3", "ac/256:1,2,3" };
	assert_int_equal(settle(2, big), 4);
	/* malformed fields are refused */
	struct hcl_chan ch;
	char err[64];
	assert_int_equal(hcl_chan_init(&ch, 0, 0, 1, err, sizeof(err)), 0);
	assert_int_equal(hcl_chan_parse(&ch, 0, "-"), -1);
	assert_int_equal(hcl_chan_parse(&ch, 0, "a1/0:1,2,3"), -1);
	assert_int_equal(hcl_chan_parse(&ch, 0, "a1/4:1,2"), -1);
	assert_int_equal(hcl_chan_parse(&ch, 0, "a/4:1,2,3"), -1);
	assert_non_null(hcl_chan_check(&ch, "1,2"));
	assert_null(hcl_chan_check(&ch, "a1/4:1,2,3"));
	free(ch.ports);
	free(ch.machine);
	free(ch.cpus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_channels_auto),
	};
	return cmocka_run_group_tests_name("chan", tests, NULL, NULL);
}
