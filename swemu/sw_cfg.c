#include "sw_cfg.h"

#include "conf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parser state: where errors go and which file they name. */
struct pctx {
	const char *file;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct pctx *p, const struct conf_node *at, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(p->err, p->errlen, "%s:%d: ", p->file, at ? at->line : 0);
	if (n < 0 || (size_t)n >= p->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- value parsers (also used by the control channel) ---- */

static int parse_scaled(const char *s, double unit_k, uint64_t *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || !isfinite(x) || x < 0)
		return -1;
	double mul = 1;
	switch (tolower((unsigned char)*end)) {
	case 'k': mul = unit_k; end++; break;
	case 'm': mul = unit_k * unit_k; end++; break;
	case 'g': mul = unit_k * unit_k * unit_k; end++; break;
	case 't': mul = unit_k * unit_k * unit_k * unit_k; end++; break;
	}
	if (*end == 'b' && unit_k == 1000) /* "10Gb" */
		end++;
	if (*end)
		return -1;
	x *= mul;
	if (x > 1.8e19)
		return -1;
	*v = (uint64_t)llround(x);
	return 0;
}

int sw_parse_rate(const char *s, uint64_t *bps) { return parse_scaled(s, 1000, bps); }
int sw_parse_size(const char *s, uint64_t *bytes) { return parse_scaled(s, 1024, bytes); }

int sw_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;
	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6 ||
	    strlen(s) != 17)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

int sw_parse_ip(const char *s, uint32_t *ip)
{
	struct in_addr a;
	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*ip = a.s_addr;
	return 0;
}

/* "ip:port" or "ip:port@mac" */
int sw_parse_addr(const char *s, struct ina_addr *a)
{
	char buf[64];
	const char *at = strchr(s, '@');
	size_t n = at ? (size_t)(at - s) : strlen(s);
	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	char *colon = strrchr(buf, ':');
	if (!colon)
		return -1;
	*colon = 0;
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port == 0 || port > 65535)
		return -1;
	memset(a, 0, sizeof(*a));
	if (sw_parse_ip(buf, &a->ip) < 0)
		return -1;
	a->port = htons((uint16_t)port);
	if (at && sw_parse_mac(at + 1, a->mac) < 0)
		return -1;
	return 0;
}

/* ---- setting helpers ---- */

/* Every member of g must be one of the names in allowed (NULL-terminated):
 * a misspelt key is an error, not a silently ignored line. */
static int only_keys(struct pctx *p, const struct conf_node *g, const char *const *allowed)
{
	for (int i = 0; i < (int)g->n; i++) {
		const struct conf_node *m = conf_elem(g, (unsigned)i);
		const char *name = m->name;
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = strcmp(*a, name) == 0;
		if (!ok)
			return fail(p, m, "unknown setting '%s'", name);
	}
	return 0;
}

static int get_int(struct pctx *p, const struct conf_node *g, const char *name, long long lo,
		   long long hi, bool required, long long *v)
{
	const struct conf_node *s = conf_member(g, name);
	if (!s) {
		if (required)
			return fail(p, g, "missing setting '%s'", name);
		return 0;
	}
	int t = s->type;
	if (t != CONF_INT && t != CONF_INT)
		return fail(p, s, "'%s' must be an integer", name);
	long long x = s->v.i;
	if (x < lo || x > hi)
		return fail(p, s, "'%s' must be %lld..%lld, not %lld", name, lo, hi, x);
	*v = x;
	return 0;
}

