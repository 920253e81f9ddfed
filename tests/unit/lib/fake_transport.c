/* SPDX-License-Identifier: BSD-3-Clause */
#include "fake_transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"

struct dgram {
	struct dgram *next;
	struct sockaddr_in src;
	unsigned from;	/* endpoint index of src */
	int64_t due_ns; /* leaves the bottleneck or the sender's egress (0: at once) */
	uint32_t len;
	uint8_t data[];
};

struct inbox {
	struct dgram *head, *tail;
	unsigned n;
	int64_t last_due_ns; /* the bottleneck's last departure */
};

struct fake_ep {
	struct fake_hub *hub;
	unsigned index;
	int64_t egress_free_ns; /* the egress's last departure */
	bool runs_refused;
	uint64_t send_calls, send_pkts; /* send_batch calls, and the pkts they took */
};

struct fake_hub {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fake_net net;
	struct tl_rng rng;
	unsigned n;
	struct inbox *in;
	struct fake_ep *eps;
	struct fake_stats st;
};

struct sockaddr_in fake_addr(unsigned i)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)(1000 + i)),
				 .sin_addr.s_addr = htonl(0x7f000001) };
	return a;
}

static double uni(struct fake_hub *h) { return (double)(tl_next(&h->rng) >> 11) * 0x1.0p-53; }

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The bottleneck before inbox b: a departure time for one more datagram,
 * or 0 when its queue is full (tail drop).  FIFO: reordering is not
 * combined with it. */
static int64_t bottleneck_due(struct fake_hub *h, struct inbox *b)
{
	int64_t now = mono_ns(), gap = (int64_t)(1e9 / h->net.rate_pps);
	unsigned waiting = 0;
	for (const struct dgram *d = b->head; d; d = d->next)
		waiting += d->due_ns > now;
	if (waiting >= h->net.queue)
		return 0;
	b->last_due_ns = (b->last_due_ns > now ? b->last_due_ns : now) + gap;
	return b->last_due_ns;
}

/* Appends, or (reorder) puts the datagram ahead of a random earlier one;
 * with egress shapers, in the order of arrival (each sender's is FIFO, but
 * a quick ACK must not wait behind another sender's queued data). */
static void enqueue(struct fake_hub *h, struct inbox *b, struct dgram *d)
{
	if (h->net.egress_Bps > 0) {
		struct dgram **pp = &b->head;
		while (*pp && (*pp)->due_ns <= d->due_ns)
			pp = &(*pp)->next;
		d->next = *pp;
		*pp = d;
	} else if (b->n > 0 && uni(h) < h->net.reorder) {
		unsigned pos = tl_below(&h->rng, b->n);
		struct dgram **pp = &b->head;
		while (pos--)
			pp = &(*pp)->next;
		d->next = *pp;
		*pp = d;
		h->st.reordered++;
	} else {
		d->next = NULL;
		if (b->tail)
			b->tail->next = d;
		else
			b->head = d;
		b->tail = d;
	}
	if (!d->next)
		b->tail = d;
	b->n++;
}

