/* SPDX-License-Identifier: BSD-3-Clause */
/* Trailing sends (hcl_xfer_exchange_trailing), ranks as threads on the fake
 * hub: an exchange returns before its send is acknowledged, and the ACKs
 * are awaited by the next exchange or hcl_xfer_drain; a ring of trailing
 * steps through loss, duplication and reordering delivers every byte (a
 * step's lost tail is sent again while the next step runs); a receiver
 * that never answers fails the drain by its deadline, naming it; a second
 * message under the trailing one's tag to the same rank is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_transport.h"
#include "hcl_xfer.h"
#include "testlib.h"

#define MAXR 8
#define LEN  100000 /* 12 jumbo packets a ring step */
#define ONE  60000  /* 7 packets: within the first congestion window, so they all go unacknowledged */

static uint8_t byte_of(unsigned r, unsigned s, size_t i) { return (uint8_t)(r * 29 + s * 11 + i * 7 + (i >> 8)); }

struct ring_job {
	struct fake_hub *hub;
	unsigned rank, n, steps;
	int rc;
	char err[256];
	struct hcl_xfer_stats st;
};

/* Ring steps with trailing sends.  A step's send buffer is written again
 * two steps later (two buffers in turn), after the step that ends its
 * trail: the contract hcl_xfer_exchange_trailing states. */
static void *ring_main(void *arg)
{
	struct ring_job *j = arg;
	struct dgram_transport t;
	struct hcl_xfer *x = fake_xfer_new(j->hub, j->rank, j->n, 1000, &t, j->err, sizeof(j->err));
	if (!x) {
		j->rc = -1;
		return NULL;
	}
	unsigned next = (j->rank + 1) % j->n, prev = (j->rank + j->n - 1) % j->n;
	uint8_t *sb[2] = { malloc(LEN), malloc(LEN) }, *rb = malloc(LEN);
	int64_t deadline = clock_now_ns() + 5000000000ll;
	for (unsigned s = 0; s < j->steps && j->rc == 0; s++) {
		uint8_t *b = sb[s % 2];
		for (size_t i = 0; i < LEN; i++)
			b[i] = byte_of(j->rank, s, i);
		memset(rb, 0xee, LEN);
		j->rc = hcl_xfer_exchange_trailing(x, 100 + s, (int)next, b, LEN, (int)prev, rb, NULL, LEN,
						   HCL_XFER_COPY, deadline, j->err, sizeof(j->err));
		for (size_t i = 0; i < LEN && j->rc == 0; i++)
			if (rb[i] != byte_of(prev, s, i)) {
				snprintf(j->err, sizeof(j->err), "rank %u step %u byte %zu wrong", j->rank, s, i);
				j->rc = -EBADMSG;
			}
	}
	if (j->rc == 0)
		j->rc = hcl_xfer_drain(x, deadline, j->err, sizeof(j->err));
	if (j->rc == 0)
		hcl_xfer_linger(x, 60000000, clock_now_ns() + 2000000000ll);
	j->st = *hcl_xfer_stats(x);
	free(sb[0]);
	free(sb[1]);
	free(rb);
	hcl_xfer_free(x);
	return NULL;
}

static void test_ring_lossy(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		unsigned n = 3 + (unsigned)(seed % 5);
		struct fake_net net = { .loss = 0.1, .dup = 0.05, .reorder = 0.2, .seed = seed };
		struct fake_hub *hub = fake_hub_new(n, &net);
		struct ring_job jobs[MAXR];
		pthread_t th[MAXR];
		for (unsigned r = 0; r < n; r++) {
			jobs[r] = (struct ring_job){ .hub = hub, .rank = r, .n = n, .steps = 12 };
			pthread_create(&th[r], NULL, ring_main, &jobs[r]);
		}
		uint64_t resent = 0;
		for (unsigned r = 0; r < n; r++) {
			pthread_join(th[r], NULL);
			resent += jobs[r].st.data_resent;
		}
		fake_hub_free(hub);
		for (unsigned r = 0; r < n; r++)
			if (jobs[r].rc)
				fail_msg("seed %llu rank %u: %s", (unsigned long long)seed, r, jobs[r].err);
		assert_true(resent > 0); /* the loss was real and repaired */
	}
}

/* Rank 1 starts receiving only once rank 0's trailing exchange has
 * returned: the exchange cannot have waited for an ACK.  Its drain then
 * waits for them, and the bytes arrive exact. */
struct pair {
	struct fake_hub *hub;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool sent;
	int rc[2];
	char err[2][256];
};

