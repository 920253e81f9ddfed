#include "hcl_ina.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_rtt.h"
#include "hcl_xfer.h" /* hcl_now_ns */
#include "ina_bfp.h"
#include "ina_proto.h"


struct outstanding {
	bool busy;
	uint8_t tries;
	uint8_t shard;
	size_t slice;
	int64_t sent_at;
};

#define RXBUF (INA_HDR_LEN + INA_MAX_PAYLOAD + 64)

int hcl_ina_rx_init(struct hcl_ina_rx *r)
{
	for (int i = 0; i < HCL_INA_BATCH; i++)
		if (!(r->buf[i] = malloc(RXBUF)))
			return -ENOMEM;
	return 0;
}

void hcl_ina_rx_free(struct hcl_ina_rx *r)
{
	for (int i = 0; i < HCL_INA_BATCH; i++) {
		free(r->buf[i]);
		r->buf[i] = NULL;
	}
}

int hcl_ina_rx_batch(struct hcl_ina_rx *r, struct hcl_transport *t, struct hcl_pkt in[HCL_INA_BATCH], int64_t now,
		     int64_t wake, int64_t deadline_ns)
{
	if (wake > deadline_ns)
		wake = deadline_ns;
	for (int i = 0; i < HCL_INA_BATCH; i++)
		in[i] = (struct hcl_pkt){ .buf = r->buf[i], .len = RXBUF };
	return t->ops->recv_batch(t->ctx, in, HCL_INA_BATCH, wake > now ? wake - now : 0);
}

struct hcl_ina {
	struct hcl_ina_cfg cfg;
	struct hcl_transport *t;
	uint8_t *set;  /* per slot of each shard (shard * slots + slot): the set its next slice uses */
	struct outstanding *out; /* per slot of each shard */
	uint32_t epoch;
	struct hcl_rtt rtt;
	struct hcl_ina_rx rx;
	uint8_t tx[INA_HDR_LEN + INA_MAX_PAYLOAD];
	struct hcl_ina_stats st;
};

struct hcl_ina *hcl_ina_new(const struct hcl_ina_cfg *cfg, struct hcl_transport *t, char *err, size_t errlen)
{
	if (!cfg || !t || !t->ops || cfg->slots == 0 || cfg->slots > INA_SLOT_INDEX_MASK || cfg->elems == 0 ||
	    cfg->elems > INA_MAX_ELEMS || cfg->shards > HCL_INA_MAX_SHARDS) {
		snprintf(err, errlen, "ina: need a transport, slots >= 1, 1..%d elements per packet and at most %d shards",
			 INA_MAX_ELEMS, HCL_INA_MAX_SHARDS);
		return NULL;
	}
	unsigned shards = cfg->shards ? cfg->shards : 1;
	size_t nslots = (size_t)shards * cfg->slots;
	struct hcl_ina *a = calloc(1, sizeof(*a));
	if (!a || !(a->set = calloc(nslots, 1)) || !(a->out = calloc(nslots, sizeof(*a->out))))
		goto nomem;
	if (hcl_ina_rx_init(&a->rx) < 0)
		goto nomem;
	a->cfg = *cfg;
	a->cfg.shards = shards;
	if (!a->cfg.rto_us)
		a->cfg.rto_us = 5000;
	a->t = t;
	hcl_rtt_init(&a->rtt, (int64_t)a->cfg.rto_us * 1000, 500000000);
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
	hcl_ina_rx_free(&a->rx);
	free(a->set);
	free(a->out);
	free(a);
}

const struct hcl_ina_stats *hcl_ina_stats(const struct hcl_ina *a) { return &a->st; }

/* What one pass over the slices carries. */
enum pass_kind {
	PASS_RAW,      /* int32 / fp32 elements, result copied back */
	PASS_EXPONENT, /* BFP pass 1: one zero element, the slice's exponent; the result has the maximum */
	PASS_BFP,      /* BFP pass 2: mantissas at the agreed exponent, result dequantised */
};

