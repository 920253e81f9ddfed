/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu-trial-cfg: reads a trial file (configs/trial.cfg, nic/conf.h syntax) and
 * prints it as shell assignments for testbed/trial.sh, with every default
 * filled in.  Any mistake ends with exit status 2 and "file:line: what is
 * wrong" — before anything is built.  Values are checked against a small
 * character set, so the output can be eval'ed as it is. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "hcl_noise.h"
#include "parse.h"

#define MAX_HOSTS 16 /* what two cores carry: ranks plus software members */

struct trial {
	const char *name;
	int seed, racks, iterations, warmup, timeout_ms, repeats;
	int ina_elems, ina_slots, ps_shards;
	bool ina[8];
	bool sweep;	/* ina_racks = "sweep": every deployment 0..racks, in sweep_order */
	int order[8];	/* racks in the order they get INA ToRs */
	bool costs;	/* a costs group: prices of the hardware */
	double cost[4]; /* ina_tor, plain_tor, host, ina_tor_power */
	const char *host_rate, *uplink_rate, *uplink_buffer, *host_buffer, *jitter, *straggler, *dtype, *pmd, *ina_wire;
	double loss, compute_ms, oversub;
	int delay_us, jitter_us; /* every egress port's emulated propagation delay and jitter */
	char burst[64];		 /* Gilbert-Elliott loss "p_good_bad,p_bad_good,loss_bad", or "" */
	char rack_rates[128];	 /* each rack's host link rate, "R0,R1,...", or "": host_rate */
	bool pace;
	bool processes; /* one swemu process per switch, joined by veth links */
	char algos[128], sizes[256];
	int size[8], world; /* hosts per rack (hosts_per_rack: one for all, or a list), their sum */
	bool uneven;	    /* hosts_per_rack was a list */
	char uplinks[160];  /* each rack's uplink rate, "R" (all alike) or "R0,R1,..." */
	char capture[256];  /* switches and ports to capture, "tor0 tor1.up", or "" */
	int capture_snaplen;
	/* time dilation: the file's rates, delays and compute times are the
	 * real cluster's; the testbed runs rates / k and times x k */
	double dilation;	     /* k >= 1; 0 = "auto" (the runner calibrates) */
	double cpu_share;	     /* what calibration may let the machine's CPU reach */
	const struct conf_node *dil; /* where dilation was set, for errors at k */
	struct emulated {	     /* the values the testbed runs at */
		char host_rate[32], uplink_rate[160], rack_rates[160], jitter[64];
		long long delay_us, jitter_us;
		double compute_ms;
	} emu;
};

static char err[512];
static struct conf_reader rd = { .err = err, .errlen = sizeof(err) };

