/*
 * The registration cache of fi_mr(3) (MEMORY REGISTRATION CACHE) on oxshm's
 * pinned mode (FI_OXSHM_PIN=1): registrations lock their pages, and the
 * cache keeps those pinnings after fi_close for the next registration of
 * the same range, until a memory monitor reports that the range changed.
 *
 * What the cases observe: pinned pages are locked, so VmLck in
 * /proc/self/status counts the bytes the cache holds on mapped memory. A
 * case registers a buffer, closes the MR (the pinning stays cached), then
 * unlocks the buffer behind the cache's back: a registration that hits
 * the cache locks nothing (VmLck stays 0), one that misses pins again
 * (VmLck grows). A monitor that missed a change of the buffer's pages would
 * let the next registration hit a pinning of pages that are gone.
 *
 * Every single-process case runs under the userfaultfd and the memhooks
 * monitor; others cover the limits, the monitor choices, an imported
 * monitor, RLIMIT_MEMLOCK, FI_OXSHM_STATS and pagemap hiding frames. Two cases use two processes (peer.h): FI_OXSHM_PIN=check refuses
 * a remote write into a region whose pages were replaced behind its back,
 * and RMA into a region registered again after its memory was replaced
 * lands in the new pages.
 */
#include "peer.h"
#include <malloc.h>
#include <pthread.h>
#include <rdma/fi_ext.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

enum { KB = 1024, LEN = 64 * KB };

#define PIN "FI_OXSHM_PIN=1"
#define UFFD PIN " FI_MR_CACHE_MONITOR=userfaultfd"
#define HOOKS PIN " FI_MR_CACHE_MONITOR=memhooks"
#define RW (FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE)
#define RO (FI_REMOTE_READ | FI_SEND)

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

/* munlock behind the cache's back (the system call: sanitizers make
 * munlock(3) a no-op). */
static int unlock(const void *b, size_t n)
{
	return (int)syscall(SYS_munlock, b, n);
}

/* Locked memory of this process, in KiB. */
static long locked_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

#define CHECK_LOCKED(kb)                                                     \
	do {                                                                 \
		long got_ = locked_kb();                                     \
		if (got_ != (kb)) {                                          \
			fprintf(stderr, "    %s:%d: VmLck %ld kB, want %ld kB\n", \
				__FILE__, __LINE__, got_, (long)(kb));       \
			return 1;                                            \
		}                                                            \
	} while (0)

static int open_domain(void)
{
	struct fi_info *h = test_hints();
	h->caps = FI_RMA | FI_MSG;
	h->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
	CHECK_OK(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, h,
			    &info));
	fi_freeinfo(h);
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK_OK(fi_domain(fabric, info, &domain, NULL));
	return 0;
}

static int close_domain(void)
{
	CHECK_OK(fi_close(&domain->fid));
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	return 0;
}

