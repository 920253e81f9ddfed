/* SPDX-License-Identifier: BSD-3-Clause */
/* A transport for unit tests: endpoints joined by an in-memory hub that
 * loses, duplicates and reorders datagrams with given probabilities, from a
 * seed (reproducible), and may put a bottleneck before each receiver: a
 * link of rate_pps datagrams per second whose queue holds `queue` of them
 * and drops the rest at its tail, as a switch port does; or a shaper in
 * each sending host.  Thread-safe: ranks may run as threads. */
#ifndef FAKE_TRANSPORT_H
#define FAKE_TRANSPORT_H

#include "dgram.h"

struct fake_hub;

struct fake_net {
	double loss, dup, reorder; /* probabilities per datagram */
	uint64_t seed;
	double rate_pps;   /* 0: no bottleneck (then queue is not used) */
	unsigned queue;	   /* datagrams waiting for the bottleneck, at most */
	uint8_t drop_type; /* nonzero: every datagram whose byte 1 (hcl_xfer's
			    * message type) is this is lost */
	/* nonzero: each endpoint's datagrams leave it at this many bytes per
	 * second, one FIFO whatever their destination, with no limit — a host
	 * whose shaper (or NIC) is slower than its sockets.  tx_queued tells
	 * what waits there (len + 512 bytes each, about a host's accounting).
	 * Not combined with rate_pps or reorder. */
	double egress_Bps;
	/* Runs: a sent pkt may carry up to max_segs datagrams (0: DGRAM_MAX_SEGS),
	 * each lost, duplicated or reordered on its own; refuse_runs: the first
	 * run is refused as a kernel without UDP GSO would, and max_segs is 1
	 * from then on.  coalesce: consecutive datagrams of one sender and one
	 * size are received as one run (UDP GRO), into buffers that hold them. */
	unsigned max_segs;
	int refuse_runs;
	int coalesce;
	/* nonzero: the datagrams with these numbers (1 = the first any
	 * endpoint sends) are lost, whatever else happens to them */
	uint64_t drop_nth[4];
	/* the share of datagrams whose byte 3 (an INA header's flags) gets
	 * INA_F_CE, as a switch carries a queue's ECN mark into it */
	double ce;
};

struct fake_hub *fake_hub_new(unsigned endpoints, const struct fake_net *net);
void fake_hub_free(struct fake_hub *h);
/* Endpoint i has address 127.0.0.1, port 1000 + i. */
void fake_hub_endpoint(struct fake_hub *h, unsigned i, struct dgram_transport *t);
struct sockaddr_in fake_addr(unsigned i);

/* unit/lib/fake_xfer.c (tests of ring/ only): */
struct hcl_xfer;
/* A reliable transfer for rank `rank` of n on the hub (peers fake_addr(0..n-1)),
 * with the given timeout floor; NULL with err on failure. */
struct hcl_xfer *fake_xfer_new(struct fake_hub *h, unsigned rank, unsigned n, uint32_t rto_us,
			       struct dgram_transport *t, char *err, size_t errlen);
struct hcl_xfer_cfg;
/* The same with the other settings of base (rank, nranks, peers are set). */
struct hcl_xfer *fake_xfer_new_cfg(struct fake_hub *h, unsigned rank, unsigned n, const struct hcl_xfer_cfg *base,
				   struct dgram_transport *t, char *err, size_t errlen);

struct fake_stats {
	uint64_t sent, lost, duplicated, reordered, delivered;
	uint64_t tail_dropped;	/* by a full bottleneck queue */
	uint64_t runs_sent;	/* sent pkts that carried more than one datagram */
	uint64_t runs_received; /* received pkts that carried more than one (coalesce) */
};
struct fake_stats fake_hub_stats(struct fake_hub *h);
/* Endpoint i's send_batch calls so far, and the pkts they took. */
void fake_hub_sends(struct fake_hub *h, unsigned i, uint64_t *calls, uint64_t *pkts);

#endif