__attribute__((format(printf, 2, 3))) static int bad(const struct conf_node *s, const char *fmt, ...)
{
	va_list ap;
	int line = s && s->line ? s->line : 1; /* the root has no line: the file's start */
	int n = snprintf(err, sizeof(err), "%s:%d: ", rd.source, line);
	va_start(ap, fmt);
	vsnprintf(err + n, sizeof(err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* lists are kept as space-separated words, as the runner reads them */
static bool has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = strstr(list, w); p; p = strstr(p + 1, w))
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

static void append_word(char *list, size_t cap, const char *w)
{
	size_t l = strlen(list);
	snprintf(list + l, cap - l, "%s%s", l ? " " : "", w);
}

static bool safe(const char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(".:,_-", *s))
			return false;
	return true;
}

static int get_int(const struct conf_node *t, const char *key, int lo, int hi, int *v)
{
	long long x = *v;
	if (conf_get_int(&rd, t, key, lo, hi, false, &x) < 0)
		return -1;
	*v = (int)x;
	return 0;
}

static int get_num(const struct conf_node *t, const char *key, double lo, double hi, double *v)
{
	return conf_get_num(&rd, t, key, lo, hi, v);
}

static int get_str(const struct conf_node *t, const char *key, const char **v, const struct conf_node **where)
{
	if (where)
		*where = conf_member(t, key);
	if (conf_get_str(&rd, t, key, false, v) < 0)
		return -1;
	if (conf_member(t, key) && !safe(*v))
		return bad(conf_member(t, key), "%s = \"%s\": only letters, digits and . : , _ - are allowed", key, *v);
	return 0;
}

static int get_rate(const struct conf_node *t, const char *key, double lo, double hi, const char **v)
{
	const struct conf_node *s;
	if (get_str(t, key, v, &s) < 0)
		return -1;
	uint64_t x;
	bool buffer = strstr(key, "buffer") != NULL; /* a size as swemu reads it (64K = 65536), else a rate */
	if (s && !**v && buffer)
		return 0; /* "": the switch's default queue */
	if (s && ((buffer ? parse_size(*v, &x) : parse_rate(*v, &x)) < 0 || x < lo || x > hi))
		return bad(s, "%s = \"%s\": want a number with K, M or G, from %g to %g", key, *v, lo, hi);
	return 0;
}

/* A rate in bit/s as the rate grammar reads it, as short as it is exact. */
static void format_rate(double bps, char *buf, size_t cap)
{
	long long x = llround(bps);
	if (x >= 1000000000 && x % 1000000000 == 0)
		snprintf(buf, cap, "%lldG", x / 1000000000);
	else if (x >= 1000000 && x % 1000000 == 0)
		snprintf(buf, cap, "%lldM", x / 1000000);
	else if (x >= 1000 && x % 1000 == 0)
		snprintf(buf, cap, "%lldK", x / 1000);
	else
		snprintf(buf, cap, "%lld", x);
}

static const char *const known_algos[] = { "ring", "hier", "ps", "ps-ina", "agent-ring" };

static int check_algo(const struct conf_node *e, const char *a)
{
	for (size_t k = 0; a && k < sizeof(known_algos) / sizeof(*known_algos); k++)
		if (!strcmp(a, known_algos[k]))
			return 0;
	return bad(e, "algorithm %s%s%s: want ring, hier, ps, ps-ina or agent-ring", a ? "\"" : "",
		   a ? a : "(not a string)", a ? "\"" : "");
}

static int check_size(const struct conf_node *e, const char *z)
{
	uint64_t v;
	if (!z || !safe(z) || parse_size(z, &v) < 0)
		return bad(e, "size %s: want a byte count such as \"256K\" or \"4M\"", z ? z : "(not a string)");
	if (v < 4 || v > 256.0 * 1048576)
		return bad(e, "size \"%s\": must be from 4 bytes to 256M", z);
	return 0;
}

/* A list setting of 1..max distinct strings, each passed by check(), kept
 * as space-separated words in list (left as it is if the key is absent). */
static int get_words(const struct conf_node *t, const char *key, const char *what, const char *example, int max,
		     int (*check)(const struct conf_node *e, const char *w), char *list, size_t cap)
{
	const struct conf_node *s = conf_member(t, key);
	if (!s)
		return 0;
	if (s->type != CONF_ARRAY && s->type != CONF_LIST)
		return bad(s, "%s must be a list such as %s", key, example);
	int n = (int)s->n;
	if (n == 0 || n > max)
		return bad(s, "%s: give 1 to %d of them", key, max);
	list[0] = 0;
	for (int i = 0; i < n; i++) {
		const struct conf_node *e = conf_elem(s, (unsigned)i);
		const char *w = conf_string(e);
		if (check(e, w) < 0)
			return -1;
		if (has_word(list, w))
			return bad(e, "%s \"%s\" is listed twice", what, w);
		append_word(list, cap, w);
	}
	return 0;
}

static int get_ina(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "ina_racks");
	for (int r = 0; r < tr->racks; r++)
		tr->ina[r] = true; /* default: every ToR INA-capable */
	if (!s)
		return 0;
	if (s->type == CONF_STRING) {
		const char *v = conf_string(s);
		if (strcmp(v, "all") && strcmp(v, "none") && strcmp(v, "sweep"))
			return bad(s, "ina_racks = \"%s\": want \"all\", \"none\", \"sweep\" or a list of rack numbers",
				   v);
		tr->sweep = !strcmp(v, "sweep"); /* its main runs: every rack INA */
		for (int r = 0; r < tr->racks; r++)
			tr->ina[r] = strcmp(v, "none") != 0;
		return 0;
	}
	if (s->type != CONF_ARRAY && s->type != CONF_LIST)
		return bad(s, "ina_racks: want \"all\", \"none\", \"sweep\" or a list of rack numbers");
	memset(tr->ina, 0, sizeof(tr->ina));
	for (int i = 0; i < (int)s->n; i++) {
		const struct conf_node *e = conf_elem(s, (unsigned)i);
		if (e->type != CONF_INT)
			return bad(e, "ina_racks: rack numbers are integers");
		long long r = e->v.i;
		if (r < 0 || r >= tr->racks)
			return bad(e, "ina_racks: rack %lld does not exist (racks = %d)", r, tr->racks);
		if (tr->ina[r])
			return bad(e, "ina_racks: rack %lld is listed twice", r);
		tr->ina[r] = true;
	}
	return 0;
}

