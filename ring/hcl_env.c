/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_env.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_hostfile.h"
#include "hcl_pace.h"
#include "hcl_xfer.h"
#include "ina_proto.h"
#include "parse.h"

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *env(const char *name)
{
	const char *s = getenv(name);
	return s && *s ? s : NULL;
}

/* A switch in the environment: 1 (1 or on), 0 (0 or off), -1 when unset;
 * -EINVAL for anything else, named in err. */
static int on_off(const char *name, char *err, size_t errlen)
{
	const char *s = env(name);
	if (!s)
		return -1;
	if (!strcmp(s, "1") || !strcmp(s, "on"))
		return 1;
	if (!strcmp(s, "0") || !strcmp(s, "off"))
		return 0;
	return bad(err, errlen, "%s='%s': must be 1, on, 0 or off", name, s);
}

/* An integer setting: cfg's value if not 0, else the environment's, else
 * dflt; in lo..hi either way. */
static int int_setting(long long cfg, const char *cfg_name, const char *name, long long lo, long long hi,
		       long long dflt, long long *v, char *err, size_t errlen)
{
	const char *s = env(name);
	if (cfg) {
		if (cfg < lo || cfg > hi)
			return bad(err, errlen, "cfg.%s = %lld: want %lld to %lld", cfg_name, cfg, lo, hi);
		*v = cfg;
	} else if (s) {
		if (parse_int(s, lo, hi, v) < 0)
			return bad(err, errlen, "%s=%s: want an integer from %lld to %lld", name, s, lo, hi);
	} else {
		*v = dflt;
	}
	return 0;
}

/* The job's shared secret for the rendezvous: a file (HCL_JOB_TOKEN_FILE,
 * mode 0600) or the variable itself (HCL_JOB_TOKEN); at least 16 bytes,
 * so that strangers cannot guess it. */
static int job_token(struct hcl_env *e, char *err, size_t errlen)
{
	const char *file = env("HCL_JOB_TOKEN_FILE"), *tok = env("HCL_JOB_TOKEN");
	char why[300];
	if (file && tok)
		return bad(err, errlen, "HCL_JOB_TOKEN and HCL_JOB_TOKEN_FILE: set one of them");
	if (file && ctl_key_load(file, &e->job_token, why, sizeof(why)) < 0)
		return bad(err, errlen, "HCL_JOB_TOKEN_FILE: %s", why);
	if (tok) {
		size_t n = strlen(tok);
		if (n < CTL_AUTH_KEY_MIN || n > CTL_AUTH_KEY_MAX)
			return bad(err, errlen, "HCL_JOB_TOKEN: %zu characters; want %d to %d", n, CTL_AUTH_KEY_MIN,
				   CTL_AUTH_KEY_MAX);
		memcpy(e->job_token.k, tok, n);
		e->job_token.len = n;
	}
	return 0;
}

/* A pacing parameter: unset gives 0 (the pacing layer's default). */
static int pace_param(const char *name, double lo, double hi, double *v, char *err, size_t errlen)
{
	const char *s = env(name);
	*v = 0;
	if (s && parse_double(s, lo, hi, v) < 0)
		return bad(err, errlen, "%s='%s': must be a number from %g to %g", name, s, lo, hi);
	return 0;
}

