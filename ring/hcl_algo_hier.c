/* SPDX-License-Identifier: BSD-3-Clause */
/* hier: the two-level all-reduce over the racks (ring/hcl_hier.c). */
#include <errno.h>
#include <stdlib.h>

#include "hcl_algo.h"
#include "hcl_ring.h"
#include "hcl_xfer.h"

static int hier_setup(struct hcl_comm *c, int64_t deadline, char *err, size_t errlen)
{
	(void)deadline;
	int *racks = calloc((size_t)c->world, sizeof(int));
	if (!racks)
		return hcl_fail(-ENOMEM, err, errlen, "out of memory");
	for (int i = 0; i < c->world; i++)
		racks[i] = c->info[i].rack;
	c->algo_state = racks;
	return 0;
}

static int hier_allreduce(struct hcl_comm *c, void *buf, size_t count, enum hcl_dtype dt, int64_t deadline)
{
	int rc = hcl_hier_allreduce(c->x, (unsigned)c->rank, (unsigned)c->world, c->algo_state, buf, count, dt,
				    ++c->epoch, deadline, c->err, sizeof(c->err));
	if (rc == 0) /* our last ACK may be lost: answer a resend for a while */
		hcl_xfer_linger(c->x, hcl_xfer_quiet_ns(c->x), deadline);
	return rc;
}

static void hier_teardown(struct hcl_comm *c)
{
	free(c->algo_state);
	c->algo_state = NULL;
}

const struct hcl_algo_ops hcl_algo_hier = {
	.name = "hier",
	.setup = hier_setup,
	.allreduce = hier_allreduce,
	.teardown = hier_teardown,
};
