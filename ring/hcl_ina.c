#include "hcl_ina.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_xfer.h" /* hcl_now_ns */
#include "ina_proto.h"

#define BATCH 64

struct outstanding {
	bool busy;
	size_t slice;
	int64_t sent_at;
	uint8_t tries;
};

struct hcl_ina {
	struct hcl_ina_cfg cfg;
	struct hcl_transport *t;
	uint8_t *set;  /* per slot: the set its next slice uses */
	struct outstanding *out; /* per slot */
	uint32_t epoch;
	uint8_t *rx[BATCH];
	uint8_t tx[INA_HDR_LEN + INA_MAX_PAYLOAD];
	struct hcl_ina_stats st;
};

struct hcl_ina *hcl_ina_new(const struct hcl_ina_cfg *cfg, struct hcl_transport *t, char *err, size_t errlen)
{
	if (!cfg || !t || !t->ops || cfg->slots == 0 || cfg->slots > INA_SLOT_INDEX_MASK || cfg->elems == 0 ||
	    cfg->elems > INA_MAX_ELEMS) {
		snprintf(err, errlen, "ina: need a transport, slots >= 1 and 1..%d elements per packet", INA_MAX_ELEMS);
		return NULL;
	}
	struct hcl_ina *a = calloc(1, sizeof(*a));
	if (!a || !(a->set = calloc(cfg->slots, 1)) || !(a->out = calloc(cfg->slots, sizeof(*a->out))))
		goto nomem;
	for (int i = 0; i < BATCH; i++)
		if (!(a->rx[i] = malloc(INA_HDR_LEN + INA_MAX_PAYLOAD + 64)))
			goto nomem;
	a->cfg = *cfg;
	if (!a->cfg.rto_us)
		a->cfg.rto_us = 5000;
	a->t = t;
	return a;
nomem:
	hcl_ina_free(a);
	snprintf(err, errlen, "ina: out of memory");
	return NULL;
}

void hcl_ina_free(struct hcl_ina *a)
{
	if (!a)
		return;
	for (int i = 0; i < BATCH; i++)
		free(a->rx[i]);
	free(a->set);
	free(a->out);
	free(a);
}

const struct hcl_ina_stats *hcl_ina_stats(const struct hcl_ina *a) { return &a->st; }

static bool send_slice(struct hcl_ina *a, uint8_t dtype, const uint32_t *buf, size_t count, size_t k, bool retx)
{
	uint32_t slot = (uint32_t)(k % a->cfg.slots);
	size_t first = k * a->cfg.elems, n = count - first < a->cfg.elems ? count - first : a->cfg.elems;
	struct ina_hdr h = { .version = INA_VERSION, .type = INA_T_DATA, .dtype = dtype,
			     .flags = retx ? INA_F_RETX : 0, .job = a->cfg.job, .contributor = a->cfg.index,
			     .slot = slot | (a->set[slot] ? INA_SLOT_SET_BIT : 0), .epoch = a->epoch,
			     .seq = (uint32_t)k, .count = (uint16_t)n };
	ina_hdr_encode(&h, a->tx);
	for (size_t i = 0; i < n; i++) {
		uint32_t w = htonl(buf[first + i]);
		memcpy(a->tx + INA_HDR_LEN + 4 * i, &w, 4);
	}
	struct hcl_pkt p = { a->tx, (uint32_t)(INA_HDR_LEN + 4 * n), a->cfg.sw };
	return a->t->ops->send_batch(a->t->ctx, &p, 1) == 1;
}

