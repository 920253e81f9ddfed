/* SPDX-License-Identifier: BSD-3-Clause */
/* Reliable point-to-point transfer over a datagram transport, as the ring
 * algorithms use it: one *exchange* sends a buffer to one peer and receives
 * one from another at the same time, under a tag (collective epoch, step).
 * Packets carry (tag, seq, total); the receiver places each at its offset,
 * so loss, duplication and reordering only cost time.  ACKs are cumulative
 * with a 64-packet selective bitmap; a packet is resent when one sent after
 * it was acknowledged (RACK) or, for the tail, when its timer expires
 * (backing off exponentially).  A congestion window per peer (TCP's: slow
 * start, halved on loss, one packet after a timeout) keeps bursts within
 * what switch queues hold (docs/HOSTLIB.md).  Data for the next tag is
 * kept (a neighbour often starts the next step first), data for a later
 * one refused with WAIT and asked for again with READY; data for the
 * previous tag is acknowledged again (our last ACK may have been lost).
 * Every wait has a deadline; a failure names the peer. */
#ifndef HCL_XFER_H
#define HCL_XFER_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "dgram.h"

#define HCL_XFER_HDR	      24
#define HCL_XFER_MAX_PEERS    1024
#define HCL_XFER_INITIAL_CWND 10 /* packets (RFC 6928's initial window) */

struct hcl_xfer_cfg {
	unsigned rank;
	unsigned nranks;
	const struct sockaddr_in *peers; /* nranks entries, peers[rank] = own */
	/* data bytes per packet (a multiple of 4 up to 8976, so that no packet
	 * splits an element); 0 = 8948, what fills a 9000-byte IP packet */
	uint32_t payload;
	uint32_t window; /* most packets in flight (the congestion window's cap); 0 = 64 */
	/* Floor of the adaptive timeout (10x before the first sample, within
	 * rto_max); 0 = 10000.  Not lower: a rank on a shared host is sometimes
	 * not scheduled for several ms; with a 2 ms floor a peer with a short
	 * queue (small srtt) timed out spuriously, its window collapsed, its
	 * queue and srtt stayed short, and it kept timing out: the ring at
	 * 4 MiB took 0.55-0.59 s instead of 0.36 in one run of two or three.
	 * Losses other than a window's tail are found by RACK, not the timer. */
	uint32_t rto_us;
	uint32_t rto_max_us; /* back-off cap; 0 = 100000 */
	double timer_scale;  /* rto_us and rto_max_us x this (time dilation); 0 = 1 */
	/* Most bytes of our own datagrams (in the host's accounting, about
	 * 16 KiB per jumbo datagram) left waiting in this host's queue before
	 * new data waits; 0 = 64 KiB, UINT32_MAX = no limit.  See
	 * local_queue_wait in hcl_xfer.c. */
	uint32_t local_queue;
	/* The transport was opened to coalesce received runs (dgram_udp_opts.gro):
	 * receive buffers then hold DGRAM_MAX_RUN bytes each. */
	bool coalesced;
	/* Every peer's socket is open already (a rendezvous has run): a port
	 * its host calls unreachable means that rank is gone.  Without it, a
	 * rank is gone only once it was heard from (ranks start in any order). */
	bool peers_ready;
};

struct hcl_xfer_stats {
	uint64_t data_sent, data_resent, acks_sent;
	uint64_t timeouts, cwnd_halved;	     /* congestion events: timer expiries, detected losses */
	uint64_t timeouts_undone;	     /* expiries found spurious (F-RTO): the window came back */
	uint64_t tail_probes;		     /* the last packet sent again before the timer (TLP) */
	uint64_t waits_sent, waits_received; /* flow control: early data refused (WAIT) */
	uint64_t local_waits;		     /* data held back: the host's own queue was full */
	uint64_t data_received, duplicates, early, stale, malformed;
	uint64_t notes_sent, notes_received;
	uint64_t pings_sent;	/* to a rank a receive waited on, to learn whether it is still there */
	uint64_t lingers_quiet; /* lingers that ended by their quiet time or deadline: a FIN was missing */
	uint64_t data_runs;	/* sends of data handed to the transport (a run or a lone datagram) */
	uint64_t rx_runs;	/* received runs the kernel coalesced */
};

struct hcl_xfer;

/* NULL with a reason in err on bad configuration or no memory.  The
 * transport stays the caller's. */
struct hcl_xfer *hcl_xfer_new(const struct hcl_xfer_cfg *cfg, struct dgram_transport *t, char *err, size_t errlen);
void hcl_xfer_free(struct hcl_xfer *x);

/* Sends slen bytes of sbuf to rank `to` and receives exactly rlen bytes from
 * rank `from` into rbuf, tagged `tag` (must differ from the previous
 * exchange's).  Either side may be absent (to/from = -1).  Returns 0, or
 * -ETIMEDOUT when deadline_ns (CLOCK_MONOTONIC) passes first, -EPROTO when
 * the peer sent another length, another negative errno from the transport;
 * err then says what and names the peer. */
int hcl_xfer_exchange(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from, void *rbuf,
		      size_t rlen, int64_t deadline_ns, char *err, size_t errlen);

