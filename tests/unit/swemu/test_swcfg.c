/* SPDX-License-Identifier: BSD-3-Clause */
/* swemu config loading: a complete good file, and bad files whose every
 * error names the file, the line and what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sw_cfg.h"

static char path[64];

static const char *write_tmp(const char *text)
{
	snprintf(path, sizeof(path), "/tmp/swemu-test-cfg-%d.cfg", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static const char good[] =
	"stats_file = \"/tmp/s.json\";\n" /* 1 */
	"stats_interval_ms = 500;\n"	  /* 2 */
	"idle_sleep_max_us = 100;\n"	  /* 3 */
	"switches = (\n"		  /* 4 */
	"  { name = \"tor0\"; ina = true; mac = \"02:00:00:00:00:fe\"; ip = \"10.0.0.254\";\n"
	"    slots = 128; max_elems = 256; mgmt = [\"10.0.0.1\"]; mgmt_ports = [\"h1\", \"up\"];\n"
	"    ports = (\n"
	"      { name = \"h0\"; dev = \"net_af_packet0\"; },\n"
	"      { name = \"h1\"; dev = \"net_af_packet1\"; vlan = 5; trunk = [30, 20]; rate = "
	"\"1G\"; buffer = \"64K\";\n"
	"        delay_us = 20; jitter_us = 5; loss = 0.05; ecn = 0.25; },\n"
	"      { name = \"up\"; link = \"spine.t0\"; rate = 2500000000L;\n"
	"        burst_loss = { p_good_bad = 0.01; p_bad_good = 0.3; loss_bad = 0.5; }; }\n"
	"    );\n"
	"    fdb = ( { mac = \"02:00:00:00:00:01\"; port = \"h1\"; } );\n"
	"    jobs = ( { id = 7; fan_in = 2; dtype = \"fp32\"; slots = 64; elems = 256;\n"
	"               outputs = [\"multicast\", \"forward\"];\n"
	"               contributors = [\"10.0.0.1:48864\", \"10.0.0.2:48864@02:00:00:00:00:02\"];\n"
	"               upstream = 1;\n"
	"               forward = { addr = \"10.0.1.254:48864@02:00:00:00:01:fe\"; job = 9; "
	"contributor = 65535; }; } );\n"
	"  },\n"
	"  { name = \"spine\"; lcore = 0; ports = ( { name = \"t0\"; link = \"tor0.up\"; } ); capture = { file "
	"= \"/tmp/c.pcapng\"; ports = [\"t0\"]; direction = \"rx\"; snaplen = 128; max_packets = 10; max_bytes "
	"= \"1M\"; }; }\n"
	");\n";

