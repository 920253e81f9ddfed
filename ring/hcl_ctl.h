/* What a host needs to drive swemu's control channel (docs/SWEMU.md): send a
 * command, wait for "ok", format a job in the switch's config syntax; and
 * the MAC addresses a job needs (the switch forwards to peers by MAC). */
#ifndef HCL_CTL_H
#define HCL_CTL_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "ina_engine.h"

#define HCL_CTL_PORT 48863

/* Sends text from local address `from` (a mgmt source of the switch) to
 * sw (ip, control port) until an answer arrives or the deadline passes;
 * re-sends every 100 ms (a lost command or answer).  0 on "ok", or on an
 * error answer containing ok_on_resend after a re-send (the first copy was
 * applied, its "ok" lost: "is installed" for an install); -EIO with the
 * switch's "error: ..." in err; -ETIMEDOUT. */
int hcl_ctl_send(const struct sockaddr_in *from, const struct sockaddr_in *sw, const char *text,
		 const char *ok_on_resend, int64_t deadline_ns, char *err, size_t errlen);

/* The same for a command whose "ok ..." answer carries data (op "stats"):
 * the answer line is left in answer. */
int hcl_ctl_query(const struct sockaddr_in *from, const struct sockaddr_in *sw, const char *text, char *answer,
		  size_t alen, int64_t deadline_ns, char *err, size_t errlen);

/* `op = "install"; job = {...};` for cfg; -ENOSPC if buf is too small. */
int hcl_ctl_install_text(const struct ina_job_cfg *cfg, char *buf, size_t n);

/* The MAC of the local interface holding ip (network order). */
int hcl_mac_local(uint32_t ip, uint8_t mac[6]);
/* The MAC the kernel resolved for neighbour ip, waiting for ARP until the
 * deadline (the caller has sent it something). */
int hcl_mac_neigh(uint32_t ip, int64_t deadline_ns, uint8_t mac[6]);

#endif
