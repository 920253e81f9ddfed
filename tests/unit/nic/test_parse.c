/* SPDX-License-Identifier: BSD-3-Clause */
/* nic/parse: the one parser of each kind of value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <string.h>

#include "parse.h"

static void test_scaled(void **state)
{
	(void)state;
	uint64_t v;
	assert_int_equal(parse_rate("10G", &v), 0);
	assert_int_equal(v, 10000000000ull);
	assert_int_equal(parse_rate("2.5g", &v), 0);
	assert_int_equal(v, 2500000000ull);
	assert_int_equal(parse_rate("100Mb", &v), 0);
	assert_int_equal(v, 100000000ull);
	assert_int_equal(parse_rate("1500", &v), 0);
	assert_int_equal(v, 1500);
	assert_int_equal(parse_rate("-1G", &v), -1);
	assert_int_equal(parse_rate("1X", &v), -1);
	assert_int_equal(parse_rate("", &v), -1);
	assert_int_equal(parse_rate(" 1G", &v), -1);
	assert_int_equal(parse_rate("1e30", &v), -1);
	assert_int_equal(parse_size("64K", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(parse_size("1M", &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(parse_size("2.5m", &v), 0);
	assert_int_equal(v, 2621440);
	assert_int_equal(parse_size("1Mb", &v), -1); /* bits only for rates */
}

static void test_numbers(void **state)
{
	(void)state;
	long long i;
	double d;
	assert_int_equal(parse_int("42", 0, 100, &i), 0);
	assert_int_equal(i, 42);
	assert_int_equal(parse_int("-3", -5, 5, &i), 0);
	assert_int_equal(i, -3);
	assert_int_equal(parse_int("101", 0, 100, &i), -1);
	assert_int_equal(parse_int("4x", 0, 100, &i), -1);
	assert_int_equal(parse_int("", 0, 100, &i), -1);
	assert_int_equal(parse_int("99999999999999999999", 0, 100, &i), -1);
	assert_int_equal(parse_double("0.5", 0, 1, &d), 0);
	assert_true(d == 0.5);
	assert_int_equal(parse_double("1.5", 0, 1, &d), -1);
	assert_int_equal(parse_double("nan", 0, 1, &d), -1);
	assert_int_equal(parse_double("1e3ms", 0, 1e6, &d), -1);
}

static void test_addresses(void **state)
{
	(void)state;
	struct ina_addr a;
	assert_int_equal(parse_addr("10.1.2.3:48864", &a), 0);
	assert_int_equal(a.ip, inet_addr("10.1.2.3"));
	assert_int_equal(a.port, htons(48864));
	assert_int_equal(a.mac[0] | a.mac[5], 0);
	assert_int_equal(parse_addr("10.1.2.3:1@02:00:00:00:00:ff", &a), 0);
	assert_int_equal(a.mac[5], 0xff);
	assert_int_equal(parse_addr("10.1.2.3:0", &a), -1);
	assert_int_equal(parse_addr("10.1.2.3:65536", &a), -1);
	assert_int_equal(parse_addr("10.1.2.3:+5", &a), -1);
	assert_int_equal(parse_addr("10.1.2.3", &a), -1);
	assert_int_equal(parse_addr("10.1.2:5", &a), -1);
	assert_int_equal(parse_addr("10.1.2.3:1@02:00:00:00:00", &a), -1);
	assert_int_equal(a.nports, 0);
	/* a switch's ports: a range of at most 16, read back by addr_text */
	assert_int_equal(parse_addr("10.1.2.3:48864-48879@02:00:00:00:00:fe", &a), 0);
	assert_int_equal(a.port, htons(48864));
	assert_int_equal(a.nports, 16);
	assert_int_equal(a.mac[5], 0xfe);
	char text[32];
	addr_text(&a, text, sizeof(text));
	assert_string_equal(text, "10.1.2.3:48864-48879");
	assert_int_equal(parse_addr("10.1.2.3:7-7", &a), 0);
	assert_int_equal(a.nports, 1);
	addr_text(&a, text, sizeof(text));
	assert_string_equal(text, "10.1.2.3:7-7");
	assert_int_equal(parse_addr("255.255.255.255:65520-65535", &a), 0);
	addr_text(&a, text, sizeof(text));
	assert_string_equal(text, "255.255.255.255:65520-65535");
	assert_int_equal(parse_addr("10.1.2.3:48864-48880", &a), -1); /* 17 */
	assert_int_equal(parse_addr("10.1.2.3:9-8", &a), -1);
	assert_int_equal(parse_addr("10.1.2.3:9-", &a), -1);
	assert_int_equal(parse_addr("10.1.2.3:-9", &a), -1);
	assert_int_equal(parse_addr("10.1.2.3:9--10", &a), -1);
	assert_int_equal(parse_addr("10.1.2.3:9-+10", &a), -1);
	assert_int_equal(parse_addr("10.1.2.3:65535-65536", &a), -1);
	assert_int_equal(parse_endpoint("10.1.2.3", 48864, &a), 0);
	assert_int_equal(a.port, htons(48864));
	assert_int_equal(parse_endpoint("10.1.2.3:7", 48864, &a), 0);
	assert_int_equal(a.port, htons(7));
	assert_int_equal(parse_endpoint("10.1.2.3:7@02:00:00:00:00:01", 48864, &a), -1);
	assert_int_equal(parse_endpoint("host", 48864, &a), -1);
	uint8_t mac[6];
	assert_int_equal(parse_mac("02:5e:00:00:00:fe", mac), 0);
	assert_int_equal(mac[1], 0x5e);
	assert_int_equal(parse_mac("02:00:00:00:00:0g", mac), -1);
	assert_int_equal(parse_mac("02:00:00:00:00:01:", mac), -1);
	assert_int_equal(parse_mac("2:0:0:0:0:1", mac), -1);
	uint32_t ip;
	assert_int_equal(parse_ipv4("10.0.0.256", &ip), -1);
	assert_int_equal(parse_ipv4("10.0.0.254", &ip), 0);
	assert_int_equal(ip, inet_addr("10.0.0.254"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scaled),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_addresses),
	};
	return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
