/*
 * rma_bench.c: RMA bandwidth and latency of one libfabric provider between
 * two processes on this machine, and the machine's copy ceilings.
 *
 * Built once against upstream's headers (Debian's libfabric 1.17) and linked
 * against Debian's libfabric.so.1; bench/rma_run.sh runs the same binary on
 * oxfabric (LD_LIBRARY_PATH=build, provider oxshm) and on Debian's library
 * (provider shm).
 *
 *   rma_bench [-q] PROVIDER     RMA between a parent (initiator) and a forked
 *                               child (target), both on PROVIDER
 *   rma_bench [-q] -ceiling     the same sizes without libfabric: memcpy in
 *                               one process, process_vm_writev/readv into a
 *                               forked child, and the two processes copying
 *                               half of each transfer at once (the parent
 *                               with writev, the child with readv), and a
 *                               plain shared-memory pipe of 4 KiB cells
 *                               (the parent copies in, the child out)
 *   rma_bench -probe            the shared-memory pipe alone, 16 KiB slots,
 *                               a twentieth of a second: the host's rate
 *                               between two processes right now, which
 *                               bench/fabtests_bench.sh prints beside each
 *                               benchmark run. On the 2-CPU VMs measured
 *                               here it is bimodal (8-12 GB/s, or 2-3 GB/s,
 *                               minutes at a time, pinned or not), and
 *                               every bounce-buffer copy moves with it.
 *
 * Both processes are forked before any libfabric call and each opens its
 * own fabric, domain, RDM endpoint, AV, CQ and (with FI_RMA_EVENT) a remote
 * counter. They swap endpoint names, MR keys and buffer addresses through
 * pipes; a MAP_SHARED page carries the initiator's commands to the target
 * (clear, fill, check, ping-pong, exit) so that the target only ever spins
 * on fi_cq_read (its progress) and on that page.
 *
 * Figures, for 8 B .. 64 MiB (-q: 8 B, 64 KiB, 1 MiB; shorter runs):
 *   write_gbps   fi_write, up to 64 ops outstanding, 1e9 bytes/s
 *   read_gbps    fi_read, the same
 *   lat_us       8-byte fi_write ping-pong, half a round trip; each side
 *                polls its own memory for the peer's value while calling
 *                fi_cq_read; the median of the timed batches
 * Machine-readable lines:
 *   rma <provider> <write_gbps|read_gbps|lat_us> <size_bytes> <value>
 *   ceiling <memcpy|pvwritev|pvreadv|pvhalves|shmpipe> <size_bytes> <gbps>
 * Every other line is for people. Each bandwidth test is checked: the
 * target compares the whole region the writes covered against the pattern
 * the initiator sent, the initiator the whole region it read, and with
 * FI_RMA_EVENT the target's remote counter must count every operation.
 * Any failed libfabric call, error completion, wrong data or dead peer
 * exits nonzero (both processes); alarm(120) bounds a hung peer.
 * RMA_BENCH_NO_EVENT=1 in the environment skips FI_RMA_EVENT (no counter),
 * to see what the remote counter costs a provider; RMA_BENCH_ALARM=SECS
 * replaces the 120 s alarm; RMA_BENCH_SIZES=8,65536 measures only the listed
 * sizes.
 * Exit 3 (with a "NO-RMA" line) means the provider offers no RMA at all:
 * fi_getinfo found nothing (FI_ENODATA/FI_ENOSYS) or an RMA call answered
 * FI_ENOSYS.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

/* rma_run.sh states which header set the build must see. */
#if defined(BENCH_EXPECT_MAJOR) && \
	(FI_MAJOR_VERSION != BENCH_EXPECT_MAJOR || FI_MINOR_VERSION != BENCH_EXPECT_MINOR)
#error "compiled against the wrong header set"
#endif

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define BIG (64 * MiB)        /* the target's registered buffer, and the initiator's */
#define LAT_LEN 4096          /* the small ping-pong buffer on each side */
#define WINDOW 64             /* most operations outstanding */
#define EXIT_NO_RMA 3

static const size_t sizes_full[] = { 8,	  64,	   512,	    4 * KiB, 16 * KiB,
				     64 * KiB, 256 * KiB, MiB, 4 * MiB, 64 * MiB };
static const size_t sizes_quick[] = { 8, 64 * KiB, MiB };
static const size_t *sizes = sizes_full;
static size_t nsizes = sizeof(sizes_full) / sizeof(sizes_full[0]);

static int quick;
static double warm_s = 0.05, run_s = 0.3;  /* per bandwidth figure */
static int lat_batches = 10, lat_batch = 1000, lat_warm = 1000;

static const char *prov = "-";
static const char *role = "main";

/* ----------------------------------------------------- the shared page ---- */

enum { CMD_NONE, CMD_CLEAR, CMD_FILL, CMD_CHECK_WRITE, CMD_CHECK_READ, CMD_MARK, CMD_LAT, CMD_EXIT };

struct ctl {
	_Atomic uint32_t cmd_seq;  /* bumped by the initiator per command */
	_Atomic uint32_t ack_seq;  /* set to cmd_seq by the target when done */
	_Atomic int failed;        /* either side gave up */
	uint32_t cmd;
	int32_t status;            /* the target's answer: 0 or a failure */
	uint64_t arg[4];
};
static struct ctl *ctl;
static pid_t child;  /* the initiator's target, until it is reaped */

/* The target follows (it sees ctl->failed); the initiator reaps it, killing
 * it after 2 s, so that neither outlives the run. */
static void reap_child(void)
{
	for (int i = 0; child > 0 && i < 2000; i++) {
		if (waitpid(child, NULL, WNOHANG) == child)
			child = 0;
		else
			usleep(1000);
	}
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
}

static void die_plain(void) __attribute__((noreturn));
static void die_plain(void)
{
	if (ctl)
		atomic_store(&ctl->failed, 1);
	fflush(stdout);
	reap_child();
	exit(1);
}

