/* SPDX-License-Identifier: BSD-3-Clause */
/* Wire protocol v1: encode/decode round trip and one packet for every
 * validation reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "testlib.h"

/* Field by field: the struct's padding byte holds whatever the stack had. */
static void assert_hdr_equal(const struct ina_hdr *a, const struct ina_hdr *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->dtype, b->dtype);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->job, b->job);
	assert_int_equal(a->contributor, b->contributor);
	assert_int_equal(a->slot, b->slot);
	assert_int_equal(a->epoch, b->epoch);
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->count, b->count);
	assert_int_equal(a->exponent, b->exponent);
}

static void test_roundtrip(void **state)
{
	(void)state;
	struct tl_rng rng = { 0x1234 };
	uint8_t buf[INA_HDR_LEN + 4 * 16];

	for (int it = 0; it < 10000; it++) {
		struct ina_hdr h = {
			.version = INA_VERSION,
			.type = (uint8_t)(1 + tl_below(&rng, INA_T_CONTROL - 1)), /* DATA..NACK */
			.dtype = (uint8_t)(1 + tl_below(&rng, 3)),
			.flags = (uint8_t)tl_below(&rng, INA_F_ALL_ + 1),
			.job = (uint16_t)tl_next(&rng),
			.contributor = (uint16_t)tl_next(&rng),
			.slot = (uint32_t)tl_next(&rng),
			.epoch = (uint32_t)tl_next(&rng),
			.seq = (uint32_t)tl_next(&rng),
			.count = (uint16_t)(1 + tl_below(&rng, 16)),
		};
		if (h.dtype == INA_D_BFP32)
			h.exponent = (int8_t)tl_next(&rng);
		if (h.type != INA_T_DATA)
			h.flags &= (uint8_t)~INA_F_JOIN; /* a join is a DATA without elements */
		h.flags &= (uint8_t)~INA_F_IDLE;	 /* a MISS's only */
		bool data = (h.type == INA_T_DATA && !(h.flags & INA_F_JOIN)) || h.type == INA_T_RESULT;
		uint32_t vals[16];
		for (int i = 0; i < 16; i++)
			vals[i] = (uint32_t)tl_next(&rng);
		size_t len = tl_encode(buf, &h, data ? vals : NULL, h.count);

		struct ina_pkt p;
		assert_int_equal(ina_parse(buf, len, &p), INA_OK);
		assert_hdr_equal(&p.hdr, &h);
		assert_ptr_equal(p.payload, buf + INA_HDR_LEN);
		assert_int_equal(p.payload_len, data ? 4u * h.count : 0u);
		for (unsigned i = 0; data && i < h.count; i++)
			assert_int_equal(tl_elem(p.payload, i), vals[i]);
	}
}

/* Big-endian layout at fixed offsets, as docs/PROTOCOL.md draws it. */
static void test_layout(void **state)
{
	(void)state;
	struct ina_hdr h = { .version = 1,
			     .type = 2,
			     .dtype = 3,
			     .flags = 1,
			     .job = 0x0405,
			     .contributor = 0x0607,
			     .slot = 0x8009000a,
			     .epoch = 0x0b0c0d0e,
			     .seq = 0x0f101112,
			     .count = 0x1314,
			     .exponent = -3 };
	uint8_t want[INA_HDR_LEN] = { 1,    2,	  3,	1,    4,    5,	  6,	7,    0x80, 9,	  0,	0x0a,
				      0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0xfd, 0 };
	uint8_t got[INA_HDR_LEN];

	ina_hdr_encode(&h, got);
	assert_memory_equal(got, want, INA_HDR_LEN);
	assert_int_equal(ina_slot_set(h.slot), 1);
	assert_int_equal(ina_slot_index(h.slot), 0x9000a);
}

enum mut { M_NONE, M_LEN, M_BYTE, M_TYPE_COUNT };

struct bad_case {
	const char *what;
	enum ina_reason want;
	enum mut how;
	int off;      /* M_BYTE: header byte; M_LEN: new length */
	uint8_t val;  /* M_BYTE: value */
	uint8_t type; /* M_TYPE_COUNT: message type */
	uint16_t count;
	size_t payload; /* M_TYPE_COUNT: payload bytes */
	uint8_t dtype;
};

#define LEN(w, r, l)                                         \
	{                                                    \
		.what = w, .want = r, .how = M_LEN, .off = l \
	}
#define BYTE(w, r, o, v)                                                \
	{                                                               \
		.what = w, .want = r, .how = M_BYTE, .off = o, .val = v \
	}
#define TC(w, r, t, c, pl, d)                                                                               \
	{                                                                                                   \
		.what = w, .want = r, .how = M_TYPE_COUNT, .type = t, .count = c, .payload = pl, .dtype = d \
	}