/* Registers and closes at once: leaves an unused cached pinning. */
static int reg_close(void *b, size_t n, uint64_t access)
{
	struct fid_mr *mr;
	CHECK_OK(fi_mr_reg(domain, b, n, access, 0, 0, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/*
 * A fresh 64 KiB buffer, at `at` if not NULL. Mapping again at an address
 * just unmapped never uses MAP_FIXED: between the munmap and the mmap,
 * another thread of the process (the sanitizers' runtime, libfabric's
 * threads) may have been given those pages, and MAP_FIXED would replace
 * them. With MAP_FIXED_NOREPLACE the case is retried instead (RETRY).
 */
static void *map(void *at)
{
	void *b = mmap(at, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	if (b == MAP_FAILED)
		return NULL;
	if (at && b != at) {
		munmap(b, LEN);
		return NULL;
	}
	memset(b, 1, LEN);
	return b;
}

enum { RETRY = 2 };

/* The address was taken meanwhile: give up this attempt. */
#define REMAP(b)                                   \
	do {                                       \
		if (map(b) != (b)) {               \
			close_domain();            \
			return RETRY;              \
		}                                  \
	} while (0)

/* Runs a case that may ask to be retried, up to 5 times. */
static int retried(int (*f)(void))
{
	for (int i = 0; i < 5; i++) {
		int rc = f();
		if (rc != RETRY)
			return rc;
		fprintf(stderr, "    (address taken meanwhile: retried)\n");
	}
	return 1;
}

/* Pinning kept after close; the next registration of the range hits. */
static int hit_after_close(void)
{
	CHECK_OK(open_domain());
	unsigned char *b = map(NULL);
	CHECK(b);
	CHECK_LOCKED(0);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_LOCKED(64);
	CHECK_OK(unlock(b, LEN));
	CHECK_LOCKED(0);
	/* A hit, also for a part of the range. */
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_OK(reg_close(b + 4 * KB, 8 * KB, FI_REMOTE_READ));
	CHECK_LOCKED(0);
	CHECK_OK(munmap(b, LEN));
	CHECK_OK(close_domain());
	return 0;
}

/*
 * An MR of several iovs pins each of them, and its close gives every one
 * back: cached (a later registration of either piece hits), or, with the
 * cache off, unlocked at once.
 */
static int regv_pins_every_iov(void)
{
	bool cached = !getenv("FI_MR_CACHE_MAX_COUNT");
	CHECK_OK(open_domain());
	unsigned char *b = map(NULL);
	CHECK(b);
	struct iovec iov[2] = { { b, 16 * KB }, { b + 32 * KB, 16 * KB } };
	struct fid_mr *mr;
	CHECK_OK(fi_mr_regv(domain, iov, 2, RW, 0, 0, 0, &mr, NULL));
	CHECK_LOCKED(32);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_LOCKED(cached ? 32 : 0);
	if (cached) {
		CHECK_OK(unlock(b, LEN));
		CHECK_LOCKED(0);
		/* Both pieces hit, alone and together. */
		CHECK_OK(reg_close(b + 32 * KB, 16 * KB, RW));
		CHECK_OK(fi_mr_regv(domain, iov, 2, RW, 0, 0, 0, &mr, NULL));
		CHECK_OK(reg_close(b, 16 * KB, RW));
		CHECK_OK(fi_close(&mr->fid));
		CHECK_LOCKED(0);
		/* The gap between them was never pinned: a miss. */
		CHECK_OK(reg_close(b + 16 * KB, 16 * KB, RW));
		CHECK_LOCKED(16);
	}
	CHECK_OK(munmap(b, LEN));
	CHECK_LOCKED(0);
	CHECK_OK(close_domain());
	return 0;
}

/* The changes a monitor must report, each applied to a cached buffer. */
enum change { UNMAP_REMAP, MREMAP, DONTNEED };

static int after_change(enum change c)
{
	CHECK_OK(open_domain());
	unsigned char *b = map(NULL);
	CHECK(b);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_OK(unlock(b, LEN));
	CHECK_LOCKED(0);
	switch (c) {
	case UNMAP_REMAP:
		CHECK_OK(munmap(b, LEN));
		REMAP(b);
		break;
	case MREMAP: {
		void *other = mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(other != MAP_FAILED);
		CHECK(mremap(b, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, other) == other);
		if (map(b) != b) {
			munmap(other, LEN);
			close_domain();
			return RETRY;
		}
		CHECK_OK(munmap(other, LEN));
		break;
	}
	case DONTNEED:
		CHECK_OK(madvise(b, LEN, MADV_DONTNEED));
		memset(b, 2, LEN);
		break;
	}
	/* A miss: the new pages are pinned. */
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_LOCKED(64);
	CHECK_OK(munmap(b, LEN));
	CHECK_LOCKED(0);
	CHECK_OK(close_domain());
	return 0;
}

/*
 * Two domains pin the same pages (each its own registration cache). The
 * kernel does not count mlock or userfaultfd registrations: the first
 * domain to let go must not unlock or unwatch pages the other still holds.
 * Then the memory is replaced behind both: the remaining domain's cache
 * must have been told (a miss, the new pages locked), not serve its old
 * pinning.
 */
static int two_domains_share_pages_once(void)
{
	CHECK_OK(open_domain());
	struct fid_domain *first = domain, *second;
	CHECK_OK(fi_domain(fabric, info, &second, NULL));
	unsigned char *b = map(NULL);
	CHECK(b);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_LOCKED(64);
	domain = second;
	CHECK_OK(reg_close(b, LEN, RW));
	/* Held twice, locked once. */
	CHECK_LOCKED(64);
	/* The first domain goes, with its cached pinning. */
	CHECK_OK(fi_close(&first->fid));
	CHECK_LOCKED(64);
	CHECK_OK(munmap(b, LEN));
	CHECK_LOCKED(0);
	REMAP(b);
	CHECK_LOCKED(0);
	/* A miss in the second domain's cache: the new pages are locked. */
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_LOCKED(64);
	CHECK_OK(munmap(b, LEN));
	CHECK_LOCKED(0);
	CHECK_OK(close_domain());
	return 0;
}

static int two_domains_share_pages(void)
{
	return retried(two_domains_share_pages_once);
}

static int unmap_remap_once(void)
{
	return after_change(UNMAP_REMAP);
}

static int mremap_once(void)
{
	return after_change(MREMAP);
}

static int munmap_then_mmap_fixed(void)
{
	return retried(unmap_remap_once);
}

static int mremap_away(void)
{
	return retried(mremap_once);
}

static int madvise_dontneed(void)
{
	return after_change(DONTNEED);
}

/* A freed large block (unmapped by malloc) and the next one at its place. */
static int free_then_malloc(void)
{
	enum { BIG = 1024 * KB };
	CHECK_OK(open_domain());
	unsigned char *b = malloc(BIG);
	CHECK(b);
	memset(b, 1, BIG);
	CHECK_OK(reg_close(b, BIG, RW));
	CHECK(locked_kb() >= BIG / KB);
	unlock(b, BIG);
	free(b);
	unsigned char *c = malloc(BIG);
	CHECK(c);
	memset(c, 2, BIG);
	long before = locked_kb();
	CHECK_OK(reg_close(c, BIG, RW));
	/* Pinned again (where malloc gave the same block back, the cached
	 * pinning of the freed one must not serve it). */
	CHECK(locked_kb() >= before + BIG / KB - 8);
	free(c);
	CHECK_OK(close_domain());
	return 0;
}

/* The heap shrunk with sbrk and grown again over the same addresses. */
static int brk_shrink(void)
{
	/* malloc must not move the break meanwhile. */
	mallopt(M_MMAP_THRESHOLD, 1);
	CHECK_OK(open_domain());
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t cur = (uintptr_t)sbrk(0);
	CHECK(sbrk((intptr_t)((page - (long)(cur % (uintptr_t)page)) % page)) != (void *)-1);
	unsigned char *b = sbrk(LEN);
	CHECK(b != (void *)-1);
	memset(b, 1, LEN);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_OK(unlock(b, LEN));
	CHECK(sbrk(-LEN) != (void *)-1);
	CHECK(sbrk(0) == b);
	CHECK(sbrk(LEN) == b);
	memset(b, 2, LEN);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_LOCKED(64);
	CHECK(brk(b) == 0);
	CHECK_LOCKED(0);
	CHECK_OK(close_domain());
	return 0;
}

static unsigned char *churn_buf;
static volatile int churn_stop, churn_lost;

static void *churn(void *arg)
{
	(void)arg;
	for (int i = 0; i < 300 && !churn_stop; i++) {
		munmap(churn_buf, LEN);
		if (map(churn_buf) != churn_buf) {
			churn_lost = 1;
			return NULL;
		}
	}
	return NULL;
}

/* Another thread unmaps and maps the buffer again while this one
 * registers it: registrations succeed or fail cleanly, and afterwards a
 * registration of the final pages pins them. When the other thread loses
 * the address, this one goes on registering whatever took it; under ASan
 * that was the alternate signal stack of the userfaultfd monitor's own
 * thread, whose unmap at exit then waited for itself (the process hung). */
static int unmap_while_registering_once(void)
{
	CHECK_OK(open_domain());
	churn_stop = churn_lost = 0;
	churn_buf = map(NULL);
	CHECK(churn_buf);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, churn, NULL));
	for (int i = 0; i < 300; i++) {
		struct fid_mr *mr;
		int rc = fi_mr_reg(domain, churn_buf, LEN, RW, 0, 0, 0, &mr, NULL);
		CHECK(rc == 0 || rc == -FI_EFAULT);
		if (rc == 0)
			CHECK_OK(fi_close(&mr->fid));
	}
	churn_stop = 1;
	void *ret;
	CHECK_OK(pthread_join(t, &ret));
	CHECK(ret == NULL);
	if (churn_lost) {
		close_domain();
		return RETRY;
	}
	CHECK_OK(munmap(churn_buf, LEN));
	REMAP(churn_buf);
	CHECK_OK(reg_close(churn_buf, LEN, RW));
	CHECK_LOCKED(64);
	CHECK_OK(munmap(churn_buf, LEN));
	CHECK_OK(close_domain());
	return 0;
}

static int unmap_while_registering(void)
{
	return retried(unmap_while_registering_once);
}

/* A pinning made for a read-only region never serves one that is written. */
static int read_only_not_for_write(void)
{
	CHECK_OK(open_domain());
	unsigned char *b = map(NULL);
	CHECK(b);
	CHECK_OK(reg_close(b, LEN, RO));
	CHECK_OK(unlock(b, LEN));
	CHECK_OK(reg_close(b, LEN, FI_REMOTE_WRITE | FI_RECV));
	CHECK_LOCKED(64);
	/* The writable pinning serves a read-only registration. */
	CHECK_OK(unlock(b, LEN));
	CHECK_OK(reg_close(b, LEN, RO));
	CHECK_LOCKED(0);
	CHECK_OK(munmap(b, LEN));
	CHECK_OK(close_domain());
	return 0;
}

/* FI_MR_CACHE_MAX_COUNT=2: the least recently used unused pinning goes. */
static int max_count_lru(void)
{
	CHECK_OK(open_domain());
	unsigned char *a = map(NULL), *b = map(NULL), *c = map(NULL);
	CHECK(a && b && c);
	CHECK_OK(reg_close(a, LEN, RW));
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_OK(reg_close(c, LEN, RW));
	CHECK_LOCKED(128); /* a evicted */
	CHECK_OK(unlock(b, LEN));
	CHECK_OK(reg_close(b, LEN, RW)); /* a hit: b is the newest now */
	CHECK_LOCKED(64);
	CHECK_OK(reg_close(a, LEN, RW)); /* a miss; c, the oldest, goes */
	CHECK_LOCKED(64);
	CHECK_OK(unlock(a, LEN));
	CHECK_OK(reg_close(a, LEN, RW));
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_LOCKED(0);
	munmap(a, LEN);
	munmap(b, LEN);
	munmap(c, LEN);
	CHECK_OK(close_domain());
	return 0;
}

/* FI_MR_CACHE_MAX_SIZE=131072: two 64 KiB pinnings stay, not three. */
static int max_size(void)
{
	CHECK_OK(open_domain());
	unsigned char *a = map(NULL), *b = map(NULL), *c = map(NULL);
	CHECK(a && b && c);
	CHECK_OK(reg_close(a, LEN, RW));
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_OK(reg_close(c, LEN, RW));
	CHECK_LOCKED(128);
	munmap(a, LEN);
	munmap(b, LEN);
	munmap(c, LEN);
	CHECK_OK(close_domain());
	return 0;
}

/* FI_MR_CACHE_MAX_COUNT=0 (or FI_MR_CACHE_MONITOR=disabled): nothing is
 * kept, but registrations are still pinned while open. */
static int not_cached(void)
{
	CHECK_OK(open_domain());
	unsigned char *b = map(NULL);
	CHECK(b);
	struct fid_mr *mr;
	CHECK_OK(fi_mr_reg(domain, b, LEN, RW, 0, 0, 0, &mr, NULL));
	CHECK_LOCKED(64);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_LOCKED(0);
	CHECK_OK(munmap(b, LEN));
	CHECK_OK(close_domain());
	return 0;
}

/* Pinning past RLIMIT_MEMLOCK (counted even for a privileged process)
 * fails with -FI_ENOMEM and pins nothing; within it, it works. */
static int memlock_limit(void)
{
	struct rlimit r = { 96 * KB, 96 * KB };
	CHECK_OK(setrlimit(RLIMIT_MEMLOCK, &r));
	CHECK_OK(open_domain());
	unsigned char *b = map(NULL), *c = map(NULL);
	CHECK(b && c);
	struct fid_mr *mr, *mr2;
	CHECK_OK(fi_mr_reg(domain, b, LEN, RW, 0, 0, 0, &mr, NULL));
	CHECK_RC(fi_mr_reg(domain, c, LEN, RW, 0, 0, 0, &mr2, NULL), -FI_ENOMEM);
	CHECK_LOCKED(64);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(munmap(b, LEN));
	/* b's pinning is gone with its memory: c fits now. */
	CHECK_OK(fi_mr_reg(domain, c, LEN, RW, 0, 0, 0, &mr2, NULL));
	CHECK_OK(fi_close(&mr2->fid));
	CHECK_OK(munmap(c, LEN));
	CHECK_OK(close_domain());
	return 0;
}

/* An unknown FI_MR_CACHE_MONITOR is warned about; the default monitor
 * runs instead. */
static char captured[16384];

/* Runs f with the log (stderr) captured into `captured`. */
static int capture(int (*f)(void))
{
	char path[] = "/tmp/oxf_mr_cache_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	fflush(stderr);
	int saved = dup(2);
	CHECK(dup2(fd, 2) == 2);
	int rc = f();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	memset(captured, 0, sizeof(captured));
	ssize_t n = pread(fd, captured, sizeof(captured) - 1, 0);
	close(fd);
	CHECK(n >= 0);
	return rc;
}

static int unknown_monitor(void)
{
	CHECK_OK(capture(hit_after_close));
	CHECK(strstr(captured, "nosuch") && strstr(captured, "not a monitor"));
	return 0;
}

/* FI_MR_CACHE_MONITOR=kdreg2 without its device: a warning that names the
 * device and the fallback, and the cache works on that fallback. */
static int kdreg2_fallback(void)
{
	CHECK_OK(capture(hit_after_close));
	const char *w = strstr(captured, "FI_MR_CACHE_MONITOR=kdreg2: /dev/kdreg2 ");
	if (!w)
		fprintf(stderr, "    log:\n%s\n", captured);
	CHECK(w && strstr(w, "falling back to the userfaultfd monitor, then memhooks"));
	return 0;
}

/* A miss, a hit and an invalidation, then the domain closes. */
static int some_traffic(void)
{
	CHECK_OK(open_domain());
	unsigned char *b = map(NULL);
	CHECK(b);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_OK(munmap(b, LEN));
	b = map(NULL);
	CHECK(b);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK_OK(close_domain());
	CHECK_OK(munmap(b, LEN));
	return 0;
}

/* FI_OXSHM_STATS=1 reports the cache's figures when the domain closes. */
static int stats_at_close(void)
{
	CHECK_OK(capture(some_traffic));
	/* (userfaultfd, or memhooks where it is missing, as under valgrind) */
	const char *l = strstr(captured, "registration cache (");
	if (!l)
		fprintf(stderr, "    log:\n%s\n", captured);
	CHECK(l);
	CHECK(strstr(l, "1 hits, 2 misses, 0 evictions, 1 invalidations, "
			"1 pinned regions (65536 bytes)"));
	return 0;
}

#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>

/* Where userfaultfd(2) is refused (here by a seccomp filter, as a
 * container might), the cache says why and falls back on memhooks. */
static int userfaultfd_refused(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK_OK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog));
	CHECK_OK(capture(munmap_then_mmap_fixed));
	/* (Under valgrind, which lacks userfaultfd, it is refused anyway.) */
	const char *w = strstr(captured, "the userfaultfd monitor cannot run");
	if (!w)
		fprintf(stderr, "    log:\n%s\n", captured);
	CHECK(w && strstr(captured, "monitor: memhooks"));
	return 0;
}

