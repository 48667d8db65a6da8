/*
 * struct fi_mr_attr and the flags that depend on the domain: fields read
 * only as far as the application's API version defines them (the struct is
 * put against a PROT_NONE guard page), dma-buf registrations, HMEM ifaces,
 * flags that need FI_HMEM or FI_AV_AUTH_KEY, authorization keys, page_size.
 */
#include "test.h"

#include <dlfcn.h>
#include <stddef.h>
#include <sys/mman.h>

#define SENTINEL ((struct fid_mr *)(uintptr_t)0x5e5e5e50)
#define RW (FI_REMOTE_READ | FI_REMOTE_WRITE)
#define WARN "FI_LOG_LEVEL=warn"

/* Flags some header sets lack; the values are the ABI's. */
#ifdef FI_MR_DMABUF
#define MR_DMABUF FI_MR_DMABUF
#else
#define MR_DMABUF (1ULL << 40)
#endif
#ifdef FI_AUTH_KEY
#define AUTH_KEY_FLAG FI_AUTH_KEY
#else
#define AUTH_KEY_FLAG (1ULL << 57)
#endif

/* Where each API version's struct ends (1.17's struct ends at hmem_data). */
#if TEST_HDR_AT_LEAST(2, 0)
#define OFF_HMEM_DATA offsetof(struct fi_mr_attr, hmem_data)
#define OFF_PAGE_SIZE offsetof(struct fi_mr_attr, page_size)
#define OFF_BASE_MR offsetof(struct fi_mr_attr, base_mr)
#else
#define OFF_HMEM_DATA sizeof(struct fi_mr_attr)
#endif

static char buf[2][4096];

/* ---- opening domains ---- */

/* Opens oxshm at API `version` with `caps` requested (0: the default). */
static int open_at(struct test_res *r, uint32_t version, uint64_t caps)
{
	struct fi_info *hints = test_hints();
	hints->caps = caps;
	memset(r, 0, sizeof(*r));
	int rc = fi_getinfo(version, NULL, NULL, 0, hints, &r->info);
	fi_freeinfo(hints);
	CHECK_OK(rc);
	CHECK_OK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	CHECK_OK(fi_domain(r->fabric, r->info, &r->domain, NULL));
	return 0;
}

static int open_hmem(struct test_res *r)
{
	CHECK_OK(open_at(r, TEST_HDR_VERSION, FI_HMEM | FI_LOCAL_COMM));
	CHECK(r->info->caps & FI_HMEM);
	return 0;
}

/* A domain without FI_HMEM: caps requested without it, and (so that these
 * cases test the registration checks whatever fi_getinfo reports in
 * domain_attr->caps; see nohmem_info_caps) FI_HMEM cleared from the domain
 * caps too before fi_domain. */
static int open_nohmem(struct test_res *r)
{
	struct fi_info *hints = test_hints();
	hints->caps = FI_LOCAL_COMM;
	memset(r, 0, sizeof(*r));
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &r->info);
	fi_freeinfo(hints);
	CHECK_OK(rc);
	CHECK(!(r->info->caps & FI_HMEM));
	r->info->domain_attr->caps &= ~FI_HMEM;
	CHECK_OK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	CHECK_OK(fi_domain(r->fabric, r->info, &r->domain, NULL));
	return 0;
}

static struct fi_mr_attr attr_for(const struct iovec *iov, uint64_t access, uint64_t key)
{
	struct fi_mr_attr a;
	memset(&a, 0, sizeof(a));
	a.mr_iov = iov;
	a.iov_count = 1;
	a.access = access;
	a.requested_key = key;
	return a;
}

/* ---- stderr capture (as test_badinput.c) ---- */

static int saved_fd = -1;
static FILE *capture;

static void capture_begin(void)
{
	fflush(stderr);
	capture = tmpfile();
	if (!capture)
		abort();
	saved_fd = dup(2);
	dup2(fileno(capture), 2);
}

static char *capture_end(void)
{
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	long n = ftell(capture);
	char *text = calloc(1, n > 0 ? (size_t)n + 1 : 1);
	if (!text)
		abort();
	rewind(capture);
	if (n > 0 && fread(text, 1, (size_t)n, capture) != (size_t)n)
		text[0] = '\0';
	fclose(capture);
	return text;
}

