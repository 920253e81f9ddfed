/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

static int read_bucket(const struct conf_reader *rd, const struct conf_node *g, const struct hcl_workload *w,
		       struct hcl_workload_bucket *b, double after)
{
	static const char *const keys[] = { "bytes", "ready_ms", NULL };
	long long bytes = 0;
	if (g->type != CONF_GROUP)
		return conf_fail(rd, g, "a bucket is a group { bytes = N; ready_ms = T; }");
	if (conf_only_keys(rd, g, keys) < 0 || conf_get_int(rd, g, "bytes", 4, 1ll << 36, true, &bytes) < 0)
		return -1;
	if (bytes % 4)
		return conf_fail(rd, conf_member(g, "bytes"), "bytes = %lld: fp32 gradients, a multiple of 4", bytes);
	b->ready_ms = -1;
	if (conf_get_num(rd, g, "ready_ms", 0, w->bwd_ms, &b->ready_ms) < 0)
		return -1;
	if (b->ready_ms < 0)
		return conf_fail(rd, g, "a bucket needs ready_ms (when it was ready, in ms after the backward began)");
	if (b->ready_ms < after)
		return conf_fail(rd, conf_member(g, "ready_ms"),
				 "ready_ms = %g comes before the bucket ahead of it (%g): list buckets in the order DDP "
				 "hands them over",
				 b->ready_ms, after);
	b->bytes = (uint64_t)bytes;
	return 0;
}

static int read_profile(const struct conf_reader *rd, const struct conf_node *root, struct hcl_workload *w)
{
	static const char *const top[] = { "workload", NULL };
	static const char *const keys[] = { "model", "source", "fwd_ms", "bwd_ms", "buckets", NULL };
	const struct conf_node *g = conf_member(root, "workload");
	const char *model = NULL, *source = NULL;
	if (conf_only_keys(rd, root, top) < 0)
		return -1;
	if (!g || g->type != CONF_GROUP)
		return conf_fail(rd, g ? g : root, "a profile is one group: workload = { model = ...; fwd_ms = ...; "
						   "bwd_ms = ...; buckets = ( ... ); }");
	if (conf_only_keys(rd, g, keys) < 0 || conf_get_str(rd, g, "model", true, &model) < 0 ||
	    conf_get_str(rd, g, "source", false, &source) < 0)
		return -1;
	if (!*model || strlen(model) >= sizeof(w->model) || strspn(model, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
									  "0123456789-_.") != strlen(model))
		return conf_fail(rd, conf_member(g, "model"),
				 "model = \"%s\": 1 to %zu letters, digits, '-', '_' or '.'", model, sizeof(w->model) - 1);
	snprintf(w->model, sizeof(w->model), "%s", model);
	w->fwd_ms = w->bwd_ms = -1;
	if (conf_get_num(rd, g, "fwd_ms", 0, 1e6, &w->fwd_ms) < 0 || conf_get_num(rd, g, "bwd_ms", 0, 1e6, &w->bwd_ms) < 0)
		return -1;
	if (w->fwd_ms < 0 || w->bwd_ms <= 0)
		return conf_fail(rd, g, "a profile needs fwd_ms and bwd_ms (the forward and backward passes, ms; the "
					"backward above 0)");
	const struct conf_node *bs = conf_member(g, "buckets");
	if (!bs || bs->type != CONF_LIST || bs->n < 1 || bs->n > HCL_WORKLOAD_MAX_BUCKETS)
		return conf_fail(rd, bs ? bs : g, "buckets: a list of 1 to %d groups { bytes = N; ready_ms = T; }",
				 HCL_WORKLOAD_MAX_BUCKETS);
	if (!(w->buckets = calloc(bs->n, sizeof(*w->buckets))))
		return conf_fail(rd, bs, "out of memory");
	double after = 0;
	for (unsigned i = 0; i < bs->n; i++) {
		struct hcl_workload_bucket *b = &w->buckets[i];
		if (read_bucket(rd, conf_elem(bs, i), w, b, after) < 0)
			return -1;
		after = b->ready_ms;
		w->nbuckets++;
		w->total_bytes += b->bytes;
		w->max_bytes = b->bytes > w->max_bytes ? b->bytes : w->max_bytes;
	}
	return 0;
}

static int finish(int rc, struct conf *c, struct hcl_workload *w)
{
	conf_free(c);
	if (rc < 0)
		hcl_workload_free(w);
	return rc;
}

int hcl_workload_parse(const char *text, size_t len, const char *source, struct hcl_workload *w, char *err,
		       size_t errlen)
{
	struct conf c;
	struct conf_reader rd = { .source = source, .err = err, .errlen = errlen };
	*w = (struct hcl_workload){ 0 };
	if (conf_parse(text, len, source, &c, err, errlen) < 0)
		return -1;
	return finish(read_profile(&rd, c.root, w), &c, w);
}

int hcl_workload_load(const char *path, struct hcl_workload *w, char *err, size_t errlen)
{
	struct conf c;
	struct conf_reader rd = { .source = path, .err = err, .errlen = errlen };
	*w = (struct hcl_workload){ 0 };
	if (conf_load(path, &c, err, errlen) < 0)
		return -1;
	return finish(read_profile(&rd, c.root, w), &c, w);
}

void hcl_workload_free(struct hcl_workload *w)
{
	free(w->buckets);
	*w = (struct hcl_workload){ 0 };
}