static void die(const char *what, long rc, int line)
{
	fprintf(stderr, "rma_bench[%s %s]: line %d: %s returned %ld (%s)\n", prov, role, line,
		what, rc, rc < 0 ? fi_strerror((int)-rc) : "unexpected");
	die_plain();
}

#define FI_CHECK(expr)                                                     \
	do {                                                               \
		long rc_ = (long)(expr);                                   \
		if (rc_)                                                   \
			die(#expr, rc_, __LINE__);                         \
	} while (0)

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "rma_bench[%s %s]: ", prov, role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	die_plain();
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "rma_bench: timed out (alarm; 120 s unless RMA_BENCH_ALARM): "
				  "a peer hung\n";
	if (ctl)
		atomic_store(&ctl->failed, 1);
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	_exit(2);
}

static void arm_alarm(void)
{
	const char *e = getenv("RMA_BENCH_ALARM");
	unsigned secs = e && atoi(e) > 0 ? (unsigned)atoi(e) : 120;
	signal(SIGALRM, on_alarm);
	alarm(secs);
}

/* --------------------------------------------------------------- utils ---- */

static void *xalloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		die_plain();
	}
	memset(p, 0x5a, len); /* touched once: every page is backed */
	return p;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void size_name(size_t s, char *buf, size_t len)
{
	if (s >= MiB && s % MiB == 0)
		snprintf(buf, len, "%zu MiB", s / MiB);
	else if (s >= KiB && s % KiB == 0)
		snprintf(buf, len, "%zu KiB", s / KiB);
	else
		snprintf(buf, len, "%zu B", s);
}

/* How many distinct size-long slots a test cycles through in a BIG buffer. */
static size_t slots_for(size_t size)
{
	size_t n = BIG / size;
	return n > WINDOW ? WINDOW : n;
}

/* The data pattern: word k of a region filled with seed. */
static inline uint64_t pat(uint64_t k, uint64_t seed)
{
	uint64_t x = (k + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xD1B54A32D192ED03ull;
	return x ^ (x >> 29);
}

static void fill(void *p, size_t len, uint64_t seed)
{
	uint64_t *w = p;
	for (size_t k = 0; k < len / 8; k++)
		w[k] = pat(k, seed);
}

/* Index of the first byte that differs from the pattern, or len. */
static size_t mismatch(const void *p, size_t len, uint64_t seed)
{
	const volatile uint64_t *w = p;
	for (size_t k = 0; k < len / 8; k++)
		if (w[k] != pat(k, seed))
			return k * 8;
	return len;
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror("write(pipe)");
			die_plain();
		}
		p += n;
		len -= (size_t)n;
	}
}

static void read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fail("the peer closed its pipe (%s)", n ? strerror(errno) : "EOF");
		}
		p += n;
		len -= (size_t)n;
	}
}

/* ------------------------------------------------------------ libfabric ---- */

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_cntr *rcntr;  /* remote RMA events, with FI_RMA_EVENT */
static fi_addr_t peer;
static int rma_event, mr_local, virt_addr, prov_key;
static uint64_t next_key = 1;

static struct fi_context2 ctxs[WINDOW];
static void *free_ctx[WINDOW];
static int nfree;
static uint64_t ncomp;  /* completions seen */

static void no_rma(const char *what, long rc)
{
	printf("NO-RMA %s %s returned %ld (%s)\n", prov, what, rc, fi_strerror((int)-rc));
	fprintf(stderr, "rma_bench[%s %s]: NO-RMA: %s returned %ld (%s)\n", prov, role, what,
		rc, fi_strerror((int)-rc));
	fflush(stdout);
	if (ctl)
		atomic_store(&ctl->failed, EXIT_NO_RMA);
	reap_child();
	exit(EXIT_NO_RMA);
}

static int find_libfabric(struct dl_phdr_info *i, size_t size, void *out)
{
	(void)size;
	if (i->dlpi_name && strstr(i->dlpi_name, "libfabric.so")) {
		*(const char **)out = i->dlpi_name;
		return 1;
	}
	return 0;
}

static void print_info(void)
{
	const char *lib = NULL;
	dl_iterate_phdr(find_libfabric, &lib);
	char *real = lib ? realpath(lib, NULL) : NULL;
	uint32_t v = fi_version();
	printf("lib %s\n", real ? real : lib ? lib : "(not found)");
	printf("fi_version %u.%u (headers %d.%d)\n", FI_MAJOR(v), FI_MINOR(v),
	       FI_MAJOR_VERSION, FI_MINOR_VERSION);
	free(real);
	struct fi_domain_attr *d = info->domain_attr;
	char mode[256], caps[1024];
	const char *s = fi_tostr(&d->mr_mode, FI_TYPE_MR_MODE);
	snprintf(mode, sizeof(mode), "%s", !s ? "?" : *s ? s : "(none)");
	s = fi_tostr(&info->caps, FI_TYPE_CAPS);
	snprintf(caps, sizeof(caps), "%s", s ? s : "?");
	printf("negotiated prov %s fabric %s domain %s\n", info->fabric_attr->prov_name,
	       info->fabric_attr->name, d->name);
	printf("negotiated caps %s\n", caps);
	printf("negotiated mr_mode 0x%x %s\n", (unsigned)d->mr_mode, mode);
	printf("negotiated mode 0x%llx max_msg_size %zu inject_size %zu progress data %d "
	       "control %d\n", (unsigned long long)info->mode,
	       info->ep_attr->max_msg_size, info->tx_attr->inject_size,
	       (int)d->data_progress, (int)d->control_progress);
	printf("remote counter %s; keys %s; local descriptors %s; addressing %s\n",
	       rma_event ? "yes (FI_RMA_EVENT)" : "no (without FI_RMA_EVENT)",
	       prov_key ? "provider" : "requested", mr_local ? "yes (FI_MR_LOCAL)" : "no",
	       virt_addr ? "virtual addresses" : "offsets");
	fflush(stdout);
}

