/* Communicator: rendezvous over TCP at the master (rank 0), then the data
 * path over the chosen transport.  Rendezvous lines (text):
 *   rank r -> master:  "HCL1 <rank> <world> <data ip> <data port>\n"
 *   master -> rank r:  "OK\n" then world lines "<ip> <port>\n" in rank order,
 *                      or "ERR <why>\n". */
#define _GNU_SOURCE
#include "hcl.h"
#include "hcl_ina.h"
#include "hcl_ps.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct hcl_comm {
	int rank, world;
	enum hcl_algo algo;
	int64_t timeout_ns;
	struct hcl_transport t;
	struct sockaddr_in *peers;
	uint16_t *ina_ports; /* per rank, host order */
	int *racks;          /* per rank */
	struct hcl_xfer *x;
	struct hcl_transport ina_t; /* ps, ps-ina: its own socket on the job's port */
	struct hcl_ina *ina;        /* ps-ina: the switch job; ps: the fp32 job */
	struct hcl_ina *ina_i32;    /* ps: the int32 job */
	struct hcl_ps *ps;          /* ps, rank 0: the server */
	uint32_t epoch;
	char err[320];
};

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t n, const char *fmt, ...)
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
		return fail(err, errlen, "rendezvous: cannot listen on %s: %s", addr_s(master, a, sizeof(a)), strerror(e));
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
			rc = fail(err, errlen, "rendezvous: %d of %d ranks did not arrive in time (missing: %s)",
				  c->world - 1 - got, c->world - 1, missing);
			goto out;
		}
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		char line[160], ip[64];
		int r, w;
		unsigned port, iport;
		int rk;
		if (read_line(fd, line, sizeof(line), deadline) <= 0 ||
		    sscanf(line, "HCL1 %d %d %63s %u %u %d", &r, &w, ip, &port, &iport, &rk) != 6 || iport > 65535 ||
		    rk < 0) {
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
		if (why) {
			char m[200];
			snprintf(m, sizeof(m), "ERR rank %d: %s\n", r, why);
			write_all(fd, m);
			close(fd);
			rc = fail(err, errlen, "rendezvous: a rank announced itself as %d of %d: %s", r, w, why);
			goto out;
		}
		fds[r] = fd;
		c->peers[r] = pa;
		c->ina_ports[r] = (uint16_t)iport;
		c->racks[r] = rk;
		got++;
	}
	/* the table, to everyone */
	size_t cap = (size_t)c->world * 64 + 8, len = 0;
	char *table = malloc(cap);
	len += (size_t)snprintf(table, cap, "OK\n");
	for (int i = 0; i < c->world; i++) {
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &c->peers[i].sin_addr, ip, sizeof(ip));
		len += (size_t)snprintf(table + len, cap - len, "%s %u %u %d\n", ip, ntohs(c->peers[i].sin_port),
					c->ina_ports[i], c->racks[i]);
	}
	for (int i = 1; i < c->world; i++)
		if (write_all(fds[i], table) < 0)
			rc = fail(err, errlen, "rendezvous: rank %d went away before the table was sent", i);
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
			     uint16_t data_port, int64_t deadline, char *err, size_t errlen)
{
	char a[64];
	int fd = -1;
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(err, errlen, "rendezvous: socket: %s", strerror(errno));
		if (connect(fd, (const struct sockaddr *)master, sizeof(*master)) == 0)
			break;
		int e = errno;
		close(fd);
		if (hcl_now_ns() >= deadline)
			return fail(err, errlen, "rendezvous: master %s not reachable in time: %s",
				    addr_s(master, a, sizeof(a)), strerror(e));
		struct timespec ts = { 0, 50000000 }; /* retry: the master may start later */
		nanosleep(&ts, NULL);
	}
	/* the data address: given, or the one that reaches the master */
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(data_port) };
	if (data_addr) {
		if (inet_pton(AF_INET, data_addr, &me.sin_addr) != 1) {
			close(fd);
			return fail(err, errlen, "data address '%s' is not an IPv4 address", data_addr);
		}
	} else {
		struct sockaddr_in l;
		socklen_t ll = sizeof(l);
		getsockname(fd, (struct sockaddr *)&l, &ll);
		me.sin_addr = l.sin_addr;
	}
	int rc = hcl_udp_open(&c->t, &me, NULL, err, errlen);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	hcl_udp_local(&c->t, &me);
	char line[160], ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &me.sin_addr, ip, sizeof(ip));
	snprintf(line, sizeof(line), "HCL1 %d %d %s %u %u %d\n", c->rank, c->world, ip, ntohs(me.sin_port),
		 c->ina_ports[c->rank], c->racks[c->rank]);
	if (write_all(fd, line) < 0 || read_line(fd, line, sizeof(line), deadline) <= 0) {
		close(fd);
		return fail(err, errlen, "rendezvous: no table from master %s in time", addr_s(master, a, sizeof(a)));
	}
	if (strncmp(line, "OK", 2) != 0) {
		close(fd);
		line[strcspn(line, "\n")] = 0;
		return fail(err, errlen, "rendezvous: master %s refused: %s", addr_s(master, a, sizeof(a)), line);
	}
	for (int i = 0; i < c->world; i++) {
		unsigned port, iport;
		int rk;
		if (read_line(fd, line, sizeof(line), deadline) <= 0 ||
		    sscanf(line, "%15s %u %u %d", ip, &port, &iport, &rk) != 4 || iport > 65535 || rk < 0 ||
		    inet_pton(AF_INET, ip, &c->peers[i].sin_addr) != 1) {
			close(fd);
			return fail(err, errlen, "rendezvous: bad table from master %s", addr_s(master, a, sizeof(a)));
		}
		c->peers[i].sin_family = AF_INET;
		c->peers[i].sin_port = htons((uint16_t)port);
		c->ina_ports[i] = (uint16_t)iport;
		c->racks[i] = rk;
	}
	close(fd);
	return 0;
}

