/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring channels: a large ring all-reduce split into parts, each run as its
 * own ring on its own socket and transfer, in its own thread (NCCL's
 * channels).  A ring step starts only when the previous step's whole chunk
 * has arrived, so each step pays the path's one-way delay once; with two
 * rings out of step, one's data fills the other's gaps on rate-limited
 * links (docs/TRANSPORT.md, "Ring channels").  Off by default: where the CPU
 * is the bound the extra threads cost more.  Channel 0 is the
 * communicator's own transfer. */
#ifndef HCL_CHAN_H
#define HCL_CHAN_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hcl.h"
#include "hcl_env.h"
#include "dgram.h"

#define HCL_CHAN_MAX	   HCL_RING_MAX_CHANNELS
/* A channel gets at least this much of a call: below it the thread and the
 * extra exchanges cost more than the overlap gains (BENCHMARKS.md). */
#define HCL_CHAN_MIN_BYTES (1u << 20)

struct hcl_xfer;
struct hcl_xfer_cfg;

struct hcl_chan {
	unsigned n;  /* channels, 1..HCL_CHAN_MAX; 1: none beside the comm's own */
	bool autoch; /* n chosen after the rendezvous (hcl_chan_settle); until then HCL_CHAN_MAX open */
	int world, rank;
	uint32_t *machine; /* auto: per rank, its machine (the kernel's boot id) */
	uint16_t *cpus;	   /* auto: per rank, the CPUs it may run on */
	struct dgram_transport t[HCL_CHAN_MAX - 1];
	struct hcl_xfer *x[HCL_CHAN_MAX - 1];
	struct sockaddr_in *peers[HCL_CHAN_MAX - 1]; /* per rank, the channel's address */
	uint16_t *ports; /* [rank * (HCL_CHAN_MAX - 1) + k]: channel k+1's port, host order */
	uint32_t epoch;
};

/* n channels (1..HCL_CHAN_MAX; 0: auto, chosen by hcl_chan_settle).  0, or
 * -ENOMEM with the reason in err. */
int hcl_chan_init(struct hcl_chan *ch, unsigned n, int rank, int world, char *err, size_t errlen);
/* Binds channels 1..n-1 on me's address (kernel-chosen ports, opts' avoided
 * ones excepted) and notes their ports as this rank's. */
int hcl_chan_open(struct hcl_chan *ch, const struct sockaddr_in *me, const struct dgram_udp_opts *opts, char *err,
		  size_t errlen);
/* Rank i's field for the rendezvous: "-" or "p1,p2,..."; auto:
 * "aMACHINE/CPUS:p1,p2,p3". */
void hcl_chan_text(const struct hcl_chan *ch, int i, char *b, size_t n);
/* NULL if a rank's rendezvous field goes with this rank's setting, else
 * why not. */
const char *hcl_chan_check(const struct hcl_chan *ch, const char *s);
/* Parses rank i's field; -1 unless it is of this rank's kind and names
 * every port. */
int hcl_chan_parse(struct hcl_chan *ch, int i, const char *s);
/* After every rank's field is parsed: auto's count, the same on every
 * rank (each rank's CPUs over the ranks on its machine, the fewest, 1..
 * HCL_CHAN_MAX); the sockets it leaves unused are closed.  The count. */
unsigned hcl_chan_settle(struct hcl_chan *ch);
/* After the rendezvous: peers[i] is rank i's data address; one transfer per
 * channel, configured as the comm's (xc). */
int hcl_chan_start(struct hcl_chan *ch, const struct sockaddr_in *peers, const struct hcl_xfer_cfg *xc, char *err,
		   size_t errlen);
/* How many channels a call of this many bytes uses. */
unsigned hcl_chan_use(const struct hcl_chan *ch, size_t bytes);
/* The ring all-reduce of buf (out of place from src, unless NULL:
 * hcl_ring_allreduce_from) over `use` channels, x0 being channel 0 (its
 * collective number epoch0, the comm's); lingers on each after success.
 * 0, or the first failure with its reason in err. */
int hcl_chan_ring_allreduce(struct hcl_chan *ch, struct hcl_xfer *x0, uint32_t epoch0, unsigned use, const void *src,
			    void *buf, size_t count, enum hcl_dtype dtype, int64_t deadline, char *err, size_t errlen);
void hcl_chan_close(struct hcl_chan *ch);

#endif
