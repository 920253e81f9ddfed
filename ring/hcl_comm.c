/* SPDX-License-Identifier: BSD-3-Clause */
/* The communicator: settings (hcl_env.c), the algorithm's preparation,
 * the rendezvous (hcl_rendezvous.c), the reliable transfer, the
 * algorithm's setup; then every call through the timing layer to the
 * algorithm (hcl_algo.h), with the conversions every algorithm shares:
 * bf16 widened to binary32 (or sent as bf16 by an algorithm that sums it
 * so), and the average taken from the sum. */
#define _GNU_SOURCE
#include "hcl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "hcl_algo.h"
#include "hcl_comm_int.h"
#include "hcl_ring.h"
#include "hcl_sync.h"
#include "hcl_xfer.h"
#include "ina_kernels.h"
#include "ina_proto.h"

int hcl_comm_poll_xfer(void *ctx)
{
	struct hcl_comm *c = ctx;
	int from;
	hcl_xfer_poll(c->x);
	/* a peer that lost it in this call or a later one, or in the call
	 * before this one (it is behind, in its fall-back, and this call
	 * cannot finish without it) */
	uint32_t lost = hcl_xfer_lost_call(c->x, &from);
	return lost && lost + 1 >= c->calls ? from + 1 : 0;
}

int hcl_comm_barrier(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen)
{
	int32_t one = 1;
	int rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, &one, 1, HCL_INT32, ++c->epoch,
				    deadline, err, errlen);
	if (rc == 0)
		hcl_xfer_linger(c->x, hcl_xfer_quiet_ns(c->x), deadline);
	return rc;
}

int hcl_ina_mtu_check(const struct hcl_comm *c, const char *name, char *err, size_t errlen)
{
	/* a packet the host has to fragment is one no switch can aggregate:
	 * on the af_xdp testbed (MTU 3000) 4 KiB packets made every call time
	 * out, with nothing said */
	const struct plan_rank *me = &c->info[c->rank];
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_addr.s_addr = me->tor.ip,
				   .sin_port = me->tor.port ? me->tor.port : htons(9) };
	if (!dst.sin_addr.s_addr) {
		if (c->world < 2)
			return 0;
		dst = c->peers[(c->rank + 1) % c->world];
	}
	struct sockaddr_in src = c->peers[c->rank];
	src.sin_port = 0;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), mtu = 0;
	socklen_t len = sizeof(mtu);
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
			connect(fd, (struct sockaddr *)&dst, sizeof(dst)) != 0 ||
			getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &len) != 0))
		mtu = 0; /* cannot tell: the switch's counters will */
	if (fd >= 0)
		close(fd);
	int elems = c->env.ina_elems, need = 20 + 8 + INA_HDR_LEN + elems * INA_ELEM_SIZE;
	if (mtu <= 0 || need <= mtu)
		return 0;
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &dst.sin_addr, ip, sizeof(ip));
	return hcl_fail(-EMSGSIZE, err, errlen,
			"%s: INA packets of %d elements are %d bytes, more than the MTU %d towards %s:%u; "
			"set HCL_INA_ELEMS (cfg.ina_elems) to %d or fewer",
			name, elems, need, mtu, ip, ntohs(dst.sin_port), (mtu - 20 - 8 - INA_HDR_LEN) / INA_ELEM_SIZE);
}

static struct hcl_comm *comm_new(const struct hcl_env *e)
{
	struct hcl_comm *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->env = *e;
	c->rank = e->rank;
	c->world = e->world;
	c->algo = hcl_algo_of(e->algo);
	c->peers = calloc((size_t)e->world, sizeof(*c->peers));
	c->info = calloc((size_t)e->world, sizeof(*c->info));
	c->extra = calloc((size_t)e->world, sizeof(*c->extra));
	if (!c->peers || !c->info || !c->extra) {
		hcl_comm_destroy(c);
		return NULL;
	}
	c->info[c->rank].rack = e->rack;
	snprintf(c->extra[c->rank], HCL_EXTRA_LEN, "-");
	return c;
}

