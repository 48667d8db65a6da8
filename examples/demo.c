/*
 * `make run`: two processes on this host, the oxshm provider between them.
 *
 * The target registers a 1 MiB buffer (remote read and write), a 4 KiB
 * sub-region of it that may only be read, and a single-use region; binds a
 * counter to each kind of remote access and publishes the keys. The
 * initiator writes, reads and runs atomics through them, then tries what
 * the registrations forbid. Each attempt prints whether the target accepted
 * it; the target prints its counters, which count exactly what it accepted.
 * Last come the RMA write bandwidth at 64 KiB and 1 MiB and the 8-byte
 * write latency.
 *
 * Standard libfabric calls only; builds against any libfabric 2.x.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define TRY(call)                                                              \
	do {                                                                   \
		long rc_ = (long)(call);                                       \
		if (rc_) {                                                     \
			fprintf(stderr, "demo: %s failed: %ld (%s)\n", #call,  \
				rc_, fi_strerror((int)-rc_));                  \
			exit(1);                                               \
		}                                                              \
	} while (0)

enum { BIG = 1 << 20, SUB_OFF = 8192, SUB_LEN = 4096 };

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *rw, *rr; /* target: remote write / remote read */
	struct fid_ep *ep;
	fi_addr_t peer;
	int to, from;
};

/* What the target publishes. */
struct keys {
	uint64_t base, big, sub, once, once_addr;
};

static void put(struct side *s, const void *b, size_t n)
{
	if (write(s->to, b, n) != (ssize_t)n)
		exit(1);
}