static void *receiver_main(void *arg)
{
	struct pair *p = arg;
	struct dgram_transport t;
	struct hcl_xfer *x = fake_xfer_new(p->hub, 1, 2, 1000, &t, p->err[1], sizeof(p->err[1]));
	if (!x) {
		p->rc[1] = -1;
		return NULL;
	}
	pthread_mutex_lock(&p->mu);
	while (!p->sent)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	static uint8_t rb[ONE];
	p->rc[1] = hcl_xfer_exchange(x, 7, -1, NULL, 0, 0, rb, ONE, clock_now_ns() + 5000000000ll, p->err[1],
				     sizeof(p->err[1]));
	for (size_t i = 0; i < ONE && p->rc[1] == 0; i++)
		if (rb[i] != byte_of(0, 7, i)) {
			snprintf(p->err[1], sizeof(p->err[1]), "byte %zu wrong", i);
			p->rc[1] = -EBADMSG;
		}
	if (p->rc[1] == 0)
		hcl_xfer_linger(x, 60000000, clock_now_ns() + 2000000000ll);
	hcl_xfer_free(x);
	return NULL;
}

static void test_returns_before_ack(void **state)
{
	(void)state;
	struct pair p = { .hub = fake_hub_new(2, &(struct fake_net){ .seed = 2 }) };
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	pthread_t th;
	pthread_create(&th, NULL, receiver_main, &p);
	struct dgram_transport t;
	struct hcl_xfer *x = fake_xfer_new(p.hub, 0, 2, 1000, &t, p.err[0], sizeof(p.err[0]));
	assert_non_null(x);
	static uint8_t sb[ONE];
	for (size_t i = 0; i < ONE; i++)
		sb[i] = byte_of(0, 7, i);
	/* nobody reads rank 1's socket yet: a send that waited for its ACKs
	 * would end here by the deadline */
	p.rc[0] = hcl_xfer_exchange_trailing(x, 7, 1, sb, ONE, -1, NULL, NULL, 0, HCL_XFER_COPY,
					     clock_now_ns() + 3000000000ll, p.err[0], sizeof(p.err[0]));
	pthread_mutex_lock(&p.mu);
	p.sent = true;
	pthread_cond_signal(&p.cv);
	pthread_mutex_unlock(&p.mu);
	if (p.rc[0] == 0)
		p.rc[0] = hcl_xfer_drain(x, clock_now_ns() + 5000000000ll, p.err[0], sizeof(p.err[0]));
	pthread_join(th, NULL);
	for (int i = 0; i < 2; i++)
		if (p.rc[i])
			fail_msg("rank %d: %s", i, p.err[i]);
	assert_int_equal(hcl_xfer_drain(x, clock_now_ns(), p.err[0], sizeof(p.err[0])), 0); /* nothing left */
	hcl_xfer_free(x);
	fake_hub_free(p.hub);
	pthread_cond_destroy(&p.cv);
	pthread_mutex_destroy(&p.mu);
}

/* Rank 1 exists but never reads: the drain fails at its deadline and
 * names it; a message under the trailing tag to it is refused meanwhile. */
static void test_drain_names_silent_peer(void **state)
{
	(void)state;
	char err[256];
	struct fake_hub *hub = fake_hub_new(2, &(struct fake_net){ .seed = 3 });
	struct dgram_transport t;
	struct hcl_xfer *x = fake_xfer_new(hub, 0, 2, 1000, &t, err, sizeof(err));
	assert_non_null(x);
	static uint8_t sb[ONE];
	assert_int_equal(hcl_xfer_exchange_trailing(x, 9, 1, sb, ONE, -1, NULL, NULL, 0, HCL_XFER_COPY,
						    clock_now_ns() + 1000000000ll, err, sizeof(err)),
			 0);
	assert_int_equal(hcl_xfer_exchange(x, 9, 1, sb, 4, -1, NULL, 0, clock_now_ns() + 1000000, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "still being sent"));
	assert_int_equal(hcl_xfer_drain(x, clock_now_ns() + 100000000, err, sizeof(err)), -ETIMEDOUT);
	assert_non_null(strstr(err, "rank 1"));
	assert_non_null(strstr(err, "did not acknowledge"));
	assert_non_null(strstr(err, "tag 9"));
	hcl_xfer_free(x);
	fake_hub_free(hub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_returns_before_ack),
		cmocka_unit_test(test_ring_lossy),
		cmocka_unit_test(test_drain_names_silent_peer),
	};
	return cmocka_run_group_tests_name("xfer_trail", tests, NULL, NULL);
}
