/*
 * shim_mpi.c: an MPI ping-pong (1 KiB to 1 MiB, data checked) for
 * capi-tests/shim.sh to run under Open MPI's ofi MTL with
 * liboxfabric-shim.so preloaded into every rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
	int rank, n = 1 << 20, bad = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	char *buf = malloc(n);
	for (int size = 1024; size <= n; size *= 16)
		for (int i = 0; i < 20; i++) {
			if (rank == 0) {
				memset(buf, i, size);
				MPI_Send(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
				MPI_Recv(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				bad += buf[size - 1] != (char)(i + 1);
			} else {
				MPI_Recv(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				buf[size - 1]++;
				MPI_Send(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
			}
		}
	if (rank == 0)
		printf("pingpong %s\n", bad ? "BAD" : "ok");
	free(buf);
	MPI_Finalize();
	return bad != 0;
}
