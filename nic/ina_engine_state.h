/* SPDX-License-Identifier: BSD-3-Clause */
/* The aggregation engine's state, shared by its two halves: the job table
 * (ina_jobs.c: install, remove, queries) and the datapath (ina_engine.c).
 * Internal to nic/; users see ina_engine.h only. */
#ifndef INA_ENGINE_STATE_H
#define INA_ENGINE_STATE_H

#include "ina_engine.h"

enum slot_state {
	SLOT_EMPTY = 0,	  /* never used since the job was installed */
	SLOT_PARTIAL,	  /* some contributions added, host order */
	SLOT_WAIT_PARENT, /* aggregate complete (wire order), sent to the parent */
	SLOT_COMPLETE,	  /* result stored (wire order) and emitted */
};

/* State of one (slot index, set).  Its slice key (epoch, seq) lets the engine
 * refuse a contribution for another slice rather than add it to the wrong
 * one.  It fills the line in front of the set's elements: one run of memory. */
struct slot {
	uint64_t bitmap[INA_BITMAP_WORDS]; /* contributors counted this round */
	uint32_t epoch;
	uint32_t seq;
	uint16_t count; /* contributions this round */
	uint16_t ndata; /* ... of them with elements (not joins) */
	uint16_t nelem;
	uint8_t state;
	uint8_t acked;	 /* INA_OUT_ACK with FORWARD: the downstream acknowledged */
	uint8_t resends; /* re-sends answered while waiting upstream (ACK, parent) */
	uint8_t flags;	 /* INA_F_OVERFLOW, INA_F_CE: carried by what the slot emits */
	int8_t exponent;
	uint32_t touched_ms; /* engine time of the last packet it took */
	uint8_t *held;	     /* the result sink's buffer holding its elements, or NULL */
};

struct job {
	uint32_t gen; /* odd while rewritten: a reader (stats, telemetry) retries, never mixes two jobs */
	bool used;
	uint32_t base; /* first engine slot index */
	struct ina_job_cfg cfg;
	struct ina_job_stats st;
	uint32_t epoch_hi;  /* newest epoch a slot completed (0 at install) */
	uint32_t heard_us;  /* engine time of its last DATA (idle_miss_us) */
	uint32_t polled_us; /* ... of its last idle report */
	uint32_t gap_us;    /* mean time between its DATA while they flow */
};

#define SLOT_HDR 64

struct ina_engine {
	uint32_t nslots;
	uint16_t max_elems;
	size_t block; /* bytes per (slot, set): header + elements, 64-byte multiple */
	uint8_t *mem;
	uint16_t job_of_id[65536]; /* jobs[] index + 1, 0 = none */
	unsigned njobs;		   /* entries of jobs[] allocated (used or free); only grows */
	struct job *jobs[INA_MAX_JOBS];
	struct ina_engine_stats st;
	uint32_t now_ms;       /* ina_engine_set_time; wraps after 49 days, compared as a difference */
	uint32_t now_us;       /* the same in µs: wraps after 71 minutes */
	bool group_multicast;  /* ina_engine_group_multicast */
	bool general_only;     /* tests: every packet through the general path */
	uint64_t fast_packets; /* taken by the fast path (its test checks it is) */
	uint32_t jobs_changes; /* jobs installed and removed: ina_engine_jobs_changes */
	struct ina_result_sink sink;
};

_Static_assert(sizeof(struct slot) <= SLOT_HDR, "slot state must fit its header line");

/* (slot, set) number m = 2 * engine slot index + set */
static inline struct slot *slot_at(const struct ina_engine *eng, size_t m)
{
	return (struct slot *)(eng->mem + m * eng->block);
}

/* The slot's elements: partial sums in host order, then the result in
 * wire order; in the result sink's buffer when it gave one. */
static inline uint32_t *slot_data(struct slot *s)
{
	return s->held ? (uint32_t *)s->held : (uint32_t *)((uint8_t *)s + SLOT_HDR);
}

/* The slot's elements go to a buffer of the sink's for what comes next
 * (len bytes): the last one again if nothing else holds it. */
static inline void slot_renew(const struct ina_engine *eng, struct slot *s, size_t len)
{
	s->held = eng->sink.get(eng->sink.ctx, s->held, len);
}

/* The slot leaves the sink's buffer for good (a reclaim, its job
 * removed, the engine's end). */
static inline void slot_release(const struct ina_engine *eng, struct slot *s)
{
	if (s->held) {
		eng->sink.put(eng->sink.ctx, s->held);
		s->held = NULL;
	}
}

static inline struct job *find_job(const struct ina_engine *eng, uint16_t id)
{
	unsigned i = eng->job_of_id[id];
	return i ? eng->jobs[i - 1] : NULL;
}

/* How many entries the job table has allocated, each used or free (for
 * another thread's loop over eng->jobs[]: those past it are NULL). */
static inline unsigned ina_job_entries(const struct ina_engine *eng)
{
	return __atomic_load_n(&eng->njobs, __ATOMIC_ACQUIRE);
}

#endif