static int get_u32(struct pctx *p, const struct conf_node *g, const char *name, long long lo,
		   long long hi, bool required, uint32_t *v)
{
	long long x = *v;
	if (get_int(p, g, name, lo, hi, required, &x) < 0)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static int get_str(struct pctx *p, const struct conf_node *g, const char *name, bool required,
		   const char **v)
{
	const struct conf_node *s = conf_member(g, name);
	if (!s) {
		if (required)
			return fail(p, g, "missing setting '%s'", name);
		return 0;
	}
	if (s->type != CONF_STRING)
		return fail(p, s, "'%s' must be a string", name);
	*v = s->v.s;
	return 0;
}

static int get_bool(struct pctx *p, const struct conf_node *g, const char *name, bool *v)
{
	const struct conf_node *s = conf_member(g, name);
	if (!s)
		return 0;
	if (s->type != CONF_BOOL)
		return fail(p, s, "'%s' must be true or false", name);
	*v = s->v.b;
	return 0;
}

static int get_prob(struct pctx *p, const struct conf_node *g, const char *name, double *v)
{
	const struct conf_node *s = conf_member(g, name);
	if (!s)
		return 0;
	int t = s->type;
	double x;
	if (t == CONF_FLOAT)
		x = s->v.f;
	else if (t == CONF_INT || t == CONF_INT)
		x = (double)s->v.i;
	else
		return fail(p, s, "'%s' must be a number", name);
	if (!(x >= 0 && x <= 1))
		return fail(p, s, "'%s' must be a probability in 0..1", name);
	*v = x;
	return 0;
}

/* A quantity given as an integer or a string with a unit suffix. */
static int get_scaled(struct pctx *p, const struct conf_node *g, const char *name,
		      int (*parse)(const char *, uint64_t *), const char *what, uint64_t *v)
{
	const struct conf_node *s = conf_member(g, name);
	if (!s)
		return 0;
	int t = s->type;
	if (t == CONF_INT || t == CONF_INT) {
		long long x = s->v.i;
		if (x < 0)
			return fail(p, s, "'%s' must not be negative", name);
		*v = (uint64_t)x;
		return 0;
	}
	if (t != CONF_STRING || parse(s->v.s, v) < 0)
		return fail(p, s, "'%s' must be %s", name, what);
	return 0;
}

static int get_name(struct pctx *p, const struct conf_node *g, char *out)
{
	const char *s = NULL;
	if (get_str(p, g, "name", true, &s) < 0)
		return -1;
	const struct conf_node *at = conf_member(g, "name");
	size_t n = strlen(s);
	if (n == 0 || n >= SW_NAME_LEN)
		return fail(p, at, "name must be 1..%d characters", SW_NAME_LEN - 1);
	/* names become telemetry keys: [A-Za-z0-9_] only */
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return fail(p, at, "name '%s' may only use letters, digits and _", s);
	memcpy(out, s, n + 1);
	return 0;
}

/* ---- sections ---- */

static int load_emu(struct pctx *p, const struct conf_node *port, struct sw_emu_cfg *e)
{
	long long v;
	if (get_scaled(p, port, "rate", sw_parse_rate, "a rate such as \"10G\" or \"500M\"", &e->rate_bps) < 0 ||
	    get_scaled(p, port, "buffer", sw_parse_size, "a size such as \"256K\" or \"1M\"", &e->buffer_bytes) < 0 ||
	    get_prob(p, port, "loss", &e->loss) < 0)
		return -1;
	if (e->rate_bps && !conf_member(port, "buffer"))
		e->buffer_bytes = SW_EMU_DEFAULT_BUFFER; /* a rate without a buffer would queue without end */
	v = 0;
	if (get_int(p, port, "delay_us", 0, 10000000, false, &v) < 0)
		return -1;
	e->delay_us = (uint32_t)v;
	v = 0;
	if (get_int(p, port, "jitter_us", 0, 10000000, false, &v) < 0)
		return -1;
	e->jitter_us = (uint32_t)v;
	const struct conf_node *ge = conf_member(port, "burst_loss");
	if (ge) {
		static const char *const keys[] = { "p_good_bad", "p_bad_good", "loss_bad", NULL };
		if (ge->type != CONF_GROUP)
			return fail(p, ge, "'burst_loss' must be a group { p_good_bad; p_bad_good; loss_bad; }");
		if (only_keys(p, ge, keys) < 0 || get_prob(p, ge, "p_good_bad", &e->ge_p_gb) < 0 ||
		    get_prob(p, ge, "p_bad_good", &e->ge_p_bg) < 0 || get_prob(p, ge, "loss_bad", &e->ge_loss_bad) < 0)
			return -1;
		if (e->ge_p_bg == 0 && e->ge_p_gb > 0)
			return fail(p, ge, "'p_bad_good' must be > 0, or the link never leaves the bad state");
	}
	return 0;
}

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* trunk = [ 10, 20 ]: those VLANs tagged; 'vlan', if given, is then the
 * native (untagged) one, else untagged frames are refused. */
static int load_trunk(struct pctx *p, const struct conf_node *pg, struct sw_port_cfg *pc)
{
	const struct conf_node *t = conf_member(pg, "trunk");
	pc->ntrunk = 0;
	if (!t)
		return 0;
	int n = t->type == CONF_ARRAY ? (int)t->n : -1;
	if (n < 1 || n > SW_MAX_TRUNK)
		return fail(p, t, "port '%s': 'trunk' must be a list of 1..%d VLAN ids [ 10, 20 ]", pc->name, SW_MAX_TRUNK);
	for (int i = 0; i < n; i++) {
		const struct conf_node *e = conf_elem(t, (unsigned)i);
		long long v = e->type == CONF_INT ? e->v.i : -1;
		if (v < 1 || v > 4094)
			return fail(p, t, "port '%s': trunk entry %d must be a VLAN id 1..4094", pc->name, i);
		pc->trunk[i] = (uint16_t)v;
	}
	qsort(pc->trunk, (size_t)n, sizeof(pc->trunk[0]), cmp_u16);
	for (int i = 1; i < n; i++)
		if (pc->trunk[i] == pc->trunk[i - 1])
			return fail(p, t, "port '%s': vlan %u is twice in 'trunk'", pc->name, pc->trunk[i]);
	if (!conf_member(pg, "vlan"))
		pc->vlan = 0; /* no native VLAN */
	for (int i = 0; i < n; i++)
		if (pc->trunk[i] == pc->vlan)
			return fail(p, t, "port '%s': vlan %u is its native (untagged) vlan and cannot be tagged too",
				    pc->name, pc->vlan);
	pc->ntrunk = n;
	return 0;
}

static int load_ports(struct pctx *p, const struct conf_node *sw, struct sw_switch_cfg *s)
{
	static const char *const keys[] = { "name", "dev", "link", "vlan", "trunk", "rate", "buffer", "delay_us",
					    "jitter_us", "loss", "burst_loss", NULL };
	const struct conf_node *ports = conf_member(sw, "ports");
	if (!ports)
		return fail(p, sw, "switch '%s' has no 'ports'", s->name);
	if (ports->type != CONF_LIST)
		return fail(p, ports, "'ports' must be a list ( {...}, ... )");
	int n = (int)ports->n;
	if (n == 0 || n > SW_MAX_PORTS)
		return fail(p, ports, "a switch has 1..%d ports", SW_MAX_PORTS);
	for (int i = 0; i < n; i++) {
		const struct conf_node *pg = conf_elem(ports, (unsigned)i);
		struct sw_port_cfg *pc = &s->ports[i];
		const char *dev = NULL, *link = NULL;
		if (pg->type != CONF_GROUP)
			return fail(p, pg, "a port must be a group { name = ...; dev = ...; }");
		pc->line = pg->line;
		pc->peer_switch = pc->peer_port = -1;
		long long vlan = SW_VLAN_DEFAULT;
		if (only_keys(p, pg, keys) < 0 || get_name(p, pg, pc->name) < 0 ||
		    get_str(p, pg, "dev", false, &dev) < 0 || get_str(p, pg, "link", false, &link) < 0 ||
		    get_int(p, pg, "vlan", 1, 4094, false, &vlan) < 0 || load_emu(p, pg, &pc->emu) < 0)
			return -1;
		pc->vlan = (uint16_t)vlan;
		if (load_trunk(p, pg, pc) < 0)
			return -1;
		if (!dev == !link)
			return fail(p, pg, "port '%s' needs exactly one of 'dev' (a DPDK device) or 'link' (\"switch.port\")",
				    pc->name);
		if (dev && (strlen(dev) == 0 || strlen(dev) >= sizeof(pc->dev)))
			return fail(p, pg, "port '%s': 'dev' must be 1..%zu characters", pc->name, sizeof(pc->dev) - 1);
		if (link && (strlen(link) == 0 || strlen(link) >= sizeof(pc->link) || !strchr(link, '.')))
			return fail(p, pg, "port '%s': 'link' must be \"switch.port\"", pc->name);
		snprintf(pc->dev, sizeof(pc->dev), "%s", dev ? dev : "");
		snprintf(pc->link, sizeof(pc->link), "%s", link ? link : "");
		for (int k = 0; k < i; k++)
			if (!strcmp(s->ports[k].name, pc->name))
				return fail(p, pg, "port name '%s' is used twice in switch '%s'", pc->name, s->name);
	}
	s->nports = n;
	return 0;
}

static int find_port(const struct sw_switch_cfg *s, const char *name)
{
	for (int i = 0; i < s->nports; i++)
		if (!strcmp(s->ports[i].name, name))
			return i;
	return -1;
}

static int load_fdb(struct pctx *p, const struct conf_node *sw, struct sw_switch_cfg *s)
{
	static const char *const keys[] = { "mac", "port", NULL };
	const struct conf_node *fdb = conf_member(sw, "fdb");
	if (!fdb)
		return 0;
	if (fdb->type != CONF_LIST)
		return fail(p, fdb, "'fdb' must be a list ( { mac = ...; port = ...; }, ... )");
	int n = (int)fdb->n;
	if (n > SW_MAX_FDB)
		return fail(p, fdb, "at most %d static fdb entries", SW_MAX_FDB);
	for (int i = 0; i < n; i++) {
		const struct conf_node *e = conf_elem(fdb, (unsigned)i);
		const char *mac = NULL, *port = NULL;
		if (e->type != CONF_GROUP)
			return fail(p, e, "an fdb entry must be a group { mac = ...; port = ...; }");
		if (only_keys(p, e, keys) < 0 || get_str(p, e, "mac", true, &mac) < 0 ||
		    get_str(p, e, "port", true, &port) < 0)
			return -1;
		if (sw_parse_mac(mac, s->fdb[i].mac) < 0)
			return fail(p, e, "'%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", mac);
		if ((s->fdb[i].port = find_port(s, port)) < 0)
			return fail(p, e, "fdb entry names port '%s', which switch '%s' does not have", port, s->name);
		if (!s->ports[s->fdb[i].port].vlan)
			return fail(p, e, "fdb entry names port '%s', a trunk without a native vlan", port);
	}
	s->nfdb = n;
	return 0;
}

static int load_peer(struct pctx *p, const struct conf_node *job, const char *name, bool with_job,
		     struct ina_peer *peer, bool *present)
{
	static const char *const keys[] = { "addr", "job", "contributor", NULL };
	const struct conf_node *g = conf_member(job, name);
	const char *addr = NULL;
	long long v;
	*present = g != NULL;
	if (!g)
		return 0;
	if (g->type != CONF_GROUP)
		return fail(p, g, "'%s' must be a group { addr = \"ip:port@mac\"; ... }", name);
	if (only_keys(p, g, keys) < 0 || get_str(p, g, "addr", true, &addr) < 0)
		return -1;
	if (sw_parse_addr(addr, &peer->addr) < 0 || !memcmp(peer->addr.mac, "\0\0\0\0\0\0", 6))
		return fail(p, g, "'%s' addr must be \"a.b.c.d:port@aa:bb:cc:dd:ee:ff\"", name);
	if (with_job) {
		v = peer->job;
		if (get_int(p, g, "job", 0, 65535, false, &v) < 0)
			return -1;
		peer->job = (uint16_t)v;
	} else if (conf_member(g, "job")) {
		return fail(p, conf_member(g, "job"),
			    "a parent takes the job's own id; 'job' is not set here");
	}
	v = 0;
	if (get_int(p, g, "contributor", 0, 65535, true, &v) < 0)
		return -1;
	peer->contributor = (uint16_t)v;
	return 0;
}

static int load_job(struct pctx *p, const struct conf_node *j, const struct sw_switch_cfg *s,
		    struct ina_job_cfg *c)
{
	static const char *const keys[] = { "id", "fan_in", "dtype", "slots", "elems", "outputs",
					    "contributors", "upstream", "upstream_job", "forward", "parent", NULL };
	long long v = 0;
	const char *dtype = NULL;
	if (j->type != CONF_GROUP)
		return fail(p, j, "a job must be a group { id = ...; ... }");
	if (only_keys(p, j, keys) < 0)
		return -1;
	memset(c, 0, sizeof(*c));
	c->upstream_index = -1;
	if (get_int(p, j, "id", 0, 65535, true, &v) < 0)
		return -1;
	c->id = (uint16_t)v;
	if (get_str(p, j, "dtype", true, &dtype) < 0)
		return -1;
	if (!strcmp(dtype, "int32"))
		c->dtype = INA_D_INT32;
	else if (!strcmp(dtype, "fp32"))
		c->dtype = INA_D_FP32;
	else if (!strcmp(dtype, "bfp32"))
		c->dtype = INA_D_BFP32;
	else if (!strcmp(dtype, "bf16"))
		c->dtype = INA_D_BF16;
	else
		return fail(p, conf_member(j, "dtype"),
			    "dtype must be \"int32\", \"fp32\", \"bfp32\" or \"bf16\"");
	if (get_u32(p, j, "slots", 1, s->slots, true, &c->nslots) < 0 ||
	    get_int(p, j, "elems", 1, s->max_elems, true, &v) < 0)
		return -1;
	c->elems_per_slot = (uint16_t)v;

	const struct conf_node *contrib = conf_member(j, "contributors");
	if (!contrib)
		return fail(p, j, "missing setting 'contributors'");
	if (contrib->type != CONF_ARRAY && contrib->type != CONF_LIST)
		return fail(p, contrib, "'contributors' must be a list of \"ip:port\" strings");
	int n = (int)contrib->n;
	if (n < 1 || n > INA_MAX_FANIN)
		return fail(p, contrib, "a job has 1..%d contributors", INA_MAX_FANIN);
	for (int i = 0; i < n; i++) {
		const struct conf_node *e = conf_elem(contrib, (unsigned)i);
		if (e->type != CONF_STRING ||
		    sw_parse_addr(e->v.s, &c->contributors[i]) < 0)
			return fail(p, e, "contributor %d must be \"a.b.c.d:port\" (optionally \"@mac\")", i);
	}
	c->fan_in = (uint16_t)n;
	v = n;
	if (get_int(p, j, "fan_in", 1, INA_MAX_FANIN, false, &v) < 0)
		return -1;
	if (v != n)
		return fail(p, conf_member(j, "fan_in"),
			    "fan_in is %lld but %d contributors are listed", v, n);
	v = -1;
	if (get_int(p, j, "upstream", 0, n - 1, false, &v) < 0)
		return -1;
	c->upstream_index = (int)v;
	v = 0;
	if (get_int(p, j, "upstream_job", 0, 65535, false, &v) < 0)
		return -1;
	c->upstream_job = (uint16_t)v;

	const struct conf_node *outs = conf_member(j, "outputs");
	if (!outs)
		return fail(p, j, "missing setting 'outputs' ([\"multicast\"], [\"forward\"], [\"ps\"], ...)");
	if (outs->type != CONF_ARRAY && outs->type != CONF_LIST)
		return fail(p, outs, "'outputs' must be a list of \"multicast\", \"forward\", \"ps\"");
	for (int i = 0; i < (int)outs->n; i++) {
		const struct conf_node *e = conf_elem(outs, (unsigned)i);
		const char *o = e->type == CONF_STRING ? e->v.s : "";
		if (!strcmp(o, "multicast"))
			c->outputs |= INA_OUT_MULTICAST;
		else if (!strcmp(o, "forward"))
			c->outputs |= INA_OUT_FORWARD;
		else if (!strcmp(o, "ps"))
			c->outputs |= INA_OUT_PS;
		else if (!strcmp(o, "ack"))
			c->outputs |= INA_OUT_ACK;
		else
			return fail(p, e, "output must be \"multicast\", \"forward\", \"ps\" or \"ack\"");
	}
	bool has_fwd, has_parent;
	if (load_peer(p, j, "forward", true, &c->forward, &has_fwd) < 0 ||
	    load_peer(p, j, "parent", false, &c->parent, &has_parent) < 0)
		return -1;
	c->parent.job = c->id;
	if (has_fwd != !!(c->outputs & INA_OUT_FORWARD))
		return fail(p, j, "output \"forward\" and a 'forward' peer go together");
	if (has_parent != !!(c->outputs & INA_OUT_PS))
		return fail(p, j, "output \"ps\" and a 'parent' peer go together");

	const char *why = ina_job_cfg_check(c, s->max_elems);
	if (why)
		return fail(p, j, "job %u: %s", c->id, why);
	return 0;
}

static int load_jobs(struct pctx *p, const struct conf_node *sw, struct sw_switch_cfg *s)
{
	const struct conf_node *jobs = conf_member(sw, "jobs");
	if (!jobs)
		return 0;
	if (!s->ina)
		return fail(p, jobs, "switch '%s' has jobs but 'ina' is not true", s->name);
	if (jobs->type != CONF_LIST)
		return fail(p, jobs, "'jobs' must be a list ( {...}, ... )");
	int n = (int)jobs->n;
	if (n > INA_MAX_JOBS)
		return fail(p, jobs, "at most %d jobs", INA_MAX_JOBS);
	s->jobs = calloc((size_t)n + 1, sizeof(*s->jobs));
	if (!s->jobs)
		return fail(p, jobs, "out of memory");
	uint64_t used = 0;
	for (int i = 0; i < n; i++) {
		const struct conf_node *j = conf_elem(jobs, (unsigned)i);
		if (load_job(p, j, s, &s->jobs[i]) < 0)
			return -1;
		for (int k = 0; k < i; k++)
			if (s->jobs[k].id == s->jobs[i].id)
				return fail(p, j, "job id %u is used twice", s->jobs[i].id);
		used += s->jobs[i].nslots;
		if (used > s->slots)
			return fail(p, j, "jobs reserve %llu slots but switch '%s' has %u",
				    (unsigned long long)used, s->name, s->slots);
		s->njobs = i + 1;
	}
	return 0;
}

static int load_switch(struct pctx *p, const struct conf_node *g, struct sw_switch_cfg *s)
{
	static const char *const keys[] = { "name", "ina", "mac", "ip", "ctrl_port", "slots", "max_elems",
					    "mgmt", "fdb_age_s", "lcore", "ports", "fdb", "jobs", NULL };
	const char *mac = NULL, *ip = NULL;
	if (g->type != CONF_GROUP)
		return fail(p, g, "a switch must be a group { name = ...; ports = (...); }");
	if (only_keys(p, g, keys) < 0 || get_name(p, g, s->name) < 0 || get_bool(p, g, "ina", &s->ina) < 0 ||
	    get_str(p, g, "mac", s->ina, &mac) < 0 || get_str(p, g, "ip", s->ina, &ip) < 0)
		return -1;
	if (mac && sw_parse_mac(mac, s->mac) < 0)
		return fail(p, conf_member(g, "mac"), "'%s' is not a MAC address", mac);
	if (ip && sw_parse_ip(ip, &s->ip) < 0)
		return fail(p, conf_member(g, "ip"), "'%s' is not an IPv4 address", ip);
	if (!mac != !ip)
		return fail(p, g, "switch '%s': 'mac' and 'ip' go together", s->name);
	s->ctrl_port = INA_UDP_PORT_MIN - 1; /* 48863: next to the INA ports, not among them */
	s->slots = s->ina ? 1024 : 0;
	s->max_elems = 2048;
	s->fdb_age_s = 300;
	uint32_t port = s->ctrl_port, maxe = s->max_elems;
	long long lcore = -1;
	s->line = g->line;
	if (get_int(p, g, "lcore", 0, SW_MAX_LCORE, false, &lcore) < 0 ||
	    get_u32(p, g, "ctrl_port", 1, 65535, false, &port) < 0 ||
	    get_u32(p, g, "slots", 1, 1 << 20, false, &s->slots) < 0 ||
	    get_u32(p, g, "max_elems", 1, INA_MAX_ELEMS, false, &maxe) < 0 ||
	    get_u32(p, g, "fdb_age_s", 1, 86400, false, &s->fdb_age_s) < 0)
		return -1;
	s->ctrl_port = (uint16_t)port;
	s->max_elems = (uint16_t)maxe;
	s->lcore = (int)lcore;
	const struct conf_node *mg = conf_member(g, "mgmt");
	if (mg) {
		if (mg->type != CONF_ARRAY && mg->type != CONF_LIST)
			return fail(p, mg, "'mgmt' must be a list of IPv4 addresses");
		if ((int)mg->n > SW_MAX_MGMT)
			return fail(p, mg, "at most %d mgmt addresses", SW_MAX_MGMT);
		for (int i = 0; i < (int)mg->n; i++) {
			const struct conf_node *e = conf_elem(mg, (unsigned)i);
			if (e->type != CONF_STRING ||
			    sw_parse_ip(e->v.s, &s->mgmt[i]) < 0)
				return fail(p, e, "mgmt entry %d is not an IPv4 address", i);
			s->nmgmt = i + 1;
		}
		if (!s->ina)
			return fail(p, mg, "'mgmt' only makes sense on an INA switch");
	}
	return load_ports(p, g, s) < 0 || load_fdb(p, g, s) < 0 || load_jobs(p, g, s) < 0 ? -1 : 0;
}

/* Links name "switch.port" and must point at each other. */
static int resolve_links(struct pctx *p, struct sw_cfg *c, const struct conf_node *list)
{
	for (int si = 0; si < c->nswitches; si++)
		for (int pi = 0; pi < c->sw[si].nports; pi++) {
			struct sw_port_cfg *pc = &c->sw[si].ports[pi];
			const struct conf_node *at = conf_elem(list, (unsigned)si);
			at = conf_elem(conf_member(at, "ports"), (unsigned)pi);
			if (pc->dev[0]) {
				for (int sk = 0; sk <= si; sk++)
					for (int pk = 0; pk < (sk == si ? pi : c->sw[sk].nports); pk++)
						if (!strcmp(c->sw[sk].ports[pk].dev, pc->dev))
							return fail(p, at, "device '%s' is already port %s.%s", pc->dev,
								    c->sw[sk].name, c->sw[sk].ports[pk].name);
				continue;
			}
			char sname[SW_NAME_LEN * 2];
			snprintf(sname, sizeof(sname), "%s", pc->link);
			char *dot = strchr(sname, '.');
			*dot = 0;
			for (int sk = 0; sk < c->nswitches; sk++)
				if (!strcmp(c->sw[sk].name, sname)) {
					pc->peer_switch = sk;
					pc->peer_port = find_port(&c->sw[sk], dot + 1);
				}
			if (pc->peer_switch < 0 || pc->peer_port < 0)
				return fail(p, at, "link '%s': no such switch.port", pc->link);
			if (pc->peer_switch == si)
				return fail(p, at, "link '%s' loops back into switch '%s'", pc->link, c->sw[si].name);
			const struct sw_port_cfg *peer = &c->sw[pc->peer_switch].ports[pc->peer_port];
			char back[SW_NAME_LEN * 2 + 2];
			snprintf(back, sizeof(back), "%s.%s", c->sw[si].name, pc->name);
			if (strcmp(peer->link, back))
				return fail(p, at, "link '%s': the peer port must have link = \"%s\"", pc->link, back);
			if (peer->vlan != pc->vlan) /* a link carries one VLAN untagged */
				return fail(p, at, "link '%s': both ends must be in the same vlan (%u here, %u there)",
					    pc->link, pc->vlan, peer->vlan);
			if (peer->ntrunk != pc->ntrunk ||
			    memcmp(peer->trunk, pc->trunk, sizeof(pc->trunk[0]) * (size_t)pc->ntrunk))
				return fail(p, at, "link '%s': both ends must carry the same trunk vlans", pc->link);
		}
	return 0;
}

int sw_cfg_load(const char *path, struct sw_cfg *c, char *err, size_t errlen)
{
	static const char *const keys[] = { "stats_file", "stats_interval_ms", "idle_sleep_max_us",
					    "burst", "mbufs", "switches", NULL };
	struct pctx p = { path, err, errlen };
	struct conf text;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	if (conf_load(path, &text, err, errlen) < 0)
		return -1;
	const struct conf_node *root = text.root;
	const char *sf = NULL;
	if (only_keys(&p, root, keys) < 0 || get_str(&p, root, "stats_file", false, &sf) < 0)
		goto out;
	if (sf && strlen(sf) >= sizeof(c->stats_file)) {
		fail(&p, conf_member(root, "stats_file"), "stats_file is too long");
		goto out;
	}
	snprintf(c->stats_file, sizeof(c->stats_file), "%s", sf ? sf : "");
	c->idle_sleep_max_us = 200;
	c->burst = 32;
	c->mbufs = 8191;
	if (get_u32(&p, root, "stats_interval_ms", 0, 3600000, false, &c->stats_interval_ms) < 0 ||
	    get_u32(&p, root, "idle_sleep_max_us", 0, 100000, false, &c->idle_sleep_max_us) < 0 ||
	    get_u32(&p, root, "burst", 1, 512, false, &c->burst) < 0 ||
	    get_u32(&p, root, "mbufs", 511, 1 << 20, false, &c->mbufs) < 0)
		goto out;

	const struct conf_node *list = conf_member(root, "switches");
	if (!list) {
		fail(&p, root, "missing setting 'switches'");
		goto out;
	}
	if (list->type != CONF_LIST || (int)list->n == 0 ||
	    (int)list->n > SW_MAX_SWITCHES) {
		fail(&p, list, "'switches' must be a list of 1..%d switches ( {...}, ... )", SW_MAX_SWITCHES);
		goto out;
	}
	for (int i = 0; i < (int)list->n; i++) {
		const struct conf_node *g = conf_elem(list, (unsigned)i);
		c->nswitches = i + 1;
		if (load_switch(&p, g, &c->sw[i]) < 0)
			goto out;
		for (int k = 0; k < i; k++)
			if (!strcmp(c->sw[k].name, c->sw[i].name)) {
				fail(&p, g, "switch name '%s' is used twice", c->sw[i].name);
				goto out;
			}
	}
	rc = resolve_links(&p, c, list);
out:
	conf_free(&text);
	if (rc < 0)
		sw_cfg_free(c);
	return rc;
}

void sw_cfg_free(struct sw_cfg *c)
{
	for (int i = 0; i < SW_MAX_SWITCHES; i++)
		free(c->sw[i].jobs);
	memset(c, 0, sizeof(*c));
}

int sw_ctrl_parse(const char *text, size_t len, const struct sw_switch_cfg *s, struct sw_ctrl_cmd *cmd,
		  char *err, size_t errlen)
{
	static const char *const install_keys[] = { "op", "job", NULL };
	static const char *const remove_keys[] = { "op", "id", NULL };
	static const char *const emu_keys[] = { "op", "port", "rate", "buffer", "delay_us", "jitter_us",
						"loss", "burst_loss", NULL };
	struct pctx p = { "ctrl", err, errlen };
	struct conf conf;
	int rc = -1;

	memset(cmd, 0, sizeof(*cmd));
	if (conf_parse(text, len, "ctrl", &conf, err, errlen) < 0)
		return -1;
	const struct conf_node *root = conf.root;
	const char *op = NULL;
	if (get_str(&p, root, "op", true, &op) < 0)
		goto out;
	if (!strcmp(op, "install")) {
		cmd->op = SW_CTRL_INSTALL;
		const struct conf_node *j = conf_member(root, "job");
		if (only_keys(&p, root, install_keys) < 0)
			goto out;
		if (!j) {
			fail(&p, root, "missing setting 'job'");
			goto out;
		}
		rc = load_job(&p, j, s, &cmd->job);
	} else if (!strcmp(op, "remove") || !strcmp(op, "stats")) {
		long long id = 0;
		cmd->op = !strcmp(op, "remove") ? SW_CTRL_REMOVE : SW_CTRL_STATS;
		if (only_keys(&p, root, remove_keys) < 0 || get_int(&p, root, "id", 0, 65535, true, &id) < 0)
			goto out;
		cmd->id = (uint16_t)id;
		rc = 0;
	} else if (!strcmp(op, "emu")) {
		const char *port = NULL;
		cmd->op = SW_CTRL_EMU;
		if (only_keys(&p, root, emu_keys) < 0 || get_str(&p, root, "port", true, &port) < 0)
			goto out;
		if ((cmd->port = find_port(s, port)) < 0) {
			fail(&p, conf_member(root, "port"), "switch '%s' has no port '%s'", s->name, port);
			goto out;
		}
		rc = load_emu(&p, root, &cmd->emu);
	} else {
		fail(&p, conf_member(root, "op"), "op must be \"install\", \"remove\", \"stats\" or \"emu\"");
	}
out:
	conf_free(&conf);
	return rc;
}
