/* SPDX-License-Identifier: BSD-3-Clause */
/* INA wire protocol v1: the header every aggregation packet carries after
 * Ethernet/IPv4/UDP, its encoding and its validation.  docs/PROTOCOL.md is
 * the normative description; this file must match it field for field. */
#ifndef INA_PROTO_H
#define INA_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define INA_VERSION 1
#define INA_HDR_LEN 24

/* UDP destination ports that mark INA traffic (SwitchML's range). */
#define INA_UDP_PORT_MIN 0xBEE0
#define INA_UDP_PORT_MAX 0xBEEF
#define INA_UDP_PORTS	 (INA_UDP_PORT_MAX - INA_UDP_PORT_MIN + 1)
/* Ports with a fixed role, the defaults of every part (docs/PROTOCOL.md). */
#define INA_CTRL_PORT	 (INA_UDP_PORT_MIN - 1) /* 48863: a switch's control channel */
#define INA_HOST_PORT	 INA_UDP_PORT_MIN	/* 48864: a host's INA socket */
#define INA_PS_PORT	 (INA_UDP_PORT_MIN + 6) /* 48870: a host's software PS (shard h: + h) or ring member */

/* Largest payload that fits a 9000-byte MTU: 9000 - IPv4(20) - UDP(8) - 24. */
#define INA_MAX_PAYLOAD (9000 - 20 - 8 - INA_HDR_LEN)
/* Bytes of a slot element (every dtype accumulates in 32 bits) and of the
 * widest wire element; bf16 travels in 2 (ina_wire_elem_size).  The element
 * count limit is the same for every dtype. */
#define INA_ELEM_SIZE	4
#define INA_MAX_ELEMS	(INA_MAX_PAYLOAD / INA_ELEM_SIZE) /* 2237 */

/* Contributor id meaning "the ring upstream member" rather than an index. */
#define INA_CONTRIB_UPSTREAM 0xFFFF

/* Bit 31 of the slot field selects the shadow set. */
#define INA_SLOT_SET_BIT    0x80000000u
#define INA_SLOT_INDEX_MASK 0x7FFFFFFFu

enum ina_type {
	INA_T_DATA = 1,	   /* a contribution to a slot */
	INA_T_RESULT = 2,  /* the aggregate of a slot */
	INA_T_ACK = 3,	   /* slot completion seen downstream */
	INA_T_PULL = 4,	   /* ask for a slot's result without contributing */
	INA_T_NACK = 5,	   /* refusal that asks the sender to retry later */
	INA_T_CONTROL = 6, /* control channel message, opaque payload */
	INA_T_HAVE = 7,	   /* a re-sent contribution is held: its slot waits for others */
	INA_T_MISS = 8,	   /* the sender's next slice is here and this one is not: it was lost */
	INA_T_MAX_
};

enum ina_dtype {
	INA_D_NONE = 0,	 /* only for CONTROL */
	INA_D_INT32 = 1, /* exact two's-complement int32 */
	INA_D_FP32 = 2,	 /* IEEE 754 binary32, added natively */
	INA_D_BFP32 = 3, /* int32 mantissas sharing a block exponent */
	INA_D_BF16 = 4,	 /* bfloat16 on the wire, added in binary32, rounded once */
	INA_D_MAX_
};

/* Bytes one element of dtype d takes in a payload. */
static inline size_t ina_wire_elem_size(uint8_t d) { return d == INA_D_BF16 ? 2 : 4; }

enum ina_flag {
	INA_F_RETX = 0x01,     /* sender's retransmission */
	INA_F_OVERFLOW = 0x02, /* int32 sum wrapped (results only) */
	INA_F_JOIN = 0x04,     /* DATA without elements: counts toward fan-in, adds nothing */
	/* MISS only: sent because the job heard nothing for a while with the
	 * slice collecting, not because the sender's next slice came (a gap) */
	INA_F_IDLE = 0x08,
	/* congestion experienced: a queue on the way marked this packet (the
	 * IP header's ECN CE, which the receiving endpoint copies here), or,
	 * on a RESULT or forwarded DATA, one of the slot's contributions (as
	 * ATP does): the senders' windows shrink (ring/hcl_ina_win.h) */
	INA_F_CE = 0x10,
	INA_F_ALL_ = 0x1f,
};

/* Every reason a packet is refused: first the wire validation failures,
 * then the engine's.  The names (ina_reason_name) are stable: they are the
 * counter names of swemu's stats. */