static int sync_settings(const struct hcl_comm_cfg *k, struct hcl_env *e, char *err, size_t errlen)
{
	const char *trace = k->trace_dir ? k->trace_dir : env("HCL_TRACE");
	if (trace && *trace) {
		if (strlen(trace) >= sizeof(e->trace_dir))
			return bad(err, errlen, "trace directory '%.40s...' is too long", trace);
		snprintf(e->trace_dir, sizeof(e->trace_dir), "%s", trace);
		e->sync.trace_dir = e->trace_dir;
	}
	const int p = on_off("HCL_PACE", err, errlen);
	if (p == -EINVAL)
		return p;
	if (k->pace)
		e->sync.pace = k->pace > 0;
	else if (p >= 0)
		e->sync.pace = p;
	double thr, rel, frac, max, win;
	if (pace_param("HCL_PACE_THRESHOLD_US", 1, 1e7, &thr, err, errlen) < 0 ||
	    pace_param("HCL_PACE_REL_THRESHOLD", 0, 1, &rel, err, errlen) < 0 ||
	    pace_param("HCL_PACE_FRACTION", 0.01, 1, &frac, err, errlen) < 0 ||
	    pace_param("HCL_PACE_MAX_US", 1, 1e7, &max, err, errlen) < 0 ||
	    pace_param("HCL_PACE_WINDOW", 1, HCL_PACE_MAX_WINDOW, &win, err, errlen) < 0)
		return -EINVAL;
	if (env("HCL_PACE_REL_THRESHOLD") && rel == 0)
		rel = -1; /* set to 0: no relative threshold */
	e->sync.pace_cfg = (struct hcl_pace_cfg){ .threshold_ns = (int64_t)(thr * 1e3),
						  .rel_threshold = rel,
						  .fraction = frac,
						  .max_delay_ns = (int64_t)(max * 1e3),
						  .window = (unsigned)win };
	return 0;
}

/* Who and where: rank, world, master, this rank's data address and rack,
 * from cfg, a host file or the environment. */
static int placement(const struct hcl_comm_cfg *k, struct hcl_env *e, char *err, size_t errlen)
{
	long long v;
	const char *master = k->master_addr, *data = k->data_addr, *sw = k->ina_switch;
	int port = k->master_port, world = k->world, rack = k->rack;
	struct hcl_hostfile hf;
	if (k->rank >= 0)
		e->rank = k->rank;
	else if (!env("RANK"))
		return bad(err, errlen, "no rank: set cfg.rank or RANK");
	else if (parse_int(env("RANK"), 0, HCL_XFER_MAX_PEERS - 1, &v) < 0)
		return bad(err, errlen, "RANK=%s: want an integer from 0 to %d", env("RANK"), HCL_XFER_MAX_PEERS - 1);
	else
		e->rank = (int)v;
	const char *hostfile = k->hostfile ? k->hostfile : env("HCL_HOSTFILE");
	if (hostfile && *hostfile) {
		int rc = hcl_hostfile_load(hostfile, e->rank, &hf, err, errlen);
		if (rc < 0)
			return rc;
		world = hf.world;
		master = hf.master_addr;
		port = hf.master_port;
		data = hf.data_addr;
		rack = hf.rack;
		sw = hf.ina_switch[0] ? hf.ina_switch : NULL;
	}
	if (world < 0 && !env("WORLD_SIZE"))
		return bad(err, errlen, "no world size: set cfg.world or WORLD_SIZE");
	if (world < 0 && parse_int(env("WORLD_SIZE"), 1, HCL_XFER_MAX_PEERS, &v) < 0)
		return bad(err, errlen, "WORLD_SIZE=%s: want an integer from 1 to %d", env("WORLD_SIZE"),
			   HCL_XFER_MAX_PEERS);
	if (world < 0)
		world = (int)v;
	if (!master && !(master = env("MASTER_ADDR")))
		return bad(err, errlen, "no master address: set cfg.master_addr or MASTER_ADDR");
	if (!port && !env("MASTER_PORT"))
		return bad(err, errlen, "no master port: set cfg.master_port or MASTER_PORT");
	if (!port && parse_int(env("MASTER_PORT"), 1, 65535, &v) < 0)
		return bad(err, errlen, "MASTER_PORT=%s: want an integer from 1 to 65535", env("MASTER_PORT"));
	if (!port)
		port = (int)v;
	if (world < 1 || world > HCL_XFER_MAX_PEERS || e->rank >= world || port < 1 || port > 65535)
		return bad(err, errlen, "rank %d of world %d, master port %d: out of range", e->rank, world, port);
	e->world = world;
	e->master = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, master, &e->master.sin_addr) != 1)
		return bad(err, errlen, "master address '%s' is not an IPv4 address", master);
	snprintf(e->master_ip, sizeof(e->master_ip), "%s", master);
	if (!data)
		data = env("HCL_DATA_ADDR");
	e->data = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(k->data_port) };
	if (data && inet_pton(AF_INET, data, &e->data.sin_addr) != 1)
		return bad(err, errlen, "data address '%s' is not an IPv4 address", data);
	if (data)
		snprintf(e->data_ip, sizeof(e->data_ip), "%s", data);
	if (rack < 0 && int_setting(0, "rack", "HCL_RACK", 0, 1 << 20, 0, &v, err, errlen) < 0)
		return -EINVAL;
	e->rack = rack >= 0 ? rack : (int)v;
	if (!sw)
		sw = env("HCL_INA_SWITCH");
	if (sw && parse_endpoint(sw, INA_HOST_PORT, &e->ina_switch) < 0)
		return bad(err, errlen,
			   "the INA switch must be \"a.b.c.d[:port]\" (or \":lo-hi\", its ports), not '%s'", sw);
	/* a switch at INA's first port takes all 16 (swemu's partitions split
	 * them over lcores): each slot then keeps one port at every hop;
	 * "ip:48864-48864" pins one */
	if (e->ina_switch.port == htons(INA_UDP_PORT_MIN) && !e->ina_switch.nports)
		e->ina_switch.nports = INA_UDP_PORTS;
	const char *key = env("HCL_INA_KEY_FILE");
	char why[300];
	if (key && ctl_key_load(key, &e->ina_key, why, sizeof(why)) < 0)
		return bad(err, errlen, "HCL_INA_KEY_FILE: %s", why);
	return job_token(e, err, errlen);
}

