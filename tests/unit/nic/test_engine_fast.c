/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's fast path for common DATA against its general path, the
 * reference: two engines with the same jobs get the same packets, one
 * taking the fast path where it applies and one never taking it, and must
 * answer each with the same verdict and emits and end with the same
 * counters and slot contents.  The packets are a coherent stream (members
 * sending the slices of a few calls, re-sends, stale and early ones, joins)
 * mixed with damaged ones, and the clock jumps now and then so that idle
 * slots are reclaimed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "ina_engine_state.h"
#include "testlib.h"

#define NJOBS 4

static struct ina_job_cfg jobs[NJOBS];

static void make_jobs(void)
{
	jobs[0] = tl_job(1, 3, INA_D_INT32, 3, 8); /* multicast */
	jobs[1] = tl_job(2, 4, INA_D_FP32, 2, 4);  /* a ring agent: forward, ACKs, an upstream */
	jobs[1].outputs = INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_ACK;
	jobs[1].upstream_index = 3;
	jobs[1].upstream_job = 9;
	jobs[1].forward = (struct ina_peer){ .addr = tl_addr(900), .job = 7, .contributor = INA_CONTRIB_UPSTREAM };
	jobs[2] = tl_job(3, 2, INA_D_INT32, 2, 4); /* under a parent PS */
	jobs[2].outputs = INA_OUT_PS;
	jobs[2].parent = (struct ina_peer){ .addr = tl_addr(950), .job = 3, .contributor = 0 };
	jobs[3] = tl_job(4, 3, INA_D_INT32, 3, 8); /* an agent-ring member of 3: every step in one */
	jobs[3].outputs = INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_ACK;
	jobs[3].chain_steps = 5;
	jobs[3].upstream_index = 2;
	jobs[3].upstream_job = 4;
	jobs[3].forward = (struct ina_peer){ .addr = tl_addr(960), .job = 4, .contributor = INA_CONTRIB_UPSTREAM };
}

/* One packet of the stream: mostly the slices members of job j would send
 * around call `epoch`, some of them damaged. */
static size_t next_packet(struct tl_rng *r, const uint32_t *epoch, uint8_t *buf, struct ina_addr *src)
{
	const struct ina_job_cfg *c = &jobs[tl_below(r, NJOBS)];
	uint32_t e = epoch[c->id - 1] + (tl_below(r, 5) ? 0 : tl_below(r, 3) - 1) + (tl_below(r, 50) == 0 ? 300 : 0);
	uint32_t index = tl_below(r, c->nslots + (tl_below(r, 20) == 0));
	uint16_t who = (uint16_t)tl_below(r, c->fan_in + (tl_below(r, 30) == 0));
	uint8_t type = INA_T_DATA;
	switch (tl_below(r, 40)) {
	case 0: type = INA_T_PULL; break;
	case 1: type = INA_T_ACK; break;
	case 2: type = INA_T_RESULT; break;
	}
	struct ina_hdr h = tl_hdr(type, c->dtype, c->id, who, index | (e & 1 ? INA_SLOT_SET_BIT : 0), e,
				  index + (tl_below(r, 10) == 0), c->elems_per_slot);
	if (tl_below(r, 8) == 0)
		h.flags = (const uint8_t[]){ INA_F_RETX, INA_F_OVERFLOW, INA_F_JOIN, INA_F_CE }[tl_below(r, 4)];
	if (tl_below(r, 40) == 0)
		h.dtype = c->dtype == INA_D_INT32 ? INA_D_FP32 : INA_D_INT32;
	if (tl_below(r, 40) == 0)
		h.count = (uint16_t)tl_below(r, c->elems_per_slot + 2);
	if (tl_below(r, 60) == 0)
		h.contributor = INA_CONTRIB_UPSTREAM;
	*src = tl_below(r, 40) ? (who < c->fan_in ? c->contributors[who] : tl_addr(100)) : tl_addr(who + 1);
	if (type == INA_T_RESULT)
		*src = c->parent.addr;
	if (type == INA_T_ACK)
		*src = c->forward.addr;
	uint32_t vals[16];
	for (unsigned i = 0; i < 16; i++)
		vals[i] = (uint32_t)tl_below(r, 1000);
	bool no_data = (type == INA_T_DATA && (h.flags & INA_F_JOIN)) || type == INA_T_PULL || type == INA_T_ACK;
	size_t len = tl_encode(buf, &h, vals, no_data ? 0 : h.count);
	switch (tl_below(r, 60)) { /* damage on the wire */
	case 0: len -= tl_below(r, (unsigned)len + 1); break;
	case 1: buf[tl_below(r, INA_HDR_LEN)] ^= (uint8_t)(1u << tl_below(r, 8)); break;
	case 2: len += 4; break;
	}
	return len;
}