static void test_good(void **state)
{
	(void)state;
	static struct sw_cfg c;
	char err[256] = "";
	int rc = sw_cfg_load(write_tmp(good), &c, err, sizeof(err));
	if (rc)
		fail_msg("%s", err);
	assert_int_equal(c.nswitches, 2);
	assert_string_equal(c.stats_file, "/tmp/s.json");
	assert_string_equal(c.stats_prom_file, ""); /* not set */
	assert_int_equal(c.stats_interval_ms, 500);
	assert_int_equal(c.idle_sleep_max_us, 100);
	assert_int_equal(c.burst, 32); /* default */
	const struct sw_switch_cfg *t = &c.sw[0];
	assert_string_equal(t->name, "tor0");
	assert_true(t->ina);
	assert_int_equal(t->ip, inet_addr("10.0.0.254"));
	assert_int_equal(t->mac[5], 0xfe);
	assert_int_equal(t->slots, 128);
	/* a trunk with native vlan 5, its tagged vlans in order */
	assert_int_equal(t->ports[1].ntrunk, 2);
	assert_int_equal(t->ports[1].trunk[0], 20);
	assert_int_equal(t->ports[1].trunk[1], 30);
	assert_int_equal(t->ports[0].ntrunk, 0);
	assert_int_equal(t->nmgmt, 1);
	assert_int_equal(t->mgmt_ports, 6); /* h1 and up */
	assert_int_equal(t->mgmt_vlan, 0);  /* any */
	assert_int_equal(t->nports, 3);
	assert_string_equal(t->ports[0].dev, "net_af_packet0");
	assert_int_equal(t->ports[0].vlan, SW_VLAN_DEFAULT);
	assert_int_equal(t->ports[1].vlan, 5);
	assert_int_equal(t->ports[1].netem.rate_bps, 1000000000ull);
	assert_int_equal(t->ports[1].netem.buffer_bytes, 65536);
	assert_int_equal(t->ports[1].netem.delay_us, 20);
	assert_int_equal(t->ports[1].netem.jitter_us, 5);
	assert_true(t->ports[1].netem.loss == 0.05);
	assert_true(t->ports[1].netem.ecn == 0.25);
	assert_int_equal(t->ports[2].netem.rate_bps, 2500000000ull);
	assert_true(t->ports[2].netem.ge_p_bg == 0.3);
	assert_int_equal(t->ports[2].peer_switch, 1);
	assert_int_equal(t->ports[2].peer_port, 0);
	assert_int_equal(c.sw[1].ports[0].peer_switch, 0);
	assert_int_equal(c.sw[1].ports[0].peer_port, 2);
	assert_false(c.sw[1].ina);
	assert_int_equal(c.sw[0].lcore, -1); /* spread over EAL's lcores */
	assert_int_equal(c.sw[1].lcore, 0);
	/* the spine's capture; tor0 has none */
	assert_string_equal(c.sw[1].capture.file, "/tmp/c.pcapng");
	assert_int_equal(c.sw[1].capture.ports, 1);
	assert_int_equal(c.sw[1].capture.dir, SW_CAP_RX);
	assert_int_equal(c.sw[1].capture.snaplen, 128);
	assert_int_equal(c.sw[1].capture.max_packets, 10);
	assert_int_equal(c.sw[1].capture.max_bytes, 1 << 20);
	assert_int_equal(c.sw[0].capture.file[0], 0);
	assert_int_equal(t->nfdb, 1);
	assert_int_equal(t->fdb[0].port, 1);
	assert_int_equal(t->njobs, 1);
	const struct ina_job_cfg *j = &t->jobs[0];
	assert_int_equal(j->id, 7);
	assert_int_equal(j->dtype, INA_D_FP32);
	assert_int_equal(j->fan_in, 2);
	assert_int_equal(j->outputs, INA_OUT_MULTICAST | INA_OUT_FORWARD);
	assert_int_equal(j->upstream_index, 1);
	assert_int_equal(j->contributors[1].port, htons(48864));
	assert_int_equal(j->contributors[1].mac[5], 2);
	assert_int_equal(j->forward.job, 9);
	assert_int_equal(j->forward.contributor, 65535);
	sw_cfg_free(&c);
	unlink(path);
}

/* Replaces the first occurrence of `from` in the good file by `to`. */
struct bad {
	const char *from, *to;
	int line;
	const char *msg;
};

