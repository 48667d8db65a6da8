/*
 * xcore_probe.c: how fast this host moves bytes from one process to
 * another through shared memory right now, with no libfabric at all
 * (bench/fabtests_bench.sh runs it before each benchmark run, as context).
 *
 *   xcore_probe [MESSAGES]
 *
 * A parent and a forked child share a ring of 128 slots of 16 KiB: the
 * parent copies each message into the next free slot and publishes it,
 * the child copies it out and frees the slot. Prints `xcore_mbs=N`, the
 * bytes per second through the ring in MB/s.
 *
 * On the 2-CPU VMs this project is measured on, the figure is bimodal:
 * the same binary, run back to back, gives about 8-12 GB/s for a while and
 * then 2-3 GB/s, minutes at a time, with or without the two processes
 * pinned to CPUs. Every bounce-buffer copy between two processes (oxshm's
 * ring cells, upstream shm's inject and SAR buffers) moves at that rate,
 * so a benchmark table mixes rounds of both unless it says which it had.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { SLOTS = 128, CHUNK = 16384 };

struct slot_head {
	_Atomic unsigned long seq;
	char pad[64 - sizeof(unsigned long)];
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000;
	size_t bytes = SLOTS * sizeof(struct slot_head) + (size_t)SLOTS * CHUNK;
	char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *buf = aligned_alloc(4096, CHUNK);

	if (m == MAP_FAILED || !buf || n == 0) {
		fprintf(stderr, "xcore_probe: cannot set up\n");
		return 1;
	}
	memset(m, 0, bytes);
	memset(buf, 1, CHUNK);
	struct slot_head *h = (struct slot_head *)m;
	char *data = m + SLOTS * sizeof(struct slot_head);

	for (unsigned long i = 0; i < SLOTS; i++)
		atomic_store(&h[i].seq, i);
	double t = now();
	pid_t child = fork();

	if (child < 0) {
		perror("xcore_probe: fork");
		return 1;
	}
	if (child == 0) {
		for (unsigned long i = 0; i < n; i++) {
			struct slot_head *s = &h[i % SLOTS];

			while (atomic_load_explicit(&s->seq, memory_order_acquire) != i + 1)
				;
			memcpy(buf, data + (i % SLOTS) * CHUNK, CHUNK);
			atomic_store_explicit(&s->seq, i + SLOTS, memory_order_release);
		}
		_exit(buf[CHUNK - 1] == 1 ? 0 : 1);
	}
	for (unsigned long i = 0; i < n; i++) {
		struct slot_head *s = &h[i % SLOTS];

		while (atomic_load_explicit(&s->seq, memory_order_acquire) != i)
			;
		memcpy(data + (i % SLOTS) * CHUNK, buf, CHUNK);
		atomic_store_explicit(&s->seq, i + 1, memory_order_release);
	}
	int status = 0;

	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "xcore_probe: the reader failed\n");
		return 1;
	}
	t = now() - t;
	printf("xcore_mbs=%.0f\n", (double)n * CHUNK / t / 1e6);
	return 0;
}
