/* SPDX-License-Identifier: BSD-3-Clause */
/* The kept inputs: two buffers in turn, the one before keeping its bytes
 * when both grow, and both resident once grown (a VM's first touch must
 * not fall on the call after). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "hcl_kept.h"

static void test_turns_and_growth(void **st)
{
	(void)st;
	struct hcl_kept k = { 0 };
	uint8_t *a = hcl_kept_next(&k, 16);
	assert_non_null(a);
	memset(a, 0xa1, 16);
	uint8_t *b = hcl_kept_next(&k, 16);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_ptr_equal(hcl_kept_latest(&k), b);
	assert_ptr_equal(hcl_kept_before(&k), a);
	memset(b, 0xb2, 16);
	/* a larger call: the one before (b) keeps its bytes wherever it moved */
	uint8_t *c = hcl_kept_next(&k, 1 << 20);
	assert_non_null(c);
	const uint8_t *before = hcl_kept_before(&k);
	for (int i = 0; i < 16; i++)
		assert_int_equal(before[i], 0xb2);
	assert_true(k.bytes >= 1 << 20);
	/* a smaller call reuses the capacity */
	assert_non_null(hcl_kept_next(&k, 8));
	assert_int_equal(k.bytes, 1 << 20);
	hcl_kept_free(&k);
	assert_null(k.buf[0]);
}

static void test_empty_call_is_not_out_of_memory(void **st)
{
	(void)st;
	struct hcl_kept k = { 0 };
	assert_non_null(hcl_kept_next(&k, 0));
	assert_non_null(hcl_kept_next(&k, 0));
	hcl_kept_free(&k);
}

/* pages of [p, p + n) resident, in whole pages inside the range */
static size_t resident_pages(const uint8_t *p, size_t n)
{
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + pg - 1) & ~(pg - 1), hi = ((uintptr_t)p + n) & ~(pg - 1);
	unsigned char v[1024];
	size_t pages = (hi - lo) / pg, in = 0;
	assert_true(pages <= sizeof(v));
	assert_int_equal(mincore((void *)lo, hi - lo, v), 0);
	for (size_t i = 0; i < pages; i++)
		in += v[i] & 1;
	return in;
}

static void test_both_resident_after_growth(void **st)
{
	(void)st;
	const size_t n = 4 << 20, pg = (size_t)sysconf(_SC_PAGESIZE);
	struct hcl_kept k = { 0 };
	assert_non_null(hcl_kept_next(&k, n));
	/* the buffer of the next call too, before that call touches it */
	assert_int_equal(resident_pages(k.buf[0], n), n / pg - 1);
	assert_int_equal(resident_pages(k.buf[1], n), n / pg - 1);
	hcl_kept_free(&k);
}

int main(void)
{
	/* meson's MALLOC_PERTURB_ fills every allocation, which would touch
	 * the pages this checks hcl_kept touches itself */
	mallopt(M_PERTURB, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_turns_and_growth),
		cmocka_unit_test(test_empty_call_is_not_out_of_memory),
		cmocka_unit_test(test_both_resident_after_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