/* ---- API versions: the struct against a guard page ---- */

/* Bytes of struct fi_mr_attr that exist at API `v`. */
static size_t attr_len(uint32_t v)
{
	if (v < FI_VERSION(1, 5))
		return offsetof(struct fi_mr_attr, auth_key_size);
	if (v < FI_VERSION(1, 10))
		return offsetof(struct fi_mr_attr, iface);
	if (v < FI_VERSION(1, 19))
		return OFF_HMEM_DATA;
#if TEST_HDR_AT_LEAST(2, 0)
	if (v < FI_VERSION(1, 22))
		return OFF_PAGE_SIZE;
	if (v < FI_VERSION(2, 0))
		return OFF_BASE_MR;
#endif
	return sizeof(struct fi_mr_attr);
}

/* Two pages, the second PROT_NONE; returns the first page's end. */
static char *guarded(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p + page, page, PROT_NONE))
		abort();
	return p + page;
}

static void unguard(char *end)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	munmap(end - page, 2 * page);
}

/* A fabric opened at API `v` registers through an fi_mr_attr of exactly
 * that version's size, which ends at a PROT_NONE page: a read past it
 * faults (and kills the case). All three registration flavours, a plain
 * domain and an FI_HMEM one. */
static int old_api(uint32_t v)
{
	struct iovec iov[2] = { { buf[0], 64 }, { buf[1], 64 } };
	size_t len = attr_len(v);
	char *end = guarded();
	struct fi_mr_attr *a = (struct fi_mr_attr *)(end - len);
	for (int hmem = 0; hmem < 2; hmem++) {
		struct test_res r;
		struct fid_mr *mr = NULL;
		CHECK_OK(open_at(&r, v, hmem ? FI_HMEM | FI_LOCAL_COMM : FI_LOCAL_COMM));
		CHECK(r.info->fabric_attr->api_version == v);
		memset(a, 0, len);
		a->mr_iov = iov;
		a->iov_count = 2;
		a->access = RW;
		a->requested_key = 42;
		a->context = buf;
		CHECK_OK(fi_mr_regattr(r.domain, a, 0, &mr));
		CHECK(fi_mr_key(mr) == 42);
		CHECK(mr->fid.context == buf);
		CHECK_OK(fi_close(&mr->fid));
		/* Refusals read no further either. */
		a->iov_count = 0;
		CHECK_RC(fi_mr_regattr(r.domain, a, 0, &mr), -FI_EINVAL);
		a->iov_count = 1;
		a->offset = 1;
		CHECK_RC(fi_mr_regattr(r.domain, a, 0, &mr), -FI_EINVAL);
		a->offset = 0;
		a->requested_key = FI_KEY_NOTAVAIL;
		CHECK_RC(fi_mr_regattr(r.domain, a, 0, &mr), -FI_EKEYREJECTED);
		CHECK_OK(test_close(&r));
	}
	unguard(end);
	return 0;
}

#define OLD_API(maj, min) \
	static int old_api_##maj##_##min(void) { return old_api(FI_VERSION(maj, min)); }
OLD_API(1, 4)
OLD_API(1, 5)
OLD_API(1, 9)
OLD_API(1, 10)
OLD_API(1, 17)
#if TEST_HDR_AT_LEAST(2, 0)
OLD_API(1, 18)
OLD_API(1, 19)
OLD_API(1, 21)
OLD_API(1, 22)
OLD_API(2, 0)
#endif

static int api_headers(void) { return old_api(TEST_HDR_VERSION); }

/* Fields of a later version are ignored below it: an auth key that would
 * be refused (size without a pointer) is not read at API 1.4. */
static int old_api_ignores_auth_key(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.auth_key_size = 5;
	a.auth_key = NULL;
	CHECK_OK(open_at(&r, FI_VERSION(1, 4), 0));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(test_close(&r));
	CHECK_OK(open_at(&r, TEST_HDR_VERSION, 0));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	return test_close(&r);
}