/* The float job's wire format of ps, ps-ina and agent-ring. */
static int float_wire(const struct hcl_comm_cfg *k, struct hcl_env *e, char *err, size_t errlen)
{
	const char *m = env("HCL_INA_FP32");
	if (k->ina_bfp < 0 || k->ina_bfp > 3)
		return bad(err, errlen, "cfg.ina_bfp must be 0..3, not %d", k->ina_bfp);
	if (!k->ina_bfp && m && strcmp(m, "bfp") && strcmp(m, "native") && strcmp(m, "bf16"))
		return bad(err, errlen, "HCL_INA_FP32 must be bfp, native or bf16, not '%s'", m);
	int mode = k->ina_bfp ? k->ina_bfp : !m ? 2 : !strcmp(m, "bfp") ? 1 : !strcmp(m, "bf16") ? 3 : 2;
	e->float_wire = mode == 1 ? INA_D_BFP32 : mode == 3 ? INA_D_BF16 : INA_D_FP32;
	return 0;
}

/* 2048 elements (8 KiB of fp32 in a jumbo frame, as the transfer's
 * datagrams) and 8 in flight per job: the 64 KiB that 1024 x 16 had, in
 * half the packets, which is what hosts and software members pay for
 * (BENCHMARKS.md, "The default trial").  swemu's max_elems default is
 * 2048. */
#define INA_ELEMS_DEFAULT 2048
#define INA_SLOTS_DEFAULT 8

/* The first switch job id: a number, or "auto" (0; the default): the
 * rendezvous master picks one at random, so that jobs of other
 * communicators on the same switch rarely want the same ids (and when
 * they do, the switch refuses, not overwrites: docs/HOSTLIB.md). */
static int ina_job_setting(const struct hcl_comm_cfg *k, long long *job, char *err, size_t errlen)
{
	const char *s = env("HCL_INA_JOB");
	if (!k->ina_job && s && !strcmp(s, "auto")) {
		*job = 0;
		return 0;
	}
	return int_setting(k->ina_job, "ina_job", "HCL_INA_JOB", 1, 65535, 0, job, err, errlen);
}

/* Plain racks' software aggregators under the PS (agent/psina_plan.h):
 * "auto" (ps-ina where three or more racks feed the PS, ps past
 * INA_MAX_FANIN contributors), "always", "never". */
static int ps_rack_agg_setting(struct hcl_env *e, char *err, size_t errlen)
{
	const char *s = env("HCL_PS_RACK_AGG");
	e->ps_rack_agg = !s || !strcmp(s, "auto") ? -1 : !strcmp(s, "never") ? 0 : !strcmp(s, "always") ? 1 : -2;
	if (e->ps_rack_agg == -2)
		return bad(err, errlen, "HCL_PS_RACK_AGG=%s: want auto, always or never", s);
	return 0;
}

