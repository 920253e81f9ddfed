/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* sched_getaffinity */
#include "hcl_chan.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_ring.h"
#include "hcl_xfer.h"

#define XMAX (HCL_CHAN_MAX - 1)

int hcl_chan_init(struct hcl_chan *ch, unsigned n, int rank, int world, char *err, size_t errlen)
{
	*ch = (struct hcl_chan){ .n = n ? n : HCL_CHAN_MAX, .autoch = n == 0, .rank = rank, .world = world };
	if (ch->n > 1 && !(ch->ports = calloc((size_t)world * XMAX, sizeof(*ch->ports)))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (ch->autoch && (!(ch->machine = calloc((size_t)world, sizeof(*ch->machine))) ||
			   !(ch->cpus = calloc((size_t)world, sizeof(*ch->cpus))))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* This machine, as every process on it sees it (network namespaces
 * included): the first group of the kernel's boot id; 0 if unreadable. */
static uint32_t machine_id(void)
{
	char b[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (!fgets(b, sizeof(b), f))
			b[0] = 0;
		fclose(f);
	}
	return (uint32_t)strtoul(b, NULL, 16);
}

static unsigned my_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	int n = CPU_COUNT(&set);
	return n < 1 ? 1 : n > 65535 ? 65535 : (unsigned)n;
}

int hcl_chan_open(struct hcl_chan *ch, const struct sockaddr_in *me, const struct dgram_udp_opts *opts, char *err,
		  size_t errlen)
{
	struct sockaddr_in a = *me;
	a.sin_port = 0;
	for (unsigned k = 0; k + 1 < ch->n; k++) {
		int rc = dgram_udp_open(&ch->t[k], &a, opts, err, errlen);
		if (rc < 0)
			return rc;
		struct sockaddr_in b;
		dgram_udp_local(&ch->t[k], &b);
		ch->ports[(size_t)ch->rank * XMAX + k] = ntohs(b.sin_port);
	}
	if (ch->autoch) {
		ch->machine[ch->rank] = machine_id();
		ch->cpus[ch->rank] = (uint16_t)my_cpus();
	}
	return 0;
}

void hcl_chan_text(const struct hcl_chan *ch, int i, char *b, size_t n)
{
	size_t len = 0;
	snprintf(b, n, "-");
	if (ch->autoch)
		len = (size_t)snprintf(b, n, "a%x/%u:", ch->machine[i], ch->cpus[i]);
	for (unsigned k = 0; k + 1 < ch->n && len < n; k++)
		len += (size_t)snprintf(b + len, n - len, "%s%u", k ? "," : "", ch->ports[(size_t)i * XMAX + k]);
}

/* The ports of a field after its auto prefix, and how many it names. */
static int port_count(const char *s)
{
	if (!strcmp(s, "-"))
		return 1;
	int n = 2;
	for (; *s; s++)
		n += *s == ',';
	return n;
}

const char *hcl_chan_check(const struct hcl_chan *ch, const char *s)
{
	if ((s[0] == 'a') != ch->autoch)
		return ch->autoch ? "ring channels set to a number there (HCL_RING_CHANNELS), auto here"
				  : "ring channels auto there (HCL_RING_CHANNELS), set to a number here";
	if (ch->autoch)
		return NULL; /* the count is settled from every rank's field */
	return port_count(s) == (int)ch->n ? NULL : "another number of ring channels (HCL_RING_CHANNELS)";
}

int hcl_chan_parse(struct hcl_chan *ch, int i, const char *s)
{
	if (ch->autoch) {
		char *end;
		if (s[0] != 'a')
			return -1;
		unsigned long m = strtoul(s + 1, &end, 16);
		if (end == s + 1 || *end != '/' || m > UINT32_MAX)
			return -1;
		const char *c = end + 1;
		unsigned long cpus = strtoul(c, &end, 10);
		if (end == c || *end != ':' || cpus < 1 || cpus > 65535)
			return -1;
		ch->machine[i] = (uint32_t)m;
		ch->cpus[i] = (uint16_t)cpus;
		s = end + 1;
	}
	if (ch->n == 1)
		return strcmp(s, "-") == 0 ? 0 : -1;
	for (unsigned k = 0; k + 1 < ch->n; k++) {
		char *end;
		long p = strtol(s, &end, 10);
		if (end == s || p < 1 || p > 65535 || (k + 2 < ch->n ? *end != ',' : *end != 0))
			return -1;
		ch->ports[(size_t)i * XMAX + k] = (uint16_t)p;
		s = end + 1;
	}
	return 0;
}

unsigned hcl_chan_settle(struct hcl_chan *ch)
{
	if (!ch->autoch)
		return ch->n;
	/* NCCL picks its channels from the hardware; here a channel is a
	 * thread and a socket, worth it where each has a core to itself (on a
	 * 2-core machine with 4 ranks the extra threads cost 8-9%; on 16 cores
	 * 4 channels made the ring 2-3x faster than 1) */
	unsigned n = HCL_CHAN_MAX;
	for (int i = 0; i < ch->world; i++) {
		unsigned here = 0;
		for (int j = 0; j < ch->world; j++)
			here += ch->machine[j] == ch->machine[i];
		unsigned fit = ch->cpus[i] / (here ? here : 1);
		n = fit < n ? fit : n;
	}
	n = n < 1 ? 1 : n;
	for (unsigned k = n > 0 ? n - 1 : 0; k + 1 < ch->n; k++)
		dgram_close(&ch->t[k]); /* never used */
	ch->n = n;
	return n;
}

int hcl_chan_start(struct hcl_chan *ch, const struct sockaddr_in *peers, const struct hcl_xfer_cfg *xc, char *err,
		   size_t errlen)
{
	for (unsigned k = 0; k + 1 < ch->n; k++) {
		if (!(ch->peers[k] = calloc((size_t)ch->world, sizeof(*ch->peers[k])))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		for (int i = 0; i < ch->world; i++) {
			ch->peers[k][i] = peers[i];
			ch->peers[k][i].sin_port = htons(ch->ports[(size_t)i * XMAX + k]);
		}
		struct hcl_xfer_cfg c = *xc;
		c.peers = ch->peers[k];
		if (!(ch->x[k] = hcl_xfer_new(&c, &ch->t[k], err, errlen)))
			return -ENOMEM;
	}
	return 0;
}

unsigned hcl_chan_use(const struct hcl_chan *ch, size_t bytes)
{
	size_t fit = bytes / HCL_CHAN_MIN_BYTES;
	return fit < 1 ? 1 : fit < ch->n ? (unsigned)fit : ch->n;
}

/* One channel's part: a ring of its own, then its linger. */
struct part {
	struct hcl_xfer *x;
	unsigned rank, world;
	const void *src; /* NULL: in place */
	void *buf;
	size_t count;
	enum hcl_dtype dtype;
	uint32_t epoch;
	int64_t deadline;
	int rc;
	char err[320];
};

static void *run_part(void *arg)
{
	struct part *p = arg;
	p->rc = hcl_ring_allreduce_from(p->x, p->rank, p->world, p->src, p->buf, p->count, p->dtype, p->epoch,
					p->deadline, p->err, sizeof(p->err));
	if (p->rc == 0) /* our last ACK may be lost: answer a resend for a while */
		hcl_xfer_linger(p->x, hcl_xfer_quiet_ns(p->x), p->deadline);
	return NULL;
}

int hcl_chan_ring_allreduce(struct hcl_chan *ch, struct hcl_xfer *x0, uint32_t epoch0, unsigned use, const void *src,
			    void *buf, size_t count, enum hcl_dtype dtype, int64_t deadline, char *err, size_t errlen)
{
	struct part parts[HCL_CHAN_MAX];
	pthread_t th[HCL_CHAN_MAX];
	bool started[HCL_CHAN_MAX] = { false };
	if (use < 1 || use > ch->n)
		use = 1;
	uint32_t e = ++ch->epoch; /* every channel's own sequence of collectives */
	for (unsigned k = 0; k < use; k++) {
		size_t off, len;
		hcl_ring_chunk(count, use, k, &off, &len);
		parts[k] = (struct part){ .x = k ? ch->x[k - 1] : x0,
					  .rank = (unsigned)ch->rank,
					  .world = (unsigned)ch->world,
					  .src = src ? (const uint8_t *)src + off * 4 : NULL,
					  .buf = (uint8_t *)buf + off * 4,
					  .count = len,
					  .dtype = dtype,
					  .epoch = k ? e : epoch0,
					  .deadline = deadline };
	}
	/* a channel whose thread cannot start runs here after channel 0: the
	 * parts are independent, only slower */
	for (unsigned k = 1; k < use; k++)
		started[k] = pthread_create(&th[k], NULL, run_part, &parts[k]) == 0;
	run_part(&parts[0]);
	for (unsigned k = 1; k < use; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		else
			run_part(&parts[k]);
	}
	for (unsigned k = 0; k < use; k++)
		if (parts[k].rc < 0) {
			snprintf(err, errlen, "%s", parts[k].err);
			return parts[k].rc;
		}
	return 0;
}

void hcl_chan_close(struct hcl_chan *ch)
{
	for (unsigned k = 0; k + 1 < ch->n; k++) {
		if (ch->x[k]) /* our last ACKs may be lost: answer re-sends before leaving */
			hcl_xfer_linger_final(ch->x[k], clock_now_ns() + 2000000000);
		hcl_xfer_free(ch->x[k]);
		dgram_close(&ch->t[k]);
		free(ch->peers[k]);
	}
	free(ch->ports);
	free(ch->machine);
	free(ch->cpus);
	*ch = (struct hcl_chan){ .n = 1 };
}
