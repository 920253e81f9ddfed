/* SPDX-License-Identifier: BSD-3-Clause */
/* What the host library reads of a host file for each rank, one line per
 * rank: tests/inventory/run.sh checks swemu-inventory's output with it. */
#include <stdio.h>
#include <stdlib.h>

#include "hcl_hostfile.h"

int main(int argc, char **argv)
{
	char err[512];
	struct hcl_hostfile h;
	if (argc != 2) {
		fprintf(stderr, "usage: hostfile-dump HOSTFILE\n");
		return 2;
	}
	for (int rank = 0;; rank++) {
		if (hcl_hostfile_load(argv[1], rank, &h, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		printf("rank %d of %d: %s rack %d ina %s master %s:%d\n", h.rank, h.world, h.data_addr, h.rack,
		       *h.ina_switch ? h.ina_switch : "-", h.master_addr, h.master_port);
		if (rank + 1 == h.world)
			return 0;
	}
}