/* sweep_order: every rack once, the order INA ToRs replace plain ones
 * (default 0, 1, ...); only with ina_racks = "sweep". */
static int get_order(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "sweep_order");
	for (int r = 0; r < tr->racks; r++)
		tr->order[r] = r;
	if (!s)
		return 0;
	if (!tr->sweep)
		return bad(s, "sweep_order needs ina_racks = \"sweep\"");
	if ((s->type != CONF_ARRAY && s->type != CONF_LIST) || (int)s->n != tr->racks)
		return bad(s, "sweep_order: want a list of all %d racks in the order they get INA", tr->racks);
	bool seen[8] = { false };
	for (int i = 0; i < tr->racks; i++) {
		const struct conf_node *e = conf_elem(s, (unsigned)i);
		if (e->type != CONF_INT || e->v.i < 0 || e->v.i >= tr->racks)
			return bad(e, "sweep_order: rack numbers are 0..%d", tr->racks - 1);
		if (seen[e->v.i])
			return bad(e, "sweep_order: rack %lld is listed twice", e->v.i);
		seen[e->v.i] = true;
		tr->order[i] = (int)e->v.i;
	}
	return 0;
}

/* A group setting of numbers in lo..hi: keys (NULL-terminated), of which
 * the first `required` must be there; example shows the form in errors.
 * 0 with *g NULL when the setting is absent. */
static int number_group(const struct conf_node *t, const char *key, const char *const *keys, int required, double lo,
			double hi, const char *example, const struct conf_node **g, double *v)
{
	*g = conf_member(t, key);
	if (!*g)
		return 0;
	if ((*g)->type != CONF_GROUP)
		return bad(*g, "%s: want a group such as %s", key, example);
	if (conf_only_keys(&rd, *g, keys) < 0)
		return -1;
	for (int k = 0; keys[k]; k++) {
		if (k < required && !conf_member(*g, keys[k]))
			return bad(*g, "%s: missing %s", key, keys[k]);
		if (get_num(*g, keys[k], lo, hi, &v[k]) < 0)
			return -1;
	}
	return 0;
}

/* costs = { ina_tor; plain_tor; host; [ina_tor_power] }: what a deployment
 * costs, in any one currency (the report names none). */
static int get_costs(const struct conf_node *t, struct trial *tr)
{
	static const char *const keys[] = { "ina_tor", "plain_tor", "host", "ina_tor_power", NULL };
	const struct conf_node *c;
	if (number_group(t, "costs", keys, 3, 0, 1e12, "{ ina_tor = 30000; plain_tor = 12000; host = 25000; }", &c,
			 tr->cost) < 0)
		return -1;
	if (!c)
		return 0;
	if (tr->cost[1] * tr->racks + tr->cost[2] * tr->world <= 0)
		return bad(c, "costs: a deployment without INA would cost nothing");
	tr->costs = true;
	return 0;
}

/* burst_loss = { p_good_bad; p_bad_good; loss_bad; }: every port's bursty
 * loss (swemu's Gilbert-Elliott model, docs/SWEMU.md). */
static int get_burst(const struct conf_node *t, struct trial *tr)
{
	static const char *const keys[] = { "p_good_bad", "p_bad_good", "loss_bad", NULL };
	const struct conf_node *b;
	double p[3];
	if (number_group(t, "burst_loss", keys, 3, 0, 1, "{ p_good_bad = 0.01; p_bad_good = 0.3; loss_bad = 0.5; }", &b,
			 p) < 0)
		return -1;
	if (!b)
		return 0;
	if (p[1] <= 0) /* the bad state would never end */
		return bad(conf_member(b, "p_bad_good"), "burst_loss: p_bad_good must be > 0");
	snprintf(tr->burst, sizeof(tr->burst), "%.6f,%.6f,%.6f", p[0], p[1], p[2]); /* as topo.sh reads them */
	return 0;
}

/* rack_host_rates = ["200M", "100M", ...]: one rate per rack for its host
 * links (an older rack), in place of host_rate. */