int hcl_comm_create(const struct hcl_comm_cfg *cfg, struct hcl_comm **out, char *err, size_t errlen)
{
	struct hcl_env e;
	*out = NULL;
	if (!cfg)
		return hcl_fail(-EINVAL, err, errlen, "no configuration");
	int rc = hcl_env_resolve(cfg, &e, err, errlen);
	if (rc < 0)
		return rc;
	struct hcl_comm *c = comm_new(&e);
	if (!c)
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	/* the kernel coalesces what a peer sent as one run: one receive and
	 * one trip through the stack for up to 64 KB (docs/HOSTLIB.md) */
	struct dgram_udp_opts data_opts = { .gro = 1 };
	int64_t deadline = clock_now_ns() + e.timeout_ns;
	if ((c->algo->prepare && (rc = c->algo->prepare(c, &data_opts, err, errlen)) < 0) ||
	    (rc = hcl_rendezvous(c, &data_opts, deadline, err, errlen)) < 0)
		goto fail;
	struct hcl_xfer_cfg xc;
	hcl_comm_xfer_cfg(c, &xc);
	if (!(c->x = hcl_xfer_new(&xc, &c->t, err, errlen))) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = c->algo->setup(c, deadline, err, errlen)) < 0)
		goto fail;
	if (!(c->sync = hcl_sync_new(&e.sync, c->x, c->rank, c->world, c->algo->name, deadline, err, errlen))) {
		rc = -EINVAL;
		goto fail;
	}
	c->ready = true;
	*out = c;
	return 0;
fail:
	hcl_comm_destroy(c);
	return rc;
}

void hcl_comm_destroy(struct hcl_comm *c)
{
	if (!c)
		return;
	if (c->ready && c->algo->serves_others) {
		/* everyone is done with the aggregators before they go; a dead
		 * peer only shortens the wait to the barrier's deadline */
		char e[64];
		int64_t t = c->env.timeout_ns < 10000000000 ? c->env.timeout_ns : 10000000000;
		hcl_comm_barrier(c, clock_now_ns() + t, e, sizeof(e));
	}
	if (c->ready && hcl_sync_on(c->sync)) {
		struct hcl_comm_stats st;
		hcl_comm_stats(c, &st);
		hcl_sync_trace_host(c->sync, &st);
	}
	if (c->algo && c->algo->teardown) /* also after a failed start: leaves the switches clean */
		c->algo->teardown(c);
	if (c->x) /* our last ACKs may be lost: answer re-sends before leaving */
		hcl_xfer_linger_final(c->x, clock_now_ns() + 2000000000);
	hcl_sync_free(c->sync);
	hcl_xfer_free(c->x);
	dgram_close(&c->t);
	free(c->peers);
	free(c->info);
	free(c->extra);
	free(c->scratch);
	free(c);
}

int hcl_comm_stats(const struct hcl_comm *c, struct hcl_comm_stats *out)
{
	if (!c || !out)
		return -EINVAL;
	*out = (struct hcl_comm_stats){ .ina_fallback_calls = c->ina_fallback_calls };
	if (c->x) {
		const struct hcl_xfer_stats *x = hcl_xfer_stats(c->x);
		out->xfer_sent = x->data_sent;
		out->xfer_resent = x->data_resent;
		out->xfer_timeouts = x->timeouts;
		out->xfer_sends = x->data_runs;
		out->xfer_rx_runs = x->rx_runs;
		out->xfer_acks = x->acks_sent;
		out->xfer_halved = x->cwnd_halved;
		out->xfer_local_waits = x->local_waits;
		out->xfer_peer_waits = x->waits_received;
	}
	if (c->algo->stats)
		c->algo->stats(c, out);
	return 0;
}

int hcl_comm_rank(const struct hcl_comm *c) { return c->rank; }
int hcl_comm_world(const struct hcl_comm *c) { return c->world; }
enum hcl_algo hcl_comm_algo(const struct hcl_comm *c) { return c->env.algo; }
size_t hcl_comm_cfg_size(void) { return sizeof(struct hcl_comm_cfg); }
const char *hcl_comm_error(const struct hcl_comm *c) { return c->err; }

/* ---- calls ---- */

static void *scratch(struct hcl_comm *c, size_t bytes)
{
	if (bytes > c->scratch_bytes) {
		void *p = realloc(c->scratch, bytes);
		if (!p) {
			snprintf(c->err, sizeof(c->err), "allreduce: no memory for a %zu-byte conversion buffer",
				 bytes);
			return NULL;
		}
		c->scratch = p;
		c->scratch_bytes = bytes;
	}
	return c->scratch;
}

