/* SPDX-License-Identifier: BSD-3-Clause */
/* Synchronisation visibility and pacing around every collective call
 * (issue 6, docs/PACING.md).
 *
 * Each call is a synchronisation point.  When a rank enters a call it
 * sends a note (an unreliable datagram beside the transfers, see
 * hcl_xfer_send_note) to every other rank: the call's number, the time it
 * was ready on the reference clock, and the pacing delay it is about to
 * insert.  Nobody can finish a collective before everyone has entered it,
 * so by the end of the call every note of that call has been sent, and
 * usually received: the measurement costs no round trip and no barrier.
 * A note that is still missing a few milliseconds after the end makes the
 * point incomplete (counted, traced, ignored by the pacing).
 *
 * The reference clock is rank 0's: at creation each rank measures its
 * offset to rank 0 with request/reply exchanges and keeps the sample with
 * the shortest round trip (error at most half of it).
 *
 * From the notes: this rank's earliness (ready before the last rank),
 * wait (started sending before the last rank started: the part of the call
 * spent waiting for others), communication (the rest of the call), compute
 * (between calls, or within hcl_iter_begin/end), the spread (max - min
 * readiness); one JSON line per call and per iteration, and a summary. */
#ifndef HCL_SYNC_H
#define HCL_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hcl.h"
#include "hcl_pace.h"

struct hcl_xfer;

/* What every rank tells the others when it enters a call. */
struct hcl_sync_rec {
	int64_t ready_ns; /* on the reference clock */
	int64_t delay_ns; /* pacing delay it inserts before it starts */
};

/* One synchronisation point seen from one rank. */
struct hcl_sync_point {
	int64_t early_ns;	 /* ready before the last rank was ready */
	int64_t wait_ns;	 /* started sending before the last rank started */
	int64_t spread_ns;	 /* max - min readiness over ranks */
	int64_t start_spread_ns; /* the same after the pacing delays */
	int last;		 /* the rank that was ready last */
};

/* Pure arithmetic on the records of one call (unit-tested). */
void hcl_sync_derive(const struct hcl_sync_rec *all, int world, int rank, struct hcl_sync_point *out);

/* Summary of a series of iteration times (ns): mean, percentiles (nearest
 * rank), coefficient of variation (population standard deviation / mean).
 * times is sorted in place. */
struct hcl_sync_stats {
	unsigned long n;
	double mean_ns, p50_ns, p99_ns, cv;
};
void hcl_sync_stats(int64_t *times, unsigned long n, struct hcl_sync_stats *out);

/* This rank's clock offset to rank 0 (add it to local times), measured
 * with `samples` request/reply exchanges per rank over the transfer; rank
 * 0 serves the others in turn.  All ranks call it together. */
int hcl_sync_clock(struct hcl_xfer *x, int rank, int world, int samples, int64_t *offset_ns, int64_t *rtt_ns,
		   int64_t deadline_ns, char *err, size_t errlen);

struct hcl_sync_cfg {
	bool pace;	       /* insert delays (implies measuring) */
	const char *trace_dir; /* write DIR/rank<r>.jsonl; NULL: no trace */
	struct hcl_pace_cfg pace_cfg;
};

struct hcl_sync;

/* NULL with err when the trace cannot be opened, the clock exchange
 * fails or memory is short; a configuration that neither paces nor traces
 * gives a valid object that does nothing (hcl_sync_on() false), so the
 * plain path costs nothing.  When on, it takes the transfer's note handler. */
struct hcl_sync *hcl_sync_new(const struct hcl_sync_cfg *cfg, struct hcl_xfer *x, int rank, int world, const char *algo,
			      int64_t deadline_ns, char *err, size_t errlen);
/* Writes the summary line and closes the trace. */
void hcl_sync_free(struct hcl_sync *s);
bool hcl_sync_on(const struct hcl_sync *s);

/* Around a call: before() notes the ready time, sends it to the others
 * and inserts the pacing delay (answering the transfer while it waits: a
 * peer may need an ACK from us); after() collects the call's notes,
 * updates the pacing decision and writes the trace. */
void hcl_sync_before(struct hcl_sync *s);
void hcl_sync_after(struct hcl_sync *s, size_t bytes);
void hcl_sync_iter_begin(struct hcl_sync *s);
void hcl_sync_iter_end(struct hcl_sync *s);
void hcl_sync_summary(const struct hcl_sync *s, struct hcl_sync_summary *out);
/* Writes this rank's network counters into the trace (one "host" line). */
void hcl_sync_trace_host(struct hcl_sync *s, const struct hcl_comm_stats *st);

#endif
