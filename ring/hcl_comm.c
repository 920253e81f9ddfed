/* Communicator: rendezvous over TCP at the master (rank 0), then the data
 * path over the chosen transport.  Rendezvous lines (text):
 *   rank r -> master:  "HCL1 <rank> <world> <data ip> <data port> <ina port> <rack> <mac> <tor> <ch>\n"
 *   master -> rank r:  "OK\n" then world lines "<ip> <port> <ina port> <rack> <mac> <tor> <ch>\n"
 *                      in rank order, or "ERR <why>\n".
 * <tor> is the rank's INA switch "ip:port", or "-"; <ch> its extra ring
 * channels' ports "p1,p2,...", or "-".  ps and ps-ina: ring/hcl_psina.c. */
#define _GNU_SOURCE
#include "hcl.h"
#include "hcl_comm_int.h"
#include "hcl_ctl.h"
#include "hcl_hostfile.h"
#include "hcl_ina.h"
#include "ina_kernels.h"
#include "hcl_plan.h"
#include "hcl_ps.h"
#include "hcl_sync.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>


int hcl_fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

static int env_int(const char *name, int *v)
{
	const char *s = getenv(name);
	char *end;
	if (!s || !*s)
		return -1;
	long x = strtol(s, &end, 10);
	if (*end || x < 0 || x > 1 << 20)
		return -1;
	*v = (int)x;
	return 0;
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
	int64_t left = deadline - hcl_now_ns();
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

static int parse_mac(const char *s, uint8_t m[6])
{
	unsigned v[6];
	char tail;
	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		m[i] = (uint8_t)v[i];
	return 0;
}

/* "ip:port" or "-" (none) */
static int parse_tor(const char *s, struct ina_addr *a)
{
	char ip[32];
	unsigned port;
	memset(a, 0, sizeof(*a));
	if (!strcmp(s, "-"))
		return 0;
	if (sscanf(s, "%31[0-9.]:%u", ip, &port) != 2 || port == 0 || port > 65535 ||
	    inet_pton(AF_INET, ip, &a->ip) != 1 || !a->ip)
		return -1;
	a->port = htons((uint16_t)port);
	return 0;
}

/* "<ina port> <rack> <mac> <tor> <ring channel ports>" of rank i, the tail
 * of both line kinds */
static void info_text(const struct hcl_comm *c, int i, char *b, size_t n)
{
	const uint8_t *m = c->info[i].ina.mac;
	char tor[40] = "-", ip[INET_ADDRSTRLEN], ch[40];
	if (c->info[i].tor.ip) {
		inet_ntop(AF_INET, &c->info[i].tor.ip, ip, sizeof(ip));
		snprintf(tor, sizeof(tor), "%s:%u", ip, ntohs(c->info[i].tor.port));
	}
	hcl_chan_text(&c->chan, i, ch, sizeof(ch));
	snprintf(b, n, "%u %d %02x:%02x:%02x:%02x:%02x:%02x %s %s", c->ina_ports[i], c->racks[i], m[0], m[1], m[2],
		 m[3], m[4], m[5], tor, ch);
}

static int info_parse(struct hcl_comm *c, int i, unsigned iport, int rack, const char *mac, const char *tor,
		      const char *ch)
{
	if (iport > 65535 || rack < 0 || parse_mac(mac, c->info[i].ina.mac) < 0 ||
	    parse_tor(tor, &c->info[i].tor) < 0 || hcl_chan_parse(&c->chan, i, ch) < 0)
		return -1;
	c->ina_ports[i] = (uint16_t)iport;
	c->racks[i] = rack;
	return 0;
}

static const char *addr_s(const struct sockaddr_in *a, char *b, size_t n)
{
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(b, n, "%s:%u", ip, ntohs(a->sin_port));
	return b;
}

/* Rank 0: collect everybody's data address, hand out the table. */
static int rendezvous_master(struct hcl_comm *c, const struct sockaddr_in *master, int64_t deadline, char *err,
			     size_t errlen)
{
	char a[64];
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (const struct sockaddr *)master, sizeof(*master)) != 0 || listen(ls, 1024) != 0) {
		int e = errno;
		if (ls >= 0)
			close(ls);
		return hcl_fail(err, errlen, "rendezvous: cannot listen on %s: %s", addr_s(master, a, sizeof(a)), strerror(e));
	}
	int *fds = calloc((size_t)c->world, sizeof(int)), rc = 0, got = 0;
	for (int i = 0; i < c->world; i++)
		fds[i] = -1;
	while (got < c->world - 1) {
		if (wait_fd(ls, POLLIN, deadline) <= 0) {
			char missing[128] = "";
			for (int i = 1, k = 0; i < c->world && k < 8; i++)
				if (fds[i] < 0) {
					size_t l = strlen(missing);
					snprintf(missing + l, sizeof(missing) - l, "%s%d", k++ ? ", " : "", i);
				}
			rc = hcl_fail(err, errlen, "rendezvous: %d of %d ranks did not arrive in time (missing: %s)",
				  c->world - 1 - got, c->world - 1, missing);
			goto out;
		}
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		char line[240], ip[64], mac[32], tor[40], ch[40];
		int r, w;
		unsigned port, iport;
		int rk;
		if (read_line(fd, line, sizeof(line), deadline) <= 0 ||
		    sscanf(line, "HCL1 %d %d %63s %u %u %d %31s %39s %39s", &r, &w, ip, &port, &iport, &rk, mac, tor,
			   ch) != 9 ||
		    iport > 65535 || rk < 0) {
			write_all(fd, "ERR malformed hello\n");
			close(fd);
			continue; /* not one of ours: ignore it */
		}
		const char *why = NULL;
		struct sockaddr_in pa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
		if (w != c->world)
			why = "world size differs from the master's";
		else if (r <= 0 || r >= c->world)
			why = "rank out of range";
		else if (fds[r] >= 0)
			why = "rank already taken";
		else if (port == 0 || port > 65535 || inet_pton(AF_INET, ip, &pa.sin_addr) != 1)
			why = "bad data address";
		else if (info_parse(c, r, iport, rk, mac, tor, ch) < 0)
			why = "bad INA port, rack, MAC or switch, or another number of ring channels (HCL_RING_CHANNELS)";
		if (why) {
			char m[200];
			snprintf(m, sizeof(m), "ERR rank %d: %s\n", r, why);
			write_all(fd, m);
			close(fd);
			rc = hcl_fail(err, errlen, "rendezvous: a rank announced itself as %d of %d: %s", r, w, why);
			goto out;
		}
		fds[r] = fd;
		c->peers[r] = pa;
		got++;
	}
	/* the table, to everyone */
	size_t cap = (size_t)c->world * 160 + 8, len = 0;
	char *table = malloc(cap);
	len += (size_t)snprintf(table, cap, "OK\n");
	for (int i = 0; i < c->world; i++) {
		char ip[INET_ADDRSTRLEN], tail[140];
		inet_ntop(AF_INET, &c->peers[i].sin_addr, ip, sizeof(ip));
		info_text(c, i, tail, sizeof(tail));
		len += (size_t)snprintf(table + len, cap - len, "%s %u %s\n", ip, ntohs(c->peers[i].sin_port), tail);
	}
	for (int i = 1; i < c->world; i++)
		if (write_all(fds[i], table) < 0)
			rc = hcl_fail(err, errlen, "rendezvous: rank %d went away before the table was sent", i);
	free(table);