static const struct bad_case bad_cases[] = {
	LEN("empty", INA_R_TRUNCATED, 0),
	LEN("23 bytes", INA_R_TRUNCATED, INA_HDR_LEN - 1),
	BYTE("version 0", INA_R_BAD_VERSION, 0, 0),
	BYTE("version 2", INA_R_BAD_VERSION, 0, 2),
	BYTE("type 0", INA_R_BAD_TYPE, 1, 0),
	BYTE("type 9", INA_R_BAD_TYPE, 1, 9),
	BYTE("type 255", INA_R_BAD_TYPE, 1, 255),
	BYTE("dtype 0 on data", INA_R_BAD_DTYPE, 2, 0),
	BYTE("dtype 5", INA_R_BAD_DTYPE, 2, 5),
	TC("control with int32", INA_R_BAD_DTYPE, INA_T_CONTROL, 0, 0, INA_D_INT32),
	BYTE("idle flag on data", INA_R_BAD_FLAGS, 3, INA_F_IDLE),
	BYTE("flag 0x20", INA_R_BAD_FLAGS, 3, 0x20),
	BYTE("flag 0x80", INA_R_BAD_FLAGS, 3, 0x80),
	BYTE("reserved byte", INA_R_RESERVED_NONZERO, 23, 1),
	BYTE("exponent on int32", INA_R_BAD_EXPONENT, 22, 5),
	TC("data count 0", INA_R_COUNT_ZERO, INA_T_DATA, 0, 0, INA_D_INT32),
	TC("result count 0", INA_R_COUNT_ZERO, INA_T_RESULT, 0, 0, INA_D_FP32),
	TC("count 2238", INA_R_COUNT_TOO_LARGE, INA_T_DATA, INA_MAX_ELEMS + 1, 4 * (INA_MAX_ELEMS + 1), INA_D_INT32),
	TC("pull count 65535", INA_R_COUNT_TOO_LARGE, INA_T_PULL, 65535, 0, INA_D_INT32),
	TC("control 8949 bytes", INA_R_COUNT_TOO_LARGE, INA_T_CONTROL, INA_MAX_PAYLOAD + 1, INA_MAX_PAYLOAD + 1,
	   INA_D_NONE),
	LEN("payload short by 1", INA_R_COUNT_EXCEEDS_PAYLOAD, INA_HDR_LEN + 15),
	LEN("no payload", INA_R_COUNT_EXCEEDS_PAYLOAD, INA_HDR_LEN),
	LEN("payload long by 1", INA_R_PAYLOAD_TRAILING, INA_HDR_LEN + 17),
	TC("pull with payload", INA_R_PAYLOAD_TRAILING, INA_T_PULL, 4, 16, INA_D_INT32),
	/* bf16 elements take 2 bytes: the 4-byte length of other dtypes is wrong */
	TC("bf16 data, 4 bytes per element", INA_R_PAYLOAD_TRAILING, INA_T_DATA, 4, 16, INA_D_BF16),
	TC("bf16 result short by 1", INA_R_COUNT_EXCEEDS_PAYLOAD, INA_T_RESULT, 4, 7, INA_D_BF16),
	TC("control short", INA_R_COUNT_EXCEEDS_PAYLOAD, INA_T_CONTROL, 10, 9, INA_D_NONE),
	/* valid ones, so the cases above are known to differ by one thing */
	{ .what = "valid data", .want = INA_OK, .how = M_NONE },
	TC("valid pull", INA_OK, INA_T_PULL, 4, 0, INA_D_INT32),
	TC("valid ack", INA_OK, INA_T_ACK, 0, 0, INA_D_BFP32),
	TC("valid control", INA_OK, INA_T_CONTROL, 10, 10, INA_D_NONE),
	TC("valid max data", INA_OK, INA_T_DATA, INA_MAX_ELEMS, 4 * INA_MAX_ELEMS, INA_D_FP32),
	TC("valid bf16 data", INA_OK, INA_T_DATA, 4, 8, INA_D_BF16),
	TC("valid max bf16 result", INA_OK, INA_T_RESULT, INA_MAX_ELEMS, 2 * INA_MAX_ELEMS, INA_D_BF16),
};

static void test_every_reason(void **state)
{
	(void)state;
	static uint8_t buf[INA_HDR_LEN + INA_MAX_PAYLOAD + 64];
	uint32_t vals[4] = { 1, 2, 3, 4 };
	bool seen[INA_R_MAX_] = { false };

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 1, 0, 0, 0, 0, 4);
		size_t len;

		memset(buf, 0, sizeof(buf));
		if (c->how == M_TYPE_COUNT) {
			h.type = c->type;
			h.dtype = c->dtype;
			h.count = c->count;
			ina_hdr_encode(&h, buf);
			len = INA_HDR_LEN + c->payload;
		} else {
			len = tl_encode(buf, &h, vals, 4);
		}
		if (c->how == M_BYTE)
			buf[c->off] = c->val;
		if (c->how == M_LEN)
			len = (size_t)c->off;

		struct ina_pkt p;
		memset(&p, 0xa5, sizeof(p));
		struct ina_pkt before = p;
		enum ina_reason r = ina_parse(buf, len, &p);
		if (r != c->want)
			fail_msg("%s: got %s, want %s", c->what, ina_reason_name(r), ina_reason_name(c->want));
		if (r != INA_OK)
			assert_memory_equal(&p, &before, sizeof(p)); /* nothing half-written */
		seen[r] = true;
	}
	for (int r = INA_R_TRUNCATED; r <= INA_R_PAYLOAD_TRAILING; r++)
		if (!seen[r])
			fail_msg("no test packet for validation reason %s", ina_reason_name(r));
}

static void test_names(void **state)
{
	(void)state;
	for (int a = 0; a < INA_R_MAX_; a++) {
		const char *n = ina_reason_name(a);
		assert_non_null(n);
		assert_string_not_equal(n, "invalid");
		for (const char *p = n; *p; p++) /* usable as a telemetry dict key */
			assert_true((*p >= 'a' && *p <= 'z') || *p == '_' || (*p >= '0' && *p <= '9'));
		for (int b = 0; b < a; b++)
			assert_string_not_equal(n, ina_reason_name(b));
	}
	assert_string_equal(ina_reason_name(INA_R_MAX_), "invalid");
	assert_string_equal(ina_type_name(INA_T_PULL), "pull");
	assert_string_equal(ina_type_name(INA_T_HAVE), "have");
	assert_string_equal(ina_type_name(0), "invalid");
	assert_string_equal(ina_dtype_name(INA_D_BFP32), "bfp32");
	assert_string_equal(ina_dtype_name(INA_D_BF16), "bf16");
	assert_string_equal(ina_dtype_name(INA_D_MAX_), "invalid");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_every_reason),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
