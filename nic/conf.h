/* SPDX-License-Identifier: BSD-3-Clause */
/* Configuration text in libconfig's syntax, parsed into a tree: swemu's
 * config files and control datagrams, trial files and host files.
 *
 *   name = value;   (or name : value, the ';' or ',' optional)
 *   value: 42, -7, 0xBEE0, 5000000000L (64-bit integers), 1.5, 2e-3,
 *          true/false, "text" ("a" "b" joins), { group of settings },
 *          [ array of scalars of one type ], ( list of any values )
 *   comments: # ..., // ..., / * ... * /
 *
 * The project's own parser rather than libconfig's (docs/SWEMU.md,
 * "Configuration text"): it reads no file (no @include; a directive is a
 * syntax error), never exits the process, frees everything it allocated
 * on every path (libconfig 1.5 leaks a string per syntax error), refuses
 * integers beyond 64 bits instead of wrapping them, and bounds nesting.
 * That is what a parser of datagrams from a network needs.
 *
 * Errors come back as "SOURCE:LINE: what is wrong". */
#ifndef CONF_H
#define CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum conf_type {
	CONF_INT = 1, /* 64-bit; an L suffix is accepted and means nothing more */
	CONF_FLOAT,
	CONF_BOOL,
	CONF_STRING,
	CONF_GROUP, /* named settings */
	CONF_ARRAY, /* scalars of one type */
	CONF_LIST,  /* any values */
};

struct conf_node {
	enum conf_type type;
	int line;	  /* where the value starts; 0 for the root group */
	const char *name; /* a setting's name; NULL for elements and the root */
	union {
		long long i;
		double f;
		bool b;
		const char *s; /* NUL-terminated, escapes resolved */
	} v;
	unsigned n;			/* aggregates: children */
	struct conf_node *child, *next; /* aggregates: first child; every node: next sibling */
};

#define CONF_MAX_DEPTH 32 /* groups, arrays and lists inside each other */

/* A parsed text: the root group and the memory of every node and string. */
struct conf {
	struct conf_node *root;
	void *arena;
};

/* Parses len bytes of text (NUL bytes are refused) named `source` in
 * errors.  0, or -1 with the error in err and nothing to free. */
int conf_parse(const char *text, size_t len, const char *source, struct conf *out, char *err, size_t errlen);
/* Reads and parses a file: -1 with "PATH:0: cannot read the file: ..." if
 * it cannot be read. */
int conf_load(const char *path, struct conf *out, char *err, size_t errlen);
void conf_free(struct conf *c);

/* The setting `name` of group g, or NULL (also when g is not a group). */
const struct conf_node *conf_member(const struct conf_node *g, const char *name);
/* Element (or setting) i of an aggregate, or NULL. */
const struct conf_node *conf_elem(const struct conf_node *a, unsigned i);

/* The string of a string node, else NULL. */
static inline const char *conf_string(const struct conf_node *n) { return n && n->type == CONF_STRING ? n->v.s : NULL; }

static inline bool conf_is_aggregate(const struct conf_node *n)
{
	return n->type == CONF_GROUP || n->type == CONF_ARRAY || n->type == CONF_LIST;
}

/* ---- reading settings with their checks (nic/conf_read.c) ----
 * Each getter reads setting `name` of group g; an absent optional setting
 * leaves *v as it is.  Errors: -1 with "SOURCE:LINE: what" in the reader's
 * err, LINE that of the setting (or of g when it is missing). */
struct conf_reader {
	const char *source;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4))) int conf_fail(const struct conf_reader *r, const struct conf_node *at,
						    const char *fmt, ...);
/* Every setting of g is one of the NULL-terminated names in allowed: a
 * misspelt key is an error, not a silently ignored line. */
int conf_only_keys(const struct conf_reader *r, const struct conf_node *g, const char *const *allowed);
int conf_get_int(const struct conf_reader *r, const struct conf_node *g, const char *name, long long lo, long long hi,
		 bool required, long long *v);
int conf_get_u32(const struct conf_reader *r, const struct conf_node *g, const char *name, long long lo, long long hi,
		 bool required, uint32_t *v);
int conf_get_str(const struct conf_reader *r, const struct conf_node *g, const char *name, bool required,
		 const char **v);
int conf_get_bool(const struct conf_reader *r, const struct conf_node *g, const char *name, bool *v);
/* An integer or a float in lo..hi. */
int conf_get_num(const struct conf_reader *r, const struct conf_node *g, const char *name, double lo, double hi,
		 double *v);
/* A quantity: an integer, or a string parse() takes ("1G", "64K");
 * `what` says which in the error ("a rate such as \"10G\""). */
int conf_get_scaled(const struct conf_reader *r, const struct conf_node *g, const char *name,
		    int (*parse)(const char *, uint64_t *), const char *what, uint64_t *v);

#endif