out:
	for (int i = 0; i < c->world; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	close(ls);
	return rc;
}

/* Other ranks: connect (the master may not be up yet), announce, read. */
static int rendezvous_client(struct hcl_comm *c, const struct sockaddr_in *master, const char *data_addr,
			     uint16_t data_port, const struct hcl_udp_opts *data_opts, int64_t deadline, char *err,
			     size_t errlen)
{
	char a[64];
	int fd = -1;
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return hcl_fail(err, errlen, "rendezvous: socket: %s", strerror(errno));
		/* a lost SYN is resent after 1, 3, 7 s: rather than wait for
		 * that, give each attempt at most a second (Linux bounds connect
		 * by the send timeout) and start again with a fresh SYN */
		int64_t left = deadline - hcl_now_ns();
		if (left > 1000000000)
			left = 1000000000;
		struct timeval tv = { .tv_sec = left > 0 ? left / 1000000000 : 0,
				      .tv_usec = left > 0 ? left % 1000000000 / 1000 : 1 };
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, (const struct sockaddr *)master, sizeof(*master)) == 0)
			break;
		int e = errno;
		close(fd);
		if (hcl_now_ns() >= deadline)
			return hcl_fail(err, errlen, "rendezvous: master %s not reachable in time: %s",
				    addr_s(master, a, sizeof(a)), strerror(e));
		struct timespec ts = { 0, 50000000 }; /* retry: the master may start later */
		nanosleep(&ts, NULL);
	}
	/* the data address: given, or the one that reaches the master */
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(data_port) };
	if (data_addr) {
		if (inet_pton(AF_INET, data_addr, &me.sin_addr) != 1) {
			close(fd);
			return hcl_fail(err, errlen, "data address '%s' is not an IPv4 address", data_addr);
		}
	} else {
		struct sockaddr_in l;
		socklen_t ll = sizeof(l);
		getsockname(fd, (struct sockaddr *)&l, &ll);
		me.sin_addr = l.sin_addr;
	}
	int rc = hcl_udp_open(&c->t, &me, data_opts, err, errlen);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	hcl_udp_local(&c->t, &me);
	if ((rc = hcl_chan_open(&c->chan, &me, data_opts, err, errlen)) < 0) {
		close(fd);
		return rc;
	}
	hcl_mac_local(me.sin_addr.s_addr, c->info[c->rank].ina.mac); /* zero if not found: only INA jobs need it */
	char line[240], ip[INET_ADDRSTRLEN], tail[140], mac[32], tor[40], ch[40];
	inet_ntop(AF_INET, &me.sin_addr, ip, sizeof(ip));
	info_text(c, c->rank, tail, sizeof(tail));
	snprintf(line, sizeof(line), "HCL1 %d %d %s %u %s\n", c->rank, c->world, ip, ntohs(me.sin_port), tail);
	if (write_all(fd, line) < 0 || read_line(fd, line, sizeof(line), deadline) <= 0) {
		close(fd);
		return hcl_fail(err, errlen, "rendezvous: no table from master %s in time", addr_s(master, a, sizeof(a)));
	}
	if (strncmp(line, "OK", 2) != 0) {
		close(fd);
		line[strcspn(line, "\n")] = 0;
		return hcl_fail(err, errlen, "rendezvous: master %s refused: %s", addr_s(master, a, sizeof(a)), line);
	}
	for (int i = 0; i < c->world; i++) {
		unsigned port, iport;
		int rk;
		if (read_line(fd, line, sizeof(line), deadline) <= 0 ||
		    sscanf(line, "%15s %u %u %d %31s %39s %39s", ip, &port, &iport, &rk, mac, tor, ch) != 7 ||
		    inet_pton(AF_INET, ip, &c->peers[i].sin_addr) != 1 ||
		    info_parse(c, i, iport, rk, mac, tor, ch) < 0) {
			close(fd);
			return hcl_fail(err, errlen, "rendezvous: bad table from master %s", addr_s(master, a, sizeof(a)));
		}
		c->peers[i].sin_family = AF_INET;
		c->peers[i].sin_port = htons((uint16_t)port);
	}
	close(fd);
	return 0;
}

