/* SPDX-License-Identifier: BSD-3-Clause */
#include "hcl_kept.h"

#include <stdlib.h>
#include <string.h>

uint8_t *hcl_kept_next(struct hcl_kept *k, size_t bytes)
{
	if (!bytes)
		bytes = 1; /* a buffer all the same: NULL means out of memory */
	if (bytes > k->bytes) {
		for (unsigned i = 0; i < 2; i++) {
			uint8_t *b = realloc(k->buf[i], bytes);
			if (!b)
				return NULL;
			k->buf[i] = b;
		}
		for (unsigned i = 0; i < 2; i++)
			memset(k->buf[i] + k->bytes, 0, bytes - k->bytes);
		k->bytes = bytes;
	}
	k->cur ^= 1;
	return k->buf[k->cur];
}

void hcl_kept_free(struct hcl_kept *k)
{
	free(k->buf[0]);
	free(k->buf[1]);
	*k = (struct hcl_kept){ 0 };
}
