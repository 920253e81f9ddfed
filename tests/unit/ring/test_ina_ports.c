/* SPDX-License-Identifier: BSD-3-Clause */
/* The INA client spreading a job's slots over an aggregator's UDP ports
 * (hcl_ina_cfg.ports), as it does for a switch: slot s goes to port
 * base + s mod ports, and results come from any of those ports but from
 * no other.  The aggregator here is an engine behind PORTS fake endpoints
 * that answers from the endpoint a datagram came to, as swemu does, and
 * counts which slots came where. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fake_transport.h"
#include "hcl_ina.h"
#include "ina_engine.h"
#include "plan.h"
#include "testlib.h"

#define WORLD 3
#define PORTS 4
#define ELEMS 64
#define SLOTS 8
#define COUNT (20 * ELEMS + 5)

/* Endpoints 0..WORLD-1 are the members, WORLD..WORLD+PORTS-1 the
 * aggregator's ports, WORLD+PORTS one past them (a forger). */
struct agg {
	struct dgram_transport t[PORTS];
	struct ina_engine *eng;
	volatile int stop;
	uint64_t data_on[PORTS]; /* DATA per port */
	uint64_t misplaced;	 /* DATA whose slot is another port's */
};

static void *agg_main(void *arg)
{
	struct agg *g = arg;
	static struct ina_emits out;
	static uint8_t rx[16][INA_HDR_LEN + ELEMS * 4 + 16], tx[INA_HDR_LEN + ELEMS * 4];
	while (!g->stop)
		for (unsigned p = 0; p < PORTS; p++) {
			struct dgram_pkt in[16];
			for (unsigned i = 0; i < 16; i++)
				in[i] = (struct dgram_pkt){ .buf = rx[i], .len = sizeof(rx[i]) };
			int n = g->t[p].ops->recv_batch(g->t[p].ctx, in, 16, 100000);
			for (int i = 0; i < n; i++) {
				struct ina_pkt pkt;
				if (ina_parse(in[i].buf, in[i].len, &pkt) != INA_OK)
					continue;
				if (pkt.hdr.type == INA_T_DATA) {
					g->data_on[p]++;
					g->misplaced += ina_slot_index(pkt.hdr.slot) % PORTS != p;
				}
				struct ina_addr src = { .ip = in[i].peer.sin_addr.s_addr, .port = in[i].peer.sin_port };
				if (ina_engine_rx(g->eng, in[i].buf, in[i].len, &src, &out) != INA_OK)
					continue;
				for (unsigned e = 0; e < out.n; e++) { /* from the port it came to */
					ina_hdr_encode(&out.e[e].hdr, tx);
					memcpy(tx + INA_HDR_LEN, out.e[e].payload, out.e[e].payload_len);
					struct dgram_pkt d = { .buf = tx,
							       .len = (uint32_t)(INA_HDR_LEN + out.e[e].payload_len),
							       .peer = { .sin_family = AF_INET,
									 .sin_addr.s_addr = out.e[e].dst.ip,
									 .sin_port = out.e[e].dst.port } };
					g->t[p].ops->send_batch(g->t[p].ctx, &d, 1);
				}
			}
		}
	return NULL;
}

static int32_t val(unsigned rank, size_t i) { return (int32_t)(rank * 100003u + i * 17u); }

struct member {
	struct fake_hub *hub;
	unsigned rank;
	int rc;
	char err[256];
};

static void *member_main(void *arg)
{
	struct member *m = arg;
	struct dgram_transport t;
	fake_hub_endpoint(m->hub, m->rank, &t);
	struct hcl_ina_cfg cfg = { .shards = 1,
				   .index = (uint16_t)m->rank,
				   .slots = SLOTS,
				   .elems = ELEMS,
				   .rto_us = 2000,
				   .job = { 5 },
				   .sw = { fake_addr(WORLD) },
				   .ports = { PORTS } };
	struct hcl_ina *a = hcl_ina_new(&cfg, &t, m->err, sizeof(m->err));
	if (!a) {
		m->rc = -EINVAL;
		return NULL;
	}
	static int32_t bufs[WORLD][COUNT];
	int32_t *buf = bufs[m->rank];
	for (size_t i = 0; i < COUNT; i++)
		buf[i] = val(m->rank, i);
	m->rc = hcl_ina_allreduce(a, buf, COUNT, HCL_INT32, clock_now_ns() + 10000000000, m->err, sizeof(m->err));
	for (size_t i = 0; m->rc == 0 && i < COUNT; i++) {
		int32_t want = 0;
		for (unsigned r = 0; r < WORLD; r++)
			want = (int32_t)((uint32_t)want + (uint32_t)val(r, i));
		if (buf[i] != want) {
			snprintf(m->err, sizeof(m->err), "element %zu: %d, want %d", i, buf[i], want);
			m->rc = -EBADMSG;
		}
	}
	hcl_ina_free(a);
	return NULL;
}

