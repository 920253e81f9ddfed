/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu-inventory: a cluster's inventory -> one swemu config per switch
 * server and the host library's host file (docs/TRIAL.md, "Real ports,
 * real hosts").  configs/inventory.cfg shows the format.  Every mistake is
 * "file:line: what"; nothing is written unless the whole inventory holds. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "parse.h"

#define MAX_SWITCHES 16 /* swemu's per process; here: servers */
#define MAX_PORTS    16 /* swemu's per switch */
#define MAX_HOSTS    1024
#define MAX_MGMT     16 /* swemu's control-channel sources per switch */

struct port {
	const char *name, *pci;
	const struct conf_node *at;
	int used_line; /* a host or a link took it (0: free) */
};

struct sw {
	const char *name, *ip, *mac;
	bool ina;
	int nports, nhosts, rack; /* rack: index among switches with hosts, or -1 */
	struct port ports[MAX_PORTS];
	const struct conf_node *at;
};

struct host {
	const char *name, *ip, *mac, *port;
	int sw;
};

struct inv {
	int nsw, nhosts, master_port, racks;
	struct sw sw[MAX_SWITCHES];
	struct host host[MAX_HOSTS];
	const char *key_file;
};

static char err[512];
static struct conf_reader rd = { .err = err, .errlen = sizeof(err) };

static int find_sw(const struct inv *v, const char *name)
{
	for (int i = 0; i < v->nsw; i++)
		if (!strcmp(v->sw[i].name, name))
			return i;
	return -1;
}

static struct port *find_port(struct sw *s, const char *name)
{
	for (int i = 0; i < s->nports; i++)
		if (!strcmp(s->ports[i].name, name))
			return &s->ports[i];
	return NULL;
}

/* "SW.PORT" to a port not yet taken, which it takes. */
static struct port *take(struct inv *v, const struct conf_node *at, const char *sw_name, const char *port_name)
{
	int s = find_sw(v, sw_name);
	if (s < 0)
		return conf_fail(&rd, at, "no switch '%s' in the inventory", sw_name), NULL;
	struct port *p = find_port(&v->sw[s], port_name);
	if (!p)
		return conf_fail(&rd, at, "switch '%s' has no port '%s'", sw_name, port_name), NULL;
	if (p->used_line)
		return conf_fail(&rd, at, "port %s.%s is taken already (line %d)", sw_name, port_name, p->used_line),
		       NULL;
	p->used_line = at->line;
	return p;
}

static int addr(const struct conf_node *g, const char *key, const char **out, bool mac)
{
	uint8_t m[6];
	uint32_t ip;
	if (conf_get_str(&rd, g, key, true, out) < 0)
		return -1;
	if (mac ? parse_mac(*out, m) < 0 : parse_ipv4(*out, &ip) < 0)
		return conf_fail(&rd, conf_member(g, key), "'%s' is not %s", *out,
				 mac ? "a MAC address such as 02:00:00:00:00:01" : "an IPv4 address");
	return 0;
}

static int load_switch(struct inv *v, const struct conf_node *g)
{
	static const char *const keys[] = { "name", "ip", "mac", "ina", "ports", NULL };
	struct sw *s = &v->sw[v->nsw];
	memset(s, 0, sizeof(*s));
	s->at = g;
	s->rack = -1;
	if (conf_only_keys(&rd, g, keys) < 0 || conf_get_str(&rd, g, "name", true, &s->name) < 0 ||
	    addr(g, "ip", &s->ip, false) < 0 || addr(g, "mac", &s->mac, true) < 0 ||
	    conf_get_bool(&rd, g, "ina", &s->ina) < 0)
		return -1;
	if (find_sw(v, s->name) >= 0)
		return conf_fail(&rd, g, "a second switch named '%s'", s->name);
	const struct conf_node *ps = conf_member(g, "ports");
	if (!ps || ps->type != CONF_LIST || !ps->n)
		return conf_fail(&rd, ps ? ps : g, "switch '%s' needs ports = ( { name; pci; }, ... )", s->name);
	if (ps->n > MAX_PORTS)
		return conf_fail(&rd, ps, "switch '%s': %u ports, swemu takes %d", s->name, ps->n, MAX_PORTS);
	static const char *const pkeys[] = { "name", "pci", NULL };
	for (unsigned i = 0; i < ps->n; i++) {
		const struct conf_node *e = conf_elem(ps, i);
		struct port *p = &s->ports[s->nports];
		p->at = e;
		if (conf_only_keys(&rd, e, pkeys) < 0 || conf_get_str(&rd, e, "name", true, &p->name) < 0 ||
		    conf_get_str(&rd, e, "pci", true, &p->pci) < 0)
			return -1;
		if (find_port(s, p->name))
			return conf_fail(&rd, e, "switch '%s' has a second port '%s'", s->name, p->name);
		for (int k = 0; k < s->nports; k++)
			if (!strcmp(s->ports[k].pci, p->pci))
				return conf_fail(&rd, e, "PCI address %s is port '%s' already", p->pci,
						 s->ports[k].name);
		s->nports++;
	}
	v->nsw++;
	return 0;
}