static void get(struct side *s, void *b, size_t n)
{
	char *c = b;
	while (n) {
		ssize_t k = read(s->from, c, n);
		if (k <= 0)
			exit(1);
		c += k;
		n -= (size_t)k;
	}
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void open_side(struct side *s, int target)
{
	struct fi_info *h = fi_allocinfo();
	h->caps = FI_RMA | FI_ATOMIC | FI_RMA_EVENT;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("oxshm");
	TRY(fi_getinfo(FI_VERSION(2, 7), NULL, NULL, 0, h, &s->info));
	fi_freeinfo(h);
	TRY(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	TRY(fi_domain(s->fabric, s->info, &s->domain, NULL));
	struct fi_av_attr av = { .type = FI_AV_TABLE };
	TRY(fi_av_open(s->domain, &av, &s->av, NULL));
	struct fi_cq_attr cq = { .format = FI_CQ_FORMAT_CONTEXT };
	TRY(fi_cq_open(s->domain, &cq, &s->cq, NULL));
	TRY(fi_endpoint(s->domain, s->info, &s->ep, NULL));
	TRY(fi_ep_bind(s->ep, &s->av->fid, 0));
	TRY(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	if (target) {
		struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
		TRY(fi_cntr_open(s->domain, &ca, &s->rw, NULL));
		TRY(fi_cntr_open(s->domain, &ca, &s->rr, NULL));
		TRY(fi_ep_bind(s->ep, &s->rw->fid, FI_REMOTE_WRITE));
		TRY(fi_ep_bind(s->ep, &s->rr->fid, FI_REMOTE_READ));
	}
	TRY(fi_enable(s->ep));
	char name[64] = { 0 }, theirs[64];
	size_t len = sizeof(name);
	TRY(fi_getname(&s->ep->fid, name, &len));
	put(s, name, sizeof(name));
	get(s, theirs, sizeof(theirs));
	const char *names[1] = { theirs };
	if (fi_av_insert(s->av, names, 1, &s->peer, 0, NULL) != 1)
		exit(1);
}

static void close_side(struct side *s)
{
	TRY(fi_close(&s->ep->fid));
	if (s->rw) {
		TRY(fi_close(&s->rw->fid));
		TRY(fi_close(&s->rr->fid));
	}
	TRY(fi_close(&s->cq->fid));
	TRY(fi_close(&s->av->fid));
	TRY(fi_close(&s->domain->fid));
	TRY(fi_close(&s->fabric->fid));
	fi_freeinfo(s->info);
}

/* Waits for one completion: 0, or the error of an error completion. */
static int wait_one(struct side *s)
{
	struct fi_cq_entry e;
	for (;;) {
		ssize_t n = fi_cq_read(s->cq, &e, 1);
		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(s->cq, &err, 0);
			return err.err;
		}
		if (n != -FI_EAGAIN) {
			fprintf(stderr, "demo: fi_cq_read: %s\n", fi_strerror((int)-n));
			exit(1);
		}
	}
}

static int accepted, refused, surprises;

/* Prints one attempt and whether it went as the registrations say. */
static void report(const char *what, int err, int should_pass)
{
	int passed = err == 0;
	printf("  %-58s %s", what, passed ? "accepted" : "REFUSED");
	if (!passed)
		printf(" (%s)", fi_strerror(err));
	if (passed != should_pass) {
		printf("  <-- unexpected");
		surprises++;
	}
	printf("\n");
	if (passed)
		accepted++;
	else
		refused++;
}

static int target(struct side *s)
{
	char *buf = aligned_alloc(4096, BIG), once[64];
	memset(buf, 0, BIG);
	memset(once, 0, sizeof(once));
	struct fid_mr *big, *sub, *one;
	TRY(fi_mr_reg(s->domain, buf, BIG, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
		      &big, NULL));
	/* A read-only window of the big region. */
	struct iovec iov = { buf + SUB_OFF, SUB_LEN };
	struct fi_mr_attr a = { .mr_iov = &iov, .iov_count = 1,
				.access = FI_REMOTE_READ, .base_mr = big };
	TRY(fi_mr_regattr(s->domain, &a, 0, &sub));
	/* A region the first remote access uses up. */
	struct iovec iov1 = { once, sizeof(once) };
	struct fi_mr_attr a1 = { .mr_iov = &iov1, .iov_count = 1,
				 .access = FI_REMOTE_WRITE };
	TRY(fi_mr_regattr(s->domain, &a1, FI_MR_SINGLE_USE, &one));
	struct keys k = { (uint64_t)(uintptr_t)buf, fi_mr_key(big), fi_mr_key(sub),
			  fi_mr_key(one), (uint64_t)(uintptr_t)once };
	put(s, &k, sizeof(k));
	char done;
	get(s, &done, 1); /* the initiator has finished */
	printf("target:    remote writes accepted %" PRIu64 " (atomics included), remote reads "
	       "accepted %" PRIu64 "\n", fi_cntr_read(s->rw), fi_cntr_read(s->rr));
	printf("target:    bytes [0,5) = \"%.5s\", single-use region = \"%.5s\"\n",
	       buf, once);
	put(s, &done, 1);
	TRY(fi_close(&sub->fid));
	TRY(fi_close(&one->fid));
	TRY(fi_close(&big->fid));
	free(buf);
	return 0;
}

static int initiator(struct side *s)
{
	struct keys k;
	get(s, &k, sizeof(k));
	char *local = aligned_alloc(4096, BIG);
	memset(local, 'x', BIG);
	/* With FI_MR_VIRT_ADDR a target address is a virtual address of the
	 * target; without it, an offset into the region. */
	int va = (s->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
	uint64_t base = va ? k.base : 0, sub_base = va ? k.base + SUB_OFF : 0;
	uint64_t once_base = va ? k.once_addr : 0;
	int ctx;

	printf("initiator: allowed accesses\n");
	TRY(fi_write(s->ep, "hello", 5, NULL, s->peer, base, k.big, &ctx));
	report("write 5 bytes at the start of the 1 MiB region", wait_one(s), 1);
	static char rbuf[SUB_LEN];
	TRY(fi_read(s->ep, rbuf, SUB_LEN, NULL, s->peer, sub_base, k.sub, &ctx));
	report("read 4 KiB through the read-only sub-region", wait_one(s), 1);
	uint64_t one = 1, old = 0;
	TRY(fi_fetch_atomic(s->ep, &one, 1, NULL, &old, NULL, s->peer, base + 64, k.big,
			    FI_UINT64, FI_SUM, &ctx));
	report("fetch-and-add 1 on a uint64", wait_one(s), 1);
	TRY(fi_write(s->ep, "first", 5, NULL, s->peer, once_base, k.once, &ctx));
	report("first write through the single-use key", wait_one(s), 1);

	printf("initiator: forbidden accesses\n");
	TRY(fi_write(s->ep, "again", 5, NULL, s->peer, once_base, k.once, &ctx));
	report("second write through the single-use key", wait_one(s), 0);
	TRY(fi_write(s->ep, "evil", 4, NULL, s->peer, sub_base, k.sub, &ctx));
	report("write through the read-only sub-region", wait_one(s), 0);
	TRY(fi_read(s->ep, rbuf, 16, NULL, s->peer, sub_base + SUB_LEN - 8, k.sub, &ctx));
	report("read 8 bytes past the end of the sub-region", wait_one(s), 0);
	TRY(fi_write(s->ep, local, 2, NULL, s->peer, base + BIG - 1, k.big, &ctx));
	report("write 1 byte past the end of the 1 MiB region", wait_one(s), 0);
	TRY(fi_write(s->ep, "evil", 4, NULL, s->peer, base, k.big ^ 0x40, &ctx));
	report("write with a forged key", wait_one(s), 0);

	/* Bandwidth: a window of 16 writes in flight. */
	printf("initiator: performance\n");
	static const size_t sizes[] = { 65536, BIG };
	for (size_t i = 0; i < 2; i++) {
		size_t n = 2000 * 65536 / sizes[i] + 64, posted = 0, done = 0, flight = 0;
		double t0 = now();
		while (done < n) {
			while (posted < n && flight < 16) {
				ssize_t rc = fi_write(s->ep, local, sizes[i], NULL, s->peer,
						      base, k.big, &ctx);
				if (rc == -FI_EAGAIN)
					break;
				TRY(rc);
				posted++;
				flight++;
			}
			struct fi_cq_entry e[16];
			ssize_t got = fi_cq_read(s->cq, e, 16);
			if (got > 0) {
				done += (size_t)got;
				flight -= (size_t)got;
			} else if (got == -FI_EAVAIL) {
				fprintf(stderr, "demo: write failed: %s\n",
					fi_strerror(wait_one(s)));
				return 1;
			} else if (got != -FI_EAGAIN) {
				fprintf(stderr, "demo: fi_cq_read: %s\n", fi_strerror((int)-got));
				return 1;
			}
		}
		double dt = now() - t0;
		printf("  RMA write %7zu bytes, 16 in flight, same buffers (cache-warm): %6.2f GB/s\n",
		       sizes[i],
		       (double)n * (double)sizes[i] / dt / 1e9);
	}
	/* Latency: 8-byte writes, one at a time, each to completion. */
	int reps = 20000;
	double t0 = now();
	for (int i = 0; i < reps; i++) {
		TRY(fi_write(s->ep, local, 8, NULL, s->peer, base, k.big, &ctx));
		if (wait_one(s))
			return 1;
	}
	printf("  8-byte RMA write, delivered and acknowledged: %.2f us\n",
	       (now() - t0) / reps * 1e6);
	printf("initiator: %d accepted, %d refused, %d not as the registrations say\n",
	       accepted, refused, surprises);
	char done = 'd';
	put(s, &done, 1);
	get(s, &done, 1);
	free(local);
	return surprises != 0;
}

int main(void)
{
	int a[2], b[2];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(a) || pipe(b))
		return 1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	struct side s = { 0 };
	int rc;
	if (pid == 0) {
		alarm(60);
		s.to = b[1];
		s.from = a[0];
		open_side(&s, 1);
		rc = target(&s);
		close_side(&s);
		fflush(NULL);
		_exit(rc);
	}
	alarm(60);
	s.to = a[1];
	s.from = b[0];
	open_side(&s, 0);
	printf("oxfabric demo: provider %s, fabric %s, two processes (pids %d, %d)\n",
	       s.info->fabric_attr->prov_name, s.info->fabric_attr->name, (int)getpid(),
	       (int)pid);
	rc = initiator(&s);
	close_side(&s);
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		rc = 1;
	printf("%s\n", rc ? "demo: FAILED" : "demo: ok");
	return rc;
}
