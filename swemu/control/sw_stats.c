/* SPDX-License-Identifier: BSD-3-Clause */
/* Counters out: a JSON document (Jansson) written to a file on a timer, on
 * SIGUSR1 and at exit, and DPDK telemetry commands under /swemu/ for
 * dpdk-telemetry.py.  Telemetry callbacks run on DPDK's telemetry thread
 * and only read 64-bit counters, which x86-64 loads whole. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_ethdev.h>
#include <rte_telemetry.h>
#include <rte_version.h>

#include "sw_rt.h"

/* DPDK 23.03 named it _uint; the old name is deprecated from 23.11 and
 * gone from 25.11, the new one missing before 23.03 (Debian 12 has 22.11) */
#if RTE_VERSION >= RTE_VERSION_NUM(23, 3, 0, 0)
#define tel_dict_u64 rte_tel_data_add_dict_uint
#else
#define tel_dict_u64 rte_tel_data_add_dict_u64
#endif

static json_t *drops_json(const uint64_t *d, unsigned n, const char *(*name)(unsigned))
{
	json_t *o = json_object();
	for (unsigned i = 0; i < n; i++)
		json_object_set_new(o, name(i), json_integer((json_int_t)d[i]));
	return o;
}

static const char *ina_name(unsigned r) { return ina_reason_name((enum ina_reason)r); }

/* The FDB's latest move: which MAC, in which VLAN, from which port to
 * which, in which second of the switch's clock. */
static json_t *move_json(const struct sw_lsw *sw)
{
	const struct sw_fdb_move *m = &sw->fdb.last_move;
	struct rte_ether_addr a;
	char mac[RTE_ETHER_ADDR_FMT_SIZE];
	sw_fdb_key_mac(m->key, a.addr_bytes);
	rte_ether_format_addr(mac, sizeof(mac), &a);
	const char *from = m->from >= 0 && m->from < sw->nports ? sw->ports[m->from].cfg->name : "?";
	const char *to = m->to >= 0 && m->to < sw->nports ? sw->ports[m->to].cfg->name : "?";
	return json_pack("{s:s, s:i, s:s, s:s, s:I}", "mac", mac, "vlan", (int)sw_fdb_key_vlan(m->key), "from", from,
			 "to", to, "second", (json_int_t)m->s);
}

static json_t *port_json(const struct sw_port *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(p->ext ? "device" : "link"));
	json_object_set_new(o, p->ext ? "dev" : "link", json_string(p->ext ? p->dev_name : p->cfg->link));
	/* whether INA payloads are checksummed by the NIC or by the switch */
	json_object_set_new(o, "rx_checksum_offload", json_boolean(p->rx_csum_offload));
	json_object_set_new(o, "vlan", json_integer(p->cfg->vlan)); /* on a trunk: native, 0 for none */
	if (p->cfg->ntrunk) {
		json_t *t = json_array();
		for (int i = 0; i < p->cfg->ntrunk; i++)
			json_array_append_new(t, json_integer(p->cfg->trunk[i]));
		json_object_set_new(o, "trunk", t);
	}
	json_object_set_new(o, "rx_packets", json_integer((json_int_t)p->st.rx_packets));
	json_object_set_new(o, "rx_bytes", json_integer((json_int_t)p->st.rx_bytes));
	json_object_set_new(o, "tx_packets", json_integer((json_int_t)p->st.tx_packets));
	json_object_set_new(o, "tx_bytes", json_integer((json_int_t)p->st.tx_bytes));
	json_object_set_new(o, "ecn_marks", json_integer((json_int_t)p->st.ecn_marks));
	json_object_set_new(o, "emu_held", json_integer(sw_netem_held(&p->netem)));
	json_object_set_new(o, "drops", drops_json(p->st.drops, SW_D_MAX_, sw_drop_name));
	struct rte_eth_stats es;
	if (p->ext && rte_eth_stats_get(p->dev, &es) == 0) {
		/* what the device (or the kernel under af_packet/af_xdp) lost
		 * before the switch saw it, or could not send: not in "drops",
		 * which counts the switch's own decisions */
		json_t *d = json_object();
		json_object_set_new(d, "rx_missed", json_integer((json_int_t)es.imissed));
		json_object_set_new(d, "rx_errors", json_integer((json_int_t)es.ierrors));
		json_object_set_new(d, "rx_nombuf", json_integer((json_int_t)es.rx_nombuf));
		json_object_set_new(d, "tx_errors", json_integer((json_int_t)es.oerrors));
		json_object_set_new(o, "device", d);
	}
	return o;
}

