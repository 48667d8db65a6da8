/*
 * Without FI_MR_ALLOCATED the target copies into and out of its registered
 * memory with a copy that stops at an inaccessible page (FI_EFAULT at the
 * initiator) thanks to a SIGSEGV/SIGBUS handler the provider installs. That
 * handler must not change what the program's own faults do: a handler the
 * program installed first still gets them, the default action still kills,
 * and a handler installed after the provider's displaces it cleanly (the
 * provider notices and goes back to system calls).
 *
 * Skipped under valgrind, which reports the deliberate faults as errors.
 */
#include "peer.h"
#include <rdma/fi_domain.h>
#include <setjmp.h>
#include <sys/mman.h>

static long page;

static int under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");
	return pre && strstr(pre, "vgpreload") != NULL;
}

/* Two pages registered RW, the second then made inaccessible. */
static int target_region(struct peer *p, unsigned char **m, struct fid_mr **mr)
{
	page = sysconf(_SC_PAGESIZE);
	*m = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	CHECK(*m != MAP_FAILED);
	memset(*m, 0x11, 2 * (size_t)page);
	CHECK_OK(fi_mr_reg(p->domain, *m, 2 * (size_t)page, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
			   0, 0, mr, NULL));
	CHECK_OK(mprotect(*m + page, (size_t)page, PROT_NONE));
	struct peer_region r = { fi_mr_key(*mr), (uint64_t)(uintptr_t)*m, 2 * (uint64_t)page };
	peer_put(p, &r, sizeof(r));
	return 0;
}

/* One write into the inaccessible page (FI_EFAULT) and one into the good
 * page (accepted). */
static int initiator_pair(struct peer *p, const struct peer_region *r)
{
	unsigned char src[16];
	memset(src, 0x77, sizeof(src));
	uint64_t pg = r->len / 2;
	int c1, c2;
	struct fi_cq_err_entry err;
	CHECK_OK(fi_write(p->ep, src, sizeof(src), NULL, p->other,
			  peer_raddr(p, (void *)(uintptr_t)r->base, pg + 8), r->key, &c1));
	CHECK_RC(peer_wait(p, NULL, &err), -FI_EAVAIL);
	CHECK(err.op_context == &c1);
	CHECK(err.err == FI_EFAULT);
	CHECK_OK(fi_write(p->ep, src, sizeof(src), NULL, p->other,
			  peer_raddr(p, (void *)(uintptr_t)r->base, 8), r->key, &c2));
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == &c2);
	return 0;
}

static int target_after_pair(struct peer *p, unsigned char *m, uint64_t accepted)
{
	for (long i = 0; i < page; i++)
		CHECK(m[i] == ((i >= 8 && i < 24) ? 0x77 : 0x11));
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == accepted);
	return 0;
}

static int offers_unallocated(struct peer *p)
{
	CHECK(!(p->info->domain_attr->mr_mode & FI_MR_ALLOCATED));
	return 0;
}

/* The initiator of every case: a pair, then (for `pairs` 2) after the
 * target's go, a second pair. */
static int initiator(struct peer *p, int pairs)
{
	struct peer_region r;
	CHECK(peer_get(p, &r, sizeof(r)) == 0);
	for (int i = 0; i < pairs; i++) {
		if (i)
			CHECK_OK(peer_sync(p));
		CHECK_OK(initiator_pair(p, &r));
		CHECK_OK(peer_sync(p));
	}
	return 0;
}

/* ---------------------------------------------- a handler installed first */

static sigjmp_buf jump;
static volatile sig_atomic_t app_faults;

static void app_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	app_faults++;
	siglongjmp(jump, sig);
}

static int first_target(struct peer *p)
{
	struct sigaction sa, cur;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = app_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	CHECK_OK(sigaction(SIGSEGV, &sa, NULL));
	unsigned char *m;
	struct fid_mr *mr;
	CHECK_OK(target_region(p, &m, &mr));
	CHECK_OK(peer_sync(p)); /* the initiator's writes are done */
	CHECK_OK(target_after_pair(p, m, 1));
	/* The provider's handler is in place now, the program's behind it. */
	CHECK_OK(sigaction(SIGSEGV, NULL, &cur));
	CHECK(cur.sa_sigaction != app_handler);
	/* The program's own fault still reaches the program's handler. */
	if (sigsetjmp(jump, 1) == 0) {
		volatile unsigned char *bad = m + page;
		(void)*bad;
		CHECK(!"a read of a PROT_NONE page did not fault");
	}
	CHECK(app_faults == 1);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(munmap(m, 2 * (size_t)page));
	return 0;
}

