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
 * algorithm's own field (ring channels' ports), or "-".  With a job token
 * (HCL_JOB_TOKEN or HCL_JOB_TOKEN_FILE) a hello is signed with it: an
 * AUTH1 line (nic/ctl_auth.h) in front, checked by the master, so that
 * only the job's own ranks can claim a rank. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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
#include "ctl_auth.h"
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
	if (r->tor.ip) /* with its ports (parse_addr reads them back) */
		addr_text(&r->tor, tor, sizeof(tor));
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

/* The master reads hellos from many connections at once, each with its own
 * time to say it: one idle connection (a port scan, a stuck client) must
 * not hold up every rank, and a bad hello is refused and logged, not fatal
 * (anyone who can reach the port can send one).  A rank connects before it
 * opens its sockets and asks its switch for a MAC, which on a busy host
 * took over 2 s: the time is generous, as only MAX_PENDING wait at once. */
#define HELLO_NS    30000000000
#define MAX_PENDING 64
#define HELLO_MAX   (CTL_AUTH_LINE_MAX + 256)

struct pending {
	int fd;
	int64_t until;
	size_t len;
	char buf[HELLO_MAX];
	char from[32];
};

struct gather {
	struct hcl_comm *c;
	int *fds, got;
	struct pending p[MAX_PENDING];
	int np;
	struct ctl_auth_seen seen; /* signed hellos taken (HCL_JOB_TOKEN) */
	unsigned nrefused;
	char refused[200]; /* the last refusal, for the error if ranks are missing */
};

static void drop_pending(struct gather *g, int i)
{
	close(g->p[i].fd);
	g->p[i] = g->p[--g->np];
}

static void refuse(struct gather *g, int i, const char *answer, const char *why)
{
	char m[240];
	snprintf(m, sizeof(m), "ERR %s\n", answer);
	ssize_t w = write(g->p[i].fd, m, strlen(m)); /* best effort: it may be gone */
	(void)w;
	snprintf(g->refused, sizeof(g->refused), "%s: %s", g->p[i].from, why);
	fprintf(stderr, "hcl: rendezvous: refused a hello from %s\n", g->refused);
	g->nrefused++;
	drop_pending(g, i);
}

