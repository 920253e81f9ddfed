/* SPDX-License-Identifier: BSD-3-Clause */
/* The job's host file (nic/conf.h syntax), the alternative to RANK/WORLD_SIZE/
 * MASTER_ADDR/MASTER_PORT for launchers that know the hosts in advance:
 *
 *   master_port = 29500;                 # optional, 29500
 *   ranks = (                            # rank i is entry i; rank 0 is the master
 *     { addr = "10.0.0.1"; rack = 0; ina_switch = "10.0.0.254"; },  # [:port], 48864
 *     { addr = "10.0.0.2"; rack = 0; ina_switch = "10.0.0.254"; },
 *     { addr = "10.0.1.1"; rack = 1; }   # rack 1 has no INA switch
 *   );
 *
 * Errors name the file and line. */
#ifndef HCL_HOSTFILE_H
#define HCL_HOSTFILE_H

#include <stddef.h>

struct hcl_hostfile {
	int world, rank, rack, master_port;
	char master_addr[16], data_addr[16], ina_switch[32]; /* ina_switch "" = none */
};

/* Reads the file and picks out what rank needs.  0, or -EINVAL with
 * "file:line: what" in err. */
int hcl_hostfile_load(const char *path, int rank, struct hcl_hostfile *out, char *err, size_t errlen);

#endif