/* One datagram of len bytes (from pkt p at offset off) towards dst. */
static void send_one(struct fake_hub *h, struct fake_ep *e, const struct dgram_pkt *p, uint32_t off, uint32_t len,
		     unsigned dst)
{
	h->st.sent++;
	uint8_t type = 0;
	if (len > 1)
		dgram_gather(p, off + 1, 1, &type);
	bool nth = false;
	for (unsigned k = 0; k < sizeof(h->net.drop_nth) / sizeof(h->net.drop_nth[0]); k++)
		nth |= h->net.drop_nth[k] == h->st.sent;
	if (dst >= h->n || nth || uni(h) < h->net.loss || (h->net.drop_type && len > 1 && type == h->net.drop_type)) {
		h->st.lost++;
		return;
	}
	int copies = uni(h) < h->net.dup ? 2 : 1;
	h->st.duplicated += copies - 1;
	while (copies--) {
		int64_t due = 0;
		if (h->net.rate_pps > 0 && !(due = bottleneck_due(h, &h->in[dst]))) {
			h->st.tail_dropped++;
			continue;
		}
		if (h->net.egress_Bps > 0) {
			int64_t now = mono_ns();
			due = (e->egress_free_ns > now ? e->egress_free_ns : now) +
			      (int64_t)(len * 1e9 / h->net.egress_Bps);
			e->egress_free_ns = due;
		}
		struct dgram *d = malloc(sizeof(*d) + len);
		d->due_ns = due;
		d->from = e->index;
		d->src = fake_addr(e->index);
		d->len = len;
		dgram_gather(p, off, len, d->data);
		if (len > 3 && h->net.ce > 0 && uni(h) < h->net.ce)
			d->data[3] |= 0x10; /* INA_F_CE; this file knows no INA header */
		enqueue(h, &h->in[dst], d);
	}
}

static unsigned fake_max_segs(void *ctx)
{
	const struct fake_ep *e = ctx;
	if (e->runs_refused)
		return 1;
	return e->hub->net.max_segs ? e->hub->net.max_segs : DGRAM_MAX_SEGS;
}

static int fake_send(void *ctx, const struct dgram_pkt *pkts, unsigned n)
{
	struct fake_ep *e = ctx;
	struct fake_hub *h = e->hub;
	unsigned i = 0;
	pthread_mutex_lock(&h->mu);
	for (; i < n; i++) {
		const struct dgram_pkt *p = &pkts[i];
		uint32_t segs = dgram_segments(p);
		if (segs > 1 && h->net.refuse_runs && !e->runs_refused) {
			e->runs_refused = true; /* as the UDP transport: nothing of it sent */
			break;
		}
		if (segs > fake_max_segs(e) || p->len > DGRAM_MAX_RUN) {
			fprintf(stderr, "fake transport: a run of %u datagrams, %u bytes\n", segs, p->len);
			abort(); /* the caller broke the transport's contract */
		}
		h->st.runs_sent += segs > 1;
		unsigned dst = ntohs(p->peer.sin_port) - 1000u;
		uint32_t seg = segs > 1 ? p->seg : p->len;
		for (uint32_t off = 0; off < p->len || off == 0; off += seg) {
			send_one(h, e, p, off, p->len - off < seg ? p->len - off : seg, dst);
			if (!seg)
				break; /* an empty datagram */
		}
	}
	e->send_calls++;
	e->send_pkts += i;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return (int)i;
}

/* Takes the inbox's head into pkt, and with coalescing the datagrams
 * after it that the kernel's GRO would merge: same sender, same size (a
 * shorter one ends the run), as many as the buffer holds. */
static void take(struct fake_hub *h, struct inbox *b, struct dgram_pkt *pkt)
{
	uint32_t cap = pkt->len, len = 0, seg = 0, n = 0;
	unsigned from = b->head->from;
	pkt->peer = b->head->src;
	while (b->head) {
		struct dgram *d = b->head;
		if (n && (d->from != from || d->len > seg || len + d->len > cap || n == DGRAM_MAX_SEGS ||
			  d->due_ns > mono_ns()))
			break;
		uint32_t l = d->len < cap - len ? d->len : cap - len; /* truncated like UDP */
		memcpy((uint8_t *)pkt->buf + len, d->data, l);
		len += l;
		if (!n++)
			seg = d->len;
		b->head = d->next;
		if (!b->head)
			b->tail = NULL;
		b->n--;
		free(d);
		h->st.delivered++;
		if (!h->net.coalesce || !seg || l < seg)
			break;
	}
	pkt->len = len;
	pkt->seg = n > 1 ? (uint16_t)seg : 0;
	h->st.runs_received += n > 1;
}

