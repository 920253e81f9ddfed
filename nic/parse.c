/* SPDX-License-Identifier: BSD-3-Clause */
#include "parse.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A number with an optional k/m/g/t suffix, each a power of unit_k. */
static int parse_scaled(const char *s, double unit_k, uint64_t *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || !isfinite(x) || x < 0 || isspace((unsigned char)*s))
		return -1;
	double mul = 1;
	switch (tolower((unsigned char)*end)) {
	case 'k':
		mul = unit_k;
		end++;
		break;
	case 'm':
		mul = unit_k * unit_k;
		end++;
		break;
	case 'g':
		mul = unit_k * unit_k * unit_k;
		end++;
		break;
	case 't':
		mul = unit_k * unit_k * unit_k * unit_k;
		end++;
		break;
	}
	if (*end == 'b' && unit_k == 1000) /* "10Gb" */
		end++;
	if (*end)
		return -1;
	x *= mul;
	if (x > 1.8e19)
		return -1;
	*v = (uint64_t)llround(x);
	return 0;
}

int parse_rate(const char *s, uint64_t *bps) { return parse_scaled(s, 1000, bps); }
int parse_size(const char *s, uint64_t *bytes) { return parse_scaled(s, 1024, bytes); }

int parse_int(const char *s, long long lo, long long hi, long long *v)
{
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end || isspace((unsigned char)*s) || x < lo || x > hi)
		return -1;
	*v = x;
	return 0;
}

int parse_double(const char *s, double lo, double hi, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || *end || isspace((unsigned char)*s) || !isfinite(x) || x < lo || x > hi)
		return -1;
	*v = x;
	return 0;
}

int parse_mac(const char *s, uint8_t mac[6])
{
	if (strlen(s) != 17)
		return -1;
	for (int i = 0; i < 6; i++) {
		const char *h = s + 3 * i;
		if (!isxdigit((unsigned char)h[0]) || !isxdigit((unsigned char)h[1]) || (i < 5 && h[2] != ':'))
			return -1;
		mac[i] = (uint8_t)strtoul((char[]){ h[0], h[1], 0 }, NULL, 16);
	}
	return 0;
}

int parse_ipv4(const char *s, uint32_t *ip)
{
	struct in_addr a;
	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*ip = a.s_addr;
	return 0;
}

int parse_addr(const char *s, struct ina_addr *a)
{
	char buf[64];
	const char *at = strchr(s, '@');
	size_t n = at ? (size_t)(at - s) : strlen(s);
	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	char *colon = strrchr(buf, ':');
	if (!colon)
		return -1;
	*colon = 0;
	char *dash = strchr(colon + 1, '-');
	long long port, last = 0;
	struct ina_addr r = { 0 };
	if (dash) { /* "lo-hi": a peer on several ports (ina_addr.nports) */
		*dash = 0;
		if (dash[1] == '+' || dash[1] == '-' || parse_int(dash + 1, 1, 65535, &last) < 0)
			return -1;
	}
	if (parse_int(colon + 1, 1, 65535, &port) < 0 || colon[1] == '+' || colon[1] == '-' ||
	    parse_ipv4(buf, &r.ip) < 0 || (at && parse_mac(at + 1, r.mac) < 0) ||
	    (dash && (last < port || last - port >= INA_UDP_PORTS)))
		return -1;
	r.port = htons((uint16_t)port);
	r.nports = dash ? (uint8_t)(last - port + 1) : 0;
	*a = r;
	return 0;
}

void addr_text(const struct ina_addr *a, char *b, size_t n)
{
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a->ip, ip, sizeof(ip));
	if (a->nports)
		snprintf(b, n, "%s:%u-%u", ip, ntohs(a->port), ntohs(a->port) + a->nports - 1u);
	else
		snprintf(b, n, "%s:%u", ip, ntohs(a->port));
}

int parse_endpoint(const char *s, uint16_t default_port, struct ina_addr *a)
{
	if (strchr(s, '@'))
		return -1;
	if (strchr(s, ':'))
		return parse_addr(s, a);
	struct ina_addr r = { .port = htons(default_port) };
	if (default_port == 0 || parse_ipv4(s, &r.ip) < 0)
		return -1;
	*a = r;
	return 0;
}
