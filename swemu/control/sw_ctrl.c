/* SPDX-License-Identifier: BSD-3-Clause */
/* The control thread: the management plane apart from the datapath, as
 * grout keeps it.  Commands (nic/conf.h syntax, see ctl_parse) arrive from
 * the switches' lcores (sw_ctrl_lcore.c) already filtered by source and
 * rate; here each is authenticated (when the switch has a key) and parsed
 * — libconfig and malloc, which must never run between two packets — and
 * handed back to its lcore to be applied and answered.  The thread also
 * writes the stats file, on its timer and on SIGUSR1.  It sleeps on an
 * eventfd the lcores and the signal handler write. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_ring.h>

#include "sw_rt.h"

/* Parses a command for this switch: the grammar's own checks, then the
 * switch's (the port of an emu command).  0, or -1 with why in err. */
static int parse_for(const struct sw_lsw *sw, const char *text, size_t len, struct ctl_cmd *cmd, int *port, char *err,
		     size_t errlen)
{
	const struct ctl_limits lim = { sw->cfg->slots, sw->cfg->max_elems };
	if (ctl_parse(text, len, "ctrl", &lim, cmd, err, errlen) < 0)
		return -1;
	if (cmd->op == CTL_EMU && (*port = sw_cfg_find_port(sw->cfg, cmd->port)) < 0) {
		snprintf(err, errlen, "ctrl:1: switch '%s' has no port '%s'", sw->cfg->name, cmd->port);
		return -1;
	}
	return 0;
}

/* Authenticates and parses one request: on return it holds a command to
 * apply or a refusal and its answer. */
static void take(struct sw_lsw *sw, struct sw_ctrl_req *q)
{
	const char *text;
	size_t len;
	char err[300];

	q->drop = 0;
	q->port = -1;
	if (!sw->cfg->ctrl_key.len) { /* no key to check a signature against */
		ctl_auth_body(q->text, q->len, &text, &len);
	} else {
		enum ctl_auth_verdict a = ctl_auth_check(&sw->cfg->ctrl_key, &sw->ctrl_seen, ctl_auth_now_ms(), q->text,
							 q->len, &text, &len);
		if (a != CTL_AUTH_OK) {
			q->drop = SW_D_CTRL_AUTH;
			snprintf(q->answer, sizeof(q->answer), "error: ctrl: not authenticated: %s\n",
				 ctl_auth_verdict_name(a));
			return;
		}
	}
	if (parse_for(sw, text, len, &q->cmd, &q->port, err, sizeof(err)) < 0) {
		q->drop = SW_D_CTRL_BAD;
		snprintf(q->answer, sizeof(q->answer), "error: %s\n", err);
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *ctrl_main(void *arg)
{
	struct sw_rt *rt = arg;
	const uint64_t stats_every = (uint64_t)rt->cfg.stats_interval_ms * 1000000;
	uint64_t next_stats = mono_ns() + stats_every;

	while (!__atomic_load_n(&rt->ctrl_stop, __ATOMIC_ACQUIRE)) {
		uint64_t now = mono_ns();
		int wait_ms = 1000; /* a bound, so that nothing here can hang */
		if (stats_every && (rt->cfg.stats_file[0] || rt->cfg.stats_prom_file[0])) {
			if (now >= next_stats) {
				sw_stats_dump(rt);
				next_stats = now + stats_every;
			}
			uint64_t left = (next_stats - now) / 1000000 + 1;
			wait_ms = left < (uint64_t)wait_ms ? (int)left : wait_ms;
		}
		struct pollfd pfd = { .fd = rt->ctrl_wake, .events = POLLIN };
		eventfd_t ignored;
		if (poll(&pfd, 1, wait_ms) > 0)
			eventfd_read(rt->ctrl_wake, &ignored);
		if (*rt->dump_stats) {
			*rt->dump_stats = 0;
			sw_stats_dump(rt);
		}
		for (int s = 0; s < rt->nsw; s++) {
			struct sw_lsw *sw = rt->sw[s];
			struct sw_ctrl_req *q;
			while (sw->ctrl_in && rte_ring_sc_dequeue(sw->ctrl_in, (void **)&q) == 0) {
				take(sw, q);
				/* never full: it holds every request there is */
				rte_ring_sp_enqueue(sw->ctrl_out, q);
			}
		}
	}
	return NULL;
}

int sw_ctrl_start(struct sw_rt *rt, char *err, size_t errlen)
{
	rt->ctrl_stop = 0;
	rt->ctrl_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (rt->ctrl_wake < 0) {
		snprintf(err, errlen, "swemu: no eventfd for the control thread: %s", strerror(errno));
		return -1;
	}
	/* set before the thread runs: the lcores and the signal handler
	 * write the eventfd only when it is there */
	__atomic_store_n(&rt->ctrl_running, true, __ATOMIC_RELEASE);
	int rc = pthread_create(&rt->ctrl_thread, NULL, ctrl_main, rt);
	if (rc != 0) {
		rt->ctrl_running = false;
		close(rt->ctrl_wake);
		snprintf(err, errlen, "swemu: the control thread does not start: %s", strerror(rc));
		return -1;
	}
	pthread_setname_np(rt->ctrl_thread, "swemu-ctrl");
	return 0;
}

void sw_ctrl_stop(struct sw_rt *rt)
{
	if (!rt->ctrl_running)
		return;
	__atomic_store_n(&rt->ctrl_stop, 1, __ATOMIC_RELEASE);
	eventfd_write(rt->ctrl_wake, 1);
	pthread_join(rt->ctrl_thread, NULL);
	__atomic_store_n(&rt->ctrl_running, false, __ATOMIC_RELEASE);
	close(rt->ctrl_wake);
}
