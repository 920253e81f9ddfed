/* SPDX-License-Identifier: BSD-3-Clause */
/* HMAC-SHA-256 from OpenSSL's libcrypto: a library every Linux server has,
 * maintained and constant-time where it matters (CRYPTO_memcmp); no
 * home-made cryptography. */
#include "ctl_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "ctl_msg.h"

#define MAC_LEN 32

int ctl_key_load(const char *path, struct ctl_key *key, char *err, size_t errlen)
{
	memset(key, 0, sizeof(*key));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid()) {
		snprintf(err, errlen, "key file %s: must be a regular file of this user with mode 0600 (it is %04o)",
			 path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -1;
	}
	uint8_t buf[CTL_AUTH_KEY_MAX + 2];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		n--;
	if (n < CTL_AUTH_KEY_MIN || n > CTL_AUTH_KEY_MAX) {
		snprintf(err, errlen, "key file %s: a key is %d to %d bytes", path, CTL_AUTH_KEY_MIN, CTL_AUTH_KEY_MAX);
		return -1;
	}
	memcpy(key->k, buf, (size_t)n);
	key->len = (size_t)n;
	OPENSSL_cleanse(buf, sizeof(buf));
	return 0;
}

/* HMAC over "<ts> <nonce>\n<text>": what the AUTH1 line vouches for. */
static int mac_of(const struct ctl_key *key, uint64_t ts_ms, uint64_t nonce, const char *text, size_t len,
		  uint8_t mac[MAC_LEN])
{
	static _Thread_local char in[64 + CTL_MAX_TEXT];
	int h = snprintf(in, 64, "%" PRIu64 " %016" PRIx64 "\n", ts_ms, nonce);
	if (h < 0 || len > CTL_MAX_TEXT)
		return -1;
	memcpy(in + h, text, len);
	unsigned out = 0;
	if (!HMAC(EVP_sha256(), key->k, (int)key->len, (const uint8_t *)in, (size_t)h + len, mac, &out) ||
	    out != MAC_LEN)
		return -1;
	return 0;
}

int ctl_auth_sign(const struct ctl_key *key, uint64_t ts_ms, uint64_t nonce, const char *text, char *out, size_t outlen)
{
	uint8_t mac[MAC_LEN];
	size_t len = strlen(text);
	if (mac_of(key, ts_ms, nonce, text, len, mac) < 0)
		return -1;
	int n = snprintf(out, outlen, "AUTH1 %" PRIu64 " %016" PRIx64 " ", ts_ms, nonce);
	if (n < 0 || (size_t)n + 2 * MAC_LEN + 1 + len + 1 > outlen)
		return -1;
	for (int i = 0; i < MAC_LEN; i++)
		n += snprintf(out + n, outlen - (size_t)n, "%02x", mac[i]);
	out[n++] = '\n';
	memcpy(out + n, text, len + 1);
	return n + (int)len;
}

uint64_t ctl_auth_nonce(void)
{
	uint64_t v = 0;
	if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1) { /* not seeded: still unique enough with the time */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32;
	}
	return v;
}

uint64_t ctl_auth_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

const char *ctl_auth_verdict_name(enum ctl_auth_verdict v)
{
	static const char *const names[] = { "ok", "no AUTH1 line", "bad signature", "time stamp out of window",
					     "replayed" };
	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}

bool ctl_auth_signed(const char *msg, size_t len) { return len >= 6 && memcmp(msg, "AUTH1 ", 6) == 0; }

void ctl_auth_body(const char *msg, size_t len, const char **text, size_t *textlen)
{
	size_t skip = 0;
	if (ctl_auth_signed(msg, len)) {
		const char *nl = memchr(msg, '\n', len);
		skip = nl ? (size_t)(nl - msg) + 1 : len;
	}
	*text = msg + skip;
	*textlen = len - skip;
}

static int hex_digit(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* "AUTH1 TS NONCE MAC\n": its fields, and where the command starts. */
static int parse_line(const char *msg, size_t len, uint64_t *ts, uint64_t *nonce, uint8_t mac[MAC_LEN], size_t *body)
{
	const char *nl = memchr(msg, '\n', len < CTL_AUTH_LINE_MAX ? len : CTL_AUTH_LINE_MAX);
	if (!nl)
		return -1;
	char line[CTL_AUTH_LINE_MAX];
	size_t n = (size_t)(nl - msg);
	memcpy(line, msg, n);
	line[n] = 0;
	char hex[2 * MAC_LEN + 2];
	int used = 0;
	if (sscanf(line, "AUTH1 %" SCNu64 " %16" SCNx64 " %65s%n", ts, nonce, hex, &used) != 3 || (size_t)used != n ||
	    strlen(hex) != 2 * MAC_LEN)
		return -1;
	for (int i = 0; i < MAC_LEN; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	*body = n + 1;
	return 0;
}

enum ctl_auth_verdict ctl_auth_check(const struct ctl_key *key, struct ctl_auth_seen *seen, uint64_t now_ms,
				     const char *msg, size_t len, const char **text, size_t *textlen)
{
	uint64_t ts, nonce;
	uint8_t mac[MAC_LEN], want[MAC_LEN];
	size_t body;
	if (!ctl_auth_signed(msg, len))
		return CTL_AUTH_MISSING;
	if (parse_line(msg, len, &ts, &nonce, mac, &body) < 0 ||
	    mac_of(key, ts, nonce, msg + body, len - body, want) < 0 || CRYPTO_memcmp(mac, want, MAC_LEN) != 0)
		return CTL_AUTH_BAD;
	/* only a signed time stamp is looked at: a forger cannot move it */
	if (ts + CTL_AUTH_WINDOW_MS < now_ms || ts > now_ms + CTL_AUTH_WINDOW_MS || ts <= seen->floor_ms)
		return CTL_AUTH_STALE;
	for (unsigned i = 0; i < CTL_AUTH_SEEN; i++)
		if (seen->ts[i] == ts && seen->nonce[i] == nonce)
			return CTL_AUTH_REPLAYED;
	/* what falls out of the memory can no longer be told from new: its
	 * time stamp and everything before it are refused from now on */
	unsigned slot = seen->next++ % CTL_AUTH_SEEN;
	if (seen->ts[slot] > seen->floor_ms)
		seen->floor_ms = seen->ts[slot];
	seen->ts[slot] = ts;
	seen->nonce[slot] = nonce;
	*text = msg + body;
	*textlen = len - body;
	return CTL_AUTH_OK;
}