static void assert_same_emits(const struct ina_emits *a, const struct ina_emits *b)
{
	assert_int_equal(a->n, b->n);
	for (unsigned i = 0; i < a->n; i++) {
		const struct ina_emit *x = &a->e[i], *y = &b->e[i];
		assert_memory_equal(&x->hdr, &y->hdr, sizeof(x->hdr));
		assert_int_equal(x->payload_len, y->payload_len);
		if (x->payload_len)
			assert_memory_equal(x->payload, y->payload, x->payload_len);
		assert_int_equal(x->dst.ip, y->dst.ip);
		assert_int_equal(x->dst.port, y->dst.port);
		assert_int_equal(x->same_as_prev, y->same_as_prev);
		assert_int_equal(x->group != NULL, y->group != NULL);
	}
}

/* A result sink as swemu's behaves: buffers a sender still transmits from
 * (`sending`, a snapshot of what it sends) are never handed out again,
 * and must not change until they are sent; the last buffer comes back
 * when it is free.  Short slots (under 4 elements) get slot memory, and
 * are not asked for (min_len). */
#define SINK_BUFS 12 /* fewer than the jobs' 14 (slot, set) pairs: some sum in slot memory */
#define SINK_LEN  (64 * 4)
struct mock_sink {
	uint8_t *buf[SINK_BUFS];
	bool out[SINK_BUFS]; /* handed to the engine, not put back */
	uint8_t *sending[SINK_BUFS];
	size_t sending_len[SINK_BUFS];
	unsigned gets, reuses, puts, empty;
};

static int sink_index(struct mock_sink *k, const uint8_t *b)
{
	for (int i = 0; i < SINK_BUFS; i++)
		if (k->buf[i] == b)
			return i;
	fail_msg("a buffer the sink never gave");
	return -1;
}

static void sink_put(void *ctx, uint8_t *b)
{
	struct mock_sink *k = ctx;
	int i = sink_index(k, b);
	assert_true(k->out[i]);
	k->out[i] = false;
	k->puts++;
}

static uint8_t *sink_get(void *ctx, uint8_t *last, size_t len)
{
	struct mock_sink *k = ctx;
	assert_true(len <= SINK_LEN);
	if (last && len >= 4 * 4 && !k->sending[sink_index(k, last)]) {
		k->reuses++;
		return last;
	}
	if (last)
		sink_put(ctx, last);
	if (len < 4 * 4)
		return NULL;
	for (int i = 0; i < SINK_BUFS; i++)
		if (!k->out[i] && !k->sending[i]) {
			k->out[i] = true;
			k->gets++;
			memset(k->buf[i], 0xa5, SINK_LEN); /* the engine must write before it sends */
			return k->buf[i];
		}
	k->empty++;
	return NULL; /* exhausted: slot memory */
}

/* What a sender does with the emits: keeps a copy of each held payload
 * "in flight", and sends some of those in flight, checking they did not
 * change meanwhile. */
