/* SPDX-License-Identifier: BSD-3-Clause */
/* Authenticated control commands: a shared per-switch key signs each
 * command with HMAC-SHA-256 (OpenSSL's libcrypto) over a time stamp, a
 * random nonce and the command text.  The switch refuses a command whose
 * code is wrong, whose time stamp is more than CTL_AUTH_WINDOW_MS from its
 * clock, or whose (time stamp, nonce) it has taken before: a captured
 * command cannot be replayed.  On the wire the signature is one line in
 * front of the command:
 *
 *   AUTH1 <ms since the epoch> <nonce, 16 hex> <HMAC, 64 hex>\n<command>
 */
#ifndef CTL_AUTH_H
#define CTL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_AUTH_KEY_MIN   16 /* bytes: 128 bits at the least */
#define CTL_AUTH_KEY_MAX   256
#define CTL_AUTH_WINDOW_MS 30000
#define CTL_AUTH_SEEN	   256 /* signatures remembered against replay */
#define CTL_AUTH_LINE_MAX  128 /* the AUTH1 line, newline included */

struct ctl_key {
	uint8_t k[CTL_AUTH_KEY_MAX];
	size_t len; /* 0: no key */
};

/* Reads a key file: its bytes, trailing white space cut, are the key.
 * The file must be a regular file that only its owner may read or write
 * (a key others can read is no key).  0, or -1 with why in err. */
int ctl_key_load(const char *path, struct ctl_key *key, char *err, size_t errlen);

/* The signed datagram for command text: the AUTH1 line, then the text,
 * into out.  ts_ms and nonce: the caller's clock (CLOCK_REALTIME, ms) and
 * a fresh random number for every datagram, re-sends included.  Its
 * length, or -1 when out is too small. */
int ctl_auth_sign(const struct ctl_key *key, uint64_t ts_ms, uint64_t nonce, const char *text, char *out,
		  size_t outlen);

/* A fresh nonce from the system's random source. */
uint64_t ctl_auth_nonce(void);
/* Milliseconds since the epoch (CLOCK_REALTIME). */
uint64_t ctl_auth_now_ms(void);

/* What a verifier has taken: signatures inside the window, and the time
 * stamp at or below which nothing is taken any more (what fell out). */
struct ctl_auth_seen {
	uint64_t ts[CTL_AUTH_SEEN], nonce[CTL_AUTH_SEEN];
	unsigned next;
	uint64_t floor_ms;
};

enum ctl_auth_verdict {
	CTL_AUTH_OK,
	CTL_AUTH_MISSING,  /* no AUTH1 line */
	CTL_AUTH_BAD,	   /* malformed line or wrong code */
	CTL_AUTH_STALE,	   /* time stamp outside the window (or below what fell out) */
	CTL_AUTH_REPLAYED, /* this signature was taken already */
};
const char *ctl_auth_verdict_name(enum ctl_auth_verdict v);

/* Whether msg[0..len) begins with an AUTH1 line (signed or not, rightly). */
bool ctl_auth_signed(const char *msg, size_t len);
/* The command after msg's AUTH1 line, unchecked (a switch without a key
 * takes a signing client's commands as unsigned); msg itself if it has
 * none. */
void ctl_auth_body(const char *msg, size_t len, const char **text, size_t *textlen);

/* Checks the datagram msg[0..len) against key at now_ms; on CTL_AUTH_OK
 * remembers its signature and points *text, *textlen at the command. */
enum ctl_auth_verdict ctl_auth_check(const struct ctl_key *key, struct ctl_auth_seen *seen, uint64_t now_ms,
				     const char *msg, size_t len, const char **text, size_t *textlen);

#endif
