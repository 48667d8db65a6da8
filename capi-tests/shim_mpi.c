/*
 * shim_mpi.c: an MPI program for capi-tests/shim.sh to run under Open
 * MPI's ofi MTL with liboxfabric-shim.so preloaded into every rank, and
 * without it: both runs must print the same lines.
 *
 * Two ranks:
 *  - ping-pong: 1 KiB to 1 MiB, each message's bytes checked;
 *  - one-sided: a window of 1 MiB on each rank; MPI_Put of a pattern into
 *    the peer's window, MPI_Get of it back, MPI_Accumulate (MPI_SUM) of
 *    ints, each epoch closed by MPI_Win_fence, then every byte checked;
 *  - matched probe: rank 1 sends messages of sizes rank 0 does not know in
 *    advance, with two tags; rank 0 takes each with MPI_Mprobe (tag
 *    MPI_ANY_TAG), sizes its buffer with MPI_Get_count and receives it
 *    with MPI_Mrecv, then an MPI_Improbe/MPI_Imrecv pair.
 * Rank 0 prints one line per part with a checksum of what it received, so
 * that the two runs can be compared line by line.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t sum(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static int pingpong(int rank)
{
	int n = 1 << 20, bad = 0;
	char *buf = malloc(n);
	uint64_t h = 0;
	for (int size = 1024; size <= n; size *= 16)
		for (int i = 0; i < 20; i++) {
			if (rank == 0) {
				memset(buf, i, size);
				MPI_Send(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
				MPI_Recv(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (int k = 0; k < size - 1; k++)
					bad += buf[k] != (char)i;
				bad += buf[size - 1] != (char)(i + 1);
				h ^= sum((unsigned char *)buf, size);
			} else {
				MPI_Recv(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				buf[size - 1]++;
				MPI_Send(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
			}
		}
	if (rank == 0)
		printf("pingpong %s %016llx\n", bad ? "BAD" : "ok", (unsigned long long)h);
	free(buf);
	return bad;
}

static int onesided(int rank)
{
	const int n = 1 << 20, ints = 1024;
	unsigned char *win_buf, *got = malloc(n), *src = malloc(n);
	MPI_Win win;
	int bad = 0, peer = 1 - rank;
	MPI_Alloc_mem(n + ints * sizeof(int), MPI_INFO_NULL, &win_buf);
	memset(win_buf, 0, n + ints * sizeof(int));
	MPI_Win_create(win_buf, n + ints * sizeof(int), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	for (int i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 7 + rank * 13 + (i >> 12));
	/* Put: each rank writes its pattern into the peer's window. */
	MPI_Win_fence(0, win);
	MPI_Put(src, n, MPI_BYTE, peer, 0, n, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	for (int i = 0; i < n; i++)
		bad += win_buf[i] != (unsigned char)(i * 7 + peer * 13 + (i >> 12));
	/* Get: read back what this rank put into the peer's window. */
	memset(got, 0, n);
	MPI_Get(got, n, MPI_BYTE, peer, 0, n, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	bad += memcmp(got, src, n) != 0;
	/* Accumulate: both ranks add into both ranks' ints. */
	int add[1024];
	for (int i = 0; i < ints; i++)
		add[i] = i + rank;
	MPI_Accumulate(add, ints, MPI_INT, peer, n, ints, MPI_INT, MPI_SUM, win);
	MPI_Accumulate(add, ints, MPI_INT, rank, n, ints, MPI_INT, MPI_SUM, win);
	MPI_Win_fence(0, win);
	int *acc = (int *)(win_buf + n);
	for (int i = 0; i < ints; i++)
		bad += acc[i] != 2 * i + 1;
	int all = 0;
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("onesided %s %016llx\n", all ? "BAD" : "ok",
		       (unsigned long long)(sum(win_buf, n + ints * sizeof(int)) ^ sum(got, n)));
	MPI_Win_free(&win);
	MPI_Free_mem(win_buf);
	free(got);
	free(src);
	return all;
}

static int mprobe(int rank)
{
	static const int sizes[] = {1, 100, 4096, 70000, 1 << 20, 3};
	const int k = sizeof(sizes) / sizeof(sizes[0]);
	int bad = 0;
	uint64_t h = 0;
	if (rank == 1) {
		for (int i = 0; i < k; i++) {
			unsigned char *m = malloc(sizes[i]);
			for (int j = 0; j < sizes[i]; j++)
				m[j] = (unsigned char)(j + i);
			MPI_Send(m, sizes[i], MPI_BYTE, 0, 10 + i % 2, MPI_COMM_WORLD);
			free(m);
		}
	} else {
		for (int i = 0; i < k; i++) {
			MPI_Message msg;
			MPI_Status st;
			int count = -1, flag = 0;
			if (i < k - 1) {
				MPI_Mprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st);
			} else {
				while (!flag)
					MPI_Improbe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
			}
			MPI_Get_count(&st, MPI_BYTE, &count);
			bad += count != sizes[i] || st.MPI_TAG != 10 + i % 2;
			unsigned char *m = malloc(count > 0 ? count : 1);
			if (i < k - 1) {
				MPI_Mrecv(m, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
			} else {
				MPI_Request rq;
				MPI_Imrecv(m, count, MPI_BYTE, &msg, &rq);
				MPI_Wait(&rq, MPI_STATUS_IGNORE);
			}
			for (int j = 0; j < count; j++)
				bad += m[j] != (unsigned char)(j + i);
			h ^= sum(m, count) + (uint64_t)count;
			free(m);
		}
		printf("mprobe %s %016llx\n", bad ? "BAD" : "ok", (unsigned long long)h);
	}
	MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return bad;
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "shim_mpi: needs 2 ranks, got %d\n", size);
		MPI_Finalize();
		return 2;
	}
	int bad = pingpong(rank);
	bad += onesided(rank);
	bad += mprobe(rank);
	MPI_Finalize();
	return bad != 0;
}