static int get_rack_rates(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "rack_host_rates");
	if (!s)
		return 0;
	if ((s->type != CONF_ARRAY && s->type != CONF_LIST) || (int)s->n != tr->racks)
		return bad(s, "rack_host_rates: want one rate per rack (%d), such as [\"200M\", \"100M\"]", tr->racks);
	for (int r = 0; r < tr->racks; r++) {
		const struct conf_node *e = conf_elem(s, (unsigned)r);
		const char *v = conf_string(e);
		uint64_t x;
		if (!v || !safe(v) || parse_rate(v, &x) < 0 || x < 1e6 || x > 1e12)
			return bad(e, "rack_host_rates: entry %d is not a rate from 1M to 1T", r);
		size_t l = strlen(tr->rack_rates);
		snprintf(tr->rack_rates + l, sizeof(tr->rack_rates) - l, "%s%s", r ? "," : "", v);
	}
	return 0;
}

static int check_jitter(const struct conf_node *t, const char *j)
{
	struct hcl_noise z;
	if (hcl_noise_parse_jitter(j, &z) == 0)
		return 0;
	return bad(conf_member(t, "jitter"), "jitter = \"%s\": want normal:SD_MS, exp:MEAN_MS or hiccup:PROB:MS", j);
}

static int check_straggler(const struct conf_node *t, const char *s, int world)
{
	double slow;
	if (hcl_noise_parse_stragglers(s, -1, world, &slow) == 0)
		return 0;
	return bad(conf_member(t, "straggler"), "straggler = \"%s\": want RANK:FACTOR[,RANK:FACTOR], ranks 0..%d", s,
		   world - 1);
}

/* hosts_per_rack = N (every rack) or [N0, N1, ...] (one per rack). */
static int get_rack_sizes(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "hosts_per_rack");
	tr->world = 0;
	if (s && (s->type == CONF_ARRAY || s->type == CONF_LIST)) {
		if ((int)s->n != tr->racks)
			return bad(s, "hosts_per_rack: want one host count per rack (%d), such as [4, 2]", tr->racks);
		for (int r = 0; r < tr->racks; r++) {
			const struct conf_node *e = conf_elem(s, (unsigned)r);
			if (e->type != CONF_INT || e->v.i < 1 || e->v.i > MAX_HOSTS)
				return bad(e, "hosts_per_rack: entry %d is not a host count from 1 to %d", r,
					   MAX_HOSTS);
			tr->size[r] = (int)e->v.i;
			tr->uneven |= tr->size[r] != tr->size[0];
		}
	} else {
		int n = 4;
		if (get_int(t, "hosts_per_rack", 1, MAX_HOSTS, &n) < 0)
			return -1;
		for (int r = 0; r < tr->racks; r++)
			tr->size[r] = n;
	}
	for (int r = 0; r < tr->racks; r++)
		tr->world += tr->size[r];
	if (tr->world < 2 || tr->world > MAX_HOSTS)
		return bad(s ? s : t, "racks x hosts_per_rack = %d hosts: must be from 2 to %d on this testbed",
			   tr->world, MAX_HOSTS);
	return 0;
}

/* A capture entry: "torR", "spine", or one of their ports ("tor0.h1",
 * "tor1.up", "spine.t0"), as topo.sh names them. */
static bool capture_target(const struct trial *tr, const char *w)
{
	char sw[16];
	const char *dot = strchr(w, '.');
	size_t n = dot ? (size_t)(dot - w) : strlen(w);
	if (n >= sizeof(sw))
		return false;
	memcpy(sw, w, n);
	sw[n] = 0;
	int r = -1, first = 0, k = -1;
	char c;
	if (!strcmp(sw, "spine")) {
		if (tr->racks < 2)
			return false;
	} else if (sscanf(sw, "tor%d%c", &r, &c) != 1 || r < 0 || r >= tr->racks) {
		return false;
	}
	if (!dot)
		return true;
	for (int i = 0; i < r; i++)
		first += tr->size[i];
	if (r < 0) /* the spine's ports: t0 .. t(R-1) */
		return sscanf(dot + 1, "t%d%c", &k, &c) == 1 && k >= 0 && k < tr->racks;
	if (!strcmp(dot + 1, "up"))
		return tr->racks > 1;
	return sscanf(dot + 1, "h%d%c", &k, &c) == 1 && k >= first && k < first + tr->size[r];
}

/* capture = ["tor0", "tor1.up", ...]: what the trial's switches write to
 * pcapng files (docs/TRIAL.md); capture_snaplen bytes of each frame. */
