/* SPDX-License-Identifier: BSD-3-Clause */
/* A program as a user writes it: only <hcl.h>, built with pkg-config
 * against the installed library.  One rank on loopback: the result must
 * equal the input, in place and out of place. */
#include <hcl.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	char err[320];
	struct hcl_comm *c;
	struct hcl_comm_cfg cfg = HCL_COMM_CFG_ENV;
	if (hcl_comm_create(&cfg, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "example: %s\n", err);
		return 1;
	}
	int32_t in[1000], out[1000];
	for (int i = 0; i < 1000; i++)
		in[i] = i * 7 - 300;
	int bad = hcl_allreduce(in, out, 1000, HCL_INT32, HCL_SUM, c) < 0;
	for (int i = 0; i < 1000 && !bad; i++)
		bad = out[i] != i * 7 - 300;
	bad |= hcl_allreduce(out, out, 1000, HCL_INT32, HCL_SUM, c) < 0 || out[999] != 999 * 7 - 300;
	if (bad)
		fprintf(stderr, "example: wrong result or error: %s\n", hcl_comm_error(c));
	hcl_comm_destroy(c);
	return bad;
}
