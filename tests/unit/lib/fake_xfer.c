/* SPDX-License-Identifier: BSD-3-Clause */
/* Reliable transfers on a fake hub, for the host library's unit tests. */
#include "fake_transport.h"
#include "hcl_xfer.h"

struct hcl_xfer *fake_xfer_new_cfg(struct fake_hub *h, unsigned rank, unsigned n, const struct hcl_xfer_cfg *base,
				   struct dgram_transport *t, char *err, size_t errlen)
{
	struct sockaddr_in peers[HCL_XFER_MAX_PEERS];
	for (unsigned i = 0; i < n && i < HCL_XFER_MAX_PEERS; i++)
		peers[i] = fake_addr(i);
	fake_hub_endpoint(h, rank, t);
	struct hcl_xfer_cfg cfg = *base;
	cfg.rank = rank;
	cfg.nranks = n;
	cfg.peers = peers;
	return hcl_xfer_new(&cfg, t, err, errlen);
}

struct hcl_xfer *fake_xfer_new(struct fake_hub *h, unsigned rank, unsigned n, uint32_t rto_us,
			       struct dgram_transport *t, char *err, size_t errlen)
{
	struct hcl_xfer_cfg cfg = { .rto_us = rto_us, .rto_max_us = 20 * rto_us };
	return fake_xfer_new_cfg(h, rank, n, &cfg, t, err, errlen);
}
