/* SPDX-License-Identifier: BSD-3-Clause */
/* A recursive-descent parser of libconfig's syntax (nic/conf.h): one token
 * of lookahead, every node and string in an arena of chunks that conf_free
 * (or a failed parse) releases at once. */
#include "conf.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- arena ---- */

struct chunk {
	struct chunk *next;
	size_t used, cap;
	max_align_t data[];
};

static void *arena_alloc(void **arena, size_t n)
{
	struct chunk *c = *arena;
	n = (n + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > 4096 ? n : 4096;
		struct chunk *fresh = malloc(sizeof(*fresh) + cap);
		if (!fresh)
			return NULL;
		fresh->next = c;
		fresh->used = 0;
		fresh->cap = cap;
		*arena = c = fresh;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

static void arena_free(void *arena)
{
	for (struct chunk *c = arena, *next; c; c = next) {
		next = c->next;
		free(c);
	}
}

/* ---- lexer ---- */

enum tok_kind { T_EOF = 256, T_NAME, T_INT, T_FLOAT, T_BOOL, T_STRING, T_BAD };

struct tok {
	int kind;	/* enum tok_kind or a punctuation character */
	const char *at; /* first byte */
	size_t len;
	int line;
	long long i;
	double f;
	const char *s; /* T_STRING: decoded, in the arena */
};

struct parser {
	const char *s, *end;
	int line;
	const char *source;
	void *arena;
	char *err;
	size_t errlen;
	int depth;
	struct tok tok; /* the lookahead */
	char *scratch;	/* strings being decoded; freed at the end */
	size_t scratch_cap;
};

__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, int line, const char *fmt, ...)
{
	if (p->err[0]) /* the first error stands */
		return -1;
	int n = snprintf(p->err, p->errlen, "%s:%d: ", p->source, line);
	if (n < 0 || (size_t)n >= p->errlen)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* Whitespace and comments; -1 on an unterminated block comment. */
static int skip_blank(struct parser *p)
{
	while (p->s < p->end) {
		char c = *p->s;
		if (c == '\n') {
			p->line++;
			p->s++;
		} else if (isspace((unsigned char)c)) {
			p->s++;
		} else if (c == '#' || (c == '/' && p->s + 1 < p->end && p->s[1] == '/')) {
			while (p->s < p->end && *p->s != '\n')
				p->s++;
		} else if (c == '/' && p->s + 1 < p->end && p->s[1] == '*') {
			int line = p->line;
			for (p->s += 2; p->s + 1 < p->end && !(p->s[0] == '*' && p->s[1] == '/'); p->s++)
				p->line += *p->s == '\n';
			if (p->s + 1 >= p->end)
				return fail(p, line, "syntax error: a comment /* is not closed");
			p->s += 2;
		} else {
			break;
		}
	}
	return 0;
}

static bool name_start(char c) { return isalpha((unsigned char)c) || c == '*'; }
static bool name_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '*'; }

static int hex_digit(char c)
{
	return isdigit((unsigned char)c)    ? c - '0'
	       : isxdigit((unsigned char)c) ? tolower((unsigned char)c) - 'a' + 10
					    : -1;
}

static int scratch_put(struct parser *p, size_t at, char c)
{
	if (at + 1 >= p->scratch_cap) {
		size_t cap = p->scratch_cap ? p->scratch_cap * 2 : 256;
		char *b = realloc(p->scratch, cap);
		if (!b)
			return -1;
		p->scratch = b;
		p->scratch_cap = cap;
	}
	p->scratch[at] = c;
	return 0;
}

/* One or more adjacent "..." (joined), escapes \" \\ \n \t \r \f \xHH. */
static int lex_string(struct parser *p, struct tok *t)
{
	size_t n = 0;
	do {
		int line = p->line;
		for (p->s++;; p->s++) {
			if (p->s >= p->end)
				return fail(p, line, "syntax error: a string is not closed");
			char c = *p->s;
			if (c == '"')
				break;
			if (c == '\n')
				p->line++;
			if (c == '\\') {
				if (++p->s >= p->end)
					return fail(p, line, "syntax error: a string is not closed");
				switch (*p->s) {
				case '"': c = '"'; break;
				case '\\': c = '\\'; break;
				case 'n': c = '\n'; break;
				case 't': c = '\t'; break;
				case 'r': c = '\r'; break;
				case 'f': c = '\f'; break;
				case 'x': {
					int hi = p->s + 2 < p->end ? hex_digit(p->s[1]) : -1;
					int lo = hi >= 0 ? hex_digit(p->s[2]) : -1;
					if (lo < 0 || (hi | lo) == 0)
						return fail(p, p->line,
							    "syntax error: \\x needs two hex digits, not 00");
					c = (char)(hi << 4 | lo);
					p->s += 2;
					break;
				}
				default:
					return fail(p, p->line, "syntax error: unknown escape \\%c in a string", *p->s);
				}
			}
			if (scratch_put(p, n++, c) < 0)
				return fail(p, line, "out of memory");
		}
		p->s++; /* the closing quote */
		if (skip_blank(p) < 0)
			return -1;
	} while (p->s < p->end && *p->s == '"');
	char *s = arena_alloc(&p->arena, n + 1);
	if (!s)
		return fail(p, t->line, "out of memory");
	if (n)
		memcpy(s, p->scratch, n);
	s[n] = 0;
	t->kind = T_STRING;
	t->s = s;
	return 0;
}

/* [-+]digits or [-+]0xHEX, either with an L or LL suffix (every integer
 * is 64-bit here), or a float: [-+]digits.digits with an exponent e[-+]N,
 * either part of the mantissa may be empty. */
static int lex_number(struct parser *p, struct tok *t)
{
	const char *s = p->s, *e = s, *end = p->end;
	bool neg = false, hex = false, is_float = false;
	if (*e == '-' || *e == '+')
		neg = *e++ == '-';
	const char *digits = e;
	size_t mantissa = 0; /* digits before and after the point */
	if (end - e > 2 && e[0] == '0' && (e[1] | 32) == 'x' && isxdigit((unsigned char)e[2])) {
		hex = true;
		for (e += 2, digits = e; e < end && isxdigit((unsigned char)*e); e++)
			;
	} else {
		for (; e < end && isdigit((unsigned char)*e); e++)
			mantissa++;
		if (e < end && *e == '.') {
			is_float = true;
			for (e++; e < end && isdigit((unsigned char)*e); e++)
				mantissa++;
		}
		const char *x = e;
		if (mantissa && x < end && (*x | 32) == 'e') {
			x++;
			if (x < end && (*x == '-' || *x == '+'))
				x++;
			if (x < end && isdigit((unsigned char)*x)) {
				is_float = true;
				for (e = x; e < end && isdigit((unsigned char)*e); e++)
					;
			}
		}
	}
	const char *num_end = e;
	if (!is_float && e < end && *e == 'L')
		e += e + 1 < end && e[1] == 'L' ? 2 : 1;
	t->len = (size_t)(e - s);
	bool bad = e < end && (name_char(*e) || *e == '.');
	if (bad || num_end == digits || (!hex && !mantissa)) {
		while (e < end && (name_char(*e) || *e == '.'))
			e++;
		return fail(p, t->line, "syntax error: '%.*s' is not a number", (int)(e - s < 40 ? e - s : 40), s);
	}
	p->s = e;
	if (is_float) {
		char buf[64], *stop;
		if (num_end - s >= (ptrdiff_t)sizeof(buf))
			return fail(p, t->line, "syntax error: number '%.20s...' is too long", s);
		memcpy(buf, s, (size_t)(num_end - s));
		buf[num_end - s] = 0;
		errno = 0;
		t->f = strtod(buf, &stop);
		if (*stop || errno || !isfinite(t->f))
			return fail(p, t->line, "%s is not a finite number", buf);
		t->kind = T_FLOAT;
		return 0;
	}
	unsigned long long v = 0, limit = neg ? (unsigned long long)INT64_MAX + 1 : (unsigned long long)INT64_MAX;
	unsigned base = hex ? 16 : 10;
	for (const char *d = digits; d < num_end; d++) {
		unsigned k = (unsigned)hex_digit(*d);
		if (v > (limit - k) / base)
			return fail(p, t->line, "integer %.*s is too large (at most 64 bits)", (int)t->len, s);
		v = v * base + k;
	}
	t->kind = T_INT;
	t->i = neg ? (long long)(0 - v) : (long long)v;
	return 0;
}

/* The next token into p->tok; -1 on a lexical error. */
static int advance(struct parser *p)
{
	struct tok *t = &p->tok;
	if (skip_blank(p) < 0)
		return -1;
	memset(t, 0, sizeof(*t));
	t->at = p->s;
	t->line = p->line;
	if (p->s >= p->end) {
		t->kind = T_EOF;
		return 0;
	}
	char c = *p->s;
	if (c && strchr("=:;,{}[]()", c)) {
		t->kind = c;
		t->len = 1;
		p->s++;
		return 0;
	}
	if (c == '"')
		return lex_string(p, t);
	if (isdigit((unsigned char)c) || c == '-' || c == '+' || c == '.')
		return lex_number(p, t);
	if (name_start(c)) {
		const char *e = p->s;
		while (e < p->end && name_char(*e))
			e++;
		t->len = (size_t)(e - p->s);
		p->s = e;
		if ((t->len == 4 && !strncasecmp(t->at, "true", 4)) ||
		    (t->len == 5 && !strncasecmp(t->at, "false", 5))) {
			t->kind = T_BOOL;
			t->i = t->len == 4;
		} else {
			t->kind = T_NAME;
		}
		return 0;
	}
	if (c == '@')
		return fail(p, t->line, "syntax error: directives such as @include are not accepted");
	if (isprint((unsigned char)c))
		return fail(p, t->line, "syntax error: unexpected '%c'", c);
	return fail(p, t->line, "syntax error: unexpected byte 0x%02x", (unsigned char)c);
}

/* What the lookahead is, for a message. */
static const char *tok_text(const struct tok *t, char *b, size_t n)
{
	if (t->kind == T_EOF)
		return "the end of the text";
	snprintf(b, n, "'%.*s'", (int)(t->len < 24 ? t->len : 24), t->at);
	return b;
}

static int unexpected(struct parser *p, const char *wanted)
{
	char b[40];
	return fail(p, p->tok.line, "syntax error: expected %s, found %s", wanted, tok_text(&p->tok, b, sizeof(b)));
}

/* ---- grammar ---- */

static struct conf_node *new_node(struct parser *p, enum conf_type type, int line)
{
	struct conf_node *n = arena_alloc(&p->arena, sizeof(*n));
	if (!n) {
		fail(p, line, "out of memory");
		return NULL;
	}
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->line = line;
	return n;
}

static void append(struct conf_node *parent, struct conf_node **last, struct conf_node *child)
{
	if (*last)
		(*last)->next = child;
	else
		parent->child = child;
	*last = child;
	parent->n++;
}

static struct conf_node *value(struct parser *p);

static int settings(struct parser *p, struct conf_node *g, int closing)
{
	struct conf_node *last = NULL;
	while (p->tok.kind != closing) {
		if (p->tok.kind != T_NAME)
			return unexpected(p, closing == T_EOF ? "a setting name" : "a setting name or '}'");
		int line = p->tok.line;
		char *name = arena_alloc(&p->arena, p->tok.len + 1);
		if (!name)
			return fail(p, line, "out of memory");
		memcpy(name, p->tok.at, p->tok.len);
		name[p->tok.len] = 0;
		if (advance(p) < 0)
			return -1;
		if (p->tok.kind != '=' && p->tok.kind != ':') {
			char b[40];
			return fail(p, p->tok.line, "syntax error: expected '=' after '%s', found %s", name,
				    tok_text(&p->tok, b, sizeof(b)));
		}
		if (advance(p) < 0)
			return -1;
		struct conf_node *v = value(p);
		if (!v)
			return -1;
		if (conf_member(g, name))
			return fail(p, line, "setting '%s' is given twice", name);
		v->name = name;
		append(g, &last, v);
		if ((p->tok.kind == ';' || p->tok.kind == ',') && advance(p) < 0)
			return -1;
	}
	return 0;
}

/* [ scalars ] or ( values ), the opening bracket consumed. */
static int elements(struct parser *p, struct conf_node *a, int closing)
{
	struct conf_node *last = NULL;
	if (p->tok.kind == closing)
		return 0;
	for (;;) {
		struct conf_node *v = value(p);
		if (!v)
			return -1;
		if (a->type == CONF_ARRAY) {
			if (conf_is_aggregate(v))
				return fail(p, v->line, "an array [ ] holds single values; a list ( ) holds any");
			if (a->child && v->type != a->child->type)
				return fail(p, v->line, "the values of an array [ ] must have one type");
		}
		append(a, &last, v);
		if (p->tok.kind == closing)
			return 0;
		if (p->tok.kind != ',')
			return unexpected(p, closing == ']' ? "',' or ']'" : "',' or ')'");
		if (advance(p) < 0)
			return -1;
	}
}

static struct conf_node *value(struct parser *p)
{
	struct tok t = p->tok;
	struct conf_node *n = NULL;
	int rc = 0;
	switch (t.kind) {
	case T_INT:
	case T_BOOL:
		if ((n = new_node(p, t.kind == T_INT ? CONF_INT : CONF_BOOL, t.line)))
			n->v.i = t.i;
		if (n && t.kind == T_BOOL)
			n->v.b = t.i != 0;
		break;
	case T_FLOAT:
		if ((n = new_node(p, CONF_FLOAT, t.line)))
			n->v.f = t.f;
		break;
	case T_STRING:
		if ((n = new_node(p, CONF_STRING, t.line)))
			n->v.s = t.s;
		break;
	case '{':
	case '[':
	case '(':
		if (p->depth >= CONF_MAX_DEPTH) {
			fail(p, t.line, "values nested more than %d deep", CONF_MAX_DEPTH);
			return NULL;
		}
		if (!(n = new_node(p,
				   t.kind == '{'   ? CONF_GROUP
				   : t.kind == '[' ? CONF_ARRAY
						   : CONF_LIST,
				   t.line)) ||
		    advance(p) < 0)
			return NULL;
		p->depth++;
		int closing = t.kind == '{' ? '}' : t.kind == '[' ? ']' : ')';
		rc = t.kind == '{' ? settings(p, n, closing) : elements(p, n, closing);
		p->depth--;
		break;
	default: unexpected(p, "a value"); return NULL;
	}
	if (!n || rc < 0 || advance(p) < 0)
		return NULL;
	return n;
}

int conf_parse(const char *text, size_t len, const char *source, struct conf *out, char *err, size_t errlen)
{
	struct parser p = { .s = text, .end = text + len, .line = 1, .source = source, .err = err, .errlen = errlen };
	out->root = NULL;
	out->arena = NULL;
	if (errlen)
		err[0] = 0;
	const char *nul = memchr(text, 0, len);
	if (nul) {
		int line = 1;
		for (const char *s = text; s < nul; s++)
			line += *s == '\n';
		fail(&p, line, "the text contains a NUL byte");
		return -1;
	}
	struct conf_node *root = new_node(&p, CONF_GROUP, 0);
	int rc = root && advance(&p) == 0 && settings(&p, root, T_EOF) == 0 ? 0 : -1;
	free(p.scratch);
	if (rc < 0) {
		arena_free(p.arena);
		return -1;
	}
	out->root = root;
	out->arena = p.arena;
	return 0;
}

int conf_load(const char *path, struct conf *out, char *err, size_t errlen)
{
	out->root = NULL;
	out->arena = NULL;
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	int e = 0;
	if (!f) {
		e = errno;
	} else {
		for (;;) {
			if (n == cap) {
				char *b = cap < ((size_t)1 << 26) ? realloc(buf, cap = cap ? cap * 2 : 4096) : NULL;
				if (!b) {
					e = cap >= ((size_t)1 << 26) ? EFBIG : ENOMEM;
					break;
				}
				buf = b;
			}
			size_t r = fread(buf + n, 1, cap - n, f);
			n += r;
			if (r == 0) {
				if (ferror(f))
					e = errno ? errno : EIO;
				break;
			}
		}
		fclose(f);
	}
	if (e) {
		free(buf);
		snprintf(err, errlen, "%s:0: cannot read the file: %s", path, strerror(e));
		return -1;
	}
	int rc = conf_parse(buf ? buf : "", n, path, out, err, errlen);
	free(buf);
	return rc;
}

void conf_free(struct conf *c)
{
	arena_free(c->arena);
	c->arena = NULL;
	c->root = NULL;
}

const struct conf_node *conf_member(const struct conf_node *g, const char *name)
{
	if (!g || g->type != CONF_GROUP)
		return NULL;
	for (const struct conf_node *c = g->child; c; c = c->next)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

const struct conf_node *conf_elem(const struct conf_node *a, unsigned i)
{
	if (!a || !conf_is_aggregate(a))
		return NULL;
	const struct conf_node *c = a->child;
	while (c && i--)
		c = c->next;
	return c;
}