static int load_host(struct inv *v, const struct conf_node *g)
{
	static const char *const keys[] = { "name", "ip", "mac", "switch", "port", NULL };
	struct host *h = &v->host[v->nhosts];
	const char *sw;
	if (conf_only_keys(&rd, g, keys) < 0 || conf_get_str(&rd, g, "name", true, &h->name) < 0 ||
	    addr(g, "ip", &h->ip, false) < 0 || addr(g, "mac", &h->mac, true) < 0 ||
	    conf_get_str(&rd, g, "switch", true, &sw) < 0 || conf_get_str(&rd, g, "port", true, &h->port) < 0)
		return -1;
	for (int i = 0; i < v->nhosts; i++)
		if (!strcmp(v->host[i].ip, h->ip))
			return conf_fail(&rd, g, "host %s has the address of host %s", h->name, v->host[i].name);
	if (!take(v, g, sw, h->port))
		return -1;
	h->sw = find_sw(v, sw);
	struct sw *s = &v->sw[h->sw];
	if (s->nhosts++ == 0)
		s->rack = v->racks++; /* racks numbered in the order their first host comes */
	if (s->nhosts > MAX_MGMT)
		return conf_fail(&rd, g, "switch '%s' has more than %d hosts (its control channel's sources)", sw,
				 MAX_MGMT);
	v->nhosts++;
	return 0;
}

static int load_link(struct inv *v, const struct conf_node *g)
{
	static const char *const keys[] = { "from", "to", NULL };
	const char *ends[2];
	if (conf_only_keys(&rd, g, keys) < 0 || conf_get_str(&rd, g, "from", true, &ends[0]) < 0 ||
	    conf_get_str(&rd, g, "to", true, &ends[1]) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		char sw[64];
		const char *dot = strchr(ends[i], '.');
		if (!dot || dot == ends[i] || (size_t)(dot - ends[i]) >= sizeof(sw))
			return conf_fail(&rd, g, "'%s' is not SWITCH.PORT", ends[i]);
		snprintf(sw, sizeof(sw), "%.*s", (int)(dot - ends[i]), ends[i]);
		if (!take(v, g, sw, dot + 1))
			return -1;
	}
	return 0;
}

static int load(const struct conf *cf, struct inv *v)
{
	const struct conf_node *t = conf_member(cf->root, "inventory");
	static const char *const keys[] = { "switches", "hosts", "links", "master_port", "ctrl_key_file", NULL };
	if (!t || t->type != CONF_GROUP)
		return conf_fail(&rd, cf->root, "needs a group inventory = { switches; hosts; links; }");
	v->master_port = 29500;
	long long mp = v->master_port;
	if (conf_only_keys(&rd, t, keys) < 0 || conf_get_int(&rd, t, "master_port", 1, 65535, false, &mp) < 0 ||
	    conf_get_str(&rd, t, "ctrl_key_file", false, &v->key_file) < 0)
		return -1;
	v->master_port = (int)mp;
	const char *lists[] = { "switches", "hosts", "links" };
	const int caps[] = { MAX_SWITCHES, MAX_HOSTS, MAX_SWITCHES * MAX_PORTS };
	for (int k = 0; k < 3; k++) {
		const struct conf_node *l = conf_member(t, lists[k]);
		if (!l && k == 2)
			continue; /* one switch: no links */
		if (!l || l->type != CONF_LIST || !l->n)
			return conf_fail(&rd, l ? l : t, "'%s' must be a non-empty list ( { ... }, ... )", lists[k]);
		if (l->n > (unsigned)caps[k])
			return conf_fail(&rd, l, "at most %d %s", caps[k], lists[k]);
		for (unsigned i = 0; i < l->n; i++) {
			const struct conf_node *e = conf_elem(l, i);
			if (e->type != CONF_GROUP)
				return conf_fail(&rd, e, "each of '%s' is a group { ... }", lists[k]);
			if ((k == 0 ? load_switch(v, e) : k == 1 ? load_host(v, e) : load_link(v, e)) < 0)
				return -1;
		}
	}
	return 0;
}

