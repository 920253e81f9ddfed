/* SPDX-License-Identifier: BSD-3-Clause */
#include "ctl_msg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"

static int get_prob(const struct conf_reader *r, const struct conf_node *g, const char *name, double *v)
{
	return conf_get_num(r, g, name, 0, 1, v);
}

int ctl_netem_read(const struct conf_reader *r, const struct conf_node *g, struct netem_cfg *e)
{
	if (conf_get_scaled(r, g, "rate", parse_rate, "a rate such as \"10G\" or \"500M\"", &e->rate_bps) < 0 ||
	    conf_get_scaled(r, g, "buffer", parse_size, "a size such as \"256K\" or \"1M\"", &e->buffer_bytes) < 0 ||
	    get_prob(r, g, "loss", &e->loss) < 0 || get_prob(r, g, "ecn", &e->ecn) < 0 ||
	    conf_get_u32(r, g, "delay_us", 0, 10000000, false, &e->delay_us) < 0 ||
	    conf_get_u32(r, g, "jitter_us", 0, 10000000, false, &e->jitter_us) < 0)
		return -1;
	if (e->rate_bps && e->rate_bps < NETEM_MIN_RATE)
		return conf_fail(r, conf_member(g, "rate"), "'rate' must be at least 1M (or 0 for line rate)");
	if (e->rate_bps && !conf_member(g, "buffer"))
		e->buffer_bytes = NETEM_DEFAULT_BUFFER; /* a rate without a buffer would queue without end */
	if (e->ecn > 0 && !e->rate_bps)
		return conf_fail(r, conf_member(g, "ecn"), "'ecn' marks a queue: it needs a 'rate' (and 'buffer')");
	const struct conf_node *ge = conf_member(g, "burst_loss");
	if (ge) {
		static const char *const keys[] = { "p_good_bad", "p_bad_good", "loss_bad", NULL };
		if (ge->type != CONF_GROUP)
			return conf_fail(r, ge, "'burst_loss' must be a group { p_good_bad; p_bad_good; loss_bad; }");
		if (conf_only_keys(r, ge, keys) < 0 || get_prob(r, ge, "p_good_bad", &e->ge_p_gb) < 0 ||
		    get_prob(r, ge, "p_bad_good", &e->ge_p_bg) < 0 || get_prob(r, ge, "loss_bad", &e->ge_loss_bad) < 0)
			return -1;
		if (e->ge_p_bg == 0 && e->ge_p_gb > 0)
			return conf_fail(r, ge, "'p_bad_good' must be > 0, or the link never leaves the bad state");
	}
	return 0;
}

/* forward = { addr = "ip:port@mac"; job = N; contributor = N; } (a parent
 * takes no job: its results come back under the job's own id). */
static int read_peer(const struct conf_reader *r, const struct conf_node *job, const char *name, bool with_job,
		     struct ina_peer *peer, bool *present)
{
	static const char *const keys[] = { "addr", "job", "contributor", NULL };
	const struct conf_node *g = conf_member(job, name);
	const char *addr = NULL;
	*present = g != NULL;
	if (!g)
		return 0;
	if (g->type != CONF_GROUP)
		return conf_fail(r, g, "'%s' must be a group { addr = \"ip:port@mac\"; ... }", name);
	if (conf_only_keys(r, g, keys) < 0 || conf_get_str(r, g, "addr", true, &addr) < 0)
		return -1;
	if (parse_addr(addr, &peer->addr) < 0 || !memcmp(peer->addr.mac, "\0\0\0\0\0\0", 6))
		return conf_fail(r, g,
				 "'%s' addr must be \"a.b.c.d:port@aa:bb:cc:dd:ee:ff\" (port: a number or a range "
				 "lo-hi of at most 16)",
				 name);
	long long v = peer->job;
	if (with_job) {
		if (conf_get_int(r, g, "job", 0, 65535, false, &v) < 0)
			return -1;
		peer->job = (uint16_t)v;
	} else if (conf_member(g, "job")) {
		return conf_fail(r, conf_member(g, "job"), "a parent takes the job's own id; 'job' is not set here");
	}
	if (conf_get_int(r, g, "contributor", 0, 65535, true, &v) < 0)
		return -1;
	peer->contributor = (uint16_t)v;
	return 0;
}