int hcl_cfg_or_env(int v, const char *env, int dflt)
{
	int e;
	return v ? v : env_int(env, &e) == 0 ? e : dflt;
}

/* 2048 elements (8 KiB of fp32 in a jumbo frame, as the transfer's
 * datagrams) and 8 in flight per job: the 64 KiB that 1024 x 16 had, in
 * half the packets, which is what hosts and software members pay for
 * (BENCHMARKS.md, "The default trial": agent-ring 1.3-1.5x faster at 200
 * Mbit/s).  swemu's max_elems default is 2048. */
#define INA_ELEMS_DEFAULT 2048
#define INA_SLOTS_DEFAULT 8

int hcl_ina_packets(const struct hcl_comm *c, const struct hcl_comm_cfg *k, const char *name, int *slots,
		    int *elems, char *err, size_t errlen)
{
	*slots = hcl_cfg_or_env(k->ina_slots, "HCL_INA_SLOTS", INA_SLOTS_DEFAULT);
	*elems = hcl_cfg_or_env(k->ina_elems, "HCL_INA_ELEMS", INA_ELEMS_DEFAULT);
	if (*slots < 1 || *elems < 1 || *elems > INA_MAX_ELEMS)
		return hcl_fail(err, errlen, "%s: slots %d or elems %d out of range (elems 1..%d)", name, *slots,
				*elems, INA_MAX_ELEMS),
		       -EINVAL;
	/* a packet the host has to fragment is one no switch can aggregate:
	 * on the af_xdp testbed (MTU 3000) 4 KiB packets made every call time
	 * out, with nothing said */
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = c->info[c->rank].tor.ip,
				   .sin_port = c->info[c->rank].tor.port ? c->info[c->rank].tor.port : htons(9) };
	if (!dst.sin_addr.s_addr) {
		if (c->world < 2)
			return 0;
		dst = c->peers[(c->rank + 1) % c->world];
	}
	struct sockaddr_in src = c->peers[c->rank];
	src.sin_port = 0;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), mtu = 0;
	socklen_t len = sizeof(mtu);
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
			connect(fd, (struct sockaddr *)&dst, sizeof(dst)) != 0 ||
			getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &len) != 0))
		mtu = 0; /* cannot tell: the switch's counters will */
	if (fd >= 0)
		close(fd);
	int need = 20 + 8 + INA_HDR_LEN + *elems * INA_ELEM_SIZE;
	if (mtu <= 0 || need <= mtu)
		return 0;
	char a[32];
	return hcl_fail(err, errlen,
			"%s: INA packets of %d elements are %d bytes, more than the MTU %d towards %s; "
			"set HCL_INA_ELEMS (cfg.ina_elems) to %d or fewer",
			name, *elems, need, mtu, addr_s(&dst, a, sizeof(a)), (mtu - 20 - 8 - INA_HDR_LEN) / INA_ELEM_SIZE),
	       -EMSGSIZE;
}

void hcl_comm_poll_xfer(void *ctx)
{
	struct hcl_comm *c = ctx;
	hcl_xfer_poll(c->x);
}

