/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu-trial-cfg: reads a trial file (configs/trial.cfg, nic/conf.h syntax) and
 * prints it as shell assignments for testbed/trial/trial.sh, with every default
 * filled in.  Any mistake ends with exit status 2 and "file:line: what is
 * wrong" — before anything is built.  Values are checked against a small
 * character set, so the output can be eval'ed as it is. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_env.h" /* HCL_INA_MAX_SHARDS */
#include "hcl_noise.h"
#include "psina_plan.h"
#include "parse.h"
#include "trial_cfg.h"

static const char *const known_algos[] = { "ring", "hier", "ps", "ps-ina", "agent-ring" };

static int check_algo(const struct trial *tr, const struct conf_node *e, const char *a)
{
	for (size_t k = 0; a && k < sizeof(known_algos) / sizeof(*known_algos); k++)
		if (!strcmp(a, known_algos[k]))
			return 0;
	return trial_fail(tr, e, "algorithm %s%s%s: want ring, hier, ps, ps-ina or agent-ring", a ? "\"" : "",
			  a ? a : "(not a string)", a ? "\"" : "");
}

static int check_size(const struct trial *tr, const struct conf_node *e, const char *z)
{
	uint64_t v;
	if (!z || !trial_safe(z) || parse_size(z, &v) < 0)
		return trial_fail(tr, e, "size %s: want a byte count such as \"256K\" or \"4M\"",
				  z ? z : "(not a string)");
	if (v < 4 || v > 256.0 * 1048576)
		return trial_fail(tr, e, "size \"%s\": must be from 4 bytes to 256M", z);
	return 0;
}

/* burst_loss = { p_good_bad; p_bad_good; loss_bad; }: every port's bursty
 * loss (swemu's Gilbert-Elliott model, docs/SWEMU.md). */
static int get_burst(const struct conf_node *t, struct trial *tr)
{
	static const char *const keys[] = { "p_good_bad", "p_bad_good", "loss_bad", NULL };
	const struct conf_node *b;
	double p[3];
	if (trial_number_group(tr, t, "burst_loss", keys, 3, 0, 1,
			       "{ p_good_bad = 0.01; p_bad_good = 0.3; loss_bad = 0.5; }", &b, p) < 0)
		return -1;
	if (!b)
		return 0;
	if (p[1] <= 0) /* the bad state would never end */
		return trial_fail(tr, conf_member(b, "p_bad_good"), "burst_loss: p_bad_good must be > 0");
	snprintf(tr->burst, sizeof(tr->burst), "%.6f,%.6f,%.6f", p[0], p[1], p[2]); /* as topo.sh reads them */
	return 0;
}

static int check_jitter(const struct trial *tr, const struct conf_node *t, const char *j)
{
	struct hcl_noise z;
	if (hcl_noise_parse_jitter(j, &z) == 0)
		return 0;
	return trial_fail(tr, conf_member(t, "jitter"),
			  "jitter = \"%s\": want normal:SD_MS, exp:MEAN_MS or hiccup:PROB:MS", j);
}

static int check_straggler(const struct trial *tr, const struct conf_node *t, const char *s, int world)
{
	double slow;
	if (hcl_noise_parse_stragglers(s, -1, world, &slow) == 0)
		return 0;
	return trial_fail(tr, conf_member(t, "straggler"),
			  "straggler = \"%s\": want RANK:FACTOR[,RANK:FACTOR], ranks 0..%d", s, world - 1);
}

static const char *const known_keys[] = { "name",	 "engine",	    "seed",
					  "racks",	 "hosts_per_rack",  "ina_racks",
					  "host_rate",	 "host_buffer",	    "pmd",
					  "uplink_rate", "uplink_buffer",   "oversubscription",
					  "loss",	 "compute_ms",	    "jitter",
					  "straggler",	 "algorithms",	    "sizes",
					  "iterations",	 "warmup",	    "pace",
					  "processes",	 "dtype",	    "ina_wire",
					  "ina_elems",	 "ina_slots",	    "ps_shards",
					  "timeout_ms",	 "repeats",	    "sweep_order",
					  "costs",	 "delay_us",	    "jitter_us",
					  "burst_loss",	 "rack_host_rates", "dilation",
					  "cpu_share",	 "capture",	    "capture_snaplen",
					  "workload",	 "ina_cc",	    "tor_partitions" };

