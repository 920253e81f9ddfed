/* SPDX-License-Identifier: BSD-3-Clause */
/* The ps-ina plan: which aggregator each rank uses, as which index, and the
 * jobs the agents install, for every mix of INA and plain racks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <arpa/inet.h>
#include <string.h>

#include <cmocka.h>

#include "psina_plan.h"

static struct ina_addr A(uint32_t host, uint16_t port) {
	return (struct ina_addr){ .ip = htonl(0x0a000000u | host), .port = htons(port) };
}

/* n ranks in racks of size; racks listed in ina have ToR 10.0.0.(250-r) */
static void
ranks(struct plan_rank *r, unsigned n, unsigned size, unsigned ina_mask)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned rack = i / size;
		r[i] = (struct plan_rank){ .ina = A(i + 1, 48864), .rack = (int)rack };
		if (ina_mask >> rack & 1)
			r[i].tor = A(250 - rack, 48864);
	}
}

static const struct ina_addr ps = { .ip = 0x0100000a, .port = 0xe6be }; /* 10.0.0.1:48870 */

static void test_one_ina_rack_is_switchml(void **st)
{
	(void)st;
	struct plan_rank r[4];
	struct psina_plan p;
	char err[200];
	ranks(r, 4, 4, 1);
	assert_int_equal(psina_plan(r, 4, &ps, 7, INA_D_FP32, 16, 1024, &p, err, sizeof(err)), 0);
	assert_false(p.use_ps);
	assert_int_equal(p.ntor, 1);
	assert_int_equal(p.tor[0].agent, 0);
	assert_int_equal(p.tor[0].job.outputs, INA_OUT_MULTICAST);
	assert_int_equal(p.tor[0].job.fan_in, 4);
	assert_null(ina_job_cfg_check(&p.tor[0].job, 2048));
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(p.client[i].server.ip, r[i].tor.ip);
		assert_int_equal(p.client[i].index, i);
		assert_int_equal(p.tor[0].job.contributors[i].ip, r[i].ina.ip);
	}
	psina_plan_free(&p);
}

static void test_mixed_racks_fall_back_to_ps(void **st)
{
	(void)st;
	struct plan_rank r[12];
	struct psina_plan p;
	char err[200];
	ranks(r, 12, 4, 0x2 | 0x4); /* rack 0 plain, racks 1 and 2 INA */
	assert_int_equal(psina_plan(r, 12, &ps, 3, INA_D_INT32, 8, 512, &p, err, sizeof(err)), 0);
	assert_true(p.use_ps);
	assert_int_equal(p.ntor, 2);
	/* PS contributors: the two ToRs, then rack 0's four ranks */
	assert_int_equal(p.ps.fan_in, 6);
	assert_int_equal(p.ps.outputs, INA_OUT_MULTICAST | INA_OUT_MISS);
	assert_null(ina_job_cfg_check(&p.ps, 2048));
	for (unsigned t = 0; t < 2; t++) {
		assert_int_equal(p.tor[t].rack, (int)t + 1);
		assert_int_equal(p.tor[t].agent, 4 * (t + 1));
		assert_int_equal(p.tor[t].job.outputs, INA_OUT_PS);
		assert_int_equal(p.tor[t].job.parent.contributor, t);
		assert_int_equal(p.tor[t].job.parent.addr.ip, ps.ip);
		assert_int_equal(p.tor[t].job.id, 3);
		assert_int_equal(p.ps.contributors[t].ip, r[4 * (t + 1)].tor.ip);
		assert_null(ina_job_cfg_check(&p.tor[t].job, 2048));
	}
	for (unsigned i = 0; i < 12; i++) {
		if (i < 4) {
			assert_int_equal(p.client[i].server.ip, ps.ip);
			assert_int_equal(p.client[i].server.port, ps.port);
			assert_int_equal(p.client[i].index, 2 + i);
			assert_int_equal(p.ps.contributors[2 + i].ip, r[i].ina.ip);
		} else {
			assert_int_equal(p.client[i].server.ip, r[i].tor.ip);
			assert_int_equal(p.client[i].index, i % 4);
		}
	}
	psina_plan_free(&p);
}

