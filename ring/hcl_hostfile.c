#include "hcl_hostfile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"

static int bad(char *err, size_t n, const char *path, const struct conf_node *at, const char *what)
{
	snprintf(err, n, "%s:%d: %s", path, at ? at->line : 0, what);
	return -EINVAL;
}

static bool ipv4(const char *s)
{
	struct in_addr a;
	return s && inet_pton(AF_INET, s, &a) == 1;
}

static bool ip_port(const char *s)
{
	char ip[32];
	unsigned port;
	char tail;
	return s && sscanf(s, "%31[0-9.]:%u%c", ip, &port, &tail) == 2 && port >= 1 && port <= 65535 && ipv4(ip);
}

int hcl_hostfile_load(const char *path, int rank, struct hcl_hostfile *o, char *err, size_t errlen)
{
	struct conf lc;
	int rc = -EINVAL;
	memset(o, 0, sizeof(*o));
	if (conf_load(path, &lc, err, errlen) < 0)
		return -EINVAL;
	const struct conf_node *root = lc.root, *ranks = conf_member(root, "ranks");
	for (int i = 0; i < (int)root->n; i++) {
		const char *name = conf_elem(root, (unsigned)i)->name;
		if (strcmp(name, "ranks") && strcmp(name, "master_port")) {
			char m[96];
			snprintf(m, sizeof(m), "unknown setting '%s' (ranks, master_port)", name);
			rc = bad(err, errlen, path, conf_elem(root, (unsigned)i), m);
			goto out;
		}
	}
	if (!ranks || ranks->type != CONF_LIST || (int)ranks->n < 1) {
		rc = bad(err, errlen, path, ranks, "'ranks' must be a non-empty list ( { addr = \"a.b.c.d\"; ... }, ... )");
		goto out;
	}
	o->world = (int)ranks->n;
	o->master_port = 29500;
	const struct conf_node *mp = conf_member(root, "master_port");
	if (mp && (mp->type != CONF_INT || mp->v.i < 1 || mp->v.i > 65535)) {
		rc = bad(err, errlen, path, mp, "master_port must be an integer 1..65535");
		goto out;
	}
	if (mp)
		o->master_port = (int)mp->v.i;
	if (rank < 0 || rank >= o->world) {
		char m[96];
		snprintf(m, sizeof(m), "rank %d is not listed (%d ranks)", rank, o->world);
		rc = bad(err, errlen, path, ranks, m);
		goto out;
	}
	/* every entry is checked, so each rank finds the same mistakes */
	for (int i = 0; i < o->world; i++) {
		const struct conf_node *e = conf_elem(ranks, (unsigned)i);
		const char *addr = NULL, *sw = NULL;
		int rack = 0;
		if (e->type != CONF_GROUP) {
			rc = bad(err, errlen, path, e, "each rank is a group { addr = ...; rack = ...; ina_switch = ...; }");
			goto out;
		}
		for (int k = 0; k < (int)e->n; k++) {
			const struct conf_node *s = conf_elem(e, (unsigned)k);
			const char *n = s->name;
			if (strcmp(n, "addr") && strcmp(n, "rack") && strcmp(n, "ina_switch")) {
				rc = bad(err, errlen, path, s, "unknown key in a rank (addr, rack, ina_switch)");
				goto out;
			}
		}
		if (!(addr = conf_string(conf_member(e, "addr"))) || !ipv4(addr)) {
			rc = bad(err, errlen, path, e, "'addr' must be an IPv4 address string");
			goto out;
		}
		const struct conf_node *rk = conf_member(e, "rack");
		if (rk && (rk->type != CONF_INT || rk->v.i < 0 || rk->v.i > 1 << 20)) {
			rc = bad(err, errlen, path, rk, "'rack' must be an integer 0..1048576");
			goto out;
		}
		if (rk)
			rack = (int)rk->v.i;
		const struct conf_node *ws = conf_member(e, "ina_switch");
		if (ws && (!(sw = conf_string(ws)) || !ip_port(sw))) {
			rc = bad(err, errlen, path, ws, "'ina_switch' must be \"a.b.c.d:port\"");
			goto out;
		}
		if (i == 0)
			snprintf(o->master_addr, sizeof(o->master_addr), "%s", addr);
		if (i == rank) {
			snprintf(o->data_addr, sizeof(o->data_addr), "%s", addr);
			snprintf(o->ina_switch, sizeof(o->ina_switch), "%s", sw ? sw : "");
			o->rack = rack;
		}
	}
	o->rank = rank;
	rc = 0;
out:
	conf_free(&lc);
	return rc;
}