int hcl_comm_barrier(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen)
{
	int32_t one = 1;
	int rc = hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, &one, 1, HCL_INT32, ++c->epoch,
				    deadline, err, errlen);
	if (rc == 0)
		hcl_xfer_linger(c->x, hcl_xfer_quiet_ns(c->x), deadline);
	return rc;
}

void hcl_comm_remove_tor_jobs(struct hcl_comm *c)
{
	char text[64], e2[256];
	struct sockaddr_in ctl = { .sin_family = AF_INET, .sin_addr.s_addr = c->info[c->rank].tor.ip,
				   .sin_port = htons(HCL_CTL_PORT) };
	int64_t deadline = hcl_now_ns() + 2000000000;
	for (unsigned i = 0; i < c->ntor_ids; i++) {
		snprintf(text, sizeof(text), "op = \"remove\"; id = %u;", c->tor_ids[i]);
		if (hcl_ctl_send(&c->peers[c->rank], &ctl, text, "no job", deadline, e2, sizeof(e2)) == -ETIMEDOUT)
			break; /* the switch is gone: nothing left to free */
	}
	c->ntor_ids = 0;
	c->tor_jobs = false;
}

int hcl_float_dtype(const struct hcl_comm_cfg *k, const char *name, uint8_t *dtype, char *err, size_t errlen)
{
	const char *mode = getenv("HCL_INA_FP32");
	if (!k->ina_bfp && mode && strcmp(mode, "bfp") && strcmp(mode, "native") && strcmp(mode, "bf16"))
		return hcl_fail(err, errlen, "%s: HCL_INA_FP32 must be bfp, native or bf16, not '%s'", name, mode), -EINVAL;
	if (k->ina_bfp < 0 || k->ina_bfp > 3)
		return hcl_fail(err, errlen, "%s: cfg.ina_bfp must be 0..3, not %d", name, k->ina_bfp), -EINVAL;
	int m = k->ina_bfp ? k->ina_bfp : !mode ? 2 : !strcmp(mode, "bfp") ? 1 : !strcmp(mode, "bf16") ? 3 : 2;
	*dtype = m == 1 ? INA_D_BFP32 : m == 3 ? INA_D_BF16 : INA_D_FP32;
	return 0;
}

static const char *algo_name(enum hcl_algo a)
{
	static const char *const n[] = { [HCL_ALGO_RING] = "ring", [HCL_ALGO_HIER] = "hier", [HCL_ALGO_PS] = "ps",
					 [HCL_ALGO_PS_INA] = "ps-ina", [HCL_ALGO_AGENT_RING] = "agent-ring" };
	return a >= HCL_ALGO_RING && a <= HCL_ALGO_AGENT_RING ? n[a] : "?";
}

/* A pacing parameter from the environment: unset gives 0 (the default). */
static int pace_env(const char *name, double lo, double hi, double *v, char *err, size_t errlen)
{
	const char *s = getenv(name);
	*v = 0;
	if (!s || !*s)
		return 0;
	char *end;
	*v = strtod(s, &end);
	if (*end || *v < lo || *v > hi)
		return hcl_fail(err, errlen, "%s='%s': must be a number from %g to %g", name, s, lo, hi), -EINVAL;
	return 0;
}

/* The timing layer's settings, checked before the rendezvous: a rank that
 * would only fail afterwards leaves the others waiting for it. */
static int sync_cfg(const struct hcl_comm_cfg *k, struct hcl_sync_cfg *out, char *err, size_t errlen)
{
	struct hcl_sync_cfg sc = { .trace_dir = k->trace_dir ? k->trace_dir : getenv("HCL_TRACE") };
	if (sc.trace_dir && !*sc.trace_dir)
		sc.trace_dir = NULL;
	if (k->pace) {
		sc.pace = k->pace > 0;
	} else {
		const char *p = getenv("HCL_PACE");
		if (p && *p && strcmp(p, "0") && strcmp(p, "off") && strcmp(p, "1") && strcmp(p, "on"))
			return hcl_fail(err, errlen, "HCL_PACE='%s': must be 1, on, 0 or off", p), -EINVAL;
		sc.pace = p && (!strcmp(p, "1") || !strcmp(p, "on"));
	}
	double thr, rel, frac, max, win;
	if (pace_env("HCL_PACE_THRESHOLD_US", 1, 1e7, &thr, err, errlen) < 0 ||
	    pace_env("HCL_PACE_REL_THRESHOLD", 0, 1, &rel, err, errlen) < 0 ||
	    pace_env("HCL_PACE_FRACTION", 0.01, 1, &frac, err, errlen) < 0 ||
	    pace_env("HCL_PACE_MAX_US", 1, 1e7, &max, err, errlen) < 0 ||
	    pace_env("HCL_PACE_WINDOW", 1, HCL_PACE_MAX_WINDOW, &win, err, errlen) < 0)
		return -EINVAL;
	const char *r = getenv("HCL_PACE_REL_THRESHOLD");
	if (r && *r && rel == 0)
		rel = -1; /* set to 0: no relative threshold */
	sc.pace_cfg = (struct hcl_pace_cfg){ .threshold_ns = (int64_t)(thr * 1e3), .rel_threshold = rel, .fraction = frac,
					     .max_delay_ns = (int64_t)(max * 1e3), .window = (unsigned)win };
	*out = sc;
	return 0;
}