static void sink_emits(struct mock_sink *k, const struct ina_emits *out, struct tl_rng *r)
{
	for (unsigned i = 0; i < out->n; i++) {
		const struct ina_emit *e = &out->e[i];
		if (!e->payload_held)
			continue;
		int b = sink_index(k, e->payload);
		if (!k->sending[b] && (k->sending[b] = malloc(SINK_LEN))) {
			memcpy(k->sending[b], e->payload, e->payload_len);
			k->sending_len[b] = e->payload_len;
		} else if (k->sending[b]) {
			assert_memory_equal(k->sending[b], e->payload, e->payload_len);
		}
	}
	for (int b = 0; b < SINK_BUFS; b++)
		if (k->sending[b] && tl_below(r, 16) == 0) {
			assert_memory_equal(k->sending[b], k->buf[b], k->sending_len[b]); /* sent as it was */
			free(k->sending[b]);
			k->sending[b] = NULL;
		}
}

/* The sources and first 8 bytes that ina_engine_member_kind vouched for,
 * as a switch remembers its members' headers (swemu's member_frame). */
struct vouched {
	unsigned n;
	struct {
		struct ina_addr src;
		uint8_t head[8];
	} e[64];
};

static bool is_vouched(const struct vouched *v, const uint8_t *buf, size_t len, const struct ina_addr *src)
{
	for (unsigned i = 0; i < v->n; i++)
		if (len >= 8 && v->e[i].src.ip == src->ip && v->e[i].src.port == src->port &&
		    !memcmp(v->e[i].head, buf, 8))
			return true;
	return false;
}

/* A packet into eng as such a switch hands it: by ina_engine_rx_member
 * when its source and first bytes were vouched for, else by
 * ina_engine_rx, remembering them when the engine vouches. */
static enum ina_reason rx_as_switch(struct ina_engine *eng, struct vouched *v, const uint8_t *buf, size_t len,
				    const struct ina_addr *src, struct ina_emits *out, uint64_t *member_calls)
{
	if (is_vouched(v, buf, len, src)) {
		++*member_calls;
		return ina_engine_rx_member(eng, buf, len, src, out);
	}
	enum ina_reason r = ina_engine_rx(eng, buf, len, src, out);
	if (ina_engine_member_kind(eng, buf, len, src)) {
		assert_true(v->n < 64);
		v->e[v->n].src = *src;
		memcpy(v->e[v->n++].head, buf, 8);
	}
	return r;
}

/* member: the fast engine takes packets as a switch that remembers its
 * members' headers hands them (rx_as_switch). */
