/* SPDX-License-Identifier: BSD-3-Clause */
/* Training-step profiles (ring/hcl_workload.c): the shipped ones read back
 * to the measured buckets, and every kind of bad profile is refused with
 * its file and line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_workload.h"

static const char *configs(void)
{
	const char *d = getenv("SWEMU_CONFIGS");
	return d ? d : "configs";
}

/* The four profiles made from the H200 measurements: bucket counts and
 * gradient bytes as measured (DDP's totals), in order. */
static void test_shipped(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		unsigned buckets;
		uint64_t bytes;
		double fwd, bwd;
	} want[] = { { "resnet50", 5, 102228128, 15.596, 21.109 },
		     { "bert-base", 14, 438057192, 18.931, 34.775 },
		     { "gpt2-124M", 13, 497759232, 25.3, 34.0 },
		     { "gpt2-medium-355M", 37, 1419292672, 50.0, 74.3 } };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char path[512], err[512];
		struct hcl_workload w;
		snprintf(path, sizeof(path), "%s/workloads/%s.cfg", configs(), want[i].name);
		if (hcl_workload_load(path, &w, err, sizeof(err)) < 0)
			fail_msg("%s", err);
		assert_string_equal(w.model, want[i].name);
		assert_int_equal(w.nbuckets, want[i].buckets);
		assert_int_equal(w.total_bytes, want[i].bytes);
		assert_true(w.fwd_ms > want[i].fwd - 0.6 && w.fwd_ms < want[i].fwd + 0.6);
		assert_true(w.bwd_ms > want[i].bwd - 0.6 && w.bwd_ms < want[i].bwd + 0.6);
		for (unsigned b = 1; b < w.nbuckets; b++)
			assert_true(w.buckets[b].ready_ms >= w.buckets[b - 1].ready_ms);
		assert_true(hcl_workload_ready(&w, w.nbuckets - 1, 2.0) <= hcl_workload_bwd_end(&w, 2.0));
		hcl_workload_free(&w);
	}
}

/* A bad profile: refused, the message names the line. */
static void refused(const char *text, const char *want)
{
	struct hcl_workload w;
	char err[512] = "";
	if (hcl_workload_parse(text, strlen(text), "p.cfg", &w, err, sizeof(err)) == 0)
		fail_msg("accepted: %s", text);
	if (!strstr(err, want))
		fail_msg("'%s' says '%s', want '%s'", text, err, want);
	assert_null(w.buckets);
}

static void test_bad(void **state)
{
	(void)state;
	const char *ok_head = "workload = { model = \"m\"; fwd_ms = 1.0; bwd_ms = 2.0;\n";
	char t[512];
	refused("workload = 3;", "p.cfg:1: a profile is one group");
	refused("work = { };", "p.cfg:1: unknown setting 'work'");
	refused("workload = { model = \"m\"; fwd_ms = 1; bwd_ms = 2; buckets = ( { bytes = 4; ready_ms = 1; } );\n"
		"  colour = 3; };",
		"p.cfg:2:");
	refused("workload = { model = \"a b\"; fwd_ms = 1; bwd_ms = 2; buckets = ( { bytes = 4; ready_ms = 1; } ); };",
		"model = \"a b\"");
	refused("workload = { model = \"m\"; bwd_ms = 2; buckets = ( { bytes = 4; ready_ms = 1; } ); };",
		"needs fwd_ms and bwd_ms");
	snprintf(t, sizeof(t), "%s buckets = (); };", ok_head);
	refused(t, "p.cfg:2: buckets: a list of 1 to");
	snprintf(t, sizeof(t), "%s buckets = (\n { bytes = 6; ready_ms = 1; } ); };", ok_head);
	refused(t, "p.cfg:3: bytes = 6: fp32 gradients, a multiple of 4");
	snprintf(t, sizeof(t), "%s buckets = (\n { bytes = 8; ready_ms = 3; } ); };", ok_head);
	refused(t, "p.cfg:3:");
	snprintf(t, sizeof(t), "%s buckets = (\n { bytes = 8; ready_ms = 1.5; },\n { bytes = 8; ready_ms = 1.0; } ); };",
		 ok_head);
	refused(t, "p.cfg:4: ready_ms = 1 comes before the bucket ahead of it");
	snprintf(t, sizeof(t), "%s buckets = (\n { bytes = 8; } ); };", ok_head);
	refused(t, "p.cfg:3: a bucket needs ready_ms");
	snprintf(t, sizeof(t), "%s buckets = (\n [8, 1] ); };", ok_head);
	refused(t, "p.cfg:3: a bucket is a group");
	refused("workload = { model = \"m\"", "p.cfg:1:");
	struct hcl_workload w;
	char err[256];
	assert_int_equal(hcl_workload_load("/nonexistent/w.cfg", &w, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/w.cfg:0: cannot read"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped),
		cmocka_unit_test(test_bad),
	};
	return cmocka_run_group_tests_name("workload", tests, NULL, NULL);
}
