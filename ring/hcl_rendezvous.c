/* SPDX-License-Identifier: BSD-3-Clause */
/* Rendezvous over TCP at the master (rank 0).  Lines of text:
 *   rank r -> master:  "HCL1 <rank> <world> <data ip> <data port> <ina port> <rack> <mac> <tor> <extra>\n"
 *   master -> rank r:  "OK <owner> <job base>\n" then world lines
 *                      "<ip> <port> <ina port> <rack> <mac> <tor> <extra>\n" in rank order,
 *                      or "ERR <why>\n".
 * <owner> is the communicator's token (16 hex digits, from the master's
 * random source): its switch jobs are installed under it, so that no
 * other job on the same switch can remove them (docs/HOSTLIB.md,
 * "Sharing a switch").  <job base> the first switch job id its
 * algorithms use (HCL_INA_JOB, or the master's random pick).
 * <tor> is the rank's INA switch "ip:port", or "-"; <extra> the
 * algorithm's own field (ring channels' ports), or "-". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hcl_algo.h"
#include "hcl_comm_int.h"
#include "parse.h"
#include "tor.h"

static int wait_fd(int fd, short ev, int64_t deadline)
{
	int64_t left = deadline - clock_now_ns();
	if (left <= 0)
		return 0;
	struct pollfd p = { .fd = fd, .events = ev };
	int r = poll(&p, 1, (int)((left + 999999) / 1000000));
	return r < 0 && errno == EINTR ? 0 : r;
}

/* Reads up to a newline (or n-1 bytes) before the deadline. */
static int read_line(int fd, char *buf, size_t n, int64_t deadline)
{
	size_t k = 0;
	while (k + 1 < n) {
		if (wait_fd(fd, POLLIN, deadline) <= 0)
			return -ETIMEDOUT;
		ssize_t r = read(fd, buf + k, 1);
		if (r <= 0)
			return r == 0 ? -ECONNRESET : -errno;
		if (buf[k++] == '\n')
			break;
	}
	buf[k] = 0;
	return (int)k;
}