static int get_capture(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *s = conf_member(t, "capture");
	tr->capture_snaplen = 128;
	if (get_int(t, "capture_snaplen", 64, 65535, &tr->capture_snaplen) < 0)
		return -1;
	if (!s)
		return conf_member(t, "capture_snaplen")
			       ? bad(conf_member(t, "capture_snaplen"), "capture_snaplen needs capture")
			       : 0;
	if ((s->type != CONF_ARRAY && s->type != CONF_LIST) || s->n == 0 || s->n > 16)
		return bad(s, "capture: want a list of 1 to 16 switches or ports, such as [\"tor0\", \"tor1.up\"]");
	for (unsigned i = 0; i < s->n; i++) {
		const struct conf_node *e = conf_elem(s, i);
		const char *w = conf_string(e);
		if (!w || !safe(w) || !capture_target(tr, w))
			return bad(
				e,
				"capture: %s%s%s is not a switch or port of this trial (torR, spine, torR.hI, torR.up, "
				"spine.tR)",
				w ? "\"" : "", w ? w : "(not a string)", w ? "\"" : "");
		if (has_word(tr->capture, w))
			return bad(e, "capture: \"%s\" is listed twice", w);
		append_word(tr->capture, sizeof(tr->capture), w);
	}
	return 0;
}

/* dilation = K (>= 1) or "auto"; cpu_share only with "auto". */
static int get_dilation(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *d = conf_member(t, "dilation"), *c = conf_member(t, "cpu_share");
	tr->dil = d;
	if (d && d->type == CONF_STRING) {
		if (strcmp(conf_string(d), "auto"))
			return bad(d, "dilation = \"%s\": want a factor >= 1 or \"auto\"", conf_string(d));
		tr->dilation = 0;
	} else if (get_num(t, "dilation", 1, 1e6, &tr->dilation) < 0) {
		return -1;
	}
	if (c && tr->dilation != 0)
		return bad(c, "cpu_share needs dilation = \"auto\" (it bounds the calibration)");
	return get_num(t, "cpu_share", 0.05, 1, &tr->cpu_share);
}

/* One rate of the file divided by k, within what the testbed's links take. */
static int dilate_rate(const struct trial *tr, const char *key, const char *real, double k, char *buf, size_t cap)
{
	uint64_t x;
	parse_rate(real, &x);
	double e = (double)x / k;
	if (e < 1e6 || e > 1e11)
		return bad(tr->dil,
			   "at dilation %g, %s %s would run at %.0f bit/s: the testbed's links take 1M to 100G", k, key,
			   real, e);
	format_rate(e, buf, cap);
	return 0;
}