static void run(bool grouped, struct mock_sink *sink, bool member)
{
	static struct vouched vouched;
	uint64_t member_calls = 0;
	vouched.n = 0;
	struct ina_engine *fast = ina_engine_create(16, 64), *ref = ina_engine_create(16, 64);
	static struct ina_emits out_fast, out_ref;
	assert_non_null(fast);
	assert_non_null(ref);
	ref->general_only = true;
	/* elements no packet wrote are left as they were: the same in both */
	memset(fast->mem, 0, (size_t)fast->nslots * 2 * fast->block);
	memset(ref->mem, 0, (size_t)ref->nslots * 2 * ref->block);
	ina_engine_group_multicast(fast, grouped);
	ina_engine_group_multicast(ref, grouped);
	if (sink) { /* on the fast engine only: the general one's slot memory is the reference */
		for (int i = 0; i < SINK_BUFS; i++)
			assert_non_null(sink->buf[i] = aligned_alloc(64, SINK_LEN));
		/* min_len: the engine must still hand back a held buffer when a
		 * short slice takes the slot */
		ina_engine_result_sink(fast, &(struct ina_result_sink){ sink_get, sink_put, sink, 4 * 4 - 1 });
	}
	make_jobs();
	for (unsigned j = 0; j < NJOBS; j++) {
		assert_int_equal(ina_job_install(fast, &jobs[j], NULL), 0);
		assert_int_equal(ina_job_install(ref, &jobs[j], NULL), 0);
	}
	struct tl_rng r = { grouped ? 7 : 11 };
	uint32_t epoch[NJOBS] = { 5, 5, 5, 5 };
	uint64_t now_ns = 1000000000ull, accepted = 0;
	uint8_t buf[INA_HDR_LEN + 64 * 4 + 8];
	for (unsigned step = 0; step < 300000; step++) {
		if (tl_below(&r, 12) == 0)
			epoch[tl_below(&r, NJOBS)]++;
		now_ns += tl_below(&r, 5000) == 0 ? 3000000000ull : 1000;
		ina_engine_set_time(fast, now_ns);
		ina_engine_set_time(ref, now_ns);
		struct ina_addr src;
		size_t len = next_packet(&r, epoch, buf, &src);
		enum ina_reason a = member ? rx_as_switch(fast, &vouched, buf, len, &src, &out_fast, &member_calls)
					   : ina_engine_rx(fast, buf, len, &src, &out_fast);
		enum ina_reason b = ina_engine_rx(ref, buf, len, &src, &out_ref);
		assert_int_equal(a, b);
		assert_same_emits(&out_fast, &out_ref);
		accepted += a == INA_OK;
		if (sink)
			sink_emits(sink, &out_fast, &r);
	}
	assert_memory_equal(ina_engine_stats(fast), ina_engine_stats(ref), sizeof(struct ina_engine_stats));
	for (unsigned j = 0; j < NJOBS; j++)
		assert_memory_equal(ina_job_stats(fast, jobs[j].id), ina_job_stats(ref, jobs[j].id),
				    sizeof(struct ina_job_stats));
	if (!sink)
		assert_memory_equal(fast->mem, ref->mem, (size_t)fast->nslots * 2 * fast->block);
	/* the stream exercised the fast path, not only the general one */
	print_message("# %llu of 300000 packets accepted, %llu by the fast path\n", (unsigned long long)accepted,
		      (unsigned long long)fast->fast_packets);
	assert_true(fast->fast_packets > 300000 / 10);
	assert_true(fast->fast_packets < accepted);
	assert_int_equal(ref->fast_packets, 0);
	if (member) { /* most packets came in as a member's, with many of them refused */
		print_message("# %llu by ina_engine_rx_member\n", (unsigned long long)member_calls);
		assert_true(member_calls > 300000 / 2);
	}
	ina_engine_destroy(fast);
	ina_engine_destroy(ref);
	if (sink) { /* every buffer back, most slots summed in one, and many reused */
		print_message("# sink: %u buffers given, %u reused, %u put back, %u times none left\n", sink->gets,
			      sink->reuses, sink->puts, sink->empty);
		for (int i = 0; i < SINK_BUFS; i++) {
			assert_false(sink->out[i]);
			free(sink->buf[i]);
			free(sink->sending[i]);
		}
		assert_int_equal(sink->gets, sink->puts);
		assert_true(sink->gets > 100);
		assert_true(sink->reuses > 100);
		assert_true(sink->empty > 100); /* slot memory as the fallback, mixed with buffers */
	}
}

static void test_fast_path_matches_general(void **state)
{
	(void)state;
	run(false, NULL, false);
}

static void test_fast_path_matches_general_grouped(void **state)
{
	(void)state;
	run(true, NULL, false);
}

/* With a result sink, the same verdicts and emits (payloads compared by
 * content), and the sink's rules kept: a buffer in flight is neither
 * reused nor written, every buffer comes back. */
static void test_fast_path_with_result_sink(void **state)
{
	(void)state;
	static struct mock_sink sink;
	run(true, &sink, false);
}

/* A switch that remembers its members' headers hands most packets in by
 * ina_engine_rx_member: the same verdicts, emits, counters and slots as
 * the general path, damaged and stale packets among them. */
static void test_member_path_matches_general(void **state)
{
	(void)state;
	run(true, NULL, true);
}

