/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_hostfile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "ina_proto.h"
#include "parse.h"

/* Every entry is checked, so each rank finds the same mistakes. */
static int read_ranks(const struct conf_reader *r, const struct conf_node *ranks, int rank, struct hcl_hostfile *o)
{
	static const char *const keys[] = { "addr", "rack", "ina_switch", NULL };
	int i = 0;
	for (const struct conf_node *e = ranks->child; e; e = e->next, i++) {
		const char *addr = NULL, *sw = NULL;
		long long rack = 0;
		uint32_t ip;
		struct ina_addr a;
		if (e->type != CONF_GROUP)
			return conf_fail(r, e, "each rank is a group { addr = ...; rack = ...; ina_switch = ...; }");
		if (conf_only_keys(r, e, keys) < 0 || conf_get_str(r, e, "addr", true, &addr) < 0 ||
		    conf_get_int(r, e, "rack", 0, 1 << 20, false, &rack) < 0 ||
		    conf_get_str(r, e, "ina_switch", false, &sw) < 0)
			return -1;
		if (parse_ipv4(addr, &ip) < 0)
			return conf_fail(r, conf_member(e, "addr"), "'addr' must be an IPv4 address, not '%s'", addr);
		if (sw && (parse_endpoint(sw, INA_HOST_PORT, &a) < 0 || strlen(sw) >= sizeof(o->ina_switch)))
			return conf_fail(r, conf_member(e, "ina_switch"),
					 "'ina_switch' must be \"a.b.c.d[:port]\", not '%s'", sw);
		if (i == 0)
			snprintf(o->master_addr, sizeof(o->master_addr), "%s", addr);
		if (i == rank) {
			snprintf(o->data_addr, sizeof(o->data_addr), "%s", addr);
			snprintf(o->ina_switch, sizeof(o->ina_switch), "%s", sw ? sw : "");
			o->rack = (int)rack;
		}
	}
	return 0;
}

int hcl_hostfile_load(const char *path, int rank, struct hcl_hostfile *o, char *err, size_t errlen)
{
	static const char *const keys[] = { "ranks", "master_port", NULL };
	const struct conf_reader r = { path, err, errlen };
	struct conf text;
	long long port = 29500;
	int rc = -1;
	memset(o, 0, sizeof(*o));
	if (conf_load(path, &text, err, errlen) < 0)
		return -EINVAL;
	const struct conf_node *root = text.root, *ranks = conf_member(root, "ranks");
	if (conf_only_keys(&r, root, keys) < 0 || conf_get_int(&r, root, "master_port", 1, 65535, false, &port) < 0)
		goto out;
	if (!ranks || ranks->type != CONF_LIST || ranks->n < 1) {
		conf_fail(&r, ranks ? ranks : root,
			  "'ranks' must be a non-empty list ( { addr = \"a.b.c.d\"; ... }, ... )");
		goto out;
	}
	o->world = (int)ranks->n;
	o->master_port = (int)port;
	if (rank < 0 || rank >= o->world) {
		conf_fail(&r, ranks, "rank %d is not listed (%d ranks)", rank, o->world);
		goto out;
	}
	o->rank = rank;
	rc = read_ranks(&r, ranks, rank, o);
out:
	conf_free(&text);
	return rc < 0 ? -EINVAL : 0;
}