/* iface exists from 1.10: an unknown iface is not read at 1.9. */
static int old_api_ignores_iface(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.iface = (enum fi_hmem_iface)99;
	CHECK_OK(open_at(&r, FI_VERSION(1, 9), FI_HMEM | FI_LOCAL_COMM));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(test_close(&r));
	CHECK_OK(open_at(&r, TEST_HDR_VERSION, FI_HMEM | FI_LOCAL_COMM));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	return test_close(&r);
}

#if TEST_HDR_AT_LEAST(2, 0)
/* hmem_data exists from 1.19. */
static int old_api_ignores_hmem_data(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.hmem_data = buf[1];
	CHECK_OK(open_at(&r, FI_VERSION(1, 18), 0));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(test_close(&r));
	CHECK_OK(open_at(&r, FI_VERSION(1, 19), 0));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	return test_close(&r);
}

/* page_size exists from 1.22. */
static int old_api_ignores_page_size(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.page_size = 12345;
	CHECK_OK(open_at(&r, FI_VERSION(1, 21), 0));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(test_close(&r));
	CHECK_OK(open_at(&r, FI_VERSION(1, 22), 0));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	return test_close(&r);
}

/* base_mr exists from 2.0: at 1.22 a bogus base_mr is not read. */
static int old_api_ignores_base_mr(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL, fake;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	memset(&fake, 0, sizeof(fake));
	a.base_mr = &fake;
	a.sub_mr_cnt = 3;
	CHECK_OK(open_at(&r, FI_VERSION(1, 22), 0));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(test_close(&r));
	CHECK_OK(open_at(&r, FI_VERSION(2, 0), 0));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	return test_close(&r);
}
#endif

/* ---- FI_MR_DMABUF ---- */

#if TEST_HDR_AT_LEAST(2, 0)
struct dmabuf_res {
	int fd;
	size_t size;
	char *map;
};

/* A memfd of `size` bytes, mapped: what a dma-buf exporter would give. */
static int dmabuf_make(struct dmabuf_res *d, size_t size)
{
	d->fd = memfd_create("oxfabric-test", 0);
	CHECK(d->fd >= 0);
	CHECK_OK(ftruncate(d->fd, (off_t)size));
	d->size = size;
	d->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, 0);
	CHECK(d->map != MAP_FAILED);
	return 0;
}

static void dmabuf_free(struct dmabuf_res *d)
{
	munmap(d->map, d->size);
	close(d->fd);
}

static struct fi_mr_attr dmabuf_attr(const struct fi_mr_dmabuf *db, uint64_t key)
{
	struct fi_mr_attr a;
	memset(&a, 0, sizeof(a));
	a.dmabuf = db;
	a.iov_count = 1;
	a.access = RW;
	a.requested_key = key;
	return a;
}

static int dmabuf_registers(void)
{
	struct test_res r;
	struct dmabuf_res d;
	struct fid_mr *mr = NULL;
	CHECK_OK(dmabuf_make(&d, 2 * 4096));
	CHECK_OK(open_hmem(&r));
	struct fi_mr_dmabuf db = { .fd = d.fd, .offset = 0, .len = d.size, .base_addr = d.map };
	struct fi_mr_attr a = dmabuf_attr(&db, 7);
	CHECK_OK(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr));
	CHECK(fi_mr_key(mr) == 7);
	CHECK(fi_mr_desc(mr) != NULL);
	CHECK_OK(fi_close(&mr->fid));
	/* A part of the buffer, from an offset. */
	db.offset = 4096;
	db.len = 4096;
	CHECK_OK(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr));
	CHECK_OK(fi_close(&mr->fid));
	db.offset = 100;
	db.len = 8092;
	CHECK_OK(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr));
	CHECK_OK(fi_close(&mr->fid));
	dmabuf_free(&d);
	return test_close(&r);
}

static int dmabuf_bad_fd(void)
{
	struct test_res r;
	struct dmabuf_res d;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(dmabuf_make(&d, 4096));
	CHECK_OK(open_hmem(&r));
	struct fi_mr_dmabuf db = { .fd = -1, .offset = 0, .len = 4096, .base_addr = d.map };
	struct fi_mr_attr a = dmabuf_attr(&db, 7);
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	/* A descriptor that is not open. */
	int closed = dup(d.fd);
	CHECK(closed >= 0);
	close(closed);
	db.fd = closed;
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	dmabuf_free(&d);
	return test_close(&r);
}