static int fake_recv(void *ctx, struct dgram_pkt *pkts, unsigned n, int64_t timeout_ns)
{
	struct fake_ep *e = ctx;
	struct fake_hub *h = e->hub;
	struct inbox *b = &h->in[e->index];
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	int64_t ns = dl.tv_nsec + (timeout_ns > 0 ? timeout_ns : 0);
	dl.tv_sec += ns / 1000000000;
	dl.tv_nsec = ns % 1000000000;

	const int64_t until = mono_ns() + (timeout_ns > 0 ? timeout_ns : 0);
	pthread_mutex_lock(&h->mu);
	for (;;) {
		int64_t now = mono_ns();
		if ((b->head && b->head->due_ns <= now) || now >= until)
			break;
		if (b->head) { /* in the bottleneck still: wait for it to leave */
			int64_t ns = b->head->due_ns < until ? b->head->due_ns - now : until - now;
			pthread_mutex_unlock(&h->mu);
			nanosleep(&(struct timespec){ .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 }, NULL);
			pthread_mutex_lock(&h->mu);
		} else if (pthread_cond_timedwait(&h->cv, &h->mu, &dl) == ETIMEDOUT) {
			break;
		}
	}
	unsigned got = 0;
	while (got < n && b->head && b->head->due_ns <= mono_ns())
		take(h, b, &pkts[got++]);
	pthread_mutex_unlock(&h->mu);
	return (int)got;
}

static int fake_wait_send(void *ctx, int64_t timeout_ns)
{
	(void)ctx;
	(void)timeout_ns;
	return 1; /* the hub never fills */
}

/* What of this endpoint's still waits in its egress. */
static long fake_tx_queued(void *ctx)
{
	struct fake_ep *e = ctx;
	struct fake_hub *h = e->hub;
	if (h->net.egress_Bps <= 0)
		return 0;
	long q = 0;
	pthread_mutex_lock(&h->mu);
	int64_t now = mono_ns();
	for (unsigned i = 0; i < h->n; i++)
		for (const struct dgram *d = h->in[i].head; d; d = d->next)
			if (d->from == e->index && d->due_ns > now)
				q += (long)d->len + 512;
	pthread_mutex_unlock(&h->mu);
	return q;
}

static void fake_close(void *ctx) { (void)ctx; }

static const struct dgram_ops fake_ops = {
	.send_batch = fake_send,
	.recv_batch = fake_recv,
	.max_segs = fake_max_segs,
	.wait_send = fake_wait_send,
	.tx_queued = fake_tx_queued,
	.close = fake_close,
};

struct fake_hub *fake_hub_new(unsigned endpoints, const struct fake_net *net)
{
	struct fake_hub *h = calloc(1, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->net = *net;
	h->rng.s = net->seed ? net->seed : 1;
	h->n = endpoints;
	h->in = calloc(endpoints, sizeof(*h->in));
	h->eps = calloc(endpoints, sizeof(*h->eps));
	for (unsigned i = 0; i < endpoints; i++)
		h->eps[i] = (struct fake_ep){ .hub = h, .index = i };
	return h;
}

void fake_hub_endpoint(struct fake_hub *h, unsigned i, struct dgram_transport *t)
{
	t->ops = &fake_ops;
	t->ctx = &h->eps[i];
}

void fake_hub_sends(struct fake_hub *h, unsigned i, uint64_t *calls, uint64_t *pkts)
{
	pthread_mutex_lock(&h->mu);
	*calls = h->eps[i].send_calls;
	*pkts = h->eps[i].send_pkts;
	pthread_mutex_unlock(&h->mu);
}

struct fake_stats fake_hub_stats(struct fake_hub *h)
{
	pthread_mutex_lock(&h->mu);
	struct fake_stats s = h->st;
	pthread_mutex_unlock(&h->mu);
	return s;
}

void fake_hub_free(struct fake_hub *h)
{
	for (unsigned i = 0; i < h->n; i++)
		while (h->in[i].head) {
			struct dgram *d = h->in[i].head;
			h->in[i].head = d->next;
			free(d);
		}
	free(h->in);
	free(h->eps);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}
