/* SPDX-License-Identifier: BSD-3-Clause */
/* The small value parsers every part shares, one per kind of value: rates,
 * sizes, integers and numbers in a range, MAC and IPv4 addresses, and
 * "ip:port[@mac]".  Each returns 0, or -1 when the whole string is not one
 * such value (no partial parse, no message: the caller names the setting). */
#ifndef PARSE_H
#define PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "ina_engine.h" /* struct ina_addr */

/* "10G", "2.5g", "100M", "1000000", "10Gb": bits per second, powers of 1000. */
int parse_rate(const char *s, uint64_t *bps);
/* "64K", "1M", "1500", "2.5M": bytes, powers of 1024. */
int parse_size(const char *s, uint64_t *bytes);
/* A decimal integer in lo..hi. */
int parse_int(const char *s, long long lo, long long hi, long long *v);
/* A finite decimal number in lo..hi. */
int parse_double(const char *s, double lo, double hi, double *v);
/* "aa:bb:cc:dd:ee:ff" (two hex digits each). */
int parse_mac(const char *s, uint8_t mac[6]);
/* "a.b.c.d" in network order. */
int parse_ipv4(const char *s, uint32_t *ip);
/* "a.b.c.d:port" or "a.b.c.d:port@aa:bb:cc:dd:ee:ff"; ip and port in
 * network order, port 1..65535, the MAC zero when not given.  The port may
 * be a range "lo-hi" of at most 16 (a switch's INA ports: nports, else 0). */
int parse_addr(const char *s, struct ina_addr *a);
/* What parse_addr reads back, without the MAC: "a.b.c.d:port" or
 * "a.b.c.d:lo-hi" (n >= 28 holds any). */
void addr_text(const struct ina_addr *a, char *b, size_t n);
/* "a.b.c.d" (then the port is default_port) or "a.b.c.d:port", no MAC. */
int parse_endpoint(const char *s, uint16_t default_port, struct ina_addr *a);

#endif