static int dmabuf_past_end(void)
{
	struct test_res r;
	struct dmabuf_res d;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(dmabuf_make(&d, 2 * 4096));
	CHECK_OK(open_hmem(&r));
	struct fi_mr_dmabuf db = { .fd = d.fd, .offset = 0, .len = d.size + 1,
				   .base_addr = d.map };
	struct fi_mr_attr a = dmabuf_attr(&db, 7);
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	db.offset = 4096;
	db.len = 4097;
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	db.offset = d.size;
	db.len = 1;
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	db.offset = UINT64_MAX - 10;
	db.len = 100;
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	dmabuf_free(&d);
	return test_close(&r);
}

static int dmabuf_bad_attr(void)
{
	struct test_res r;
	struct dmabuf_res d;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(dmabuf_make(&d, 4096));
	CHECK_OK(open_hmem(&r));
	struct fi_mr_dmabuf db = { .fd = d.fd, .offset = 0, .len = 0, .base_addr = d.map };
	struct fi_mr_attr a = dmabuf_attr(&db, 7);
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	a.dmabuf = NULL;
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	db.len = 64;
	a.dmabuf = &db;
	a.offset = 1;
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	a.offset = 0;
	a.access |= 1ULL << 14;
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	dmabuf_free(&d);
	return test_close(&r);
}

/* With FI_MR_VIRT_ADDR (required through FI_OXSHM_MR_MODE) the region
 * starts at base_addr + offset. */
static int dmabuf_virt_addr(void)
{
	struct test_res r;
	struct dmabuf_res d;
	struct fid_mr *mr = NULL;
	struct fi_info *hints = test_hints();
	hints->caps = FI_HMEM | FI_LOCAL_COMM;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR;
	memset(&r, 0, sizeof(r));
	CHECK_OK(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &r.info));
	fi_freeinfo(hints);
	CHECK(r.info->domain_attr->mr_mode == FI_MR_VIRT_ADDR);
	CHECK_OK(fi_fabric(r.info->fabric_attr, &r.fabric, NULL));
	CHECK_OK(fi_domain(r.fabric, r.info, &r.domain, NULL));
	CHECK_OK(dmabuf_make(&d, 2 * 4096));
	struct fi_mr_dmabuf db = { .fd = d.fd, .offset = 4096, .len = 4096, .base_addr = d.map };
	struct fi_mr_attr a = dmabuf_attr(&db, 7);
	CHECK_OK(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr));
	uint8_t raw[256];
	size_t n = sizeof(raw);
	uint64_t base = 0;
	CHECK_OK(fi_mr_raw_attr(mr, &base, raw, &n, 0));
	CHECK(base == (uint64_t)(uintptr_t)(d.map + 4096));
	CHECK_OK(fi_close(&mr->fid));
	dmabuf_free(&d);
	return test_close(&r);
}

/* FI_MR_DMABUF exists from API 1.20. */
static int dmabuf_needs_api_1_20(void)
{
	struct test_res r;
	struct dmabuf_res d;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(dmabuf_make(&d, 4096));
	struct fi_mr_dmabuf db = { .fd = d.fd, .offset = 0, .len = 4096, .base_addr = d.map };
	struct fi_mr_attr a = dmabuf_attr(&db, 7);
	CHECK_OK(open_at(&r, FI_VERSION(1, 19), FI_HMEM | FI_LOCAL_COMM));
	CHECK_RC(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr), -FI_EBADFLAGS);
	CHECK(mr == SENTINEL);
	CHECK_OK(test_close(&r));
	CHECK_OK(open_at(&r, FI_VERSION(1, 20), FI_HMEM | FI_LOCAL_COMM));
	CHECK_OK(fi_mr_regattr(r.domain, &a, MR_DMABUF, &mr));
	CHECK_OK(fi_close(&mr->fid));
	dmabuf_free(&d);
	return test_close(&r);
}
#endif

/* ---- HMEM ifaces ---- */

