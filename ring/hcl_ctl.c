#define _GNU_SOURCE
#include "hcl_ctl.h"

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

#include "hcl_xfer.h" /* hcl_now_ns */

static int exchange(const struct sockaddr_in *from, const struct sockaddr_in *sw, const char *text,
		    const char *ok_on_resend, char *answer, size_t alen, int64_t deadline_ns, char *err, size_t errlen)
{
	int sends = 0;
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sw->sin_addr, ip, sizeof(ip));
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in me = *from;
	me.sin_port = 0;
	if (fd < 0 || bind(fd, (const struct sockaddr *)&me, sizeof(me)) != 0 ||
	    connect(fd, (const struct sockaddr *)sw, sizeof(*sw)) != 0) {
		snprintf(err, errlen, "control channel to %s: %s", ip, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	int rc = -ETIMEDOUT;
	while (hcl_now_ns() < deadline_ns) {
		if (send(fd, text, strlen(text), 0) < 0 && errno != ECONNREFUSED)
			break;
		sends++;
		int64_t until = hcl_now_ns() + 100000000;
		if (until > deadline_ns)
			until = deadline_ns;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left;
		while ((left = until - hcl_now_ns()) > 0 && poll(&p, 1, (int)(left / 1000000) + 1) > 0) {
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
		snprintf(err, errlen, "switch %s:%u: no answer on the control channel in time", ip, ntohs(sw->sin_port));
	else if (rc == -EIO)
		snprintf(err, errlen, "switch %s: %s", ip, answer);
	return rc;
}

int hcl_ctl_send(const struct sockaddr_in *from, const struct sockaddr_in *sw, const char *text,
		 const char *ok_on_resend, int64_t deadline_ns, char *err, size_t errlen)
{
	char answer[512];
	return exchange(from, sw, text, ok_on_resend, answer, sizeof(answer), deadline_ns, err, errlen);
}

int hcl_ctl_query(const struct sockaddr_in *from, const struct sockaddr_in *sw, const char *text, char *answer,
		  size_t alen, int64_t deadline_ns, char *err, size_t errlen)
{
	return exchange(from, sw, text, NULL, answer, alen, deadline_ns, err, errlen);
}

static const char *dtype_name(uint8_t d)
{
	return d == INA_D_FP32 ? "fp32" : d == INA_D_BFP32 ? "bfp32" : d == INA_D_BF16 ? "bf16" : "int32";
}

static int addr_text(const struct ina_addr *a, bool with_mac, char *b, size_t n)
{
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a->ip, ip, sizeof(ip));
	const uint8_t *m = a->mac;
	return with_mac ? snprintf(b, n, "%s:%u@%02x:%02x:%02x:%02x:%02x:%02x", ip, ntohs(a->port), m[0], m[1], m[2],
				   m[3], m[4], m[5])
			: snprintf(b, n, "%s:%u", ip, ntohs(a->port));
}

int hcl_ctl_install_text(const struct ina_job_cfg *c, char *buf, size_t n)
{
	size_t k = 0;
	char a[80];
#define PUT(...)                                                                   \
	do {                                                                       \
		int w_ = snprintf(buf + k, k < n ? n - k : 0, __VA_ARGS__);        \
		k += (size_t)(w_ > 0 ? w_ : 0);                                    \
	} while (0)
	PUT("op = \"install\"; job = { id = %u; fan_in = %u; dtype = \"%s\"; slots = %u; elems = %u; outputs = [",
	    c->id, c->fan_in, dtype_name(c->dtype), c->nslots, c->elems_per_slot);
	const char *sep = "";
	static const struct { unsigned bit; const char *name; } outs[] = {
		{ INA_OUT_MULTICAST, "multicast" }, { INA_OUT_FORWARD, "forward" }, { INA_OUT_PS, "ps" },
		{ INA_OUT_ACK, "ack" } };
	for (unsigned i = 0; i < 4; i++)
		if (c->outputs & outs[i].bit) {
			PUT("%s\"%s\"", sep, outs[i].name);
			sep = ", ";
		}
	PUT("]; contributors = [");
	for (unsigned i = 0; i < c->fan_in; i++) {
		addr_text(&c->contributors[i], false, a, sizeof(a));
		PUT("%s\"%s\"", i ? ", " : "", a);
	}
	PUT("];");
	if (c->upstream_index >= 0)
		PUT(" upstream = %d; upstream_job = %u;", c->upstream_index, c->upstream_job);
	if (c->outputs & INA_OUT_FORWARD) {
		addr_text(&c->forward.addr, true, a, sizeof(a));
		PUT(" forward = { addr = \"%s\"; job = %u; contributor = %u; };", a, c->forward.job,
		    c->forward.contributor);
	}
	if (c->outputs & INA_OUT_PS) {
		addr_text(&c->parent.addr, true, a, sizeof(a));
		PUT(" parent = { addr = \"%s\"; contributor = %u; };", a, c->parent.contributor);
	}
	PUT(" };");
#undef PUT
	return k < n ? 0 : -ENOSPC;
}

int hcl_mac_local(uint32_t ip, uint8_t mac[6])
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

int hcl_mac_neigh(uint32_t ip, int64_t deadline_ns, uint8_t mac[6])
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
	} while (rc && hcl_now_ns() < deadline_ns);
	freeifaddrs(ifs);
	close(fd);
	return rc;
}
