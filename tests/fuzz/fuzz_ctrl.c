/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the control-message parser (nic/ctl_msg.c ctl_parse),
 * which reads every datagram a mgmt host sends to a switch's control port.
 *
 * Invariants, whatever arrives: the parser returns 0 or -1 and never exits
 * the process (libconfig's scanner used to, on @include "/"); it opens no
 * file (fopen aborts while it runs); LeakSanitizer finds nothing left
 * behind (libconfig 1.5 leaked a string per syntax error); -1 comes with a
 * message naming the channel; an accepted command is one the switch can apply as it stands:
 * a job passes the engine's own check, fits the switch, and what the
 * agents format for it parses back to the same job. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_msg.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctl_cmd cmd;
	static const struct ctl_limits lim = { 64, 1024 };
	char err[300] = "";

	parsing = true;
	int rc = ctl_parse((const char *)data, size, "ctrl", &lim, &cmd, err, sizeof(err));
	parsing = false;
	CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		CHECK(strncmp(err, "ctrl:", 5) == 0);
		return 0;
	}
	switch (cmd.op) {
	case CTL_INSTALL: {
		CHECK(ina_job_cfg_check(&cmd.job, lim.max_elems) == NULL);
		CHECK(cmd.job.nslots <= lim.slots);
		/* what the agents would send for it parses back to it */
		static char text[CTL_MAX_TEXT];
		static struct ctl_cmd again;
		struct ina_job_cfg job = cmd.job;
		CHECK(ctl_format_install(&job, cmd.owner, text, sizeof(text)) == 0);
		CHECK(ctl_parse(text, strlen(text), "again", &lim, &again, err, sizeof(err)) == 0);
		for (unsigned i = 0; i < job.fan_in; i++) /* a contributor's MAC is not sent */
			memset(job.contributors[i].mac, 0, 6);
		CHECK(memcmp(&again.job, &job, sizeof(job)) == 0);
		CHECK(again.owner == cmd.owner);
		break;
	}
	case CTL_EMU:
		CHECK(strlen(cmd.port) > 0 && strlen(cmd.port) < CTL_NAME_LEN);
		CHECK(cmd.netem.loss >= 0 && cmd.netem.loss <= 1);
		break;
	case CTL_REMOVE:
	case CTL_STATS: break;
	default: abort();
	}
	return 0;
}
