/* SPDX-License-Identifier: BSD-3-Clause */
/* What the two INA clients share (ps-ina's ring/hcl_ina.c and agent-ring's
 * ring/hcl_aring.c): a window of slots towards one switch job, each with
 * the slice it has in flight, the shadow set its next slice uses (kept for
 * the life of the window, as the engine requires: docs/ENGINE.md), and a
 * retransmission timer that follows the round trip (ring/hcl_rtt.h); the
 * receive buffers; the byte order of elements on the wire. */
#ifndef HCL_INA_WIN_H
#define HCL_INA_WIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dgram.h"
#include "hcl_ina_cc.h"
#include "hcl_rtt.h"
#include "ina_proto.h"

struct hcl_inaw_slot {
	bool busy;	  /* a slice is in flight */
	bool early;	  /* sent before the switch could answer it: no round-trip sample */
	uint8_t tries;	  /* re-sends of the slice */
	uint8_t expiries; /* of its timer: each doubles it (RACK's re-sends do not) */
	uint8_t set;	  /* the shadow set of the slice (flips when it is done) */
	uint8_t got;	  /* the caller's: what of the answer has come */
	bool held;	  /* the aggregator said it holds the re-sent contribution (HAVE) */
	/* a loss of it or of its slot was seen (RACK, a probe, a MISS, a
	 * re-send unanswered): it leaves the window to the next slices.  An
	 * expiry alone does not: on a clean network a PS shard's first slices
	 * time out waiting for the slowest worker's start */
	bool stalled;
	size_t slice;
	int64_t sent_at;  /* 0: not sent yet (the socket was full): due at once */
	int64_t first_at; /* the first send's sent_at */
	int64_t held_at;  /* when the HAVE came (held) */
};

struct hcl_inaw {
	uint32_t slots;
	uint32_t window;     /* slices in flight that are not stalled (re-sent): hcl_inaw_next_slot */
	struct hcl_inacc cc; /* with cc.on, fewer while queues mark (hcl_inaw_answer) */
	struct hcl_inaw_slot *s;
	struct hcl_rtt rtt;
	int64_t done_sent_at; /* the latest send among slices done (RACK) */
	int64_t min_rtt;      /* the least round-trip sample; 0: none yet */
	int64_t done_at;      /* when the latest slice was done */
	bool rack;	      /* slices finish in the order they went: RACK may judge */
	/* the aggregators answer every re-send at once, by the result or by
	 * HAVE (nic/ina_engine.c): a re-send unanswered for two least round
	 * trips was lost */
	bool answers;
	/* the pass's slices of this window end before this one (SIZE_MAX:
	 * unknown); its last `window` slices are tails */
	size_t end;
	/* Agent-ring's: a slice waits for the chain to reach its step, and
	 * the slices whose round trip is sampled (those sent after the call's
	 * first was done) are the quick ones, so its timer is at least three
	 * smoothed round trips.  At srtt + 4 rttvar alone its windows re-sent
	 * 785 slices loss-free in six 1 MiB calls of 8 ranks in the simulator
	 * (12-39 with the rule; 52 -> 46 ms per call), and at 1% loss those
	 * re-sends crowded the links the chain needs. */
	bool chain;
};

/* 0, or -ENOMEM.  The window is every slot until the caller sets it. */
int hcl_inaw_init(struct hcl_inaw *w, uint32_t slots, int64_t rto_floor_ns, int64_t rto_cap_ns);
/* A new floor and cap for the timer, before any slice is sent. */
void hcl_inaw_init_timer(struct hcl_inaw *w, int64_t rto_floor_ns, int64_t rto_cap_ns);
void hcl_inaw_free(struct hcl_inaw *w);
/* A new pass: nothing in flight (the sets and the timer are kept). */
void hcl_inaw_reset(struct hcl_inaw *w);

/* The slot that slice `next` takes now, slices going out in order from
 * `first`, slice k into slot (k - first) % slots: -1 when that slot is
 * still busy, when `window` slices (fewer while congestion control holds
 * it lower) are in flight that are not stalled,
 * or when next is past the pass's slices (end).  A slice whose loss was
 * seen is stalled: those after it go on into the other slots. */
int hcl_inaw_next_slot(const struct hcl_inaw *w, size_t next, size_t first);

/* Slot `slot` takes slice `slice`, sent at now (0 if the socket was full). */
struct hcl_inaw_slot *hcl_inaw_start(struct hcl_inaw *w, uint32_t slot, size_t slice, int64_t sent_at, bool early);

/* Re-sends every busy slot whose timer (at least floor_ns, doubled per
 * expiry; floor_ns 0: the round trip's alone) has run out, by send(ctx, slot
 * index) — false when the socket is full, which ends the round.  Lowers
 * *wake to the next expiry; counts the re-sends in *resent.  With w->rack
 * and no floor, a slice is also re-sent (RACK, as the host transfer does)
 * once a slice sent after it is done and a round trip and a reordering
 * window have passed since it went: a loss costs about a round trip, not
 * a timer.  Only where slices finish in the order they went (ps-ina: one
 * aggregation per slice); agent-ring's wait for members up and down the
 * chain, and RACK there sent ten times as much again on a clean network.
 * With or without w->rack, a tail (one of the pass's last w->window) is
 * re-sent once at RACK's time as if a successor were done, a tail loss
 * probe: nothing else finds its loss before the timer.  Agent-ring has it
 * too: one probe per tail costs a clean network little, where a successor
 * done says nothing there.  A re-send by RACK or a probe leaves the
 * slice's timer as it was: the loss was seen, not guessed from silence, and
 * doubling made a contribution lost twice wait 4-16 timers while every
 * other worker's slice of the slot waited with it.  With w->answers, a
 * re-sent slice that got neither its result nor HAVE within two least
 * round trips (at least 0.5 ms; doubled for each re-send of it in a row,
 * up to 64 times) goes again at once, without an expiry;
 * one that got HAVE (held) waits for its result on the timer, or goes
 * again after a result that came after its HAVE (hcl_inaw_held). */