static const struct bad bads[] = {
	{ "stats_interval_ms = 500;", "stats_interval_ms = -1;", 2, "'stats_interval_ms' must be 0..3600000" },
	{ "stats_interval_ms = 500;", "stats_prom_file = 5;", 2, "'stats_prom_file' must be a string" },
	{ "idle_sleep_max_us = 100;", "idle_sleep_max_us = \"x\";", 3, "must be an integer" },
	{ "idle_sleep_max_us = 100;", "idel_sleep_max_us = 100;", 3, "unknown setting 'idel_sleep_max_us'" },
	{ "idle_sleep_max_us = 100;", "idle_sleep_max_us = = 100;", 3, "syntax error" },
	{ "rate = 2500000000L", "rate = 0x8000000000000000", 11, "integer 0x8000000000000000 is too large" },
	{ "delay_us = 20;", "delay_us = 99999999999999999999;", 10, "is too large" },
	{ "switches = (", "switchez = (", 4, "unknown setting 'switchez'" },
	{ "name = \"tor0\"; ina", "name = \"tor-0\"; ina", 5, "letters, digits and _" },
	{ "mac = \"02:00:00:00:00:fe\"", "mac = \"02:00:00:00:00\"", 5, "is not a MAC address" },
	{ "ip = \"10.0.0.254\"", "ip = \"10.0.0.256\"", 5, "is not an IPv4 address" },
	{ "ip = \"10.0.0.254\";", "", 5, "missing setting 'ip'" },
	{ "slots = 128;", "slots = 0;", 6, "'slots' must be 1..1048576" },
	{ "slots = 128;", "slots = 128; fdb_port_limit = 5000;", 6, "'fdb_port_limit' must be 0..4096" },
	{ "max_elems = 256;", "max_elems = 3000;", 6, "'max_elems' must be 1..2237" },
	{ "mgmt = [\"10.0.0.1\"]", "mgmt = [\"bogus\"]", 6, "mgmt entry 0 is not an IPv4 address" },
	{ "[\"h1\", \"up\"]", "[\"h1\", \"h9\"]", 6, "mgmt_ports entry 1: switch 'tor0' has no such port" },
	{ "[\"h1\", \"up\"]", "[]", 6, "'mgmt_ports' must be a non-empty list of port names" },
	{ "[\"h1\", \"up\"];", "[\"h1\"]; mgmt_vlan = 0;", 6, "'mgmt_vlan' must be 1..4094" },
	{ "{ name = \"spine\"; lcore = 0;", "{ name = \"spine\"; lcore = 0; mgmt_vlan = 7;", 21,
	  "'mgmt_vlan' only makes sense with 'mgmt'" },
	{ "{ name = \"spine\"; lcore = 0;", "{ name = \"spine\"; lcore = 0; mgmt = [\"10.0.0.1\"];", 21,
	  "'mgmt' needs the switch's 'ip' and 'mac'" },
	{ "{ name = \"h0\"; dev = \"net_af_packet0\"; }", "{ name = \"h0\"; }", 8, "exactly one of 'dev'" },
	{ "{ name = \"h0\"; dev = \"net_af_packet0\"; }", "{ name = \"h0\"; dev = \"x\"; link = \"a.b\"; }", 8,
	  "exactly one of 'dev'" },
	{ "name = \"h1\"; dev = \"net_af_packet1\"", "name = \"h0\"; dev = \"net_af_packet1\"", 9,
	  "port name 'h0' is used twice" },
	{ "dev = \"net_af_packet1\"", "dev = \"net_af_packet0\"", 9,
	  "device 'net_af_packet0' is already port tor0.h0" },
	{ "rate = \"1G\"", "rate = \"fast\"", 9, "'rate' must be a rate" },
	{ "rate = \"1G\"", "rate = \"1K\"", 9, "'rate' must be at least 1M" },
	{ "vlan = 5;", "vlan = 4095;", 9, "'vlan' must be 1..4094, not 4095" },
	{ "lcore = 0;", "lcore = -1;", 21, "'lcore' must be 0..1023, not -1" },
	{ "vlan = 5;", "vlan = 0;", 9, "'vlan' must be 1..4094, not 0" },
	{ "trunk = [30, 20]", "trunk = [30, 5000]", 9, "port 'h1': trunk entry 1 must be a VLAN id 1..4094" },
	{ "trunk = [30, 20]", "trunk = [30, 30]", 9, "port 'h1': vlan 30 is twice in 'trunk'" },
	{ "trunk = [30, 20]", "trunk = [30, 5]", 9,
	  "port 'h1': vlan 5 is its native (untagged) vlan and cannot be tagged too" },
	{ "trunk = [30, 20]", "trunk = 30", 9, "port 'h1': 'trunk' must be a list of 1..64 VLAN ids" },
	{ "trunk = [30, 20]", "trunk = []", 9, "port 'h1': 'trunk' must be a list of 1..64 VLAN ids" },
	{ "vlan = 5; trunk", "trunk", 14, "names port 'h1', a trunk without a native vlan" },
	{ "link = \"spine.t0\";", "link = \"spine.t0\"; trunk = [7]; vlan = 1;", 11,
	  "link 'spine.t0': both ends must carry the same trunk vlans" },
	{ "vlan = 5;", "vlan = \"5\";", 9, "'vlan' must be an integer" },
	{ "link = \"spine.t0\";", "link = \"spine.t0\"; vlan = 3;", 11,
	  "link 'spine.t0': both ends must be in the same vlan (3 here, 1 there)" },
	{ "buffer = \"64K\"", "buffer = \"64Q\"", 9, "'buffer' must be a size" },
	{ "loss = 0.05", "loss = 1.5", 10, "'loss' must be 0..1, not 1.5" },
	{ "ecn = 0.25", "ecn = 2.0", 10, "'ecn' must be 0..1, not 2" },
	{ "rate = \"1G\"; buffer = \"64K\";", "buffer = \"64K\";", 10, "'ecn' marks a queue: it needs a 'rate'" },
	{ "delay_us = 20", "delay_us = 20000000", 10, "'delay_us' must be 0..10000000" },
	{ "link = \"spine.t0\"", "link = \"spine.t9\"", 11, "link 'spine.t9': no such switch.port" },
	{ "link = \"spine.t0\"", "link = \"spine\"", 11, "'link' must be \"switch.port\"" },
	{ "link = \"tor0.up\"", "link = \"tor0.h0\"", 11, "the peer port must have link = \"tor0.up\"" },
	{ "p_bad_good = 0.3", "p_bad_good = 0.0", 12, "'p_bad_good' must be > 0" },
	{ "port = \"h1\"", "port = \"h7\"", 14, "names port 'h7'" },
	{ "mac = \"02:00:00:00:00:01\"", "mac = \"zz:00:00:00:00:01\"", 14, "is not a MAC address" },
	{ "dtype = \"fp32\"", "dtype = \"fp64\"", 15, "dtype must be" },
	{ "fan_in = 2;", "fan_in = 3;", 15, "fan_in is 3 but 2 contributors are listed" },
	{ "slots = 64;", "slots = 129;", 15, "'slots' must be 1..128" },
	{ "; elems = 256;", "; elems = 257;", 15, "'elems' must be 1..256" },
	{ "id = 7;", "id = 70000;", 15, "'id' must be 0..65535" },
	{ "[\"multicast\", \"forward\"]", "[\"multicast\", \"broadcast\"]", 16, "output must be" },
	{ "[\"multicast\", \"forward\"]", "[\"multicast\"]", 15,
	  "output \"forward\" and a 'forward' peer go together" },
	{ "\"10.0.0.1:48864\", \"10.0.0.2", "\"10.0.0.1\", \"10.0.0.2", 17, "contributor 0 must be" },
	{ "\"10.0.0.1:48864\", \"10.0.0.2:48864@", "\"10.0.0.2:48864\", \"10.0.0.2:48864@", 15,
	  "two contributors have the same address" },
	{ "upstream = 1;", "upstream = 2;", 18, "'upstream' must be 0..1" },
	{ "addr = \"10.0.1.254:48864@02:00:00:00:01:fe\"", "addr = \"10.0.1.254:48864\"", 19, "addr must be" },
	{ "{ name = \"spine\";", "{ name = \"tor0\";", 21, "switch name 'tor0' is used twice" },
	{ "{ name = \"spine\"; lcore = 0; ports = ( { name = \"t0\"; link = \"tor0.up\"; } );",
	  "{ name = \"spine\"; lcore = 0; jobs = (); ports = ( { name = \"t0\"; link = \"tor0.up\"; } );", 21,
	  "has jobs but 'ina' is not true" },
	{ "direction = \"rx\"", "direction = \"up\"", 21, "direction \"up\": want \"rx\", \"tx\" or \"both\"" },
	{ "ports = [\"t0\"]; direction", "ports = [\"t9\"]; direction", 21,
	  "capture: switch 'spine' has no port 't9'" },
	{ "max_bytes = \"1M\"", "max_bytes = \"1K\"", 21, "max_bytes \"1K\": want a size of 4K or more" },
	{ "snaplen = 128", "snaplen = 12", 21, "'snaplen' must be 64..65535" },
	{ "capture = { file = \"/tmp/c.pcapng\";", "capture = {", 21, "'file'" },
	{ "slots = 128;", "slots = 128; partitions = 5;", 6, "'partitions' must be 1..4" },
	{ "slots = 128;", "slots = 128; partitions = 2;", 6,
	  "switch 'tor0': port 'h0' must be a device that arrives steered by UDP port" },
	{ "slots = 128;", "slots = 128; partition_queues = [0, 1];", 6, "'partition_queues' must list 1 queue ids" },
	{ "dev = \"net_af_packet0\";", "dev = [ \"net_af_packet0\", \"net_ring1\" ];", 8,
	  "port 'h0' lists 2 devices in 'dev'; the switch has 1 partition" },
	{ "{ name = \"spine\"; lcore = 0;", "{ name = \"spine\"; lcore = 0; partitions = 2;", 21,
	  "switch 'spine': a capture needs one lcore" },
};

