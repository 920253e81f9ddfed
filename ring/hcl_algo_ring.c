/* SPDX-License-Identifier: BSD-3-Clause */
/* ring: the flat ring all-reduce (ring/hcl_ring.c), a large call split
 * over 1-4 rings on sockets of their own, as many as the hosts' cores
 * allow or HCL_RING_CHANNELS says (ring/hcl_chan.c).  The channels' ports
 * travel in the rendezvous. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "hcl_algo.h"
#include "hcl_chan.h"
#include "hcl_ring.h"
#include "hcl_xfer.h"

static int ring_announce(struct hcl_comm *c, const struct dgram_udp_opts *opts, char *err, size_t errlen)
{
	struct hcl_chan *ch = calloc(1, sizeof(*ch));
	if (!ch)
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	c->algo_state = ch;
	int rc = hcl_chan_init(ch, c->env.ring_channels, c->rank, c->world, err, errlen);
	if (rc == 0)
		rc = hcl_chan_open(ch, &c->peers[c->rank], opts, err, errlen);
	if (rc == 0)
		hcl_chan_text(ch, c->rank, c->extra[c->rank], HCL_EXTRA_LEN);
	return rc;
}

static const char *ring_check_peer(const struct hcl_comm *c, const char *extra)
{
	return hcl_chan_check(c->algo_state, extra);
}

static int ring_setup(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen)
{
	(void)deadline;
	struct hcl_chan *ch = c->algo_state;
	struct hcl_xfer_cfg xc;
	for (int i = 0; i < c->world; i++)
		if (hcl_chan_parse(ch, i, c->extra[i]) < 0)
			return hcl_fail(-EPROTO, err, errlen,
					"rank %d runs another number of ring channels (HCL_RING_CHANNELS: %s here)", i,
					ch->autoch ? "auto" : "a number");
	bool chosen = ch->autoch;
	unsigned n = hcl_chan_settle(ch);
	if (c->env.debug && c->rank == 0)
		fprintf(stderr, "hcl: ring channels: %u (%s)\n", n, chosen ? "auto" : "HCL_RING_CHANNELS");
	hcl_comm_xfer_cfg(c, &xc);
	return hcl_chan_start(ch, c->peers, &xc, err, errlen);
}

static int ring_allreduce_from(struct hcl_comm *c, const void *src, void *buf, size_t count, enum hcl_dtype dt,
			       int64_t deadline)
{
	struct hcl_chan *ch = c->algo_state;
	unsigned channels = hcl_chan_use(ch, count * 4);
	if (channels > 1)
		return hcl_chan_ring_allreduce(ch, c->x, ++c->epoch, channels, src, buf, count, dt, deadline, c->err,
					       sizeof(c->err));
	int rc = hcl_ring_allreduce_from(c->x, (unsigned)c->rank, (unsigned)c->world, src, buf, count, dt, ++c->epoch,
					 deadline, c->err, sizeof(c->err));
	if (rc == 0) /* our last ACK may be lost: answer a resend for a while */
		hcl_xfer_linger(c->x, hcl_xfer_quiet_ns(c->x), deadline);
	return rc;
}

static int ring_allreduce(struct hcl_comm *c, void *buf, size_t count, enum hcl_dtype dt, int64_t deadline)
{
	return ring_allreduce_from(c, NULL, buf, count, dt, deadline);
}

static void ring_teardown(struct hcl_comm *c)
{
	struct hcl_chan *ch = c->algo_state;
	if (ch)
		hcl_chan_close(ch);
	free(ch);
	c->algo_state = NULL;
}

const struct hcl_algo_ops hcl_algo_ring = {
	.name = "ring",
	.announce = ring_announce,
	.check_peer = ring_check_peer,
	.setup = ring_setup,
	.allreduce = ring_allreduce,
	.allreduce_from = ring_allreduce_from,
	.teardown = ring_teardown,
};
