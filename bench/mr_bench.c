/*
 * mr_bench.c: memory-registration costs of one libfabric provider.
 *
 * Built once against upstream's headers (Debian's libfabric 1.17) and linked
 * against Debian's libfabric.so.1; bench/run.sh runs the same binary on
 * oxfabric (LD_LIBRARY_PATH=build, provider oxshm) and on Debian's library
 * (provider shm) and prints the ratios. This program measures one provider
 * per run and prints `value <metric> <number> <unit>` lines for run.sh:
 *
 *   memcpy_4k, memcpy_64k      memcpy reference (ns per copy)
 *   pair_4k ... pair_64m       fi_mr_reg + fi_close of one buffer (ns per pair)
 *   regv4_pair                 fi_mr_regv of 4 iovs + fi_close (ns per pair)
 *   fill_100k                  registering the first 100,000 MRs (ns per reg)
 *   bytes_per_mr               RSS growth over those 100,000 MRs / 100,000
 *   reg_live100k               fi_mr_reg with 100,000 MRs live (ns per reg)
 *   close_live100k             fi_close with 100,000 MRs live (ns per close)
 *   close_all_100k             closing the 100,000 (ns per close)
 *   rss_domain                 RSS growth of fi_domain itself (bytes)
 *
 * Every figure is the median of several timed batches (CLOCK_MONOTONIC); a
 * batch is sized to take about 2 ms. Buffers are allocated and touched once
 * before anything is timed. Every libfabric return code is checked: a
 * failure prints fi_strerror and exits 1, so a run never reports a figure
 * it did not measure.
 *
 * usage: mr_bench [-q] PROVIDER      (-q: fewer batches, for a smoke test)
 */
#define _GNU_SOURCE

#include <link.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

/* run.sh states which header set the build must see; a mix-up fails here. */
#if defined(BENCH_EXPECT_MAJOR) && \
	(FI_MAJOR_VERSION != BENCH_EXPECT_MAJOR || FI_MINOR_VERSION != BENCH_EXPECT_MINOR)
#error "compiled against the wrong header set"
#endif

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* MRs kept live for the scale and memory figures. */
#define N_LIVE 100000
/* MRs registered and closed per timed batch at that scale. */
#define N_SCALE_BATCH 1000
/* Bytes between the start addresses of the live MRs (each is 4 KiB long). */
#define LIVE_STRIDE 64
/* Time one calibrated batch should take. */
#define BATCH_NS 2e6
#define MAX_BATCH ((size_t)1 << 20)

static const char *prov;
static int reps = 31;        /* timed batches per small-op figure */
static int scale_reps = 21;  /* timed batches at 100,000 live MRs */

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static int prov_key;         /* FI_MR_PROV_KEY negotiated: no requested keys */
static uint64_t next_key = 1000;
static const uint64_t access_bits = FI_REMOTE_READ | FI_REMOTE_WRITE;

static void die(const char *what, int rc, int line)
{
	fprintf(stderr, "mr_bench[%s]: line %d: %s returned %d (%s)\n", prov, line, what,
		rc, rc < 0 ? fi_strerror(-rc) : "unexpected");
	exit(1);
}

#define FI_CHECK(expr)                                                     \
	do {                                                               \
		int rc_ = (int)(expr);                                     \
		if (rc_)                                                   \
			die(#expr, rc_, __LINE__);                         \
	} while (0)

static void *xalloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
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

static long rss_bytes(void)
{
	long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2) {
		perror("/proc/self/statm");
		exit(1);
	}
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
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

static inline uint64_t key(void)
{
	return prov_key ? 0 : next_key++;
}

static inline struct fid_mr *reg(void *buf, size_t len)
{
	struct fid_mr *mr = NULL;
	int rc = fi_mr_reg(domain, buf, len, access_bits, 0, key(), 0, &mr, NULL);
	if (rc || !mr)
		die("fi_mr_reg", rc ? rc : -FI_EOTHER, __LINE__);
	return mr;
}

static inline void unreg(struct fid_mr *mr)
{
	int rc = fi_close(&mr->fid);
	if (rc)
		die("fi_close(mr)", rc, __LINE__);
}

/* ------------------------------------------------------ timed batches ---- */

struct op {
	void (*run)(struct op *op, size_t n);
	void *buf, *dst;
	size_t len;
	struct iovec iov[4];
};

static void op_memcpy(struct op *op, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		memcpy(op->dst, op->buf, op->len);
		__asm__ __volatile__("" ::: "memory");
	}
}

static void op_pair(struct op *op, size_t n)
{
	for (size_t i = 0; i < n; i++)
		unreg(reg(op->buf, op->len));
}