/* How received bytes go into rbuf: copied, or added to what is there
 * (element-wise, 4-byte elements in host order; int32 wraps).  Adding as
 * packets arrive spares a reduce-scatter its temporary buffer and a pass
 * over every byte; each packet is added exactly once, however often it
 * arrives. */
enum hcl_xfer_op { HCL_XFER_COPY, HCL_XFER_SUM_I32, HCL_XFER_SUM_F32 };
/* hcl_xfer_exchange that combines by op; rlen must be a multiple of 4 for
 * the sums (-EINVAL).  rbuf must not overlap sbuf. */
int hcl_xfer_exchange_op(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from, void *rbuf,
			 size_t rlen, enum hcl_xfer_op op, int64_t deadline_ns, char *err, size_t errlen);
/* hcl_xfer_exchange_op whose sums start from rbase instead of rbuf's own
 * bytes (rbuf = rbase + received, packet by packet): an out-of-place
 * reduction without a first copy.  Every byte of rbuf is written once the
 * exchange completes.  rbase NULL: hcl_xfer_exchange_op; it must not
 * overlap rbuf. */
int hcl_xfer_exchange_from(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from,
			   void *rbuf, const void *rbase, size_t rlen, enum hcl_xfer_op op, int64_t deadline_ns,
			   char *err, size_t errlen);

/* hcl_xfer_exchange_from that returns once the message is received and
 * every packet of its send went out once: the send's ACKs (and resends)
 * are awaited while the next exchange runs, which ends only after them,
 * or by hcl_xfer_drain.  A pipelined ring's next step so goes without a
 * round trip's wait.  sbuf must stay as it is until then; the exchange
 * after it must not use the same (to, tag). */
int hcl_xfer_exchange_trailing(struct hcl_xfer *x, uint32_t tag, int to, const void *sbuf, size_t slen, int from,
			       void *rbuf, const void *rbase, size_t rlen, enum hcl_xfer_op op, int64_t deadline_ns,
			       char *err, size_t errlen);
/* Waits until a trailing send is acknowledged in full (0 at once when
 * there is none); -ETIMEDOUT at deadline_ns, err naming the peer. */
int hcl_xfer_drain(struct hcl_xfer *x, int64_t deadline_ns, char *err, size_t errlen);

/* After the last exchange of a collective: keeps answering re-sent data
 * (our final ACK may have been lost, and the peer would otherwise wait to
 * its deadline) until every sender whose message completed since the last
 * linger has sent its FIN (a rank of hier hears from several), or no
 * re-send of a finished message arrived for quiet_ns, or deadline_ns. */
int hcl_xfer_linger(struct hcl_xfer *x, int64_t quiet_ns, int64_t deadline_ns);
/* Answers what arrived, without waiting: for loops that do other work
 * (the INA clients) so that a peer whose last ACK was lost is answered. */
int hcl_xfer_poll(struct hcl_xfer *x);
/* The same, waiting up to wait_ns for the first datagram. */
int hcl_xfer_poll_wait(struct hcl_xfer *x, int64_t wait_ns);

/* Notes: small unreliable datagrams beside the transfers (the timing layer
 * sends its arrival records this way, so that measuring costs no round
 * trip).  Whatever receives (exchange, linger, poll) hands each note to
 * the handler; without one they count as malformed. */
#define HCL_XFER_NOTE_MAX 64
void hcl_xfer_set_note_handler(struct hcl_xfer *x, void (*cb)(void *ctx, int src, const void *p, size_t len),
			       void *ctx);
int hcl_xfer_send_note(struct hcl_xfer *x, int to, const void *buf, size_t len);
/* INA lost (ring/hcl_fallback.c): tells rank `to` that this rank lost its
 * INA aggregator in call `call` (unreliable, like a note); and the latest
 * call a peer said so of (0: none; *from: that peer). */
int hcl_xfer_send_lost(struct hcl_xfer *x, int to, uint32_t call);
uint32_t hcl_xfer_lost_call(const struct hcl_xfer *x, int *from);

/* Before the transfer goes away: the same for every remembered receive
 * whose FIN is missing, with a quiet time that outlasts any peer's backed-off
 * timer.  (Between calls a lost ACK is answered by the next call's
 * exchanges; after the last one nobody would answer.) */
int hcl_xfer_linger_final(struct hcl_xfer *x, int64_t deadline_ns);

const struct hcl_xfer_stats *hcl_xfer_stats(const struct hcl_xfer *x);
/* The congestion window towards peer and its slow-start threshold, in
 * packets (for tests and diagnostics). */
void hcl_xfer_window(const struct hcl_xfer *x, unsigned peer, double *cwnd, double *ssthresh);
/* The current retransmission timeout (before back-off). */
int64_t hcl_xfer_rto_ns(const struct hcl_xfer *x);
/* The quiet time for hcl_xfer_linger: long enough for the peer's resend,
 * also when the peer has not measured a round trip yet (its first timer is
 * the long initial one, e.g. for the first exchange of a communicator). */
int64_t hcl_xfer_quiet_ns(const struct hcl_xfer *x);

#endif