/*
 * fi_getinfo for PROVIDER: RDM, RMA (with FI_RMA_EVENT when the provider has
 * it), mr_mode VIRT_ADDR|ALLOCATED|PROV_KEY; the mr_mode bits that come back
 * are honoured (FI_MR_LOCAL: local buffers registered and descriptors
 * passed; no FI_MR_VIRT_ADDR: offsets from 0). Bits that need steps this
 * program does not take fail the run.
 */
static void get_info(void)
{
	static const uint64_t caps_try[] = { FI_RMA | FI_RMA_EVENT, FI_RMA };
	int rc = -FI_ENODATA;
	const char *no_event = getenv("RMA_BENCH_NO_EVENT");
	for (size_t i = no_event && *no_event == '1' ? 1 : 0; i < 2 && rc; i++) {
		struct fi_info *hints = fi_allocinfo();
		if (!hints)
			die("fi_allocinfo", -FI_ENOMEM, __LINE__);
		hints->fabric_attr->prov_name = strdup(prov);
		hints->caps = caps_try[i];
		hints->mode = FI_CONTEXT | FI_CONTEXT2;
		hints->ep_attr->type = FI_EP_RDM;
		hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
		rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
		fi_freeinfo(hints);
		if (rc == 0)
			rma_event = i == 0;
	}
	if (rc == -FI_ENODATA || rc == -FI_ENOSYS)
		no_rma("fi_getinfo(FI_RMA, FI_EP_RDM)", rc);
	if (rc)
		die("fi_getinfo", rc, __LINE__);
	if (!info)
		die("fi_getinfo (no info)", -FI_ENODATA, __LINE__);
	if (strcmp(info->fabric_attr->prov_name, prov) != 0)
		fail("asked for provider %s, got %s", prov, info->fabric_attr->prov_name);
	if (!(info->caps & FI_RMA))
		fail("fi_getinfo returned caps without FI_RMA");
	if (rma_event && !(info->caps & FI_RMA_EVENT))
		fail("fi_getinfo returned caps without the requested FI_RMA_EVENT");
	uint64_t mm = (uint64_t)info->domain_attr->mr_mode;
	uint64_t ok = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (mm & ~ok)
		fail("negotiated mr_mode 0x%llx has bits this benchmark does not handle "
		     "(beyond LOCAL|VIRT_ADDR|ALLOCATED|PROV_KEY)", (unsigned long long)mm);
	if (info->mode & ~(uint64_t)(FI_CONTEXT | FI_CONTEXT2))
		fail("negotiated mode 0x%llx has bits beyond FI_CONTEXT|FI_CONTEXT2",
		     (unsigned long long)info->mode);
	if (info->domain_attr->mr_key_size > 8)
		fail("mr_key_size %zu > 8 needs FI_MR_RAW", info->domain_attr->mr_key_size);
	mr_local = (mm & FI_MR_LOCAL) != 0;
	virt_addr = (mm & FI_MR_VIRT_ADDR) != 0;
	prov_key = (mm & FI_MR_PROV_KEY) != 0;
}

static void open_all(void)
{
	get_info();
	FI_CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	FI_CHECK(fi_domain(fabric, info, &domain, NULL));

	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE,
				  .size = 4 * WINDOW };
	FI_CHECK(fi_cq_open(domain, &cqa, &cq, NULL));
	struct fi_av_attr ava = { .type = info->domain_attr->av_type != FI_AV_UNSPEC
						  ? info->domain_attr->av_type : FI_AV_TABLE,
				  .count = 4 };
	FI_CHECK(fi_av_open(domain, &ava, &av, NULL));
	FI_CHECK(fi_endpoint(domain, info, &ep, NULL));
	FI_CHECK(fi_ep_bind(ep, &av->fid, 0));
	FI_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	if (rma_event) {
		struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP,
					   .wait_obj = FI_WAIT_NONE };
		FI_CHECK(fi_cntr_open(domain, &ca, &rcntr, NULL));
		FI_CHECK(fi_ep_bind(ep, &rcntr->fid, FI_REMOTE_WRITE | FI_REMOTE_READ));
	}
	FI_CHECK(fi_enable(ep));
	for (int i = 0; i < WINDOW; i++)
		free_ctx[i] = &ctxs[i];
	nfree = WINDOW;
}

static struct fid_mr *reg(void *buf, size_t len, uint64_t access, uint64_t *key, void **desc)
{
	struct fid_mr *mr = NULL;
	FI_CHECK(fi_mr_reg(domain, buf, len, access, 0, prov_key ? 0 : next_key++, 0, &mr,
			   NULL));
	if (!mr)
		die("fi_mr_reg (no mr)", -FI_EOTHER, __LINE__);
	if (key) {
		*key = fi_mr_key(mr);
		if (*key == FI_KEY_NOTAVAIL)
			die("fi_mr_key", -FI_EKEYREJECTED, __LINE__);
	}
	if (desc)
		*desc = mr_local ? fi_mr_desc(mr) : NULL;
	return mr;
}

static void close_fid(struct fid *f, const char *what)
{
	int rc = fi_close(f);
	if (rc)
		die(what, rc, __LINE__);
}

static void cq_error(void)
{
	struct fi_cq_err_entry e;
	memset(&e, 0, sizeof(e));
	ssize_t rc = fi_cq_readerr(cq, &e, 0);
	if (rc < 0)
		die("fi_cq_readerr", rc, __LINE__);
	char buf[256] = "";
	const char *ps = fi_cq_strerror(cq, e.prov_errno, e.err_data, buf, sizeof(buf));
	fail("error completion: err %d (%s) prov_errno %d (%s) len %zu flags 0x%llx",
	     e.err, fi_strerror(e.err), e.prov_errno, ps ? ps : "?", e.len,
	     (unsigned long long)e.flags);
}