static const struct {
	uint8_t dtype;
	const char *name;
} dtypes[] = { { INA_D_INT32, "int32" }, { INA_D_FP32, "fp32" }, { INA_D_BFP32, "bfp32" }, { INA_D_BF16, "bf16" } };

static const struct {
	unsigned bit;
	const char *name;
} outputs[] = { { INA_OUT_MULTICAST, "multicast" },
		{ INA_OUT_FORWARD, "forward" },
		{ INA_OUT_PS, "ps" },
		{ INA_OUT_ACK, "ack" },
		{ INA_OUT_MISS, "miss" } };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int read_contributors(const struct conf_reader *r, const struct conf_node *j, struct ina_job_cfg *c)
{
	const struct conf_node *list = conf_member(j, "contributors");
	if (!list)
		return conf_fail(r, j, "missing setting 'contributors'");
	if (list->type != CONF_ARRAY && list->type != CONF_LIST)
		return conf_fail(r, list, "'contributors' must be a list of \"ip:port\" strings");
	if (list->n < 1 || list->n > INA_MAX_FANIN)
		return conf_fail(r, list, "a job has 1..%d contributors", INA_MAX_FANIN);
	unsigned i = 0;
	for (const struct conf_node *e = list->child; e; e = e->next, i++)
		if (!conf_string(e) || parse_addr(e->v.s, &c->contributors[i]) < 0)
			return conf_fail(r, e,
					 "contributor %u must be \"a.b.c.d:port\" (port: a number or a range lo-hi of "
					 "at most 16; optionally \"@mac\")",
					 i);
	c->fan_in = (uint16_t)list->n;
	long long v = c->fan_in;
	if (conf_get_int(r, j, "fan_in", 1, INA_MAX_FANIN, false, &v) < 0)
		return -1;
	if (v != c->fan_in)
		return conf_fail(r, conf_member(j, "fan_in"), "fan_in is %lld but %u contributors are listed", v,
				 c->fan_in);
	v = -1;
	if (conf_get_int(r, j, "upstream", 0, c->fan_in - 1, false, &v) < 0)
		return -1;
	c->upstream_index = (int)v;
	v = 0;
	if (conf_get_int(r, j, "upstream_job", 0, 65535, false, &v) < 0)
		return -1;
	c->upstream_job = (uint16_t)v;
	return 0;
}

static int read_outputs(const struct conf_reader *r, const struct conf_node *j, struct ina_job_cfg *c)
{
	const struct conf_node *outs = conf_member(j, "outputs");
	if (!outs)
		return conf_fail(r, j, "missing setting 'outputs' ([\"multicast\"], [\"forward\"], [\"ps\"], ...)");
	if (outs->type != CONF_ARRAY && outs->type != CONF_LIST)
		return conf_fail(r, outs,
				 "'outputs' must be a list of \"multicast\", \"forward\", \"ps\", \"ack\", \"miss\"");
	for (const struct conf_node *e = outs->child; e; e = e->next) {
		const char *o = conf_string(e);
		unsigned k = 0;
		while (k < COUNT(outputs) && (!o || strcmp(o, outputs[k].name)))
			k++;
		if (k == COUNT(outputs))
			return conf_fail(r, e,
					 "output must be \"multicast\", \"forward\", \"ps\", \"ack\" or \"miss\"");
		c->outputs |= outputs[k].bit;
	}
	bool has_fwd, has_parent;
	if (read_peer(r, j, "forward", true, &c->forward, &has_fwd) < 0 ||
	    read_peer(r, j, "parent", false, &c->parent, &has_parent) < 0)
		return -1;
	c->parent.job = c->id;
	if (has_fwd != !!(c->outputs & INA_OUT_FORWARD))
		return conf_fail(r, j, "output \"forward\" and a 'forward' peer go together");
	if (has_parent != !!(c->outputs & INA_OUT_PS))
		return conf_fail(r, j, "output \"ps\" and a 'parent' peer go together");
	return 0;
}

