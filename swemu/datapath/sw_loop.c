/* SPDX-License-Identifier: BSD-3-Clause */
/* A worker lcore's loop around the datapath's passes (sw_dp.c): flush at
 * most 100 us after a packet, age the FDB and flush captures once a second,
 * back off while idle (two cores: a busy poll would starve the hosts); and
 * the switch's start: the devices' backlog dropped, the workers launched. */
#include <stdio.h>
#include <time.h>

#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "sw_rt.h"

/* A pass that took this much longer than its poll and its sleep asked for
 * waited for the CPU (another task on the core, a CPU quota): an idle VM
 * here oversleeps by 10-50 us, a preempted or throttled thread by
 * milliseconds. */
#define SW_STALL_NS 1000000ull

/* The shortest idle sleep: an eighth of a 9000-byte frame's time on the
 * fastest port of the worker's switches where every one is rate-limited,
 * else 0 (a port at line rate keeps the old, prompt wakeups).
 * Waking sooner shows the hosts nothing their links' pace does not hide,
 * and every wakeup costs CPU (tens of us in a VM): at 50 Mbit/s links, a
 * time-dilated trial's rate, the loop spent 60% of a core waking once or
 * twice per packet, and the trial's calibration read that as a busy
 * machine.  Releases keep their times (sw_netem.c schedules them at
 * enqueue), so a late wakeup batches them without slowing a port down. */
static uint64_t sleep_floor_ns(const struct sw_worker *w)
{
	uint64_t fastest = 0;
	for (int s = 0; s < w->nsw; s++)
		for (int i = 0; i < w->sw[s]->nports; i++) {
			uint64_t r = w->sw[s]->ports[i].netem.cfg.rate_bps;
			if (!r)
				return 0;
			if (r > fastest)
				fastest = r;
		}
	return fastest ? 9000ull * 8 * 1000000000ull / fastest / 8 : 0;
}

/* Grows 1, 2, 4 ... us (from the floor) up to the cap while idle, and never
 * more than the floor past the next emulated release.  Returns the sleep
 * asked for (ns). */
static uint64_t idle_sleep(struct sw_worker *w, unsigned *idle, uint64_t now_ns, uint64_t next_due)
{
	uint64_t cap_ns = (uint64_t)w->rt->cfg.idle_sleep_max_us * 1000;
	uint64_t ns = 1000ull << (*idle < 16 ? *idle : 16);
	if (ns < w->sleep_floor_ns)
		ns = w->sleep_floor_ns;
	if (ns > cap_ns)
		ns = cap_ns;
	if (next_due != UINT64_MAX) {
		uint64_t until = next_due <= now_ns ? 0 : next_due - now_ns;
		if (until < w->sleep_floor_ns)
			until = w->sleep_floor_ns < cap_ns ? w->sleep_floor_ns : cap_ns;
		if (until < ns)
			ns = until;
	}
	if (ns == 0)
		return 0;
	(*idle)++;
	w->idle_sleeps++;
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ns };
	nanosleep(&ts, NULL);
	return ns;
}

/* The last pass's time (its start to now): busy if it found work, else
 * idle, less what it waited for the CPU beyond its sleep (stalled). */
static void account_pass(struct sw_worker *w, uint64_t now, unsigned worked, uint64_t slept)
{
	uint64_t d = now - w->now_ns;
	if (worked)
		w->busy_ns += d;
	else if (d > slept + SW_STALL_NS)
		w->stalled_ns += d - slept - SW_STALL_NS;
	w->now_ns = now;
}

/* A worker's loop (the stats file is the control thread's). */
static void run_worker(struct sw_worker *w)
{
	struct sw_rt *rt = w->rt;
	uint64_t next_flush = 0, next_age = 0;
	unsigned idle = 0, worked = 0;
	uint64_t slept = 0;

	w->start_ns = w->now_ns = sw_clock_ns(rt);
	while (!*rt->quit) {
		uint64_t next_due;
		unsigned work = sw_dp_poll_worker(w, &next_due);
		uint64_t now = w->nsw ? w->sw[0]->now_ns : sw_clock_ns(rt); /* no clock read of its own */
		account_pass(w, now, worked, slept);
		worked = work;
		slept = 0;
		w->loops++;

		if (now >= next_flush) { /* a lone packet waits at most 100 us */
			sw_dp_flush_worker(w);
			next_flush = now + 100000;
		}
		if (now >= next_age) {
			w->sleep_floor_ns = sleep_floor_ns(w); /* the links' rates may have changed */
			for (int s = 0; s < w->nsw; s++) {
				sw_fdb_age(&w->sw[s]->fdb, w->sw[s]->now_s);
				sw_capture_flush(&w->sw[s]->cap); /* a capture is readable a second later */
			}
			next_age = now + 1000000000ull;
		}
		if (work) {
			idle = 0;
		} else if (rt->cfg.idle_sleep_max_us || !w->nsw) {
			sw_dp_flush_worker(w);
			if (rt->cfg.idle_sleep_max_us) {
				slept = idle_sleep(w, &idle, now, next_due);
			} else { /* a main lcore without switches has nothing to poll */
				nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
				slept = 1000000;
			}
		}
	}
	sw_dp_flush_worker(w);
}

static int worker_main(void *arg)
{
	run_worker(arg);
	return 0;
}

/* What the devices hold before the first poll is dropped, counted.  An
 * af_packet socket receives from every interface of its namespace from its
 * creation until the driver binds it to its own, and the driver maps a ring
 * of megabytes in between: a frame that arrived on one port then (a host's
 * IPv6 chatter as it comes up) waits in another port's ring and would be
 * learned there.  The rest arrived before the switch was switching, as at
 * a real switch's boot. */
static void discard_backlog(struct sw_rt *rt)
{
	struct rte_mbuf *pkts[SW_BURST_MAX];
	for (int s = 0; s < rt->nsw; s++)
		for (int i = 0; i < rt->sw[s]->nports; i++) {
			struct sw_port *p = &rt->sw[s]->ports[i];
			uint16_t n;
			/* a ring's worth or a few: a flood arriving meanwhile is
			 * the switch's to handle, not this loop's */
			for (unsigned k = 0;
			     p->ext && k < 4096 && (n = rte_eth_rx_burst(p->dev, p->queue, pkts, SW_BURST_MAX)) > 0;
			     k += n) {
				p->st.rx_packets += n;
				for (uint16_t j = 0; j < n; j++) {
					p->st.rx_bytes += rte_pktmbuf_pkt_len(pkts[j]);
					if (p->sw->cap.f) /* received, as every dropped frame is */
						sw_capture_frame(&p->sw->cap, p->index, SW_CAP_RX, pkts[j]);
				}
				p->st.drops[SW_D_BEFORE_START] += n;
				rte_pktmbuf_free_bulk(pkts, n);
			}
		}
}

void sw_dp_run(struct sw_rt *rt)
{
	discard_backlog(rt);
	for (int i = 1; i < rt->nworkers; i++)
		if (rte_eal_remote_launch(worker_main, &rt->workers[i], rt->workers[i].lcore) != 0) {
			/* setup checked the lcores: this is a bug, not a config error */
			fprintf(stderr, "swemu: lcore %u does not start; stopping\n", rt->workers[i].lcore);
			*rt->quit = 1;
		}
	run_worker(&rt->workers[0]);
	rte_eal_mp_wait_lcore();
}
