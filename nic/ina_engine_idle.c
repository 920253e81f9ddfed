/* SPDX-License-Identifier: BSD-3-Clause */
/* Idle reports (ina_job_cfg.idle_miss_us, docs/ENGINE.md): a software PS
 * whose contributors all wait on a slot that one lost contribution holds
 * hears nothing more, and so does each of them; the PS alone knows whom
 * the slot waits for.  After a silence it tells them. */
#include "ina_engine_dp.h"

static bool job_due(const struct ina_engine *eng, const struct job *j)
{
	const uint32_t gap = ina_dp_silence_us(j);
	return eng->now_us - j->heard_us >= gap && eng->now_us - j->polled_us >= gap;
}

/* A slot whose round a failed call left behind is not reported: nobody
 * waits for it, and another slice takes it over (ina_engine.c, idle). */
static bool reportable(const struct ina_engine *eng, const struct job *j, const struct slot *s)
{
	const uint32_t reclaim = j->cfg.reclaim_ms ? j->cfg.reclaim_ms : INA_RECLAIM_MS;
	const unsigned missing = j->cfg.fan_in - s->count, most = j->cfg.fan_in / 4 > 1 ? j->cfg.fan_in / 4 : 1;
	/* many missing are workers not started yet (compute noise), not losses */
	return s->state == SLOT_PARTIAL && eng->now_ms - s->touched_ms < reclaim && missing <= most;
}

/* Whether contributor c is counted in an older slice of the job that
 * still collects: then its window holds it back, waiting like everyone
 * else for that slice; it lost nothing.  (Without this rule, ps-ina with
 * 6 of 8 racks INA re-sent slices that waited for a ToR's partial: 134 ->
 * 144 ms per call, loss-free.) */
static bool held_back(const struct ina_engine *eng, const struct job *j, const struct slot *s, unsigned c)
{
	for (size_t m = (size_t)j->base * 2; m < ((size_t)j->base + j->cfg.nslots) * 2; m++) {
		const struct slot *o = slot_at(eng, m);
		if (o != s && o->state == SLOT_PARTIAL && o->epoch == s->epoch && (int32_t)(o->seq - s->seq) < 0 &&
		    bit_test(o, c))
			return true;
	}
	return false;
}

/* Every reportable slot of job j to its missing contributors: false when
 * out has no room left (the job is reported again, whole, at the next
 * poll: a member told twice re-sends once more, which the aggregator
 * answers with HAVE). */
static bool report_job(struct ina_engine *eng, struct job *j, struct ina_emits *out)
{
	struct ctx x = { .eng = eng, .job = j, .out = out };
	bool room = true;
	for (uint32_t i = 0; i < j->cfg.nslots && room; i++)
		for (unsigned t = 0; t < 2; t++) {
			const struct slot *s = slot_at(eng, ((size_t)j->base + i) * 2 + t);
			if (!reportable(eng, j, s))
				continue;
			if (out->n + (size_t)(j->cfg.fan_in - s->count) > INA_MAX_EMITS) {
				room = false;
				break;
			}
			for (unsigned c = 0; c < j->cfg.fan_in; c++) {
				if (bit_test(s, c) || held_back(eng, j, s, c))
					continue;
				ina_dp_emit_of(&x, s, i, t, INA_T_MISS, &j->cfg.contributors[c], j->cfg.id, (uint16_t)c,
					       INA_F_IDLE);
				j->st.misses++;
				j->st.idle_misses++;
			}
		}
	j->st.emits += x.frames;
	return room;
}

static bool any_reportable(const struct ina_engine *eng, const struct job *j)
{
	for (size_t m = (size_t)j->base * 2; m < ((size_t)j->base + j->cfg.nslots) * 2; m++)
		if (reportable(eng, j, slot_at(eng, m)))
			return true;
	return false;
}

void ina_engine_poll(struct ina_engine *eng, struct ina_emits *out)
{
	out->n = 0;
	for (unsigned i = 0, n = ina_job_entries(eng); i < n; i++) {
		struct job *j = eng->jobs[i];
		if (!j->used || !j->cfg.idle_miss_us || !job_due(eng, j))
			continue;
		if (!report_job(eng, j, out))
			return; /* its silence lasts: it is due again at the next poll */
		j->polled_us = eng->now_us;
	}
}

long ina_engine_idle_wait(const struct ina_engine *eng)
{
	long wait = -1;
	for (unsigned i = 0, n = ina_job_entries(eng); i < n; i++) {
		const struct job *j = eng->jobs[i];
		if (!j->used || !j->cfg.idle_miss_us || !any_reportable(eng, j))
			continue;
		const uint32_t gap = ina_dp_silence_us(j), heard = eng->now_us - j->heard_us,
			       polled = eng->now_us - j->polled_us;
		const uint32_t since = heard < polled ? heard : polled;
		const long w = since >= gap ? 0 : (long)(gap - since);
		if (wait < 0 || w < wait)
			wait = w;
	}
	return wait;
}
