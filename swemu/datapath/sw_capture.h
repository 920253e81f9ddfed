/* SPDX-License-Identifier: BSD-3-Clause */
/* Packet capture of a logical switch's ports to a pcapng file, readable by
 * Wireshark and tshark: one interface per port (named "switch.port"),
 * each frame with its direction (the Enhanced Packet Block's flags) and a
 * nanosecond timestamp.  Written by the lcore that owns the switch,
 * through a stdio buffer: capturing costs the datapath time, never a
 * frame.  Bounded by a packet count and a byte count (then it stops and
 * counts what it left out). */
#ifndef SW_CAPTURE_H
#define SW_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct rte_mbuf;

enum { SW_CAP_RX = 1, SW_CAP_TX = 2 };

struct sw_capture_cfg {
	char file[256];	      /* "" = no capture */
	uint32_t ports;	      /* bit i: port i; 0: every port */
	uint8_t dir;	      /* SW_CAP_RX | SW_CAP_TX */
	uint32_t snaplen;     /* bytes kept of each frame */
	uint64_t max_packets; /* 0: no bound */
	uint64_t max_bytes;   /* of the file; 0: no bound */
	bool paused;	      /* "start = false": the file is made, frames wait for a start */
	int line;	      /* in the config, for errors */
};

struct sw_capture {
	FILE *f;
	bool running; /* started and stopped at run time (control command, telemetry): atomic */
	struct sw_capture_cfg cfg;
	uint64_t packets, bytes; /* written */
	uint64_t left_out;	 /* frames past a bound */
	uint8_t *frame;		 /* snaplen bytes: a chained frame made whole */
};

/* Opens cfg->file and writes the section and one interface per port
 * (names[i] for port i, nports of them).  0, or -1 with why in err. */
int sw_capture_open(struct sw_capture *c, const struct sw_capture_cfg *cfg, const char *const *names, int nports,
		    char *err, size_t errlen);
/* A frame of port `port` in direction dir (SW_CAP_RX / SW_CAP_TX), stamped
 * now (wall clock), if the capture takes that port and direction. */
void sw_capture_frame(struct sw_capture *c, int port, unsigned dir, const struct rte_mbuf *m);
/* Whether a frame of this port and direction would be written. */
static inline int sw_capture_wants(const struct sw_capture *c, int port, unsigned dir)
{
	return c && c->f && __atomic_load_n(&c->running, __ATOMIC_RELAXED) && (c->cfg.dir & dir) &&
	       (!c->cfg.ports || (c->cfg.ports >> port & 1));
}
/* Starts or stops writing frames (the file stays open; a stop flushes it). */
void sw_capture_run(struct sw_capture *c, bool on);
/* Pushes what is buffered to the file (at the switch's flush points). */
void sw_capture_flush(struct sw_capture *c);
void sw_capture_close(struct sw_capture *c);

#endif