/* A job group; auto_id (NULL: a number is required) is set when the id
 * is "auto". */
static int job_read(const struct conf_reader *r, const struct conf_node *j, const struct ctl_limits *lim,
		    struct ina_job_cfg *c, bool *auto_id)
{
	static const char *const keys[] = { "id",	    "fan_in",  "dtype",	       "slots",
					    "elems",	    "outputs", "contributors", "upstream",
					    "upstream_job", "forward", "parent",       "reclaim_ms",
					    "chain_steps",  NULL };
	long long v = 0;
	const char *dtype = NULL;
	if (j->type != CONF_GROUP)
		return conf_fail(r, j, "a job must be a group { id = ...; ... }");
	if (conf_only_keys(r, j, keys) < 0)
		return -1;
	memset(c, 0, sizeof(*c));
	c->upstream_index = -1;
	const struct conf_node *idn = conf_member(j, "id");
	if (auto_id && conf_string(idn) && !strcmp(conf_string(idn), "auto")) {
		*auto_id = true; /* the switch picks; 0 until then */
	} else if (conf_get_int(r, j, "id", 0, 65535, true, &v) < 0) {
		return -1;
	}
	if (conf_get_str(r, j, "dtype", true, &dtype) < 0)
		return -1;
	c->id = (uint16_t)v;
	unsigned k = 0;
	while (k < COUNT(dtypes) && strcmp(dtype, dtypes[k].name))
		k++;
	if (k == COUNT(dtypes))
		return conf_fail(r, conf_member(j, "dtype"),
				 "dtype must be \"int32\", \"fp32\", \"bfp32\" or \"bf16\"");
	c->dtype = dtypes[k].dtype;
	if (conf_get_u32(r, j, "slots", 1, lim->slots, true, &c->nslots) < 0 ||
	    conf_get_int(r, j, "elems", 1, lim->max_elems, true, &v) < 0)
		return -1;
	c->elems_per_slot = (uint16_t)v;
	/* optional; at least the host library's longest re-send interval */
	if (conf_get_u32(r, j, "reclaim_ms", 500, 3600000, false, &c->reclaim_ms) < 0)
		return -1;
	v = 0;
	if (conf_get_int(r, j, "chain_steps", 0, 65535, false, &v) < 0)
		return -1;
	c->chain_steps = (uint16_t)v;
	if (read_contributors(r, j, c) < 0 || read_outputs(r, j, c) < 0)
		return -1;
	const char *why = ina_job_cfg_check(c, lim->max_elems);
	if (why)
		return conf_fail(r, j, "job %u: %s", c->id, why);
	return 0;
}

int ctl_job_read(const struct conf_reader *r, const struct conf_node *j, const struct ctl_limits *lim,
		 struct ina_job_cfg *c)
{
	return job_read(r, j, lim, c, NULL);
}

/* An optional owner = "HEX" of the root group: 0 when absent, -1 when bad. */
static int read_owner(const struct conf_reader *r, const struct conf_node *root, uint64_t *owner)
{
	const char *s = NULL;
	*owner = 0;
	if (!conf_member(root, "owner"))
		return 0;
	if (conf_get_str(r, root, "owner", true, &s) < 0)
		return -1;
	size_t n = strlen(s);
	uint64_t v = 0;
	for (size_t i = 0; i < n && n <= 16; i++) {
		int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 : -1;
		if (d < 0)
			break;
		v = v << 4 | (uint64_t)d;
		if (i + 1 == n && v) {
			*owner = v;
			return 0;
		}
	}
	return conf_fail(r, conf_member(root, "owner"), "owner must be 1 to 16 lower-case hex digits, not all 0");
}

