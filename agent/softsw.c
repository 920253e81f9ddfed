/* SPDX-License-Identifier: BSD-3-Clause */
#include "softsw.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 64
#define PKT   (INA_HDR_LEN + INA_MAX_PAYLOAD + 64)

struct softsw {
	struct dgram_transport t;
	struct ina_engine *eng;
	struct ina_emits *emits;
	pthread_t thread;
	atomic_bool stop;
	uint8_t *rx[BATCH];
	uint8_t *tx; /* frames of one emit batch */
};

/* The engine's emits out (best effort: a result lost here is asked for
 * again). */
static void send_emits(struct softsw *ps)
{
	struct dgram_pkt out[INA_MAX_EMITS];
	unsigned k = 0;
	for (unsigned e = 0; e < ps->emits->n; e++) {
		const struct ina_emit *em = &ps->emits->e[e];
		uint8_t *f = ps->tx + (size_t)e * PKT;
		ina_hdr_encode(&em->hdr, f);
		memcpy(f + INA_HDR_LEN, em->payload, em->payload_len);
		out[k++] = (struct dgram_pkt){
			.buf = f,
			.len = (uint32_t)(INA_HDR_LEN + em->payload_len),
			.peer = { .sin_family = AF_INET, .sin_port = em->dst.port, .sin_addr.s_addr = em->dst.ip }
		};
	}
	for (unsigned sent = 0; sent < k;) {
		int r = ps->t.ops->send_batch(ps->t.ctx, out + sent, k - sent);
		if (r <= 0 && ps->t.ops->wait_send(ps->t.ctx, 10000000) <= 0)
			break;
		if (r > 0)
			sent += (unsigned)r;
	}
}

static void set_time(struct softsw *ps)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ina_engine_set_time(ps->eng, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
}

static void *serve(void *arg)
{
	struct softsw *ps = arg;
	struct dgram_pkt in[BATCH];

	while (!atomic_load(&ps->stop)) {
		for (int i = 0; i < BATCH; i++)
			in[i] = (struct dgram_pkt){ .buf = ps->rx[i], .len = PKT };
		/* a bounded wait, so that stop is seen within 50 ms; shorter
		 * when an idle report may come due (ina_job_cfg.idle_miss_us) */
		const long idle_us = ina_engine_idle_wait(ps->eng);
		const int64_t wait = idle_us >= 0 && idle_us < 50000 ? (idle_us + 100) * 1000 : 50000000;
		int n = ps->t.ops->recv_batch(ps->t.ctx, in, BATCH, wait);
		set_time(ps);
		for (int i = 0; i < n; i++) {
			struct ina_addr src = { .ip = in[i].peer.sin_addr.s_addr, .port = in[i].peer.sin_port };
			ina_take_ce(in[i].buf, in[i].len, in[i].ce); /* into the slot's results */
			if (ina_engine_rx(ps->eng, in[i].buf, in[i].len, &src, ps->emits) == INA_OK)
				send_emits(ps); /* else counted by the engine */
		}
		ina_engine_poll(ps->eng, ps->emits);
		send_emits(ps);
	}
	return NULL;
}

/* Frees what start allocated (the thread and socket are the callers'). */
static void ps_free(struct softsw *ps)
{
	for (int i = 0; i < BATCH; i++)
		free(ps->rx[i]);
	free(ps->tx);
	free(ps->emits);
	ina_engine_destroy(ps->eng);
	free(ps);
}

struct softsw *softsw_start_on(struct dgram_transport *t, const struct ina_job_cfg *jobs, unsigned njobs, char *err,
			       size_t errlen)
{
	struct softsw *ps = calloc(1, sizeof(*ps));
	const char *why;
	if (!ps)
		goto nomem;
	uint32_t slots = 0;
	uint16_t elems = 1;
	for (unsigned j = 0; j < njobs; j++) {
		slots += jobs[j].nslots;
		if (jobs[j].elems_per_slot > elems)
			elems = jobs[j].elems_per_slot;
	}
	if (!(ps->eng = ina_engine_create(slots ? slots : 1, elems)) || !(ps->emits = malloc(sizeof(*ps->emits))) ||
	    !(ps->tx = malloc((size_t)INA_MAX_EMITS * PKT)))
		goto nomem;
	for (int i = 0; i < BATCH; i++)
		if (!(ps->rx[i] = malloc(PKT)))
			goto nomem;
	for (unsigned j = 0; j < njobs; j++)
		if (ina_job_install(ps->eng, &jobs[j], &why) < 0) {
			snprintf(err, errlen, "software aggregator: job %u: %s", jobs[j].id, why);
			goto fail;
		}
	ps->t = *t;
	if (pthread_create(&ps->thread, NULL, serve, ps) != 0) {
		snprintf(err, errlen, "software aggregator: cannot start its thread");
		goto fail;
	}
	return ps;
nomem:
	snprintf(err, errlen, "software aggregator: out of memory");
fail:
	if (ps)
		ps_free(ps);
	dgram_close(t);
	return NULL;
}

struct softsw *softsw_start(const struct sockaddr_in *addr, const struct ina_job_cfg *jobs, unsigned njobs, char *err,
			    size_t errlen)
{
	struct dgram_transport t;
	if (dgram_udp_open(&t, addr, &(struct dgram_udp_opts){ .zero_checksum = 1, .ecn = 1 }, err, errlen) < 0)
		return NULL;
	return softsw_start_on(&t, jobs, njobs, err, errlen);
}

void softsw_stop(struct softsw *ps)
{
	if (!ps)
		return;
	atomic_store(&ps->stop, true);
	pthread_join(ps->thread, NULL);
	dgram_close(&ps->t);
	ps_free(ps);
}

const struct ina_engine_stats *softsw_stats(const struct softsw *ps) { return ina_engine_stats(ps->eng); }

const struct ina_job_stats *softsw_job_stats(const struct softsw *ps, uint16_t id)
{
	return ina_job_stats(ps->eng, id);
}