static void test_slots_spread_over_ports(void **state)
{
	(void)state;
	const struct fake_net net = { .loss = 0.05, .reorder = 0.1, .seed = 9 };
	struct fake_hub *hub = fake_hub_new(WORLD + PORTS + 1, &net);
	static struct agg g;
	memset(&g, 0, sizeof(g));
	assert_non_null(g.eng = ina_engine_create(SLOTS, ELEMS));
	struct ina_job_cfg job;
	plan_job_init(&job, 5, INA_D_INT32, SLOTS, ELEMS, INA_OUT_MULTICAST);
	for (unsigned i = 0; i < WORLD; i++) {
		struct sockaddr_in a = fake_addr(i);
		job.contributors[job.fan_in++] = (struct ina_addr){ .ip = a.sin_addr.s_addr, .port = a.sin_port };
	}
	assert_int_equal(ina_job_install(g.eng, &job, NULL), 0);
	for (unsigned p = 0; p < PORTS; p++)
		fake_hub_endpoint(hub, WORLD + p, &g.t[p]);
	/* a forged first result from the port just past the range waits for
	 * every member: summed in, it would spoil slice 0 */
	struct dgram_transport forger;
	fake_hub_endpoint(hub, WORLD + PORTS, &forger);
	for (unsigned i = 0; i < WORLD; i++) {
		static const uint32_t zeros[ELEMS];
		uint8_t pkt[INA_HDR_LEN + ELEMS * 4];
		struct ina_hdr h = tl_hdr(INA_T_RESULT, INA_D_INT32, 5, (uint16_t)i, 0, 1, 0, ELEMS);
		struct dgram_pkt d = { .buf = pkt,
				       .len = (uint32_t)tl_encode(pkt, &h, zeros, ELEMS),
				       .peer = fake_addr(i) };
		assert_int_equal(forger.ops->send_batch(forger.ctx, &d, 1), 1);
	}
	pthread_t agg, th[WORLD];
	struct member m[WORLD];
	pthread_create(&agg, NULL, agg_main, &g);
	for (unsigned i = 0; i < WORLD; i++) {
		m[i] = (struct member){ .hub = hub, .rank = i };
		pthread_create(&th[i], NULL, member_main, &m[i]);
	}
	for (unsigned i = 0; i < WORLD; i++)
		pthread_join(th[i], NULL);
	g.stop = 1;
	pthread_join(agg, NULL);
	for (unsigned i = 0; i < WORLD; i++)
		if (m[i].rc)
			fail_msg("rank %u: %s", i, m[i].err);
	print_message("# DATA per port: %llu %llu %llu %llu\n", (unsigned long long)g.data_on[0],
		      (unsigned long long)g.data_on[1], (unsigned long long)g.data_on[2],
		      (unsigned long long)g.data_on[3]);
	assert_int_equal(g.misplaced, 0);
	for (unsigned p = 0; p < PORTS; p++)
		assert_true(g.data_on[p] >= WORLD * 4); /* 21 slices over 8 slots: every port had its share */
	ina_engine_destroy(g.eng);
	fake_hub_free(hub);
}

/* A spread that would leave the UDP port range, or more ports than a
 * switch has, is refused with a message. */
static void test_ports_checked(void **state)
{
	(void)state;
	struct fake_hub *hub = fake_hub_new(1, &(struct fake_net){ .seed = 1 });
	struct dgram_transport t;
	fake_hub_endpoint(hub, 0, &t);
	char err[256] = "";
	struct hcl_ina_cfg cfg = { .shards = 1, .slots = SLOTS, .elems = ELEMS, .job = { 5 }, .sw = { fake_addr(0) } };
	cfg.ports[0] = INA_UDP_PORTS + 1;
	assert_null(hcl_ina_new(&cfg, &t, err, sizeof(err)));
	assert_non_null(strstr(err, "ports"));
	cfg.ports[0] = 2;
	cfg.sw[0].sin_port = htons(65535);
	assert_null(hcl_ina_new(&cfg, &t, err, sizeof(err)));
	cfg.sw[0].sin_port = htons(65534);
	struct hcl_ina *a = hcl_ina_new(&cfg, &t, err, sizeof(err));
	assert_non_null(a);
	hcl_ina_free(a);
	fake_hub_free(hub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots_spread_over_ports),
		cmocka_unit_test(test_ports_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