static int hmem_system(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.iface = FI_HMEM_SYSTEM;
	a.device.reserved = 12; /* ignored for FI_HMEM_SYSTEM */
	CHECK_OK(open_hmem(&r));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	/* Host-allocated memory of the system iface. */
	CHECK_OK(fi_mr_regattr(r.domain, &a, FI_HMEM_HOST_ALLOC, &mr));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* A device iface: -FI_ENOSYS without its runtime library, and a warning
 * that names the library; with the library, oxshm (host memory only)
 * answers -FI_EOPNOTSUPP. Runs with FI_LOG_LEVEL=warn. */
static int hmem_device(enum fi_hmem_iface iface, const char *lib, uint64_t flags)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.iface = iface;
	a.device.reserved = 0;
	void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
	int present = h != NULL;
	if (h)
		dlclose(h);
	CHECK_OK(open_hmem(&r));
	capture_begin();
	int rc = fi_mr_regattr(r.domain, &a, flags, &mr);
	char *log = capture_end();
	int named = strstr(log, lib) != NULL;
	if (!present && !named)
		fprintf(stderr, "    no log line naming %s; stderr was:\n%s", lib, log);
	free(log);
	CHECK_RC(rc, present ? -FI_EOPNOTSUPP : -FI_ENOSYS);
	CHECK(present || named);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int hmem_cuda(void) { return hmem_device(FI_HMEM_CUDA, "libcuda.so.1", 0); }
static int hmem_rocr(void) { return hmem_device(FI_HMEM_ROCR, "libhsa-runtime64.so.1", 0); }
static int hmem_ze(void) { return hmem_device(FI_HMEM_ZE, "libze_loader.so.1", 0); }
static int hmem_neuron(void) { return hmem_device(FI_HMEM_NEURON, "libnrt.so.1", 0); }
static int hmem_synapseai(void) { return hmem_device(FI_HMEM_SYNAPSEAI, "libSynapse.so", 0); }
static int hmem_cuda_device_only(void)
{
	return hmem_device(FI_HMEM_CUDA, "libcuda.so.1", FI_HMEM_DEVICE_ONLY);
}

static int hmem_unknown_iface(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	CHECK_OK(open_hmem(&r));
	unsigned bad[] = { 6, 99, 0x7fffffff };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a.iface = (enum fi_hmem_iface)bad[i];
		CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	}
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

/* ---- domains without FI_HMEM ---- */

/* Requesting caps without FI_HMEM gives an info (and so a domain) without
 * it: neither info->caps nor domain_attr->caps has FI_HMEM. */
static int nohmem_info_caps(void)
{
	struct fi_info *hints = test_hints(), *info = NULL;
	hints->caps = FI_LOCAL_COMM;
	CHECK_OK(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	int caps = !(info->caps & FI_HMEM), dcaps = !(info->domain_attr->caps & FI_HMEM);
	if (!dcaps)
		fprintf(stderr, "    caps 0x%llx, domain_attr->caps 0x%llx\n",
			(unsigned long long)info->caps, (unsigned long long)info->domain_attr->caps);
	fi_freeinfo(info);
	CHECK(caps);
	CHECK(dcaps);
	return 0;
}

/* The same, end to end: with the info fi_getinfo gave for caps without
 * FI_HMEM, the HMEM-only flags are refused. */
static int nohmem_flags_as_negotiated(void)
{
	struct test_res r;
	struct fi_info *hints = test_hints();
	struct fid_mr *mr = SENTINEL;
	hints->caps = FI_LOCAL_COMM;
	memset(&r, 0, sizeof(r));
	CHECK_OK(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &r.info));
	fi_freeinfo(hints);
	CHECK_OK(fi_fabric(r.info->fabric_attr, &r.fabric, NULL));
	CHECK_OK(fi_domain(r.fabric, r.info, &r.domain, NULL));
	int rc = fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, FI_HMEM_DEVICE_ONLY, &mr, NULL);
	if (rc == 0) {
		CHECK_OK(fi_close(&mr->fid));
		mr = SENTINEL;
	}
	/* Closed first, so that a failure here leaks nothing. */
	CHECK_OK(test_close(&r));
	CHECK_RC(rc, -FI_EBADFLAGS);
	CHECK(mr == SENTINEL);
	return 0;
}

/* Each of FI_HMEM_DEVICE_ONLY, FI_HMEM_HOST_ALLOC and FI_MR_DMABUF on a
 * domain without FI_HMEM: -FI_EBADFLAGS from reg, regv and regattr. */