int ctl_parse(const char *text, size_t len, const char *source, const struct ctl_limits *lim, struct ctl_cmd *cmd,
	      char *err, size_t errlen)
{
	static const char *const install_keys[] = { "op", "owner", "job", NULL };
	static const char *const id_keys[] = { "op", "owner", "id", NULL };
	const struct conf_reader r = { source, err, errlen };
	struct conf conf;
	int rc = -1;

	memset(cmd, 0, sizeof(*cmd));
	if (conf_parse(text, len, source, &conf, err, errlen) < 0)
		return -1;
	const struct conf_node *root = conf.root;
	const char *op = NULL;
	long long id = 0;
	if (conf_get_str(&r, root, "op", true, &op) < 0)
		goto out;
	if (!strcmp(op, "install")) {
		cmd->op = CTL_INSTALL;
		const struct conf_node *j = conf_member(root, "job");
		if (conf_only_keys(&r, root, install_keys) == 0 && read_owner(&r, root, &cmd->owner) == 0)
			rc = j ? job_read(&r, j, lim, &cmd->job, &cmd->auto_id)
			       : conf_fail(&r, root, "missing setting 'job'");
	} else if (!strcmp(op, "remove") || !strcmp(op, "stats")) {
		cmd->op = !strcmp(op, "remove") ? CTL_REMOVE : CTL_STATS;
		if (conf_only_keys(&r, root, id_keys) == 0 && read_owner(&r, root, &cmd->owner) == 0 &&
		    conf_get_int(&r, root, "id", 0, 65535, true, &id) == 0) {
			cmd->id = (uint16_t)id;
			rc = 0;
		}
	} else if (!strcmp(op, "emu")) {
		static const char *const emu_keys[] = { "op", "port", CTL_NETEM_KEYS, NULL };
		const char *port = NULL;
		cmd->op = CTL_EMU;
		if (conf_only_keys(&r, root, emu_keys) < 0 || conf_get_str(&r, root, "port", true, &port) < 0)
			goto out;
		if (!*port || strlen(port) >= sizeof(cmd->port)) {
			conf_fail(&r, conf_member(root, "port"), "no port is called '%s'", port);
			goto out;
		}
		snprintf(cmd->port, sizeof(cmd->port), "%s", port);
		rc = ctl_netem_read(&r, root, &cmd->netem);
	} else if (!strcmp(op, "capture")) {
		/* no file name from the network: the capture the config set up,
		 * started or stopped */
		static const char *const capture_keys[] = { "op", "action", NULL };
		const char *action = NULL;
		cmd->op = CTL_CAPTURE;
		if (conf_only_keys(&r, root, capture_keys) < 0 || conf_get_str(&r, root, "action", true, &action) < 0)
			goto out;
		if (strcmp(action, "start") && strcmp(action, "stop")) {
			conf_fail(&r, conf_member(root, "action"), "action must be \"start\" or \"stop\"");
			goto out;
		}
		cmd->capture_on = !strcmp(action, "start");
		rc = 0;
	} else {
		conf_fail(&r, conf_member(root, "op"),
			  "op must be \"install\", \"remove\", \"stats\", \"emu\" or \"capture\"");
	}
out:
	conf_free(&conf);
	return rc;
}

/* ---- formatting ---- */

struct out {
	char *buf;
	size_t n, k;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(o->buf + o->k, o->k < o->n ? o->n - o->k : 0, fmt, ap);
	va_end(ap);
	o->k += (size_t)(w > 0 ? w : 0);
}

static void put_addr(struct out *o, const struct ina_addr *a, bool with_mac)
{
	char at[32];
	addr_text(a, at, sizeof(at));
	const uint8_t *m = a->mac;
	if (with_mac)
		put(o, "\"%s@%02x:%02x:%02x:%02x:%02x:%02x\"", at, m[0], m[1], m[2], m[3], m[4], m[5]);
	else
		put(o, "\"%s\"", at);
}

