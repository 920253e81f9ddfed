#include "hcl_aring.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_ina.h" /* the receive buffers */
#include "hcl_rtt.h"
#include "hcl_xfer.h" /* hcl_now_ns */
#include "ina_proto.h"

#define RTO_FLOOR_NS 5000000 /* the timer follows the round trip, never below this */
/* A slice sent before the chain has reached its step waits for the
 * members upstream, not for the network: until the step before it has
 * finished a slice here, its timer is at least this long (doubled per
 * re-send) and its round trip is not sampled.  On the trial's 200 Mbit/s
 * links this halved what the workers sent twice (about 1000 to 450 packets
 * per worker over five 4 MB calls).  Still a timer, not a wait: a lost
 * packet must never hang the ring. */
#define CHAIN_WAIT_NS 100000000

struct outstanding {
	bool busy, acked, resulted;
	bool early; /* sent before the chain reached its step: no round-trip sample */
	size_t slice;
	int64_t sent_at;
	uint8_t tries;
};

struct step_state {
	struct aring_step st;
	size_t nslices, done;
	struct outstanding *out; /* per slot */
	uint8_t *set;            /* per slot: the set its next slice uses (kept across calls) */
	struct hcl_rtt rtt;      /* steps differ: a reduce step waits for its downstream, a gather for the chain */
};

struct hcl_aring {
	const struct aring_plan *p;
	unsigned rank, member, index, nsteps;
	struct hcl_transport *t;
	struct sockaddr_in agg;
	struct step_state *s;
	uint32_t epoch;
	uint8_t *scratch; /* the input, when the call is in place */
	size_t scratch_bytes;
	struct hcl_ina_rx rx;
	uint8_t tx[INA_HDR_LEN + INA_MAX_PAYLOAD];
	struct hcl_aring_stats st;
	void (*poll)(void *ctx);
	void *poll_ctx;
};

void hcl_aring_set_poll(struct hcl_aring *a, void (*fn)(void *ctx), void *ctx)
{
	a->poll = fn;
	a->poll_ctx = ctx;
}

struct hcl_aring *hcl_aring_new(const struct aring_plan *p, unsigned rank, struct hcl_transport *t, char *err,
				size_t errlen)
{
	struct hcl_aring *a = calloc(1, sizeof(*a));
	if (!a)
		goto nomem;
	a->p = p;
	a->rank = rank;
	a->member = p->member_of[rank];
	a->index = p->index_of[rank];
	a->nsteps = aring_steps(p);
	a->t = t;
	const struct ina_addr *g = &p->mem[a->member].agg;
	a->agg = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = g->ip, .sin_port = g->port };
	if (!(a->s = calloc(a->nsteps, sizeof(*a->s))))
		goto nomem;
	for (unsigned k = 0; k < a->nsteps; k++) {
		if (!(a->s[k].out = calloc(p->slots, sizeof(struct outstanding))) || !(a->s[k].set = calloc(p->slots, 1)))
			goto nomem;
		hcl_rtt_init(&a->s[k].rtt, RTO_FLOOR_NS, 500000000);
	}
	if (hcl_ina_rx_init(&a->rx) < 0)
		goto nomem;
	return a;
nomem:
	hcl_aring_free(a);
	snprintf(err, errlen, "agent-ring: out of memory");
	return NULL;
}

void hcl_aring_free(struct hcl_aring *a)
{
	if (!a)
		return;
	for (unsigned k = 0; a->s && k < a->nsteps; k++) {
		free(a->s[k].out);
		free(a->s[k].set);
	}
	free(a->s);
	free(a->scratch);
	hcl_ina_rx_free(&a->rx);
	free(a);
}

const struct hcl_aring_stats *hcl_aring_stats(const struct hcl_aring *a) { return &a->st; }

static size_t slice_lo(const struct hcl_aring *a, const struct step_state *ss, size_t k)
{
	return ss->st.lo + k * a->p->elems;
}

static size_t slice_n(const struct hcl_aring *a, const struct step_state *ss, size_t k)
{
	size_t lo = slice_lo(a, ss, k);
	return ss->st.hi - lo < a->p->elems ? ss->st.hi - lo : a->p->elems;
}

