/*
 * Bulk transfers between processes that the kernel does not let copy each
 * other's memory (cross-memory attach refused, as under Yama ptrace_scope
 * 2 or 3). The refusal is real: each denied process installs a seccomp
 * filter under which process_vm_readv/writev towards any other pid fail
 * with EPERM, and checks that they do before the case goes on. oxshm must
 * notice, move the bytes through shared memory instead, and keep every
 * rule: data exact at both ends, counters exact, a refused access moving
 * nothing. Cases deny both sides, only the target, only the initiator.
 */
#include "peer.h"
#include <rdma/fi_domain.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "test_cma_denied: no seccomp architecture value for this machine"
#endif

enum { REGION = 5 << 20, MSG = 200 * 1024 };

/* Transfer sizes: just over the inline limit, one ring's worth, several
 * rings' worth, and an odd size that ends mid-piece. */
static const size_t sizes[] = { 16385, 65536, 1 << 20, (1 << 20) + 13 };
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };

static unsigned char pat(size_t i, unsigned seed)
{
	return (unsigned char)(i * 131 + seed * 7 + (i >> 12));
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, seed);
}

static int check_fill(const unsigned char *b, size_t n, unsigned seed, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(i, seed)) {
			fprintf(stderr, "    %s: byte %zu of %zu is %u, want %u\n", what, i, n,
				b[i], pat(i, seed));
			return 1;
		}
	return 0;
}

/* Where size i lands in the target region. */
static size_t slot(size_t i)
{
	return i * ((1 << 20) + 4096);
}

/*
 * From here on, process_vm_readv/writev from this process to any other
 * fail with EPERM, in every thread (to itself they still work, as the
 * kernel always allows).
 * Checked against `other`, a live peer.
 */
static int under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");
	return pre && strstr(pre, "vgpreload") != NULL;
}

static int deny_cma(pid_t other)
{
	/* Valgrind does not run seccomp filters: there the provider's own
	 * switch stands in for the kernel's refusal (the same code paths
	 * follow, from the probe on). */
	if (under_valgrind()) {
		fprintf(stderr, "    valgrind: no seccomp, denying with FI_OXSHM_CMA=0\n");
		return setenv("FI_OXSHM_CMA", "0", 1);
	}
	unsigned me = (unsigned)getpid();
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 0, 4),
		/* The low half of the pid argument (little-endian). */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, me, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	/* Every thread: the provider's progress threads run already. */
	CHECK_OK((int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
			      &prog));
	/* The filter bites: a read of the peer fails with EPERM ... */
	long word = 0, got = 0;
	struct iovec l = { &got, sizeof(got) }, r = { &word, sizeof(word) };
	errno = 0;
	CHECK(process_vm_readv(other, &l, 1, &r, 1, 0) == -1 && errno == EPERM);
	/* ... and one of ourselves still works. */
	word = 0x5eed;
	CHECK(process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof(got));
	CHECK(got == 0x5eed);
	return 0;
}

static int wait_ok(struct peer *p, void *ctx, uint64_t flags, size_t len)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int rc = peer_wait(p, &e, &err);
	if (rc == -FI_EAVAIL)
		fprintf(stderr, "    error completion: %s\n", fi_strerror(err.err));
	CHECK_OK(rc);
	CHECK(e.op_context == ctx);
	CHECK(e.flags == flags);
	if (flags & FI_RECV)
		CHECK(e.len == len);
	return 0;
}

static int target(struct peer *p)
{
	unsigned char *buf = calloc(1, REGION), *msg = calloc(2, MSG);
	CHECK(buf && msg);
	struct fid_mr *mr;
	CHECK_OK(fi_mr_reg(p->domain, buf, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0,
			   0, &mr, NULL));
	struct peer_region r = { fi_mr_key(mr), (uint64_t)(uintptr_t)buf, REGION };
	peer_put(p, &r, sizeof(r));

	/* Writes: every byte where it was sent, nothing elsewhere. */
	CHECK_OK(peer_sync(p));
	for (size_t i = 0; i < NSIZES; i++) {
		CHECK_OK(check_fill(buf + slot(i), sizes[i], (unsigned)i, "written"));
		CHECK(buf[slot(i) + sizes[i]] == 0);
	}
	/* Only the accepted writes count (the refused one is not among them). */
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == NSIZES);
	CHECK(peer_cntr_err(p, C_REMOTE_WRITE) == 0);

	/* Reads. */
	for (size_t i = 0; i < NSIZES; i++)
		fill(buf + slot(i), sizes[i], (unsigned)(i + 100));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_sync(p));
	CHECK(peer_cntr(p, C_REMOTE_READ) == NSIZES);

	/* Messages: one into a receive posted first, one that waits as
	 * unexpected until its receive comes. */
	int c1, c2;
	CHECK_OK(fi_recv(p->ep, msg, MSG, NULL, FI_ADDR_UNSPEC, &c1));
	CHECK_OK(peer_sync(p)); /* posted: the initiator sends both */
	CHECK_OK(wait_ok(p, &c1, FI_RECV | FI_MSG, MSG));
	CHECK_OK(peer_sync(p)); /* the second has been sent */
	CHECK_OK(fi_recv(p->ep, msg + MSG, MSG, NULL, FI_ADDR_UNSPEC, &c2));
	CHECK_OK(wait_ok(p, &c2, FI_RECV | FI_MSG, MSG));
	CHECK_OK(check_fill(msg, MSG, 51, "first message"));
	CHECK_OK(check_fill(msg + MSG, MSG, 52, "second message"));
	CHECK(peer_cntr(p, C_RECV) == 2);
	CHECK_OK(peer_sync(p));
	CHECK_OK(fi_close(&mr->fid));
	free(buf);
	free(msg);
	return 0;
}