static int write_all(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static const char *addr_s(const struct sockaddr_in *a, char *b, size_t n)
{
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(b, n, "%s:%u", ip, ntohs(a->sin_port));
	return b;
}

/* "<ip> <port> <ina port> <rack> <mac> <tor> <extra>" of rank i: a line of
 * the table, and the hello's tail after rank and world. */
static void rank_text(const struct hcl_comm *c, int i, char *b, size_t n)
{
	const struct plan_rank *r = &c->info[i];
	const uint8_t *m = r->ina.mac;
	char tor[40] = "-", ip[INET_ADDRSTRLEN];
	if (r->tor.ip)
		addr_s(&(struct sockaddr_in){ .sin_addr.s_addr = r->tor.ip, .sin_port = r->tor.port }, tor,
		       sizeof(tor));
	inet_ntop(AF_INET, &c->peers[i].sin_addr, ip, sizeof(ip));
	snprintf(b, n, "%s %u %u %d %02x:%02x:%02x:%02x:%02x:%02x %s %s", ip, ntohs(c->peers[i].sin_port),
		 ntohs(r->ina.port), r->rack, m[0], m[1], m[2], m[3], m[4], m[5], tor, c->extra[i]);
}

/* Parses rank_text into rank i's entries: 0, or -1. */
static int rank_parse(struct hcl_comm *c, int i, const char *s)
{
	char ip[32], mac[32], tor[40], extra[HCL_EXTRA_LEN];
	unsigned port, iport;
	int rack, end = 0;
	struct plan_rank r = { .rack = 0 };
	struct sockaddr_in pa = { .sin_family = AF_INET };
	if (sscanf(s, "%31s %u %u %d %31s %39s %39s%n", ip, &port, &iport, &rack, mac, tor, extra, &end) != 7 ||
	    (s[end] && s[end] != '\n') || port < 1 || port > 65535 || iport > 65535 || rack < 0 ||
	    inet_pton(AF_INET, ip, &pa.sin_addr) != 1 || parse_mac(mac, r.ina.mac) < 0 ||
	    (strcmp(tor, "-") && parse_addr(tor, &r.tor) < 0))
		return -1;
	pa.sin_port = htons((uint16_t)port);
	r.ina.ip = pa.sin_addr.s_addr;
	r.ina.port = htons((uint16_t)iport);
	r.rack = rack;
	c->peers[i] = pa;
	c->info[i] = r;
	snprintf(c->extra[i], HCL_EXTRA_LEN, "%s", extra);
	return 0;
}

/* A hello's rank, checked against the master's table so far: its index,
 * or -1 with why (the rank is refused). */
static int hello_rank(struct hcl_comm *c, const char *line, const int *fds, const char **why)
{
	int r, w, n = 0;
	if (sscanf(line, "HCL1 %d %d %n", &r, &w, &n) != 2 || !n) {
		*why = "malformed hello";
		return -1;
	}
	if (w != c->world)
		*why = "world size differs from the master's";
	else if (r <= 0 || r >= c->world)
		*why = "rank out of range";
	else if (fds[r] >= 0)
		*why = "rank already taken";
	else if (rank_parse(c, r, line + n) < 0)
		*why = "bad data address, INA port, rack, MAC or switch";
	else if (c->algo->check_peer && (*why = c->algo->check_peer(c, c->extra[r])))
		;
	else
		return r;
	return -1;
}

/* The table as the master sends it: "OK ..." and a line per rank (malloc'd). */
static char *table_text(const struct hcl_comm *c)
{
	size_t cap = (size_t)c->world * 200 + 64, len = 0;
	char *table = malloc(cap);
	if (!table)
		return NULL;
	len += (size_t)snprintf(table, cap, "OK %016llx %u\n", (unsigned long long)c->owner, c->env.ina_job);
	for (int i = 0; i < c->world; i++) {
		rank_text(c, i, table + len, cap - len - 1);
		len += strlen(table + len);
		table[len++] = '\n';
		table[len] = 0;
	}
	return table;
}

static void missing_ranks(const int *fds, int world, char *b, size_t n)
{
	b[0] = 0;
	for (int i = 1, k = 0; i < world && k < 8; i++)
		if (fds[i] < 0) {
			size_t l = strlen(b);
			snprintf(b + l, n - l, "%s%d", k++ ? ", " : "", i);
		}
}

/* The master's picks for the communicator: its owner token, and its first
 * switch job id when HCL_INA_JOB is "auto" (1024..16383: below the ids a
 * switch hands out itself, with room above for every algorithm's ids). */
static int pick_owner_and_jobs(struct hcl_comm *c, char *err, size_t errlen)
{
	uint64_t r[2] = { 0, 0 };
	while (!r[0])
		if (getrandom(r, sizeof(r), 0) != sizeof(r))
			return hcl_fail(-EIO, err, errlen, "rendezvous: no random numbers: %s", strerror(errno));
	c->owner = r[0];
	if (!c->env.ina_job)
		c->env.ina_job = (uint16_t)(1024 + r[1] % (16384 - 1024));
	return 0;
}

/* Rank 0: collect everybody's hello, hand out the table. */
static int master(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen)
{
	const struct sockaddr_in *at = &c->env.master;
	char a[64];
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (ls >= 0)
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (const struct sockaddr *)at, sizeof(*at)) != 0 || listen(ls, 1024) != 0) {
		int e = errno;
		if (ls >= 0)
			close(ls);
		return hcl_fail(-e, err, errlen, "rendezvous: cannot listen on %s: %s", addr_s(at, a, sizeof(a)),
				strerror(e));
	}
	int *fds = calloc((size_t)c->world, sizeof(int)), rc = 0, got = 0;
	if (!fds) {
		close(ls);
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	}
	if ((rc = pick_owner_and_jobs(c, err, errlen)) < 0) {
		free(fds);
		close(ls);
		return rc;
	}
	for (int i = 0; i < c->world; i++)
		fds[i] = -1;
	while (got < c->world - 1 && rc == 0) {
		if (wait_fd(ls, POLLIN, deadline) <= 0) {
			char missing[128];
			missing_ranks(fds, c->world, missing, sizeof(missing));
			rc = hcl_fail(-ETIMEDOUT, err, errlen,
				      "rendezvous: %d of %d ranks did not arrive in time (missing: %s)",
				      c->world - 1 - got, c->world - 1, missing);
			break;
		}
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		char line[240], m[240];
		const char *why = NULL;
		int r = read_line(fd, line, sizeof(line), deadline) > 0 ? hello_rank(c, line, fds, &why) : -1;
		if (r > 0) {
			fds[r] = fd;
			got++;
			continue;
		}
		snprintf(m, sizeof(m), "ERR %s\n", why ? why : "no hello");
		if (why && strcmp(why, "malformed hello")) { /* one of ours, wrong: the run cannot go on */
			int claimed = atoi(line + 5);
			snprintf(m, sizeof(m), "ERR rank %d: %s\n", claimed, why);
			rc = hcl_fail(-EPROTO, err, errlen, "rendezvous: a rank announced itself as %d: %s", claimed,
				      why);
		}
		write_all(fd, m);
		close(fd);
	}
	char *table = rc == 0 ? table_text(c) : NULL;
	if (rc == 0 && !table)
		rc = hcl_fail(-ENOMEM, err, errlen, "out of memory");
	for (int i = 1; rc == 0 && i < c->world; i++)
		if (write_all(fds[i], table) < 0)
			rc = hcl_fail(-ECONNRESET, err, errlen,
				      "rendezvous: rank %d went away before the table was sent", i);
	free(table);
	for (int i = 0; i < c->world; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	close(ls);
	return rc;
}