static void test_no_ina_is_plain_ps(void **st)
{
	(void)st;
	struct plan_rank r[5];
	struct psina_plan p;
	char err[200];
	ranks(r, 5, 5, 0);
	assert_int_equal(psina_plan(r, 5, &ps, 1, INA_D_FP32, 4, 256, &p, err, sizeof(err)), 0);
	assert_true(p.use_ps);
	assert_int_equal(p.ntor, 0);
	assert_int_equal(p.ps.fan_in, 5);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(p.client[i].index, i);
	psina_plan_free(&p);
}

static void test_inconsistent_racks_refused(void **st)
{
	(void)st;
	struct plan_rank r[4];
	struct psina_plan p;
	char err[200];
	ranks(r, 4, 4, 1);
	r[2].tor = A(249, 48864); /* another switch in the same rack */
	assert_int_equal(psina_plan(r, 4, &ps, 1, INA_D_FP32, 4, 256, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "different INA switches"));
	ranks(r, 4, 4, 1);
	memset(&r[3].tor, 0, sizeof(r[3].tor)); /* one rank of an INA rack without it */
	assert_int_equal(psina_plan(r, 4, &ps, 1, INA_D_FP32, 4, 256, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "has no INA switch"));
}

/* Shards spread evenly over the ranks, each on a rank of its own; a
 * shard's job is the plan's with its own id, and a ToR job's parent is
 * that shard's PS under that id. */
static void test_shards(void **st)
{
	(void)st;
	int hosts8[8], hosts3[3];
	for (unsigned h = 0; h < 8; h++)
		hosts8[h] = psina_shard_host(h, 8, 8);
	for (unsigned h = 0; h < 3; h++)
		hosts3[h] = psina_shard_host(h, 3, 8);
	for (int h = 0; h < 8; h++)
		assert_int_equal(hosts8[h], h);
	assert_int_equal(hosts3[0], 0);
	assert_int_equal(hosts3[1], 2);
	assert_int_equal(hosts3[2], 5);
	assert_int_equal(psina_shard_host(0, 1, 5), 0);

	struct plan_rank r[8];
	struct psina_plan p;
	char err[200];
	ranks(r, 8, 4, 2); /* rack 1 INA, rack 0 plain */
	assert_int_equal(psina_plan(r, 8, &ps, 5, INA_D_FP32, 8, 1024, &p, err, sizeof(err)), 0);
	assert_true(p.use_ps);
	const struct ina_addr ps3 = A(6, 48873);
	struct ina_job_cfg tor, pj;
	psina_shard_job(&p.tor[0].job, 11, &ps3, &tor);
	psina_shard_job(&p.ps, 11, &ps3, &pj);
	assert_int_equal(tor.id, 11);
	assert_int_equal(tor.parent.job, 11);
	assert_int_equal(tor.parent.addr.ip, ps3.ip);
	assert_int_equal(tor.parent.addr.port, ps3.port);
	assert_int_equal(tor.parent.contributor, p.tor[0].job.parent.contributor);
	assert_int_equal(tor.fan_in, 4);
	assert_int_equal(pj.id, 11);
	assert_int_equal(pj.outputs, INA_OUT_MULTICAST | INA_OUT_MISS);
	assert_int_equal(pj.fan_in, p.ps.fan_in);
	assert_memory_equal(pj.contributors, p.ps.contributors, sizeof(pj.contributors));
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(p.client[i].to_ps, i < 4);
	psina_plan_free(&p);
	/* ps_shards = 0: one per host up to 16, and where racks send
	 * partials (ps-ina) up to 4 per rack if that is more */
	assert_int_equal(psina_auto_shards(8, 2, true), 8);
	assert_int_equal(psina_auto_shards(20, 4, true), 16);
	assert_int_equal(psina_auto_shards(64, 8, true), 32);
	assert_int_equal(psina_auto_shards(256, 16, true), 64);
	assert_int_equal(psina_auto_shards(1024, 32, true), 128);
	assert_int_equal(psina_auto_shards(100, 100, true), 100);
	assert_int_equal(psina_auto_shards(8, 2, false), 8);
	assert_int_equal(psina_auto_shards(1024, 32, false), 16);
}

