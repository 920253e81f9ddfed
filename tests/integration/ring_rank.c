/* SPDX-License-Identifier: BSD-3-Clause */
/* One rank of a ring all-reduce over kernel UDP, for the namespace tests:
 *   ring_rank --rank R --peers IP:PORT,IP:PORT,... [--count N] [--calls K]
 *             [--dtype int32|fp32] [--deadline-s S]
 * Every rank derives every rank's data, so it checks the exact sum (int32)
 * or the sum within the rounding bound (fp32).  Exit 0 when all calls were
 * right, 1 on a wrong result or an error (printed, naming the peer). */
#include <arpa/inet.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcl_ring.h"

#define MAXR 64

static uint32_t val(unsigned r, unsigned call, size_t i)
{
	uint64_t s = (uint64_t)r * 1000003 + call * 7919 + i * 104729 + 1;
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return (uint32_t)(s * 0x2545F4914F6CDD1Dull);
}

static float fval(unsigned r, unsigned call, size_t i)
{
	return (float)((int32_t)(val(r, call, i) % 2000001) - 1000000) / 1024.0f;
}

int main(int argc, char **argv)
{
	unsigned rank = 0, n = 0, calls = 3;
	size_t count = 1 << 20;
	double deadline_s = 30;
	enum hcl_dtype dt = HCL_INT32;
	struct sockaddr_in peers[MAXR];
	static const struct option opts[] = {
		{ "rank", 1, 0, 'r' },	{ "peers", 1, 0, 'p' },	     { "count", 1, 0, 'c' }, { "calls", 1, 0, 'k' },
		{ "dtype", 1, 0, 'd' }, { "deadline-s", 1, 0, 't' }, { "help", 0, 0, 'h' },  { 0, 0, 0, 0 },
	};
	int o;
	while ((o = getopt_long(argc, argv, "r:p:c:k:d:t:h", opts, NULL)) != -1) {
		switch (o) {
		case 'r': rank = (unsigned)atoi(optarg); break;
		case 'c': count = (size_t)atol(optarg); break;
		case 'k': calls = (unsigned)atoi(optarg); break;
		case 't': deadline_s = atof(optarg); break;
		case 'd': dt = !strcmp(optarg, "fp32") ? HCL_FP32 : HCL_INT32; break;
		case 'p':
			for (char *tok = strtok(optarg, ","); tok && n < MAXR; tok = strtok(NULL, ",")) {
				char *colon = strrchr(tok, ':');
				if (!colon)
					break;
				*colon = 0;
				peers[n] = (struct sockaddr_in){ .sin_family = AF_INET,
								 .sin_port = htons((uint16_t)atoi(colon + 1)) };
				if (inet_pton(AF_INET, tok, &peers[n].sin_addr) != 1)
					break;
				n++;
			}
			break;
		case 'h':
			printf("usage: ring_rank --rank R --peers IP:PORT,... [--count N] [--calls K] [--dtype "
			       "int32|fp32] [--deadline-s S]\n");
			return 0;
		default: return 2;
		}
	}
	if (n == 0 || rank >= n) {
		fprintf(stderr, "ring_rank: --peers and a --rank below their number are required\n");
		return 2;
	}
	char err[256];
	struct dgram_transport t;
	if (dgram_udp_open(&t, &peers[rank], NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "ring_rank %u: %s\n", rank, err);
		return 1;
	}
	struct hcl_xfer_cfg cfg = { .rank = rank, .nranks = n, .peers = peers };
	struct hcl_xfer *x = hcl_xfer_new(&cfg, &t, err, sizeof(err));
	uint32_t *buf = malloc(count * 4 + 4);
	if (!x || !buf) {
		fprintf(stderr, "ring_rank %u: %s\n", rank, x ? "out of memory" : err);
		return 1;
	}
	int rc = 0;
	double secs = 0;
	for (unsigned call = 0; call < calls && rc == 0; call++) {
		for (size_t i = 0; i < count; i++) {
			if (dt == HCL_FP32) {
				float f = fval(rank, call, i);
				memcpy(&buf[i], &f, 4);
			} else {
				buf[i] = val(rank, call, i);
			}
		}
		int64_t t0 = clock_now_ns();
		rc = hcl_ring_allreduce(x, rank, n, buf, count, dt, call + 1, t0 + (int64_t)(deadline_s * 1e9), err,
					sizeof(err));
		secs += (clock_now_ns() - t0) * 1e-9;
		if (rc) {
			fprintf(stderr, "ring_rank %u: call %u: %s\n", rank, call, err);
			break;
		}
		for (size_t i = 0; i < count; i++) {
			double want = 0, mag = 0;
			for (unsigned r = 0; r < n; r++) {
				want += dt == HCL_FP32 ? fval(r, call, i) : 0;
				mag += dt == HCL_FP32 ? fabs(fval(r, call, i)) : 0;
			}
			uint32_t wi = 0;
			for (unsigned r = 0; r < n; r++)
				wi += val(r, call, i);
			float g;
			memcpy(&g, &buf[i], 4);
			if (dt == HCL_INT32 ? buf[i] != wi : fabs(g - want) > n * mag * 0x1p-24) {
				fprintf(stderr, "ring_rank %u: call %u element %zu wrong\n", rank, call, i);
				rc = 1;
				break;
			}
		}
	}
	if (rc == 0) {
		/* as hcl_comm_destroy does: until every sender's FIN, or a quiet
		 * time that outlasts their backed-off timers (a fixed 50 ms was
		 * shorter than a 10 ms-floor timer after back-off: a neighbour
		 * whose last ACK was lost waited to its deadline) */
		hcl_xfer_linger_final(x, clock_now_ns() + 2000000000ll);
		double bytes = (double)count * 4 * calls;
		printf("rank %u: %u x %zu elements exact, %.3f s, busbw %.3f GB/s, resent %llu\n", rank, calls, count,
		       secs, bytes / secs / 1e9 * 2 * (n - 1) / n, (unsigned long long)hcl_xfer_stats(x)->data_resent);
	}
	hcl_xfer_free(x);
	dgram_close(&t);
	free(buf);
	return rc ? 1 : 0;
}