static void check_peer(void)
{
	int f = atomic_load_explicit(&ctl->failed, memory_order_relaxed);
	if (f) {
		fprintf(stderr, "rma_bench[%s %s]: the peer failed\n", prov, role);
		fflush(stdout);
		reap_child();
		exit(f == EXIT_NO_RMA ? EXIT_NO_RMA : 1);
	}
}

/* One fi_cq_read: progress, and the completions it returns. */
static int drain(void)
{
	struct fi_cq_entry e[32];
	ssize_t n = fi_cq_read(cq, e, 32);
	if (n > 0) {
		for (ssize_t i = 0; i < n; i++) {
			struct fi_context2 *c = e[i].op_context;
			if (c < ctxs || c >= ctxs + WINDOW || nfree >= WINDOW)
				fail("a completion with a context this side never posted (%p)",
				     (void *)c);
			free_ctx[nfree++] = c;
		}
		ncomp += (uint64_t)n;
		return (int)n;
	}
	if (n == -FI_EAVAIL)
		cq_error();
	if (n != -FI_EAGAIN)
		die("fi_cq_read", n, __LINE__);
	check_peer();
	return 0;
}

static inline int outstanding(void)
{
	return WINDOW - nfree;
}

static void wait_all(void)
{
	while (outstanding())
		drain();
}

/* Posts one fi_write (is_write) or fi_read; -FI_EAGAIN: read the CQ, retry. */
static void post(int is_write, void *lbuf, size_t len, void *desc, uint64_t raddr,
		 uint64_t key)
{
	while (!nfree)
		drain();
	void *c = free_ctx[--nfree];
	for (;;) {
		ssize_t rc = is_write ? fi_write(ep, lbuf, len, desc, peer, raddr, key, c)
				      : fi_read(ep, lbuf, len, desc, peer, raddr, key, c);
		if (rc == 0)
			return;
		if (rc == -FI_ENOSYS)
			no_rma(is_write ? "fi_write" : "fi_read", rc);
		if (rc != -FI_EAGAIN)
			die(is_write ? "fi_write" : "fi_read", rc, __LINE__);
		drain();
	}
}

static uint64_t cntr_value(void)
{
	uint64_t v = fi_cntr_read(rcntr);
	uint64_t e = fi_cntr_readerr(rcntr);
	if (e)
		fail("the remote counter counted %llu errors", (unsigned long long)e);
	return v;
}

/* Progress until the remote counter has counted `want` more since `base`. */
static int wait_cntr(uint64_t base, uint64_t want)
{
	if (!rcntr)
		return 0;
	uint64_t end = now_ns() + 5000000000ull;
	uint64_t got;
	while ((got = cntr_value() - base) < want && now_ns() < end)
		drain();
	if (got != want) {
		fprintf(stderr, "rma_bench[%s %s]: the remote counter counted %llu operations, "
			"the initiator posted %llu\n", prov, role, (unsigned long long)got,
			(unsigned long long)want);
		return 1;
	}
	return 0;
}

/* ----------------------------------------------------------- exchange ---- */

struct peer_info {
	uint64_t magic;
	uint64_t addrlen;
	uint8_t addr[512];
	uint64_t big_addr, big_key;  /* the base for RMA into the BIG buffer */
	uint64_t lat_addr, lat_key;
};
#define PEER_MAGIC 0x726d6162656e6368ull

static int fd_in, fd_out;
static struct peer_info me, them;
static const char *av_how = "";

static void exchange(void)
{
	me.magic = PEER_MAGIC;
	size_t len = sizeof(me.addr);
	int rc = fi_getname(&ep->fid, me.addr, &len);
	if (rc)
		die("fi_getname", rc, __LINE__);
	me.addrlen = len;
	write_all(fd_out, &me, sizeof(me));
	read_all(fd_in, &them, sizeof(them));
	if (them.magic != PEER_MAGIC || them.addrlen > sizeof(them.addr))
		fail("garbled peer info");
	/*
	 * FI_ADDR_STR: fi_av(3) has fi_av_insert take a char ** there, but
	 * upstream shm (1.17) reads the buffer as the string itself. Both agree
	 * on fi_av_insertsvc with the string as node and service NULL, except
	 * that shm lacks insertsvc (FI_ENOSYS): then shm's form of fi_av_insert.
	 */
	if (info->addr_format == FI_ADDR_STR) {
		if (!memchr(them.addr, 0, them.addrlen))
			fail("the peer's FI_ADDR_STR name is not NUL-terminated");
		rc = fi_av_insertsvc(av, (const char *)them.addr, NULL, &peer, 0, NULL);
		av_how = "fi_av_insertsvc(name, NULL)";
		if (rc == -FI_ENOSYS) {
			rc = fi_av_insert(av, them.addr, 1, &peer, 0, NULL);
			av_how = "fi_av_insert(the name's bytes; no fi_av_insertsvc)";
		}
	} else {
		rc = fi_av_insert(av, them.addr, 1, &peer, 0, NULL);
		av_how = "fi_av_insert";
	}
	if (rc != 1)
		die(av_how, rc < 0 ? rc : -FI_EOTHER, __LINE__);
}

/* ------------------------------------------------------------- target ---- */

static char *big, *lat;
static void *big_desc, *lat_desc;
static struct fid_mr *big_mr, *lat_mr;
static uint64_t cntr_base;

static int target_lat(uint64_t total)
{
	volatile uint64_t *flag = (volatile uint64_t *)lat;
	uint64_t *src = (uint64_t *)(lat + 64);
	for (uint64_t i = 1; i <= total; i++) {
		while (*flag != i)
			drain();
		src[i % 64] = i;
		post(1, &src[i % 64], 8, lat_desc, them.lat_addr, them.lat_key);
	}
	wait_all();
	return wait_cntr(cntr_base, total);
}