static bool send_slice(struct hcl_aring *a, unsigned step, size_t k, const uint8_t *src, bool retx)
{
	struct step_state *ss = &a->s[step];
	uint32_t slot = (uint32_t)(k % a->p->slots);
	size_t n = slice_n(a, ss, k), lo = slice_lo(a, ss, k);
	struct ina_hdr h = { .version = INA_VERSION, .type = INA_T_DATA, .dtype = a->p->dtype,
			     .flags = (uint8_t)((retx ? INA_F_RETX : 0) | (ss->st.join ? INA_F_JOIN : 0)),
			     .job = (uint16_t)(a->p->job0 + step), .contributor = (uint16_t)a->index,
			     .slot = slot | (ss->set[slot] ? INA_SLOT_SET_BIT : 0), .epoch = a->epoch,
			     .seq = (uint32_t)k, .count = (uint16_t)n };
	ina_hdr_encode(&h, a->tx);
	size_t len = INA_HDR_LEN, esz = ina_wire_elem_size(a->p->dtype);
	if (!ss->st.join) {
		hcl_ina_swap_elems(a->tx + INA_HDR_LEN, src + lo * esz, n, esz);
		len += esz * n;
	}
	struct hcl_pkt p = { a->tx, (uint32_t)len, a->agg };
	return a->t->ops->send_batch(a->t->ctx, &p, 1) == 1;
}

/* Whether the chain has reached step s here: the step before it (or s
 * itself) has finished a slice. */
static bool chain_reached(const struct hcl_aring *a, unsigned step)
{
	return step == 0 || a->s[step].done > 0 || a->s[step - 1].done > 0;
}

/* Slice k always uses slot k % slots. */
static void start_slice(struct hcl_aring *a, unsigned step, size_t k, const uint8_t *src)
{
	struct step_state *ss = &a->s[step];
	struct outstanding *o = &ss->out[k % a->p->slots];
	*o = (struct outstanding){ .busy = true, .slice = k, .sent_at = hcl_now_ns(), .early = !chain_reached(a, step) };
	if (!send_slice(a, step, k, src, false))
		o->sent_at = 0; /* socket full: the timer sends it */
	a->st.sent++;
}

static int64_t slice_rto(const struct hcl_rtt *r, uint8_t tries, bool waits_for_chain)
{
	int64_t rto = hcl_rtt_rto(r, tries);
	if (waits_for_chain) {
		int64_t w = (int64_t)CHAIN_WAIT_NS << (tries < 4 ? tries : 4);
		if (rto < w)
			rto = w;
	}
	return rto;
}

static void describe_member(const struct aring_plan *p, unsigned k, char *b, size_t n)
{
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &p->mem[k].agg.ip, ip, sizeof(ip));
	if (p->mem[k].ina)
		snprintf(b, n, "member %u (rack %d, INA switch %s)", k, p->mem[k].rack, ip);
	else
		snprintf(b, n, "member %u (rank %u at %s)", k, p->worker_rank[p->mem[k].first], ip);
}

