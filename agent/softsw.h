/* SPDX-License-Identifier: BSD-3-Clause */
/* A software aggregator: the aggregation engine of the switch
 * (nic/ina_engine) behind a datagram transport, in a thread: the software
 * PS of ps and ps-ina, and the ring member of a host whose rack has no INA
 * in agent-ring.  Workers talk to it exactly as to an INA switch, which is
 * what lets a rack without INA fall back to it (ATP's fallback). */
#ifndef SOFTSW_H
#define SOFTSW_H

#include <netinet/in.h>
#include <stddef.h>

#include "ina_engine.h"

struct softsw;

#include "dgram.h"

/* Binds a UDP socket to addr, installs the jobs, starts serving.  NULL
 * with err on failure. */
struct softsw *softsw_start(const struct sockaddr_in *addr, const struct ina_job_cfg *jobs, unsigned njobs, char *err,
			    size_t errlen);
/* The same on a transport of the caller's (unit tests: a fake network),
 * which the aggregator then owns and closes. */
struct softsw *softsw_start_on(struct dgram_transport *t, const struct ina_job_cfg *jobs, unsigned njobs, char *err,
			       size_t errlen);
/* Stops the thread and frees everything. */
void softsw_stop(struct softsw *ps);
const struct ina_engine_stats *softsw_stats(const struct softsw *ps);
/* Job id's counters (read while it serves: a snapshot), or NULL. */
const struct ina_job_stats *softsw_job_stats(const struct softsw *ps, uint16_t id);

#endif
