/* SPDX-License-Identifier: BSD-3-Clause */
/* nic/conf: the libconfig-syntax parser behind swemu's config files and
 * control datagrams, trial files and host files.  Values against what the
 * text says; each error with its line; nothing read from disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "conf.h"

static const struct conf_node *parse_ok(struct conf *c, const char *text)
{
	char err[256] = "";
	if (conf_parse(text, strlen(text), "t", c, err, sizeof(err)) != 0)
		fail_msg("'%s' refused: %s", text, err);
	return c->root;
}

static void test_values(void **state)
{
	(void)state;
	struct conf c;
	const struct conf_node *r = parse_ok(
		&c, "# comment\n"
		    "a = 42; b = -7; h = 0xBEE0; big = 5000000000; l = 2500000000L; min = -9223372036854775808;\n"
		    "f = 1.5; g = -2e-3; dot = .25; t = TRUE; n = false;\n"
		    "s = \"x\\\"y\\\\z\\n\\t\\x41\" /* between */ \" joined\"; // comment\n"
		    "grp : { inner = 1, list = ( 1, \"two\", { three = 3; }, [ 4, 5 ] ); };\n"
		    "empty = [];\n"
		    "arr = [ \"p\", \"q\" ]\n");
	assert_int_equal(r->type, CONF_GROUP);
	assert_int_equal(r->n, 15);
	assert_int_equal(conf_member(r, "a")->v.i, 42);
	assert_int_equal(conf_member(r, "a")->line, 2);
	assert_int_equal(conf_member(r, "b")->v.i, -7);
	assert_int_equal(conf_member(r, "h")->v.i, 0xBEE0);
	assert_true(conf_member(r, "big")->v.i == 5000000000LL);
	assert_true(conf_member(r, "l")->v.i == 2500000000LL);
	assert_true(conf_member(r, "min")->v.i == INT64_MIN);
	assert_int_equal(conf_member(r, "f")->type, CONF_FLOAT);
	assert_true(conf_member(r, "f")->v.f == 1.5);
	assert_true(conf_member(r, "g")->v.f == -2e-3);
	assert_true(conf_member(r, "dot")->v.f == 0.25);
	assert_int_equal(conf_member(r, "t")->type, CONF_BOOL);
	assert_true(conf_member(r, "t")->v.b);
	assert_false(conf_member(r, "n")->v.b);
	assert_string_equal(conf_member(r, "s")->v.s, "x\"y\\z\n\tA joined");
	const struct conf_node *g = conf_member(r, "grp");
	assert_int_equal(g->type, CONF_GROUP);
	assert_int_equal(g->line, 5);
	const struct conf_node *l = conf_member(g, "list");
	assert_int_equal(l->type, CONF_LIST);
	assert_int_equal(l->n, 4);
	assert_string_equal(conf_elem(l, 1)->v.s, "two");
	assert_int_equal(conf_member(conf_elem(l, 2), "three")->v.i, 3);
	assert_int_equal(conf_elem(conf_elem(l, 3), 1)->v.i, 5);
	assert_null(conf_elem(l, 4));
	assert_null(conf_elem(l, 1)->name);
	assert_int_equal(conf_member(r, "empty")->type, CONF_ARRAY);
	assert_int_equal(conf_member(r, "empty")->n, 0);
	assert_string_equal(conf_elem(conf_member(r, "arr"), 1)->v.s, "q");
	assert_null(conf_member(r, "nope"));
	assert_null(conf_member(conf_member(r, "a"), "x")); /* not a group */
	conf_free(&c);

	parse_ok(&c, ""); /* an empty text is an empty group */
	assert_int_equal(c.root->n, 0);
	conf_free(&c);
}

