/* SPDX-License-Identifier: BSD-3-Clause */
/* Open MPI all-reduce bandwidth in the form of nccl-tests, as
 * ina-allreduce-perf prints it.  Built and run by testbed/bench/bench-peers.sh:
 *   mpi_allreduce MIN_BYTES MAX_BYTES ITERS WARMUP */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

/* User + system time of this rank so far, every thread. */
static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc != 5) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_allreduce MIN_BYTES MAX_BYTES ITERS WARMUP\n");
		MPI_Finalize();
		return 2;
	}
	long minb = atol(argv[1]), maxb = atol(argv[2]);
	int iters = atoi(argv[3]), warm = atoi(argv[4]);
	float *buf = malloc((size_t)maxb);
	if (rank == 0) {
		printf("# Open MPI all-reduce: %d ranks, %d iterations, %d warm-up\n", n, iters, warm);
		printf("#%11s %12s %8s %6s %10s %8s %8s %7s\n", "size", "count", "type", "redop", "time", "algbw",
		       "busbw", "#wrong");
	}
	double total = 0, cpu = 0;
	int lines = 0;
	for (long bytes = minb;; bytes = bytes * 2 > maxb ? maxb : bytes * 2) {
		int count = (int)(bytes / 4);
		for (int i = 0; i < count; i++)
			buf[i] = 0;
		for (int k = 0; k < warm; k++)
			MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		double cpu0 = cpu_seconds(), t0 = MPI_Wtime();
		for (int k = 0; k < iters; k++)
			MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double us = (MPI_Wtime() - t0) / iters * 1e6;
		cpu += cpu_seconds() - cpu0;
		for (int i = 0; i < count; i++)
			buf[i] = (float)(rank + 1);
		MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		int wrong = 0;
		for (int i = 0; i < count; i++)
			wrong += buf[i] != (float)(n * (n + 1) / 2);
		MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		double algbw = count * 4.0 / us / 1e3, busbw = algbw * 2 * (n - 1) / n;
		total += busbw;
		lines++;
		if (rank == 0)
			printf(" %11ld %12d %8s %6s %10.1f %8.3f %8.3f %7d\n", (long)count * 4, count, "float", "sum",
			       us, algbw, busbw, wrong);
		fflush(stdout);
		if (bytes >= maxb)
			break;
	}
	MPI_Allreduce(MPI_IN_PLACE, &cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("# Avg bus bandwidth    : %.3f\n", total / lines);
		printf("# cpu seconds of all ranks in the timed calls: %.3f\n", cpu);
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
