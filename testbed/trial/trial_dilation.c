/* SPDX-License-Identifier: BSD-3-Clause */
/* Time dilation of a trial file (docs/TRIAL.md): its rates, delays and
 * compute times are the real cluster's; the testbed runs the rates / k
 * and the times x k, and the report divides again. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hcl_noise.h"
#include "parse.h"
#include "trial_cfg.h"

/* dilation = K (>= 1) or "auto"; cpu_share only with "auto". */
int trial_get_dilation(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *d = conf_member(t, "dilation"), *c = conf_member(t, "cpu_share");
	tr->dil = d;
	if (d && d->type == CONF_STRING) {
		if (strcmp(conf_string(d), "auto"))
			return trial_fail(tr, d, "dilation = \"%s\": want a factor >= 1 or \"auto\"", conf_string(d));
		tr->dilation = 0;
	} else if (trial_get_num(tr, t, "dilation", 1, 1e6, &tr->dilation) < 0) {
		return -1;
	}
	if (c && tr->dilation != 0)
		return trial_fail(tr, c, "cpu_share needs dilation = \"auto\" (it bounds the calibration)");
	return trial_get_num(tr, t, "cpu_share", 0.05, 1, &tr->cpu_share);
}

/* One rate of the file divided by k, within what the testbed's links take
 * (the simulator's take any: 32 hosts of 25G under a 2:1 spine have a
 * 400G uplink). */
static int dilate_rate(const struct trial *tr, const char *key, const char *real, double k, char *buf, size_t cap)
{
	uint64_t x;
	parse_rate(real, &x);
	double e = (double)x / k;
	if (!tr->sim && (e < 1e6 || e > 1e11))
		return trial_fail(tr, tr->dil,
				  "at dilation %g, %s %s would run at %.0f bit/s: the testbed's links take 1M to 100G",
				  k, key, real, e);
	trial_format_rate(e, buf, cap);
	return 0;
}

/* A list of rates "R0,R1,..." each divided by k, into out. */
static int dilate_list(const struct trial *tr, const char *key, const char *list, double k, char *out, size_t cap)
{
	char one[32], rates[160];
	snprintf(rates, sizeof(rates), "%s", list);
	out[0] = 0;
	for (char *save, *r = strtok_r(rates, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
		if (dilate_rate(tr, key, r, k, one, sizeof(one)) < 0)
			return -1;
		size_t l = strlen(out);
		snprintf(out + l, cap - l, "%s%s", l ? "," : "", one);
	}
	return 0;
}

/* The values the testbed runs at: rates / k, delays and compute times x k
 * (the compute noise with them); k = 1 leaves the file's values. */
int trial_apply_dilation(struct trial *tr, double k)
{
	struct emulated *e = &tr->emu;
	if (dilate_rate(tr, "host_rate", tr->host_rate, k, e->host_rate, sizeof(e->host_rate)) < 0 ||
	    dilate_list(tr, "an uplink rate", tr->uplinks, k, e->uplink_rate, sizeof(e->uplink_rate)) < 0 ||
	    dilate_list(tr, "a rack_host_rates entry", tr->rack_rates, k, e->rack_rates, sizeof(e->rack_rates)) < 0)
		return -1;
	/* 0: a real link and switch's 1 us at least, as in the simulator.  At
	 * k = 1 swemu's own hop (tens of us here) is more than that already;
	 * divided by a large k it is a tenth of it, and an INA window
	 * bounded by its round trip would look faster than on the real
	 * fabric (ps-ina's 8 KiB per shard at 25G: 15% faster). */
	e->delay_us = llround((tr->delay_us || k <= 1 ? tr->delay_us : 1) * k);
	e->jitter_us = llround(tr->jitter_us * k);
	e->compute_ms = tr->compute_ms * k;
	if (e->delay_us > 10000000 || e->jitter_us > 10000000 || e->compute_ms > 3600000)
		return trial_fail(tr, tr->dil,
				  "at dilation %g, a delay (swemu's limit 10 s) or compute time (one hour) is too long",
				  k);
	struct hcl_noise z;
	hcl_noise_parse_jitter(tr->jitter, &z); /* checked already */
	if (z.kind == 'n')
		snprintf(e->jitter, sizeof(e->jitter), "normal:%g", z.a * k);
	else if (z.kind == 'e')
		snprintf(e->jitter, sizeof(e->jitter), "exp:%g", z.a * k);
	else if (z.kind == 'h')
		snprintf(e->jitter, sizeof(e->jitter), "hiccup:%g:%g", z.a, z.b * k);
	else
		e->jitter[0] = 0;
	return 0;
}