void hcl_inaw_resend(struct hcl_inaw *w, int64_t now, int64_t floor_ns, bool (*send)(void *ctx, uint32_t slot),
		     void *ctx, int64_t *wake, uint64_t *resent);

/* The busy slot that h (a RESULT or ACK of this window's job) answers:
 * its slot index, shadow set, epoch and slice must all match; else NULL
 * (a duplicate, or an answer to a slice already done). */
struct hcl_inaw_slot *hcl_inaw_match(struct hcl_inaw *w, const struct ina_hdr *h, uint32_t epoch);

/* The aggregator reports (MISS, nic/ina_engine.c) that it has this
 * sender's slice h->seq + 1 but not h->seq: the slot of h->seq, to re-send
 * now, or -1 when the report does not hold here: the slice is done, or
 * went again after its successor's first send (the report crossed it).
 * Slices must go in order, one slot after the other (hcl_inaw_next_slot).
 * The caller sends, then calls hcl_inaw_resent. */
int hcl_inaw_missed(const struct hcl_inaw *w, const struct ina_hdr *h, uint32_t epoch);
/* Slot `slot` went again now because its loss was seen: its timer is not
 * doubled. */
void hcl_inaw_resent(struct hcl_inaw *w, uint32_t slot, int64_t now);
/* The aggregator holds slot's re-sent contribution (HAVE): its result
 * comes when the round completes.  If a result of the window comes after
 * this, the held slice's may have been lost on its way (a round completes
 * as the aggregator hears it, not in a client's order, so this is a
 * guess): RACK re-sends it a reorder window later, and the aggregator
 * answers it from the stored result or with another HAVE.  Waiting for
 * the timer instead cost 200 ms and more at 64 hosts and 1% loss, a
 * slice's smoothed round trip there being tens of ms (docs/SCALE.md). */
void hcl_inaw_held(struct hcl_inaw_slot *s, int64_t now);

/* The slot's slice is done: a round-trip sample if it went once and not
 * early; its next slice uses the other set.  RACK dates it by its latest
 * send, or by its first when the answer came sooner after a re-send than
 * the least round trip (so it answers the first send, and the slices sent
 * in between are not lost but waiting, as the slowest worker makes them). */
void hcl_inaw_done(struct hcl_inaw *w, struct hcl_inaw_slot *s, int64_t now);

/* An answer to one of the window's slices came (before hcl_inaw_done),
 * marked INA_F_CE or not: with w->cc.on the window shrinks or grows
 * (ring/hcl_ina_cc.h). */
void hcl_inaw_answer(struct hcl_inaw *w, bool marked, int64_t now);

/* The clients' receive buffers. */
#define HCL_INA_BATCH 64
struct hcl_ina_rx {
	uint8_t *buf[HCL_INA_BATCH];
};
int hcl_ina_rx_init(struct hcl_ina_rx *r); /* 0 or -ENOMEM (then free it) */
void hcl_ina_rx_free(struct hcl_ina_rx *r);
/* One batch of datagrams into in[], waiting until `wake` at the latest (never
 * past deadline_ns): how many arrived, or -errno from the transport. */
int hcl_ina_rx_batch(struct hcl_ina_rx *r, struct dgram_transport *t, struct dgram_pkt in[HCL_INA_BATCH], int64_t now,
		     int64_t wake, int64_t deadline_ns);

/* First sends queued while a window opens (a pass's start, a batch of
 * results, a round of re-sends) and given to the transport in one call
 * (sendmmsg), as the reliable transfer does: each has its own buffer.
 * A datagram the socket did not take is left to the timer path: its
 * slot's sent_at becomes 0. */
#define HCL_INA_TX_BATCH 16
struct hcl_ina_tx {
	uint8_t *buf[HCL_INA_TX_BATCH];
	struct dgram_pkt pkt[HCL_INA_TX_BATCH];
	struct hcl_inaw_slot *slot[HCL_INA_TX_BATCH];
	unsigned n;
};
int hcl_ina_tx_init(struct hcl_ina_tx *q); /* 0 or -ENOMEM (then free it) */
void hcl_ina_tx_free(struct hcl_ina_tx *q);
/* The buffer the next datagram is written into (flushing first if the
 * queue is full); queue it with hcl_ina_tx_push. */
uint8_t *hcl_ina_tx_buf(struct hcl_ina_tx *q, struct dgram_transport *t);
/* Queues the datagram written into hcl_ina_tx_buf: len bytes to peer, the
 * first send of slot s. */
void hcl_ina_tx_push(struct hcl_ina_tx *q, size_t len, const struct sockaddr_in *peer, struct hcl_inaw_slot *s);
void hcl_ina_tx_flush(struct hcl_ina_tx *q, struct dgram_transport *t);

/* n elements of esz bytes (4, or 2 for bf16) between host order and the
 * wire's big-endian; its own inverse, so one function serves both ways. */
void hcl_ina_swap_elems(void *dst, const void *src, size_t n, size_t esz);

#endif