/* Check [0, len) of the target's buffer against the pattern, allowing the
 * provider to finish delivering (the target's progress may do the copy). */
static int target_check_write(size_t len, uint64_t seed, uint64_t nops)
{
	int rc = wait_cntr(cntr_base, nops);
	uint64_t end = now_ns() + 2000000000ull;
	size_t bad;
	while ((bad = mismatch(big, len, seed)) != len && now_ns() < end)
		for (int i = 0; i < 1000; i++)
			drain();
	if (bad != len) {
		fprintf(stderr, "rma_bench[%s %s]: after the write test the target's buffer "
			"differs from what was written at byte %zu of %zu\n", prov, role, bad,
			len);
		rc = 1;
	}
	return rc;
}

static void target(void)
{
	big = xalloc(BIG);
	lat = xalloc(LAT_LEN);
	memset(lat, 0, LAT_LEN);
	big_mr = reg(big, BIG, FI_REMOTE_WRITE | FI_REMOTE_READ, &me.big_key, &big_desc);
	lat_mr = reg(lat, LAT_LEN, FI_REMOTE_WRITE | FI_REMOTE_READ | FI_WRITE | FI_READ,
		     &me.lat_key, &lat_desc);
	me.big_addr = virt_addr ? (uint64_t)(uintptr_t)big : 0;
	me.lat_addr = virt_addr ? (uint64_t)(uintptr_t)lat : 0;
	exchange();

	uint32_t seen = 0;
	for (;;) {
		uint32_t s = atomic_load_explicit(&ctl->cmd_seq, memory_order_acquire);
		if (s == seen) {
			drain();
			continue;
		}
		seen = s;
		uint32_t cmd = ctl->cmd;
		uint64_t *a = ctl->arg;
		int st = 0;
		switch (cmd) {
		case CMD_CLEAR:
			memset(big, 0, a[0]);
			cntr_base = rcntr ? cntr_value() : 0;
			break;
		case CMD_FILL:
			fill(big, a[0], a[1]);
			cntr_base = rcntr ? cntr_value() : 0;
			break;
		case CMD_CHECK_WRITE:
			st = target_check_write(a[0], a[1], a[2]);
			break;
		case CMD_CHECK_READ:
			st = wait_cntr(cntr_base, a[0]);
			break;
		case CMD_MARK: /* before CMD_LAT: its first ping may beat the command */
			cntr_base = rcntr ? cntr_value() : 0;
			break;
		case CMD_LAT:
			st = target_lat(a[0]);
			break;
		case CMD_EXIT:
			break;
		default:
			st = 1;
		}
		ctl->status = st;
		atomic_store_explicit(&ctl->ack_seq, s, memory_order_release);
		if (cmd == CMD_EXIT)
			break;
	}
	wait_all();
}

/* ---------------------------------------------------------- initiator ---- */

static void child_alive(void)
{
	int status;
	pid_t r = waitpid(child, &status, WNOHANG);
	if (r == child) {
		child = 0;
		if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_NO_RMA) {
			fflush(stdout);
			exit(EXIT_NO_RMA);
		}
		fail("the target exited (status 0x%x)", status);
	}
}

static void send_cmd(uint32_t cmd, uint64_t a0, uint64_t a1, uint64_t a2)
{
	ctl->cmd = cmd;
	ctl->arg[0] = a0;
	ctl->arg[1] = a1;
	ctl->arg[2] = a2;
	atomic_fetch_add_explicit(&ctl->cmd_seq, 1, memory_order_release);
}

static int wait_ack(void)
{
	uint32_t s = atomic_load(&ctl->cmd_seq);
	for (unsigned long i = 1; atomic_load_explicit(&ctl->ack_seq, memory_order_acquire) != s;
	     i++) {
		drain();
		if (!(i & 0xffff))
			child_alive();
	}
	return ctl->status;
}

static int command(uint32_t cmd, uint64_t a0, uint64_t a1, uint64_t a2)
{
	send_cmd(cmd, a0, a1, a2);
	return wait_ack();
}

/* GB/s of fi_write/fi_read of `size` for about `secs`; adds the ops to *nops. */
static double bw_run(int is_write, size_t size, double secs, uint64_t *nops)
{
	size_t slots = slots_for(size);
	int window = (int)slots;
	uint64_t n = 0, t0 = now_ns(), deadline = t0 + (uint64_t)(secs * 1e9);
	for (;;) {
		while (outstanding() >= window)
			drain();
		size_t off = (size_t)(n % slots) * size;
		post(is_write, big + off, size, big_desc, them.big_addr + off, them.big_key);
		n++;
		if ((size >= 4 * KiB || !(n & 15)) && now_ns() >= deadline)
			break;
	}
	wait_all();
	uint64_t t1 = now_ns();
	*nops += n;
	return (double)n * (double)size / (double)(t1 - t0);
}