static int app_handler_still_called(void)
{
	if (under_valgrind()) {
		fprintf(stderr, "    skipped under valgrind\n");
		return 0;
	}
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_PROV_KEY, 0));
	int rc = offers_unallocated(&p) || (p.is_target ? first_target(&p) : initiator(&p, 1));
	return peer_close(&p, rc);
}

/* ------------------------------------------------- no handler of our own */

/* Returns only on failure: a pass ends in a SIGSEGV death. */
static int default_target(struct peer *p)
{
	unsigned char *m;
	struct fid_mr *mr;
	CHECK_OK(target_region(p, &m, &mr));
	CHECK_OK(peer_sync(p));
	CHECK_OK(target_after_pair(p, m, 1));
	CHECK_OK(peer_sync(p)); /* the initiator has closed its side */
	/* A fault of the program's own takes the default action, as without
	 * the provider. */
	volatile unsigned char *bad = m + page;
	*bad = 1;
	fprintf(stderr, "    a write to a PROT_NONE page did not fault\n");
	return 1;
}

static int default_action_kept(void)
{
	if (under_valgrind()) {
		fprintf(stderr, "    skipped under valgrind\n");
		return 0;
	}
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_PROV_KEY, 0));
	if (p.is_target) {
		int rc = offers_unallocated(&p) || default_target(&p);
		fflush(NULL);
		_exit(rc ? 71 : 0);
	}
	CHECK_OK(offers_unallocated(&p));
	CHECK_OK(initiator(&p, 1));
	CHECK_OK(peer_close_ep(&p));
	CHECK_OK(peer_sync(&p));
	int status = 0;
	CHECK(waitpid(p.child, &status, 0) == p.child);
	close(p.to);
	close(p.from);
#if defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer's handler was there first: the fault is its to
	 * report, and it ends the process with its exit code. */
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 71)
		return 0;
#endif
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV) {
		fprintf(stderr, "    target: %s %d, want death by SIGSEGV\n",
			WIFSIGNALED(status) ? "signal" : "exit",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		return 1;
	}
	return 0;
}

/* --------------------------------------------- a handler installed after */

static void fatal_handler(int sig)
{
	(void)sig;
	_exit(77);
}

static int later_target(struct peer *p)
{
	unsigned char *m;
	struct fid_mr *mr;
	CHECK_OK(target_region(p, &m, &mr));
	CHECK_OK(peer_sync(p));
	CHECK_OK(target_after_pair(p, m, 1));
	/* The program installs its own handler over the provider's; a fault
	 * that reached it would end this process with exit 77. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fatal_handler;
	sigemptyset(&sa.sa_mask);
	CHECK_OK(sigaction(SIGSEGV, &sa, NULL));
	/* The provider's periodic check (every 50 ms) notices. */
	usleep(500 * 1000);
	CHECK_OK(peer_sync(p)); /* go */
	CHECK_OK(peer_sync(p)); /* the second pair is done */
	CHECK_OK(target_after_pair(p, m, 2));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(munmap(m, 2 * (size_t)page));
	return 0;
}

static int later_handler_displaces(void)
{
	if (under_valgrind()) {
		fprintf(stderr, "    skipped under valgrind\n");
		return 0;
	}
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_PROV_KEY, 0));
	/* The second pair fails with FI_EFAULT again, by the system call. */
	int rc = offers_unallocated(&p) || (p.is_target ? later_target(&p) : initiator(&p, 2));
	return peer_close(&p, rc);
}

static const struct test_case cases[] = {
	CASE(app_handler_still_called),
	CASE(default_action_kept),
	CASE(later_handler_displaces),
};

TEST_MAIN(cases)
