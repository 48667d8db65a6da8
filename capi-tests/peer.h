/*
 * Two-process harness for the data-path tests: a case forks; the parent is
 * the initiator, the child the target. Each opens oxshm down to an enabled
 * RDM endpoint (CQ for both directions, counters for every event) and they
 * swap endpoint names and small blobs (keys, addresses, results) through
 * pipes created before the fork. Same source for every header set.
 */
#ifndef OXF_PEER_H
#define OXF_PEER_H

#include "test.h"
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <signal.h>
#include <time.h>

enum { PEER_CNTRS = 6 };
/* Counter events, in the order of peer.cntr[]. */
static const uint64_t peer_events[PEER_CNTRS] = {
	FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE,
};
enum { C_SEND, C_RECV, C_READ, C_WRITE, C_REMOTE_READ, C_REMOTE_WRITE };

struct peer {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr[PEER_CNTRS];
	struct fid_ep *ep;
	fi_addr_t other;
	/* to[1] writes to the other side, from[0] reads from it. */
	int to, from;
	int is_target;
	pid_t child;
};

static int peer_pipes[2][2];

/* The wait object of the CQ and counters peer_open_ep opens; a case may
 * set it before peer_open (test_wait.c does). */
static enum fi_wait_obj peer_wait_obj = FI_WAIT_UNSPEC;

/* The threading model peer_open_ep asks for; a case may set it before
 * peer_open (test_threading.c does). */
static enum fi_threading peer_threading = FI_THREAD_UNSPEC;

/* The size of the CQ peer_open_ep opens (0: the provider's default); a
 * case may set it before peer_open (test_loopback.c does). */
static size_t peer_cq_size;

/* Counters peer_open_ep leaves out (bit i: counter i); a case may set it
 * before peer_open. */
static unsigned peer_skip_cntrs;

/* Writes/reads exactly n bytes on the harness pipes (aborts on failure). */
static inline void peer_put(struct peer *p, const void *b, size_t n)
{
	const char *c = b;
	while (n) {
		ssize_t k = write(p->to, c, n);
		if (k <= 0)
			_exit(90);
		c += k;
		n -= (size_t)k;
	}
}

static inline int peer_get(struct peer *p, void *b, size_t n)
{
	char *c = b;
	while (n) {
		ssize_t k = read(p->from, c, n);
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Both sides wait for each other. */
static inline int peer_sync(struct peer *p)
{
	char t = 's';
	peer_put(p, &t, 1);
	return peer_get(p, &t, 1) == 0 && t == 's' ? 0 : -1;
}

static inline int peer_open_ep(struct peer *p, int mr_mode, uint64_t caps);
static inline int peer_swap_names(struct peer *p);
static inline int peer_close_ep(struct peer *p);

/*
 * Forks and opens both sides. `mr_mode` is what the hints ask for (the
 * negotiated mode is in p->info->domain_attr->mr_mode); `caps` 0 asks for
 * messages, tagged, RMA, atomics and RMA events. Returns 0 in both
 * processes on success (a target that fails exits).
 *
 * Built from peer_open_ep (the objects of one side), peer_swap_names and,
 * for closing, peer_close_ep, which tests with their own process layout
 * (several initiators, a killed peer) use directly.
 */
static inline int peer_open(struct peer *p, int mr_mode, uint64_t caps)
{
	memset(p, 0, sizeof(*p));
	if (pipe(peer_pipes[0]) || pipe(peer_pipes[1]))
		return -1;
	fflush(NULL);
	p->child = fork();
	if (p->child < 0)
		return -1;
	p->is_target = p->child == 0;
	if (p->is_target) {
		alarm(60);
		p->to = peer_pipes[1][1];
		p->from = peer_pipes[0][0];
		close(peer_pipes[0][1]);
		close(peer_pipes[1][0]);
	} else {
		p->to = peer_pipes[0][1];
		p->from = peer_pipes[1][0];
		close(peer_pipes[0][0]);
		close(peer_pipes[1][1]);
	}
	int rc = peer_open_ep(p, mr_mode, caps) || peer_swap_names(p) ? 1 : 0;
	/* A target that failed to open must not return into the case table. */
	if (rc && p->is_target) {
		fflush(NULL);
		_exit(1);
	}
	return rc;
}

/*
 * The objects of one side, in this process only (no fork, no pipes): what
 * peer_open does in each process after the fork, for tests that set up
 * their own processes (more than two, or other roles). Fills p->info and
 * the fid pointers; leaves to/from/is_target/child/other alone.
 */
static inline int peer_open_ep(struct peer *p, int mr_mode, uint64_t caps)
{
	struct fi_info *h = test_hints();
	h->caps = caps ? caps
		       : FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RMA_EVENT |
				 FI_DIRECTED_RECV | FI_SOURCE;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = mr_mode;
	h->domain_attr->threading = peer_threading;
	CHECK_OK(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL,
			    NULL, 0, h, &p->info));
	fi_freeinfo(h);
	CHECK_OK(fi_fabric(p->info->fabric_attr, &p->fabric, NULL));
	CHECK_OK(fi_domain(p->fabric, p->info, &p->domain, NULL));
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	CHECK_OK(fi_av_open(p->domain, &av_attr, &p->av, NULL));
	struct fi_cq_attr cq_attr = { .size = peer_cq_size,
				      .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = peer_wait_obj };
	CHECK_OK(fi_cq_open(p->domain, &cq_attr, &p->cq, NULL));
	CHECK_OK(fi_endpoint(p->domain, p->info, &p->ep, NULL));
	CHECK_OK(fi_ep_bind(p->ep, &p->av->fid, 0));
	CHECK_OK(fi_ep_bind(p->ep, &p->cq->fid, FI_TRANSMIT | FI_RECV));
	for (int i = 0; i < PEER_CNTRS; i++) {
		struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP,
					   .wait_obj = peer_wait_obj };
		if (peer_events[i] & (FI_REMOTE_READ | FI_REMOTE_WRITE) &&
		    !(p->info->caps & FI_RMA_EVENT))
			continue;
		if (peer_skip_cntrs & (1u << i))
			continue;
		CHECK_OK(fi_cntr_open(p->domain, &ca, &p->cntr[i], NULL));
		CHECK_OK(fi_ep_bind(p->ep, &p->cntr[i]->fid, peer_events[i]));
	}
	CHECK_OK(fi_enable(p->ep));
	return 0;
}