/* Every setting of the group is one the runner knows: a misspelt one
 * would silently keep its default. */
static int known_only(const struct trial *tr, const struct conf_node *t)
{
	for (int i = 0; i < (int)t->n; i++) {
		const struct conf_node *e = conf_elem(t, (unsigned)i);
		bool ok = false;
		for (size_t k = 0; k < sizeof(known_keys) / sizeof(*known_keys); k++)
			ok |= !strcmp(e->name, known_keys[k]);
		if (!ok)
			return trial_fail(tr, e, "unknown setting '%s'", e->name);
	}
	return 0;
}

/* engine = "emulator" (the testbed: namespaces and swemu) or "sim" (the
 * same trial in ns-3, swemu-sim, at sizes this machine cannot emulate). */
static int get_engine(const struct conf_node *t, struct trial *tr)
{
	const char *e = "emulator";
	const struct conf_node *w;
	if (trial_get_str(tr, t, "engine", &e, &w) < 0)
		return -1;
	if (strcmp(e, "emulator") && strcmp(e, "sim"))
		return trial_fail(tr, w, "engine = \"%s\": want \"emulator\" or \"sim\"", e);
	tr->sim = !strcmp(e, "sim");
	tr->max_racks = tr->sim ? TRIAL_MAX_RACKS : EMU_MAX_RACKS;
	tr->max_world = tr->sim ? SIM_MAX_HOSTS : EMU_MAX_HOSTS;
	tr->max_rack = tr->sim ? SIM_MAX_RACK : EMU_MAX_HOSTS;
	return 0;
}

/* dtype: one the library sums; with a workload not bf16 (a profile's
 * buckets are fp32 gradients' bytes). */
static int check_dtype(struct trial *tr, const struct conf_node *d)
{
	if (strcmp(tr->dtype, "float") && strcmp(tr->dtype, "int32") && strcmp(tr->dtype, "bf16"))
		return trial_fail(tr, d, "dtype = \"%s\": want \"float\", \"bf16\" or \"int32\"", tr->dtype);
	if (*tr->workload.path && !strcmp(tr->dtype, "bf16"))
		return trial_fail(tr, d,
				  "dtype = \"bf16\" and workload: a profile's buckets are fp32 gradients' bytes");
	return 0;
}

/* With engine = "sim", a setting the simulator does not model is an
 * error where it differs from its default: a trial that silently ran
 * without it would answer another question.  The testbed's own settings
 * (ports, processes, dilation, captures) have no meaning there. */
static int sim_models(const struct conf_node *t, const struct trial *tr)
{
	static const char *const why = "the simulator (engine = \"sim\") does not model it (docs/SCALE.md)";
	const struct conf_node *s;
	if ((s = conf_member(t, "rack_host_rates")) || (s = conf_member(t, "burst_loss")) ||
	    (s = conf_member(t, "capture")) || (s = conf_member(t, "cpu_share")))
		return trial_fail(tr, s, "%s: %s", s->name, why);
	if (tr->jitter_us)
		return trial_fail(tr, conf_member(t, "jitter_us"), "jitter_us = %d: %s", tr->jitter_us, why);
	if (tr->dilation != 1)
		return trial_fail(tr, tr->dil, "dilation: %s; it runs the file's rates as they are", why);
	if (tr->processes)
		return trial_fail(tr, conf_member(t, "processes"), "processes = true: %s", why);
	if ((s = conf_member(t, "pmd")) && strcmp(tr->pmd, "af_packet"))
		return trial_fail(tr, s, "pmd = \"%s\": %s", tr->pmd, why);
	if (strcmp(tr->dtype, "float"))
		return trial_fail(tr, conf_member(t, "dtype"), "dtype = \"%s\": %s (it sums fp32)", tr->dtype, why);
	if (strcmp(tr->ina_wire, "fp32"))
		return trial_fail(tr, conf_member(t, "ina_wire"), "ina_wire = \"%s\": %s (it sends fp32)", tr->ina_wire,
				  why);
	return 0;
}

