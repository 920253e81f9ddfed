/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu: a software top-of-rack switch with in-network aggregation.
 *   swemu [EAL args] -- -c CONFIG [--stats FILE]
 *   swemu --check CONFIG
 * The config is read and checked before EAL starts, so a bad file costs no
 * hugepage file, no port and no half-started switch: exit status 2 and
 * "file:line: what is wrong". */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_version.h>

#include "sw_rt.h"

#define SWEMU_VERSION "0.1.0"

/* A signal handler can reach only globals: two flags and the control
 * thread's eventfd, which wakes it to write the stats. */
static volatile sig_atomic_t quit_flag, dump_flag;
static volatile int ctrl_wake_fd = -1;

static void on_signal(int sig)
{
	if (sig == SIGUSR1) {
		dump_flag = 1;
		uint64_t one = 1;
		if (ctrl_wake_fd >= 0 && write(ctrl_wake_fd, &one, sizeof(one)) < 0)
			return; /* full (it is being woken anyway) */
	} else {
		quit_flag = 1;
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: swemu [EAL options] -- -c CONFIG [--stats FILE] [--prom FILE]\n"
		   "       swemu --check CONFIG   check a config and say what it holds (no EAL, no ports)\n"
		   "  A DPDK software ToR switch: L2 switching, in-network aggregation, link\n"
		   "  emulation; several logical switches per process (docs/SWEMU.md).\n"
		   "  -c, --config FILE  switch configuration (configs/*.cfg, docs/SWEMU.md)\n"
		   "  -s, --stats FILE   write JSON stats here (overrides stats_file)\n"
		   "  -p, --prom FILE    write the counters for Prometheus here (overrides\n"
		   "                     stats_prom_file; node_exporter's textfile collector)\n"
		   "  -h, --help         this text\n"
		   "  -V, --version      the version\n"
		   "  Ports are DPDK devices named in the config, e.g. with EAL options\n"
		   "    --no-huge -m 512 --file-prefix sw1 --no-pci \\\n"
		   "    --vdev net_af_packet0,iface=veth0,framesz=10240,blocksz=40960\n"
		   "  Signals: SIGINT/SIGTERM stop (final stats on stdout), SIGUSR1 writes stats.\n"
		   "  Telemetry: /swemu/switches, /swemu/port,SW.PORT, /swemu/ina,SW, /swemu/job,SW.ID\n"
		   "  Exit status: 0 stopped by signal, 1 run-time error, 2 bad arguments or config.\n");
}

struct app_args {
	const char *config;
	const char *stats;
	const char *prom;
};

/* App options come after "--"; --help and --version also work alone. */
static int parse_app_args(int argc, char **argv, struct app_args *a)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' }, { "stats", required_argument, 0, 's' },
		{ "prom", required_argument, 0, 'p' },	 { "help", no_argument, 0, 'h' },
		{ "version", no_argument, 0, 'V' },	 { 0, 0, 0, 0 },
	};
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "c:s:p:hV", opts, NULL)) != -1) {
		switch (o) {
		case 'c': a->config = optarg; break;
		case 's': a->stats = optarg; break;
		case 'p': a->prom = optarg; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("swemu %s (%s)\n", SWEMU_VERSION, rte_version()); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "swemu: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!a->config) {
		fprintf(stderr, "swemu: -c CONFIG is required (swemu --help)\n");
		return -1;
	}
	return 0;
}

/* The config as swemu would load it, and what is in it; 0 or 2. */
static int check_only(const char *path)
{
	static struct sw_cfg cfg;
	char err[512];
	if (sw_cfg_load(path, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	printf("%s: ok:", path);
	for (int i = 0; i < cfg.nswitches; i++) {
		const struct sw_switch_cfg *s = &cfg.sw[i];
		printf(" switch %s (%d ports, %s)%s", s->name, s->nports, s->ina ? "INA" : "plain",
		       i + 1 < cfg.nswitches ? ";" : "\n");
	}
	sw_cfg_free(&cfg);
	return 0;
}

int main(int argc, char **argv)
{
	static struct sw_rt rt;
	struct app_args args = { 0 };
	char err[512];
	int sep = 0;

	for (int i = 1; i < argc && !sep; i++)
		if (!strcmp(argv[i], "--"))
			sep = i;
	if (!sep && argc == 3 && !strcmp(argv[1], "--check")) /* a config made elsewhere (inventory) */
		return check_only(argv[2]);
	if (!sep) {
		/* only --help / --version make sense without EAL options */
		for (int i = 1; i < argc; i++)
			if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "-V") ||
			    !strcmp(argv[i], "--version"))
				return parse_app_args(2, (char *[]){ argv[0], argv[i], NULL }, &args) ? 2 : 0;
		fprintf(stderr, "swemu: give EAL options, then -- and the switch options (swemu --help)\n");
		return 2;
	}
	argv[sep] = argv[0];
	if (parse_app_args(argc - sep, argv + sep, &args) < 0)
		return 2;
	if (sw_cfg_load(args.config, &rt.cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	if (args.stats)
		snprintf(rt.cfg.stats_file, sizeof(rt.cfg.stats_file), "%s", args.stats);
	if (args.prom)
		snprintf(rt.cfg.stats_prom_file, sizeof(rt.cfg.stats_prom_file), "%s", args.prom);
	rt.cfg_path = args.config;
	rt.quit = &quit_flag;
	rt.dump_stats = &dump_flag;

	/* before EAL and the ports start: a SIGTERM meanwhile then ends the
	 * run through the teardown below instead of leaving EAL's runtime
	 * directory behind (the loop returns at once on a set flag) */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	argv[sep] = "--";
	if (rte_eal_init(sep, argv) < 0) {
		fprintf(stderr, "swemu: EAL does not start: %s\n", rte_strerror(rte_errno));
		sw_cfg_free(&rt.cfg);
		return 1;
	}
	int rc = sw_rt_setup(&rt, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s\n", err);
		sw_cfg_free(&rt.cfg);
		sw_eal_cleanup();
		return rc == -ENODEV || rc == -EINVAL ? 2 : 1; /* the config names what is not there */
	}
	if (sw_telemetry_register(&rt) != 0)
		fprintf(stderr, "swemu: warning: telemetry commands not registered\n");

	/* idle sleeps of a few microseconds need a timer slack below the
	 * default 50 us */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

	if (sw_ctrl_start(&rt, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		sw_rt_teardown(&rt);
		sw_cfg_free(&rt.cfg);
		sw_eal_cleanup();
		return 1;
	}
	ctrl_wake_fd = rt.ctrl_wake;
	printf("swemu: %d switch(es) running from %s; SIGINT stops\n", rt.nsw, args.config);
	fflush(stdout);
	sw_dp_run(&rt);
	ctrl_wake_fd = -1;
	sw_ctrl_stop(&rt); /* after the lcores: they write its eventfd */

	char *final = sw_stats_json(&rt);
	sw_stats_dump(&rt);
	printf("%s\n", final ? final : "{}");
	free(final);
	sw_rt_teardown(&rt);
	sw_cfg_free(&rt.cfg);
	sw_eal_cleanup();
	return 0;
}
