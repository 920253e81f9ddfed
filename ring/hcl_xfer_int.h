/* SPDX-License-Identifier: BSD-3-Clause */
/* The reliable transfer's insides, shared by its three files: the API
 * and the exchange loop (hcl_xfer.c), the sending side with congestion
 * control and timers (hcl_xfer_tx.c), the receiving side with staging and
 * acknowledgements (hcl_xfer_rx.c).  Not installed. */
#ifndef HCL_XFER_INT_H
#define HCL_XFER_INT_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hcl_reduce.h"
#include "hcl_xfer.h"

#define MAGIC	    0x48
#define T_DATA	    1
#define T_ACK	    2
#define T_FIN	    3 /* "all of tag acknowledged": the receiver may stop lingering */
#define T_NOTE	    4 /* unreliable side datagram for the note handler (payload after the header) */
/* Receiver-driven flow control.  A rank that is not yet at the exchange a
 * neighbour sends for, and holds another early message already, drops the
 * data and says WAIT; when it reaches that exchange it says READY.  The
 * sender meanwhile only probes.  Without them, a rank two steps ahead of
 * its slow neighbour (a scheduling hiccup on a busy host) saw only time-outs:
 * its window collapsed to one packet and it waited a timer per step. */
#define T_WAIT	    5
#define T_READY	    6
/* A header-only datagram to the rank a receive waits on, ignored there:
 * if its process is gone, the host answers "port unreachable", and the
 * receive fails in a fraction of a second instead of at its deadline. */
#define T_PING	    7
/* "My INA aggregator is lost in call N" (N in the tag field): a rank that
 * falls back to the software ring tells the others, whose INA calls stall
 * too but whose own switch may still answer (ring/hcl_fallback.c). */
#define T_LOST	    8
#define PING_NS	    250000000
#define BATCH	    64
#define PKT_MAX	    9000
/* Receive buffers of coalesced runs: 16 of them hold up to 112 jumbo
 * datagrams, more than the window; 64 would be 4 MiB per transfer. */
#define RX_RUN_BUFS 16

/* Wire header, all fields big-endian:
 *   0 magic  1 type  2 src rank(16)  4 tag  8 seq|cum  12 total
 *  16 msg_len | sack low   20 ack hint | sack high
 * The ack hint of a data packet: how many packets its receiver may take
 * before it acknowledges (a quarter of the sender's window; 0: at once). */

struct txs {
	bool active;
	int to;
	uint32_t tag, total;
	const uint8_t *buf;
	size_t len;
	size_t cap;	  /* the per-packet arrays hold this many */
	uint8_t *acked;	  /* per packet */
	int64_t *sent_at; /* 0 = not sent */
	uint8_t *tries;
	uint8_t *lost;			     /* declared lost, waiting to be sent again */
	uint32_t next_new, nacked, inflight; /* inflight: sent, neither acknowledged nor lost */
	uint32_t snd_una;		     /* every packet before it is acknowledged */
	uint32_t nlost;			     /* packets whose lost flag is set */
	int64_t delivered_sent_at;	     /* latest send time among packets acknowledged */
	uint32_t delivered_seq;		     /* the highest packet acknowledged that was sent then */
	int64_t progress_at;		     /* last time an ACK acknowledged something new */
	int64_t last_sent_at;		     /* of any data packet */
	bool tlp_done;			     /* this tail's loss probe went (one per tail) */
	bool peer_waits;		     /* the receiver said WAIT: probe only */
	int64_t probe_at;
	uint8_t probes;
};

struct rxs {
	bool active;
	int from;
	enum hcl_xfer_op op;
	uint32_t tag, total;
	uint8_t *buf;
	const uint8_t *base; /* a sum's other operand, or NULL: buf's own (hcl_xfer_exchange_from) */
	size_t len;
	uint8_t *got;
	uint32_t ngot, cum;
	/* delayed ACKs (as TCP's): datagrams since the last ACK, the sender's
	 * wish for how many may go unacknowledged, and whether one is owed
	 * now (a gap, a repeat, the end) */
	uint32_t unacked, ack_hint, hi; /* hi: one past the highest seq seen */
	bool ack_now;
	int64_t unacked_since;
};

/* Early data of an exchange to come.  Several: in a ring, a stall at one
 * rank (a lost packet waiting for its timer) holds up the ranks before it
 * step by step; with one, each of them refused its neighbour's next step
 * (WAIT), and the window's worth it had sent went again after READY. */
#define STAGE_DEPTH	4
/* A stage holds at most the largest message this rank has been asked to
 * receive, and at least this: a wire length (up to 4 GiB) must not size a
 * buffer.  Larger early data is refused (WAIT), and comes after READY. */