static FILE *open_out(const char *dir, const char *name, const char *ext)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s%s", dir, name, ext);
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "swemu-inventory: %s: %s\n", path, strerror(errno));
	return f;
}

static int write_switch(const struct inv *v, const struct sw *s, const char *dir, const char *key)
{
	FILE *f = open_out(dir, s->name, ".cfg"), *e = open_out(dir, s->name, ".eal");
	if (!f || !e) {
		if (f)
			fclose(f);
		if (e)
			fclose(e);
		return -1;
	}
	fprintf(f, "# written by swemu-inventory for the server of switch %s\n", s->name);
	fprintf(f, "stats_file = \"/run/swemu-%s.json\";\nidle_sleep_max_us = 0; # a dedicated core: busy polling\n",
		s->name);
	fprintf(f, "switches = (\n  { name = \"%s\"; ina = %s; ip = \"%s\"; mac = \"%s\";\n", s->name,
		s->ina ? "true" : "false", s->ip, s->mac);
	if (s->ina)
		fprintf(f, "    slots = 2048; max_elems = 2048;\n");
	/* its rack's hosts may send it signed commands; a switch without
	 * hosts (the spine) every host's link settings, if they are few
	 * enough to list */
	char mg[MAX_MGMT * 20] = "";
	for (int i = 0, n = 0; i < v->nhosts; i++)
		if (v->host[i].sw == s - v->sw || (s->rack < 0 && v->nhosts <= MAX_MGMT))
			snprintf(mg + strlen(mg), sizeof(mg) - strlen(mg), "%s\"%s\"", n++ ? ", " : "", v->host[i].ip);
	if (*mg)
		fprintf(f, "    mgmt = [ %s ]; ctrl_key_file = \"%s\";\n", mg, key);
	fprintf(f, "    ports = (\n");
	for (int i = 0; i < s->nports; i++)
		fprintf(f, "      { name = \"%s\"; dev = \"%s\"; }%s\n", s->ports[i].name, s->ports[i].pci,
			i + 1 < s->nports ? "," : "");
	fprintf(f, "    );\n");
	/* the cabling is known: each host's MAC pinned to its port, never
	 * flooded for, never learned elsewhere */
	if (s->nhosts) {
		fprintf(f, "    fdb = (\n");
		for (int i = 0, n = 0; i < v->nhosts; i++)
			if (v->host[i].sw == s - v->sw)
				fprintf(f, "      { mac = \"%s\"; port = \"%s\"; }%s\n", v->host[i].mac,
					v->host[i].port, ++n < s->nhosts ? "," : "");
		fprintf(f, "    );\n");
	}
	fprintf(f, "  }\n);\n");
	fprintf(e, "-l 1 --file-prefix swemu-%s", s->name);
	for (int i = 0; i < s->nports; i++)
		fprintf(e, " -a %s", s->ports[i].pci);
	fprintf(e, "\n");
	int bad = ferror(f) | ferror(e);
	return (fclose(f) | fclose(e) | bad) ? -1 : 0;
}

