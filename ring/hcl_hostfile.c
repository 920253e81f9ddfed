#include "hcl_hostfile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libconfig.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int bad(char *err, size_t n, const char *path, const config_setting_t *at, const char *what)
{
	snprintf(err, n, "%s:%d: %s", path, at ? config_setting_source_line(at) : 0, what);
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
	config_t lc;
	int rc = -EINVAL;
	memset(o, 0, sizeof(*o));
	config_init(&lc);
	if (!config_read_file(&lc, path)) {
		if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
			snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		else
			snprintf(err, errlen, "%s:%d: %s", path, config_error_line(&lc), config_error_text(&lc));
		goto out;
	}
	const config_setting_t *root = config_root_setting(&lc), *ranks = config_setting_get_member(root, "ranks");
	for (int i = 0; i < config_setting_length(root); i++) {
		const char *name = config_setting_name(config_setting_get_elem(root, (unsigned)i));
		if (strcmp(name, "ranks") && strcmp(name, "master_port")) {
			char m[96];
			snprintf(m, sizeof(m), "unknown setting '%s' (ranks, master_port)", name);
			rc = bad(err, errlen, path, config_setting_get_elem(root, (unsigned)i), m);
			goto out;
		}
	}
	if (!ranks || !config_setting_is_list(ranks) || config_setting_length(ranks) < 1) {
		rc = bad(err, errlen, path, ranks, "'ranks' must be a non-empty list ( { addr = \"a.b.c.d\"; ... }, ... )");
		goto out;
	}
	o->world = config_setting_length(ranks);
	o->master_port = 29500;
	const config_setting_t *mp = config_setting_get_member(root, "master_port");
	if (mp && (config_setting_type(mp) != CONFIG_TYPE_INT || config_setting_get_int(mp) < 1 ||
		   config_setting_get_int(mp) > 65535)) {
		rc = bad(err, errlen, path, mp, "master_port must be an integer 1..65535");
		goto out;
	}
	if (mp)
		o->master_port = config_setting_get_int(mp);
	if (rank < 0 || rank >= o->world) {
		char m[96];
		snprintf(m, sizeof(m), "rank %d is not listed (%d ranks)", rank, o->world);
		rc = bad(err, errlen, path, ranks, m);
		goto out;
	}
	/* every entry is checked, so each rank finds the same mistakes */
	for (int i = 0; i < o->world; i++) {
		const config_setting_t *e = config_setting_get_elem(ranks, (unsigned)i);
		const char *addr = NULL, *sw = NULL;
		int rack = 0;
		if (!config_setting_is_group(e)) {
			rc = bad(err, errlen, path, e, "each rank is a group { addr = ...; rack = ...; ina_switch = ...; }");
			goto out;
		}
		for (int k = 0; k < config_setting_length(e); k++) {
			const config_setting_t *s = config_setting_get_elem(e, (unsigned)k);
			const char *n = config_setting_name(s);
			if (strcmp(n, "addr") && strcmp(n, "rack") && strcmp(n, "ina_switch")) {
				rc = bad(err, errlen, path, s, "unknown key in a rank (addr, rack, ina_switch)");
				goto out;
			}
		}
		if (!config_setting_lookup_string(e, "addr", &addr) || !ipv4(addr)) {
			rc = bad(err, errlen, path, e, "'addr' must be an IPv4 address string");
			goto out;
		}
		const config_setting_t *rk = config_setting_get_member(e, "rack");
		if (rk && (config_setting_type(rk) != CONFIG_TYPE_INT || (rack = config_setting_get_int(rk)) < 0)) {
			rc = bad(err, errlen, path, rk, "'rack' must be an integer >= 0");
			goto out;
		}
		const config_setting_t *ws = config_setting_get_member(e, "ina_switch");
		if (ws && (!(sw = config_setting_get_string(ws)) || !ip_port(sw))) {
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
	config_destroy(&lc);
	return rc;
}