static json_t *ina_json(const struct sw_lsw *sw)
{
	const struct ina_engine_stats *es = ina_engine_stats(sw->eng);
	json_t *o = json_object(), *jobs = json_object();
	json_object_set_new(o, "rx_packets", json_integer((json_int_t)es->rx_packets));
	json_object_set_new(o, "accepted", json_integer((json_int_t)es->accepted));
	json_object_set_new(o, "emits_sent", json_integer((json_int_t)sw->st.ina_emits));
	json_object_set_new(o, "nacks_sent", json_integer((json_int_t)sw->st.ina_nacks));
	json_object_set_new(o, "repeated_headers", json_integer((json_int_t)sw->st.ina_repeats));
	json_object_set_new(o, "drops", drops_json(es->drops, INA_R_MAX_, ina_name));
	for (unsigned id = 0; id < 65536; id++) {
		const struct ina_job_stats *js = ina_job_stats(sw->eng, (uint16_t)id);
		if (!js)
			continue;
		char key[8];
		snprintf(key, sizeof(key), "%u", id);
		json_t *j = json_object();
		const struct ina_job_cfg *jc = ina_job_config(sw->eng, (uint16_t)id);
		if (jc && jc->owner) { /* who may remove it (hex, as commands name it) */
			char own[20];
			snprintf(own, sizeof(own), "%llx", (unsigned long long)jc->owner);
			json_object_set_new(j, "owner", json_string(own));
		}
		json_object_set_new(j, "slot_base", json_integer(ina_job_slot_base(sw->eng, (uint16_t)id)));
		json_object_set_new(j, "slots_busy", json_integer(ina_job_slots_busy(sw->eng, (uint16_t)id)));
		json_object_set_new(j, "rx_packets", json_integer((json_int_t)js->rx_packets));
		json_object_set_new(j, "contributions", json_integer((json_int_t)js->contributions));
		json_object_set_new(j, "completions", json_integer((json_int_t)js->completions));
		json_object_set_new(j, "retransmits", json_integer((json_int_t)js->retransmits));
		json_object_set_new(j, "misses", json_integer((json_int_t)js->misses));
		json_object_set_new(j, "emits", json_integer((json_int_t)js->emits));
		json_object_set_new(j, "overflows", json_integer((json_int_t)js->overflows));
		json_object_set_new(j, "reclaimed", json_integer((json_int_t)js->reclaimed));
		json_object_set_new(j, "drops", drops_json(js->drops, INA_R_MAX_, ina_name));
		json_object_set_new(jobs, key, j);
	}
	json_object_set_new(o, "jobs", jobs);
	return o;
}

/* IPv4 reassembly in swemu's network namespace, from the kernel's own
 * counters: on af_packet ports the kernel reassembles fragments before
 * swemu reads them (DPDK's PMD joins its fanout group with the defrag
 * flag), so a fragment that never completes a datagram is dropped there,
 * and this is where it is counted (docs/SWEMU.md, "Fragments").  NULL when
 * unreadable. */