static void op_regv4(struct op *op, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fid_mr *mr = NULL;
		int rc = fi_mr_regv(domain, op->iov, 4, access_bits, 0, key(), 0, &mr, NULL);
		if (rc || !mr)
			die("fi_mr_regv", rc ? rc : -FI_EOTHER, __LINE__);
		unreg(mr);
	}
}

static double time_batch(struct op *op, size_t n)
{
	uint64_t t0 = now_ns();
	op->run(op, n);
	return (double)(now_ns() - t0);
}

/* Median ns per op over `reps` batches of a size that takes ~BATCH_NS. */
static double measure(struct op *op)
{
	size_t n = 1;
	while (n < MAX_BATCH && time_batch(op, n) < BATCH_NS)
		n *= 2;
	time_batch(op, n); /* warm-up at the final size */
	double v[64];
	for (int r = 0; r < reps; r++)
		v[r] = time_batch(op, n) / (double)n;
	return median(v, reps);
}

static void value(const char *metric, double v, const char *unit)
{
	printf("value %s %.1f %s\n", metric, v, unit);
	fflush(stdout);
}

/* ------------------------------------------------------------- setup ---- */

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
	char mode[256] = "", caps[1024] = "";
	const char *s = fi_tostr(&d->mr_mode, FI_TYPE_MR_MODE);
	snprintf(mode, sizeof(mode), "%s", !s ? "?" : *s ? s : "(none)");
	s = fi_tostr(&info->caps, FI_TYPE_CAPS);
	snprintf(caps, sizeof(caps), "%s", s ? s : "?");
	printf("negotiated prov %s fabric %s domain %s ep_type %d\n",
	       info->fabric_attr->prov_name, info->fabric_attr->name, d->name,
	       info->ep_attr ? (int)info->ep_attr->type : -1);
	printf("negotiated caps %s\n", caps);
	printf("negotiated mr_mode 0x%x %s\n", (unsigned)d->mr_mode, mode);
	printf("negotiated mr_key_size %zu mr_iov_limit %zu mr_cnt %zu keys %s\n",
	       d->mr_key_size, d->mr_iov_limit, d->mr_cnt,
	       prov_key ? "provider (FI_MR_PROV_KEY)" : "requested, distinct per MR");
	fflush(stdout);
}

/*
 * fi_getinfo for the named provider. The benchmark supports every mr_mode
 * bit that only constrains how it registers (it registers allocated,
 * touched memory, passes virtual addresses and never uses a local
 * descriptor); FI_MR_ENDPOINT and FI_MR_RMA_EVENT are left out because they
 * need bind/enable steps outside what is measured. A provider clears the
 * bits it does not need. RMA caps are asked for first (upstream's shm
 * offers them); a provider without them is asked again with no caps.
 */
static void open_domain(void)
{
	static const uint64_t caps_try[] = { FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE, 0 };
	int rc = -FI_ENODATA;
	for (size_t i = 0; i < sizeof(caps_try) / sizeof(caps_try[0]) && rc == -FI_ENODATA; i++) {
		struct fi_info *hints = fi_allocinfo();
		if (!hints)
			die("fi_allocinfo", -FI_ENOMEM, __LINE__);
		hints->fabric_attr->prov_name = strdup(prov);
		hints->caps = caps_try[i];
		hints->ep_attr->type = FI_EP_RDM;
		hints->domain_attr->mr_mode =
			FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
		rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0,
				hints, &info);
		fi_freeinfo(hints);
	}
	if (rc) {
		fprintf(stderr, "mr_bench[%s]: no provider %s matched the hints (mr_mode "
			"LOCAL|VIRT_ADDR|ALLOCATED|PROV_KEY, ep FI_EP_RDM)\n", prov, prov);
		die("fi_getinfo", rc, __LINE__);
	}
	if (!info)
		die("fi_getinfo (no info)", -FI_ENODATA, __LINE__);
	prov_key = (info->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
	if (info->domain_attr->mr_mode & (FI_MR_ENDPOINT | FI_MR_RMA_EVENT | FI_MR_RAW)) {
		fprintf(stderr, "mr_bench[%s]: negotiated mr_mode 0x%x needs steps this "
			"benchmark does not take\n", prov, (unsigned)info->domain_attr->mr_mode);
		exit(1);
	}
	if (info->domain_attr->mr_iov_limit && info->domain_attr->mr_iov_limit < 4) {
		fprintf(stderr, "mr_bench[%s]: mr_iov_limit %zu < 4\n", prov,
			info->domain_attr->mr_iov_limit);
		exit(1);
	}
	print_info();
	FI_CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	malloc_trim(0);
	long before = rss_bytes();
	FI_CHECK(fi_domain(fabric, info, &domain, NULL));
	value("rss_domain", (double)(rss_bytes() - before), "bytes");
}

