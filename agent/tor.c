/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "tor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

static int exchange(const struct tor *t, const char *text, const char *ok_on_resend, char *answer, size_t alen,
		    int64_t deadline_ns, char *err, size_t errlen)
{
	const struct sockaddr_in *from = &t->from, *sw = &t->ctl;
	static _Thread_local char signed_text[CTL_AUTH_LINE_MAX + CTL_MAX_TEXT];
	int sends = 0;
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sw->sin_addr, ip, sizeof(ip));
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in me = *from;
	me.sin_port = 0;
	if (fd < 0 || bind(fd, (const struct sockaddr *)&me, sizeof(me)) != 0 ||
	    connect(fd, (const struct sockaddr *)sw, sizeof(*sw)) != 0) {
		int e = errno;
		snprintf(err, errlen, "control channel to %s: %s", ip, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	int rc = -ETIMEDOUT;
	while (clock_now_ns() < deadline_ns) {
		const char *out = text;
		if (t->key) { /* signed afresh each time: the switch takes a signature once */
			if (ctl_auth_sign(t->key, ctl_auth_now_ms(), ctl_auth_nonce(), text, signed_text,
					  sizeof(signed_text)) < 0) {
				snprintf(err, errlen, "control command too long to sign");
				close(fd);
				return -E2BIG;
			}
			out = signed_text;
		}
		if (send(fd, out, strlen(out), 0) < 0 && errno != ECONNREFUSED)
			break;
		sends++;
		int64_t until = clock_now_ns() + 100000000;
		if (until > deadline_ns)
			until = deadline_ns;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left;
		while ((left = until - clock_now_ns()) > 0 && poll(&p, 1, (int)(left / 1000000) + 1) > 0) {
			ssize_t n = recv(fd, answer, alen - 1, 0);
			if (n <= 0)
				continue;
			answer[n] = 0;
			answer[strcspn(answer, "\n")] = 0;
			rc = strncmp(answer, "ok", 2) == 0 ||
					     (sends > 1 && ok_on_resend && strstr(answer, ok_on_resend))
				     ? 0
				     : -EIO;
			goto out;
		}
	}
out:
	close(fd);
	if (rc == -ETIMEDOUT)
		snprintf(err, errlen, "switch %s:%u: no answer on the control channel in time", ip,
			 ntohs(sw->sin_port));
	else if (rc == -EIO)
		snprintf(err, errlen, "switch %s: %s", ip, answer);
	return rc;
}

void tor_init(struct tor *t, const struct sockaddr_in *from, uint32_t sw_ip, uint64_t owner)
{
	*t = (struct tor){ .from = *from,
			   .ctl = { .sin_family = AF_INET, .sin_addr.s_addr = sw_ip, .sin_port = htons(INA_CTRL_PORT) },
			   .owner = owner };
}

void tor_set_key(struct tor *t, const struct ctl_key *key) { t->key = key && key->len ? key : NULL; }

int tor_command(const struct tor *t, const char *text, const char *ok_on_resend, char *answer, size_t alen,
		int64_t deadline_ns, char *err, size_t errlen)
{
	char own[512];
	if (!answer) {
		answer = own;
		alen = sizeof(own);
	}
	return exchange(t, text, ok_on_resend, answer, alen, deadline_ns, err, errlen);
}

/* What a switch says when it cannot take a job: no room for it, or
 * packets longer than it aggregates. */
static bool refusal_for_capacity(const char *answer)
{
	return strstr(answer, "not enough free slots") || strstr(answer, "job table full") ||
	       strstr(answer, "'elems' must be") || strstr(answer, "'slots' must be");
}

int tor_install(struct tor *t, const struct ina_job_cfg *job, int64_t deadline_ns, char *err, size_t errlen)
{
	char text[CTL_MAX_TEXT];
	if (t->njobs == TOR_MAX_JOBS || ctl_format_install(job, t->owner, text, sizeof(text)) < 0) {
		snprintf(err, errlen, "job %u: more jobs than a switch holds, or too large a command", job->id);
		return -E2BIG;
	}
	int rc = tor_command(t, text, "is installed", NULL, 0, deadline_ns, err, errlen);
	if (rc == -EIO && strstr(err, "is installed")) {
		/* ours, from a run of this communicator that ended without its
		 * teardown (the owner is the communicator's): replace it */
		char rm[128];
		ctl_format_remove(job->id, t->owner, rm, sizeof(rm));
		if ((rc = tor_command(t, rm, "no job", NULL, 0, deadline_ns, err, errlen)) == 0)
			rc = tor_command(t, text, "is installed", NULL, 0, deadline_ns, err, errlen);
	}
	if (rc == -EIO && refusal_for_capacity(err))
		return -ENOSPC;
	if (rc == -EIO && strstr(err, "another owner"))
		return -EADDRINUSE;
	if (rc == 0)
		t->jobs[t->njobs++] = job->id;
	return rc;
}

void tor_remove_all(struct tor *t)
{
	char text[64], e[256];
	int64_t deadline = clock_now_ns() + 2000000000;
	for (unsigned i = 0; i < t->njobs; i++) {
		ctl_format_remove(t->jobs[i], t->owner, text, sizeof(text));
		if (tor_command(t, text, "no job", NULL, 0, deadline, e, sizeof(e)) == -ETIMEDOUT)
			break; /* the switch is gone: nothing left to free */
	}
	t->njobs = 0;
}

int tor_report(const struct tor *t, uint16_t id, struct ctl_job_report *r, int64_t deadline_ns, char *err,
	       size_t errlen)
{
	char text[64], answer[256];
	ctl_format_stats(id, text, sizeof(text));
	int rc = tor_command(t, text, NULL, answer, sizeof(answer), deadline_ns, err, errlen);
	if (rc == 0 && ctl_parse_report(answer, r) < 0) {
		snprintf(err, errlen, "switch's answer to stats is not a report: %s", answer);
		return -EPROTO;
	}
	return rc;
}

int tor_host_mac(uint32_t ip, uint8_t mac[6])
{
	struct ifaddrs *ifs, *i;
	int rc = -ENODEV;
	if (getifaddrs(&ifs) != 0)
		return -errno;
	for (i = ifs; i && rc; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr != ip)
			continue;
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq r = { 0 };
		snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", i->ifa_name);
		if (fd >= 0 && ioctl(fd, SIOCGIFHWADDR, &r) == 0) {
			memcpy(mac, r.ifr_hwaddr.sa_data, 6);
			rc = 0;
		}
		if (fd >= 0)
			close(fd);
	}
	freeifaddrs(ifs);
	return rc;
}

