/* SPDX-License-Identifier: BSD-3-Clause */
/* The floors of swemu-bench (-F): the least work a switch of each kind
 * must do per frame, run on the same ring ports and frames as the bench's
 * io, l2 and ina loops and timed the same way.  They are what issue 19's
 * goals 1 and 3 can be judged against: a goal that the floor itself misses
 * is out of reach for any switch on these ports (docs/BENCHMARKS.md).
 *  - l2: each frame's destination MAC looked up in a table, the burst sent
 *    on per output port; no learning, no checks.
 *  - ina: a software SwitchML: the slot's index read from the frame, the
 *    payload added into slot memory, the contributors' frames held until
 *    the slot completes, then each turned around in place with the sum:
 *    copied into it, or for sums over 512 B (swemu's SW_SHARE_MIN) made
 *    in an mbuf that every frame's header chains to, as swemu does
 *    (copying a 1 KiB sum into each frame measured slower than swemu).
 *  - ina checked: the same plus what a switch that serves untrusted hosts
 *    checks of every frame: its headers against its member's (one masked
 *    compare: addresses, ports, protocol, INA version, type, job and
 *    contributor), the IPv4 checksum, the lengths, the slot's range, and
 *    the slice against the slot's (epoch, sequence, contributor's bit).
 * Frames must carry UDP checksum 0 (swemu-bench -z): a floor verifies none. */
#ifndef SW_BENCH_FLOOR_H
#define SW_BENCH_FLOOR_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#define FLOOR_PORTS 4
#define FLOOR_HEAD  64 /* bytes of a member's frame its checks compare */

/* One (slot, set): the frames of the round it collects. */
struct floor_slot {
	uint64_t bits[4]; /* contributors in (fan-in <= 256) */
	uint32_t epoch, seq;
	unsigned count;
	struct rte_mbuf **held; /* fan_in frames */
	struct rte_mbuf *sum;	/* long sums: the mbuf they are made in (a reference of the slot's) */
	uint8_t *from;		/* each held frame's port */
};

struct bench_floor {
	unsigned fan_in, elems, window;
	bool checked;
	uint16_t port_id[FLOOR_PORTS], queue;
	struct {
		uint64_t mac; /* sw_mac64 */
		uint64_t port;
	} fdb[256];		       /* by the MAC's last byte */
	uint8_t (*member)[FLOOR_HEAD]; /* fan_in: each member's first frame */
	uint64_t mask[4];	       /* of bytes 0-31 that every frame of a member repeats */
	struct floor_slot *slots;      /* 2 * window */
	uint32_t *sums;		       /* 2 * window * elems, 64-byte aligned */
	uint64_t refused, completions, wrong;
};

/* For fan_in members (frames of member c to slot i: tmpl[c * window + i]),
 * host c's MAC ending in c and on port c % FLOOR_PORTS.  -1 when out of
 * memory or fan_in > 256. */
int bench_floor_init(struct bench_floor *fl, unsigned fan_in, unsigned elems, unsigned window, bool checked,
		     const uint16_t *port_id, uint16_t queue, struct rte_mbuf *const *tmpl);
void bench_floor_fini(struct bench_floor *fl);

/* One pass over the ports; the frames handled. */
unsigned bench_floor_l2(struct bench_floor *fl);
unsigned bench_floor_ina(struct bench_floor *fl);

#endif