/* pace, processes and ina_cc: true or false. */
static int get_flags(const struct conf_node *t, struct trial *tr)
{
	if (conf_get_bool(&tr->rd, t, "pace", &tr->pace) < 0 ||
	    conf_get_bool(&tr->rd, t, "processes", &tr->processes) < 0 ||
	    conf_get_bool(&tr->rd, t, "ina_cc", &tr->ina_cc) < 0)
		return -1;
	return 0;
}

/* ps_shards: 1..the hosts; 0 one per host up to 16, and for ps-ina up
 * to 4 per rack where that is more (agent/psina_plan.h). */
static int get_shards(const struct conf_node *t, struct trial *tr)
{
	if (trial_get_int(tr, t, "ps_shards", 0, HCL_INA_MAX_SHARDS, &tr->ps_shards) < 0)
		return -1;
	if (tr->ps_shards > tr->world)
		return trial_fail(tr, conf_member(t, "ps_shards"), "ps_shards = %d: at most one per host (%d)",
				  tr->ps_shards, tr->world);
	tr->psina_shards = tr->ps_shards;
	if (tr->ps_shards == 0) {
		tr->ps_shards = (int)psina_auto_shards((unsigned)tr->world, (unsigned)tr->racks, false);
		tr->psina_shards = (int)psina_auto_shards((unsigned)tr->world, (unsigned)tr->racks, true);
	}
	return 0;
}