/* A shard's slots: the rank's window dealt over the shards, at least two
 * where every contributor's two slices fit the shard's window budget,
 * with or without ToRs aggregating; and slices small enough that two per
 * shard hold no more than the rank's own window (slots x elems). */
static void test_shard_slots(void **st)
{
	(void)st;
	struct plan_rank r[64];
	struct psina_plan p;
	char err[200];
	ranks(r, 8, 4, 0); /* no INA rack: every rank to the shards */
	assert_int_equal(psina_plan(r, 8, &ps, 5, INA_D_FP32, 8, 2048, &p, err, sizeof(err)), 0);
	assert_int_equal(p.ntor, 0);
	assert_int_equal(psina_shard_slots(&p, 8, 8, 2048), PSINA_MIN_SHARD_SLOTS); /* 8 x 2 x 8 KiB = 128 KiB */
	assert_int_equal(psina_shard_slots(&p, 8, 2, 2048), 4);			    /* dealt: already more */
	assert_int_equal(psina_shard_slots(&p, 8, 1, 2048), 8);
	assert_int_equal(psina_shard_spares(&p), PSINA_SPARE_SLOTS); /* stalled slices step aside */
	assert_int_equal(psina_shard_elems(&p, 8, 8, 2048), 1024);   /* 8 x 2 x 4 KiB: the rank's 8 x 8 KiB */
	assert_int_equal(psina_shard_elems(&p, 8, 4, 2048), 2048);   /* 4 x 2 x 8 KiB */
	assert_int_equal(psina_shard_elems(&p, 16, 8, 2048), 2048);  /* a larger window asked for */
	psina_plan_free(&p);
	ranks(r, 8, 4, 2); /* rack 1 INA: its ToR and rack 0's four ranks to the shards */
	assert_int_equal(psina_plan(r, 8, &ps, 5, INA_D_FP32, 8, 2048, &p, err, sizeof(err)), 0);
	assert_int_equal(p.ntor, 1);
	assert_int_equal(psina_shard_slots(&p, 8, 8, 2048), PSINA_MIN_SHARD_SLOTS); /* behind a ToR too */
	assert_int_equal(psina_shard_spares(&p), 0);		   /* behind ToRs: none (docs/BENCHMARKS.md, "Loss") */
	assert_int_equal(psina_shard_elems(&p, 8, 8, 2048), 1024); /* behind a ToR too */
	assert_int_equal(p.ps.idle_miss_us, PSINA_IDLE_MISS_US);   /* the software PS reports silences */
	assert_int_equal(p.tor[0].job.idle_miss_us, 0);		   /* a switch does not */
	psina_plan_free(&p);
	ranks(r, 64, 8, 0); /* 64 contributors x 2 x 8 KiB = 1 MiB: over the budget */
	assert_int_equal(psina_plan(r, 64, &ps, 5, INA_D_FP32, 8, 2048, &p, err, sizeof(err)), 0);
	assert_int_equal(psina_shard_slots(&p, 8, 16, 2048), 1);
	assert_int_equal(psina_shard_slots(&p, 8, 16, 256), PSINA_MIN_SHARD_SLOTS); /* 64 x 2 x 1 KiB */
	/* one shard: 64 x 8 slots x 8 KiB (4 MiB) would reach its one link at
	 * once; held to the in-flight budget, 512 KiB: one each */
	assert_int_equal(psina_shard_slots(&p, 8, 1, 2048), PSINA_SHARD_INFLIGHT_BYTES / (64 * 8192));
	assert_int_equal(psina_shard_slots(&p, 8, 1, 2048), 1);
	assert_int_equal(psina_shard_slots(&p, 8, 1, 512), 4); /* 64 x 4 x 2 KiB */
	assert_int_equal(psina_shard_slots(&p, 8, 1, 128), 8); /* 64 x 8 x 512 B fits */
	/* smaller slices where they give two: 4 KiB to one shard (the
	 * in-flight share), 2 KiB to each of 16 (the two-slot window rule) */
	assert_int_equal(psina_shard_elems(&p, 8, 1, 2048), 1024);
	assert_int_equal(psina_shard_slots(&p, 8, 1, 1024), PSINA_MIN_SHARD_SLOTS);
	assert_int_equal(psina_shard_elems(&p, 8, 16, 2048), 512);
	assert_int_equal(psina_shard_slots(&p, 8, 16, 512), PSINA_MIN_SHARD_SLOTS);
	assert_int_equal(psina_shard_elems(&p, 8, 1, 512), 512); /* never more than asked */
	psina_plan_free(&p);
	/* every rack INA, 8 ToRs to each of 16 shards: two slices of 2 KiB
	 * each, the rank's 64 KiB in flight, not 16 x 2 x 8 KiB (a 10 ms
	 * queue on a 200M link: docs/SCALE.md) */
	ranks(r, 64, 8, 0xff);
	assert_int_equal(psina_plan(r, 64, &ps, 5, INA_D_FP32, 8, 2048, &p, err, sizeof(err)), 0);
	assert_int_equal(p.ntor, 8);
	assert_int_equal(psina_shard_elems(&p, 8, 16, 2048), 512);
	assert_int_equal(psina_shard_slots(&p, 8, 16, 512), PSINA_MIN_SHARD_SLOTS);
	assert_int_equal(psina_shard_elems(&p, 1, 16, 2048), PSINA_MIN_SLICE_ELEMS); /* never below */
	psina_plan_free(&p);
	/* 200 contributors of 8 KiB: past the budget with one slice each, still one */
	struct plan_rank big[200];
	ranks(big, 200, 8, 0);
	assert_int_equal(psina_plan(big, 200, &ps, 5, INA_D_FP32, 8, 2048, &p, err, sizeof(err)), 0);
	assert_int_equal(psina_shard_slots(&p, 8, 1, 2048), 1);
	assert_int_equal(psina_shard_elems(&p, 8, 1, 2048), 320); /* 200 x 2 x 1280 B */
	/* two 256 B slices would give two: too small; one each, small
	 * enough that 200 frames of it fit the share: 200 x (2496 + 90) B */
	assert_int_equal(psina_shard_elems(&p, 8, 16, 2048), 624);
	assert_true(200 * (624 * 4 + PSINA_FRAME_OVERHEAD) <= PSINA_SHARD_INFLIGHT_BYTES);
	assert_int_equal(psina_shard_slots(&p, 8, 16, 624), 1);
	psina_plan_free(&p);
}

