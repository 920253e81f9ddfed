/* SPDX-License-Identifier: BSD-3-Clause */
/* The counters in Prometheus' text exposition format (version 0.0.4), for
 * node_exporter's textfile collector: the same numbers as the JSON stats,
 * one metric family per counter with the switch, port, job and drop
 * reason as labels, written to a temporary file and renamed.  Every drop
 * reason is listed, zeros included, so that rate() sees a series from its
 * start.  Runs on the control thread (and at exit), reading 64-bit
 * counters the lcores write, as the JSON writer does. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "sw_rt.h"

/* A label value as the format wants it: backslash, quote and newline
 * escaped (names come from the config file, which allows more than
 * identifiers). */
static void put_label(FILE *f, const char *key, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", key);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f), fputc(*v, f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{switch="s"[,port="p"][,job="j"][,reason="r"]} value */
static void sample(FILE *f, const char *name, const struct sw_lsw *sw, const struct sw_port *p, int job,
		   const char *reason, uint64_t v)
{
	fputs(name, f);
	fputc('{', f);
	put_label(f, "switch", sw->name, true);
	if (p)
		put_label(f, "port", p->cfg->name, false);
	if (job >= 0)
		fprintf(f, ",job=\"%d\"", job);
	if (reason)
		put_label(f, "reason", reason, false);
	fprintf(f, "} %llu\n", (unsigned long long)v);
}

static const struct {
	const char *name, *help;
	size_t off;
} port_counters[] = {
	{ "swemu_port_rx_packets_total", "Frames received on the port.", offsetof(struct sw_port_stats, rx_packets) },
	{ "swemu_port_rx_bytes_total", "Bytes received on the port.", offsetof(struct sw_port_stats, rx_bytes) },
	{ "swemu_port_tx_packets_total", "Frames sent out of the port.", offsetof(struct sw_port_stats, tx_packets) },
	{ "swemu_port_tx_bytes_total", "Bytes sent out of the port.", offsetof(struct sw_port_stats, tx_bytes) },
	{ "swemu_port_ecn_marks_total", "Frames the port's emulated queue marked congestion-experienced.",
	  offsetof(struct sw_port_stats, ecn_marks) },
};

static uint64_t port_counter(const struct sw_port *p, size_t off)
{
	uint64_t v;
	memcpy(&v, (const char *)&p->st + off, sizeof(v));
	return v;
}

static void ports_out(FILE *f, const struct sw_rt *rt)
{
	for (size_t k = 0; k < RTE_DIM(port_counters); k++) {
		family(f, port_counters[k].name, "counter", port_counters[k].help);
		for (int s = 0; s < rt->nsw; s++)
			for (int i = 0; i < rt->sw[s]->nports; i++) {
				const struct sw_port *p = &rt->sw[s]->ports[i];
				sample(f, port_counters[k].name, rt->sw[s], p, -1, NULL,
				       port_counter(p, port_counters[k].off));
			}
	}
	family(f, "swemu_port_drops_total", "counter", "Frames the switch dropped, by port and reason.");
	for (int s = 0; s < rt->nsw; s++)
		for (int i = 0; i < rt->sw[s]->nports; i++)
			for (unsigned d = 0; d < SW_D_MAX_; d++)
				if (d != SW_D_FRAME_BASE + SW_FRAME_OK) /* a frame error's "ok": no drop */
					sample(f, "swemu_port_drops_total", rt->sw[s], &rt->sw[s]->ports[i], -1,
					       sw_drop_name(d), rt->sw[s]->ports[i].st.drops[d]);
	family(f, "swemu_port_device_errors_total", "counter",
	       "What a device port's driver lost or could not send (not in swemu_port_drops_total).");
	for (int s = 0; s < rt->nsw; s++)
		for (int i = 0; i < rt->sw[s]->nports; i++) {
			const struct sw_port *p = &rt->sw[s]->ports[i];
			struct rte_eth_stats es;
			if (!p->ext || rte_eth_stats_get(p->dev, &es) != 0)
				continue;
			sample(f, "swemu_port_device_errors_total", rt->sw[s], p, -1, "rx_missed", es.imissed);
			sample(f, "swemu_port_device_errors_total", rt->sw[s], p, -1, "rx_errors", es.ierrors);
			sample(f, "swemu_port_device_errors_total", rt->sw[s], p, -1, "rx_nombuf", es.rx_nombuf);
			sample(f, "swemu_port_device_errors_total", rt->sw[s], p, -1, "tx_errors", es.oerrors);
		}
}

/* Values per switch, each read by a function of the switch. */
static uint64_t sw_fdb_entries(const struct sw_lsw *sw) { return sw->fdb.n; }
static uint64_t sw_fdb_moves(const struct sw_lsw *sw) { return sw->fdb.moves; }
static uint64_t sw_fdb_moves_damped(const struct sw_lsw *sw) { return sw->fdb.moves_damped; }
static uint64_t sw_fdb_full(const struct sw_lsw *sw) { return sw->fdb.full_drops; }
static uint64_t sw_flooded(const struct sw_lsw *sw) { return sw->st.flooded; }
static uint64_t sw_arp(const struct sw_lsw *sw) { return sw->st.arp_replies; }
static uint64_t sw_neigh(const struct sw_lsw *sw) { return sw_neigh_live(&sw->neigh, sw->now_s); }
static uint64_t sw_neigh_full(const struct sw_lsw *sw) { return sw->neigh.full; }
static uint64_t sw_ctrl_ok(const struct sw_lsw *sw) { return sw->st.ctrl_ok; }
static uint64_t sw_ctrl_refused(const struct sw_lsw *sw) { return sw->st.ctrl_refused; }
static uint64_t sw_ctrl_not_owner(const struct sw_lsw *sw) { return sw->st.ctrl_not_owner; }
static uint64_t sw_cap_packets(const struct sw_lsw *sw) { return sw->cap.packets; }
static uint64_t sw_cap_left_out(const struct sw_lsw *sw) { return sw->cap.left_out; }

static const struct {
	const char *name, *type, *help;
	uint64_t (*get)(const struct sw_lsw *sw);
} switch_metrics[] = {
	{ "swemu_fdb_entries", "gauge", "MAC addresses in the forwarding table.", sw_fdb_entries },
	{ "swemu_fdb_moves_total", "counter", "MAC addresses that moved to another port.", sw_fdb_moves },
	{ "swemu_fdb_moves_damped_total", "counter", "Moves refused: the MAC had moved that second.",
	  sw_fdb_moves_damped },
	{ "swemu_fdb_full_drops_total", "counter", "Sources not learned: the table was full.", sw_fdb_full },
	{ "swemu_flooded_total", "counter", "Frames sent to every other port of their VLAN.", sw_flooded },
	{ "swemu_arp_replies_total", "counter", "ARP requests for the switch's address answered.", sw_arp },
	{ "swemu_neighbours", "gauge", "Live bindings of INA members to a MAC, port and VLAN.", sw_neigh },
	{ "swemu_neighbour_full_total", "counter", "Members not bound: the neighbour table was full.", sw_neigh_full },
	{ "swemu_ctrl_ok_total", "counter", "Control commands carried out.", sw_ctrl_ok },
	{ "swemu_ctrl_refused_total", "counter", "Valid control commands answered with a refusal.", sw_ctrl_refused },
	{ "swemu_ctrl_not_owner_total", "counter", "Refusals because another owner's job was named.",
	  sw_ctrl_not_owner },
	{ "swemu_capture_packets_total", "counter", "Frames written to the switch's capture file.", sw_cap_packets },
	{ "swemu_capture_left_out_total", "counter", "Frames the capture's bounds left out of the file.",
	  sw_cap_left_out },
};

static void switches_out(FILE *f, const struct sw_rt *rt)
{
	for (size_t k = 0; k < RTE_DIM(switch_metrics); k++) {
		family(f, switch_metrics[k].name, switch_metrics[k].type, switch_metrics[k].help);
		for (int s = 0; s < rt->nsw; s++)
			sample(f, switch_metrics[k].name, rt->sw[s], NULL, -1, NULL, switch_metrics[k].get(rt->sw[s]));
	}
}

static const char *ina_name(unsigned r) { return ina_reason_name((enum ina_reason)r); }

/* A job's counters: the engine's per-job statistics by offset. */
static const struct {
	const char *name, *help;
	size_t off;
} job_counters[] = {
	{ "swemu_ina_job_rx_packets_total", "INA packets for the job.", offsetof(struct ina_job_stats, rx_packets) },
	{ "swemu_ina_job_contributions_total", "Contributions accepted and added.",
	  offsetof(struct ina_job_stats, contributions) },
	{ "swemu_ina_job_completions_total", "Slots that reached their fan-in.",
	  offsetof(struct ina_job_stats, completions) },
	{ "swemu_ina_job_retransmits_total", "Re-sends answered from a stored result.",
	  offsetof(struct ina_job_stats, retransmits) },
	{ "swemu_ina_job_misses_total", "Gaps reported to members (a slice lost on its way in).",
	  offsetof(struct ina_job_stats, misses) },
	{ "swemu_ina_job_emits_total", "Packets the job's slots emitted.", offsetof(struct ina_job_stats, emits) },
	{ "swemu_ina_job_overflows_total", "int32 completions that wrapped.",
	  offsetof(struct ina_job_stats, overflows) },
	{ "swemu_ina_job_reclaimed_total", "Unfinished slots given up.", offsetof(struct ina_job_stats, reclaimed) },
};

static uint64_t job_counter(const struct ina_job_stats *js, size_t off)
{
	uint64_t v;
	memcpy(&v, (const char *)js + off, sizeof(v));
	return v;
}

static void engine_out(FILE *f, const struct sw_rt *rt)
{
	static const struct {
		const char *name, *help;
	} totals[] = {
		{ "swemu_ina_rx_packets_total", "INA packets handed to the engine." },
		{ "swemu_ina_accepted_total", "INA packets the engine took." },
		{ "swemu_ina_emits_sent_total", "Frames built from the engine's emits." },
		{ "swemu_ina_nacks_sent_total", "NACKs sent for DATA of a job the switch does not have." },
		{ "swemu_ina_repeated_headers_total",
		  "INA packets whose headers repeated their member's last checked ones (checked in one compare)." },
	};
	for (size_t k = 0; k < RTE_DIM(totals); k++) {
		family(f, totals[k].name, "counter", totals[k].help);
		for (int s = 0; s < rt->nsw; s++) {
			const struct sw_lsw *sw = rt->sw[s];
			if (!sw->eng)
				continue;
			const struct ina_engine_stats *es = ina_engine_stats(sw->eng);
			const uint64_t v[] = { es->rx_packets, es->accepted, sw->st.ina_emits, sw->st.ina_nacks,
					       sw->st.ina_repeats };
			sample(f, totals[k].name, sw, NULL, -1, NULL, v[k]);
		}
	}
	family(f, "swemu_ina_drops_total", "counter", "INA packets the engine dropped, by reason.");
	for (int s = 0; s < rt->nsw; s++)
		for (unsigned r = 0; rt->sw[s]->eng && r < INA_R_MAX_; r++)
			if (r != INA_OK)
				sample(f, "swemu_ina_drops_total", rt->sw[s], NULL, -1, ina_name(r),
				       ina_engine_stats(rt->sw[s]->eng)->drops[r]);
}

/* The ids of the jobs sw has now (a job removed meanwhile is skipped
 * later: its statistics are gone). */
static unsigned job_ids(const struct sw_lsw *sw, uint16_t ids[INA_MAX_JOBS])
{
	unsigned n = 0;
	for (unsigned id = 0; sw->eng && id < 65536 && n < INA_MAX_JOBS; id++)
		if (ina_job_stats(sw->eng, (uint16_t)id))
			ids[n++] = (uint16_t)id;
	return n;
}

static void jobs_out(FILE *f, const struct sw_rt *rt)
{
	uint16_t(*ids)[INA_MAX_JOBS] = calloc((size_t)rt->nsw + 1, sizeof(*ids)); /* 4 KiB a switch: not on the stack */
	unsigned n[RTE_DIM(rt->sw)];
	if (!ids)
		return;
	for (int s = 0; s < rt->nsw; s++)
		n[s] = job_ids(rt->sw[s], ids[s]);
	for (size_t k = 0; k < RTE_DIM(job_counters); k++) {
		family(f, job_counters[k].name, "counter", job_counters[k].help);
		for (int s = 0; s < rt->nsw; s++)
			for (unsigned i = 0; i < n[s]; i++) {
				const struct ina_job_stats *js = ina_job_stats(rt->sw[s]->eng, ids[s][i]);
				if (js)
					sample(f, job_counters[k].name, rt->sw[s], NULL, ids[s][i], NULL,
					       job_counter(js, job_counters[k].off));
			}
	}
	family(f, "swemu_ina_job_slots_busy", "gauge", "Slots of the job holding a partial aggregate.");
	for (int s = 0; s < rt->nsw; s++)
		for (unsigned i = 0; i < n[s]; i++)
			if (ina_job_stats(rt->sw[s]->eng, ids[s][i]))
				sample(f, "swemu_ina_job_slots_busy", rt->sw[s], NULL, ids[s][i], NULL,
				       ina_job_slots_busy(rt->sw[s]->eng, ids[s][i]));
	family(f, "swemu_ina_job_drops_total", "counter", "The job's INA packets dropped, by reason.");
	for (int s = 0; s < rt->nsw; s++)
		for (unsigned i = 0; i < n[s]; i++) {
			const struct ina_job_stats *js = ina_job_stats(rt->sw[s]->eng, ids[s][i]);
			for (unsigned r = INA_OK + 1; js && r < INA_R_MAX_; r++)
				sample(f, "swemu_ina_job_drops_total", rt->sw[s], NULL, ids[s][i], ina_name(r),
				       js->drops[r]);
		}
	free(ids);
}

static void workers_out(FILE *f, const struct sw_rt *rt)
{
	family(f, "swemu_lcore_loops_total", "counter", "Passes of an lcore's poll loop.");
	for (int i = 0; i < rt->nworkers; i++)
		fprintf(f, "swemu_lcore_loops_total{lcore=\"%u\"} %llu\n", rt->workers[i].lcore,
			(unsigned long long)rt->workers[i].loops);
	family(f, "swemu_lcore_idle_sleeps_total", "counter", "Sleeps of an idle lcore.");
	for (int i = 0; i < rt->nworkers; i++)
		fprintf(f, "swemu_lcore_idle_sleeps_total{lcore=\"%u\"} %llu\n", rt->workers[i].lcore,
			(unsigned long long)rt->workers[i].idle_sleeps);
	family(f, "swemu_lcore_busy_seconds_total", "counter", "Time of an lcore's passes that found work.");
	for (int i = 0; i < rt->nworkers; i++)
		fprintf(f, "swemu_lcore_busy_seconds_total{lcore=\"%u\"} %.9f\n", rt->workers[i].lcore,
			(double)rt->workers[i].busy_ns / 1e9);
	family(f, "swemu_lcore_stalled_seconds_total", "counter",
	       "Time an idle lcore waited for the CPU beyond its sleep (preempted, throttled).");
	for (int i = 0; i < rt->nworkers; i++)
		fprintf(f, "swemu_lcore_stalled_seconds_total{lcore=\"%u\"} %.9f\n", rt->workers[i].lcore,
			(double)rt->workers[i].stalled_ns / 1e9);
}

int sw_prom_write(const struct sw_rt *rt, const char *path)
{
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -1;
	ports_out(f, rt);
	switches_out(f, rt);
	engine_out(f, rt);
	jobs_out(f, rt);
	workers_out(f, rt);
	int rc = ferror(f) ? -1 : 0;
	rc |= fclose(f);
	if (rc == 0)
		rc = rename(tmp, path);
	else
		remove(tmp);
	return rc;
}