int hcl_comm_create(const struct hcl_comm_cfg *cfg, struct hcl_comm **out, char *err, size_t errlen)
{
	struct hcl_comm_cfg k = *cfg;
	int port = k.master_port;
	*out = NULL;
	if (k.rank < 0 && env_int("RANK", &k.rank) < 0)
		return hcl_fail(err, errlen, "no rank: set cfg.rank or RANK"), -EINVAL;
	struct hcl_hostfile hf;
	if (!k.hostfile)
		k.hostfile = getenv("HCL_HOSTFILE");
	if (k.hostfile && *k.hostfile) {
		int rc = hcl_hostfile_load(k.hostfile, k.rank, &hf, err, errlen);
		if (rc < 0)
			return rc;
		k.world = hf.world;
		k.master_addr = hf.master_addr;
		k.master_port = port = hf.master_port;
		k.data_addr = hf.data_addr;
		k.rack = hf.rack;
		k.ina_switch = hf.ina_switch;
	}
	if (k.world < 0 && env_int("WORLD_SIZE", &k.world) < 0)
		return hcl_fail(err, errlen, "no world size: set cfg.world or WORLD_SIZE"), -EINVAL;
	if (!k.master_addr && !(k.master_addr = getenv("MASTER_ADDR")))
		return hcl_fail(err, errlen, "no master address: set cfg.master_addr or MASTER_ADDR"), -EINVAL;
	if (!port && env_int("MASTER_PORT", &port) < 0)
		return hcl_fail(err, errlen, "no master port: set cfg.master_port or MASTER_PORT"), -EINVAL;
	if (!k.data_addr)
		k.data_addr = getenv("HCL_DATA_ADDR");
	if (k.world < 1 || k.world > HCL_XFER_MAX_PEERS || k.rank >= k.world || port < 1 || port > 65535)
		return hcl_fail(err, errlen, "rank %d of world %d, master port %d: out of range", k.rank, k.world, port),
		       -EINVAL;
	if (!k.algo)
		k.algo = HCL_ALGO_RING;
	if (k.algo < HCL_ALGO_RING || k.algo > HCL_ALGO_AGENT_RING)
		return hcl_fail(err, errlen, "unknown algorithm %d", (int)k.algo), -EINVAL;
	/* a negative one would be a deadline already passed (or, in ns, an overflow) */
	if (k.timeout_ms < 0 || k.timeout_ms > 86400000)
		return hcl_fail(err, errlen, "timeout %lld ms: want 0 (default) to 86400000", (long long)k.timeout_ms),
		       -EINVAL;
	struct sockaddr_in master = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, k.master_addr, &master.sin_addr) != 1)
		return hcl_fail(err, errlen, "master address '%s' is not an IPv4 address", k.master_addr), -EINVAL;
	struct hcl_sync_cfg sc;
	if (sync_cfg(&k, &sc, err, errlen) < 0)
		return -EINVAL;
	/* the transfer's limit on our data in the host's queue: bytes (up
	 * to 1 MiB) or "off" */
	const char *lq = getenv("HCL_XFER_LOCAL_QUEUE");
	int local_queue = 0;
	if (lq && strcmp(lq, "off") == 0)
		local_queue = -1;
	else if (lq && *lq && env_int("HCL_XFER_LOCAL_QUEUE", &local_queue) < 0)
		return hcl_fail(err, errlen, "HCL_XFER_LOCAL_QUEUE=%s: want bytes (0..1048576) or off", lq), -EINVAL;

	struct hcl_comm *c = calloc(1, sizeof(*c));
	if (!c)
		return hcl_fail(err, errlen, "out of memory"), -ENOMEM;
	c->rank = k.rank;
	c->world = k.world;
	c->algo = k.algo;
	c->timeout_ns = (k.timeout_ms ? k.timeout_ms : 30000) * 1000000;
	int rc;
	struct hcl_udp_opts data_opts = { 0 };
	c->peers = calloc((size_t)k.world, sizeof(*c->peers));
	c->ina_ports = calloc((size_t)k.world, sizeof(*c->ina_ports));
	c->racks = calloc((size_t)k.world, sizeof(*c->racks));
	c->info = calloc((size_t)k.world, sizeof(*c->info));
	if (!c->peers || !c->ina_ports || !c->racks || !c->info) {
		rc = hcl_fail(err, errlen, "out of memory");
		goto fail;
	}
	if (k.algo == HCL_ALGO_PS || k.algo == HCL_ALGO_PS_INA || k.algo == HCL_ALGO_AGENT_RING) {
		int ip = hcl_cfg_or_env(k.ina_port, "HCL_INA_PORT", 48864);
		if (ip < 1 || ip > 65535) {
			rc = hcl_fail(err, errlen, "INA port %d out of range", ip);
			goto fail;
		}
		c->ina_ports[c->rank] = (uint16_t)ip;
		/* the INA socket and a software PS or ring member bind these
		 * ports on the data address later: the data socket's kernel-
		 * chosen port must not take one of them first */
		data_opts.avoid_ports[0] = (uint16_t)ip;
		int ps = hcl_cfg_or_env(0, "HCL_PS_PORT", HCL_PS_PORT_DEFAULT);
		if (ps >= 1 && ps <= 65535)
			data_opts.avoid_ports[1] = (uint16_t)ps;
		if ((rc = hcl_psina_shard_count(c, &k, err, errlen)) < 0)
			goto fail;
		for (unsigned h = 1; h < c->ps_shards; h++) /* the shard this rank hosts, if any */
			if (hcl_psina_shard_host(h, c->ps_shards, (unsigned)c->world) == c->rank && ps + h <= 65535)
				data_opts.avoid_ports[2] = (uint16_t)(ps + h);
	}
	if ((rc = hcl_chan_init(&c->chan, c->algo, k.ring_channels, c->rank, c->world, err, errlen)) < 0)
		goto fail;
	int rack = k.rack;
	if (rack < 0 && env_int("HCL_RACK", &rack) < 0)
		rack = 0;
	c->racks[c->rank] = rack;
	const char *tor = k.ina_switch ? k.ina_switch : getenv("HCL_INA_SWITCH");
	if ((c->algo == HCL_ALGO_PS_INA || c->algo == HCL_ALGO_AGENT_RING) && tor && *tor &&
	    parse_tor(tor, &c->info[c->rank].tor) < 0) {
		rc = hcl_fail(err, errlen, "the INA switch must be \"ip:port\", not '%s'", tor);
		goto fail;
	}
	int64_t deadline = hcl_now_ns() + c->timeout_ns;
	if (c->rank == 0) {
		struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(k.data_port),
					  .sin_addr = master.sin_addr };
		if (k.data_addr && inet_pton(AF_INET, k.data_addr, &me.sin_addr) != 1) {
			rc = hcl_fail(err, errlen, "data address '%s' is not an IPv4 address", k.data_addr);
			goto fail;
		}
		if ((rc = hcl_udp_open(&c->t, &me, &data_opts, err, errlen)) < 0)
			goto fail;
		hcl_udp_local(&c->t, &c->peers[0]);
		if ((rc = hcl_chan_open(&c->chan, &c->peers[0], &data_opts, err, errlen)) < 0)
			goto fail;
		hcl_mac_local(c->peers[0].sin_addr.s_addr, c->info[0].ina.mac);
		rc = rendezvous_master(c, &master, deadline, err, errlen);
	} else {
		rc = rendezvous_client(c, &master, k.data_addr, k.data_port, &data_opts, deadline, err, errlen);
	}
	if (rc < 0)
		goto fail;
	struct hcl_xfer_cfg xc = { .rank = (unsigned)c->rank, .nranks = (unsigned)c->world, .peers = c->peers,
				   .payload = (uint32_t)hcl_cfg_or_env(0, "HCL_XFER_PAYLOAD", 0),
				   .window = (uint32_t)hcl_cfg_or_env(0, "HCL_XFER_WINDOW", 0),
				   .local_queue = local_queue < 0 ? UINT32_MAX : (uint32_t)local_queue };
	if (!(c->x = hcl_xfer_new(&xc, &c->t, err, errlen))) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = hcl_chan_start(&c->chan, c->peers, &xc, err, errlen)) < 0)
		goto fail;
	if ((c->algo == HCL_ALGO_PS_INA || c->algo == HCL_ALGO_PS) && (rc = hcl_psina_setup(c, &k, deadline, err, errlen)) < 0)
		goto fail;
	if (c->algo == HCL_ALGO_AGENT_RING && (rc = hcl_aring_setup(c, &k, deadline, err, errlen)) < 0)
		goto fail;
	if (!(c->sync = hcl_sync_new(&sc, c->x, c->rank, c->world, algo_name(c->algo), deadline, err, errlen))) {
		rc = -EINVAL;
		goto fail;
	}
	c->ready = true;
	*out = c;
	return 0;