int hcl_ina_allreduce(struct hcl_ina *a, void *vbuf, size_t count, enum hcl_dtype dt, int64_t deadline_ns,
		      char *err, size_t errlen)
{
	uint32_t *buf = vbuf;
	uint8_t dtype = dt == HCL_FP32 ? INA_D_FP32 : INA_D_INT32;
	size_t nslices = (count + a->cfg.elems - 1) / a->cfg.elems, done = 0, next = 0;
	if (dt != HCL_INT32 && dt != HCL_FP32) {
		snprintf(err, errlen, "ina: data type must be int32 or fp32");
		return -EINVAL;
	}
	if (nslices > UINT32_MAX) {
		snprintf(err, errlen, "ina: %zu elements make too many slices", count);
		return -EINVAL;
	}
	a->epoch++;
	for (uint32_t s = 0; s < a->cfg.slots; s++)
		a->out[s].busy = false;
	/* the first window */
	while (next < nslices && next < a->cfg.slots) {
		struct outstanding *o = &a->out[next % a->cfg.slots];
		*o = (struct outstanding){ true, next, hcl_now_ns(), 0 };
		if (!send_slice(a, dtype, buf, count, next, false))
			o->sent_at = 0; /* socket full: the timer path sends it */
		a->st.sent++;
		next++;
	}
	while (done < nslices) {
		int64_t now = hcl_now_ns(), wake = now + 1000000;
		if (now >= deadline_ns) {
			char ip[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, &a->cfg.sw.sin_addr, ip, sizeof(ip));
			snprintf(err, errlen, "switch %s:%u did not answer in time: %zu of %zu slices of job %u done", ip,
				 ntohs(a->cfg.sw.sin_port), done, nslices, a->cfg.job);
			return -ETIMEDOUT;
		}
		for (uint32_t s = 0; s < a->cfg.slots; s++) { /* resends */
			struct outstanding *o = &a->out[s];
			if (!o->busy)
				continue;
			int64_t due = o->sent_at + ((int64_t)a->cfg.rto_us * 1000 << (o->tries < 6 ? o->tries : 6));
			if (due <= now) {
				if (!send_slice(a, dtype, buf, count, o->slice, true))
					break;
				o->sent_at = now;
				if (o->tries < 255)
					o->tries++;
				a->st.resent++;
				due = now + ((int64_t)a->cfg.rto_us * 1000 << (o->tries < 6 ? o->tries : 6));
			}
			if (due < wake)
				wake = due;
		}
		if (wake > deadline_ns)
			wake = deadline_ns;
		struct hcl_pkt in[BATCH];
		for (int i = 0; i < BATCH; i++)
			in[i] = (struct hcl_pkt){ .buf = a->rx[i], .len = INA_HDR_LEN + INA_MAX_PAYLOAD + 64 };
		int n = a->t->ops->recv_batch(a->t->ctx, in, BATCH, wake > now ? wake - now : 0);
		if (n < 0) {
			snprintf(err, errlen, "ina: receive: %s", strerror(-n));
			return n;
		}
		for (int i = 0; i < n; i++) {
			struct ina_pkt p;
			if (in[i].peer.sin_addr.s_addr != a->cfg.sw.sin_addr.s_addr ||
			    ina_parse(in[i].buf, in[i].len, &p) != INA_OK || p.hdr.type != INA_T_RESULT ||
			    p.hdr.job != a->cfg.job || p.hdr.dtype != dtype) {
				a->st.foreign++;
				continue;
			}
			uint32_t s = ina_slot_index(p.hdr.slot);
			struct outstanding *o = s < a->cfg.slots ? &a->out[s] : NULL;
			if (!o || !o->busy || p.hdr.epoch != a->epoch || p.hdr.seq != o->slice ||
			    ina_slot_set(p.hdr.slot) != a->set[s]) {
				a->st.duplicates++; /* a result already taken */
				continue;
			}
			size_t first = o->slice * a->cfg.elems;
			size_t cnt = count - first < a->cfg.elems ? count - first : a->cfg.elems;
			if (p.hdr.count != cnt) {
				a->st.foreign++;
				continue;
			}
			for (size_t e = 0; e < cnt; e++) {
				uint32_t w;
				memcpy(&w, p.payload + 4 * e, 4);
				buf[first + e] = ntohl(w);
			}
			a->st.results++;
			done++;
			a->set[s] ^= 1; /* this slot's next slice goes to the other set */
			o->busy = false;
			size_t k = o->slice + a->cfg.slots; /* the same slot's next slice */
			if (k < nslices) {
				*o = (struct outstanding){ true, k, hcl_now_ns(), 0 };
				if (!send_slice(a, dtype, buf, count, k, false))
					o->sent_at = 0;
				a->st.sent++;
			}
		}
	}
	return 0;
}