struct pass {
	enum pass_kind kind;
	uint8_t dtype;     /* on the wire */
	void *buf;         /* the caller's elements */
	size_t count;
	int8_t *exp;       /* BFP: per slice, local exponent, then the agreed one */
	unsigned addends;  /* BFP: ranks whose values are summed (the scale leaves room for them) */
};

static size_t slice_len(const struct hcl_ina *a, const struct pass *ps, size_t k)
{
	size_t first = k * a->cfg.elems;
	return ps->count - first < a->cfg.elems ? ps->count - first : a->cfg.elems;
}

void hcl_ina_swap_elems(void *dst, const void *src, size_t n, size_t esz)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	for (size_t i = 0; i < n; i++) {
		if (esz == 2) {
			uint16_t v;
			memcpy(&v, s + 2 * i, 2);
			v = htons(v);
			memcpy(d + 2 * i, &v, 2);
		} else {
			uint32_t v;
			memcpy(&v, s + 4 * i, 4);
			v = htonl(v);
			memcpy(d + 4 * i, &v, 4);
		}
	}
}

/* The first slice of shard h among nslices: shards are runs of
 * consecutive slices, as even as whole slices allow. */
static size_t shard_first(size_t nslices, unsigned shards, unsigned h)
{
	return nslices * h / shards;
}

/* Slice o->slice of shard o->shard, from slot o's entry in a->out. */
static bool send_slice(struct hcl_ina *a, const struct pass *ps, const struct outstanding *o, bool retx)
{
	size_t i = (size_t)(o - a->out), k = o->slice;
	uint32_t slot = (uint32_t)(i % a->cfg.slots);
	size_t first = k * a->cfg.elems, n = ps->kind == PASS_EXPONENT ? 1 : slice_len(a, ps, k);
	struct ina_hdr h = { .version = INA_VERSION, .type = INA_T_DATA, .dtype = ps->dtype,
			     .flags = retx ? INA_F_RETX : 0, .job = a->cfg.job[o->shard], .contributor = a->cfg.index,
			     .slot = slot | (a->set[i] ? INA_SLOT_SET_BIT : 0), .epoch = a->epoch,
			     .seq = (uint32_t)k, .count = (uint16_t)n,
			     .exponent = ps->kind == PASS_RAW ? 0 : ps->exp[k] };
	ina_hdr_encode(&h, a->tx);
	uint8_t *out = a->tx + INA_HDR_LEN;
	size_t esz = ina_wire_elem_size(ps->dtype);
	if (ps->kind == PASS_EXPONENT) {
		memset(out, 0, 4);
	} else if (ps->kind == PASS_BFP) {
		ina_bfp_quantize((const float *)ps->buf + first, n, ps->exp[k], ps->addends, out);
	} else {
		hcl_ina_swap_elems(out, (const uint8_t *)ps->buf + first * esz, n, esz);
	}
	struct hcl_pkt p = { a->tx, (uint32_t)(INA_HDR_LEN + esz * n), a->cfg.sw[o->shard] };
	return a->t->ops->send_batch(a->t->ctx, &p, 1) == 1;
}

/* A result for slice k: false if it does not fit what was sent. */
static bool take_result(struct hcl_ina *a, const struct pass *ps, size_t k, const struct ina_pkt *p)
{
	size_t first = k * a->cfg.elems, n = ps->kind == PASS_EXPONENT ? 1 : slice_len(a, ps, k);
	if (p->hdr.count != n)
		return false;
	if (ps->kind == PASS_EXPONENT) {
		ps->exp[k] = p->hdr.exponent;
	} else if (ps->kind == PASS_BFP) {
		if (p->hdr.exponent != ps->exp[k])
			return false; /* every contributor used the agreed exponent */
		ina_bfp_dequantize(p->payload, n, ps->exp[k], ps->addends, (float *)ps->buf + first);
	} else {
		size_t esz = ina_wire_elem_size(ps->dtype);
		hcl_ina_swap_elems((uint8_t *)ps->buf + first * esz, p->payload, n, esz);
	}
	return true;
}