fail:
	hcl_comm_destroy(c);
	return rc < 0 && rc != -1 ? rc : -ECONNABORTED;
}

void hcl_comm_destroy(struct hcl_comm *c)
{
	if (!c)
		return;
	if (c->ready && (c->algo == HCL_ALGO_PS || c->algo == HCL_ALGO_PS_INA || c->algo == HCL_ALGO_AGENT_RING)) {
		/* everyone is done with the aggregators before they go; a dead
		 * peer only shortens the wait to the barrier's deadline */
		char e[64];
		int64_t t = c->timeout_ns < 10000000000 ? c->timeout_ns : 10000000000;
		hcl_comm_barrier(c, hcl_now_ns() + t, e, sizeof(e));
	}
	if (c->tor_jobs) /* also after a failed start: leave the switch clean */
		hcl_comm_remove_tor_jobs(c);
	if (c->x) /* our last ACKs may be lost: answer re-sends before leaving */
		hcl_xfer_linger_final(c->x, hcl_now_ns() + 2000000000);
	hcl_chan_close(&c->chan);
	hcl_sync_free(c->sync);
	hcl_psina_plan_free(&c->plan[0]);
	hcl_psina_plan_free(&c->plan[1]);
	hcl_aring_teardown(c);
	hcl_xfer_free(c->x);
	hcl_ina_free(c->ina);
	hcl_ina_free(c->ina_i32);
	hcl_ps_stop(c->ps);
	hcl_transport_close(&c->ina_t);
	hcl_transport_close(&c->t);
	free(c->peers);
	free(c->ina_ports);
	free(c->racks);
	free(c->info);
	free(c->scratch);
	free(c);
}

