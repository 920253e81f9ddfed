/* SPDX-License-Identifier: BSD-3-Clause */
/* nic/ctl_msg: the control grammar both ends use.  Each command parses to
 * what its text says; what the agents format parses back to the same job;
 * a bad command is told what is wrong; no directive reaches a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl_msg.h"

static const struct ctl_limits lim = { 128, 256 };
static struct ctl_cmd cmd;
static char err[300];

static int parse(const char *t) { return ctl_parse(t, strlen(t), "ctrl", &lim, &cmd, err, sizeof(err)); }

static void test_commands(void **state)
{
	(void)state;
	assert_int_equal(parse("op = \"stats\"; id = 7;"), 0);
	assert_int_equal(cmd.op, CTL_STATS);
	assert_int_equal(cmd.id, 7);
	assert_int_equal(parse("op = \"remove\"; id = 65535;"), 0);
	assert_int_equal(cmd.op, CTL_REMOVE);
	assert_int_equal(cmd.id, 65535);
	assert_int_equal(parse("op = \"emu\"; port = \"h1\"; rate = \"100M\"; delay_us = 50; loss = 0.25;"), 0);
	assert_int_equal(cmd.op, CTL_EMU);
	assert_string_equal(cmd.port, "h1");
	assert_int_equal(cmd.netem.rate_bps, 100000000);
	assert_int_equal(cmd.netem.buffer_bytes, NETEM_DEFAULT_BUFFER); /* a rate brings a buffer */
	assert_int_equal(cmd.netem.delay_us, 50);
	assert_true(cmd.netem.loss == 0.25);
	assert_int_equal(parse("op = \"capture\"; action = \"start\";"), 0);
	assert_int_equal(cmd.op, CTL_CAPTURE);
	assert_true(cmd.capture_on);
	assert_int_equal(parse("op = \"capture\"; action = \"stop\";"), 0);
	assert_false(cmd.capture_on);
	/* an agent-ring step job: joins, ACKs to the upstream's job */
	assert_int_equal(
		parse("op = \"install\"; job = { id = 12; fan_in = 3; dtype = \"int32\"; slots = 16; elems = 256;"
		      " outputs = [\"multicast\", \"forward\", \"ack\"]; contributors = [\"10.0.0.1:48864\","
		      " \"10.0.0.2:48864\", \"10.0.1.254:48864\"]; upstream = 2; upstream_job = 11;"
		      " forward = { addr = \"10.0.2.254:48864@02:00:00:00:02:fe\"; job = 13; contributor = 65535; }; "
		      "};"),
		0);
	assert_int_equal(cmd.op, CTL_INSTALL);
	assert_int_equal(cmd.job.outputs, INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_ACK);
	assert_int_equal(cmd.job.upstream_index, 2);
	assert_int_equal(cmd.job.upstream_job, 11);
	assert_int_equal(cmd.job.forward.addr.mac[5], 0xfe);
	assert_int_equal(parse("op = \"install\"; job = { id = 3; fan_in = 1; dtype = \"bf16\"; slots = 1; elems = 8;"
			       " outputs = [\"multicast\"]; contributors = [\"10.0.0.1:48864\"]; };"),
			 0);
	assert_int_equal(cmd.job.dtype, INA_D_BF16);
}