/* Starts slice k of shard h in slot entry o. */
static void start_slice(struct hcl_ina *a, const struct pass *ps, struct outstanding *o, unsigned h, size_t k)
{
	*o = (struct outstanding){ .busy = true, .shard = (uint8_t)h, .slice = k, .sent_at = hcl_now_ns() };
	if (!send_slice(a, ps, o, false))
		o->sent_at = 0; /* socket full: the timer path sends it */
	a->st.sent++;
}

/* The shard whose aggregator sent p, or -1. */
static int shard_of(const struct hcl_ina *a, const struct hcl_pkt *in, const struct ina_pkt *p)
{
	for (unsigned h = 0; h < a->cfg.shards; h++)
		if (a->cfg.job[h] == p->hdr.job && a->cfg.sw[h].sin_addr.s_addr == in->peer.sin_addr.s_addr)
			return (int)h;
	return -1;
}

/* One pass of every slice through the job(s): a window of one slice per
 * slot of each shard, resends on timeout, results matched to what is
 * outstanding. */
static int run_pass(struct hcl_ina *a, const struct pass *ps, int64_t deadline_ns, char *err, size_t errlen)
{
	const unsigned shards = a->cfg.shards;
	const uint32_t slots = a->cfg.slots;
	const size_t nslots = (size_t)shards * slots;
	size_t nslices = (ps->count + a->cfg.elems - 1) / a->cfg.elems, done = 0;
	a->epoch++;
	for (size_t s = 0; s < nslots; s++)
		a->out[s].busy = false;
	/* the first windows, the shards' in turn so every aggregator starts at once */
	for (uint32_t j = 0; j < slots; j++)
		for (unsigned h = 0; h < shards; h++) {
			size_t k = shard_first(nslices, shards, h) + j;
			if (k < shard_first(nslices, shards, h + 1))
				start_slice(a, ps, &a->out[(size_t)h * slots + j], h, k);
		}
	while (done < nslices) {
		if (a->cfg.poll)
			a->cfg.poll(a->cfg.poll_ctx);
		int64_t now = hcl_now_ns(), wake = now + 1000000;
		if (now >= deadline_ns) {
			char ip[INET_ADDRSTRLEN];
			unsigned h = 0; /* the aggregator that still owes a result */
			for (size_t s = 0; s < nslots; s++)
				if (a->out[s].busy) {
					h = a->out[s].shard;
					break;
				}
			inet_ntop(AF_INET, &a->cfg.sw[h].sin_addr, ip, sizeof(ip));
			snprintf(err, errlen, "switch %s:%u did not answer in time: %zu of %zu slices of job %u done", ip,
				 ntohs(a->cfg.sw[h].sin_port), done, nslices, a->cfg.job[h]);
			return -ETIMEDOUT;
		}
		for (size_t s = 0; s < nslots; s++) { /* resends */
			struct outstanding *o = &a->out[s];
			if (!o->busy)
				continue;
			int64_t due = o->sent_at + hcl_rtt_rto(&a->rtt, o->tries);
			if (due <= now) {
				if (!send_slice(a, ps, o, true))
					break;
				hcl_rtt_expired(&a->rtt, o->sent_at, now);
				o->sent_at = now;
				if (o->tries < 255)
					o->tries++;
				a->st.resent++;
				due = now + hcl_rtt_rto(&a->rtt, o->tries);
			}
			if (due < wake)
				wake = due;
		}
		struct hcl_pkt in[HCL_INA_BATCH];
		int n = hcl_ina_rx_batch(&a->rx, a->t, in, now, wake, deadline_ns);
		if (n < 0) {
			snprintf(err, errlen, "ina: receive: %s", strerror(-n));
			return n;
		}
		for (int i = 0; i < n; i++) {
			struct ina_pkt p;
			int h = -1;
			if (ina_parse(in[i].buf, in[i].len, &p) != INA_OK || p.hdr.type != INA_T_RESULT ||
			    p.hdr.dtype != ps->dtype || (h = shard_of(a, &in[i], &p)) < 0) {
				a->st.foreign++;
				continue;
			}
			uint32_t s = ina_slot_index(p.hdr.slot);
			size_t e = (size_t)h * slots + s;
			struct outstanding *o = s < slots ? &a->out[e] : NULL;
			if (!o || !o->busy || p.hdr.epoch != a->epoch || p.hdr.seq != o->slice ||
			    ina_slot_set(p.hdr.slot) != a->set[e]) {
				a->st.duplicates++; /* a result already taken */
				continue;
			}
			if (!take_result(a, ps, o->slice, &p)) {
				a->st.foreign++;
				continue;
			}
			if (o->tries == 0 && o->sent_at)
				hcl_rtt_sample(&a->rtt, hcl_now_ns() - o->sent_at);
			a->st.results++;
			done++;
			a->set[e] ^= 1; /* this slot's next slice goes to the other set */
			o->busy = false;
			size_t k = o->slice + slots; /* the same slot's next slice */
			if (k < shard_first(nslices, shards, (unsigned)h + 1))
				start_slice(a, ps, o, (unsigned)h, k);
		}
	}
	return 0;
}