static int load(const struct conf *cf, struct trial *tr)
{
	const struct conf_node *t = conf_member(cf->root, "trial");
	if (!t || t->type != CONF_GROUP)
		return trial_fail(tr, t ? t : cf->root, "the file needs a group: trial = { ... };");
	if (known_only(tr, t) < 0)
		return -1;
	const struct conf_node *w;
	if (trial_get_str(tr, t, "name", &tr->name, &w) < 0)
		return -1;
	if (w && (!*tr->name || strlen(tr->name) > 32 || strpbrk(tr->name, ".:,")))
		return trial_fail(tr, w, "name: 1 to 32 letters, digits, - or _");
	if (get_engine(t, tr) < 0 || trial_get_dilation(t, tr) < 0 ||
	    trial_get_int(tr, t, "seed", 0, 1 << 30, &tr->seed) < 0 || trial_get_racks(t, tr) < 0)
		return -1;
	if (trial_get_rate(tr, t, "host_rate", 1e6, 1e12, &tr->host_rate) < 0 ||
	    trial_get_rate(tr, t, "uplink_rate", 1e6, 1e12, &tr->uplink_rate) < 0 ||
	    trial_get_rate(tr, t, "uplink_buffer", 1e3, 1e9, &tr->uplink_buffer) < 0 ||
	    trial_get_rate(tr, t, "host_buffer", 1e3, 1e9, &tr->host_buffer) < 0 ||
	    trial_get_num(tr, t, "oversubscription", 1, 64, &tr->oversub) < 0 ||
	    trial_get_num(tr, t, "loss", 0, 0.5, &tr->loss) < 0 ||
	    trial_get_num(tr, t, "compute_ms", 0, 60000, &tr->compute_ms) < 0 ||
	    trial_get_str(tr, t, "jitter", &tr->jitter, NULL) < 0 ||
	    trial_get_str(tr, t, "straggler", &tr->straggler, NULL) < 0 ||
	    trial_get_words(tr, t, "algorithms", "algorithm", "[\"ring\", \"ps-ina\"]", 5, check_algo, tr->algos,
			    sizeof(tr->algos)) < 0 ||
	    trial_get_words(tr, t, "sizes", "size", "[\"1M\", \"4M\"]", 12, check_size, tr->sizes, sizeof(tr->sizes)) <
		    0 ||
	    trial_get_int(tr, t, "iterations", 1, 10000, &tr->iterations) < 0 ||
	    trial_get_int(tr, t, "warmup", 0, 1000, &tr->warmup) < 0 ||
	    trial_get_int(tr, t, "timeout_ms", 1000, 3600000, &tr->timeout_ms) < 0 ||
	    trial_get_int(tr, t, "repeats", 1, 20, &tr->repeats) < 0 ||
	    trial_get_int(tr, t, "delay_us", 0, 1000000, &tr->delay_us) < 0 ||
	    trial_get_int(tr, t, "jitter_us", 0, 1000000, &tr->jitter_us) < 0 || get_burst(t, tr) < 0 ||
	    /* the testbed's ToRs take 2048 elements per packet; agent-ring's
	     * 2m-1 step jobs of two ranges must fit their 2048 slots */
	    trial_get_int(tr, t, "ina_elems", 1, 2048, &tr->ina_elems) < 0 ||
	    trial_get_int(tr, t, "ina_slots", 1, 32, &tr->ina_slots) < 0 || get_shards(t, tr) < 0 ||
	    trial_get_workload(t, tr) < 0)
		return -1;
	if (check_jitter(tr, t, tr->jitter) < 0 || check_straggler(tr, t, tr->straggler, tr->world) < 0)
		return -1;
	if (get_flags(t, tr) < 0)
		return -1;
	const struct conf_node *d;
	if (trial_get_str(tr, t, "dtype", &tr->dtype, &d) < 0)
		return -1;
	if (check_dtype(tr, d) < 0)
		return -1;
	const struct conf_node *iw;
	if (trial_get_str(tr, t, "ina_wire", &tr->ina_wire, &iw) < 0)
		return -1;
	if (strcmp(tr->ina_wire, "fp32") && strcmp(tr->ina_wire, "bfp") && strcmp(tr->ina_wire, "bf16"))
		return trial_fail(tr, iw, "ina_wire = \"%s\": want \"fp32\", \"bfp\" or \"bf16\"", tr->ina_wire);
	const struct conf_node *pm;
	if (trial_get_str(tr, t, "pmd", &tr->pmd, &pm) < 0)
		return -1;
	if (strcmp(tr->pmd, "af_packet") && strcmp(tr->pmd, "af_xdp"))
		return trial_fail(tr, pm, "pmd = \"%s\": want \"af_packet\" or \"af_xdp\"", tr->pmd);
	/* XDP on veth caps frames at 3000 bytes: an INA packet the host has to
	 * fragment is one the switch cannot aggregate.  512 elements (2 KiB
	 * and headers) fit for every wire format. */
	if (!strcmp(tr->pmd, "af_xdp")) {
		const struct conf_node *e = conf_member(t, "ina_elems");
		if (e && tr->ina_elems > 512)
			return trial_fail(tr, e,
					  "ina_elems = %d: af_xdp ports carry 3000-byte frames, at most 512 elements",
					  tr->ina_elems);
		if (!e)
			tr->ina_elems = 512;
	}
	if (trial_get_partitions(t, tr) < 0)
		return -1;
	const struct conf_node *o = conf_member(t, "oversubscription");
	if (o && conf_member(t, "uplink_rate"))
		return trial_fail(tr, o, "give uplink_rate or oversubscription, not both");
	snprintf(tr->uplinks, sizeof(tr->uplinks), "%s", tr->uplink_rate ? tr->uplink_rate : tr->host_rate);
	/* uplink = what the rack's hosts can send, divided: per rack when
	 * racks differ in size */
	for (int r = 0; o && r < (tr->uneven ? tr->racks : 1); r++) {
		uint64_t hr;
		parse_rate(tr->host_rate, &hr);
		double up = (double)hr * tr->size[r] / tr->oversub;
		if (up < 1e6) /* swemu's slowest link (NETEM_MIN_RATE) */
			return trial_fail(tr, o,
					  "rack %d's uplink would run at %.0f bit/s (host_rate x its hosts / "
					  "oversubscription); swemu's slowest link is 1M",
					  r, up);
		char one[32];
		trial_format_rate(up, one, sizeof(one));
		size_t l = r ? strlen(tr->uplinks) : 0;
		snprintf(tr->uplinks + l, sizeof(tr->uplinks) - l, "%s%s", r ? "," : "", one);
	}
	return tr->sim ? sim_models(t, tr) : 0;
}

/* A list of the racks' numbers or sizes, "0,2" (n of them, separated by sep). */
static void int_list(const int *v, const bool *only, int n, char sep, char *buf, size_t cap)
{
	const char between[2] = { sep, 0 };
	size_t l = 0;
	buf[0] = 0;
	for (int i = 0; i < n && l < cap; i++)
		if (!only || only[i])
			l += (size_t)snprintf(buf + l, cap - l, "%s%d", l ? between : "", v[i]);
}