/* Without CAP_SYS_ADMIN, pagemap hides page frames: pinned mode says so
 * once and checks nothing it cannot check (check mode accepts). */
static int frames_hidden(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	CHECK(syscall(SYS_capget, &h, d) == 0);
	d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	d[CAP_SYS_ADMIN / 32].permitted &= ~(1u << (CAP_SYS_ADMIN % 32));
	CHECK(syscall(SYS_capset, &h, d) == 0);
	CHECK_OK(capture(some_traffic));
	const char *w = strstr(captured, "hides page frames");
	if (!w)
		fprintf(stderr, "    log:\n%s\n", captured);
	CHECK(w && !strstr(w + 1, "hides page frames"));
	return 0;
}

/* ------------------------------------------------ imported monitor -- */

struct recorder {
	struct fid_mem_monitor mon;
	int started, stopped, subs, unsubs, valids;
	uintptr_t sub_addr;
	size_t sub_len;
};
static struct recorder rec;

static int rec_start(struct fid_mem_monitor *m)
{
	(void)m;
	rec.started++;
	return 0;
}

static void rec_stop(struct fid_mem_monitor *m)
{
	(void)m;
	rec.stopped++;
}

static int rec_subscribe(struct fid_mem_monitor *m, const void *addr, size_t len)
{
	(void)m;
	rec.subs++;
	rec.sub_addr = (uintptr_t)addr;
	rec.sub_len = len;
	return 0;
}

