/* SPDX-License-Identifier: BSD-3-Clause */
/* Signed control commands: a signed command passes once; a changed byte,
 * another key, a stale or replayed signature, or none at all is refused
 * under its verdict; key files others may read are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_auth.h"

static const char cmd[] = "op = \"remove\"; id = 7;";

static void key_of(struct ctl_key *k, char c)
{
	memset(k, 0, sizeof(*k));
	memset(k->k, c, 32);
	k->len = 32;
}

static void test_sign_and_check(void **state)
{
	(void)state;
	static struct ctl_key key, other;
	static struct ctl_auth_seen seen;
	char msg[512], bad[512];
	const char *text;
	size_t len;
	key_of(&key, 'a');
	key_of(&other, 'b');
	const uint64_t now = 1700000000000ull;
	int n = ctl_auth_sign(&key, now, 0x1234, cmd, msg, sizeof(msg));
	assert_true(n > 0 && (size_t)n == strlen(msg));
	assert_int_equal(ctl_auth_check(&key, &seen, now + 5, msg, (size_t)n, &text, &len), CTL_AUTH_OK);
	assert_int_equal(len, strlen(cmd));
	assert_memory_equal(text, cmd, len);
	/* the same datagram again: a replay */
	assert_int_equal(ctl_auth_check(&key, &seen, now + 6, msg, (size_t)n, &text, &len), CTL_AUTH_REPLAYED);
	/* one byte of the command changed, another key, no signature */
	memcpy(bad, msg, (size_t)n + 1);
	bad[n - 3] ^= 1;
	assert_int_equal(ctl_auth_check(&key, &seen, now, bad, (size_t)n, &text, &len), CTL_AUTH_BAD);
	n = ctl_auth_sign(&other, now, 0x99, cmd, msg, sizeof(msg));
	assert_int_equal(ctl_auth_check(&key, &seen, now, msg, (size_t)n, &text, &len), CTL_AUTH_BAD);
	assert_int_equal(ctl_auth_check(&key, &seen, now, cmd, strlen(cmd), &text, &len), CTL_AUTH_MISSING);
	strcpy(bad, "AUTH1 12 zz 00\nop = \"stats\"; id = 1;");
	assert_int_equal(ctl_auth_check(&key, &seen, now, bad, strlen(bad), &text, &len), CTL_AUTH_BAD);
	/* the time stamp: 30 s either way */
	n = ctl_auth_sign(&key, now - CTL_AUTH_WINDOW_MS - 1, 0x55, cmd, msg, sizeof(msg));
	assert_int_equal(ctl_auth_check(&key, &seen, now, msg, (size_t)n, &text, &len), CTL_AUTH_STALE);
	n = ctl_auth_sign(&key, now + CTL_AUTH_WINDOW_MS + 1, 0x56, cmd, msg, sizeof(msg));
	assert_int_equal(ctl_auth_check(&key, &seen, now, msg, (size_t)n, &text, &len), CTL_AUTH_STALE);
	/* a signature that fell out of the memory cannot come back */
	char first[512];
	int nf = ctl_auth_sign(&key, now + 10, 1, cmd, first, sizeof(first));
	assert_int_equal(ctl_auth_check(&key, &seen, now + 10, first, (size_t)nf, &text, &len), CTL_AUTH_OK);
	for (unsigned i = 0; i < CTL_AUTH_SEEN; i++) {
		n = ctl_auth_sign(&key, now + 11 + i, 100 + i, cmd, msg, sizeof(msg));
		assert_int_equal(ctl_auth_check(&key, &seen, now + 11 + i, msg, (size_t)n, &text, &len), CTL_AUTH_OK);
	}
	assert_int_equal(ctl_auth_check(&key, &seen, now + 500, first, (size_t)nf, &text, &len), CTL_AUTH_STALE);
	assert_string_equal(ctl_auth_verdict_name(CTL_AUTH_REPLAYED), "replayed");
	assert_true(ctl_auth_nonce() != ctl_auth_nonce());
}

static void test_key_files(void **state)
{
	(void)state;
	char path[] = "/tmp/swemu-key-XXXXXX", err[300];
	static struct ctl_key key;
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123456789abcdef0123456789abcdef\n", 33), 33);
	close(fd);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(ctl_key_load(path, &key, err, sizeof(err)), 0);
	assert_int_equal(key.len, 32); /* the newline is not part of it */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(ctl_key_load(path, &key, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "mode 0600"));
	assert_int_equal(key.len, 0);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "short", 5), 5);
	close(fd);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(ctl_key_load(path, &key, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "16 to 256 bytes"));
	unlink(path);
	assert_int_equal(ctl_key_load(path, &key, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sign_and_check),
		cmocka_unit_test(test_key_files),
	};
	return cmocka_run_group_tests_name("ctl_auth", tests, NULL, NULL);
}