static void close_domain(void)
{
	FI_CHECK(fi_close(&domain->fid));
	FI_CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
}

/* --------------------------------------------------------- the figures ---- */

static void bench_memcpy(void)
{
	struct op op = { .run = op_memcpy };
	op.buf = xalloc(64 * KiB);
	op.dst = xalloc(64 * KiB);
	op.len = 4 * KiB;
	value("memcpy_4k", measure(&op), "ns");
	op.len = 64 * KiB;
	value("memcpy_64k", measure(&op), "ns");
	munmap(op.buf, 64 * KiB);
	munmap(op.dst, 64 * KiB);
}

static void bench_pairs(void)
{
	static const struct { const char *name; size_t len; } sizes[] = {
		{ "pair_4k", 4 * KiB }, { "pair_64k", 64 * KiB },
		{ "pair_1m", 1 * MiB }, { "pair_64m", 64 * MiB },
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct op op = { .run = op_pair, .len = sizes[i].len };
		op.buf = xalloc(sizes[i].len);
		value(sizes[i].name, measure(&op), "ns");
		munmap(op.buf, sizes[i].len);
	}
}

static void bench_regv(void)
{
	struct op op = { .run = op_regv4 };
	char *buf = xalloc(64 * KiB);
	for (int i = 0; i < 4; i++) /* four separate 4 KiB pieces */
		op.iov[i] = (struct iovec){ .iov_base = buf + (size_t)i * 16 * KiB,
					    .iov_len = 4 * KiB };
	value("regv4_pair", measure(&op), "ns");
	munmap(buf, 64 * KiB);
}

static void bench_scale(void)
{
	size_t n_all = N_LIVE + N_SCALE_BATCH;
	size_t len = n_all * LIVE_STRIDE + 4 * KiB;
	char *buf = xalloc(len);
	struct fid_mr **mrs = xalloc(n_all * sizeof(*mrs));
	double vr[64], vc[64];

	/* Everything the benchmark itself needs is allocated and touched. */
	malloc_trim(0);
	long before = rss_bytes();
	uint64_t t0 = now_ns();
	for (size_t i = 0; i < N_LIVE; i++)
		mrs[i] = reg(buf + i * LIVE_STRIDE, 4 * KiB);
	uint64_t t1 = now_ns();
	long after = rss_bytes();
	value("fill_100k", (double)(t1 - t0) / N_LIVE, "ns");
	value("bytes_per_mr", (double)(after - before) / N_LIVE, "bytes");

	struct fid_mr **extra = mrs + N_LIVE;
	char *xbuf = buf + (size_t)N_LIVE * LIVE_STRIDE;
	for (int r = -1; r < scale_reps; r++) { /* r == -1: warm-up */
		uint64_t a = now_ns();
		for (size_t i = 0; i < N_SCALE_BATCH; i++)
			extra[i] = reg(xbuf + i * LIVE_STRIDE, 4 * KiB);
		uint64_t b = now_ns();
		for (size_t i = 0; i < N_SCALE_BATCH; i++)
			unreg(extra[i]);
		uint64_t c = now_ns();
		if (r >= 0) {
			vr[r] = (double)(b - a) / N_SCALE_BATCH;
			vc[r] = (double)(c - b) / N_SCALE_BATCH;
		}
	}
	value("reg_live100k", median(vr, scale_reps), "ns");
	value("close_live100k", median(vc, scale_reps), "ns");

	t0 = now_ns();
	for (size_t i = 0; i < N_LIVE; i++)
		unreg(mrs[i]);
	t1 = now_ns();
	value("close_all_100k", (double)(t1 - t0) / N_LIVE, "ns");
	munmap(mrs, n_all * sizeof(*mrs));
	munmap(buf, len);
}

int main(int argc, char **argv)
{
	int a = 1;
	if (a < argc && strcmp(argv[a], "-q") == 0) {
		reps = 5;
		scale_reps = 3;
		a++;
	}
	if (a + 1 != argc) {
		fprintf(stderr, "usage: %s [-q] PROVIDER   (oxshm, shm, ...)\n", argv[0]);
		return 2;
	}
	prov = argv[a];
	printf("mr_bench: provider %s, %d batches per figure, %d at 100,000 live MRs\n", prov,
	       reps, scale_reps);
	open_domain();
	bench_memcpy();
	bench_pairs();
	bench_regv();
	bench_scale();
	close_domain();
	printf("mr_bench: done\n");
	return 0;
}