static int cfg_or_env(int v, const char *env, int dflt)
{
	int e;
	return v ? v : env_int(env, &e) == 0 ? e : dflt;
}

/* ps and ps-ina: a socket on this rank's data address at the INA port (the
 * port the job lists), and a client per job the calls may use. */
static int ina_client(struct hcl_comm *c, const struct sockaddr_in *sw, int job, int slots, int elems,
		      struct hcl_ina **out, char *err, size_t errlen)
{
	struct hcl_ina_cfg ic = { .sw = *sw, .job = (uint16_t)job, .index = (uint16_t)c->rank,
				  .slots = (uint32_t)slots, .elems = (uint16_t)elems };
	return (*out = hcl_ina_new(&ic, &c->ina_t, err, errlen)) ? 0 : -ENOMEM;
}

#define HCL_PS_PORT_DEFAULT 48870

static int ina_setup(struct hcl_comm *c, const struct hcl_comm_cfg *k, char *err, size_t errlen)
{
	int slots = cfg_or_env(k->ina_slots, "HCL_INA_SLOTS", 16), elems = cfg_or_env(k->ina_elems, "HCL_INA_ELEMS", 1024);
	if (slots < 1 || elems < 1 || elems > 2237)
		return fail(err, errlen, "%s: slots %d or elems %d out of range", c->algo == HCL_ALGO_PS ? "ps" : "ps-ina",
			    slots, elems);
	struct sockaddr_in me = c->peers[c->rank];
	me.sin_port = htons(c->ina_ports[c->rank]);
	struct hcl_udp_opts uo = { .zero_checksum = 1 }; /* as SwitchML hosts: saves the switch a pass */
	int rc = hcl_udp_open(&c->ina_t, &me, &uo, err, errlen);
	if (rc < 0)
		return rc;

	if (c->algo == HCL_ALGO_PS_INA) {
		const char *sw = k->ina_switch ? k->ina_switch : getenv("HCL_INA_SWITCH");
		struct sockaddr_in swa = { .sin_family = AF_INET };
		char ip[64];
		unsigned port;
		if (!sw || sscanf(sw, "%63[0-9.]:%u", ip, &port) != 2 || port == 0 || port > 65535 ||
		    inet_pton(AF_INET, ip, &swa.sin_addr) != 1)
			return fail(err, errlen, "ps-ina needs the switch as \"ip:port\" (cfg.ina_switch or HCL_INA_SWITCH)");
		swa.sin_port = htons((uint16_t)port);
		int job = cfg_or_env(k->ina_job, "HCL_INA_JOB", -1);
		if (job < 0 || job > 65535)
			return fail(err, errlen, "ps-ina needs the job id (cfg.ina_job or HCL_INA_JOB)");
		return ina_client(c, &swa, job, slots, elems, &c->ina, err, errlen);
	}

	/* ps: rank 0 serves jobs 1 (fp32) and 2 (int32) for every rank's INA
	 * address; the others reach it at rank 0's data address */
	int psport = cfg_or_env(0, "HCL_PS_PORT", HCL_PS_PORT_DEFAULT);
	if (psport < 1 || psport > 65535)
		return fail(err, errlen, "ps: HCL_PS_PORT %d out of range", psport);
	struct sockaddr_in psa = c->peers[0];
	psa.sin_port = htons((uint16_t)psport);
	if (c->rank == 0) {
		static struct ina_job_cfg jobs[2];
		for (int j = 0; j < 2; j++) {
			memset(&jobs[j], 0, sizeof(jobs[j]));
			jobs[j].id = (uint16_t)(j + 1);
			jobs[j].fan_in = (uint16_t)c->world;
			jobs[j].dtype = j == 0 ? INA_D_FP32 : INA_D_INT32;
			jobs[j].nslots = (uint32_t)slots;
			jobs[j].elems_per_slot = (uint16_t)elems;
			jobs[j].outputs = INA_OUT_MULTICAST;
			jobs[j].upstream_index = -1;
			for (int r = 0; r < c->world; r++)
				jobs[j].contributors[r] = (struct ina_addr){ .ip = c->peers[r].sin_addr.s_addr,
									     .port = htons(c->ina_ports[r]) };
		}
		if (!(c->ps = hcl_ps_start(&psa, jobs, 2, err, errlen)))
			return -ENOMEM;
	}
	if ((rc = ina_client(c, &psa, 1, slots, elems, &c->ina, err, errlen)) < 0)
		return rc;
	return ina_client(c, &psa, 2, slots, elems, &c->ina_i32, err, errlen);
}