/* Sends this endpoint's name over p->to, reads the other's from p->from
 * and inserts it into the AV as p->other. */
static inline int peer_swap_names(struct peer *p)
{
	char name[64] = { 0 }, theirs[64] = { 0 };
	size_t len = sizeof(name);
	CHECK_OK(fi_getname(&p->ep->fid, name, &len));
	peer_put(p, name, sizeof(name));
	CHECK(peer_get(p, theirs, sizeof(theirs)) == 0);
	/* FI_ADDR_STR: the AV takes an array of strings. */
	const char *names[1] = { theirs };
	CHECK_RC(fi_av_insert(p->av, names, 1, &p->other, 0, NULL), 1);
	return 0;
}

/* Closes everything; the parent then reaps the child and returns its
 * status (0 when both sides passed). `rc` is this side's result. */
static inline int peer_close(struct peer *p, int rc)
{
	if (peer_close_ep(p))
		rc = 1;
	close(p->to);
	close(p->from);
	if (p->is_target) {
		fflush(NULL);
		_exit(rc ? 1 : 0);
	}
	int status = 0;
	if (waitpid(p->child, &status, 0) < 0)
		return 1;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "    target killed by signal %d\n", WTERMSIG(status));
		return 1;
	}
	if (WEXITSTATUS(status)) {
		fprintf(stderr, "    target failed (exit %d)\n", WEXITSTATUS(status));
		return 1;
	}
	return rc;
}

/* Closes the objects peer_open_ep opened (whatever of them is open) and
 * frees the info; touches neither the pipes nor any process. */
static inline int peer_close_ep(struct peer *p)
{
	if (p->ep)
		CHECK_OK(fi_close(&p->ep->fid));
	for (int i = 0; i < PEER_CNTRS; i++)
		if (p->cntr[i])
			CHECK_OK(fi_close(&p->cntr[i]->fid));
	if (p->cq)
		CHECK_OK(fi_close(&p->cq->fid));
	if (p->av)
		CHECK_OK(fi_close(&p->av->fid));
	if (p->domain)
		CHECK_OK(fi_close(&p->domain->fid));
	if (p->fabric)
		CHECK_OK(fi_close(&p->fabric->fid));
	fi_freeinfo(p->info);
	p->info = NULL;
	p->ep = NULL;
	memset(p->cntr, 0, sizeof(p->cntr));
	p->cq = NULL;
	p->av = NULL;
	p->domain = NULL;
	p->fabric = NULL;
	return 0;
}

static inline double peer_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/*
 * Waits (up to 10 s) for one completion on the CQ: 0 with *e filled (and
 * with fi_cq_readfrom's source address in *src when src is not NULL), or
 * -FI_EAVAIL with *err filled for an error completion.
 */