static void take_connection(struct gather *g, int ls)
{
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	int fd = accept4(ls, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (g->np == MAX_PENDING) { /* a flood of silent connections: the oldest goes */
		refuse(g, 0, "too many connections", "too many connections waiting to say hello");
	}
	struct pending *p = &g->p[g->np++];
	p->fd = fd;
	p->len = 0;
	p->until = clock_now_ns() + HELLO_NS;
	addr_s(&from, p->from, sizeof(p->from));
}

/* A complete hello (its AUTH1 line first when the job has a token):
 * the rank, or refused. */
static void on_hello(struct gather *g, int i)
{
	struct hcl_comm *c = g->c;
	struct pending *p = &g->p[i];
	const char *text = p->buf, *why = NULL;
	size_t len = p->len;
	if (c->env.job_token.len) {
		enum ctl_auth_verdict v = ctl_auth_check(&c->env.job_token, &g->seen, ctl_auth_now_ms(), p->buf, p->len,
							 &text, &len);
		if (v != CTL_AUTH_OK) {
			refuse(g, i, "job token", ctl_auth_verdict_name(v));
			return;
		}
	}
	char line[HELLO_MAX];
	snprintf(line, sizeof(line), "%.*s", (int)len, text);
	int r = hello_rank(c, line, g->fds, &why);
	if (r < 0) {
		char answer[160];
		snprintf(answer, sizeof(answer), "rank %d: %s", atoi(line + 5), why);
		refuse(g, i, answer, answer);
		return;
	}
	int fl = fcntl(p->fd, F_GETFL);
	fcntl(p->fd, F_SETFL, fl & ~O_NONBLOCK); /* the table goes out with plain writes */
	g->fds[r] = p->fd;
	g->got++;
	g->p[i] = g->p[--g->np]; /* its fd is the rank's now */
}

static void on_readable(struct gather *g, int i)
{
	struct pending *p = &g->p[i];
	ssize_t r = read(p->fd, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) { /* closed before a hello: nothing to answer */
		drop_pending(g, i);
		return;
	}
	p->len += (size_t)r;
	p->buf[p->len] = 0;
	unsigned lines = 0, want = g->c->env.job_token.len ? 2 : 1;
	for (size_t k = 0; k < p->len; k++)
		lines += p->buf[k] == '\n';
	/* with a token: a first line that is not its AUTH1 line is refused at once */
	if (lines >= want || (lines && want == 2 && !ctl_auth_signed(p->buf, p->len)))
		on_hello(g, i);
	else if (p->len + 1 >= sizeof(p->buf))
		refuse(g, i, "hello too long", "hello too long");
}

/* Gathers the hellos until every rank has one or the deadline passes. */
static int gather_hellos(struct gather *g, int ls, int64_t deadline, char *err, size_t errlen)
{
	const int world = g->c->world;
	while (g->got < world - 1) {
		int64_t now = clock_now_ns(), wake = deadline;
		if (now >= deadline) {
			char missing[128];
			missing_ranks(g->fds, world, missing, sizeof(missing));
			return hcl_fail(-ETIMEDOUT, err, errlen,
					"rendezvous: %d of %d ranks did not arrive in time (missing: %s)%s%s%s",
					world - 1 - g->got, world - 1, missing, g->nrefused ? "; refused " : "",
					g->nrefused ? g->refused : "", g->nrefused > 1 ? " and others" : "");
		}
		struct pollfd pf[MAX_PENDING + 1] = { { .fd = ls, .events = POLLIN } };
		for (int i = 0; i < g->np; i++) {
			pf[i + 1] = (struct pollfd){ .fd = g->p[i].fd, .events = POLLIN };
			if (g->p[i].until < wake)
				wake = g->p[i].until;
		}
		int n = g->np;
		int r = poll(pf, (nfds_t)n + 1, (int)((wake - now + 999999) / 1000000));
		if (r < 0 && errno != EINTR)
			return hcl_fail(-errno, err, errlen, "rendezvous: poll: %s", strerror(errno));
		now = clock_now_ns();
		/* from the back: handling one moves the last into its place */
		for (int i = n - 1; i >= 0; i--) {
			if (r > 0 && pf[i + 1].revents)
				on_readable(g, i);
			else if (g->p[i].until <= now)
				refuse(g, i, "no hello in time", "connected but said nothing for 30 s");
		}
		if (r > 0 && (pf[0].revents & POLLIN))
			take_connection(g, ls);
	}
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
	struct gather *g = calloc(1, sizeof(*g));
	int *fds = calloc((size_t)c->world, sizeof(int)), rc = 0;
	if (!fds || !g) {
		free(fds);
		free(g);
		close(ls);
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	}
	for (int i = 0; i < c->world; i++)
		fds[i] = -1;
	g->c = c;
	g->fds = fds;
	if ((rc = pick_owner_and_jobs(c, err, errlen)) == 0)
		rc = gather_hellos(g, ls, deadline, err, errlen);
	while (g->np)
		drop_pending(g, g->np - 1);
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
	free(g);
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
	char hello[HELLO_MAX];
	const char *out = line;
	if (c->env.job_token.len) { /* the master takes only hellos signed with the job's token */
		if (ctl_auth_sign(&c->env.job_token, ctl_auth_now_ms(), ctl_auth_nonce(), line, hello, sizeof(hello)) <
		    0)
			return hcl_fail(-E2BIG, err, errlen, "rendezvous: hello too long to sign");
		out = hello;
	}
	if (write_all(fd, out) < 0 || read_line(fd, line, sizeof(line), deadline) <= 0)
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
