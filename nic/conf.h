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
	int line;          /* where the value starts; 0 for the root group */
	const char *name;  /* a setting's name; NULL for elements and the root */
	union {
		long long i;
		double f;
		bool b;
		const char *s; /* NUL-terminated, escapes resolved */
	} v;
	unsigned n;                    /* aggregates: children */
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
static inline const char *conf_string(const struct conf_node *n)
{
	return n && n->type == CONF_STRING ? n->v.s : NULL;
}

static inline bool conf_is_aggregate(const struct conf_node *n)
{
	return n->type == CONF_GROUP || n->type == CONF_ARRAY || n->type == CONF_LIST;
}

#endif