static json_t *kernel_reassembly(void)
{
	FILE *f = fopen("/proc/self/net/snmp", "r");
	char names[1024], values[1024];
	json_t *o = NULL;
	while (f && fgets(names, sizeof(names), f) && fgets(values, sizeof(values), f)) {
		if (strncmp(names, "Ip: ", 4) != 0 || strncmp(values, "Ip: ", 4) != 0)
			continue;
		o = json_object();
		char *sn, *sv, *n = strtok_r(names + 4, " \n", &sn), *v = strtok_r(values + 4, " \n", &sv);
		for (; n && v; n = strtok_r(NULL, " \n", &sn), v = strtok_r(NULL, " \n", &sv)) {
			static const char *const want[][2] = { { "ReasmReqds", "fragments" },
							       { "ReasmOKs", "reassembled" },
							       { "ReasmFails", "failed" },
							       { "ReasmTimeout", "timed_out" } };
			for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
				if (!strcmp(n, want[i][0]))
					json_object_set_new(o, want[i][1], json_integer(strtoll(v, NULL, 10)));
		}
		break;
	}
	if (f)
		fclose(f);
	return o;
}

char *sw_stats_json(const struct sw_rt *rt)
{
	json_t *root = json_object(), *sws = json_object();
	json_object_set_new(root, "time_s", json_real((double)time(NULL)));
	json_t *reasm = kernel_reassembly();
	if (reasm)
		json_object_set_new(root, "kernel_ip_reassembly", reasm);
	/* per lcore, read while the workers run (64-bit counters: torn reads
	 * cannot happen on the 64-bit machines DPDK supports) */
	json_t *workers = json_array();
	uint64_t loops = 0, sleeps = 0;
	for (int i = 0; i < rt->nworkers; i++) {
		const struct sw_worker *w = &rt->workers[i];
		json_t *o = json_object(), *names = json_array();
		json_object_set_new(o, "lcore", json_integer(w->lcore));
		for (int k = 0; k < w->nsw; k++)
			json_array_append_new(names, json_string(w->sw[k]->name));
		json_object_set_new(o, "switches", names);
		json_object_set_new(o, "loops", json_integer((json_int_t)w->loops));
		json_object_set_new(o, "idle_sleeps", json_integer((json_int_t)w->idle_sleeps));
		json_object_set_new(o, "busy_ns", json_integer((json_int_t)w->busy_ns));
		json_object_set_new(o, "stalled_ns", json_integer((json_int_t)w->stalled_ns));
		json_object_set_new(o, "run_ns", json_integer((json_int_t)(w->now_ns - w->start_ns)));
		json_array_append_new(workers, o);
		loops += w->loops;
		sleeps += w->idle_sleeps;
	}
	json_object_set_new(root, "loops", json_integer((json_int_t)loops));
	json_object_set_new(root, "idle_sleeps", json_integer((json_int_t)sleeps));
	json_object_set_new(root, "workers", workers);
	for (int i = 0; i < rt->nsw; i++) {
		const struct sw_lsw *sw = rt->sw[i];
		json_t *s = json_object(), *ports = json_object();
		for (int k = 0; k < sw->nports; k++)
			json_object_set_new(ports, sw->ports[k].cfg->name, port_json(&sw->ports[k]));
		json_object_set_new(s, "ports", ports);
		json_object_set_new(s, "fdb_entries", json_integer(sw->fdb.n));
		json_object_set_new(s, "fdb_full_drops", json_integer((json_int_t)sw->fdb.full_drops));
		json_object_set_new(s, "fdb_moves", json_integer((json_int_t)sw->fdb.moves));
		json_object_set_new(s, "fdb_moves_damped", json_integer((json_int_t)sw->fdb.moves_damped));
		if (sw->fdb.last_move.key)
			json_object_set_new(s, "fdb_last_move", move_json(sw));
		json_object_set_new(s, "flooded", json_integer((json_int_t)sw->st.flooded));
		/* frames written to the capture file, and those a bound left out */
		json_object_set_new(s, "capture_packets", json_integer((json_int_t)sw->cap.packets));
		json_object_set_new(s, "capture_left_out", json_integer((json_int_t)sw->cap.left_out));
		json_object_set_new(s, "arp_replies", json_integer((json_int_t)sw->st.arp_replies));
		json_object_set_new(s, "neighbours", json_integer(sw_neigh_live(&sw->neigh, sw->now_s)));
		json_object_set_new(s, "neighbour_full", json_integer((json_int_t)sw->neigh.full));
		json_object_set_new(s, "ctrl_ok", json_integer((json_int_t)sw->st.ctrl_ok));
		json_object_set_new(s, "ctrl_refused", json_integer((json_int_t)sw->st.ctrl_refused));
		json_object_set_new(s, "ctrl_not_owner", json_integer((json_int_t)sw->st.ctrl_not_owner));
		if (sw->eng)
			json_object_set_new(s, "ina", ina_json(sw));
		json_object_set_new(sws, sw->name, s);
	}
	json_object_set_new(root, "switches", sws);
	char *text = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(root);
	return text;
}