/* The settings as shell assignments, for testbed/trial/trial.sh and the report. */
static void print_trial(const struct trial *tr, double k_given)
{
	int rack_no[TRIAL_MAX_RACKS];
	char ina[4 * TRIAL_MAX_RACKS], sizes[4 * TRIAL_MAX_RACKS], order[4 * TRIAL_MAX_RACKS], hosts[16];
	for (int r = 0; r < tr->racks; r++)
		rack_no[r] = r;
	int_list(rack_no, tr->ina, tr->racks, ',', ina, sizeof(ina));
	int_list(tr->size, NULL, tr->racks, ',', sizes, sizeof(sizes));
	int_list(tr->order, NULL, tr->racks, ' ', order, sizeof(order));
	snprintf(hosts, sizeof(hosts), "%d", tr->size[0]); /* as the file says it: one count, or the list */
	printf("T_ENGINE=%s\nT_WORLD=%d\nT_RACK_SIZES=%s\n", tr->sim ? "sim" : "emulator", tr->world, sizes);
	printf("T_NAME=%s\nT_SEED=%d\nT_RACKS=%d\nT_HOSTS=%s\nT_INA_RACKS=%s\nT_HOST_RATE=%s\nT_UPLINK_RATE=%s\n"
	       "T_UPLINK_BUFFER=%s\nT_HOST_BUFFER=%s\nT_PMD=%s\nT_LOSS=%g\nT_COMPUTE_MS=%g\nT_JITTER=%s\nT_STRAGGLER=%"
	       "s\nT_ALGOS='%s'\n"
	       "T_SIZES='%s'\nT_ITERATIONS=%d\nT_WARMUP=%d\nT_PACE=%d\nT_DTYPE=%s\nT_INA_WIRE=%s\nT_INA_ELEMS=%d\n"
	       "T_INA_SLOTS=%d\nT_PS_SHARDS=%d\nT_PSINA_SHARDS=%d\nT_TIMEOUT_MS=%d\nT_REPEATS=%d\n",
	       tr->name, tr->seed, tr->racks, tr->uneven ? sizes : hosts, *ina ? ina : "none", tr->host_rate,
	       tr->uplinks, tr->uplink_buffer, tr->host_buffer, tr->pmd, tr->loss, tr->compute_ms, tr->jitter,
	       tr->straggler, tr->algos, tr->sizes, tr->iterations, tr->warmup, tr->pace, tr->dtype, tr->ina_wire,
	       tr->ina_elems, tr->ina_slots, tr->ps_shards, tr->psina_shards, tr->timeout_ms, tr->repeats);
	printf("T_SWEEP=%d\nT_SWEEP_ORDER='%s'\nT_DELAY_US=%d\nT_JITTER_US=%d\nT_BURST_LOSS='%s'\nT_RACK_RATES='%s'\n",
	       tr->sweep, order, tr->delay_us, tr->jitter_us, tr->burst, tr->rack_rates);
	printf("T_CAPTURE='%s'\nT_CAPTURE_SNAPLEN=%d\nT_PROCESSES=%d\nT_INA_CC=%d\nT_TOR_PARTITIONS=%d\n", tr->capture,
	       tr->capture_snaplen, tr->processes, tr->ina_cc, tr->tor_partitions);
	/* "auto" with no --dilation: the runner calibrates, then asks again */
	if (k_given || tr->dilation)
		printf("T_DILATION=%g\n", k_given ? k_given : tr->dilation);
	else
		printf("T_DILATION=auto\n");
	printf("T_CPU_SHARE=%g\nT_EMU_HOST_RATE=%s\nT_EMU_UPLINK_RATE=%s\nT_EMU_RACK_RATES='%s'\nT_EMU_DELAY_US=%lld\n"
	       "T_EMU_JITTER_US=%lld\nT_EMU_COMPUTE_MS=%g\nT_EMU_JITTER=%s\n",
	       tr->cpu_share, tr->emu.host_rate, tr->emu.uplink_rate, tr->emu.rack_rates, tr->emu.delay_us,
	       tr->emu.jitter_us, tr->emu.compute_ms, tr->emu.jitter);
	if (*tr->workload.path)
		printf("T_WORKLOAD='%s'\nT_WORKLOAD_NAME=%s\nT_WORKLOAD_BUCKETS=%u\nT_WORKLOAD_BYTES=%llu\n"
		       "T_WORKLOAD_MAX_BYTES=%llu\nT_WORKLOAD_FWD_MS=%g\nT_WORKLOAD_BWD_MS=%g\n",
		       tr->workload.path, tr->workload.model, tr->workload.buckets, tr->workload.bytes,
		       tr->workload.max_bytes, tr->workload.fwd_ms, tr->workload.bwd_ms);
	if (tr->costs)
		printf("T_COST_INA_TOR=%g\nT_COST_PLAIN_TOR=%g\nT_COST_HOST=%g\nT_COST_INA_POWER=%g\n", tr->cost[0],
		       tr->cost[1], tr->cost[2], tr->cost[3]);
}