static inline int peer_wait_from(struct peer *p, struct fi_cq_tagged_entry *e, fi_addr_t *src,
				 struct fi_cq_err_entry *err)
{
	double end = peer_now() + 10;
	struct fi_cq_tagged_entry dummy;
	if (!e)
		e = &dummy;
	while (peer_now() < end) {
		ssize_t n = src ? fi_cq_readfrom(p->cq, e, 1, src) : fi_cq_read(p->cq, e, 1);
		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry tmp;
			if (!err)
				err = &tmp;
			memset(err, 0, sizeof(*err));
			if (fi_cq_readerr(p->cq, err, 0) != 1)
				return -FI_EOTHER;
			return -FI_EAVAIL;
		}
		if (n != -FI_EAGAIN)
			return (int)n;
		/* Lets the provider's threads run where threads are serialized
		 * (valgrind): a spinning poller can starve them there. */
		sched_yield();
	}
	fprintf(stderr, "    no completion within 10 s\n");
	return -FI_ETIMEDOUT;
}

static inline int peer_wait(struct peer *p, struct fi_cq_tagged_entry *e,
			    struct fi_cq_err_entry *err)
{
	return peer_wait_from(p, e, NULL, err);
}

/* Drives progress for `ms` milliseconds; 0 when no completion (nor error)
 * showed up in that time. */
static inline int peer_cq_stays_empty(struct peer *p, int ms)
{
	double end = peer_now() + ms / 1000.0;
	while (peer_now() < end) {
		struct fi_cq_tagged_entry e;
		ssize_t n = fi_cq_read(p->cq, &e, 1);
		if (n == 1) {
			fprintf(stderr, "    unexpected completion: context %p flags 0x%llx len %zu\n",
				e.op_context, (unsigned long long)e.flags, e.len);
			return 1;
		}
		if (n != -FI_EAGAIN) {
			fprintf(stderr, "    fi_cq_read returned %zd (%s)\n", n, test_errstr(n));
			return 1;
		}
		sched_yield();
	}
	return 0;
}

/* Counter value (0 for an unbound event). */
static inline uint64_t peer_cntr(struct peer *p, int i)
{
	return p->cntr[i] ? fi_cntr_read(p->cntr[i]) : 0;
}

static inline uint64_t peer_cntr_err(struct peer *p, int i)
{
	return p->cntr[i] ? fi_cntr_readerr(p->cntr[i]) : 0;
}

/* The target address of byte `off` of a region whose first byte is at `base`. */
static inline uint64_t peer_raddr(struct peer *p, const void *base, uint64_t off)
{
	if (p->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		return (uint64_t)(uintptr_t)base + off;
	return off;
}

/* The data pattern of the transfer tests: byte i of a buffer filled with
 * `seed` is i * 31 + seed. */
static inline void peer_fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 31 + seed);
}

/* 0 when b holds peer_fill's pattern for `seed`; names the first wrong byte. */
static inline int peer_check_fill(const unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)(i * 31 + seed)) {
			fprintf(stderr, "    byte %zu of %zu is %u, want %u\n", i, n, b[i],
				(unsigned char)(i * 31 + seed));
			return 1;
		}
	return 0;
}

/* What the target publishes about a region. */
struct peer_region {
	uint64_t key;
	uint64_t base;
	uint64_t len;
};

/* Target: registers [buf, buf+len) with `access` and publishes it (key,
 * first byte, length) to the initiator, which reads it with peer_get. */
static inline int peer_publish_region(struct peer *p, void *buf, size_t len, uint64_t access,
				      struct fid_mr **mr)
{
	CHECK_OK(fi_mr_reg(p->domain, buf, len, access, 0, 0, 0, mr, NULL));
	struct peer_region r = { fi_mr_key(*mr), (uint64_t)(uintptr_t)buf, len };
	peer_put(p, &r, sizeof(r));
	return 0;
}

typedef int (*peer_side_fn)(struct peer *p);

/* Opens both sides, runs `target` in the child and `init` in the parent;
 * the child never returns into the caller. 0 when both sides passed. */
static inline int peer_pair(int mr_mode, uint64_t caps, peer_side_fn target, peer_side_fn init)
{
	struct peer p;
	if (peer_open(&p, mr_mode, caps)) {
		if (p.child > 0) {
			kill(p.child, SIGKILL);
			waitpid(p.child, NULL, 0);
		}
		return 1;
	}
	if (p.is_target) {
		int rc = peer_close(&p, target(&p));
		fflush(NULL);
		_exit(rc ? 1 : 0);
	}
	return peer_close(&p, init(&p));
}

#endif