static void rec_unsubscribe(struct fid_mem_monitor *m, const void *addr, size_t len)
{
	(void)m;
	(void)addr;
	(void)len;
	rec.unsubs++;
}

static bool rec_valid(struct fid_mem_monitor *m, const void *addr, size_t len)
{
	(void)m;
	(void)addr;
	(void)len;
	rec.valids++;
	return true;
}

static struct fi_ops_mem_monitor rec_ops = {
	.size = sizeof(struct fi_ops_mem_monitor),
	.start = rec_start,
	.stop = rec_stop,
	.subscribe = rec_subscribe,
	.unsubscribe = rec_unsubscribe,
	.valid = rec_valid,
};

/* An application monitor imported through fi_import("mr_cache"): the
 * cache subscribes each pinned range, asks it before a hit, and a notify
 * invalidates the range. */
static int imported_monitor(void)
{
	rec.mon.fid.fclass = FI_CLASS_MEM_MONITOR;
	rec.mon.export_ops = &rec_ops;
	CHECK_OK(fi_import(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "mr_cache", NULL, 0,
			   0, &rec.mon.fid, NULL));
	CHECK(rec.mon.import_ops && rec.mon.import_ops->notify);
	CHECK_OK(open_domain());
	CHECK(rec.started == 1);
	unsigned char *b = map(NULL);
	CHECK(b);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK(rec.subs == 1 && rec.sub_addr == (uintptr_t)b && rec.sub_len == LEN);
	CHECK_OK(unlock(b, LEN));
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK(rec.subs == 1 && rec.valids >= 1);
	CHECK_LOCKED(0);
	rec.mon.import_ops->notify(&rec.mon, b + 4 * KB, 4 * KB);
	CHECK(rec.unsubs == 1);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK(rec.subs == 2);
	CHECK_LOCKED(64);
	CHECK_OK(close_domain());
	CHECK(rec.stopped == 1);
	CHECK_OK(munmap(b, LEN));
	/* The import filled in the monitor's fid too: fi_close takes the
	 * monitor back (Open MPI does so at MPI_Finalize), but not while a
	 * domain's cache relies on it; a second monitor waits for it. */
	CHECK(rec.mon.fid.ops && rec.mon.fid.ops->close);
	static struct fid_mem_monitor other;
	other.fid.fclass = FI_CLASS_MEM_MONITOR;
	other.export_ops = &rec_ops;
	CHECK_RC(fi_import(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "mr_cache", NULL, 0, 0,
			   &other.fid, NULL),
		 -FI_EBUSY);
	CHECK(!other.import_ops);
	CHECK_OK(open_domain());
	CHECK(rec.started == 2);
	CHECK_RC(fi_close(&rec.mon.fid), -FI_EBUSY);
	CHECK_OK(close_domain());
	CHECK(rec.stopped == 2);
	CHECK_OK(fi_close(&rec.mon.fid));
	CHECK_RC(fi_close(&rec.mon.fid), -FI_EINVAL);
	/* No monitor now: registrations work, uncached, and nothing stays
	 * pinned or subscribed. */
	CHECK_OK(open_domain());
	CHECK(rec.started == 2);
	b = map(NULL);
	CHECK(b);
	CHECK_OK(reg_close(b, LEN, RW));
	CHECK(rec.subs == 2);
	CHECK_LOCKED(0);
	CHECK_OK(close_domain());
	CHECK_OK(munmap(b, LEN));
	/* Another monitor may be imported now. */
	CHECK_OK(fi_import(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "mr_cache", NULL, 0, 0,
			   &other.fid, NULL));
	CHECK(other.import_ops && other.fid.ops);
	CHECK_OK(fi_close(&other.fid));
	/* fi_open("mr_cache") itself gives an object fi_close takes back. */
	struct fid *cache;
	CHECK_OK(fi_open(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "mr_cache", NULL, 0, 0,
			 &cache, NULL));
	CHECK(cache->fclass == FI_CLASS_MR_CACHE);
	CHECK_RC(fi_import_fid(cache, cache, 0), -FI_EINVAL);
	CHECK_OK(fi_close(cache));
	return 0;
}