/* A list of rates "R0,R1,..." each divided by k, into out. */
static int dilate_list(const struct trial *tr, const char *key, const char *list, double k, char *out, size_t cap)
{
	char one[32], rates[160];
	snprintf(rates, sizeof(rates), "%s", list);
	out[0] = 0;
	for (char *save, *r = strtok_r(rates, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
		if (dilate_rate(tr, key, r, k, one, sizeof(one)) < 0)
			return -1;
		size_t l = strlen(out);
		snprintf(out + l, cap - l, "%s%s", l ? "," : "", one);
	}
	return 0;
}

/* The values the testbed runs at: rates / k, delays and compute times x k
 * (the compute noise with them); k = 1 leaves the file's values. */
static int apply_dilation(struct trial *tr, double k)
{
	struct emulated *e = &tr->emu;
	if (dilate_rate(tr, "host_rate", tr->host_rate, k, e->host_rate, sizeof(e->host_rate)) < 0 ||
	    dilate_list(tr, "an uplink rate", tr->uplinks, k, e->uplink_rate, sizeof(e->uplink_rate)) < 0 ||
	    dilate_list(tr, "a rack_host_rates entry", tr->rack_rates, k, e->rack_rates, sizeof(e->rack_rates)) < 0)
		return -1;
	e->delay_us = llround(tr->delay_us * k);
	e->jitter_us = llround(tr->jitter_us * k);
	e->compute_ms = tr->compute_ms * k;
	if (e->delay_us > 10000000 || e->jitter_us > 10000000 || e->compute_ms > 3600000)
		return bad(tr->dil,
			   "at dilation %g, a delay (swemu's limit 10 s) or compute time (one hour) is too long", k);
	struct hcl_noise z;
	hcl_noise_parse_jitter(tr->jitter, &z); /* checked already */
	if (z.kind == 'n')
		snprintf(e->jitter, sizeof(e->jitter), "normal:%g", z.a * k);
	else if (z.kind == 'e')
		snprintf(e->jitter, sizeof(e->jitter), "exp:%g", z.a * k);
	else if (z.kind == 'h')
		snprintf(e->jitter, sizeof(e->jitter), "hiccup:%g:%g", z.a, z.b * k);
	else
		e->jitter[0] = 0;
	return 0;
}

static const char *const known_keys[] = { "name",
					  "seed",
					  "racks",
					  "hosts_per_rack",
					  "ina_racks",
					  "host_rate",
					  "host_buffer",
					  "pmd",
					  "uplink_rate",
					  "uplink_buffer",
					  "oversubscription",
					  "loss",
					  "compute_ms",
					  "jitter",
					  "straggler",
					  "algorithms",
					  "sizes",
					  "iterations",
					  "warmup",
					  "pace",
					  "processes",
					  "dtype",
					  "ina_wire",
					  "ina_elems",
					  "ina_slots",
					  "ps_shards",
					  "timeout_ms",
					  "repeats",
					  "sweep_order",
					  "costs",
					  "delay_us",
					  "jitter_us",
					  "burst_loss",
					  "rack_host_rates",
					  "dilation",
					  "cpu_share",
					  "capture",
					  "capture_snaplen" };

/* Every setting of the group is one the runner knows: a misspelt one
 * would silently keep its default. */
static int known_only(const struct conf_node *t)
{
	for (int i = 0; i < (int)t->n; i++) {
		const struct conf_node *e = conf_elem(t, (unsigned)i);
		bool ok = false;
		for (size_t k = 0; k < sizeof(known_keys) / sizeof(*known_keys); k++)
			ok |= !strcmp(e->name, known_keys[k]);
		if (!ok)
			return bad(e, "unknown setting '%s'", e->name);
	}
	return 0;
}

static int load(const struct conf *cf, struct trial *tr)
{
	const struct conf_node *t = conf_member(cf->root, "trial");
	if (!t || t->type != CONF_GROUP)
		return bad(t ? t : cf->root, "the file needs a group: trial = { ... };");
	if (known_only(t) < 0)
		return -1;
	const struct conf_node *w;
	if (get_str(t, "name", &tr->name, &w) < 0)
		return -1;
	if (w && (!*tr->name || strlen(tr->name) > 32 || strpbrk(tr->name, ".:,")))
		return bad(w, "name: 1 to 32 letters, digits, - or _");
	if (get_dilation(t, tr) < 0 || get_int(t, "seed", 0, 1 << 30, &tr->seed) < 0 ||
	    get_int(t, "racks", 1, 8, &tr->racks) < 0 || get_rack_sizes(t, tr) < 0)
		return -1;
	if (get_ina(t, tr) < 0 || get_order(t, tr) < 0 || get_costs(t, tr) < 0 ||
	    get_rate(t, "host_rate", 1e6, 1e12, &tr->host_rate) < 0 ||
	    get_rate(t, "uplink_rate", 1e6, 1e12, &tr->uplink_rate) < 0 ||
	    get_rate(t, "uplink_buffer", 1e3, 1e9, &tr->uplink_buffer) < 0 ||
	    get_rate(t, "host_buffer", 1e3, 1e9, &tr->host_buffer) < 0 ||
	    get_num(t, "oversubscription", 1, 64, &tr->oversub) < 0 || get_num(t, "loss", 0, 0.5, &tr->loss) < 0 ||
	    get_num(t, "compute_ms", 0, 60000, &tr->compute_ms) < 0 || get_str(t, "jitter", &tr->jitter, NULL) < 0 ||
	    get_str(t, "straggler", &tr->straggler, NULL) < 0 ||
	    get_words(t, "algorithms", "algorithm", "[\"ring\", \"ps-ina\"]", 5, check_algo, tr->algos,
		      sizeof(tr->algos)) < 0 ||
	    get_words(t, "sizes", "size", "[\"1M\", \"4M\"]", 12, check_size, tr->sizes, sizeof(tr->sizes)) < 0 ||
	    get_int(t, "iterations", 1, 10000, &tr->iterations) < 0 || get_int(t, "warmup", 0, 1000, &tr->warmup) < 0 ||
	    get_int(t, "timeout_ms", 1000, 3600000, &tr->timeout_ms) < 0 ||
	    get_int(t, "repeats", 1, 20, &tr->repeats) < 0 || get_int(t, "delay_us", 0, 1000000, &tr->delay_us) < 0 ||
	    get_int(t, "jitter_us", 0, 1000000, &tr->jitter_us) < 0 || get_burst(t, tr) < 0 ||
	    get_rack_rates(t, tr) < 0 || get_capture(t, tr) < 0 ||
	    /* the testbed's ToRs take 2048 elements per packet; agent-ring's
	     * 2m-1 step jobs of two ranges must fit their 2048 slots */
	    get_int(t, "ina_elems", 1, 2048, &tr->ina_elems) < 0 ||
	    get_int(t, "ina_slots", 1, 32, &tr->ina_slots) < 0 || get_int(t, "ps_shards", 0, 16, &tr->ps_shards) < 0)
		return -1;
	/* 0: one shard per host, as many as the library takes */
	int world = tr->world;
	if (tr->ps_shards > world)
		return bad(conf_member(t, "ps_shards"), "ps_shards = %d: at most one per host (%d)", tr->ps_shards,
			   world);
	if (tr->ps_shards == 0)
		tr->ps_shards = world < 16 ? world : 16;
	if (check_jitter(t, tr->jitter) < 0 || check_straggler(t, tr->straggler, tr->world) < 0)
		return -1;
	if (conf_get_bool(&rd, t, "pace", &tr->pace) < 0 || conf_get_bool(&rd, t, "processes", &tr->processes) < 0)
		return -1;
	const struct conf_node *d;
	if (get_str(t, "dtype", &tr->dtype, &d) < 0)
		return -1;
	if (strcmp(tr->dtype, "float") && strcmp(tr->dtype, "int32") && strcmp(tr->dtype, "bf16"))
		return bad(d, "dtype = \"%s\": want \"float\", \"bf16\" or \"int32\"", tr->dtype);
	const struct conf_node *iw;
	if (get_str(t, "ina_wire", &tr->ina_wire, &iw) < 0)
		return -1;
	if (strcmp(tr->ina_wire, "fp32") && strcmp(tr->ina_wire, "bfp") && strcmp(tr->ina_wire, "bf16"))
		return bad(iw, "ina_wire = \"%s\": want \"fp32\", \"bfp\" or \"bf16\"", tr->ina_wire);
	const struct conf_node *pm;
	if (get_str(t, "pmd", &tr->pmd, &pm) < 0)
		return -1;
	if (strcmp(tr->pmd, "af_packet") && strcmp(tr->pmd, "af_xdp"))
		return bad(pm, "pmd = \"%s\": want \"af_packet\" or \"af_xdp\"", tr->pmd);
	/* XDP on veth caps frames at 3000 bytes: an INA packet the host has to
	 * fragment is one the switch cannot aggregate.  512 elements (2 KiB
	 * and headers) fit for every wire format. */
	if (!strcmp(tr->pmd, "af_xdp")) {
		const struct conf_node *e = conf_member(t, "ina_elems");
		if (e && tr->ina_elems > 512)
			return bad(e, "ina_elems = %d: af_xdp ports carry 3000-byte frames, at most 512 elements",
				   tr->ina_elems);
		if (!e)
			tr->ina_elems = 512;
	}
	const struct conf_node *o = conf_member(t, "oversubscription");
	if (o && conf_member(t, "uplink_rate"))
		return bad(o, "give uplink_rate or oversubscription, not both");
	snprintf(tr->uplinks, sizeof(tr->uplinks), "%s", tr->uplink_rate ? tr->uplink_rate : tr->host_rate);
	/* uplink = what the rack's hosts can send, divided: per rack when
	 * racks differ in size */
	for (int r = 0; o && r < (tr->uneven ? tr->racks : 1); r++) {
		uint64_t hr;
		parse_rate(tr->host_rate, &hr);
		double up = (double)hr * tr->size[r] / tr->oversub;
		if (up < 1e6) /* swemu's slowest link (NETEM_MIN_RATE) */
			return bad(o,
				   "rack %d's uplink would run at %.0f bit/s (host_rate x its hosts / "
				   "oversubscription); swemu's slowest link is 1M",
				   r, up);
		char one[32];
		format_rate(up, one, sizeof(one));
		size_t l = r ? strlen(tr->uplinks) : 0;
		snprintf(tr->uplinks + l, sizeof(tr->uplinks) - l, "%s%s", r ? "," : "", one);
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* the rate and size grammars, for scripts (testbed/topo.sh, bench-peers.sh) */
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
			"  SIZE (\"256K\", \"4M\") in bytes (powers of 1024).\n");
		return argc == 2 ? 0 : 2;
	}
	rd.source = argv[1];
	struct conf cf;
	if (conf_load(rd.source, &cf, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
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
	if (load(&cf, &tr) < 0 || apply_dilation(&tr, k_given ? k_given : tr.dilation ? tr.dilation : 1) < 0) {
		fprintf(stderr, "%s\n", err);
		conf_free(&cf);
		return 2;
	}
	char ina[32] = "";
	for (int r = 0; r < tr.racks; r++)
		if (tr.ina[r])
			snprintf(ina + strlen(ina), sizeof(ina) - strlen(ina), "%s%d", *ina ? "," : "", r);
	char sizes[64] = "";
	for (int r = 0; r < tr.racks; r++)
		snprintf(sizes + strlen(sizes), sizeof(sizes) - strlen(sizes), "%s%d", r ? "," : "", tr.size[r]);
	printf("T_WORLD=%d\nT_RACK_SIZES=%s\n", tr.world, sizes);
	char hosts[64]; /* as the file says it: one count, or the list */
	snprintf(hosts, sizeof(hosts), "%d", tr.size[0]);
	printf("T_NAME=%s\nT_SEED=%d\nT_RACKS=%d\nT_HOSTS=%s\nT_INA_RACKS=%s\nT_HOST_RATE=%s\nT_UPLINK_RATE=%s\n"
	       "T_UPLINK_BUFFER=%s\nT_HOST_BUFFER=%s\nT_PMD=%s\nT_LOSS=%g\nT_COMPUTE_MS=%g\nT_JITTER=%s\nT_STRAGGLER=%"
	       "s\nT_ALGOS='%s'\n"
	       "T_SIZES='%s'\nT_ITERATIONS=%d\nT_WARMUP=%d\nT_PACE=%d\nT_DTYPE=%s\nT_INA_WIRE=%s\nT_INA_ELEMS=%d\n"
	       "T_INA_SLOTS=%d\nT_PS_SHARDS=%d\nT_TIMEOUT_MS=%d\nT_REPEATS=%d\n",
	       tr.name, tr.seed, tr.racks, tr.uneven ? sizes : hosts, *ina ? ina : "none", tr.host_rate, tr.uplinks,
	       tr.uplink_buffer, tr.host_buffer, tr.pmd, tr.loss, tr.compute_ms, tr.jitter, tr.straggler, tr.algos,
	       tr.sizes, tr.iterations, tr.warmup, tr.pace, tr.dtype, tr.ina_wire, tr.ina_elems, tr.ina_slots,
	       tr.ps_shards, tr.timeout_ms, tr.repeats);
	char order[32] = "";
	for (int i = 0; i < tr.racks; i++)
		snprintf(order + strlen(order), sizeof(order) - strlen(order), "%s%d", i ? " " : "", tr.order[i]);
	printf("T_SWEEP=%d\nT_SWEEP_ORDER='%s'\nT_DELAY_US=%d\nT_JITTER_US=%d\nT_BURST_LOSS='%s'\nT_RACK_RATES='%s'\n",
	       tr.sweep, order, tr.delay_us, tr.jitter_us, tr.burst, tr.rack_rates);
	printf("T_CAPTURE='%s'\nT_CAPTURE_SNAPLEN=%d\nT_PROCESSES=%d\n", tr.capture, tr.capture_snaplen, tr.processes);
	/* "auto" with no --dilation: the runner calibrates, then asks again */
	if (k_given || tr.dilation)
		printf("T_DILATION=%g\n", k_given ? k_given : tr.dilation);
	else
		printf("T_DILATION=auto\n");
	printf("T_CPU_SHARE=%g\nT_EMU_HOST_RATE=%s\nT_EMU_UPLINK_RATE=%s\nT_EMU_RACK_RATES='%s'\nT_EMU_DELAY_US=%lld\n"
	       "T_EMU_JITTER_US=%lld\nT_EMU_COMPUTE_MS=%g\nT_EMU_JITTER=%s\n",
	       tr.cpu_share, tr.emu.host_rate, tr.emu.uplink_rate, tr.emu.rack_rates, tr.emu.delay_us, tr.emu.jitter_us,
	       tr.emu.compute_ms, tr.emu.jitter);
	if (tr.costs)
		printf("T_COST_INA_TOR=%g\nT_COST_PLAIN_TOR=%g\nT_COST_HOST=%g\nT_COST_INA_POWER=%g\n", tr.cost[0],
		       tr.cost[1], tr.cost[2], tr.cost[3]);
	conf_free(&cf);
	return 0;
}