float hcl_bf16_widen(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t hcl_bf16_narrow(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return ina_f32_to_bf16(u);
}

/* The algorithm's sum of send into recv (esz-byte elements), and its
 * report: by the algorithm's own out-of-place path where it has one and the
 * buffers are apart (a copy of the input first cost the ring up to a third
 * of its time at 16-256 MiB), else copied, then summed in place. */
static int sum_into(struct hcl_comm *c, const void *send, void *recv, size_t count, size_t esz, enum hcl_dtype dt)
{
	const uint8_t *s = send, *r = recv;
	const bool apart = send != recv && count && (s >= r + count * esz || r >= s + count * esz);
	const bool from = apart && c->algo->allreduce_from;
	if (send != recv && count && !from)
		memmove(recv, send, count * esz);
	c->calls++;
	const int64_t deadline = clock_now_ns() + c->env.timeout_ns;
	int rc = from ? c->algo->allreduce_from(c, send, recv, count, dt, deadline)
		      : c->algo->allreduce(c, recv, count, dt, deadline);
	if (rc == 0 && c->env.agent_report && c->algo->report)
		c->algo->report(c, dt, count);
	return rc;
}

static int sum(struct hcl_comm *c, void *buf, size_t count, enum hcl_dtype dt)
{
	return sum_into(c, buf, buf, count, 0, dt);
}

/* bf16: summed as bf16 by an algorithm that does (rounded once by the
 * switch; an average then rounds twice), else widened to binary32, summed
 * (and averaged) there, rounded once. */
static int allreduce_bf16(const uint16_t *send, uint16_t *recv, size_t count, bool avg, struct hcl_comm *c)
{
	float n = (float)c->world;
	if (c->wire_bf16) {
		int rc = sum_into(c, send, recv, count, 2, HCL_BF16);
		for (size_t i = 0; rc == 0 && avg && i < count; i++)
			recv[i] = hcl_bf16_narrow(hcl_bf16_widen(recv[i]) / n);
		return rc;
	}
	float *w = scratch(c, count * 4);
	if (!w && count)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		w[i] = hcl_bf16_widen(send[i]);
	int rc = sum(c, w, count, HCL_FP32);
	for (size_t i = 0; rc == 0 && i < count; i++)
		recv[i] = hcl_bf16_narrow(avg ? w[i] / n : w[i]);
	return rc;
}

/* int32 and fp32; fp32 over a bf16 wire is rounded to bf16 before it leaves. */
static int allreduce_word(const void *send, void *recv, size_t count, enum hcl_dtype dt, bool avg, struct hcl_comm *c)
{
	int rc;
	if (dt == HCL_FP32 && c->wire_bf16) {
		uint16_t *h = scratch(c, count * 2);
		if (!h && count)
			return -ENOMEM;
		for (size_t i = 0; i < count; i++)
			h[i] = hcl_bf16_narrow(((const float *)send)[i]);
		rc = sum(c, h, count, HCL_BF16);
		for (size_t i = 0; rc == 0 && i < count; i++)
			((float *)recv)[i] = hcl_bf16_widen(h[i]);
	} else {
		rc = sum_into(c, send, recv, count, 4, dt);
	}
	if (rc == 0 && avg && dt == HCL_FP32) {
		float *f = recv, n = (float)c->world;
		for (size_t i = 0; i < count; i++)
			f[i] /= n;
	} else if (rc == 0 && avg) {
		int32_t *v = recv;
		for (size_t i = 0; i < count; i++)
			v[i] /= c->world; /* toward zero */
	}
	return rc;
}

static int allreduce_checked(const void *send, void *recv, size_t count, enum hcl_dtype dtype, enum hcl_op op,
			     struct hcl_comm *c)
{
	if ((op != HCL_SUM && op != HCL_AVG) || (count && (!send || !recv))) {
		snprintf(c->err, sizeof(c->err),
			 "allreduce: op %d: want HCL_SUM or HCL_AVG, and buffers for %zu elements", (int)op, count);
		return -EINVAL;
	}
	if (dtype != HCL_INT32 && dtype != HCL_FP32 && dtype != HCL_BF16) {
		snprintf(c->err, sizeof(c->err), "allreduce: data type %d: want HCL_INT32, HCL_FP32 or HCL_BF16",
			 (int)dtype);
		return -EINVAL;
	}
	if (dtype == HCL_BF16)
		return allreduce_bf16(send, recv, count, op == HCL_AVG, c);
	return allreduce_word(send, recv, count, dtype, op == HCL_AVG, c);
}

/* The algorithm, inside the timing and pacing layer when that is on. */
int hcl_allreduce(const void *send, void *recv, size_t count, enum hcl_dtype dtype, enum hcl_op op, struct hcl_comm *c)
{
	if (!c)
		return -EINVAL;
	if (!hcl_sync_on(c->sync))
		return allreduce_checked(send, recv, count, dtype, op, c);
	hcl_sync_before(c->sync);
	int rc = allreduce_checked(send, recv, count, dtype, op, c);
	if (rc == 0)
		hcl_sync_after(c->sync, count * (dtype == HCL_BF16 ? 2 : 4));
	return rc;
}

void hcl_iter_begin(struct hcl_comm *c)
{
	if (c)
		hcl_sync_iter_begin(c->sync);
}

void hcl_iter_end(struct hcl_comm *c)
{
	if (c)
		hcl_sync_iter_end(c->sync);
}

int hcl_comm_sync_summary(const struct hcl_comm *c, struct hcl_sync_summary *out)
{
	if (!c || !out)
		return -EINVAL;
	if (!hcl_sync_on(c->sync))
		return -ENODATA;
	hcl_sync_summary(c->sync, out);
	return 0;
}
