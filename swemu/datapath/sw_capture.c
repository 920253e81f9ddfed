/* SPDX-License-Identifier: BSD-3-Clause */
/* pcapng (draft-ietf-opsawg-pcapng): a Section Header Block, an Interface
 * Description Block per port, an Enhanced Packet Block per frame; host
 * byte order (the section's magic tells readers which). */
#include "sw_capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_mbuf.h>

#define BT_SHB		  0x0A0D0D0Au
#define BT_IDB		  0x00000001u
#define BT_EPB		  0x00000006u
#define OPT_END		  0
#define SHB_USERAPPL	  4
#define IF_NAME		  2
#define IF_TSRESOL	  9
#define EPB_FLAGS	  2
#define LINKTYPE_ETHERNET 1

static size_t pad4(size_t n) { return (n + 3) & ~(size_t)3; }

/* An option into b at *off: code, length, value padded to 4 bytes. */
static void put_opt(uint8_t *b, size_t *off, uint16_t code, const void *v, uint16_t len)
{
	memcpy(b + *off, &code, 2);
	memcpy(b + *off + 2, &len, 2);
	memcpy(b + *off + 4, v, len);
	memset(b + *off + 4 + len, 0, pad4(len) - len);
	*off += 4 + pad4(len);
}

/* A block of type `type` whose body (after type and length) is body[0..n). */
static int put_block(FILE *f, uint32_t type, const uint8_t *body, size_t n)
{
	uint32_t total = (uint32_t)(12 + n);
	return fwrite(&type, 4, 1, f) == 1 && fwrite(&total, 4, 1, f) == 1 && fwrite(body, 1, n, f) == n &&
			       fwrite(&total, 4, 1, f) == 1
		       ? 0
		       : -1;
}

int sw_capture_open(struct sw_capture *c, const struct sw_capture_cfg *cfg, const char *const *names, int nports,
		    char *err, size_t errlen)
{
	*c = (struct sw_capture){ .cfg = *cfg };
	if (!(c->frame = malloc(cfg->snaplen ? cfg->snaplen : 1))) {
		snprintf(err, errlen, "capture: out of memory");
		return -1;
	}
	if (!(c->f = fopen(cfg->file, "wb"))) {
		snprintf(err, errlen, "capture file '%s': %s", cfg->file, strerror(errno));
		free(c->frame);
		c->frame = NULL;
		return -1;
	}
	setvbuf(c->f, NULL, _IOFBF, 1 << 20); /* the lcore writes: a system call per MiB, not per frame */
	uint8_t b[512];
	size_t off = 0;
	uint32_t magic = 0x1A2B3C4D;
	uint16_t major = 1, minor = 0;
	int64_t section_len = -1;
	memcpy(b, &magic, 4);
	memcpy(b + 4, &major, 2);
	memcpy(b + 6, &minor, 2);
	memcpy(b + 8, &section_len, 8);
	off = 16;
	put_opt(b, &off, SHB_USERAPPL, "swemu", 5);
	put_opt(b, &off, OPT_END, "", 0); /* no value, but memcpy takes no NULL */
	int rc = put_block(c->f, BT_SHB, b, off);
	for (int i = 0; i < nports && rc == 0; i++) {
		uint16_t linktype = LINKTYPE_ETHERNET, reserved = 0;
		uint8_t nanoseconds = 9;
		memcpy(b, &linktype, 2);
		memcpy(b + 2, &reserved, 2);
		memcpy(b + 4, &cfg->snaplen, 4);
		off = 8;
		size_t nl = strnlen(names[i], 200);
		put_opt(b, &off, IF_NAME, names[i], (uint16_t)nl);
		put_opt(b, &off, IF_TSRESOL, &nanoseconds, 1);
		put_opt(b, &off, OPT_END, "", 0);
		rc = put_block(c->f, BT_IDB, b, off);
	}
	if (rc < 0 || fflush(c->f) != 0) {
		snprintf(err, errlen, "capture file '%s': %s", cfg->file, strerror(errno));
		sw_capture_close(c);
		return -1;
	}
	c->bytes = (uint64_t)ftell(c->f);
	c->running = !cfg->paused;
	return 0;
}

void sw_capture_run(struct sw_capture *c, bool on)
{
	__atomic_store_n(&c->running, on, __ATOMIC_RELAXED);
	if (!on)
		sw_capture_flush(c);
}

void sw_capture_frame(struct sw_capture *c, int port, unsigned dir, const struct rte_mbuf *m)
{
	if (!sw_capture_wants(c, port, dir))
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	uint32_t len = rte_pktmbuf_pkt_len(m), caplen = len < c->cfg.snaplen ? len : c->cfg.snaplen;
	size_t block = 12 + 20 + pad4(caplen) + 8 + 4; /* header, fields, data, flags option, end */
	if ((c->cfg.max_packets && c->packets >= c->cfg.max_packets) ||
	    (c->cfg.max_bytes && c->bytes + block > c->cfg.max_bytes)) {
		c->left_out++;
		return;
	}
	const uint8_t *data = rte_pktmbuf_read(m, 0, caplen, c->frame);
	uint32_t hdr[7] = { BT_EPB, (uint32_t)block, (uint32_t)port, (uint32_t)(now_ns >> 32), (uint32_t)now_ns, caplen,
			    len };
	/* epb_flags: bits 0-1 are the direction, 01 inbound, 10 outbound */
	uint32_t opts[3] = { EPB_FLAGS | 4u << 16, dir == SW_CAP_RX ? 1u : 2u, OPT_END };
	static const uint8_t zero[4];
	uint32_t total = (uint32_t)block;
	fwrite(hdr, 4, 7, c->f);
	fwrite(data, 1, caplen, c->f);
	fwrite(zero, 1, pad4(caplen) - caplen, c->f);
	fwrite(opts, 4, 3, c->f);
	fwrite(&total, 4, 1, c->f);
	c->packets++;
	c->bytes += block;
}

void sw_capture_flush(struct sw_capture *c)
{
	if (c && c->f)
		fflush(c->f);
}

void sw_capture_close(struct sw_capture *c)
{
	if (c->f)
		fclose(c->f);
	c->f = NULL;
	free(c->frame);
	c->frame = NULL;
}