/* Written to a temporary file and renamed, so a reader never sees half. */
int sw_stats_write(const struct sw_rt *rt, const char *path)
{
	char tmp[300];
	char *text = sw_stats_json(rt);
	if (!text)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	int rc = -1;
	if (f) {
		rc = fputs(text, f) < 0 ? -1 : 0;
		rc |= fclose(f);
		if (rc == 0)
			rc = rename(tmp, path);
	}
	free(text);
	return rc;
}

void sw_stats_dump(const struct sw_rt *rt)
{
	if (rt->cfg.stats_prom_file[0] && sw_prom_write(rt, rt->cfg.stats_prom_file) < 0)
		fprintf(stderr, "swemu: cannot write %s\n", rt->cfg.stats_prom_file);
	if (rt->cfg.stats_file[0] && sw_stats_write(rt, rt->cfg.stats_file) < 0)
		fprintf(stderr, "swemu: cannot write %s\n", rt->cfg.stats_file);
}

/* ---- telemetry ---- */

static struct sw_rt *tel_rt; /* the telemetry API takes no user argument */

static const struct sw_lsw *find_sw(const char *name)
{
	for (int i = 0; name && i < tel_rt->nsw; i++)
		if (!strcmp(tel_rt->sw[i]->name, name))
			return tel_rt->sw[i];
	return NULL;
}

static int tel_switches(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	for (int i = 0; i < tel_rt->nsw; i++)
		rte_tel_data_add_array_string(d, tel_rt->sw[i]->name);
	return 0;
}

static void add_nonzero_drops(struct rte_tel_data *d, const uint64_t *v, unsigned n, const char *(*name)(unsigned))
{
	for (unsigned i = 0; i < n; i++)
		if (v[i])
			tel_dict_u64(d, name(i), v[i]);
}

/* Parameters "SWITCH.REST": the switch, and REST in *rest (inside buf). */
static const struct sw_lsw *split_param(const char *params, char *buf, size_t n, const char **rest)
{
	if (!params || strlen(params) >= n)
		return NULL;
	strcpy(buf, params);
	char *dot = strchr(buf, '.');
	if (!dot)
		return NULL;
	*dot = 0;
	*rest = dot + 1;
	return find_sw(buf);
}

/* /swemu/port,SWITCH.PORT */
static int tel_port(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	char buf[2 * SW_NAME_LEN + 2];
	const char *name = NULL;
	const struct sw_lsw *sw = split_param(params, buf, sizeof(buf), &name);
	for (int k = 0; sw && k < sw->nports; k++) {
		const struct sw_port *p = &sw->ports[k];
		if (strcmp(p->cfg->name, name))
			continue;
		rte_tel_data_start_dict(d);
		tel_dict_u64(d, "rx_packets", p->st.rx_packets);
		tel_dict_u64(d, "rx_bytes", p->st.rx_bytes);
		tel_dict_u64(d, "tx_packets", p->st.tx_packets);
		tel_dict_u64(d, "tx_bytes", p->st.tx_bytes);
		tel_dict_u64(d, "ecn_marks", p->st.ecn_marks);
		add_nonzero_drops(d, p->st.drops, SW_D_MAX_, sw_drop_name);
		return 0;
	}
	return -1;
}

