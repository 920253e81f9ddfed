/* SPDX-License-Identifier: BSD-3-Clause */
/* A copy of each call's input, in two buffers used in turn, so the call
 * before's input stays for a rank a call behind (ring/hcl_fallback.c):
 * ps, ps-ina and agent-ring keep one while results overwrite the caller's
 * buffer.  Both buffers grow together and their new bytes are written at
 * once: on a VM the first touch of fresh memory costs about 2.5 ms per MiB
 * (docs/BENCHMARKS.md, "Against the tree of issue 20's filing"), and a
 * buffer grown only when its turn came made the second call pay it. */
#ifndef HCL_KEPT_H
#define HCL_KEPT_H

#include <stddef.h>
#include <stdint.h>

struct hcl_kept {
	uint8_t *buf[2];
	size_t bytes; /* what both hold */
	unsigned cur; /* the buffer of the latest call */
};

/* The other buffer becomes the latest call's, holding at least `bytes`;
 * the one before keeps its contents.  NULL if out of memory (then nothing
 * changed but capacity). */
uint8_t *hcl_kept_next(struct hcl_kept *k, size_t bytes);
static inline uint8_t *hcl_kept_latest(const struct hcl_kept *k) { return k->buf[k->cur]; }
static inline uint8_t *hcl_kept_before(const struct hcl_kept *k) { return k->buf[k->cur ^ 1]; }
void hcl_kept_free(struct hcl_kept *k);

#endif
