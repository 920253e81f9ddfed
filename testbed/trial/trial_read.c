/* SPDX-License-Identifier: BSD-3-Clause */
/* The value readers of swemu-trial-cfg: every setting of a trial file
 * goes through one of these, so a wrong value always ends in the same
 * "file:line: what is wrong" (trial_cfg.h). */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "trial_cfg.h"

int trial_fail(const struct trial *tr, const struct conf_node *s, const char *fmt, ...)
{
	va_list ap;
	int line = s && s->line ? s->line : 1; /* the root has no line: the file's start */
	int n = snprintf(tr->rd.err, tr->rd.errlen, "%s:%d: ", tr->rd.source, line);
	va_start(ap, fmt);
	vsnprintf(tr->rd.err + n, tr->rd.errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* lists are kept as space-separated words, as the runner reads them */
bool trial_has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = strstr(list, w); p; p = strstr(p + 1, w))
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

void trial_append_word(char *list, size_t cap, const char *w)
{
	size_t l = strlen(list);
	snprintf(list + l, cap - l, "%s%s", l ? " " : "", w);
}

bool trial_safe(const char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(".:,_-", *s))
			return false;
	return true;
}

int trial_get_int(const struct trial *tr, const struct conf_node *t, const char *key, int lo, int hi, int *v)
{
	long long x = *v;
	if (conf_get_int(&tr->rd, t, key, lo, hi, false, &x) < 0)
		return -1;
	*v = (int)x;
	return 0;
}

int trial_get_num(const struct trial *tr, const struct conf_node *t, const char *key, double lo, double hi, double *v)
{
	return conf_get_num(&tr->rd, t, key, lo, hi, v);
}

int trial_get_str(const struct trial *tr, const struct conf_node *t, const char *key, const char **v,
		  const struct conf_node **where)
{
	if (where)
		*where = conf_member(t, key);
	if (conf_get_str(&tr->rd, t, key, false, v) < 0)
		return -1;
	if (conf_member(t, key) && !trial_safe(*v))
		return trial_fail(tr, conf_member(t, key),
				  "%s = \"%s\": only letters, digits and . : , _ - are allowed", key, *v);
	return 0;
}

int trial_get_rate(const struct trial *tr, const struct conf_node *t, const char *key, double lo, double hi,
		   const char **v)
{
	const struct conf_node *s;
	if (trial_get_str(tr, t, key, v, &s) < 0)
		return -1;
	uint64_t x;
	bool buffer = strstr(key, "buffer") != NULL; /* a size as swemu reads it (64K = 65536), else a rate */
	if (s && !**v && buffer)
		return 0; /* "": the switch's default queue */
	if (s && ((buffer ? parse_size(*v, &x) : parse_rate(*v, &x)) < 0 || x < lo || x > hi))
		return trial_fail(tr, s, "%s = \"%s\": want a number with K, M or G, from %g to %g", key, *v, lo, hi);
	return 0;
}

/* A rate in bit/s as the rate grammar reads it, as short as it is exact. */
void trial_format_rate(double bps, char *buf, size_t cap)
{
	long long x = llround(bps);
	if (x >= 1000000000 && x % 1000000000 == 0)
		snprintf(buf, cap, "%lldG", x / 1000000000);
	else if (x >= 1000000 && x % 1000000 == 0)
		snprintf(buf, cap, "%lldM", x / 1000000);
	else if (x >= 1000 && x % 1000 == 0)
		snprintf(buf, cap, "%lldK", x / 1000);
	else
		snprintf(buf, cap, "%lld", x);
}

/* A list setting of 1..max distinct strings, each passed by check(tr, ), kept
 * as space-separated words in list (left as it is if the key is absent). */
int trial_get_words(const struct trial *tr, const struct conf_node *t, const char *key, const char *what,
		    const char *example, int max,
		    int (*check)(const struct trial *tr, const struct conf_node *e, const char *w), char *list,
		    size_t cap)
{
	const struct conf_node *s = conf_member(t, key);
	if (!s)
		return 0;
	if (s->type != CONF_ARRAY && s->type != CONF_LIST)
		return trial_fail(tr, s, "%s must be a list such as %s", key, example);
	int n = (int)s->n;
	if (n == 0 || n > max)
		return trial_fail(tr, s, "%s: give 1 to %d of them", key, max);
	list[0] = 0;
	for (int i = 0; i < n; i++) {
		const struct conf_node *e = conf_elem(s, (unsigned)i);
		const char *w = conf_string(e);
		if (check(tr, e, w) < 0)
			return -1;
		if (trial_has_word(list, w))
			return trial_fail(tr, e, "%s \"%s\" is listed twice", what, w);
		trial_append_word(list, cap, w);
	}
	return 0;
}

/* A group setting of numbers in lo..hi: keys (NULL-terminated), of which
 * the first `required` must be there; example shows the form in errors.
 * 0 with *g NULL when the setting is absent. */
int trial_number_group(const struct trial *tr, const struct conf_node *t, const char *key, const char *const *keys,
		       int required, double lo, double hi, const char *example, const struct conf_node **g, double *v)
{
	*g = conf_member(t, key);
	if (!*g)
		return 0;
	if ((*g)->type != CONF_GROUP)
		return trial_fail(tr, *g, "%s: want a group such as %s", key, example);
	if (conf_only_keys(&tr->rd, *g, keys) < 0)
		return -1;
	for (int k = 0; keys[k]; k++) {
		if (k < required && !conf_member(*g, keys[k]))
			return trial_fail(tr, *g, "%s: missing %s", key, keys[k]);
		if (trial_get_num(tr, *g, keys[k], lo, hi, &v[k]) < 0)
			return -1;
	}
	return 0;
}