/* A connection to the master (which may not be up yet). */
static int connect_master(const struct sockaddr_in *at, int64_t deadline, char *err, size_t errlen)
{
	char a[64];
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			int e = errno;
			return hcl_fail(-e, err, errlen, "rendezvous: socket: %s", strerror(e));
		}
		/* a lost SYN is resent after 1, 3, 7 s: rather than wait for
		 * that, give each attempt at most a second (Linux bounds connect
		 * by the send timeout) and start again with a fresh SYN */
		int64_t left = deadline - clock_now_ns();
		if (left > 1000000000)
			left = 1000000000;
		struct timeval tv = { .tv_sec = left > 0 ? left / 1000000000 : 0,
				      .tv_usec = left > 0 ? left % 1000000000 / 1000 : 1 };
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, (const struct sockaddr *)at, sizeof(*at)) == 0)
			return fd;
		int e = errno;
		close(fd);
		if (clock_now_ns() >= deadline)
			return hcl_fail(-ETIMEDOUT, err, errlen, "rendezvous: master %s not reachable in time: %s",
					addr_s(at, a, sizeof(a)), strerror(e));
		nanosleep(&(struct timespec){ 0, 50000000 }, NULL); /* the master may start later */
	}
}

/* Other ranks: announce, read the table. */
static int client(struct hcl_comm *c, int fd, int64_t deadline, char *err, size_t errlen)
{
	char line[240], tail[200], a[64];
	addr_s(&c->env.master, a, sizeof(a));
	rank_text(c, c->rank, tail, sizeof(tail));
	snprintf(line, sizeof(line), "HCL1 %d %d %s\n", c->rank, c->world, tail);
	if (write_all(fd, line) < 0 || read_line(fd, line, sizeof(line), deadline) <= 0)
		return hcl_fail(-ETIMEDOUT, err, errlen, "rendezvous: no table from master %s in time", a);
	unsigned long long owner;
	unsigned base;
	int end = 0;
	if (strncmp(line, "OK ", 3) != 0) {
		line[strcspn(line, "\n")] = 0;
		return hcl_fail(-ECONNREFUSED, err, errlen, "rendezvous: master %s refused: %s", a, line);
	}
	if (sscanf(line, "OK %16llx %5u%n", &owner, &base, &end) != 2 || line[end] != '\n' || !owner || !base ||
	    base > 65535)
		return hcl_fail(-EPROTO, err, errlen, "rendezvous: bad table from master %s", a);
	c->owner = owner;
	c->env.ina_job = (uint16_t)base;
	for (int i = 0; i < c->world; i++)
		if (read_line(fd, line, sizeof(line), deadline) <= 0 || rank_parse(c, i, line) < 0)
			return hcl_fail(-EPROTO, err, errlen, "rendezvous: bad table from master %s", a);
	return 0;
}

int hcl_rendezvous(struct hcl_comm *c, const struct dgram_udp_opts *data_opts, int64_t deadline, char *err,
		   size_t errlen)
{
	int fd = -1, rc;
	struct sockaddr_in me = c->env.data;
	if (c->rank > 0) {
		if ((fd = connect_master(&c->env.master, deadline, err, errlen)) < 0)
			return fd;
		if (!me.sin_addr.s_addr) { /* the address that reaches the master */
			struct sockaddr_in l;
			socklen_t ll = sizeof(l);
			getsockname(fd, (struct sockaddr *)&l, &ll);
			me.sin_addr = l.sin_addr;
		}
	} else if (!me.sin_addr.s_addr) {
		me.sin_addr = c->env.master.sin_addr;
	}
	if ((rc = dgram_udp_open(&c->t, &me, data_opts, err, errlen)) == 0) {
		dgram_udp_local(&c->t, &c->peers[c->rank]);
		/* zero if not found: only INA jobs need it */
		tor_host_mac(c->peers[c->rank].sin_addr.s_addr, c->info[c->rank].ina.mac);
		c->info[c->rank].ina.ip = c->peers[c->rank].sin_addr.s_addr;
		if (c->algo->announce)
			rc = c->algo->announce(c, data_opts, err, errlen);
	}
	if (rc == 0)
		rc = c->rank ? client(c, fd, deadline, err, errlen) : master(c, deadline, err, errlen);
	if (fd >= 0)
		close(fd);
	return rc;
}
