/* libFuzzer target: swemu's control-message parser (sw_ctrl_parse), which
 * reads every datagram a mgmt host sends to the control port.
 *
 * Invariants, whatever arrives: the parser returns 0 or -1 and never exits
 * the process (libconfig's scanner used to, on @include "/"); it opens no
 * file (fopen aborts while it runs); LeakSanitizer finds nothing left
 * behind (libconfig 1.5 leaked a string per syntax error); -1 comes with a
 * message naming the channel; an accepted command is one the switch can apply as it stands:
 * a job passes the engine's own check and fits the switch, an emulation
 * names one of the switch's ports, ids are in range. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sw_cfg.h"

#define CHECK(c)                 \
	do {                     \
		if (!(c))        \
			abort(); \
	} while (0)

static bool parsing;

/* A parser that follows @include opens the file with fopen: none may be
 * opened from a datagram.  Outside the parse (libFuzzer reading its corpus) it is the
 * real one. */
FILE *fopen(const char *path, const char *mode)
{
	static FILE *(*real)(const char *, const char *);
	CHECK(!parsing);
	if (!real)
		real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
	return real(path, mode);
}

static struct sw_switch_cfg *switch_cfg(void)
{
	static struct sw_switch_cfg s;
	if (!s.nports) {
		s.ina = true;
		s.slots = 64;
		s.max_elems = 1024;
		s.nports = 3;
		snprintf(s.name, sizeof(s.name), "tor0");
		for (int i = 0; i < s.nports; i++)
			snprintf(s.ports[i].name, sizeof(s.ports[i].name), "h%d", i);
	}
	return &s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sw_ctrl_cmd cmd;
	const struct sw_switch_cfg *s = switch_cfg();
	char err[300] = "";

	parsing = true;
	int rc = sw_ctrl_parse((const char *)data, size, s, &cmd, err, sizeof(err));
	parsing = false;
	CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		CHECK(strncmp(err, "ctrl:", 5) == 0);
		return 0;
	}
	switch (cmd.op) {
	case SW_CTRL_INSTALL:
		CHECK(ina_job_cfg_check(&cmd.job, s->max_elems) == NULL);
		CHECK(cmd.job.nslots <= s->slots);
		break;
	case SW_CTRL_EMU:
		CHECK(cmd.port >= 0 && cmd.port < s->nports);
		CHECK(cmd.emu.loss >= 0 && cmd.emu.loss <= 1);
		break;
	case SW_CTRL_REMOVE:
	case SW_CTRL_STATS:
		break;
	default:
		abort();
	}
	return 0;
}