static int initiator(struct peer *p)
{
	struct peer_region r;
	CHECK(peer_get(p, &r, sizeof(r)) == 0);
	unsigned char *src = malloc((1 << 20) + 4096);
	CHECK(src);
	for (size_t i = 0; i < NSIZES; i++) {
		fill(src, sizes[i], (unsigned)i);
		int ctx;
		CHECK_OK(fi_write(p->ep, src, sizes[i], NULL, p->other,
				  peer_raddr(p, (void *)(uintptr_t)r.base, slot(i)), r.key, &ctx));
		CHECK_OK(wait_ok(p, &ctx, FI_RMA | FI_WRITE, 0));
	}
	/* A large write with a wrong key: refused, nothing moves. */
	int bad;
	memset(src, 0xEE, 1 << 20);
	CHECK_OK(fi_write(p->ep, src, 1 << 20, NULL, p->other,
			  peer_raddr(p, (void *)(uintptr_t)r.base, slot(0)), r.key ^ 0x40, &bad));
	struct fi_cq_err_entry err;
	CHECK_RC(peer_wait(p, NULL, &err), -FI_EAVAIL);
	CHECK(err.op_context == &bad);
	CHECK(err.err == FI_EINVAL);
	CHECK(peer_cntr(p, C_WRITE) == NSIZES);
	CHECK(peer_cntr_err(p, C_WRITE) == 1);
	CHECK_OK(peer_sync(p));

	CHECK_OK(peer_sync(p));
	for (size_t i = 0; i < NSIZES; i++) {
		memset(src, 0, sizes[i] + 1);
		int ctx;
		CHECK_OK(fi_read(p->ep, src, sizes[i], NULL, p->other,
				 peer_raddr(p, (void *)(uintptr_t)r.base, slot(i)), r.key, &ctx));
		CHECK_OK(wait_ok(p, &ctx, FI_RMA | FI_READ, 0));
		CHECK_OK(check_fill(src, sizes[i], (unsigned)(i + 100), "read"));
		CHECK(src[sizes[i]] == 0);
	}
	CHECK(peer_cntr(p, C_READ) == NSIZES);
	CHECK_OK(peer_sync(p));

	unsigned char *m = malloc(2 * MSG);
	CHECK(m);
	fill(m, MSG, 51);
	fill(m + MSG, MSG, 52);
	int s1, s2;
	CHECK_OK(peer_sync(p));
	CHECK_OK(fi_send(p->ep, m, MSG, NULL, p->other, &s1));
	CHECK_OK(wait_ok(p, &s1, FI_MSG | FI_SEND, 0));
	CHECK_OK(fi_send(p->ep, m + MSG, MSG, NULL, p->other, &s2));
	CHECK_OK(peer_sync(p));
	CHECK_OK(wait_ok(p, &s2, FI_MSG | FI_SEND, 0));
	CHECK(peer_cntr(p, C_SEND) == 2);
	CHECK_OK(peer_sync(p));
	free(m);
	free(src);
	return 0;
}

/* One run of every transfer, with cross-memory attach refused to the
 * target and/or the initiator. */
static int run(int deny_target, int deny_initiator)
{
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	pid_t other = p.is_target ? getppid() : p.child;
	int rc = 0;
	if (p.is_target ? deny_target : deny_initiator)
		rc = deny_cma(other);
	/* Both sides are set up before any transfer: the sides learn whether
	 * they may copy when they first reach each other. */
	if (!rc)
		rc = peer_sync(&p);
	if (!rc)
		rc = p.is_target ? target(&p) : initiator(&p);
	return peer_close(&p, rc);
}

/*
 * Runs `run` in a process of its own: a seccomp filter stays with a
 * process and its later children, and the next case must start unfiltered.
 */
static int isolated(int deny_target, int deny_initiator)
{
	fflush(NULL);
	pid_t c = fork();
	CHECK(c >= 0);
	if (c == 0) {
		int rc = run(deny_target, deny_initiator);
		fflush(NULL);
		_exit(rc ? 1 : 0);
	}
	int status = 0;
	CHECK(waitpid(c, &status, 0) == c);
	CHECK(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int both_denied(void)
{
	return isolated(1, 1);
}

/* The initiator may still reach the target: the target grants it the
 * whole copy. */
static int target_denied(void)
{
	return isolated(1, 0);
}

/* The target may still reach the initiator: it copies as usual. */
static int initiator_denied(void)
{
	return isolated(0, 1);
}

static const struct test_case cases[] = {
	CASE(both_denied),
	CASE(target_denied),
	CASE(initiator_denied),
};

TEST_MAIN(cases)