int hcl_comm_create(const struct hcl_comm_cfg *cfg, struct hcl_comm **out, char *err, size_t errlen)
{
	struct hcl_comm_cfg k = *cfg;
	int port = k.master_port;
	*out = NULL;
	if (k.rank < 0 && env_int("RANK", &k.rank) < 0)
		return fail(err, errlen, "no rank: set cfg.rank or RANK"), -EINVAL;
	if (k.world < 0 && env_int("WORLD_SIZE", &k.world) < 0)
		return fail(err, errlen, "no world size: set cfg.world or WORLD_SIZE"), -EINVAL;
	if (!k.master_addr && !(k.master_addr = getenv("MASTER_ADDR")))
		return fail(err, errlen, "no master address: set cfg.master_addr or MASTER_ADDR"), -EINVAL;
	if (!port && env_int("MASTER_PORT", &port) < 0)
		return fail(err, errlen, "no master port: set cfg.master_port or MASTER_PORT"), -EINVAL;
	if (!k.data_addr)
		k.data_addr = getenv("HCL_DATA_ADDR");
	if (k.world < 1 || k.world > HCL_XFER_MAX_PEERS || k.rank >= k.world || port < 1 || port > 65535)
		return fail(err, errlen, "rank %d of world %d, master port %d: out of range", k.rank, k.world, port),
		       -EINVAL;
	if (!k.algo)
		k.algo = HCL_ALGO_RING;
	if (k.algo < HCL_ALGO_RING || k.algo > HCL_ALGO_AGENT_RING)
		return fail(err, errlen, "unknown algorithm %d", (int)k.algo), -EINVAL;
	struct sockaddr_in master = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, k.master_addr, &master.sin_addr) != 1)
		return fail(err, errlen, "master address '%s' is not an IPv4 address", k.master_addr), -EINVAL;

	struct hcl_comm *c = calloc(1, sizeof(*c));
	if (!c)
		return fail(err, errlen, "out of memory"), -ENOMEM;
	c->rank = k.rank;
	c->world = k.world;
	c->algo = k.algo;
	c->timeout_ns = (k.timeout_ms ? k.timeout_ms : 30000) * 1000000;
	int rc;
	c->peers = calloc((size_t)k.world, sizeof(*c->peers));
	c->ina_ports = calloc((size_t)k.world, sizeof(*c->ina_ports));
	c->racks = calloc((size_t)k.world, sizeof(*c->racks));
	if (!c->peers || !c->ina_ports || !c->racks) {
		rc = fail(err, errlen, "out of memory");
		goto fail;
	}
	if (k.algo == HCL_ALGO_PS || k.algo == HCL_ALGO_PS_INA) {
		int ip = cfg_or_env(k.ina_port, "HCL_INA_PORT", 48864);
		if (ip < 1 || ip > 65535) {
			rc = fail(err, errlen, "INA port %d out of range", ip);
			goto fail;
		}
		c->ina_ports[c->rank] = (uint16_t)ip;
	}
	int rack = k.rack;
	if (rack < 0 && env_int("HCL_RACK", &rack) < 0)
		rack = 0;
	c->racks[c->rank] = rack;
	int64_t deadline = hcl_now_ns() + c->timeout_ns;
	if (c->rank == 0) {
		struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(k.data_port),
					  .sin_addr = master.sin_addr };
		if (k.data_addr && inet_pton(AF_INET, k.data_addr, &me.sin_addr) != 1) {
			rc = fail(err, errlen, "data address '%s' is not an IPv4 address", k.data_addr);
			goto fail;
		}
		if ((rc = hcl_udp_open(&c->t, &me, NULL, err, errlen)) < 0)
			goto fail;
		hcl_udp_local(&c->t, &c->peers[0]);
		rc = rendezvous_master(c, &master, deadline, err, errlen);
	} else {
		rc = rendezvous_client(c, &master, k.data_addr, k.data_port, deadline, err, errlen);
	}
	if (rc < 0)
		goto fail;
	struct hcl_xfer_cfg xc = { .rank = (unsigned)c->rank, .nranks = (unsigned)c->world, .peers = c->peers };
	if (!(c->x = hcl_xfer_new(&xc, &c->t, err, errlen))) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((c->algo == HCL_ALGO_PS_INA || c->algo == HCL_ALGO_PS) && (rc = ina_setup(c, &k, err, errlen)) < 0)
		goto fail;
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
	hcl_xfer_free(c->x);
	hcl_ina_free(c->ina);
	hcl_ina_free(c->ina_i32);
	hcl_ps_stop(c->ps);
	hcl_transport_close(&c->ina_t);
	hcl_transport_close(&c->t);
	free(c->peers);
	free(c->ina_ports);
	free(c->racks);
	free(c);
}