static void bw_test(int is_write, size_t size, int idx)
{
	char name[32];
	size_name(size, name, sizeof(name));
	size_t slots = slots_for(size);
	uint64_t seed = (is_write ? 0x1000u : 0x2000u) + (uint64_t)idx;
	uint64_t nops = 0;
	if (is_write) {
		fill(big, slots * size, seed);
		if (command(CMD_CLEAR, slots * size, 0, 0))
			fail("the target could not clear its buffer");
	} else {
		if (command(CMD_FILL, slots * size, seed, 0))
			fail("the target could not fill its buffer");
		memset(big, 0, slots * size);
	}
	uint64_t t_start = now_ns();
	bw_run(is_write, size, warm_s, &nops);
	double gbps = bw_run(is_write, size, run_s, &nops);
	size_t covered = (nops < slots ? (size_t)nops : slots) * size;
	if (is_write) {
		if (command(CMD_CHECK_WRITE, covered, seed, nops))
			fail("the write test of %s failed its check (see the target's line)",
			     name);
	} else {
		size_t bad = mismatch(big, covered, seed);
		if (bad != covered)
			fail("after the read test of %s the initiator's buffer differs from the "
			     "target's at byte %zu of %zu", name, bad, covered);
		if (command(CMD_CHECK_READ, nops, 0, 0))
			fail("the read test of %s failed its check (see the target's line)",
			     name);
	}
	printf("%-5s %8s  %9.3f GB/s  (%llu ops, window %zu, verified %zu bytes%s; %.2f s)\n",
	       is_write ? "write" : "read", name, gbps, (unsigned long long)nops, slots,
	       covered, rcntr ? ", counter ok" : "", (double)(now_ns() - t_start) / 1e9);
	printf("rma %s %s %zu %.6g\n", prov, is_write ? "write_gbps" : "read_gbps", size, gbps);
	fflush(stdout);
}

static void lat_test(void)
{
	volatile uint64_t *flag = (volatile uint64_t *)lat;
	uint64_t *src = (uint64_t *)(lat + 64);
	uint64_t total = (uint64_t)lat_warm + (uint64_t)lat_batches * (uint64_t)lat_batch;
	uint64_t base = rcntr ? cntr_value() : 0;
	double v[64];
	if (command(CMD_MARK, 0, 0, 0))
		fail("the target could not start the latency test");
	send_cmd(CMD_LAT, total, 0, 0);
	uint64_t i = 0, t0 = 0;
	for (int b = -1; b < lat_batches; b++) {
		int n = b < 0 ? lat_warm : lat_batch;
		t0 = now_ns();
		for (int j = 0; j < n; j++) {
			i++;
			src[i % 64] = i;
			post(1, &src[i % 64], 8, lat_desc, them.lat_addr, them.lat_key);
			for (unsigned long k = 1; *flag != i; k++) {
				drain();
				if (!(k & 0xfffff))
					child_alive();
			}
		}
		if (b >= 0)
			v[b] = (double)(now_ns() - t0) / 1e3 / (2.0 * n);
	}
	wait_all();
	if (wait_ack())
		fail("the latency test failed on the target (see its line)");
	if (wait_cntr(base, total))
		fail("the latency test: the initiator's remote counter is off");
	double lo = v[0], hi = v[0];
	for (int b = 1; b < lat_batches; b++) {
		lo = v[b] < lo ? v[b] : lo;
		hi = v[b] > hi ? v[b] : hi;
	}
	double m = median(v, lat_batches);
	printf("lat   %8s  %9.3f us  (half round trip, median of %d x %d round trips; "
	       "batches %.3f..%.3f us)\n", "8 B", m, lat_batches, lat_batch, lo, hi);
	printf("rma %s lat_us 8 %.6g\n", prov, m);
	fflush(stdout);
}

static void initiator(void)
{
	print_info();
	if (info->ep_attr->max_msg_size < BIG)
		fail("max_msg_size %zu < 64 MiB", info->ep_attr->max_msg_size);
	big = xalloc(BIG);
	lat = xalloc(LAT_LEN);
	memset(lat, 0, LAT_LEN);
	if (mr_local)
		big_mr = reg(big, BIG, FI_READ | FI_WRITE, NULL, &big_desc);
	lat_mr = reg(lat, LAT_LEN, FI_REMOTE_WRITE | FI_REMOTE_READ | FI_WRITE | FI_READ,
		     &me.lat_key, &lat_desc);
	me.big_addr = 0; /* the target never addresses the initiator's big buffer */
	me.lat_addr = virt_addr ? (uint64_t)(uintptr_t)lat : 0;
	exchange();
	printf("peer inserted with %s%s%s\n", av_how, info->addr_format == FI_ADDR_STR ? ": " : "",
	       info->addr_format == FI_ADDR_STR ? (const char *)them.addr : "");

	for (size_t i = 0; i < nsizes; i++)
		bw_test(1, sizes[i], (int)i);
	for (size_t i = 0; i < nsizes; i++)
		bw_test(0, sizes[i], (int)i);
	lat_test();
	if (command(CMD_EXIT, 0, 0, 0))
		fail("the target failed at exit");
	wait_all();
}

static void rma_main(void)
{
	int p2c[2], c2p[2];
	if (pipe(p2c) || pipe(c2p)) {
		perror("pipe");
		exit(1);
	}
	ctl = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED) {
		perror("mmap(shared)");
		exit(1);
	}
	memset(ctl, 0, sizeof(*ctl));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	arm_alarm();
	if (pid == 0) {
		role = "target";
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd_in = p2c[0];
		fd_out = c2p[1];
		close(p2c[1]);
		close(c2p[0]);
		open_all();
		target();
	} else {
		role = "initiator";
		child = pid;
		fd_in = c2p[0];
		fd_out = p2c[1];
		close(c2p[1]);
		close(p2c[0]);
		open_all();
		initiator();
	}

	close_fid(&ep->fid, "fi_close(ep)");
	if (big_mr)
		close_fid(&big_mr->fid, "fi_close(big mr)");
	close_fid(&lat_mr->fid, "fi_close(lat mr)");
	if (rcntr)
		close_fid(&rcntr->fid, "fi_close(cntr)");
	close_fid(&cq->fid, "fi_close(cq)");
	close_fid(&av->fid, "fi_close(av)");
	close_fid(&domain->fid, "fi_close(domain)");
	close_fid(&fabric->fid, "fi_close(fabric)");
	fi_freeinfo(info);

	if (pid == 0)
		exit(0);
	int status;
	if (waitpid(child, &status, 0) != child) {
		perror("waitpid");
		exit(1);
	}
	child = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail("the target exited with status 0x%x", status);
	printf("done %s\n", prov);
}