#define STAGE_MIN_BYTES (1u << 20)
struct stage {
	bool used;
	int from;
	uint32_t tag, total;
	size_t len;
	uint8_t *buf, *got;
	size_t cap, gcap;
	uint32_t ngot;
	bool fin; /* its sender's FIN came already */
};

/* Congestion window towards one peer (RFC 5681 in packets): slow start
 * to ssthresh, then one packet per window acknowledged; halved once per
 * round trip when a loss is detected, back to one packet on a timeout.
 * Without it the fixed window of 64 jumbo packets overran the switch
 * queues of the testbed (256 KiB uplinks), and every timeout resent the
 * whole window into the same full queue. */
struct hcl_xfer_cc {
	double cwnd, ssthresh;
	int64_t recover_at; /* losses of packets sent before this do not halve again */
	/* F-RTO (RFC 5682): the window before a time-out, restored when the
	 * ACKs show that everything it declared lost arrived without being
	 * resent — the receiver was only busy (computing between calls: no one
	 * reads its socket), the network lost nothing. */
	double undo_cwnd, undo_ssthresh;
	int64_t rto_at; /* of the time-out that may be undone; 0: none */
};

/* One batch of data on its way to the transport: the packets picked, their
 * headers, and the runs (iovecs of header and data pieces) that carry them. */
struct xfer_tx_batch {
	uint32_t idx[BATCH];
	uint8_t hdr[BATCH][HCL_XFER_HDR];
	struct iovec iov[2 * BATCH];
	struct dgram_pkt run[BATCH];
	unsigned first[BATCH + 1]; /* run r carries idx[first[r] .. first[r + 1]) */
};

struct hcl_xfer {
	struct hcl_xfer_cfg cfg;
	struct sockaddr_in *peers;
	struct dgram_transport *t;
	/* The message being sent, and the one before it while its ACKs are
	 * still due (a trailing send, hcl_xfer_exchange_trailing): a ring's
	 * step waited a round trip for its last ACK before the next step's
	 * data could go, and with a queue ahead of that ACK (the switch port
	 * towards us holds the previous rank's data) 0.5-1 ms a step, 14 steps
	 * a call.  Pointers into txm, swapped when a send starts trailing. */
	struct txs txm[2];
	struct txs *tx, *trail;
	struct xfer_tx_batch txb;
	struct rxs rx;
	struct stage st[STAGE_DEPTH];
	/* completed receives, to acknowledge again in full when their sender
	 * repeats itself (its last ACK was lost); several, because a rank's
	 * exchanges alternate between peers (hier: gather, then ring) */
	struct {
		bool valid;
		bool fin;      /* its sender confirmed our last ACK arrived */
		bool unlinger; /* completed since the last linger: linger waits for its FIN */
		int from;
		uint32_t tag, total;
	} done[8];
	unsigned done_next;
	bool rx_fin; /* the current receive's FIN came before it completed */
	uint8_t *rxbuf[BATCH];
	unsigned rx_bufs; /* how many, of rx_buf_len bytes: few large ones for coalesced runs */
	uint32_t rx_buf_len;
	struct hcl_xfer_stats stats;
	size_t cap_pk; /* rx.got sized for this many packets */
	void (*note_cb)(void *ctx, int src, const void *p, size_t len);
	void *note_ctx;
	uint32_t lost_call; /* the latest call a peer said it lost INA in (T_LOST), 0: none */
	int lost_from;
	/* round-trip estimate (RFC 6298), kept across exchanges */
	int64_t srtt_ns, rttvar_ns, rto_base_ns, rto_initial_ns;
	struct hcl_xfer_cc *cc; /* per peer, kept across exchanges */
	struct {
		bool valid;
		uint32_t tag;
	} * refused;	   /* per peer: the tag we told to WAIT */
	size_t rx_len_max; /* the largest receive asked for so far: bounds a stage */
	bool *heard;	   /* per peer: a datagram of ours came from it (peer_gone) */
	/* per peer: when a port-unreachable report about it made us PING it
	 * (0: no suspicion); only a report after that PING, with nothing
	 * heard from it since, means it is gone.  A report can be stale: a
	 * datagram of a closed socket that had this socket's address (the
	 * port reused by the next run) refused by the peer's host */
	int64_t *suspect_at;
	struct {
		bool valid;
		int from;
		uint32_t tag;
		size_t len;
	} mismatch;	 /* the last message whose length was not the one expected, for the error */
	int64_t now;	 /* when the batch being handled was received */
	int64_t ping_at; /* the next T_PING to the rank the receive waits on */
	/* the host's queue as last seen full (local_queue_room) */
	int64_t lq_at;
	long lq_bytes;
	double lq_rate; /* its drain rate, bytes per ns (0: not measured yet) */
	/* delivery rate: bytes acknowledged per ns while sending, which sets
	 * how much of the host's queue is ours to fill (local_queue_room) */
	int64_t dr_at;
	uint64_t dr_bytes;
	double dr_rate;
};