static void test_refused(void **state)
{
	(void)state;
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "op = \"stats\";", "ctrl:0: missing setting 'id'" },
		{ "op = \"stat\"; id = 1;", "\"stats\"" },
		{ "op = \"remove\"; id = 65536;", "'id' must be 0..65535" },
		{ "op = \"remove\"; id = 1; extra = 2;", "unknown setting 'extra'" },
		{ "op = \"install\"; job = { id = 1; dtype = \"int32\"; slots = 1; elems = 1; outputs = [\"ack\"];"
		  " contributors = [\"10.0.0.1:48864\"]; };",
		  "ack" },
		{ "op = \"install\"; job = { id = 1; dtype = \"int32\"; slots = 129; elems = 1; outputs = "
		  "[\"multicast\"];"
		  " contributors = [\"10.0.0.1:48864\"]; };",
		  "'slots' must be 1..128" },
		{ "op = \"install\"; job = { id = 1; dtype = \"int32\"; slots = 1; elems = 257; outputs = "
		  "[\"multicast\"];"
		  " contributors = [\"10.0.0.1:48864\"]; };",
		  "'elems' must be 1..256" },
		{ "op = \"install\"; job = { id = 1; dtype = \"int32\"; slots = 1; elems = 1; outputs = "
		  "[\"multicast\"]; contributors = [\"10.0.0.1:48864\"]; reclaim_ms = 10; };",
		  "'reclaim_ms' must be 500..3600000" },
		{ "op = \"install\"; job = { id = 1; dtype = \"int32\"; slots = 1; elems = 1; outputs = "
		  "[\"multicast\"]; contributors = [\"10.0.0.1:48864-48880\"]; };",
		  "range lo-hi of at most 16" },
		{ "op = \"install\"; job = { id = 1; dtype = \"int32\"; slots = 1; elems = 1; outputs = "
		  "[\"multicast\"]; contributors = [\"10.0.0.1:48870-48864\"]; };",
		  "range lo-hi of at most 16" },
		{ "op = \"install\";", "missing setting 'job'" },
		{ "op = \"emu\"; port = \"h1\"; delay = 5;", "unknown setting 'delay'" },
		{ "op = \"emu\"; port = \"h1\"; burst_loss = { p_good_bad = 0.1; p_bad_good = 0; loss_bad = 1; };",
		  "never leaves the bad state" },
		{ "op = \"emu\";", "missing setting 'port'" },
		/* a capture's file comes from the config, never from the network */
		{ "op = \"capture\"; action = \"start\"; file = \"/etc/passwd\";", "unknown setting 'file'" },
		{ "op = \"capture\"; action = \"pause\";", "action must be \"start\" or \"stop\"" },
		{ "op = \"capture\";", "missing setting 'action'" },
		{ "op = \"emu\"; port = \"h1\"; rate = 1;", "'rate' must be at least 1M" },
		{ "op = \"emu\"; port = \"h1\"; rate = \"999K\";", "'rate' must be at least 1M" },
		{ "op = \"emu\"; port = \"\"; rate = \"1G\";", "no port is called ''" },
		/* no file access from a datagram: refused before anything reads
		 * a path, and the answer does not name it */
		{ "@include \"/\"", "directives" },
		{ "@INCLUDE \"/etc/passwd\"", "directives" },
		{ "op = \"stats\"; id = 1;\n @include \"/nonexistent\"", "directives" },
		{ "op = \"stats\"; @x id = 1;", "directives" },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i].text) != -1)
			fail_msg("case %u '%s' parsed", i, bad[i].text);
		if (strncmp(err, "ctrl:", 5) || !strstr(err, bad[i].msg))
			fail_msg("case %u: '%s' does not contain '%s'", i, err, bad[i].msg);
		if (strstr(bad[i].msg, "directives"))
			assert_null(strstr(err, "/"));
	}
}

/* What the host library sends for a job parses back to that job, field by
 * field: one grammar at both ends. */