/* A switch on two lcores: its ports arrive steered, and each partition's
 * queue pair is named; then what a partitioned switch cannot have. */
static const char parted[] = "switches = (\n"
			     "  { name = \"tor0\"; ina = true; mac = \"02:00:00:00:00:fe\"; ip = \"10.0.0.254\";\n"
			     "    partitions = 2; partition_queues = [0, 8];\n"
			     "    ports = ( { name = \"h0\"; dev = \"net_ring0\"; steered = true; },\n"
			     "              { name = \"h1\"; dev = \"net_ring1\"; steered = true; } );\n"
			     "  }\n"
			     ");\n";

static const struct bad parted_bads[] = {
	{ "[0, 8]", "[0, 8, 9]", 3, "'partition_queues' must list 2 queue ids" },
	{ "[0, 8]", "[1, 8]", 3, "partition_queues entry 0 must be 0 (partition 0 takes what nothing steers)" },
	{ "[0, 8]", "[0, 64]", 3, "partition_queues entry 1 must be a queue id 1..63" },
	{ "[0, 8]", "[0, 0]", 3, "queue 0 is in 'partition_queues' twice" },
	{ "dev = \"net_ring1\"; steered = true;", "dev = \"net_ring1\";", 3,
	  "port 'h1' must be a device that arrives steered" },
	{ "dev = \"net_ring0\";", "dev = [ \"net_ring0\", \"net_ring0\" ];", 4,
	  "device 'net_ring0' is in 'dev' twice" },
	{ "dev = \"net_ring0\";", "dev = [ \"net_ring0\" ];", 4,
	  "port 'h0' lists 1 devices in 'dev'; the switch has 2 partitions" },
	{ "dev = \"net_ring0\";", "dev = [ \"a\", \"b\", \"c\", \"d\", \"e\" ];", 4,
	  "'dev' lists 1..4 devices, one per partition" },
	{ "dev = \"net_ring0\";", "dev = [ 1, 2 ];", 4, "'dev' entry 0 must be a device name" },
	{ "partition_queues = [0, 8];", "partition_queues = [0, 8]; capture = { file = \"/tmp/p.pcapng\"; };", 3,
	  "a capture needs one lcore" },
	{ "steered = true; },\n", "steered = 1; },\n", 4, "'steered' must be" },
};