static inline void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static inline uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return ntohl(v);
}

static inline uint32_t npackets(const struct hcl_xfer *x, size_t len)
{
	return len ? (uint32_t)((len + x->cfg.payload - 1) / x->cfg.payload) : 1; /* an empty message is one packet */
}

/* Bytes packet seq of a len-byte message carries. */
static inline size_t seg_len(const struct hcl_xfer *x, size_t len, uint32_t seq)
{
	size_t off = (size_t)seq * x->cfg.payload;
	return off >= len ? 0 : (len - off < x->cfg.payload ? len - off : x->cfg.payload);
}

static inline void set_lost(struct txs *t, uint32_t i)
{
	t->lost[i] = 1;
	t->nlost++;
}

static inline void clear_lost(struct txs *t, uint32_t i)
{
	if (t->lost[i]) {
		t->lost[i] = 0;
		t->nlost--;
	}
}

/* dst op= src, len bytes (a multiple of 4 for the sums); with a base, a
 * sum is dst = base + src instead. */
static inline void xfer_combine(enum hcl_xfer_op op, uint8_t *dst, const uint8_t *base, const uint8_t *src, size_t len)
{
	if (op == HCL_XFER_SUM_F32 && base)
		hcl_reduce3_f32((float *)(void *)dst, (const float *)(const void *)base,
				(const float *)(const void *)src, len / 4);
	else if (op == HCL_XFER_SUM_F32)
		hcl_reduce_f32((float *)(void *)dst, (const float *)(const void *)src, len / 4);
	else if (op == HCL_XFER_SUM_I32 && base)
		hcl_reduce3_i32((uint32_t *)(void *)dst, (const uint32_t *)(const void *)base,
				(const uint32_t *)(const void *)src, len / 4);
	else if (op == HCL_XFER_SUM_I32)
		hcl_reduce_i32((uint32_t *)(void *)dst, (const uint32_t *)(const void *)src, len / 4);
	else
		memcpy(dst, src, len);
}

/* A message of another length than expected: counted, and kept for the
 * error that names it if the exchange then times out. */
static inline void xfer_note_mismatch(struct hcl_xfer *x, int from, uint32_t tag, size_t len)
{
	x->stats.malformed++;
	x->mismatch.valid = true;
	x->mismatch.from = from;
	x->mismatch.tag = tag;
	x->mismatch.len = len;
}

/* The stage holding from's early message for tag, or NULL. */
static inline struct stage *xfer_stage_of(struct hcl_xfer *x, int from, uint32_t tag)
{
	for (unsigned i = 0; i < STAGE_DEPTH; i++)
		if (x->st[i].used && x->st[i].from == from && x->st[i].tag == tag)
			return &x->st[i];
	return NULL;
}

/* hcl_xfer_tx.c */
int64_t xfer_rto_ns(const struct hcl_xfer *x, uint8_t tries);
/* Sends what is due, the trailing send's resends first; returns when to
 * look again (the earliest expiry). */
int64_t xfer_pump_tx(struct hcl_xfer *x, int64_t now);
void xfer_on_ack(struct hcl_xfer *x, int src, const uint8_t *p);
/* A message starts going out. */
void xfer_tx_start(struct hcl_xfer *x, int64_t now);
void xfer_on_flow(struct hcl_xfer *x, int src, uint8_t type, uint32_t tag);

/* hcl_xfer_rx.c */
/* A delayed ACK is sent at the latest this long after the first packet it
 * covers: a sender limited by something else than its window (its own
 * queue, the end of its message) still hears within a fraction of any
 * timer. */
#define ACK_DELAY_NS 500000
/* Sends the current receive's delayed ACK if it is due; returns when it
 * will be (INT64_MAX: none owed). */
int64_t xfer_ack_delayed(struct hcl_xfer *x, int64_t now);
/* A header-only WAIT or READY for tag. */
void xfer_send_flow(struct hcl_xfer *x, int to, uint8_t type, uint32_t tag);
/* Receives one batch (waiting at most wait_ns), handles it, and sends one
 * ACK per (peer, tag) that sent data.  Returns the datagrams seen or -errno. */
int xfer_service(struct hcl_xfer *x, int64_t wait_ns);

#endif