static int ina_settings(const struct hcl_comm_cfg *k, struct hcl_env *e, char *err, size_t errlen)
{
	long long port, job, slots, elems, ps_port, shards;
	int most = e->world < HCL_INA_MAX_SHARDS ? e->world : HCL_INA_MAX_SHARDS;
	if (int_setting(k->ina_port, "ina_port", "HCL_INA_PORT", 1, 65535, INA_HOST_PORT, &port, err, errlen) < 0 ||
	    ina_job_setting(k, &job, err, errlen) < 0 ||
	    int_setting(k->ina_slots, "ina_slots", "HCL_INA_SLOTS", 1, 1 << 20, INA_SLOTS_DEFAULT, &slots, err,
			errlen) < 0 ||
	    int_setting(k->ina_elems, "ina_elems", "HCL_INA_ELEMS", 1, INA_MAX_ELEMS, INA_ELEMS_DEFAULT, &elems, err,
			errlen) < 0 ||
	    int_setting(0, "", "HCL_PS_PORT", 1, 65535, INA_PS_PORT, &ps_port, err, errlen) < 0 ||
	    float_wire(k, e, err, errlen) < 0)
		return -EINVAL;
	if (k->ps_shards && (k->ps_shards < 1 || k->ps_shards > most))
		return bad(err, errlen,
			   "PS shards %d (cfg.ps_shards, HCL_PS_SHARDS): want 1 to %d (at most the world size and %d)",
			   k->ps_shards, most, HCL_INA_MAX_SHARDS);
	if (int_setting(k->ps_shards, "ps_shards", "HCL_PS_SHARDS", 1, most, 1, &shards, err, errlen) < 0)
		return -EINVAL;
	e->ina_port = (uint16_t)port;
	e->ina_job = (uint16_t)job;
	e->ina_slots = (uint32_t)slots;
	e->ina_elems = (uint16_t)elems;
	e->ps_port = (uint16_t)ps_port;
	e->ps_shards = (unsigned)shards;
	/* the shards at + 0..shards - 1, rank r's rack aggregators at + shards + r */
	if (ps_port + shards + e->world - 1 > 65535)
		return bad(
			err, errlen,
			"HCL_PS_PORT %lld: the %lld shards and %d ranks' rack aggregators use it to +%lld, past 65535",
			ps_port, shards, e->world, shards + e->world - 1);
	return ps_rack_agg_setting(e, err, errlen);
}

/* How long an INA aggregator may answer nothing, with slices out, before
 * the call finishes on the software ring.  A switch that lost the job says
 * so at once (NACK); this is for one that just stops answering, and must
 * never fire on a live one: a rank that fell back alone fails the call.
 * 2 s did, in the test suite's 5% loss per port with one slot per PS
 * shard (four lost re-sends in a row at the 500 ms timer cap). */
#define INA_LOST_MS_DEFAULT 10000

static int ina_lost_setting(struct hcl_env *e, char *err, size_t errlen)
{
	const char *s = env("HCL_INA_LOST_MS");
	long long ms = INA_LOST_MS_DEFAULT;
	if (s && !strcmp(s, "off"))
		ms = 0;
	else if (s && parse_int(s, 100, 3600000, &ms) < 0)
		return bad(err, errlen, "HCL_INA_LOST_MS=%s: want milliseconds (100..3600000) or off", s);
	e->ina_lost_ns = ms * 1000000;
	return 0;
}

/* A trial that runs its links k times slower than the cluster it stands
 * for (time dilation, docs/TRIAL.md) stretches every round trip k times;
 * the re-send timers' fixed floors must stretch with them, or they fire
 * before an answer could come (spurious re-sends a real cluster would not
 * see). */
static int timer_scale_setting(struct hcl_env *e, char *err, size_t errlen)
{
	const char *s = env("HCL_TIMER_SCALE");
	e->timer_scale = 1;
	if (s && parse_double(s, 1, 1e6, &e->timer_scale) < 0)
		return bad(err, errlen, "HCL_TIMER_SCALE=%s: want a factor from 1 to 1e6", s);
	return 0;
}