int hcl_comm_rank(const struct hcl_comm *c) { return c->rank; }
int hcl_comm_world(const struct hcl_comm *c) { return c->world; }
const char *hcl_comm_error(const struct hcl_comm *c) { return c->err; }

int hcl_allreduce(const void *send, void *recv, size_t count, enum hcl_dtype dtype, enum hcl_op op,
		  struct hcl_comm *c)
{
	if (!c)
		return -EINVAL;
	if (op != HCL_SUM || (count && (!send || !recv))) {
		snprintf(c->err, sizeof(c->err), "allreduce: only op sum, and buffers for %zu elements", count);
		return -EINVAL;
	}
	if (c->algo == HCL_ALGO_AGENT_RING) {
		snprintf(c->err, sizeof(c->err), "allreduce: algorithm %d is not implemented yet", (int)c->algo);
		return -ENOTSUP;
	}
	if (send != recv && count)
		memmove(recv, send, count * 4);
	int64_t deadline = hcl_now_ns() + c->timeout_ns;
	if (c->algo == HCL_ALGO_PS_INA)
		return hcl_ina_allreduce(c->ina, recv, count, dtype, deadline, c->err, sizeof(c->err));
	if (c->algo == HCL_ALGO_PS)
		return hcl_ina_allreduce(dtype == HCL_INT32 ? c->ina_i32 : c->ina, recv, count, dtype, deadline, c->err,
					 sizeof(c->err));
	int rc = c->algo == HCL_ALGO_HIER
			 ? hcl_hier_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, c->racks, recv, count, dtype,
					      ++c->epoch, deadline, c->err, sizeof(c->err))
			 : hcl_ring_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, recv, count, dtype, ++c->epoch,
					      deadline, c->err, sizeof(c->err));
	if (rc == 0) /* our last ACK may be lost: answer a resend for a while */
		hcl_xfer_linger(c->x, 2 * hcl_xfer_rto_ns(c->x) + 1000000, deadline);
	return rc;
}