/* ---------------------------------------------------- two processes -- */

#define MODE (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)

typedef peer_side_fn side_fn;

static int pair(side_fn target, side_fn init)
{
	return peer_pair(MODE, FI_RMA | FI_MSG, target, init);
}

static int publish(struct peer *p, struct fid_mr *mr, const void *b)
{
	struct peer_region r = { fi_mr_key(mr), (uint64_t)(uintptr_t)b, LEN };
	peer_put(p, &r, sizeof(r));
	return 0;
}

static int write_one(struct peer *p, const struct peer_region *r, const void *src, int want)
{
	int ctx;
	CHECK_RC(fi_write(p->ep, src, LEN, NULL, p->other, peer_raddr(p, (void *)(uintptr_t)r->base, 0),
			  r->key, &ctx),
		 0);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int w = peer_wait(p, &e, &err);
	if (!want) {
		CHECK_RC(w, 0);
		return 0;
	}
	CHECK_RC(w, -FI_EAVAIL);
	CHECK_RC(err.err, want);
	CHECK(err.op_context == &ctx);
	return 0;
}

static unsigned char src_buf[LEN];

/* Target: a live region whose pages are replaced behind its back (munmap,
 * mmap at the same address): the write through it is refused and no byte
 * lands, in untouched and in touched new pages alike. */
