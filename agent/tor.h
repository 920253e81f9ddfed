/* SPDX-License-Identifier: BSD-3-Clause */
/* A rack agent's hold on its rack's INA ToR: commands over the switch's
 * control channel (nic/ctl_msg.h), the jobs this agent installed there (so
 * it removes those and only those), their progress, and the MAC addresses
 * a job needs (the switch forwards to peers by MAC).  ps-ina and
 * agent-ring use it alike.  Errors: a negative errno, the reason in err. */
#ifndef TOR_H
#define TOR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl_auth.h"
#include "ctl_msg.h"

#define TOR_MAX_JOBS INA_MAX_JOBS /* what a switch's engine holds */

struct tor {
	struct sockaddr_in from;   /* the agent's address: a mgmt source of the switch */
	struct sockaddr_in ctl;	   /* the switch's control channel */
	uint64_t owner;		   /* the communicator's token: its jobs are its own */
	const struct ctl_key *key; /* signs every command (NULL: unsigned) */
	unsigned njobs;
	uint16_t jobs[TOR_MAX_JOBS]; /* installed by this agent, to remove */
};

/* from: the agent's own address (its port is not used); sw_ip: the
 * switch's address, network order; owner: the token the jobs are
 * installed under (the communicator's), which no other tenant of the
 * switch holds: only it removes them, and an id another owner holds is
 * refused, not taken over. */
void tor_init(struct tor *t, const struct sockaddr_in *from, uint32_t sw_ip, uint64_t owner);
/* Commands go signed with key (the switch's ctrl_key_file), which must
 * outlive t; NULL or an empty key: unsigned. */
void tor_set_key(struct tor *t, const struct ctl_key *key);

/* Sends a command until an answer comes (re-sent every 100 ms: a lost
 * command or answer) or the deadline passes.  0 on "ok...", with the
 * answer line in answer (may be NULL); -EIO with "switch IP: error: ..."
 * in err; -ETIMEDOUT.  ok_on_resend: an error answer containing it after
 * a re-send counts as ok (the first copy was applied, its "ok" lost). */
int tor_command(const struct tor *t, const char *text, const char *ok_on_resend, char *answer, size_t alen,
		int64_t deadline_ns, char *err, size_t errlen);

/* Installs a job and notes it as this agent's.  -ENOSPC when the switch
 * has no room for it (no slots, no job entry, packets longer than it
 * aggregates): ATP's case, where the rack falls back to a software PS.
 * -EADDRINUSE when another owner holds the id (an id of this agent's own
 * owner, a crashed run's leftover of the same communicator, is replaced). */
int tor_install(struct tor *t, const struct ina_job_cfg *job, int64_t deadline_ns, char *err, size_t errlen);
/* Removes every job this agent installed (best effort, 2 s at most). */
void tor_remove_all(struct tor *t);
/* A job's counters in the switch (control op "stats"). */
int tor_report(const struct tor *t, uint16_t id, struct ctl_job_report *r, int64_t deadline_ns, char *err,
	       size_t errlen);

/* The switch's MAC, as the kernel resolved it for a question sent to it;
 * -ETIMEDOUT when the switch does not answer. */
int tor_mac(const struct tor *t, int64_t deadline_ns, uint8_t mac[6]);
/* The MAC of the local interface holding ip (network order). */
int tor_host_mac(uint32_t ip, uint8_t mac[6]);

#endif
