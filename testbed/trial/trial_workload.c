/* SPDX-License-Identifier: BSD-3-Clause */
/* workload = "NAME" or "PATH": the trial's calls are a model's training
 * steps (docs/TRIAL.md, "Training-step workloads").  A name is a profile of
 * configs/workloads/ (SWEMU_WORKLOADS, which testbed/trial/trial.sh sets;
 * else ./configs/workloads); a value with a '/' or ending in .cfg is a
 * file, relative to the trial file's folder unless absolute.  The profile is read here, so its
 * mistakes stop the trial before anything is built, with its file and
 * line after the trial file's. */
#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_workload.h"
#include "trial_cfg.h"

/* The profile's path: a name in the workloads folder, or a file. */
static void resolve(const struct trial *tr, const char *v, char *path, size_t cap)
{
	const char *dir = getenv("SWEMU_WORKLOADS");
	size_t n = strlen(v);
	if (!strchr(v, '/') && !(n > 4 && !strcmp(v + n - 4, ".cfg"))) {
		snprintf(path, cap, "%s/%s.cfg", dir && *dir ? dir : "configs/workloads", v);
	} else if (v[0] == '/') {
		snprintf(path, cap, "%s", v);
	} else {
		const char *slash = strrchr(tr->rd.source, '/');
		int n = slash ? (int)(slash - tr->rd.source) : 1;
		snprintf(path, cap, "%.*s/%s", n, slash ? tr->rd.source : ".", v);
	}
}

/* A path the runner can quote in the shell: no quotes, spaces or $. */
static bool path_safe(const char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("./_-+,:", *s))
			return false;
	return true;
}

int trial_get_workload(const struct conf_node *t, struct trial *tr)
{
	const struct conf_node *w = conf_member(t, "workload");
	const char *v = NULL;
	if (!w)
		return 0;
	if (conf_get_str(&tr->rd, t, "workload", false, &v) < 0)
		return -1;
	if (!path_safe(v))
		return trial_fail(tr, w, "workload = \"%s\": a name or a path of letters, digits and ./_-+,:", v);
	if (!*v)
		return trial_fail(tr, w, "workload = \"\": a profile's name (configs/workloads/) or a file");
	/* the profile says what the compute and the messages are */
	static const char *const clash[] = { "compute_ms", "sizes" };
	for (size_t i = 0; i < sizeof(clash) / sizeof(*clash); i++)
		if (conf_member(t, clash[i]))
			return trial_fail(tr, conf_member(t, clash[i]),
					  "%s and workload: a workload's steps set the compute and the messages; "
					  "remove %s",
					  clash[i], clash[i]);
	char path[PATH_MAX], why[512];
	struct hcl_workload p;
	resolve(tr, v, path, sizeof(path));
	if (hcl_workload_load(path, &p, why, sizeof(why)) < 0)
		return trial_fail(tr, w, "workload = \"%s\": %s", v, why);
	char *real = realpath(path, NULL);
	snprintf(tr->workload.path, sizeof(tr->workload.path), "%s", real ? real : path);
	free(real);
	if (!path_safe(tr->workload.path))
		return trial_fail(tr, w, "workload = \"%s\": its file %s has characters the runner cannot quote", v,
				  tr->workload.path);
	snprintf(tr->workload.model, sizeof(tr->workload.model), "%s", p.model);
	tr->workload.buckets = p.nbuckets;
	tr->workload.bytes = p.total_bytes;
	tr->workload.max_bytes = p.max_bytes;
	tr->workload.fwd_ms = p.fwd_ms;
	tr->workload.bwd_ms = p.bwd_ms;
	/* the trial's one "size" is the model: its runs are ALGO-MODEL */
	snprintf(tr->sizes, sizeof(tr->sizes), "%s", p.model);
	tr->compute_ms = 0;
	hcl_workload_free(&p);
	return 0;
}