/* Loads base with b's replacement: fails the test unless the load fails
 * with b's line and message and leaves nothing loaded. */
static void expect_bad(const char *base, size_t i, const struct bad *b)
{
	static struct sw_cfg c;
	char text[sizeof(good) + 256], err[512] = "", want[600];
	const char *at = strstr(base, b->from);
	if (!at)
		fail_msg("case %zu: '%s' not in the good file", i, b->from);
	snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base), base, b->to, at + strlen(b->from));
	memset(&c, 0x5a, sizeof(c));
	int rc = sw_cfg_load(write_tmp(text), &c, err, sizeof(err));
	if (rc != -1)
		fail_msg("case %zu (%s): loaded", i, b->to);
	snprintf(want, sizeof(want), "%s:%d: ", path, b->line);
	if (strncmp(err, want, strlen(want)) || !strstr(err, b->msg))
		fail_msg("case %zu: got \"%s\", want \"%s...%s\"", i, err, want, b->msg);
	assert_int_equal(c.nswitches, 0); /* nothing half-loaded */
	assert_null(c.sw[0].jobs);
}

static void test_partitions(void **state)
{
	(void)state;
	static struct sw_cfg c;
	char err[256] = "";
	if (sw_cfg_load(write_tmp(parted), &c, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(c.sw[0].partitions, 2);
	assert_int_equal(c.sw[0].partition_queues[0], 0);
	assert_int_equal(c.sw[0].partition_queues[1], 8);
	assert_true(c.sw[0].ports[0].steered && c.sw[0].ports[1].steered);
	assert_int_equal(c.sw[0].ports[0].npart_dev, 0);
	sw_cfg_free(&c);
	/* a device per partition, and a rate the partitions share */
	char text[sizeof(parted) + 128];
	const char *at = strstr(parted, "dev = \"net_ring1\";");
	snprintf(text, sizeof(text), "%.*sdev = [ \"x1\", \"x1q1\" ]; rate = \"1G\";%s", (int)(at - parted), parted,
		 at + strlen("dev = \"net_ring1\";"));
	if (sw_cfg_load(write_tmp(text), &c, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(c.sw[0].ports[1].npart_dev, 2);
	assert_string_equal(c.sw[0].ports[1].dev, "x1");
	assert_string_equal(c.sw[0].ports[1].part_dev[1], "x1q1");
	assert_int_equal(c.sw[0].ports[1].netem.rate_bps, 1000000000);
	sw_cfg_free(&c);
	/* without the list, partition k owns queue pair k; a plain switch
	 * may be partitioned too */
	if (sw_cfg_load(write_tmp("switches = ( { name = \"t\"; ina = false; mac = \"02:00:00:00:00:fe\"; ip = "
				  "\"10.0.0.254\"; partitions = 3; ports = ( { name = \"h0\"; dev = \"d0\"; "
				  "steered = true; } ); } );\n"),
			&c, err, sizeof(err)))
		fail_msg("%s", err);
	for (int k = 0; k < 3; k++)
		assert_int_equal(c.sw[0].partition_queues[k], k);
	sw_cfg_free(&c);
	/* links need no 'steered': the peer switch steers into them */
	if (sw_cfg_load(write_tmp("switches = ( { name = \"a\"; ina = false; mac = \"02:00:00:00:00:fe\"; ip = "
				  "\"10.0.0.254\"; partitions = 2; ports = ( { name = \"h0\"; dev = \"d0\"; "
				  "steered = true; }, { name = \"up\"; link = \"b.t0\"; } ); },\n"
				  "{ name = \"b\"; ina = false; partitions = 2; "
				  "ports = ( { name = \"t0\"; link = \"a.up\"; } ); } );\n"),
			&c, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(c.sw[1].partitions, 2);
	sw_cfg_free(&c);
	for (size_t i = 0; i < sizeof(parted_bads) / sizeof(parted_bads[0]); i++)
		expect_bad(parted, i, &parted_bads[i]);
	unlink(path);
}

static void test_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++)
		expect_bad(good, i, &bads[i]);
	unlink(path);
}

static void test_missing_file(void **state)
{
	(void)state;
	static struct sw_cfg c;
	char err[256];
	assert_int_equal(sw_cfg_load("/nonexistent/x.cfg", &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/x.cfg:0: cannot read the file"));
}

/* The configs shipped in configs/ load (so the examples cannot rot). */
static void test_shipped_configs(void **state)
{
	(void)state;
	static struct sw_cfg c;
	static const char *const files[] = { "tor.cfg", "fabric.cfg" };
	const char *dir = getenv("SWEMU_CONFIGS");
	char p[512], err[512];
	assert_non_null(dir);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		if (sw_cfg_load(p, &c, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		assert_true(c.nswitches >= 1);
		sw_cfg_free(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_partitions),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_shipped_configs),
	};
	return cmocka_run_group_tests_name("swcfg", tests, NULL, NULL);
}