static int xfer_settings(struct hcl_env *e, char *err, size_t errlen)
{
	long long payload, window, lq = 0;
	const char *q = env("HCL_XFER_LOCAL_QUEUE");
	if (int_setting(0, "", "HCL_XFER_PAYLOAD", 0, 8976, 0, &payload, err, errlen) < 0 ||
	    int_setting(0, "", "HCL_XFER_WINDOW", 0, 4096, 0, &window, err, errlen) < 0)
		return -EINVAL;
	if (payload % 4) /* a packet must not split an element: sums are added as they arrive */
		return bad(err, errlen, "HCL_XFER_PAYLOAD=%lld: want a multiple of 4", payload);
	if (q && strcmp(q, "off") && parse_int(q, 0, 1 << 20, &lq) < 0)
		return bad(err, errlen, "HCL_XFER_LOCAL_QUEUE=%s: want bytes (0..1048576) or off", q);
	e->xfer_payload = (uint32_t)payload;
	e->xfer_window = (uint32_t)window;
	e->xfer_local_queue = q && !strcmp(q, "off") ? UINT32_MAX : (uint32_t)lq;
	return 0;
}

int hcl_env_resolve(const struct hcl_comm_cfg *k, struct hcl_env *e, char *err, size_t errlen)
{
	memset(e, 0, sizeof(*e));
	long long channels;
	if (placement(k, e, err, errlen) < 0)
		return -EINVAL;
	/* as NCCL_ALGO does for NCCL: HCL_ALGO picks the algorithm of a program
	 * that leaves cfg.algo 0 */
	e->algo = k->algo;
	const char *an = env("HCL_ALGO");
	if (!e->algo && an && hcl_algo_from_name(an, &e->algo) < 0)
		return bad(err, errlen, "HCL_ALGO=%s: want ring, hier, ps, ps-ina or agent-ring", an);
	if (!e->algo)
		e->algo = HCL_ALGO_RING;
	if (e->algo < HCL_ALGO_RING || e->algo > HCL_ALGO_AGENT_RING)
		return bad(err, errlen, "unknown algorithm %d", (int)e->algo);
	/* a negative one would be a deadline already passed (or, in ns, an overflow) */
	if (k->timeout_ms < 0 || k->timeout_ms > 86400000)
		return bad(err, errlen, "timeout %lld ms: want 0 (default) to 86400000", (long long)k->timeout_ms);
	e->timeout_ns = (k->timeout_ms ? k->timeout_ms : 30000) * 1000000;
	if (k->ring_channels && (k->ring_channels < 1 || k->ring_channels > HCL_RING_MAX_CHANNELS))
		return bad(err, errlen, "ring channels %d: want 1 to %d", k->ring_channels, HCL_RING_MAX_CHANNELS);
	/* 0: chosen by the library from what the hosts have (ring/hcl_chan.c) */
	const char *rc_env = env("HCL_RING_CHANNELS");
	const bool rc_auto = !k->ring_channels && (!rc_env || !strcmp(rc_env, "auto"));
	if ((!rc_auto && int_setting(k->ring_channels, "ring_channels", "HCL_RING_CHANNELS", 1, HCL_RING_MAX_CHANNELS,
				     1, &channels, err, errlen) < 0) ||
	    ina_settings(k, e, err, errlen) < 0 || ina_lost_setting(e, err, errlen) < 0 ||
	    xfer_settings(e, err, errlen) < 0 || timer_scale_setting(e, err, errlen) < 0 ||
	    sync_settings(k, e, err, errlen) < 0)
		return -EINVAL;
	const int cc = on_off("HCL_INA_CC", err, errlen);
	if (cc == -EINVAL)
		return cc;
	e->ina_cc = cc == 1;
	e->ring_channels = rc_auto ? 0 : (unsigned)channels;
	e->agent_report = env("HCL_AGENT_REPORT") != NULL;
	e->debug = env("HCL_DEBUG") != NULL;
	return 0;
}