/* ------------------------------------------------------------ ceiling ---- */

/* kind 0: memcpy src -> dst; 1: process_vm_writev local -> remote; 2: readv.
 * Copies bytes [part, part + plen) of each size-long slot (plen 0: all of
 * it) for about secs; returns the bytes copied, and the time in *ns. */
static uint64_t copy_part(int kind, char *dst, char *src, pid_t pid, char *remote, size_t size,
			  size_t part, size_t plen, double secs, uint64_t *ns)
{
	size_t slots = slots_for(size);
	if (!plen)
		plen = size;
	uint64_t n = 0, t0 = now_ns(), deadline = t0 + (uint64_t)(secs * 1e9);
	for (;;) {
		size_t off = (size_t)(n % slots) * size + part;
		if (kind == 0) {
			memcpy(dst + off, src + off, plen);
			__asm__ __volatile__("" ::: "memory");
		} else {
			char *local = kind == 1 ? src : dst;
			struct iovec l = { .iov_base = local + off, .iov_len = plen };
			struct iovec r = { .iov_base = remote + off, .iov_len = plen };
			ssize_t got = kind == 1 ? process_vm_writev(pid, &l, 1, &r, 1, 0)
						: process_vm_readv(pid, &l, 1, &r, 1, 0);
			if (got != (ssize_t)plen) {
				fprintf(stderr, "rma_bench[ceiling]: %s of %zu bytes returned %zd "
					"(%s)\n", kind == 1 ? "process_vm_writev" :
					"process_vm_readv", plen, got, strerror(errno));
				exit(1);
			}
		}
		n++;
		if ((size >= 4 * KiB || !(n & 15)) && now_ns() >= deadline)
			break;
	}
	*ns = now_ns() - t0;
	return n * plen;
}

static double copy_run(int kind, char *dst, char *src, pid_t pid, char *remote, size_t size,
		       double secs)
{
	uint64_t ns;
	uint64_t bytes = copy_part(kind, dst, src, pid, remote, size, 0, 0, secs, &ns);
	return (double)bytes / (double)ns;
}

/* The ceiling child's commands (size 0: exit). HALVES: copy the second
 * half of each slot from the parent's `src` with process_vm_readv for
 * `secs`, while the parent writes the first half into the child with
 * process_vm_writev. PIPE: copy the slots the parent streams through the
 * shared ring out into the child's buffer until the parent stops. */
enum { HALVES, PIPE };
struct half_cmd {
	uint64_t size, src;
	double secs;
	int kind;
};
struct half_res {
	uint64_t bytes, ns;
};

/* A single-producer ring of 4 KiB cells in shared memory, as a plain
 * two-process pipe: the parent copies each slot in, piece by piece, the
 * child copies it out. What any copy through shared memory gets here. */
#define PIPE_CELLS 256
#define PIPE_CELL 4096
struct pipe_ring {
	_Atomic uint64_t tail __attribute__((aligned(128)));
	_Atomic uint64_t head __attribute__((aligned(128)));
	_Atomic uint64_t stop __attribute__((aligned(128))); /* final tail + 1, or 0 */
	char cell[PIPE_CELLS][PIPE_CELL] __attribute__((aligned(4096)));
};
static struct pipe_ring *ring;

/* The piece of the stream that cell `k` carries for slots of `size`: its
 * offset in the buffer and its length (slots cut into cell-sized pieces). */
static size_t pipe_piece(uint64_t k, size_t size, size_t *len)
{
	size_t per = (size + PIPE_CELL - 1) / PIPE_CELL;
	uint64_t slot = k / per, part = k % per;
	size_t at = (size_t)part * PIPE_CELL;
	*len = size - at < PIPE_CELL ? size - at : PIPE_CELL;
	return (size_t)(slot % slots_for(size)) * size + at;
}

/* Child: drains the ring into buf until the parent's stop mark. */
static uint64_t pipe_drain(char *buf, size_t size)
{
	uint64_t h = 0, bytes = 0;
	for (;;) {
		uint64_t t = atomic_load_explicit(&ring->tail, memory_order_acquire);
		if (h == t) {
			uint64_t st = atomic_load_explicit(&ring->stop, memory_order_acquire);
			if (st && h == st - 1)
				return bytes;
			continue;
		}
		size_t len, at = pipe_piece(h, size, &len);
		memcpy(buf + at, ring->cell[h % PIPE_CELLS], len);
		bytes += len;
		h++;
		atomic_store_explicit(&ring->head, h, memory_order_release);
	}
}

/* Parent: streams slots of `size` through the ring for `secs`; GB/s of
 * the bytes the child copied out. */
static double pipe_run(int to_child, int from_child, char *src, size_t size, double secs)
{
	struct half_cmd c = { size, 0, secs, PIPE };
	struct half_res r;
	atomic_store(&ring->tail, 0);
	atomic_store(&ring->head, 0);
	atomic_store(&ring->stop, 0);
	write_all(to_child, &c, sizeof(c));
	uint64_t t = 0, t0 = now_ns(), deadline = t0 + (uint64_t)(secs * 1e9);
	for (;;) {
		while (t - atomic_load_explicit(&ring->head, memory_order_acquire) >= PIPE_CELLS)
			;
		size_t len, at = pipe_piece(t, size, &len);
		memcpy(ring->cell[t % PIPE_CELLS], src + at, len);
		t++;
		atomic_store_explicit(&ring->tail, t, memory_order_release);
		if (!(t & 15) && now_ns() >= deadline)
			break;
	}
	atomic_store_explicit(&ring->stop, t + 1, memory_order_release);
	read_all(from_child, &r, sizeof(r));
	return (double)r.bytes / (double)(now_ns() - t0);
}

/* Both processes copying a half of each slot at once (as oxshm's shared
 * copies do): GB/s of the two together. */
