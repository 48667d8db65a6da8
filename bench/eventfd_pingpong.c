/*
 * The kernel-wakeup ceiling for bench/wait_run.sh: two processes (a fork)
 * ping-pong over two eventfds, each sleeping in epoll_wait(2) until the
 * other writes its eventfd. No libfabric: this is what an application that
 * sleeps in the kernel between messages (FI_WAIT_FD + fi_trywait + epoll)
 * can hope for on this machine.
 *
 * Usage: eventfd_pingpong [iterations [warmup [cpu_a cpu_b]]]
 *        (default 10000, 100, unpinned)
 * With cpu_a and cpu_b, the parent runs on CPU cpu_a and the child on
 * cpu_b (the same number for both: one CPU).
 * Prints one line:  eventfd_pingpong iters N usec/xfer X
 * where X is half a round trip in microseconds, as fabtests' pingpongs
 * report it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Sleeps in epoll_wait until `fd` is readable, then consumes it. */
static void wait_for(int ep, int fd)
{
	struct epoll_event ev;
	uint64_t v;

	for (;;) {
		int n = epoll_wait(ep, &ev, 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("epoll_wait");
		if (n == 1)
			break;
	}
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		die("read eventfd");
}

static void post(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		die("write eventfd");
}

/* One side: `first` sends before it waits. */
static void side(int in, int out, long n, int first)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = in };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, in, &ev))
		die("epoll");
	for (long i = 0; i < n; i++) {
		if (first) {
			post(out);
			wait_for(ep, in);
		} else {
			wait_for(ep, in);
			post(out);
		}
	}
	close(ep);
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 10000;
	long warmup = argc > 2 ? atol(argv[2]) : 100;
	int cpu_a = argc > 4 ? atoi(argv[3]) : -1;
	int cpu_b = argc > 4 ? atoi(argv[4]) : -1;
	int ping = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int pong = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int status;
	pid_t child;
	double t0, t1;

	if (iters <= 0 || warmup < 0) {
		fprintf(stderr, "usage: %s [iterations] [warmup]\n", argv[0]);
		return 2;
	}
	if (ping < 0 || pong < 0)
		die("eventfd");
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		pin(cpu_b);
		side(ping, pong, warmup + iters, 0);
		_exit(0);
	}
	pin(cpu_a);
	side(pong, ping, warmup, 1);
	t0 = now_us();
	side(pong, ping, iters, 1);
	t1 = now_us();
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "eventfd_pingpong: the child failed\n");
		return 1;
	}
	printf("eventfd_pingpong iters %ld usec/xfer %.2f\n", iters,
	       (t1 - t0) / iters / 2);
	return 0;
}