enum ina_reason {
	INA_OK = 0,
	/* validation (ina_parse) */
	INA_R_TRUNCATED,	     /* shorter than the header */
	INA_R_BAD_VERSION,	     /* version != 1 */
	INA_R_BAD_TYPE,		     /* unknown message type */
	INA_R_BAD_DTYPE,	     /* unknown data type, or wrong for the type */
	INA_R_BAD_FLAGS,	     /* undefined flag bit set */
	INA_R_RESERVED_NONZERO,	     /* reserved byte not zero */
	INA_R_BAD_EXPONENT,	     /* exponent set outside BFP32 */
	INA_R_COUNT_ZERO,	     /* DATA/RESULT without elements */
	INA_R_COUNT_TOO_LARGE,	     /* count > INA_MAX_ELEMS */
	INA_R_COUNT_EXCEEDS_PAYLOAD, /* count needs more bytes than follow */
	INA_R_PAYLOAD_TRAILING,	     /* bytes after the elements */
	/* engine (ina_engine_process) */
	INA_R_UNKNOWN_JOB,	  /* no job with this id */
	INA_R_DTYPE_MISMATCH,	  /* packet dtype != job dtype */
	INA_R_COUNT_EXCEEDS_SLOT, /* count > the job's elements per slot */
	INA_R_SLOT_OUT_OF_RANGE,  /* slot index >= the job's slot count */
	INA_R_BAD_CONTRIBUTOR,	  /* contributor id not in the job */
	INA_R_NOT_MEMBER,	  /* source address is not that contributor */
	INA_R_UNEXPECTED_TYPE,	  /* type the receiver does not take */
	INA_R_DUPLICATE,	  /* contribution already counted */
	INA_R_STALE,		  /* older slice than the slot holds */
	INA_R_SLOT_BUSY,	  /* newer slice while the slot is in use */
	INA_R_COUNT_MISMATCH,	  /* same slice, different element count */
	INA_R_NOT_READY,	  /* PULL of a slot that is not complete */
	INA_R_EPOCH_AHEAD,	  /* epoch beyond the job's window (INA_EPOCH_WINDOW) */
	INA_R_MAX_
};

const char *ina_reason_name(enum ina_reason r);
const char *ina_type_name(enum ina_type t);
const char *ina_dtype_name(enum ina_dtype d);

/* Header fields in host byte order. */
struct ina_hdr {
	uint8_t version;
	uint8_t type;
	uint8_t dtype;
	uint8_t flags;
	uint16_t job;
	uint16_t contributor;
	uint32_t slot; /* index | INA_SLOT_SET_BIT for the second set */
	uint32_t epoch;
	uint32_t seq;
	uint16_t count;
	int8_t exponent;
};

/* A validated packet: header plus a view of its payload (wire order). */
struct ina_pkt {
	struct ina_hdr hdr;
	const uint8_t *payload;
	size_t payload_len;
};

static inline uint32_t ina_slot_index(uint32_t slot) { return slot & INA_SLOT_INDEX_MASK; }
static inline unsigned ina_slot_set(uint32_t slot) { return slot >> 31; }

/* A datagram that arrived marked congestion-experienced (its IP header's
 * ECN field): the mark into its INA header's flags (INA_F_CE), where the
 * engine and the senders' windows read it, as a switch carries it. */
static inline void ina_take_ce(void *buf, size_t len, bool ce)
{
	if (ce && len >= INA_HDR_LEN)
		((uint8_t *)buf)[3] |= INA_F_CE;
}

/* Writes INA_HDR_LEN bytes.  Inline: a result's header is encoded once
 * per completion, and the call cost more than the stores. */
static inline void ina_hdr_encode(const struct ina_hdr *h, void *buf)
{
	uint8_t *p = (uint8_t *)buf; /* C++ includes this too */
	const uint16_t job = __builtin_bswap16(h->job), contributor = __builtin_bswap16(h->contributor),
		       count = __builtin_bswap16(h->count);
	const uint32_t slot = __builtin_bswap32(h->slot), epoch = __builtin_bswap32(h->epoch),
		       seq = __builtin_bswap32(h->seq);
	p[0] = h->version;
	p[1] = h->type;
	p[2] = h->dtype;
	p[3] = h->flags;
	memcpy(p + 4, &job, 2);
	memcpy(p + 6, &contributor, 2);
	memcpy(p + 8, &slot, 4);
	memcpy(p + 12, &epoch, 4);
	memcpy(p + 16, &seq, 4);
	memcpy(p + 20, &count, 2);
	p[22] = (uint8_t)h->exponent;
	p[23] = 0;
}

/* Decodes and validates a UDP payload; on INA_OK fills *pkt (payload points
 * into buf).  Nothing is written to *pkt on failure. */
enum ina_reason ina_parse(const void *buf, size_t len, struct ina_pkt *pkt);

#endif