static double two_halves(int to_child, int from_child, pid_t pid, char *src, char *remote,
			 size_t size, double secs)
{
	struct half_cmd c = { size, (uint64_t)(uintptr_t)src, secs, HALVES };
	struct half_res r;
	uint64_t ns;
	size_t half = size / 2;
	write_all(to_child, &c, sizeof(c));
	uint64_t bytes = copy_part(1, NULL, src, pid, remote, size, 0, half, secs, &ns);
	read_all(from_child, &r, sizeof(r));
	return (double)(bytes + r.bytes) / (double)(ns > r.ns ? ns : r.ns);
}

/* probe: the shared-memory pipe alone, at 16 KiB (see the usage above). */
static void ceiling(int probe)
{
	prov = "ceiling";
	role = "ceiling";
	arm_alarm();
	int p2c[2], c2p[2];
	ring = mmap(NULL, sizeof(*ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ring == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	ring = mmap(NULL, sizeof(*ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ring == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	if (pipe(p2c) || pipe(c2p)) {
		perror("pipe");
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		arm_alarm();
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p2c[1]);
		close(c2p[0]);
		char *buf = xalloc(BIG);
		uint64_t a = (uint64_t)(uintptr_t)buf;
		write_all(c2p[1], &a, sizeof(a));
		struct half_cmd c;
		for (;;) {
			read_all(p2c[0], &c, sizeof(c));
			if (!c.size)
				_exit(0);
			struct half_res r = { 0, 0 };
			size_t half = c.size / 2;
			if (c.kind == PIPE)
				r.bytes = pipe_drain(buf, c.size);
			else
				r.bytes = copy_part(2, buf, NULL, getppid(),
						    (char *)(uintptr_t)c.src, c.size, half,
						    c.size - half, c.secs, &r.ns);
			write_all(c2p[1], &r, sizeof(r));
		}
	}
	close(p2c[0]);
	close(c2p[1]);
	/* The child reads from us in the halves ceiling (Yama ptrace_scope 1
	 * lets only an ancestor attach without this). */
	prctl(PR_SET_PTRACER, (unsigned long)pid, 0, 0, 0);
	/* Allocated after the fork: no copy-on-write faults in the timed loops. */
	char *src = xalloc(BIG), *dst = xalloc(BIG);
	fill(src, BIG, 7);
	uint64_t a;
	read_all(c2p[0], &a, sizeof(a));
	char *remote = (char *)(uintptr_t)a;

	static const char *names[] = { "memcpy", "pvwritev", "pvreadv", "pvhalves", "shmpipe" };
	static const size_t probe_size[] = { 16 * KiB };
	if (probe) {
		sizes = probe_size;
		nsizes = 1;
		warm_s = 0.01;
		run_s = 0.05;
	}
	for (int kind = probe ? 4 : 0; kind < 5; kind++) {
		for (size_t i = 0; i < nsizes; i++) {
			char name[32];
			size_name(sizes[i], name, sizeof(name));
			double g;
			if (kind == 3) {
				two_halves(p2c[1], c2p[0], pid, src, remote, sizes[i], warm_s);
				g = two_halves(p2c[1], c2p[0], pid, src, remote, sizes[i], run_s);
			} else if (kind == 4) {
				pipe_run(p2c[1], c2p[0], src, sizes[i], warm_s);
				g = pipe_run(p2c[1], c2p[0], src, sizes[i], run_s);
			} else {
				copy_run(kind, dst, src, pid, remote, sizes[i], warm_s);
				g = copy_run(kind, dst, src, pid, remote, sizes[i], run_s);
			}
			printf("%-8s %8s  %9.3f GB/s\n", names[kind], name, g);
			printf("ceiling %s %zu %.6g\n", names[kind], sizes[i], g);
			fflush(stdout);
		}
	}
	struct half_cmd stop = { 0, 0, 0, HALVES };
	write_all(p2c[1], &stop, sizeof(stop));
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "rma_bench[ceiling]: the child failed\n");
		exit(1);
	}
	printf("done ceiling\n");
}

int main(int argc, char **argv)
{
	int ceil_mode = 0;
	const char *p = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-q"))
			quick = 1;
		else if (!strcmp(argv[i], "-ceiling"))
			ceil_mode = 1;
		else if (!strcmp(argv[i], "-probe"))
			ceil_mode = 2;
		else if (argv[i][0] != '-' && !p)
			p = argv[i];
		else
			p = NULL, ceil_mode = -1;
	}
	if (ceil_mode < 0 || (!ceil_mode && !p) || (ceil_mode && p)) {
		fprintf(stderr, "usage: rma_bench [-q] PROVIDER | rma_bench [-q] -ceiling | rma_bench -probe\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (quick) {
		sizes = sizes_quick;
		nsizes = sizeof(sizes_quick) / sizeof(sizes_quick[0]);
		warm_s = 0.02;
		run_s = 0.1;
		lat_batches = 5;
		lat_batch = 500;
		lat_warm = 500;
	}
	/* RMA_BENCH_SIZES=8,65536: only these sizes (a comma-separated list,
	 * each at most BIG), to look at a few of them closely. */
	static size_t sizes_env[16];
	const char *only = getenv("RMA_BENCH_SIZES");
	if (only && *only) {
		size_t n = 0;
		for (char *end; *only && n < 16; only = *end ? end + 1 : end) {
			unsigned long long v = strtoull(only, &end, 0);
			if (end == only || v == 0 || v > BIG || (*end && *end != ',')) {
				fprintf(stderr, "rma_bench: RMA_BENCH_SIZES: bad size list\n");
				return 2;
			}
			sizes_env[n++] = (size_t)v;
		}
		sizes = sizes_env;
		nsizes = n;
	}
	if (ceil_mode) {
		ceiling(ceil_mode == 2);
		return 0;
	}
	prov = p;
	rma_main();
	return 0;
}