static void test_round_trip(void **state)
{
	(void)state;
	static struct ina_job_cfg j;
	memset(&j, 0, sizeof(j));
	j.id = 40;
	j.fan_in = 3;
	j.dtype = INA_D_BFP32;
	j.nslots = 8;
	j.elems_per_slot = 256;
	j.outputs = INA_OUT_PS;
	j.upstream_index = -1;
	for (unsigned i = 0; i < j.fan_in; i++) {
		j.contributors[i].ip = htonl(0x0a000001 + i);
		j.contributors[i].port = htons(48864);
	}
	j.contributors[2].nports = 16; /* a switch: "10.0.0.3:48864-48879" */
	j.parent = (struct ina_peer){ { htonl(0x0a0001fe), htons(48870), { 2, 0, 0, 0, 1, 0xfe }, 0 }, 40, 2 };
	static char text[CTL_MAX_TEXT];
	assert_int_equal(ctl_format_install(&j, 0, text, sizeof(text)), 0);
	if (parse(text) != 0)
		fail_msg("'%s': %s", text, err);
	assert_memory_equal(&cmd.job, &j, sizeof(j));
	assert_true(cmd.owner == 0 && !cmd.auto_id);

	j.outputs = INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_ACK;
	j.dtype = INA_D_FP32;
	j.upstream_index = 2;
	j.upstream_job = 39;
	j.reclaim_ms = 750;
	j.forward = (struct ina_peer){ { htonl(0x0a0002fe), htons(48864), { 2, 0, 0, 0, 2, 0xfe }, 16 }, 41, 0xffff };
	memset(&j.parent, 0, sizeof(j.parent));
	j.parent.job = j.id; /* the parser fills it whatever the outputs */
	assert_int_equal(ctl_format_install(&j, 0x9f3c00000000abcdull, text, sizeof(text)), 0);
	if (parse(text) != 0)
		fail_msg("'%s': %s", text, err);
	assert_memory_equal(&cmd.job, &j, sizeof(j));
	assert_true(cmd.owner == 0x9f3c00000000abcdull);
	assert_int_equal(ctl_format_install(&j, 0, text, 40), -ENOSPC);

	assert_int_equal(ctl_format_remove(9, 0, text, sizeof(text)), 0);
	assert_int_equal(parse(text), 0);
	assert_int_equal(cmd.op, CTL_REMOVE);
	assert_int_equal(cmd.id, 9);
	assert_true(cmd.owner == 0);
	assert_int_equal(ctl_format_remove(9, 0x1f, text, sizeof(text)), 0);
	assert_int_equal(parse(text), 0);
	assert_true(cmd.owner == 0x1f && cmd.id == 9);
	assert_int_equal(ctl_format_stats(10, text, sizeof(text)), 0);
	assert_int_equal(parse(text), 0);
	assert_int_equal(cmd.op, CTL_STATS);

	struct ctl_job_report r = { .id = 7,
				    .completions = 100,
				    .contributions = 400,
				    .retransmits = 3,
				    .drops = 5,
				    .slots_busy = 2 },
			      back;
	assert_int_equal(ctl_format_report(&r, text, sizeof(text)), 0);
	assert_int_equal(ctl_parse_report(text, &back), 0);
	assert_true(back.id == r.id && back.completions == r.completions && back.contributions == r.contributions &&
		    back.retransmits == r.retransmits && back.drops == r.drops && back.slots_busy == r.slots_busy);
	assert_int_equal(ctl_parse_report("ok", &back), -1);
	assert_int_equal(ctl_parse_report("error: ctrl: no job with this id", &back), -1);
	assert_int_equal(
		ctl_parse_report("ok job=70000 completions=1 contributions=1 retransmits=0 slots_busy=0 drops=0",
				 &back),
		-1);
}

/* The longest install the library can send (every contributor a switch
 * on 16 ports at the longest address) fits a command and parses back. */
static void test_largest(void **state)
{
	(void)state;
	static struct ina_job_cfg j;
	memset(&j, 0, sizeof(j));
	j.id = 65535;
	j.fan_in = INA_MAX_FANIN;
	j.dtype = INA_D_INT32;
	j.nslots = 128;
	j.elems_per_slot = 256;
	j.outputs = INA_OUT_MULTICAST | INA_OUT_FORWARD | INA_OUT_ACK;
	j.upstream_index = INA_MAX_FANIN - 1;
	j.upstream_job = 65535;
	j.chain_steps = 65535;
	j.reclaim_ms = 3600000;
	for (unsigned i = 0; i < j.fan_in; i++) {
		j.contributors[i].ip = htonl(0xffffff00u + i);
		j.contributors[i].port = htons(65520);
		j.contributors[i].nports = 16;
	}
	j.forward = (struct ina_peer){ { 0xffffffffu, htons(65520), { 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe }, 16 },
				       65535,
				       65535 };
	j.parent.job = j.id;
	static char text[CTL_MAX_TEXT];
	assert_int_equal(ctl_format_install(&j, UINT64_MAX, text, sizeof(text)), 0);
	if (parse(text) != 0)
		fail_msg("'%s': %s", text, err);
	assert_memory_equal(&cmd.job, &j, sizeof(j));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_largest),
	};
	return cmocka_run_group_tests_name("ctl_msg", tests, NULL, NULL);
}