/* Plain racks under the PS get a software aggregator each: past the PS's
 * contributor limit by default, everywhere on request, never on request
 * (then the limit is a named error). */
static void test_rack_aggregators(void **st)
{
	(void)st;
	static struct plan_rank r[300];
	struct psina_plan p;
	char err[200];
	ranks(r, 300, 20, 0); /* 15 plain racks of 20: 300 contributors flat */
	assert_int_equal(psina_plan(r, 300, &ps, 5, INA_D_FP32, 8, 2048, &p, err, sizeof(err)), 0);
	assert_int_equal(p.nrackagg, 15);
	assert_int_equal(p.ps.fan_in, 15);
	assert_int_equal(psina_soft_fan_in(&p), 20);
	for (unsigned a = 0; a < 15; a++) {
		assert_int_equal(p.rackagg[a].job.fan_in, 20);
		assert_int_equal(p.rackagg[a].job.outputs, INA_OUT_PS);
		assert_int_equal(p.rackagg[a].job.parent.contributor, a);
		assert_null(ina_job_cfg_check(&p.rackagg[a].job, 2048));
	}
	assert_int_equal(p.client[47].rackagg, 2);
	assert_int_equal(p.client[47].index, 7);
	/* 16 shards: a rack of 20 has 18 or 19 ranks that host no PS shard,
	 * enough for one shard each (rack 0: PS hosts 0 and 18; rack 2: 56) */
	assert_int_equal(psina_shard_host(1, 16, 300), 18);
	assert_int_equal(psina_shard_host(3, 16, 300), 56);
	assert_int_equal(psina_rackagg_host(&p, 0, 0, 16), 1);
	assert_int_equal(psina_rackagg_host(&p, 0, 1, 16), 2);
	assert_int_equal(psina_rackagg_host(&p, 0, 15, 16), 16);
	assert_int_equal(psina_rackagg_host(&p, 2, 3, 16), 43);
	assert_int_equal(psina_rackagg_host(&p, 2, 15, 16), 55);
	/* 32 shards: not enough; dealt over the rack (h mod 20) but off PS
	 * shard h's host (psina_shard_host(12, 32, 300) = 112, rack 5's 12th) */
	assert_int_equal(psina_rackagg_host(&p, 0, 21, 32), 1);
	assert_int_equal(psina_shard_host(12, 32, 300), 112);
	assert_int_equal(psina_rackagg_host(&p, 5, 12, 32), 113);
	assert_int_equal(psina_rackagg_host(&p, 5, 13, 32), 113);
	assert_int_equal(psina_rackagg_host(&p, 0, 0, 32), 1);
	/* at the hosting rank's own port: base + rank */
	struct ina_addr at = psina_client_server(&p, 47, 3, 16, &ps, 9000);
	assert_int_equal(at.ip, r[43].ina.ip);
	assert_int_equal(at.port, htons(9043));
	struct ina_job_cfg j;
	psina_shard_ps_job(&p, 3, 16, 9, &ps, 9000, &j);
	assert_int_equal(j.id, 9);
	assert_int_equal(j.contributors[2].ip, r[43].ina.ip);
	assert_int_equal(j.contributors[2].port, htons(9043));
	psina_plan_free(&p);
	assert_int_equal(
		psina_plan_racks(r, 300, &ps, 5, INA_D_FP32, 8, 2048, PSINA_RACKAGG_NEVER, &p, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "more than 256 contributors"));
	/* within the limit by default none; on request one per plain rack of
	 * two or more, the INA racks' ToRs and lone ranks as before */
	ranks(r, 12, 4, 2);
	r[11].rack = 9; /* a plain rack of one */
	assert_int_equal(psina_plan(r, 12, &ps, 5, INA_D_FP32, 8, 2048, &p, err, sizeof(err)), 0);
	assert_int_equal(p.nrackagg, 0);
	assert_int_equal(p.ps.fan_in, 1 + 4 + 4);
	psina_plan_free(&p);
	assert_int_equal(
		psina_plan_racks(r, 12, &ps, 5, INA_D_FP32, 8, 2048, PSINA_RACKAGG_ALWAYS, &p, err, sizeof(err)), 0);
	assert_int_equal(p.nrackagg, 2);
	assert_int_equal(p.rackagg[0].n, 4);
	assert_int_equal(p.rackagg[1].n, 3);
	assert_int_equal(p.ps.fan_in, 1 + 2 + 1); /* the ToR, two rack aggregators, rank 11 */
	assert_true(p.client[11].to_ps);
	assert_int_equal(p.client[11].rackagg, -1);
	assert_int_equal(p.client[11].index, 3);
	assert_false(p.client[5].to_ps); /* behind its ToR */
	assert_int_equal(p.client[5].rackagg, -1);
	psina_plan_free(&p);
	/* one plain rack alone: nothing to aggregate under */
	ranks(r, 8, 8, 0);
	assert_int_equal(
		psina_plan_racks(r, 8, &ps, 5, INA_D_FP32, 8, 2048, PSINA_RACKAGG_ALWAYS, &p, err, sizeof(err)), 0);
	assert_int_equal(p.nrackagg, 0);
	psina_plan_free(&p);
	/* a plain rack past one aggregator's limit */
	ranks(r, 300, 280, 0);
	assert_int_equal(psina_plan(r, 300, &ps, 5, INA_D_FP32, 8, 2048, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "rack 0 has 280 ranks"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_ina_rack_is_switchml),
		cmocka_unit_test(test_mixed_racks_fall_back_to_ps),
		cmocka_unit_test(test_no_ina_is_plain_ps),
		cmocka_unit_test(test_inconsistent_racks_refused),
		cmocka_unit_test(test_shards),
		cmocka_unit_test(test_shard_slots),
		cmocka_unit_test(test_rack_aggregators),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
