/* SPDX-License-Identifier: BSD-3-Clause */
/* Typed getters over a parsed text (nic/conf.h), with the checks and the
 * messages every reader of configuration text shares. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"

int conf_fail(const struct conf_reader *r, const struct conf_node *at, const char *fmt, ...)
{
	int n = snprintf(r->err, r->errlen, "%s:%d: ", r->source, at ? at->line : 0);
	if (n < 0 || (size_t)n >= r->errlen)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

int conf_only_keys(const struct conf_reader *r, const struct conf_node *g, const char *const *allowed)
{
	for (const struct conf_node *m = g->child; m; m = m->next) {
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = strcmp(*a, m->name) == 0;
		if (!ok)
			return conf_fail(r, m, "unknown setting '%s'", m->name);
	}
	return 0;
}

/* The setting, or NULL with an error if it is required and missing. */
static const struct conf_node *member(const struct conf_reader *r, const struct conf_node *g, const char *name,
				      bool required, int *rc)
{
	const struct conf_node *s = conf_member(g, name);
	*rc = !s && required ? conf_fail(r, g, "missing setting '%s'", name) : 0;
	return s;
}

int conf_get_int(const struct conf_reader *r, const struct conf_node *g, const char *name, long long lo, long long hi,
		 bool required, long long *v)
{
	int rc;
	const struct conf_node *s = member(r, g, name, required, &rc);
	if (!s)
		return rc;
	if (s->type != CONF_INT)
		return conf_fail(r, s, "'%s' must be an integer", name);
	if (s->v.i < lo || s->v.i > hi)
		return conf_fail(r, s, "'%s' must be %lld..%lld, not %lld", name, lo, hi, s->v.i);
	*v = s->v.i;
	return 0;
}

int conf_get_u32(const struct conf_reader *r, const struct conf_node *g, const char *name, long long lo, long long hi,
		 bool required, uint32_t *v)
{
	long long x = *v;
	if (conf_get_int(r, g, name, lo, hi, required, &x) < 0)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

int conf_get_str(const struct conf_reader *r, const struct conf_node *g, const char *name, bool required,
		 const char **v)
{
	int rc;
	const struct conf_node *s = member(r, g, name, required, &rc);
	if (!s)
		return rc;
	if (s->type != CONF_STRING)
		return conf_fail(r, s, "'%s' must be a string", name);
	*v = s->v.s;
	return 0;
}

int conf_get_bool(const struct conf_reader *r, const struct conf_node *g, const char *name, bool *v)
{
	const struct conf_node *s = conf_member(g, name);
	if (!s)
		return 0;
	if (s->type != CONF_BOOL)
		return conf_fail(r, s, "'%s' must be true or false", name);
	*v = s->v.b;
	return 0;
}

int conf_get_num(const struct conf_reader *r, const struct conf_node *g, const char *name, double lo, double hi,
		 double *v)
{
	const struct conf_node *s = conf_member(g, name);
	if (!s)
		return 0;
	if (s->type != CONF_FLOAT && s->type != CONF_INT)
		return conf_fail(r, s, "'%s' must be a number", name);
	double x = s->type == CONF_FLOAT ? s->v.f : (double)s->v.i;
	if (!(x >= lo && x <= hi))
		return conf_fail(r, s, "'%s' must be %g..%g, not %g", name, lo, hi, x);
	*v = x;
	return 0;
}

int conf_get_scaled(const struct conf_reader *r, const struct conf_node *g, const char *name,
		    int (*parse)(const char *, uint64_t *), const char *what, uint64_t *v)
{
	const struct conf_node *s = conf_member(g, name);
	if (!s)
		return 0;
	if (s->type == CONF_INT) {
		if (s->v.i < 0)
			return conf_fail(r, s, "'%s' must not be negative", name);
		*v = (uint64_t)s->v.i;
		return 0;
	}
	if (s->type != CONF_STRING || parse(s->v.s, v) < 0)
		return conf_fail(r, s, "'%s' must be %s", name, what);
	return 0;
}