int main(int argc, char **argv)
{
	/* the rate and size grammars, for scripts (testbed/topo/topo.sh, bench-peers.sh) */
	if (argc == 3 && (!strcmp(argv[1], "--rate") || !strcmp(argv[1], "--size"))) {
		uint64_t v;
		bool rate = !strcmp(argv[1], "--rate");
		if ((rate ? parse_rate(argv[2], &v) : parse_size(argv[2], &v)) < 0) {
			fprintf(stderr, "swemu-trial-cfg: '%s' is not a %s\n", argv[2],
				rate ? "rate such as 200M or 10G" : "size such as 256K or 4M");
			return 2;
		}
		printf("%llu\n", (unsigned long long)v);
		return 0;
	}
	double k_given = 0; /* --dilation K: the factor the runner calibrated */
	if (argc == 4 && !strcmp(argv[1], "--dilation")) {
		if (parse_double(argv[2], 1, 1e6, &k_given) < 0) {
			fprintf(stderr, "swemu-trial-cfg: --dilation '%s': want a factor from 1 to 1e6\n", argv[2]);
			return 2;
		}
		argv += 2;
		argc -= 2;
	}
	if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(argc == 2 ? stdout : stderr,
			"usage: swemu-trial-cfg [--dilation K] TRIAL_FILE\n"
			"       swemu-trial-cfg --rate RATE | --size SIZE\n"
			"  Checks a trial file (configs/trial.cfg shows every setting) and prints it as\n"
			"  shell assignments with the defaults filled in; exit 2 and file:line on a mistake.\n"
			"  T_EMU_* are the values the testbed runs at: the file's rates / K and its delays\n"
			"  and compute times x K (time dilation; K from the file, or --dilation K for a\n"
			"  file with dilation = \"auto\", which the runner calibrates).\n"
			"  --rate prints RATE (\"200M\", \"2.5G\") in bit/s as swemu reads it, --size\n"
			"  SIZE (\"256K\", \"4M\") in bytes (powers of 1024).\n"
			"  With engine = \"sim\" the trial runs in the simulator (swemu-sim, docs/SCALE.md).\n");
		return argc == 2 ? 0 : 2;
	}
	struct trial tr = { .name = "trial",
			    .seed = 1,
			    .racks = 2,
			    .iterations = 10,
			    .warmup = 2,
			    .timeout_ms = 120000,
			    .repeats = 3,
			    .host_rate = "200M",
			    .uplink_rate = NULL,
			    .uplink_buffer = "",
			    .host_buffer = "",
			    .pmd = "af_packet",
			    .tor_partitions = 1,
			    .jitter = "",
			    .straggler = "",
			    .dtype = "float",
			    .ina_wire = "fp32",
			    .ina_elems = 2048,
			    .ina_slots = 8,
			    .ps_shards = 0,
			    .algos = "ring hier ps ps-ina agent-ring",
			    .sizes = "1M 4M",
			    .dilation = 1,
			    .cpu_share = 0.8 };
	tr.rd = (struct conf_reader){ .source = argv[1], .err = tr.err, .errlen = sizeof(tr.err) };
	struct conf cf;
	if (conf_load(tr.rd.source, &cf, tr.err, sizeof(tr.err)) < 0) {
		fprintf(stderr, "%s\n", tr.err);
		return 2;
	}
	if (load(&cf, &tr) < 0 || trial_apply_dilation(&tr, k_given ? k_given : tr.dilation ? tr.dilation : 1) < 0) {
		fprintf(stderr, "%s\n", tr.err);
		conf_free(&cf);
		return 2;
	}
	print_trial(&tr, k_given);
	conf_free(&cf);
	return 0;
}
