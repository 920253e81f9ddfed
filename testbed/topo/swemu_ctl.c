/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu-ctl: sends one command to a swemu switch's control channel and
 * prints its answer.  The command is checked first with the grammar the
 * switch itself uses (nic/ctl_msg.h), so a mistake is reported with its
 * line before anything is sent; --raw sends the text as it is (tests of
 * the switch's own checks).  Exit status: 0 on "ok...", 1 on an error
 * answer (or a command refused here), 2 when no answer came in time or
 * the arguments are wrong. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl_msg.h"
#include "ina_proto.h"
#include "parse.h"
#include "tor.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: swemu-ctl [--port P] [--timeout S] [--key FILE] [--raw] SWITCH_IP 'COMMAND'\n"
		"  Sends COMMAND to the switch's control channel (UDP, default port %u) from\n"
		"  this host, which must be a mgmt source of the switch; prints the answer.\n"
		"  Commands (docs/SWEMU.md, \"Control channel\"):\n"
		"    op = \"install\"; job = { id = 3; dtype = \"int32\"; slots = 16; elems = 1024;\n"
		"                            outputs = [\"multicast\"]; contributors = [\"10.0.0.1:48864\", ...]; };\n"
		"    op = \"remove\"; id = 3;\n"
		"    op = \"stats\"; id = 3;\n"
		"    op = \"emu\"; port = \"h1\"; rate = \"1G\"; buffer = \"1M\"; delay_us = 50; loss = 0.01;\n"
		"  --timeout S  give up after S seconds (default 2; the command is re-sent every 100 ms)\n"
		"  --key FILE   sign the command with the switch's key (its ctrl_key_file; mode 0600);\n"
		"               default: $SWEMU_CTL_KEY_FILE if set, else unsigned\n"
		"  --raw        send the text unchecked\n"
		"  Exit: 0 ok, 1 error answer or command refused here, 2 no answer or bad arguments.\n",
		INA_CTRL_PORT);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, 0, 'p' }, { "timeout", required_argument, 0, 't' },
		{ "raw", no_argument, 0, 'r' },	       { "key", required_argument, 0, 'k' },
		{ "help", no_argument, 0, 'h' },       { 0, 0, 0, 0 }
	};
	long long port = INA_CTRL_PORT;
	double timeout = 2;
	int raw = 0, o;
	const char *key_file = getenv("SWEMU_CTL_KEY_FILE");
	while ((o = getopt_long(argc, argv, "p:t:k:rh", opts, NULL)) != -1) {
		switch (o) {
		case 'k': key_file = optarg; break;
		case 'p':
			if (parse_int(optarg, 1, 65535, &port) < 0)
				goto bad;
			break;
		case 't':
			if (parse_double(optarg, 0.01, 3600, &timeout) < 0)
				goto bad;
			break;
		case 'r': raw = 1; break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	uint32_t ip;
	if (argc - optind != 2 || parse_ipv4(argv[optind], &ip) < 0)
		goto bad;
	const char *text = argv[optind + 1];
	static struct ctl_cmd cmd;
	char err[512];
	if (!raw) {
		const struct ctl_limits most = { 1u << 20, INA_MAX_ELEMS }; /* the switch checks its own */
		if (ctl_parse(text, strlen(text), "command", &most, &cmd, err, sizeof(err)) < 0) {
			fprintf(stderr, "swemu-ctl: not sent: %s\n", err);
			return 1;
		}
	}
	struct tor sw;
	struct sockaddr_in any = { .sin_family = AF_INET };
	tor_init(&sw, &any, ip, 0); /* an owner goes in the command text */
	static struct ctl_key key;
	if (key_file && *key_file) {
		if (ctl_key_load(key_file, &key, err, sizeof(err)) < 0) {
			fprintf(stderr, "swemu-ctl: not sent: %s\n", err);
			return 2;
		}
		tor_set_key(&sw, &key);
	}
	sw.ctl.sin_port = htons((uint16_t)port);
	char answer[1024];
	int rc = tor_command(&sw, text, !raw && cmd.op == CTL_INSTALL ? "is installed" : NULL, answer, sizeof(answer),
			     clock_now_ns() + (int64_t)(timeout * 1e9), err, sizeof(err));
	if (rc == -ETIMEDOUT) {
		fprintf(stderr, "swemu-ctl: %s\n", err);
		return 2;
	}
	if (rc < 0 && rc != -EIO) {
		fprintf(stderr, "swemu-ctl: %s\n", err);
		return 2;
	}
	/* the switch's own words: "ok..." or "error: ..." */
	if (rc == 0 && strncmp(answer, "ok", 2)) /* an install's first copy was applied, its "ok" lost */
		snprintf(answer, sizeof(answer), "ok");
	puts(rc == 0 ? answer : strstr(err, "error: ") ? strstr(err, "error: ") : err);
	return rc == 0 ? 0 : 1;
bad:
	usage(stderr);
	return 2;
}