static int stale_target(struct peer *p)
{
	unsigned char *b;
	struct fid_mr *mr;
	for (int i = 0;; i++) {
		CHECK(i < 5);
		b = map(NULL);
		CHECK(b);
		CHECK_OK(fi_mr_reg(p->domain, b, LEN, RW, 0, 0, 0, &mr, NULL));
		CHECK_OK(munmap(b, LEN));
		if (mmap(b, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == b)
			break;
		CHECK_OK(fi_close(&mr->fid));
	}
	CHECK_OK(publish(p, mr, b));
	CHECK_OK(peer_sync(p)); /* first write refused */
	for (size_t i = 0; i < LEN; i++)
		CHECK(b[i] == 0);
	memset(b, 3, LEN);
	peer_put(p, "t", 1);
	CHECK_OK(peer_sync(p)); /* second write refused */
	for (size_t i = 0; i < LEN; i++)
		CHECK(b[i] == 3);
	CHECK_OK(fi_close(&mr->fid));
	/* Registered again, the new pages take writes. */
	CHECK_OK(fi_mr_reg(p->domain, b, LEN, RW, 0, 0, 0, &mr, NULL));
	CHECK_OK(publish(p, mr, b));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_check_fill(b, LEN, 5));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int stale_init(struct peer *p)
{
	struct peer_region r;
	char t;
	CHECK_OK(peer_get(p, &r, sizeof(r)));
	peer_fill(src_buf, LEN, 5);
	CHECK_OK(write_one(p, &r, src_buf, FI_EFAULT));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_get(p, &t, 1));
	CHECK_OK(write_one(p, &r, src_buf, FI_EFAULT));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_get(p, &r, sizeof(r)));
	CHECK_OK(write_one(p, &r, src_buf, 0));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int pin_check_refuses_stale(void)
{
	return pair(stale_target, stale_init);
}