/* Each bad text is refused with "t:LINE: " and the reason. */
static void test_errors(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int line;
		const char *msg;
	} bad[] = {
		{ "a = = 1;", 1, "syntax error: expected a value, found '='" },
		{ "a = 1;\nb 2;", 2, "expected '=' after 'b'" },
		{ "a = (1,\n2", 2, "expected ',' or ')'" },
		{ "a = {\n x = 1;\n", 3, "found the end of the text" },
		{ "a = \"open\n\n", 1, "a string is not closed" },
		{ "/* x\n\n", 1, "a comment /* is not closed" },
		{ "@include \"/etc/passwd\"", 1, "directives such as @include are not accepted" },
		{ "a = 1;\n  @include \"/\"\n", 2, "directives" },
		{ "a = 99999999999999999999;", 1, "integer 99999999999999999999 is too large" },
		{ "a = 0x8000000000000000;", 1, "is too large" },
		{ "a = -9223372036854775809;", 1, "is too large" },
		{ "a = 10G;", 1, "'10G' is not a number" },
		{ "a = 1.5.2;", 1, "'1.5.2' is not a number" },
		{ "a = -;", 1, "'-' is not a number" },
		{ "a = 1e999;", 1, "is not a finite number" },
		{ "a = \"\\q\";", 1, "unknown escape \\q" },
		{ "a = \"\\x00\";", 1, "\\x needs two hex digits" },
		{ "a = [1, \"x\"];", 1, "one type" },
		{ "a = [1, 1.5];", 1, "one type" },
		{ "a = [ { b = 1; } ];", 1, "an array [ ] holds single values" },
		{ "a = 1;\na = 2;", 2, "setting 'a' is given twice" },
		{ "a = 1 $", 1, "unexpected '$'" },
		{ "a = 1;\n\x01", 2, "unexpected byte 0x01" },
		{ "g = { x = 1; x = 2; };", 1, "setting 'x' is given twice" },
		{ "1 = 2;", 1, "expected a setting name" },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct conf c = { (void *)1, (void *)1 };
		char err[256], want[64];
		if (conf_parse(bad[i].text, strlen(bad[i].text), "t", &c, err, sizeof(err)) != -1)
			fail_msg("case %u '%s' parsed", i, bad[i].text);
		assert_null(c.root);
		assert_null(c.arena);
		snprintf(want, sizeof(want), "t:%d: ", bad[i].line);
		if (strncmp(err, want, strlen(want)) || !strstr(err, bad[i].msg))
			fail_msg("case %u: got '%s', want '%s...%s'", i, err, want, bad[i].msg);
	}
}

static void test_limits(void **state)
{
	(void)state;
	char text[256], err[256];
	struct conf c;
	/* a NUL byte ends nothing early: it is refused, with its line */
	static const char nul[] = "a = 1;\nb = \"x\0y\";";
	assert_int_equal(conf_parse(nul, sizeof(nul) - 1, "t", &c, err, sizeof(err)), -1);
	assert_string_equal(err, "t:2: the text contains a NUL byte");
	/* nesting is bounded (a datagram of brackets must not exhaust the stack) */
	size_t n = 0;
	n += (size_t)snprintf(text, sizeof(text), "a = ");
	for (int i = 0; i <= CONF_MAX_DEPTH; i++)
		text[n++] = '(';
	text[n] = 0;
	assert_int_equal(conf_parse(text, n, "t", &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "nested more than 32 deep"));
	/* CONF_MAX_DEPTH levels are fine */
	n = (size_t)snprintf(text, sizeof(text), "a = ");
	for (int i = 0; i < CONF_MAX_DEPTH; i++)
		text[n++] = '[' - (i < CONF_MAX_DEPTH - 1) * ('[' - '(');
	for (int i = 0; i < CONF_MAX_DEPTH; i++)
		text[n++] = i == 0 ? ']' : ')';
	text[n] = 0;
	parse_ok(&c, text);
	conf_free(&c);
	/* not NUL-terminated: only len bytes are read */
	static const char cut[] = "a = 12345";
	assert_int_equal(conf_parse(cut, 6, "t", &c, err, sizeof(err)), 0);
	assert_int_equal(conf_member(c.root, "a")->v.i, 12);
	conf_free(&c);
	/* a file that is not there */
	assert_int_equal(conf_load("/nonexistent/x.cfg", &c, err, sizeof(err)), -1);
	assert_string_equal(err, "/nonexistent/x.cfg:0: cannot read the file: No such file or directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests_name("conf", tests, NULL, NULL);
}
