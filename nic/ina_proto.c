/* SPDX-License-Identifier: BSD-3-Clause */
#include "ina_proto.h"

#include <string.h>

static const char *const reason_names[INA_R_MAX_] = {
	[INA_OK] = "ok",
	[INA_R_TRUNCATED] = "truncated",
	[INA_R_BAD_VERSION] = "bad_version",
	[INA_R_BAD_TYPE] = "bad_type",
	[INA_R_BAD_DTYPE] = "bad_dtype",
	[INA_R_BAD_FLAGS] = "bad_flags",
	[INA_R_RESERVED_NONZERO] = "reserved_nonzero",
	[INA_R_BAD_EXPONENT] = "bad_exponent",
	[INA_R_COUNT_ZERO] = "count_zero",
	[INA_R_COUNT_TOO_LARGE] = "count_too_large",
	[INA_R_COUNT_EXCEEDS_PAYLOAD] = "count_exceeds_payload",
	[INA_R_PAYLOAD_TRAILING] = "payload_trailing",
	[INA_R_UNKNOWN_JOB] = "unknown_job",
	[INA_R_DTYPE_MISMATCH] = "dtype_mismatch",
	[INA_R_COUNT_EXCEEDS_SLOT] = "count_exceeds_slot",
	[INA_R_SLOT_OUT_OF_RANGE] = "slot_out_of_range",
	[INA_R_BAD_CONTRIBUTOR] = "bad_contributor",
	[INA_R_NOT_MEMBER] = "not_member",
	[INA_R_UNEXPECTED_TYPE] = "unexpected_type",
	[INA_R_DUPLICATE] = "duplicate",
	[INA_R_STALE] = "stale",
	[INA_R_SLOT_BUSY] = "slot_busy",
	[INA_R_COUNT_MISMATCH] = "count_mismatch",
	[INA_R_NOT_READY] = "not_ready",
	[INA_R_EPOCH_AHEAD] = "epoch_ahead",
};

static const char *const type_names[INA_T_MAX_] = {
	[INA_T_DATA] = "data", [INA_T_RESULT] = "result",   [INA_T_ACK] = "ack",   [INA_T_PULL] = "pull",
	[INA_T_NACK] = "nack", [INA_T_CONTROL] = "control", [INA_T_HAVE] = "have", [INA_T_MISS] = "miss",
};

static const char *const dtype_names[INA_D_MAX_] = {
	[INA_D_NONE] = "none",	 [INA_D_INT32] = "int32", [INA_D_FP32] = "fp32",
	[INA_D_BFP32] = "bfp32", [INA_D_BF16] = "bf16",
};

const char *ina_reason_name(enum ina_reason r) { return (unsigned)r < INA_R_MAX_ ? reason_names[r] : "invalid"; }

const char *ina_type_name(enum ina_type t)
{
	return (unsigned)t < INA_T_MAX_ && type_names[t] ? type_names[t] : "invalid";
}

const char *ina_dtype_name(enum ina_dtype d) { return (unsigned)d < INA_D_MAX_ ? dtype_names[d] : "invalid"; }

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int is_element_dtype(uint8_t d)
{
	return d == INA_D_INT32 || d == INA_D_FP32 || d == INA_D_BFP32 || d == INA_D_BF16;
}

/* The payload length each type requires, given a valid count. */
static size_t expected_payload(uint8_t type, uint8_t flags, uint8_t dtype, uint16_t count)
{
	switch (type) {
	case INA_T_DATA: return flags & INA_F_JOIN ? 0 : (size_t)count * ina_wire_elem_size(dtype);
	case INA_T_RESULT: return (size_t)count * ina_wire_elem_size(dtype);
	case INA_T_CONTROL: return count; /* count is the byte length of the message */
	default: return 0;		  /* ACK, PULL, NACK, HAVE, MISS name a slice but carry no data */
	}
}

enum ina_reason ina_parse(const void *buf, size_t len, struct ina_pkt *pkt)
{
	const uint8_t *p = buf;
	struct ina_hdr h; /* pkt is written only when valid */

	if (len < INA_HDR_LEN)
		return INA_R_TRUNCATED;
	h.version = p[0];
	h.type = p[1];
	h.dtype = p[2];
	h.flags = p[3];
	h.job = get16(p + 4);
	h.contributor = get16(p + 6);
	h.slot = get32(p + 8);
	h.epoch = get32(p + 12);
	h.seq = get32(p + 16);
	h.count = get16(p + 20);
	h.exponent = (int8_t)p[22];

	if (h.version != INA_VERSION)
		return INA_R_BAD_VERSION;
	if (h.type == 0 || h.type >= INA_T_MAX_)
		return INA_R_BAD_TYPE;
	if (h.type == INA_T_CONTROL ? h.dtype != INA_D_NONE : !is_element_dtype(h.dtype))
		return INA_R_BAD_DTYPE;
	if ((h.flags & ~INA_F_ALL_) || ((h.flags & INA_F_JOIN) && h.type != INA_T_DATA) ||
	    ((h.flags & INA_F_IDLE) && h.type != INA_T_MISS))
		return INA_R_BAD_FLAGS;
	if (p[23] != 0)
		return INA_R_RESERVED_NONZERO;
	if (h.exponent != 0 && h.dtype != INA_D_BFP32)
		return INA_R_BAD_EXPONENT;
	if (h.count == 0 && (h.type == INA_T_DATA || h.type == INA_T_RESULT))
		return INA_R_COUNT_ZERO;
	if (h.count > (h.type == INA_T_CONTROL ? INA_MAX_PAYLOAD : INA_MAX_ELEMS))
		return INA_R_COUNT_TOO_LARGE;

	size_t want = expected_payload(h.type, h.flags, h.dtype, h.count);
	size_t have = len - INA_HDR_LEN;
	if (have < want)
		return INA_R_COUNT_EXCEEDS_PAYLOAD;
	if (have > want)
		return INA_R_PAYLOAD_TRAILING;

	pkt->hdr = h;
	pkt->payload = p + INA_HDR_LEN;
	pkt->payload_len = want;
	return INA_OK;
}
