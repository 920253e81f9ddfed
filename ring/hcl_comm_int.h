/* SPDX-License-Identifier: BSD-3-Clause */
/* The communicator's insides, shared by ring/hcl_comm.c (the public API),
 * the rendezvous and the algorithms (ring/hcl_algo.h).  Not installed. */
#ifndef HCL_COMM_INT_H
#define HCL_COMM_INT_H

#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dgram.h"
#include "hcl.h"
#include "hcl_env.h"
#include "plan.h"

struct hcl_algo_ops;
struct hcl_xfer;
struct hcl_sync;

/* An algorithm's field of the rendezvous line ("-": nothing). */
#define HCL_EXTRA_LEN 40

struct hcl_comm {
	int rank, world;
	struct hcl_env env; /* every setting, resolved (ring/hcl_env.h) */
	const struct hcl_algo_ops *algo;
	void *algo_state;	      /* the algorithm's own, from prepare to teardown */
	struct dgram_transport t;     /* the data socket */
	struct sockaddr_in *peers;    /* per rank: its data address */
	struct plan_rank *info;	      /* per rank: INA address (ip, port, MAC), rack, ToR */
	char (*extra)[HCL_EXTRA_LEN]; /* per rank: the algorithm's rendezvous field */
	struct hcl_xfer *x;	      /* the reliable transfer over t */
	uint32_t epoch;		      /* collectives run on x so far */
	uint64_t owner;		      /* the token its switch jobs are installed under (rendezvous) */
	bool wire_bf16;		      /* the algorithm sums floats as bf16: its allreduce takes HCL_BF16 */
	bool ready;		      /* hcl_comm_create finished: the others meet us at destroy's barrier */
	void *scratch;		      /* bf16 calls widened, fp32 calls narrowed */
	size_t scratch_bytes;
	struct hcl_sync *sync; /* timing and pacing around each call (ring/hcl_sync.h) */
	/* an INA aggregator was lost mid-job: every later call runs on the
	 * software ring (ring/hcl_fallback.h); calls that did so */
	bool ina_lost;
	bool fallback_aligned; /* every rank met in one fall-back call: the later ones need no check */
	unsigned long long ina_fallback_calls;
	uint32_t calls; /* all-reduce calls begun (the fall-back checks every rank is in the same) */
	char err[320];
};

/* bf16 <-> binary32: exact one way, rounded to nearest even the other. */
float hcl_bf16_widen(uint16_t h);
uint16_t hcl_bf16_narrow(float f);

/* The error convention of the host library: a negative errno returned,
 * the message beside it.  Writes the message, returns rc. */
static inline __attribute__((format(printf, 4, 5))) int hcl_fail(int rc, char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return rc;
}

/* ring/hcl_rendezvous.c: every rank's data address and rendezvous fields,
 * through rank 0 (docs/HOSTLIB.md).  Opens c->t on this rank's data
 * address first (data_opts: the ports it must not take). */
int hcl_rendezvous(struct hcl_comm *c, const struct dgram_udp_opts *data_opts, int64_t deadline, char *err,
		   size_t errlen);

/* All ranks reach this point (a one-element ring all-reduce on c->x). */
int hcl_comm_barrier(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen);
/* For the INA clients' wait loops (ctx is the communicator): a rank that
 * moved on from the last exchange still answers a peer whose ACK was lost.
 * Not 0: 1 + a rank that lost its INA aggregator in the call before this
 * one, this one or a later one (ring/hcl_fallback.c), so this rank's call
 * will not finish either. */
int hcl_comm_poll_xfer(void *ctx);
/* The INA packets of ps, ps-ina and agent-ring must fit the MTU of this
 * rank's route to where they go (its rack's ToR, else the next rank): 0,
 * or -EMSGSIZE with the largest element count that fits in err. */
int hcl_ina_mtu_check(const struct hcl_comm *c, const char *name, char *err, size_t errlen);

#endif