/* /swemu/ina,SWITCH: engine totals and drops by reason */
static int tel_ina(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	const struct sw_lsw *sw = find_sw(params);
	if (!sw || !sw->eng)
		return -1;
	const struct ina_engine_stats *es = ina_engine_stats(sw->eng);
	rte_tel_data_start_dict(d);
	tel_dict_u64(d, "rx_packets", es->rx_packets);
	tel_dict_u64(d, "accepted", es->accepted);
	tel_dict_u64(d, "emits_sent", sw->st.ina_emits);
	tel_dict_u64(d, "nacks_sent", sw->st.ina_nacks);
	tel_dict_u64(d, "repeated_headers", sw->st.ina_repeats);
	add_nonzero_drops(d, es->drops, INA_R_MAX_, ina_name);
	return 0;
}

/* /swemu/job,SWITCH.ID */
static int tel_job(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	char buf[2 * SW_NAME_LEN + 8];
	const char *num = "";
	const struct sw_lsw *sw = split_param(params, buf, sizeof(buf), &num);
	char *end;
	unsigned long id = strtoul(num, &end, 10);
	const struct ina_job_stats *js = sw && sw->eng && *num && !*end && id < 65536
						 ? ina_job_stats(sw->eng, (uint16_t)id)
						 : NULL;
	if (!js)
		return -1;
	rte_tel_data_start_dict(d);
	tel_dict_u64(d, "slots_busy", ina_job_slots_busy(sw->eng, (uint16_t)id));
	tel_dict_u64(d, "rx_packets", js->rx_packets);
	tel_dict_u64(d, "contributions", js->contributions);
	tel_dict_u64(d, "completions", js->completions);
	tel_dict_u64(d, "retransmits", js->retransmits);
	tel_dict_u64(d, "misses", js->misses);
	tel_dict_u64(d, "emits", js->emits);
	tel_dict_u64(d, "overflows", js->overflows);
	tel_dict_u64(d, "reclaimed", js->reclaimed);
	add_nonzero_drops(d, js->drops, INA_R_MAX_, ina_name);
	return 0;
}

/* /swemu/capture,SWITCH: the capture's state; SWITCH.start or SWITCH.stop
 * also start or stop it (a local, root-only socket: the file is the
 * config's, never a parameter) */
static int tel_capture(const char *cmd, const char *params, struct rte_tel_data *d)
{
	(void)cmd;
	char buf[2 * SW_NAME_LEN + 8];
	const char *act = "";
	const struct sw_lsw *sw = split_param(params, buf, sizeof(buf), &act);
	if (!sw)
		sw = find_sw(params);
	if (!sw || !sw->cap.f || (*act && strcmp(act, "start") && strcmp(act, "stop")))
		return -1;
	if (*act) /* the capture's state is the one thing telemetry writes */
		sw_capture_run((struct sw_capture *)&sw->cap, !strcmp(act, "start"));
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "file", sw->cfg->capture.file);
	tel_dict_u64(d, "running", __atomic_load_n(&sw->cap.running, __ATOMIC_RELAXED));
	tel_dict_u64(d, "packets", sw->cap.packets);
	tel_dict_u64(d, "left_out", sw->cap.left_out);
	return 0;
}

int sw_telemetry_register(struct sw_rt *rt)
{
	tel_rt = rt;
	return rte_telemetry_register_cmd("/swemu/switches", tel_switches, "Logical switches. No parameters") |
	       rte_telemetry_register_cmd("/swemu/port", tel_port, "Port counters. Parameters: switch.port") |
	       rte_telemetry_register_cmd("/swemu/ina", tel_ina, "Aggregation engine counters. Parameters: switch") |
	       rte_telemetry_register_cmd("/swemu/job", tel_job, "Job counters. Parameters: switch.job_id") |
	       rte_telemetry_register_cmd("/swemu/capture", tel_capture,
					  "Packet capture. Parameters: switch, or switch.start / switch.stop");
}
