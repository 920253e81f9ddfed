/* A software parameter server: the aggregation engine of the switch
 * (nic/ina_engine) behind a kernel UDP socket, in a thread.  Workers talk
 * to it with the INA client exactly as to an INA switch, which is what lets
 * a rack without INA fall back to it (ATP's fallback). */
#ifndef HCL_PS_H
#define HCL_PS_H

#include <netinet/in.h>
#include <stddef.h>

#include "ina_engine.h"

struct hcl_ps;

/* Binds addr, installs the jobs, starts serving.  NULL with err on failure. */
struct hcl_ps *hcl_ps_start(const struct sockaddr_in *addr, const struct ina_job_cfg *jobs, unsigned njobs,
			    char *err, size_t errlen);
/* Stops the thread and frees everything. */
void hcl_ps_stop(struct hcl_ps *ps);
const struct ina_engine_stats *hcl_ps_stats(const struct hcl_ps *ps);

#endif