static int neigh_mac(uint32_t ip, int64_t deadline_ns, uint8_t mac[6])
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct ifaddrs *ifs;
	int rc = -ETIMEDOUT;
	if (getifaddrs(&ifs) != 0) {
		close(fd);
		return -errno;
	}
	do {
		/* the ARP table is per device: ask each one */
		for (struct ifaddrs *i = ifs; i && rc; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
				continue;
			struct arpreq r = { 0 };
			struct sockaddr_in *pa = (struct sockaddr_in *)&r.arp_pa;
			pa->sin_family = AF_INET;
			pa->sin_addr.s_addr = ip;
			snprintf(r.arp_dev, sizeof(r.arp_dev), "%s", i->ifa_name);
			if (ioctl(fd, SIOCGARP, &r) == 0 && (r.arp_flags & ATF_COM)) {
				memcpy(mac, r.arp_ha.sa_data, 6);
				rc = 0;
			}
		}
		if (rc) {
			struct timespec ts = { 0, 2000000 }; /* ARP resolution in flight */
			nanosleep(&ts, NULL);
		}
	} while (rc && clock_now_ns() < deadline_ns);
	freeifaddrs(ifs);
	close(fd);
	return rc;
}

int tor_mac(const struct tor *t, int64_t deadline_ns, uint8_t mac[6])
{
	/* a question the switch answers (job 0's counters, or that there is
	 * no job 0) makes the kernel resolve its address, and shows it is up */
	char text[64], e[256];
	ctl_format_stats(0, text, sizeof(text));
	int rc = tor_command(t, text, NULL, NULL, 0, deadline_ns, e, sizeof(e));
	if (rc == -ETIMEDOUT)
		return rc;
	return neigh_mac(t->ctl.sin_addr.s_addr, deadline_ns, mac);
}
