/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_pace.h"

#include <string.h>

void hcl_pace_init(struct hcl_pace *p, const struct hcl_pace_cfg *cfg)
{
	memset(p, 0, sizeof(*p));
	if (cfg)
		p->cfg = *cfg;
	if (p->cfg.threshold_ns <= 0)
		p->cfg.threshold_ns = 2000000;
	if (p->cfg.rel_threshold == 0)
		p->cfg.rel_threshold = 0.2;
	if (p->cfg.fraction <= 0 || p->cfg.fraction > 1)
		p->cfg.fraction = 0.5;
	if (p->cfg.max_delay_ns <= 0)
		p->cfg.max_delay_ns = 20000000;
	if (p->cfg.window == 0)
		p->cfg.window = 8;
	if (p->cfg.window > HCL_PACE_MAX_WINDOW)
		p->cfg.window = HCL_PACE_MAX_WINDOW;
}

int64_t hcl_pace_update(struct hcl_pace *p, int64_t early_ns, int64_t period_ns)
{
	/* earliness below the threshold is noise: it counts as none */
	int64_t thr = p->cfg.threshold_ns;
	if (p->cfg.rel_threshold > 0 && period_ns > 0 && p->cfg.rel_threshold * (double)period_ns > (double)thr)
		thr = (int64_t)(p->cfg.rel_threshold * (double)period_ns);
	p->early[p->next] = early_ns > thr ? early_ns : 0;
	p->next = (p->next + 1) % p->cfg.window;
	if (p->n < p->cfg.window)
		p->n++;
	p->delay_ns = 0;
	if (p->n < p->cfg.window)
		return 0; /* not enough history to call anything persistent */
	int64_t least = p->early[0];
	for (unsigned i = 1; i < p->n; i++)
		if (p->early[i] < least)
			least = p->early[i];
	if (least == 0)
		return 0;
	int64_t d = (int64_t)(p->cfg.fraction * (double)least);
	p->delay_ns = d < p->cfg.max_delay_ns ? d : p->cfg.max_delay_ns;
	return p->delay_ns;
}