static int write_hosts(const struct inv *v, const char *dir)
{
	FILE *f = open_out(dir, "hosts", ".cfg");
	if (!f)
		return -1;
	fprintf(f, "# written by swemu-inventory: rank i is host i of the inventory\nmaster_port = %d;\nranks = (\n",
		v->master_port);
	for (int i = 0; i < v->nhosts; i++) {
		const struct sw *s = &v->sw[v->host[i].sw];
		fprintf(f, "  { addr = \"%s\"; rack = %d;", v->host[i].ip, s->rack);
		if (s->ina)
			fprintf(f, " ina_switch = \"%s\";", s->ip);
		fprintf(f, " }%s # %s\n", i + 1 < v->nhosts ? "," : "", v->host[i].name);
	}
	fprintf(f, ");\n");
	int bad = ferror(f);
	return (fclose(f) | bad) ? -1 : 0;
}

/* The control channel's key: given, or made here (copy it to the same path
 * on every switch server and host). */
static int key_path(const struct inv *v, const char *dir, char *out, size_t cap)
{
	if (v->key_file) {
		snprintf(out, cap, "%s", v->key_file);
		return 0;
	}
	/* realpath's own buffer: one of ours must hold PATH_MAX bytes */
	char *abs = realpath(dir, NULL);
	if (!abs)
		return fprintf(stderr, "swemu-inventory: %s: %s\n", dir, strerror(errno)), -1;
	int len = snprintf(out, cap, "%s/ctrl.key", abs);
	free(abs);
	if (len < 0 || (size_t)len >= cap)
		return fprintf(stderr, "swemu-inventory: %s: path too long\n", dir), -1;
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), rnd = open("/dev/urandom", O_RDONLY);
	unsigned char k[32];
	char hex[65];
	int ok = fd >= 0 && rnd >= 0 && read(rnd, k, sizeof(k)) == (ssize_t)sizeof(k);
	for (int i = 0; ok && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", k[i]);
	ok = ok && write(fd, hex, 64) == 64;
	if (fd >= 0)
		close(fd);
	if (rnd >= 0)
		close(rnd);
	return ok ? 0 : (fprintf(stderr, "swemu-inventory: cannot write %s\n", out), -1);
}

int main(int argc, char **argv)
{
	if (argc != 3 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(argc == 2 ? stdout : stderr,
			"usage: swemu-inventory INVENTORY OUT_DIR\n"
			"  Turns a cluster's inventory (configs/inventory.cfg shows the format: the\n"
			"  switch servers with their ports' PCI addresses, the hosts with their\n"
			"  addresses and which switch port they are cabled to, the links between\n"
			"  switches) into OUT_DIR/SW.cfg and SW.eal for each switch server (swemu\n"
			"  $(cat SW.eal) -- -c SW.cfg) and OUT_DIR/hosts.cfg for the host library\n"
			"  (HCL_HOSTFILE).  Exit 2 and file:line on a mistake, nothing written.\n");
		return argc == 2 ? 0 : 2;
	}
	rd.source = argv[1];
	struct conf cf;
	static struct inv v;
	if (conf_load(rd.source, &cf, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	if (load(&cf, &v) < 0) {
		fprintf(stderr, "%s\n", err);
		conf_free(&cf);
		return 2;
	}
	for (int i = 0; i < v.nsw; i++)
		if (v.sw[i].ina && v.sw[i].rack < 0) {
			conf_fail(&rd, v.sw[i].at, "switch '%s' aggregates (ina = true) but no host is cabled to it",
				  v.sw[i].name);
			fprintf(stderr, "%s\n", err);
			conf_free(&cf);
			return 2;
		}
	char key[512];
	int rc = 0;
	if (mkdir(argv[2], 0755) < 0 && errno != EEXIST)
		rc = -1, fprintf(stderr, "swemu-inventory: %s: %s\n", argv[2], strerror(errno));
	if (rc == 0)
		rc = key_path(&v, argv[2], key, sizeof(key));
	for (int i = 0; rc == 0 && i < v.nsw; i++)
		rc = write_switch(&v, &v.sw[i], argv[2], key);
	if (rc == 0)
		rc = write_hosts(&v, argv[2]);
	if (rc == 0)
		printf("swemu-inventory: %d switch server(s), %d host(s) in %d rack(s) -> %s\n", v.nsw, v.nhosts,
		       v.racks, argv[2]);
	conf_free(&cf);
	return rc == 0 ? 0 : 1;
}