int hcl_aring_allreduce(struct hcl_aring *a, const void *vsrc, void *vdst, size_t count, int64_t deadline_ns,
			char *err, size_t errlen)
{
	const uint8_t *src = vsrc;
	uint8_t *dst = vdst;
	size_t esz = ina_wire_elem_size(a->p->dtype);
	if (count && (!src || !dst)) {
		snprintf(err, errlen, "agent-ring: no buffers");
		return -EINVAL;
	}
	if (src == dst && count) { /* contributions must not see results */
		if (a->scratch_bytes < count * esz) {
			uint8_t *b = realloc(a->scratch, count * esz);
			if (!b) {
				snprintf(err, errlen, "agent-ring: out of memory");
				return -ENOMEM;
			}
			a->scratch = b;
			a->scratch_bytes = count * esz;
		}
		memcpy(a->scratch, src, count * esz);
		src = a->scratch;
	}
	a->epoch++;
	size_t left = 0;
	for (unsigned k = 0; k < a->nsteps; k++) {
		struct step_state *ss = &a->s[k];
		aring_step_of(a->p, a->member, k, count, &ss->st);
		ss->nslices = (ss->st.hi - ss->st.lo + a->p->elems - 1) / a->p->elems;
		ss->done = 0;
		for (uint32_t i = 0; i < a->p->slots; i++)
			ss->out[i].busy = false;
		left += ss->nslices;
		for (size_t j = 0; j < ss->nslices && j < a->p->slots; j++)
			start_slice(a, k, j, src);
	}
	while (left) {
		if (a->poll)
			a->poll(a->poll_ctx);
		int64_t now = hcl_now_ns(), wake = now + 1000000;
		if (now >= deadline_ns) {
			/* name the member this worker waits for: its downstream
			 * for an ACK, its upstream for a result */
			unsigned m = a->p->m, who = a->member;
			const char *what = "";
			for (unsigned k = 0; k < a->nsteps && !*what; k++) {
				struct step_state *ss = &a->s[k];
				for (uint32_t i = 0; i < a->p->slots && !*what; i++) {
					struct outstanding *o = &ss->out[i];
					if (!o->busy)
						continue;
					if (ss->st.need_ack && !o->acked) {
						who = (a->member + 1) % m;
						what = "an acknowledgement";
					} else {
						who = (a->member + m - 1) % m;
						what = "a result";
					}
				}
			}
			char mb[128];
			describe_member(a->p, who, mb, sizeof(mb));
			snprintf(err, errlen, "agent-ring: %zu slices left; waiting for %s from %s", left, what, mb);
			if (getenv("HCL_DEBUG"))
				for (unsigned k = 0; k < a->nsteps; k++)
					for (uint32_t i = 0; i < a->p->slots; i++)
						if (a->s[k].out[i].busy)
							fprintf(stderr, "  step %u slot %u set %u slice %zu/%zu acked %d result %d tries %u epoch %u\n", k, i,
								a->s[k].set[i], a->s[k].out[i].slice, a->s[k].nslices, a->s[k].out[i].acked,
								a->s[k].out[i].resulted, a->s[k].out[i].tries, a->epoch);
			return -ETIMEDOUT;
		}
		for (unsigned k = 0; k < a->nsteps; k++) { /* resends */
			struct step_state *ss = &a->s[k];
			for (uint32_t i = 0; i < a->p->slots; i++) {
				struct outstanding *o = &ss->out[i];
				if (!o->busy)
					continue;
				const bool waits = !chain_reached(a, k);
				int64_t rto = slice_rto(&ss->rtt, o->tries, waits);
				if (o->sent_at + rto <= now) {
					if (!send_slice(a, k, o->slice, src, true))
						break;
					if (!waits)
						hcl_rtt_expired(&ss->rtt, o->sent_at, now);
					o->sent_at = now;
					if (o->tries < 255)
						o->tries++;
					a->st.resent++;
					rto = slice_rto(&ss->rtt, o->tries, waits);
				}
				if (o->sent_at + rto < wake)
					wake = o->sent_at + rto;
			}
		}
		struct hcl_pkt in[HCL_INA_BATCH];
		int n = hcl_ina_rx_batch(&a->rx, a->t, in, now, wake, deadline_ns);
		if (n < 0) {
			snprintf(err, errlen, "agent-ring: receive: %s", strerror(-n));
			return n;
		}
		for (int i = 0; i < n; i++) {
			struct ina_pkt p;
			if (in[i].peer.sin_addr.s_addr != a->agg.sin_addr.s_addr || in[i].peer.sin_port != a->agg.sin_port ||
			    ina_parse(in[i].buf, in[i].len, &p) != INA_OK ||
			    (p.hdr.type != INA_T_RESULT && p.hdr.type != INA_T_ACK) || p.hdr.dtype != a->p->dtype ||
			    p.hdr.job < a->p->job0 || p.hdr.job >= a->p->job0 + a->nsteps) {
				a->st.stale++;
				continue;
			}
			unsigned k = p.hdr.job - a->p->job0;
			struct step_state *ss = &a->s[k];
			uint32_t sl = ina_slot_index(p.hdr.slot);
			struct outstanding *o = sl < a->p->slots ? &ss->out[sl] : NULL;
			if (!o || !o->busy || p.hdr.epoch != a->epoch || p.hdr.seq != o->slice ||
			    ina_slot_set(p.hdr.slot) != ss->set[sl] || p.hdr.count != slice_n(a, ss, o->slice)) {
				a->st.stale++; /* a duplicate, or for a slice already done */
				continue;
			}
			if (p.hdr.type == INA_T_ACK) {
				if (!ss->st.need_ack || o->acked) {
					a->st.stale++;
					continue;
				}
				o->acked = true;
				a->st.acks++;
			} else {
				if (!ss->st.need_result || o->resulted) {
					a->st.stale++;
					continue;
				}
				size_t lo = slice_lo(a, ss, o->slice);
				hcl_ina_swap_elems(dst + lo * esz, p.payload, p.hdr.count, esz);
				o->resulted = true;
				a->st.results++;
			}
			if ((ss->st.need_ack && !o->acked) || (ss->st.need_result && !o->resulted))
				continue;
			if (o->tries == 0 && o->sent_at && !o->early)
				hcl_rtt_sample(&ss->rtt, hcl_now_ns() - o->sent_at);
			/* this slice is finished here: the slot's next slice uses the other set */
			ss->set[sl] ^= 1;
			o->busy = false;
			ss->done++;
			left--;
			if (o->slice + a->p->slots < ss->nslices)
				start_slice(a, k, o->slice + a->p->slots, src);
		}
	}
	return 0;
}
