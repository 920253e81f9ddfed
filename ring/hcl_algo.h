/* SPDX-License-Identifier: BSD-3-Clause */
/* The interface every all-reduce algorithm of the communicator provides,
 * one file each (l3fwd keeps one file per lookup method the same way):
 * ring (hcl_algo_ring.c), hier (hcl_algo_hier.c), ps and ps-ina
 * (hcl_algo_ps.c), agent-ring (hcl_algo_aring.c).  The communicator
 * (hcl_comm.c) calls them; nothing else tests which algorithm runs.
 * Errors: a negative errno, the reason in err (or c->err for allreduce). */
#ifndef HCL_ALGO_H
#define HCL_ALGO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dgram.h"
#include "hcl_comm_int.h"

struct hcl_algo_ops {
	const char *name;
	/* Before the rendezvous, with c->env resolved: this rank's INA port
	 * (c->info) and the ports its data socket must not take
	 * (data_opts->avoid_ports).  May be NULL. */
	int (*prepare)(struct hcl_comm *c, struct dgram_udp_opts *data_opts, char *err, size_t errlen);
	/* Once the data socket is bound (c->peers[c->rank]): what else this
	 * rank announces, in c->extra[c->rank].  May be NULL. */
	int (*announce)(struct hcl_comm *c, const struct dgram_udp_opts *data_opts, char *err, size_t errlen);
	/* At the master, for each rank's rendezvous field: NULL if it goes
	 * with this rank's, else why not (the rank is refused).  May be NULL. */
	const char *(*check_peer)(const struct hcl_comm *c, const char *extra);
	/* After the rendezvous, c->x running: sockets, plans, switch jobs,
	 * software aggregators.  Ends in a barrier when others depend on
	 * what it set up. */
	int (*setup)(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen);
	/* Sums buf in place over the ranks: count elements of HCL_INT32 or
	 * HCL_FP32, or HCL_BF16 when setup set c->wire_bf16; c->err on failure. */
	int (*allreduce)(struct hcl_comm *c, void *buf, size_t count, enum hcl_dtype dt, int64_t deadline);
	/* The same out of place: src (left as it is) into buf, which do not
	 * overlap, without copying one into the other first.  May be NULL:
	 * the communicator copies, then calls allreduce. */
	int (*allreduce_from)(struct hcl_comm *c, const void *src, void *buf, size_t count, enum hcl_dtype dt,
			      int64_t deadline);
	/* After a call, with HCL_AGENT_REPORT: what the rack's switch saw.  May be NULL. */
	void (*report)(struct hcl_comm *c, enum hcl_dtype dt, size_t count);
	/* Adds its INA client's and software aggregator's counters.  May be NULL. */
	void (*stats)(const struct hcl_comm *c, struct hcl_comm_stats *out);
	/* Frees what prepare and setup made (also after a failed start). */
	void (*teardown)(struct hcl_comm *c);
	/* Ranks serve others (a PS, a ring member): everyone meets at a
	 * barrier before anyone tears down. */
	bool serves_others;
};

/* The algorithm of an id, or NULL. */
const struct hcl_algo_ops *hcl_algo_of(enum hcl_algo id);

extern const struct hcl_algo_ops hcl_algo_ring, hcl_algo_hier, hcl_algo_ps, hcl_algo_ps_ina, hcl_algo_aring;

/* What the algorithms that use INA share (ring/hcl_algo.c): prepare (this
 * rank's INA port, the ports the data socket must leave free), the INA
 * socket on the data address, and the transfer's configuration. */
struct hcl_xfer_cfg;
int hcl_ina_prepare(struct hcl_comm *c, struct dgram_udp_opts *o);
int hcl_ina_socket(const struct hcl_comm *c, struct dgram_transport *t, char *err, size_t errlen);
void hcl_comm_xfer_cfg(const struct hcl_comm *c, struct hcl_xfer_cfg *xc);
struct softsw;
void hcl_softsw_stats(const struct softsw *s, struct hcl_comm_stats *out);

#endif