/* A grouped multicast stands for exactly the frames an ungrouped one lists. */
static void test_grouped_multicast(void **state)
{
	(void)state;
	struct ina_engine *eng = ina_engine_create(4, 16);
	make_jobs();
	assert_int_equal(ina_job_install(eng, &jobs[1], NULL), 0); /* fan-in 4, upstream 3 */
	ina_engine_group_multicast(eng, true);
	uint32_t vals[4] = { 1, 2, 3, 4 };
	for (uint16_t m = 0; m < 4; m++) {
		struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_FP32, 2, m == 3 ? INA_CONTRIB_UPSTREAM : m, 0, 1, 0, 4);
		assert_int_equal(tl_send(eng, &jobs[1].contributors[m], &h, vals), INA_OK);
	}
	/* the multicast to members 0..2 (not the upstream) as one emit, then
	 * the forward and the ACK upstream */
	assert_int_equal(tl_out.n, 3);
	assert_ptr_equal(tl_out.e[0].group, ina_job_config(eng, 2));
	assert_int_equal(tl_out.e[0].hdr.type, INA_T_RESULT);
	assert_int_equal(tl_out.e[0].hdr.contributor, 0);
	assert_null(tl_out.e[1].group);
	assert_int_equal(tl_out.e[1].hdr.type, INA_T_DATA);
	assert_int_equal(tl_out.e[2].hdr.type, INA_T_ACK);
	assert_int_equal(ina_job_stats(eng, 2)->emits, 5); /* three results, the forward, the ACK */
	ina_engine_destroy(eng);
}

/* A sink's min_len spares the call for short slices, but a slot that
 * holds a buffer still hands it back when a short slice takes it over: a
 * sender may be transmitting from that buffer. */
static void test_sink_min_len(void **state)
{
	(void)state;
	static struct mock_sink sink;
	memset(&sink, 0, sizeof(sink));
	for (int i = 0; i < SINK_BUFS; i++)
		assert_non_null(sink.buf[i] = aligned_alloc(64, SINK_LEN));
	struct ina_engine *eng = ina_engine_create(4, 16);
	ina_engine_group_multicast(eng, true);
	ina_engine_result_sink(eng, &(struct ina_result_sink){ sink_get, sink_put, &sink, 4 * 4 - 1 });
	make_jobs();
	assert_int_equal(ina_job_install(eng, &jobs[0], NULL), 0); /* fan-in 3, multicast */
	const uint32_t vals[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	/* slot 0 in set 0 (8 elements: a buffer), set 1, set 0 again (2) */
	const struct {
		uint32_t slot, seq;
		uint16_t count;
	} rounds[] = { { 0, 0, 8 }, { INA_SLOT_SET_BIT, 1, 8 }, { 0, 2, 2 } };
	for (unsigned r = 0; r < 3; r++)
		for (uint16_t m = 0; m < 3; m++) {
			struct ina_hdr h = tl_hdr(INA_T_DATA, INA_D_INT32, 1, m, rounds[r].slot, 1, rounds[r].seq,
						  rounds[r].count);
			assert_int_equal(tl_send(eng, &jobs[0].contributors[m], &h, vals), INA_OK);
			if (r == 2 && m == 0)
				assert_int_equal(sink.puts, 1); /* set 0's buffer back */
		}
	assert_int_equal(sink.gets, 2);
	assert_false(tl_out.e[0].payload_held); /* 2 elements: summed in slot memory */
	assert_int_equal(ina_job_stats(eng, 1)->completions, 3);
	ina_engine_destroy(eng);
	for (int i = 0; i < SINK_BUFS; i++)
		free(sink.buf[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fast_path_matches_general),
		cmocka_unit_test(test_fast_path_matches_general_grouped),
		cmocka_unit_test(test_fast_path_with_result_sink),
		cmocka_unit_test(test_member_path_matches_general),
		cmocka_unit_test(test_grouped_multicast),
		cmocka_unit_test(test_sink_min_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