static const char *dtype_name(uint8_t d)
{
	for (unsigned k = 0; k < COUNT(dtypes); k++)
		if (dtypes[k].dtype == d)
			return dtypes[k].name;
	return "?";
}

int ctl_format_install(const struct ina_job_cfg *c, uint64_t owner, char *buf, size_t n)
{
	struct out o = { buf, n, 0 };
	put(&o, "op = \"install\"; ");
	if (owner)
		put(&o, "owner = \"%llx\"; ", (unsigned long long)owner);
	put(&o, "job = { id = %u; fan_in = %u; dtype = \"%s\"; slots = %u; elems = %u; outputs = [", c->id, c->fan_in,
	    dtype_name(c->dtype), c->nslots, c->elems_per_slot);
	const char *sep = "";
	for (unsigned i = 0; i < COUNT(outputs); i++)
		if (c->outputs & outputs[i].bit) {
			put(&o, "%s\"%s\"", sep, outputs[i].name);
			sep = ", ";
		}
	put(&o, "]; contributors = [");
	for (unsigned i = 0; i < c->fan_in; i++) {
		put(&o, "%s", i ? ", " : "");
		put_addr(&o, &c->contributors[i], false);
	}
	put(&o, "];");
	if (c->upstream_index >= 0)
		put(&o, " upstream = %d;", c->upstream_index);
	if (c->upstream_job)
		put(&o, " upstream_job = %u;", c->upstream_job);
	if (c->reclaim_ms)
		put(&o, " reclaim_ms = %u;", c->reclaim_ms);
	if (c->chain_steps)
		put(&o, " chain_steps = %u;", c->chain_steps);
	if (c->outputs & INA_OUT_FORWARD) {
		put(&o, " forward = { addr = ");
		put_addr(&o, &c->forward.addr, true);
		put(&o, "; job = %u; contributor = %u; };", c->forward.job, c->forward.contributor);
	}
	if (c->outputs & INA_OUT_PS) {
		put(&o, " parent = { addr = ");
		put_addr(&o, &c->parent.addr, true);
		put(&o, "; contributor = %u; };", c->parent.contributor);
	}
	put(&o, " };");
	return o.k < n ? 0 : -ENOSPC;
}

int ctl_format_remove(uint16_t id, uint64_t owner, char *buf, size_t n)
{
	int w = owner ? snprintf(buf, n, "op = \"remove\"; owner = \"%llx\"; id = %u;", (unsigned long long)owner, id)
		      : snprintf(buf, n, "op = \"remove\"; id = %u;", id);
	return w > 0 && (size_t)w < n ? 0 : -ENOSPC;
}

int ctl_format_stats(uint16_t id, char *buf, size_t n)
{
	int w = snprintf(buf, n, "op = \"stats\"; id = %u;", id);
	return w > 0 && (size_t)w < n ? 0 : -ENOSPC;
}

#define REPORT_FMT "ok job=%u completions=%llu contributions=%llu retransmits=%llu slots_busy=%u drops=%llu"

int ctl_format_report(const struct ctl_job_report *r, char *buf, size_t n)
{
	int w = snprintf(buf, n, REPORT_FMT "\n", r->id, r->completions, r->contributions, r->retransmits,
			 r->slots_busy, r->drops);
	return w > 0 && (size_t)w < n ? 0 : -ENOSPC;
}

int ctl_parse_report(const char *answer, struct ctl_job_report *r)
{
	unsigned id;
	int end = 0;
	struct ctl_job_report x;
	if (sscanf(answer, "ok job=%u completions=%llu contributions=%llu retransmits=%llu slots_busy=%u drops=%llu%n",
		   &id, &x.completions, &x.contributions, &x.retransmits, &x.slots_busy, &x.drops, &end) != 6 ||
	    id > 65535 || (answer[end] && answer[end] != '\n'))
		return -1;
	x.id = (uint16_t)id;
	*r = x;
	return 0;
}