/* Target: a buffer cached, its memory replaced, registered again: the
 * write lands in the new pages. */
static int replaced_target(struct peer *p)
{
	unsigned char *b;
	struct fid_mr *mr;
	for (int i = 0;; i++) {
		CHECK(i < 5);
		b = map(NULL);
		CHECK(b);
		CHECK_OK(fi_mr_reg(p->domain, b, LEN, RW, 0, 0, 0, &mr, NULL));
		CHECK_OK(fi_close(&mr->fid));
		CHECK_OK(munmap(b, LEN));
		if (map(b) == b)
			break;
	}
	CHECK_OK(fi_mr_reg(p->domain, b, LEN, RW, 0, 0, 0, &mr, NULL));
	CHECK_LOCKED(64);
	CHECK_OK(publish(p, mr, b));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_check_fill(b, LEN, 9));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int replaced_init(struct peer *p)
{
	struct peer_region r;
	CHECK_OK(peer_get(p, &r, sizeof(r)));
	peer_fill(src_buf, LEN, 9);
	CHECK_OK(write_one(p, &r, src_buf, 0));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int rma_after_replace(void)
{
	return pair(replaced_target, replaced_init);
}

static const struct test_case cases[] = {
	CASE_ENV(hit_after_close, UFFD),
	CASE_ENV(munmap_then_mmap_fixed, UFFD),
	CASE_ENV(mremap_away, UFFD),
	CASE_ENV(madvise_dontneed, UFFD),
	CASE_ENV(free_then_malloc, UFFD),
	CASE_ENV(brk_shrink, UFFD),
	CASE_ENV(unmap_while_registering, UFFD),
	CASE_ENV(read_only_not_for_write, UFFD),
	CASE_ENV(two_domains_share_pages, UFFD),
	CASE_ENV(max_count_lru, UFFD " FI_MR_CACHE_MAX_COUNT=2"),
	CASE_ENV(max_size, UFFD " FI_MR_CACHE_MAX_SIZE=131072"),
	CASE_ENV(hit_after_close, HOOKS),
	CASE_ENV(munmap_then_mmap_fixed, HOOKS),
	CASE_ENV(mremap_away, HOOKS),
	CASE_ENV(madvise_dontneed, HOOKS),
	CASE_ENV(free_then_malloc, HOOKS),
	CASE_ENV(brk_shrink, HOOKS),
	CASE_ENV(unmap_while_registering, HOOKS),
	CASE_ENV(read_only_not_for_write, HOOKS),
	CASE_ENV(two_domains_share_pages, HOOKS),
	CASE_ENV(max_count_lru, HOOKS " FI_MR_CACHE_MAX_COUNT=2"),
	CASE_ENV(regv_pins_every_iov, UFFD),
	CASE_ENV(regv_pins_every_iov, HOOKS),
	CASE_ENV(regv_pins_every_iov, PIN " FI_MR_CACHE_MAX_COUNT=0"),
	CASE_ENV(not_cached, PIN " FI_MR_CACHE_MAX_COUNT=0"),
	CASE_ENV(not_cached, PIN " FI_MR_CACHE_MONITOR=disabled"),
	CASE_ENV(hit_after_close, PIN " FI_MR_CACHE_MONITOR=kdreg2"),
	CASE_ENV(kdreg2_fallback, PIN " FI_MR_CACHE_MONITOR=kdreg2 FI_LOG_LEVEL=warn"),
	CASE_ENV(memlock_limit, UFFD),
	CASE_ENV(unknown_monitor, PIN " FI_MR_CACHE_MONITOR=nosuch FI_LOG_LEVEL=warn"),
	CASE_ENV(stats_at_close, UFFD " FI_OXSHM_STATS=1"),
	CASE_ENV(userfaultfd_refused, PIN " FI_LOG_LEVEL=info"),
	CASE_ENV(frames_hidden, "FI_OXSHM_PIN=check FI_LOG_LEVEL=warn"),
	CASE_ENV(imported_monitor, PIN),
	CASE_ENV(pin_check_refuses_stale, "FI_OXSHM_PIN=check"),
	CASE_ENV(rma_after_replace, UFFD),
	CASE_ENV(rma_after_replace, HOOKS),
};

TEST_MAIN(cases)