static int allreduce_algo(const void *send, void *recv, size_t count, enum hcl_dtype dtype, enum hcl_op op,
			  struct hcl_comm *c);

/* The algorithm, inside the timing and pacing layer when that is on. */
int hcl_allreduce(const void *send, void *recv, size_t count, enum hcl_dtype dtype, enum hcl_op op,
		  struct hcl_comm *c)
{
	if (!c)
		return -EINVAL;
	if (!hcl_sync_on(c->sync))
		return allreduce_algo(send, recv, count, dtype, op, c);
	hcl_sync_before(c->sync);
	int rc = allreduce_algo(send, recv, count, dtype, op, c);
	if (rc == 0)
		hcl_sync_after(c->sync, count * (dtype == HCL_BF16 ? 2 : 4));
	return rc;
}

void hcl_iter_begin(struct hcl_comm *c)
{
	if (c)
		hcl_sync_iter_begin(c->sync);
}

void hcl_iter_end(struct hcl_comm *c)
{
	if (c)
		hcl_sync_iter_end(c->sync);
}

int hcl_comm_sync_summary(const struct hcl_comm *c, struct hcl_sync_summary *out)
{
	if (!c || !out)
		return -EINVAL;
	if (!hcl_sync_on(c->sync))
		return -ENODATA;
	hcl_sync_summary(c->sync, out);
	return 0;
}

int hcl_comm_rank(const struct hcl_comm *c) { return c->rank; }
int hcl_comm_world(const struct hcl_comm *c) { return c->world; }
size_t hcl_comm_cfg_size(void) { return sizeof(struct hcl_comm_cfg); }
const char *hcl_comm_error(const struct hcl_comm *c) { return c->err; }

static void *scratch(struct hcl_comm *c, size_t bytes)
{
	if (bytes > c->scratch_bytes) {
		void *p = realloc(c->scratch, bytes);
		if (!p) {
			snprintf(c->err, sizeof(c->err), "allreduce: no memory for a %zu-byte conversion buffer", bytes);
			return NULL;
		}
		c->scratch = p;
		c->scratch_bytes = bytes;
	}
	return c->scratch;
}

