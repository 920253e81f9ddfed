/* SPDX-License-Identifier: BSD-3-Clause */
/* What every transport shares: reading a sent pkt's bytes. */
#include <string.h>

#include "dgram.h"

void dgram_gather(const struct dgram_pkt *p, uint32_t off, uint32_t len, uint8_t *out)
{
	if (!p->iovcnt) {
		memcpy(out, (const uint8_t *)p->buf + off, len);
		return;
	}
	for (unsigned i = 0; i < p->iovcnt && len; i++) {
		size_t l = p->iov[i].iov_len;
		if (off >= l) {
			off -= (uint32_t)l;
			continue;
		}
		size_t take = l - off < len ? l - off : len;
		memcpy(out, (const uint8_t *)p->iov[i].iov_base + off, take);
		out += take;
		len -= (uint32_t)take;
		off = 0;
	}
}