static int check_count(size_t count, const struct hcl_ina *a, char *err, size_t errlen)
{
	if ((count + a->cfg.elems - 1) / a->cfg.elems > UINT32_MAX) {
		snprintf(err, errlen, "ina: %zu elements make too many slices", count);
		return -EINVAL;
	}
	return 0;
}

int hcl_ina_allreduce(struct hcl_ina *a, void *vbuf, size_t count, enum hcl_dtype dt, int64_t deadline_ns,
		      char *err, size_t errlen)
{
	if (dt != HCL_INT32 && dt != HCL_FP32 && dt != HCL_BF16) {
		snprintf(err, errlen, "ina: data type must be int32, fp32 or bf16");
		return -EINVAL;
	}
	if (check_count(count, a, err, errlen) < 0)
		return -EINVAL;
	struct pass ps = { PASS_RAW, dt == HCL_FP32 ? INA_D_FP32 : dt == HCL_BF16 ? INA_D_BF16 : INA_D_INT32, vbuf,
			   count, NULL, 0 };
	return run_pass(a, &ps, deadline_ns, err, errlen);
}

int hcl_ina_allreduce_bfp(struct hcl_ina *a, float *buf, size_t count, unsigned addends, int64_t deadline_ns,
			  char *err, size_t errlen)
{
	if (addends < 1 || check_count(count, a, err, errlen) < 0) {
		snprintf(err, errlen, "ina: bfp needs addends >= 1 and a countable tensor");
		return -EINVAL;
	}
	size_t nslices = (count + a->cfg.elems - 1) / a->cfg.elems;
	int8_t *exp = malloc(nslices ? nslices : 1);
	if (!exp) {
		snprintf(err, errlen, "ina: out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < nslices; k++) {
		size_t first = k * a->cfg.elems, n = count - first < a->cfg.elems ? count - first : a->cfg.elems;
		if (ina_bfp_exponent(buf + first, n, &exp[k]) < 0) {
			snprintf(err, errlen, "ina: bfp: a value in elements %zu..%zu is not finite or too large", first,
				 first + n - 1);
			free(exp);
			return -EDOM;
		}
	}
	/* pass 1 agrees on each slice's exponent (the switch keeps the
	 * maximum); pass 2 sums mantissas at that exponent, exactly */
	struct pass ps = { PASS_EXPONENT, INA_D_BFP32, buf, count, exp, addends };
	int rc = run_pass(a, &ps, deadline_ns, err, errlen);
	if (rc == 0) {
		ps.kind = PASS_BFP;
		rc = run_pass(a, &ps, deadline_ns, err, errlen);
	}
	free(exp);
	return rc;
}