static float bf16_widen(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t bf16_narrow(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return ina_f32_to_bf16(u);
}

static bool bf16_on_wire(const struct hcl_comm *c)
{
	return (c->algo == HCL_ALGO_PS_INA || c->algo == HCL_ALGO_PS || c->algo == HCL_ALGO_AGENT_RING) &&
	       c->float_dtype == INA_D_BF16;
}

/* bf16 elements through the float job of an INA algorithm. */
static int float_job_bf16(struct hcl_comm *c, const uint16_t *send, uint16_t *recv, size_t count, int64_t deadline)
{
	if (c->algo == HCL_ALGO_AGENT_RING) {
		int rc = hcl_aring_allreduce(c->aring[0], send, recv, count, deadline, c->err, sizeof(c->err));
		if (rc == 0)
			hcl_aring_report(c, 0, count);
		return rc;
	}
	if (send != recv && count)
		memmove(recv, send, count * 2);
	return hcl_ina_allreduce(c->ina, recv, count, HCL_BF16, deadline, c->err, sizeof(c->err));
}

static int allreduce_sum(const void *send, void *recv, size_t count, enum hcl_dtype dtype, struct hcl_comm *c);

/* bf16: over a bf16 job as they are; otherwise widened to binary32, summed
 * by the fp32 path (and averaged there), rounded once. */
static int allreduce_bf16(const uint16_t *send, uint16_t *recv, size_t count, bool avg, struct hcl_comm *c)
{
	float n = (float)c->world;
	if (bf16_on_wire(c)) {
		int rc = float_job_bf16(c, send, recv, count, hcl_now_ns() + c->timeout_ns);
		for (size_t i = 0; rc == 0 && avg && i < count; i++)
			recv[i] = bf16_narrow(bf16_widen(recv[i]) / n);
		return rc;
	}
	float *w = scratch(c, count * 4);
	if (!w && count)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		w[i] = bf16_widen(send[i]);
	int rc = allreduce_sum(w, w, count, HCL_FP32, c);
	for (size_t i = 0; rc == 0 && i < count; i++)
		recv[i] = bf16_narrow(avg ? w[i] / n : w[i]);
	return rc;
}

/* fp32 over a bf16 job: each value rounded to bf16 before it leaves. */
static int fp32_over_bf16(const float *send, float *recv, size_t count, int64_t deadline, struct hcl_comm *c)
{
	uint16_t *h = scratch(c, count * 2);
	if (!h && count)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		h[i] = bf16_narrow(send[i]);
	int rc = float_job_bf16(c, h, h, count, deadline);
	for (size_t i = 0; rc == 0 && i < count; i++)
		recv[i] = bf16_widen(h[i]);
	return rc;
}

/* avg = the sum divided by the world size, in the call's type: int32
 * rounds toward zero; bf16 divides the binary32 sum before its one
 * rounding (over BF16 jobs the sum is rounded already, so twice). */
static int allreduce_algo(const void *send, void *recv, size_t count, enum hcl_dtype dtype, enum hcl_op op,
			  struct hcl_comm *c)
{
	if ((op != HCL_SUM && op != HCL_AVG) || (count && (!send || !recv))) {
		snprintf(c->err, sizeof(c->err), "allreduce: op %d: want HCL_SUM or HCL_AVG, and buffers for %zu elements",
			 (int)op, count);
		return -EINVAL;
	}
	if (dtype != HCL_INT32 && dtype != HCL_FP32 && dtype != HCL_BF16) {
		snprintf(c->err, sizeof(c->err), "allreduce: data type %d: want HCL_INT32, HCL_FP32 or HCL_BF16",
			 (int)dtype);
		return -EINVAL;
	}
	bool avg = op == HCL_AVG;
	if (dtype == HCL_BF16)
		return allreduce_bf16(send, recv, count, avg, c);
	int rc = allreduce_sum(send, recv, count, dtype, c);
	if (rc == 0 && avg && dtype == HCL_FP32) {
		float *f = recv, n = (float)c->world;
		for (size_t i = 0; i < count; i++)
			f[i] /= n;
	} else if (rc == 0 && avg) {
		int32_t *v = recv;
		for (size_t i = 0; i < count; i++)
			v[i] /= c->world;
	}
	return rc;
}

static int allreduce_sum(const void *send, void *recv, size_t count, enum hcl_dtype dtype, struct hcl_comm *c)
{
	if (dtype == HCL_FP32 && bf16_on_wire(c))
		return fp32_over_bf16(send, recv, count, hcl_now_ns() + c->timeout_ns, c);
	if (c->algo == HCL_ALGO_AGENT_RING) {
		int d = dtype == HCL_INT32;
		int rc = hcl_aring_allreduce(c->aring[d], send, recv, count, hcl_now_ns() + c->timeout_ns, c->err,
					     sizeof(c->err));
		if (rc == 0)
			hcl_aring_report(c, d, count);
		return rc;
	}
	if (send != recv && count)
		memmove(recv, send, count * 4);
	int64_t deadline = hcl_now_ns() + c->timeout_ns;
	if ((c->algo == HCL_ALGO_PS_INA || c->algo == HCL_ALGO_PS) && dtype == HCL_FP32 &&
	    c->float_dtype == INA_D_BFP32)
		return hcl_ina_allreduce_bfp(c->ina, recv, count, (unsigned)c->world, deadline, c->err, sizeof(c->err));
	if (c->algo == HCL_ALGO_PS_INA || c->algo == HCL_ALGO_PS)
		return hcl_ina_allreduce(dtype == HCL_INT32 ? c->ina_i32 : c->ina, recv, count, dtype, deadline, c->err,
					 sizeof(c->err));
	unsigned channels = hcl_chan_use(&c->chan, count * 4); /* 1 unless the ring has channels */
	if (channels > 1)
		return hcl_chan_ring_allreduce(&c->chan, c->x, ++c->epoch, channels, recv, count, dtype, deadline, c->err,
					       sizeof(c->err));
	int rc = c->algo == HCL_ALGO_HIER
			 ? hcl_hier_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, c->racks, recv, count, dtype,
					      ++c->epoch, deadline, c->err, sizeof(c->err))
			 : hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, recv, count, dtype, ++c->epoch,
					      deadline, c->err, sizeof(c->err));
	if (rc == 0) /* our last ACK may be lost: answer a resend for a while */
		hcl_xfer_linger(c->x, hcl_xfer_quiet_ns(c->x), deadline);
	return rc;
}