static int nohmem_flag(uint64_t flag)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	CHECK_OK(open_nohmem(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, flag, &mr, NULL), -FI_EBADFLAGS);
	CHECK_RC(fi_mr_regv(r.domain, &iov, 1, RW, 0, 1, flag, &mr, NULL), -FI_EBADFLAGS);
	CHECK_RC(fi_mr_regattr(r.domain, &a, flag, &mr), -FI_EBADFLAGS);
	CHECK(mr == SENTINEL);
	/* Key 1 was never taken. */
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int nohmem_device_only(void) { return nohmem_flag(FI_HMEM_DEVICE_ONLY); }
static int nohmem_host_alloc(void) { return nohmem_flag(FI_HMEM_HOST_ALLOC); }
static int nohmem_dmabuf(void) { return nohmem_flag(MR_DMABUF); }

/* Without FI_HMEM iface and device are ignored (fi_mr(3) iface). */
static int nohmem_iface_ignored(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	CHECK_OK(open_nohmem(&r));
	a.iface = FI_HMEM_CUDA;
	a.device.cuda = 3;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	a.iface = (enum fi_hmem_iface)99;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* ---- authorization keys ---- */

static int auth_key_bytes(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	uint8_t key[4] = { 1, 2, 3, 4 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.auth_key_size = sizeof(key);
	a.auth_key = key;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int auth_key_null(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.auth_key_size = 4;
	a.auth_key = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

/* FI_AUTH_KEY without FI_AV_AUTH_KEY: -FI_EBADFLAGS from all three. */
static int auth_key_flag_without_av_auth_key(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, AUTH_KEY_FLAG, &mr, NULL),
		 -FI_EBADFLAGS);
	CHECK_RC(fi_mr_regv(r.domain, &iov, 1, RW, 0, 1, AUTH_KEY_FLAG, &mr, NULL),
		 -FI_EBADFLAGS);
	CHECK_RC(fi_mr_regattr(r.domain, &a, AUTH_KEY_FLAG, &mr), -FI_EBADFLAGS);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

#ifdef FI_AV_AUTH_KEY
/* A domain opened with domain_attr->auth_key_size = FI_AV_AUTH_KEY. */
static int open_av_auth_key(struct test_res *r)
{
	struct fi_info *hints = test_hints();
	hints->domain_attr->auth_key_size = FI_AV_AUTH_KEY;
	memset(r, 0, sizeof(*r));
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &r->info);
	hints->domain_attr->auth_key_size = 0;
	fi_freeinfo(hints);
	CHECK_OK(rc);
	CHECK_OK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	size_t was = r->info->domain_attr->auth_key_size;
	r->info->domain_attr->auth_key_size = FI_AV_AUTH_KEY;
	rc = fi_domain(r->fabric, r->info, &r->domain, NULL);
	r->info->domain_attr->auth_key_size = was;
	CHECK_OK(rc);
	return 0;
}

static int av_auth_key_reg_refused(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	CHECK_OK(open_av_auth_key(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL), -FI_ENOSYS);
	CHECK_RC(fi_mr_regv(r.domain, &iov, 1, RW, 0, 1, 0, &mr, NULL), -FI_ENOSYS);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int av_auth_key_wrong_size(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_auth_key k = { .av = NULL, .src_addr = 0 };
	uint8_t big[64] = { 0 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	CHECK_OK(open_av_auth_key(&r));
	size_t sizes[] = { 1, sizeof(k) - 1, sizeof(k) + 1, 64 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		a.auth_key_size = sizes[i];
		a.auth_key = sizes[i] <= sizeof(k) ? (uint8_t *)&k : big;
		CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	}
	/* The right size with no key. */
	a.auth_key_size = sizeof(k);
	a.auth_key = NULL;
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

/* auth_key_size must equal sizeof(struct fi_mr_auth_key): 0 is no
 * exception on an FI_AV_AUTH_KEY domain. */
static int av_auth_key_size_zero(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	CHECK_OK(open_av_auth_key(&r));
	int rc = fi_mr_regattr(r.domain, &a, 0, &mr);
	if (rc == 0) {
		CHECK_OK(fi_close(&mr->fid));
		mr = SENTINEL;
	}
	CHECK_OK(test_close(&r));
	CHECK_RC(rc, -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return 0;
}

static int av_auth_key_regattr(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_auth_key k = { .av = NULL, .src_addr = 5 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.auth_key_size = sizeof(k);
	a.auth_key = (uint8_t *)&k;
	CHECK_OK(open_av_auth_key(&r));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK(fi_mr_key(mr) == 1);
	CHECK_OK(fi_close(&mr->fid));
	/* FI_AUTH_KEY is allowed here: src_addr is an auth-key address. */
	CHECK_OK(fi_mr_regattr(r.domain, &a, AUTH_KEY_FLAG, &mr));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* An av that is not an oxshm AV (oxshm has none yet): -FI_EINVAL. */
static int av_auth_key_foreign_av(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fid_av fake;
	memset(&fake, 0, sizeof(fake));
	fake.fid.fclass = FI_CLASS_AV;
	struct fi_mr_auth_key k = { .av = &fake, .src_addr = 0 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	a.auth_key_size = sizeof(k);
	a.auth_key = (uint8_t *)&k;
	CHECK_OK(open_av_auth_key(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}
#endif

/* ---- page_size ---- */

#if TEST_HDR_AT_LEAST(2, 0)
static int page_size_hint(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, RW, 1);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	CHECK_OK(test_open(&r));
	size_t good[] = { 0, page, 2 * 1024 * 1024 };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		a.page_size = good[i];
		CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
		CHECK_OK(fi_close(&mr->fid));
	}
	mr = SENTINEL;
	size_t bad[] = { 1, 12345, page / 2, page + 1 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a.page_size = bad[i];
		CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	}
	CHECK(mr == SENTINEL);
	return test_close(&r);
}
#endif

static const struct test_case cases[] = {
	CASE(old_api_1_4),
	CASE(old_api_1_5),
	CASE(old_api_1_9),
	CASE(old_api_1_10),
	CASE(old_api_1_17),
#if TEST_HDR_AT_LEAST(2, 0)
	CASE(old_api_1_18),
	CASE(old_api_1_19),
	CASE(old_api_1_21),
	CASE(old_api_1_22),
	CASE(old_api_2_0),
#endif
	CASE(api_headers),
	CASE(old_api_ignores_auth_key),
	CASE(old_api_ignores_iface),
#if TEST_HDR_AT_LEAST(2, 0)
	CASE(old_api_ignores_hmem_data),
	CASE(old_api_ignores_page_size),
	CASE(old_api_ignores_base_mr),
	CASE(dmabuf_registers),
	CASE(dmabuf_bad_fd),
	CASE(dmabuf_past_end),
	CASE(dmabuf_bad_attr),
	CASE_ENV(dmabuf_virt_addr, "FI_OXSHM_MR_MODE=FI_MR_VIRT_ADDR"),
	CASE(dmabuf_needs_api_1_20),
#endif
	CASE(hmem_system),
	CASE_ENV(hmem_cuda, WARN),
	CASE_ENV(hmem_rocr, WARN),
	CASE_ENV(hmem_ze, WARN),
	CASE_ENV(hmem_neuron, WARN),
	CASE_ENV(hmem_synapseai, WARN),
	CASE_ENV(hmem_cuda_device_only, WARN),
	CASE(hmem_unknown_iface),
	CASE(nohmem_info_caps),
	CASE(nohmem_flags_as_negotiated),
	CASE(nohmem_device_only),
	CASE(nohmem_host_alloc),
	CASE(nohmem_dmabuf),
	CASE(nohmem_iface_ignored),
	CASE(auth_key_bytes),
	CASE(auth_key_null),
	CASE(auth_key_flag_without_av_auth_key),
#ifdef FI_AV_AUTH_KEY
	CASE(av_auth_key_reg_refused),
	CASE(av_auth_key_wrong_size),
	CASE(av_auth_key_size_zero),
	CASE(av_auth_key_regattr),
	CASE(av_auth_key_foreign_av),
#endif
#if TEST_HDR_AT_LEAST(2, 0)
	CASE(page_size_hint),
#endif
};

TEST_MAIN(cases)
