/*
 * libFuzzer target: fi_mr(3) on an oxshm domain.
 *
 * Each input opens one domain (API version, FI_HMEM, auth-key mode, extra
 * mr_mode bits, mr_iov_limit and an FI_REG_MR event queue chosen by the
 * first bytes; the provider's required mr_mode comes from FI_OXSHM_MR_MODE,
 * set per run by fuzz/run.sh), then runs up to MAX_OPS operations decoded
 * from the rest: fi_mr_regattr / fi_mr_reg / fi_mr_regv (exported function
 * or the domain's vtable) with arbitrary attrs, flags, access bits, offsets,
 * iov counts and lengths, requested keys, auth keys, iface/device,
 * hmem_data, page_size, base_mr and sub_mr_cnt; fi_close (twice, too);
 * fi_mr_raw_attr, fi_mr_map_raw, fi_mr_unmap_key, fi_mr_enable,
 * fi_mr_refresh, fi_mr_bind, fi_mr_get_xpu_desc, fi_mr_key/fi_mr_desc, and
 * closing the domain early. At the end every live MR is closed, every
 * mapped key unmapped, and the domain must close with 0.
 *
 * Every call must return 0 or a negative FI_E* code. Beyond "no crash",
 * the harness checks what fi_mr(3) and the oxfabric MR issue promise:
 * a failed call leaves *mr alone; a successful one yields a live MR with
 * the caller's context and key (the requested key without FI_MR_PROV_KEY,
 * FI_KEY_NOTAVAIL under FI_MR_RAW), keys unique among live MRs; inputs
 * the manual calls invalid (unknown flags or access bits, offset != 0,
 * iov_count 0 or over mr_iov_limit, zero lengths, NULL buffers, non-NULL
 * hmem_data, sub-MRs outside their base or wider than it, ...) never
 * succeed; plainly valid ones always do; closing a base with live sub-MRs
 * is -FI_EBUSY, a closed MR -FI_EINVAL; a domain with live MRs or mapped
 * keys refuses to close with -FI_EBUSY. A broken promise aborts (libFuzzer
 * saves the input as a crash artifact).
 *
 * Memory the library is given: iovs point into a harness buffer, into an
 * unmapped hole (FI_MR_ALLOCATED must refuse those), or are bogus
 * addresses that a registration only records (FI_MR_ALLOCATED probes
 * their mappings). The structures the library must read (attr, iov arrays,
 * auth keys, dmabuf, raw keys) sit flush against a PROT_NONE page and are
 * exactly as long as the caller's contract says, so any read past them
 * (e.g. an fi_mr_attr field newer than the domain's API version) faults.
 * One exception: a "huge" iov_count (over 4096) comes with an array of
 * IOV_CAP entries, relying on the mr_iov_limit check that must come first.
 */
#define _GNU_SOURCE
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* Deprecated constants, spelled out to avoid the headers' warning pragmas. */
#define OX_MR_BASIC 1
#define OX_MR_SCALABLE 2
#define OX_REG_MR (1ULL << 59)

#define ALL_ACCESS                                                             \
	(FI_READ | FI_WRITE | FI_RECV | FI_SEND | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE | FI_COLLECTIVE)
#define KNOWN_FLAGS                                                            \
	(FI_RMA_EVENT | FI_RMA_PMEM | FI_HMEM_DEVICE_ONLY |                    \
	 FI_HMEM_HOST_ALLOC | FI_MR_DMABUF | FI_MR_SINGLE_USE | FI_AUTH_KEY)
#define HMEM_FLAGS (FI_HMEM_DEVICE_ONLY | FI_HMEM_HOST_ALLOC | FI_MR_DMABUF)
#define ALL_MR_MODE                                                            \
	(FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |         \
	 FI_MR_PROV_KEY | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT |                 \
	 FI_MR_ENDPOINT | FI_MR_HMEM | FI_MR_COLLECTIVE | FI_MR_XPU_DESC)

#define MAX_OPS 64
#define MAX_MRS 48
#define MAX_MAPPED 64
#define BUF_SIZE (64 * 1024)
#define IOV_CAP 1100   /* entries backing any iov array: > mr_iov_limit max */
#define MAX_STORE 1100 /* iovs kept per MR (for sub-MR ranges) */
#define RAW_STORE 256

/* ------------------------------------------------------------- input ---- */

struct rd {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct rd *r, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++) {
		uint64_t b = 0;
		if (r->n) {
			b = *r->p++;
			r->n--;
		}
		v |= b << (8 * i);
	}
	return v;
}
#define U8(r) ((uint8_t)take(r, 1))
#define U16(r) ((uint16_t)take(r, 2))
#define U32(r) ((uint32_t)take(r, 4))
#define U64(r) (take(r, 8))

/* ------------------------------------------------------------ checks ---- */


#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "fuzz_mr: invariant broken at %s:%d: ",        \
			__FILE__, __LINE__);                                   \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		abort();                                                       \
	} while (0)

/* 0 or a negative FI_E* code: an errno or one of FI_ERRNO_OFFSET.. */
static int valid_rc(long rc)
{
	if (rc == 0)
		return 1;
	if (rc > 0)
		return 0;
	long e = -rc;
	return (e >= 1 && e <= 133) || (e >= FI_ERRNO_OFFSET && e < FI_ERRNO_MAX);
}

#define CHECK_RC(what, rc)                                                     \
	do {                                                                   \
		if (!valid_rc(rc))                                             \
			FAIL("%s returned %ld, not 0 or -FI_E*", what,         \
			     (long)(rc));                                      \
	} while (0)

/* ----------------------------------------------------- harness memory ---- */

/* FUZZ_MR_TRACE=1: print each registration (for reproducers). */
static int trace;
static int selftest;
static size_t page;
static uint8_t *buf;  /* BUF_SIZE bytes of ordinary memory */
static uint8_t *hole; /* 3 pages; the middle one unmapped */

/* Whether the middle page of `hole` is still unmapped (mincore: ENOMEM). */
static int hole_unmapped(void)
{
	unsigned char v;
	return mincore(hole + page, page, &v) != 0;
}

/* A region whose end touches a PROT_NONE page. */
struct guard {
	uint8_t *base;
	size_t size;
};
static struct guard g_attr, g_iov, g_auth, g_dmabuf, g_raw, g_xpu;

static void guard_init(struct guard *g, size_t size)
{
	size = (size + page - 1) / page * page;
	uint8_t *p = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p + size, page, PROT_NONE))
		abort();
	g->base = p;
	g->size = size;
}

/* `n` bytes (capped at the region) ending at the guard page. */
static void *tail(struct guard *g, size_t n)
{
	if (n > g->size)
		n = g->size;
	return g->base + g->size - n;
}

/* A fid-shaped block nothing owns: a bogus av, XPU context, bind target. */
static int stub_close(struct fid *f) { (void)f; return -FI_ENOSYS; }
static int stub_bind(struct fid *f, struct fid *b, uint64_t fl)
{ (void)f; (void)b; (void)fl; return -FI_ENOSYS; }
static int stub_control(struct fid *f, int c, void *a)
{ (void)f; (void)c; (void)a; return -FI_ENOSYS; }
static int stub_ops_open(struct fid *f, const char *n, uint64_t fl, void **o, void *c)
{ (void)f; (void)n; (void)fl; (void)o; (void)c; return -FI_ENOSYS; }
static int stub_tostr(const struct fid *f, char *b, size_t l)
{ (void)f; (void)b; (void)l; return -FI_ENOSYS; }
static int stub_ops_set(struct fid *f, const char *n, uint64_t fl, void *o, void *c)
{ (void)f; (void)n; (void)fl; (void)o; (void)c; return -FI_ENOSYS; }
static struct fi_ops stub_ops = {
	sizeof(struct fi_ops), stub_close, stub_bind, stub_control,
	stub_ops_open, stub_tostr, stub_ops_set,
};
static union {
	struct fid fid;
	uint8_t bytes[512];
} fake;

static int memfd = -1;

/* ------------------------------------------------------- fabric state ---- */

static const struct {
	int major, minor;
} versions[] = {
	{ 1, 4 }, { 1, 5 }, { 1, 10 }, { 1, 19 }, { 1, 20 },
	{ 1, 22 }, { 2, 0 }, { FI_MAJOR_VERSION, FI_MINOR_VERSION },
};
#define NVER (sizeof(versions) / sizeof(versions[0]))

static struct fi_info *infos[NVER];
static struct fid_fabric *fabrics[NVER];
static uint32_t api_of[NVER];
static size_t nver_ok;
static size_t ver_ok[NVER];

/* A second domain, kept for the whole run, and one MR in it. */
static struct fid_domain *other_dom;
static struct fid_mr *other_mr;

static uint32_t ver(int major, int minor)
{
	return FI_VERSION(major, minor);
}

/* fi_mr_attr bytes an application built for `api` passes (fi_mr(3)). */
static size_t attr_len(uint32_t api)
{
	if (api < ver(1, 5))
		return offsetof(struct fi_mr_attr, auth_key_size);
	if (api < ver(1, 10))
		return offsetof(struct fi_mr_attr, iface);
	if (api < ver(1, 19))
		return offsetof(struct fi_mr_attr, hmem_data);
	if (api < ver(1, 22))
		return offsetof(struct fi_mr_attr, page_size);
	if (api < ver(2, 0))
		return offsetof(struct fi_mr_attr, base_mr);
	return sizeof(struct fi_mr_attr);
}

static void init_once(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	page = (size_t)sysconf(_SC_PAGESIZE);
	trace = getenv("FUZZ_MR_TRACE") && *getenv("FUZZ_MR_TRACE") == '1';
	selftest = getenv("FUZZ_MR_SELFTEST") && *getenv("FUZZ_MR_SELFTEST") == '1';
	buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* Far below where mmap places things, so that nothing is mapped
	 * into the hole later (hole_unmapped() checks anyway). */
	hole = mmap((void *)0x5f0000000000ULL, 3 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (hole == MAP_FAILED)
		hole = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || hole == MAP_FAILED ||
	    munmap(hole + page, page))
		abort();
	memset(buf, 0xa5, BUF_SIZE);
	guard_init(&g_attr, sizeof(struct fi_mr_attr));
	guard_init(&g_iov, IOV_CAP * sizeof(struct iovec));
	guard_init(&g_auth, 8192);
	guard_init(&g_dmabuf, sizeof(struct fi_mr_dmabuf));
	guard_init(&g_raw, 4096);
	guard_init(&g_xpu, 4096);
	fake.fid.ops = &stub_ops;
	memfd = memfd_create("fuzz_mr", 0);
	if (memfd >= 0 && ftruncate(memfd, BUF_SIZE))
		abort();

	for (size_t v = 0; v < NVER; v++) {
		uint32_t api = ver(versions[v].major, versions[v].minor);
		struct fi_info *h = fi_allocinfo();
		if (!h)
			abort();
		h->fabric_attr->prov_name = strdup("oxshm");
		/* Before 1.5 only FI_MR_UNSPEC/BASIC/SCALABLE exist. */
		h->domain_attr->mr_mode = api < ver(1, 5) ? 0 : ALL_MR_MODE;
		int rc = fi_getinfo(api, NULL, NULL, 0, h, &infos[v]);
		fi_freeinfo(h);
		if (rc) {
			fprintf(stderr, "fuzz_mr: fi_getinfo(%d.%d): %d; skipped\n",
				versions[v].major, versions[v].minor, rc);
			infos[v] = NULL;
			continue;
		}
		rc = fi_fabric(infos[v]->fabric_attr, &fabrics[v], NULL);
		if (rc)
			FAIL("fi_fabric(%d.%d): %d", versions[v].major,
			     versions[v].minor, rc);
		api_of[v] = api;
		ver_ok[nver_ok++] = v;
	}
	if (!nver_ok)
		FAIL("no API version opens an oxshm fabric");
	size_t last = ver_ok[nver_ok - 1];
	int rc = fi_domain(fabrics[last], infos[last], &other_dom, NULL);
	if (rc)
		FAIL("fi_domain (the other domain): %d", rc);
	rc = fi_mr_reg(other_dom, buf, 4096, FI_REMOTE_READ, 0, 0xabc, 0,
		       &other_mr, NULL);
	if (rc)
		FAIL("fi_mr_reg on the other domain: %d", rc);
	fprintf(stderr,
		"fuzz_mr: %zu API versions; FI_OXSHM_MR_MODE=%s; mr_mode "
		"at %d.%d: 0x%x\n",
		nver_ok, getenv("FI_OXSHM_MR_MODE") ? getenv("FI_OXSHM_MR_MODE")
						    : "(unset)",
		versions[last].major, versions[last].minor,
		infos[last]->domain_attr->mr_mode);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	init_once();
	return 0;
}

/* ------------------------------------------------------ per-input state ---- */

struct rec {
	struct fid_mr *mr;
	int live;
	int parent; /* index of the base MR, or -1 */
	int nchild; /* live sub-MRs */
	uint64_t key;    /* fi_mr_key (FI_KEY_NOTAVAIL under FI_MR_RAW) */
	uint64_t reqkey; /* the requested key it was registered with */
	uint64_t access;
	void *ctx;
	size_t niov;
	struct iovec *iov; /* MAX_STORE entries */
	uint8_t *good;     /* per iov: inside buf */
	uint8_t raw[RAW_STORE];
	size_t rawlen;
	uint64_t rawbase;
	uint64_t rawkey; /* the MR's key when its raw key was taken */
	int haveraw;
};

struct st {
	struct rd *r;
	size_t v;
	uint32_t api;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_eq *eq;
	int mode;  /* effective mr_mode */
	int hmem;
	int av_auth;
	size_t iov_limit;
	struct rec mrs[MAX_MRS];
	int nmr;
	uint64_t mapped[MAX_MAPPED];
	int nmapped;
	size_t raw_needed; /* learned from -FI_ETOOSMALL; 0 = unknown */
	int ctxvals[8];
};

static struct iovec store_iov[MAX_MRS][MAX_STORE];
static uint8_t store_good[MAX_MRS][MAX_STORE];

static int live_count(struct st *s)
{
	int n = 0;
	for (int i = 0; i < s->nmr; i++)
		n += s->mrs[i].live;
	return n;
}

/* The live record whose object is at `mr` (a closed MR's slot may be
 * reused by a later registration), or -1. */
static int live_at(struct st *s, const struct fid_mr *mr)
{
	for (int i = 0; i < s->nmr; i++)
		if (s->mrs[i].live && s->mrs[i].mr == mr)
			return i;
	return -1;
}

static void drain_check_none(struct st *s, const char *after)
{
	if (!s->eq)
		return;
	uint32_t event;
	struct fi_eq_entry e;
	ssize_t n = fi_eq_read(s->eq, &event, &e, sizeof(e), 0);
	if (n != -FI_EAGAIN)
		FAIL("after %s, fi_eq_read gave %zd (event %u), not -FI_EAGAIN",
		     after, n, event);
}

/* ----------------------------------------------------- iov generation ---- */

/*
 * Under ASan, [0x7fff8000, 0x10007fff8000) is shadow memory: mapped
 * (partly PROT_NONE), terabytes long, and resident in parts, which a
 * plain process does not have there. Such addresses move to the
 * (normally empty) 0x5xxxxxxxxxxx range instead, so that inputs mean the
 * same with and without the sanitizer. (The probe FI_MR_ALLOCATED makes
 * once walked such a range page by page; it now takes a step a mapping.)
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OX_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define OX_ASAN 1
#endif
static uint64_t off_shadow(uint64_t b)
{
#ifdef OX_ASAN
	if (b >= 0x7fff8000ULL && b < 0x10007fff8000ULL)
		return (b & 0x00ffffffffffULL) | 0x500000000000ULL;
#endif
	return b;
}

struct iovinfo {
	int all_good;     /* every iov inside buf (valid, mapped memory) */
	int any_invalid;  /* length 0, NULL with length, or wrapping */
	int any_unmapped; /* inside the unmapped hole */
};

static void gen_one(struct st *s, struct iovec *io, struct iovinfo *inf)
{
	struct rd *r = s->r;
	uint8_t sel = U8(r) % 12;
	uint64_t b, l;
	switch (sel) {
	default: /* 0..3: somewhere in buf */
	{
		size_t off = U16(r) % BUF_SIZE;
		b = (uint64_t)(uintptr_t)(buf + off);
		l = 1 + U16(r) % (BUF_SIZE - off);
		break;
	}
	case 4: /* part of an iov of an earlier MR of this input (sub-MRs) */
	case 5: {
		if (!s->nmr)
			goto whole;
		struct rec *m = &s->mrs[U8(r) % s->nmr];
		if (!m->niov)
			goto whole;
		size_t j = U16(r) % m->niov;
		if (j >= MAX_STORE)
			goto whole;
		uint64_t mb = (uint64_t)(uintptr_t)m->iov[j].iov_base;
		uint64_t ml = m->iov[j].iov_len;
		if (!ml || !m->good[j])
			goto whole;
		uint64_t o = U16(r) % ml;
		b = mb + o;
		l = 1 + U16(r) % (ml - o);
		if (sel == 5 && (U8(r) & 1))
			l += 1 + U8(r); /* just past the end */
		inf->all_good &= (b + l <= (uint64_t)(uintptr_t)(buf + BUF_SIZE));
		io->iov_base = (void *)(uintptr_t)b;
		io->iov_len = l;
		return;
	}
	case 6: /* NULL buffer */
		b = 0;
		l = U16(r);
		inf->any_invalid = 1;
		inf->all_good = 0;
		break;
	case 7: /* zero length */
		b = (uint64_t)(uintptr_t)(buf + U16(r) % BUF_SIZE);
		l = 0;
		inf->any_invalid = 1;
		inf->all_good = 0;
		break;
	case 8: /* wraps the address space */
		b = UINT64_MAX - U16(r);
		l = (UINT64_MAX - b) + 1 + U16(r);
		inf->any_invalid = 1;
		inf->all_good = 0;
		break;
	case 9: /* the unmapped page of `hole` */
		b = (uint64_t)(uintptr_t)(hole + page) + U16(r) % page;
		l = 1 + U16(r) % page;
		inf->any_unmapped |= hole_unmapped();
		inf->all_good = 0;
		break;
	case 10: /* arbitrary */
		b = off_shadow(U64(r));
		l = U64(r);
		if (l == 0 || (b == 0) || b + l < b)
			inf->any_invalid = 1;
		inf->all_good = 0;
		break;
	case 11: /* high addresses: kernel half, top of user space */
		b = (U8(r) & 1) ? 0xffff800000000000ULL + U32(r)
				: 0x00007ffffffff000ULL + (U16(r) & 0xfff);
		l = 1 + U16(r);
		if (b + l < b)
			inf->any_invalid = 1;
		inf->all_good = 0;
		break;
	}
	io->iov_base = (void *)(uintptr_t)b;
	io->iov_len = l;
	return;
whole:
	io->iov_base = buf;
	io->iov_len = BUF_SIZE;
}

/* An iov count: mostly small, sometimes at the limit, past it, or huge. */
static size_t gen_count(struct st *s)
{
	uint8_t c = U8(s->r);
	if (c < 224)
		return c % 9;
	switch (c % 10) {
	case 0: return 16;
	case 1: return s->iov_limit - 1;
	case 2: return s->iov_limit;
	case 3: return s->iov_limit + 1;
	case 4: return 1024;
	case 5: return 1025;
	case 6: return IOV_CAP;
	case 7: return SIZE_MAX;
	case 8: return (size_t)1 << 32;
	default: return 4097 + U16(s->r);
	}
}

/* --------------------------------------------------------- requests ---- */

struct req {
	int kind; /* 0 regattr, 1 reg, 2 regv */
	int vtable;
	struct iovec *iov; /* in g_iov */
	size_t count;
	size_t filled; /* entries of iov the harness wrote */
	int iov_null;
	struct iovinfo inf;
	uint64_t access, offset, key, flags;
	void *ctx;
	int attr_null, out_null;
	size_t auth_size;
	uint8_t *auth;
	int auth_av_nonnull;
	uint32_t iface;
	uint64_t device;
	void *hmem_data;
	size_t page_size;
	const struct fid_mr *base;
	int base_rec;    /* record of base (live), -1 none, -2 not a live MR here */
	size_t sub_cnt;
	int dmabuf;
	struct fi_mr_dmabuf db;
};

static uint64_t gen_access(struct rd *r)
{
	uint8_t a = U8(r);
	uint64_t v = 0;
	static const uint64_t bits[] = { FI_READ, FI_WRITE, FI_RECV, FI_SEND,
					 FI_REMOTE_READ, FI_REMOTE_WRITE,
					 FI_COLLECTIVE };
	for (int i = 0; i < 7; i++)
		if (a & (1 << i))
			v |= bits[i];
	if (a & 0x80)
		v |= U64(r);
	return v;
}

static uint64_t gen_flags(struct rd *r)
{
	uint8_t a = U8(r);
	uint64_t v = 0;
	static const uint64_t bits[] = { FI_RMA_EVENT, FI_RMA_PMEM,
					 FI_HMEM_DEVICE_ONLY,
					 FI_HMEM_HOST_ALLOC, FI_MR_SINGLE_USE,
					 FI_AUTH_KEY };
	if (a < 128)
		return 0;
	for (int i = 0; i < 6; i++)
		if (a & (1 << i))
			v |= bits[i];
	if (a & 0x40)
		v |= U64(r);
	return v;
}

static uint64_t gen_key(struct st *s)
{
	struct rd *r = s->r;
	uint8_t k = U8(r);
	switch (k % 8) {
	case 0:
	case 1: return k >> 3;
	case 2: return U16(r);
	case 3: return FI_KEY_NOTAVAIL;
	case 4: return FI_KEY_NOTAVAIL - (U8(r) & 3) - 1;
	case 5: /* an earlier MR's key (live or closed) */
		if (s->nmr)
		{
			struct rec *m = &s->mrs[U8(r) % s->nmr];
			return (s->mode & FI_MR_PROV_KEY) ? m->key : m->reqkey;
		}
		return 7;
	case 6: return (uint64_t)1 << (U8(r) & 63);
	default: return U64(r);
	}
}

static size_t gen_page_size(struct rd *r)
{
	uint8_t p = U8(r);
	switch (p % 8) {
	case 0:
	case 1:
	case 2: return 0;
	case 3: return page;
	case 4: return (size_t)1 << (U8(r) & 63);
	case 5: return 2 * 1024 * 1024;
	case 6: return (size_t)1 << 31;
	default: return U64(r);
	}
}

/* base_mr choices: sets base and base_rec. */
static void gen_base(struct st *s, struct req *q)
{
	uint8_t b = U8(s->r);
	q->base_rec = -1;
	q->base = NULL;
	if (b < 128)
		return;
	switch (b % 5) {
	case 0:
	case 1:
		if (s->nmr) {
			struct rec *m = &s->mrs[U8(s->r) % s->nmr];
			q->base = m->mr;
			q->base_rec = live_at(s, m->mr);
			if (q->base_rec < 0)
				q->base_rec = -2;
			return;
		}
		return;
	case 2:
		q->base = other_mr;
		break;
	case 3:
		q->base = (const struct fid_mr *)&s->dom->fid;
		break;
	default:
		q->base = (const struct fid_mr *)&fake.fid;
		fake.fid.fclass = (U8(s->r) & 1) ? FI_CLASS_MR : 0;
		break;
	}
	q->base_rec = -2;
}

static void gen_iovs(struct st *s, struct req *q)
{
	q->count = q->kind == 1 ? 1 : gen_count(s);
	q->filled = q->count < IOV_CAP ? q->count : IOV_CAP;
	q->iov = tail(&g_iov, q->filled * sizeof(struct iovec));
	q->inf.all_good = 1;
	q->inf.any_invalid = 0;
	q->inf.any_unmapped = 0;
	for (size_t i = 0; i < q->filled; i++)
		gen_one(s, &q->iov[i], &q->inf);
	q->iov_null = q->kind != 1 && (U8(s->r) % 16 == 0);
}

static int covered_by_one(const struct rec *base, const struct iovec *io)
{
	uint64_t b = (uint64_t)(uintptr_t)io->iov_base, e = b + io->iov_len;
	for (size_t j = 0; j < base->niov && j < MAX_STORE; j++) {
		uint64_t bb = (uint64_t)(uintptr_t)base->iov[j].iov_base;
		if (b >= bb && e <= bb + base->iov[j].iov_len)
			return 1;
	}
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Whether the iov lies inside the union of the base's iovs. */
static int covered_by_union(const struct rec *base, const struct iovec *io)
{
	static uint64_t rg[MAX_STORE][2];
	size_t n = base->niov < MAX_STORE ? base->niov : MAX_STORE;
	for (size_t j = 0; j < n; j++) {
		rg[j][0] = (uint64_t)(uintptr_t)base->iov[j].iov_base;
		rg[j][1] = rg[j][0] + base->iov[j].iov_len;
	}
	qsort(rg, n, sizeof(rg[0]), cmp_range);
	uint64_t b = (uint64_t)(uintptr_t)io->iov_base, e = b + io->iov_len;
	uint64_t cs = 0, ce = 0;
	int have = 0;
	for (size_t j = 0; j < n; j++) {
		if (have && rg[j][0] <= ce) {
			if (rg[j][1] > ce)
				ce = rg[j][1];
			continue;
		}
		if (have && b >= cs && e <= ce)
			return 1;
		cs = rg[j][0];
		ce = rg[j][1];
		have = 1;
	}
	return have && b >= cs && e <= ce;
}

static int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static void do_register(struct st *s, int kind)
{
	struct rd *r = s->r;
	struct req q;
	memset(&q, 0, sizeof(q));
	q.kind = kind;
	uint8_t m = U8(r);
	q.vtable = m & 1;
	q.out_null = (m & 0x7e) == 0x7e;
	q.attr_null = kind == 0 && (m & 0xfe) == 0xfe;
	q.dmabuf = kind == 0 && (m & 0x30) == 0x30 && (m & 0x40);
	gen_iovs(s, &q);
	q.access = gen_access(r);
	q.offset = (U8(r) % 16 == 0) ? U64(r) : 0;
	q.key = gen_key(s);
	q.flags = gen_flags(r);
	/* FI_MR_DMABUF says the union holds a dmabuf pointer: set it exactly
	 * when one is passed (anything else is undefined by fi_mr(3)). */
	if (q.dmabuf)
		q.flags |= FI_MR_DMABUF;
	else if (kind == 0)
		q.flags &= ~FI_MR_DMABUF;
	q.ctx = (U8(r) & 1) ? (void *)&s->ctxvals[U8(r) % 8]
			    : (void *)(uintptr_t)U64(r);
	q.base_rec = -1;

	/* fi_mr_regattr's further fields. */
	if (kind == 0) {
		uint8_t a = U8(r);
		switch (a % 8) {
		default:
			q.auth_size = 0;
			break;
		case 0:
			q.auth_size = sizeof(struct fi_mr_auth_key);
			break;
		case 1:
			q.auth_size = 1 + U8(r);
			break;
		case 2:
			q.auth_size = 4096 + (U8(r) % 3) - 1;
			break;
		case 3:
			q.auth_size = (U8(r) & 1) ? SIZE_MAX : U64(r);
			break;
		}
		if (q.auth_size && !(a & 0x80)) {
			size_t n = q.auth_size < g_auth.size ? q.auth_size
							     : g_auth.size;
			q.auth = tail(&g_auth, n);
			for (size_t i = 0; i < n && i < 64; i++)
				q.auth[i] = U8(r);
			if (q.auth_size == sizeof(struct fi_mr_auth_key)) {
				struct fi_mr_auth_key k;
				k.av = (a & 0x40) ? (struct fid_av *)&fake.fid
						  : NULL;
				k.src_addr = U64(r);
				memcpy(q.auth, &k, sizeof(k));
				q.auth_av_nonnull = k.av != NULL;
			}
		}
		uint8_t h = U8(r);
		q.iface = (h & 0x80) ? U32(r) : (h % 8 < 6 ? h % 8 : 0);
		q.device = (h & 0x40) ? U64(r) : 0;
		q.hmem_data = (U8(r) % 16 == 0) ? (void *)&fake : NULL;
		q.page_size = gen_page_size(r);
		gen_base(s, &q);
		uint8_t c = U8(r);
		q.sub_cnt = c < 200 ? 0 : c < 250 ? (size_t)U16(r) : (size_t)U64(r);
		if (q.dmabuf) {
			uint8_t d = U8(r);
			switch (d % 6) {
			case 0: q.db.fd = memfd; break;
			case 1: q.db.fd = -1; break;
			case 2: q.db.fd = d % 3; break;
			case 3: q.db.fd = 1000 + d; break;
			case 4: q.db.fd = memfd; break;
			default: q.db.fd = (int)U32(r); break;
			}
			q.db.offset = (d & 0x40) ? U64(r) : U16(r);
			q.db.len = (d & 0x80) ? U64(r) : U16(r);
			q.db.base_addr = (U8(r) & 1) ? (void *)buf
						     : (void *)(uintptr_t)U64(r);
		}
	}

	/* What the manual says must happen. */
	size_t alen = attr_len(s->api);
	int reads_auth = kind == 0 && alen > offsetof(struct fi_mr_attr, auth_key_size);
	int reads_iface = kind == 0 && alen > offsetof(struct fi_mr_attr, iface);
	int reads_hmem_data = kind == 0 && alen > offsetof(struct fi_mr_attr, hmem_data);
	int reads_page = kind == 0 && alen > offsetof(struct fi_mr_attr, page_size);
	int reads_base = kind == 0 && alen > offsetof(struct fi_mr_attr, base_mr);
	const struct fid_mr *base = reads_base ? q.base : NULL;
	int base_rec = reads_base ? q.base_rec : -1;
	int prov_key = s->mode & FI_MR_PROV_KEY;
	int must_fail = 0;
	const char *why = "";
#define MUST_FAIL(cond, reason)                                                \
	do {                                                                   \
		if (!must_fail && (cond)) {                                    \
			must_fail = 1;                                         \
			why = reason;                                          \
		}                                                              \
	} while (0)
	MUST_FAIL(q.out_null, "mr is NULL");
	MUST_FAIL(q.attr_null, "attr is NULL");
	MUST_FAIL(q.flags & ~KNOWN_FLAGS, "unknown flags");
	MUST_FAIL((q.flags & HMEM_FLAGS) && !s->hmem, "FI_HMEM flags without FI_HMEM");
	MUST_FAIL((q.flags & FI_AUTH_KEY) && !s->av_auth, "FI_AUTH_KEY without FI_AV_AUTH_KEY");
	MUST_FAIL(s->av_auth && kind != 0, "fi_mr_reg(v) on an FI_AV_AUTH_KEY domain");
	MUST_FAIL(q.access & ~(uint64_t)ALL_ACCESS, "unknown access bits");
	MUST_FAIL(q.offset != 0, "offset != 0");
	if (q.dmabuf) {
		MUST_FAIL(s->api < ver(1, 20), "FI_MR_DMABUF before API 1.20");
		MUST_FAIL(q.db.fd < 0, "dmabuf fd < 0");
		MUST_FAIL(q.db.len == 0, "dmabuf len 0");
		MUST_FAIL(q.db.offset + q.db.len < q.db.offset, "dmabuf range wraps");
		MUST_FAIL(base != NULL, "dmabuf with base_mr");
	} else {
		MUST_FAIL(q.count == 0, "iov_count 0");
		MUST_FAIL(q.count > s->iov_limit, "iov_count over mr_iov_limit");
		MUST_FAIL(q.iov_null, "iov is NULL");
		MUST_FAIL(q.inf.any_invalid, "an iov is NULL, empty or wraps");
		MUST_FAIL((s->mode & FI_MR_ALLOCATED) && q.inf.any_unmapped,
			  "FI_MR_ALLOCATED with an unmapped iov");
	}
	if (reads_hmem_data)
		MUST_FAIL(q.hmem_data != NULL, "hmem_data not NULL");
	if (reads_auth && q.auth_size)
		MUST_FAIL(q.auth == NULL, "auth_key NULL with a size");
	/* fi_mr(3): with FI_AV_AUTH_KEY, auth_key_size must equal
	 * sizeof(struct fi_mr_auth_key). */
	if (reads_auth && s->av_auth)
		MUST_FAIL(q.auth_size != sizeof(struct fi_mr_auth_key),
			  "FI_AV_AUTH_KEY: auth_key_size != sizeof(fi_mr_auth_key)");
	if (reads_page && !base)
		MUST_FAIL(q.page_size && !is_pow2(q.page_size), "page_size not a power of 2");
	if (reads_iface && s->hmem && !base)
		MUST_FAIL(q.iface > FI_HMEM_SYNAPSEAI, "unknown iface");
	if (!prov_key)
		MUST_FAIL(q.key == FI_KEY_NOTAVAIL, "requested key FI_KEY_NOTAVAIL");
	if (!prov_key)
		for (int i = 0; i < s->nmr; i++)
			MUST_FAIL(s->mrs[i].live && s->mrs[i].reqkey == q.key,
				  "requested key in use");
	int sub_in_one = 1;
	if (base) {
		MUST_FAIL(base_rec < 0, "base_mr is not a live MR of this domain");
		if (base_rec >= 0) {
			struct rec *b = &s->mrs[base_rec];
			MUST_FAIL(q.access & ~b->access, "sub-MR wider than its base");
			if (!q.dmabuf && !q.iov_null && q.count <= s->iov_limit) {
				for (size_t i = 0; i < q.filled; i++) {
					if (q.iov[i].iov_len == 0 || !q.iov[i].iov_base)
						continue;
					MUST_FAIL(!covered_by_union(b, &q.iov[i]),
						  "sub-MR outside its base");
					sub_in_one &= covered_by_one(b, &q.iov[i]);
				}
			}
		}
	}
	int must_succeed =
		!must_fail && !q.dmabuf && q.inf.all_good && q.flags == 0 &&
		(!reads_iface || !s->hmem || base || q.iface == FI_HMEM_SYSTEM) &&
		(!reads_page || base || q.page_size == 0) &&
		(!reads_auth ||
		 (s->av_auth ? q.auth_size == sizeof(struct fi_mr_auth_key) &&
				       !q.auth_av_nonnull
			     : q.auth_size <= 4096)) &&
		(!base || sub_in_one) &&
		(prov_key || q.key < ((uint64_t)1 << 62)) &&
		live_count(s) < MAX_MRS;

	/* The call. */
	struct fid_mr *const sentinel = (struct fid_mr *)(uintptr_t)0x5e5e5e5e;
	struct fid_mr *mr = sentinel;
	struct fid_mr **out = q.out_null ? NULL : &mr;
	int rc;
	const char *what;
	if (kind == 0) {
		what = "fi_mr_regattr";
		struct fi_mr_attr full;
		memset(&full, 0, sizeof(full));
		if (q.dmabuf) {
			struct fi_mr_dmabuf *db = tail(&g_dmabuf, sizeof(*db));
			*db = q.db;
			full.dmabuf = db;
		} else {
			full.mr_iov = q.iov_null ? NULL : q.iov;
		}
		full.iov_count = q.count;
		full.access = q.access;
		full.offset = q.offset;
		full.requested_key = q.key;
		full.context = q.ctx;
		full.auth_key_size = q.auth_size;
		full.auth_key = q.auth;
		full.iface = (enum fi_hmem_iface)q.iface;
		full.device.reserved = q.device;
		full.hmem_data = q.hmem_data;
		full.page_size = q.page_size;
		full.base_mr = q.base;
		full.sub_mr_cnt = q.sub_cnt;
		struct fi_mr_attr *a = tail(&g_attr, alen);
		memcpy(a, &full, alen);
		if (q.attr_null)
			a = NULL;
		rc = q.vtable ? s->dom->mr->regattr(&s->dom->fid, a, q.flags, out)
			      : fi_mr_regattr(s->dom, a, q.flags, out);
	} else if (kind == 1) {
		what = "fi_mr_reg";
		rc = q.vtable ? s->dom->mr->reg(&s->dom->fid, q.iov[0].iov_base,
						q.iov[0].iov_len, q.access,
						q.offset, q.key, q.flags, out,
						q.ctx)
			      : fi_mr_reg(s->dom, q.iov[0].iov_base,
					  q.iov[0].iov_len, q.access, q.offset,
					  q.key, q.flags, out, q.ctx);
	} else {
		what = "fi_mr_regv";
		const struct iovec *iov = q.iov_null ? NULL : q.iov;
		rc = q.vtable ? s->dom->mr->regv(&s->dom->fid, iov, q.count,
						 q.access, q.offset, q.key,
						 q.flags, out, q.ctx)
			      : fi_mr_regv(s->dom, iov, q.count, q.access,
					   q.offset, q.key, q.flags, out, q.ctx);
	}
	CHECK_RC(what, rc);
	if (trace) {
		fprintf(stderr, "trace: %s%s count %zu%s access 0x%llx offset %llu "
			"key 0x%llx flags 0x%llx base %d good %d invalid %d unmapped %d -> %d\n",
			what, q.vtable ? " (vtable)" : "", q.count,
			q.iov_null ? " iov NULL" : "", (unsigned long long)q.access,
			(unsigned long long)q.offset, (unsigned long long)q.key,
			(unsigned long long)q.flags, base_rec, q.inf.all_good, q.inf.any_invalid, q.inf.any_unmapped, rc);
		for (size_t i = 0; i < q.filled && i < 8; i++)
			fprintf(stderr, "trace:   iov %zu: %p + %zu\n", i,
				q.iov[i].iov_base, q.iov[i].iov_len);
	}
	if (rc) {
		if (mr != sentinel)
			FAIL("%s failed (%d) but wrote *mr", what, rc);
		if (must_succeed)
			FAIL("%s refused a valid registration: %d (%s); count %zu "
			     "access 0x%llx key 0x%llx base %d mode 0x%x api 0x%x",
			     what, rc, fi_strerror(-rc), q.count,
			     (unsigned long long)q.access,
			     (unsigned long long)q.key, base_rec, s->mode,
			     s->api);
		drain_check_none(s, what);
		return;
	}
	if (must_fail)
		FAIL("%s succeeded though %s (count %zu flags 0x%llx access "
		     "0x%llx key 0x%llx mode 0x%x api 0x%x)",
		     what, why, q.count, (unsigned long long)q.flags,
		     (unsigned long long)q.access, (unsigned long long)q.key,
		     s->mode, s->api);
	if (!mr || mr == sentinel)
		FAIL("%s returned 0 without an MR", what);
	if (mr->fid.fclass != FI_CLASS_MR || !mr->fid.ops)
		FAIL("%s: the MR has class %zu", what, mr->fid.fclass);
	if (mr->fid.context != q.ctx)
		FAIL("%s: context %p, not %p", what, mr->fid.context, q.ctx);
	if (live_at(s, mr) >= 0)
		FAIL("%s returned an MR object that is already live", what);
	uint64_t key = fi_mr_key(mr);
	if (key != mr->key)
		FAIL("fi_mr_key 0x%llx != mr->key 0x%llx",
		     (unsigned long long)key, (unsigned long long)mr->key);
	if (s->mode & FI_MR_RAW) {
		if (key != FI_KEY_NOTAVAIL)
			FAIL("FI_MR_RAW but fi_mr_key gives 0x%llx",
			     (unsigned long long)key);
	} else {
		if (key == FI_KEY_NOTAVAIL)
			FAIL("%s: key FI_KEY_NOTAVAIL without FI_MR_RAW", what);
		if (!prov_key && key != q.key)
			FAIL("%s: key 0x%llx, requested 0x%llx", what,
			     (unsigned long long)key, (unsigned long long)q.key);
		for (int i = 0; i < s->nmr; i++)
			if (s->mrs[i].live && s->mrs[i].key == key)
				FAIL("%s: key 0x%llx also belongs to live MR %d",
				     what, (unsigned long long)key, i);
	}
	if (s->eq) {
		uint32_t event = 0;
		struct fi_eq_entry e;
		ssize_t n = fi_eq_read(s->eq, &event, &e, sizeof(e), 0);
		if (n != (ssize_t)sizeof(e) || event != FI_MR_COMPLETE ||
		    e.fid != &mr->fid || e.context != q.ctx)
			FAIL("FI_REG_MR: read %zd, event %u, fid %p (MR %p), "
			     "context %p (%p)",
			     n, event, (void *)e.fid, (void *)mr, e.context,
			     q.ctx);
		drain_check_none(s, "the FI_MR_COMPLETE event");
	}
	if (s->nmr == MAX_MRS) {
		/* No room to track it: it must close at once. */
		int c = fi_close(&mr->fid);
		if (c)
			FAIL("fi_close of a fresh MR: %d", c);
		return;
	}
	struct rec *n = &s->mrs[s->nmr];
	memset(n, 0, sizeof(*n));
	n->mr = mr;
	n->live = 1;
	n->parent = base_rec >= 0 ? base_rec : -1;
	if (n->parent >= 0)
		s->mrs[n->parent].nchild++;
	n->key = key;
	n->reqkey = q.key;
	n->access = q.access;
	n->ctx = q.ctx;
	n->iov = store_iov[s->nmr];
	n->good = store_good[s->nmr];
	if (q.dmabuf) {
		/* The library sees base_addr + offset, len. */
		n->niov = 1;
		n->iov[0].iov_base = (uint8_t *)q.db.base_addr + q.db.offset;
		n->iov[0].iov_len = q.db.len;
		uint64_t b = (uint64_t)(uintptr_t)n->iov[0].iov_base;
		n->good[0] = b >= (uint64_t)(uintptr_t)buf && b + q.db.len >= b &&
			     b + q.db.len <= (uint64_t)(uintptr_t)(buf + BUF_SIZE);
	} else {
		n->niov = q.count;
		for (size_t i = 0; i < q.count && i < MAX_STORE; i++) {
			n->iov[i] = q.iov[i];
			uint64_t b = (uint64_t)(uintptr_t)q.iov[i].iov_base;
			n->good[i] = b >= (uint64_t)(uintptr_t)buf &&
				     b + q.iov[i].iov_len <=
					     (uint64_t)(uintptr_t)(buf + BUF_SIZE);
		}
	}
	s->nmr++;
}

/* An MR pointer for an operation: a record (live or closed). Sets *live to
 * the live record at that address, or -1. */
static struct fid_mr *pick_mr(struct st *s, int *live)
{
	if (!s->nmr)
		return NULL;
	struct rec *m = &s->mrs[U8(s->r) % s->nmr];
	*live = live_at(s, m->mr);
	return m->mr;
}

static void do_close(struct st *s)
{
	int live;
	struct fid_mr *mr = pick_mr(s, &live);
	if (!mr)
		return;
	int vt = U8(s->r) & 1;
	int rc = vt ? mr->fid.ops->close(&mr->fid) : fi_close(&mr->fid);
	CHECK_RC("fi_close(mr)", rc);
	if (trace)
		fprintf(stderr, "trace: fi_close(MR %d%s) -> %d\n", live,
			live < 0 ? " closed" : "", rc);
	if (live < 0) {
		if (rc != -FI_EINVAL)
			FAIL("fi_close of a closed MR: %d, not -FI_EINVAL", rc);
		return;
	}
	struct rec *m = &s->mrs[live];
	if (m->nchild) {
		if (rc != -FI_EBUSY)
			FAIL("fi_close of a base with %d live sub-MRs: %d, not "
			     "-FI_EBUSY",
			     m->nchild, rc);
		return;
	}
	if (rc)
		FAIL("fi_close of a live MR: %d", rc);
	m->live = 0;
	if (m->parent >= 0)
		s->mrs[m->parent].nchild--;
}

static void do_raw_attr(struct st *s)
{
	int live;
	struct fid_mr *mr = pick_mr(s, &live);
	if (!mr)
		return;
	struct rd *r = s->r;
	uint8_t m = U8(r);
	size_t ks;
	switch (U8(r) % 8) {
	case 0: ks = 0; break;
	case 1: ks = 8; break;
	case 2: ks = s->raw_needed ? s->raw_needed - 1 : 39; break;
	case 3: ks = s->raw_needed ? s->raw_needed : 40; break;
	case 4: ks = RAW_STORE; break;
	case 5: ks = SIZE_MAX; break;
	default: ks = U16(r); break;
	}
	size_t ks_in = ks;
	uint64_t base = 0x77;
	uint8_t *raw = (m & 1) ? NULL : tail(&g_raw, ks);
	uint64_t flags = (m & 0x10) ? U64(r) : 0;
	int rc = fi_mr_raw_attr(mr, (m & 2) ? NULL : &base, raw,
				(m & 4) ? NULL : &ks, flags);
	CHECK_RC("fi_mr_raw_attr", rc);
	if (trace)
		fprintf(stderr, "trace: fi_mr_raw_attr(MR %d%s, key_size %zu) -> %d, "
			"key_size %zu\n", live, live < 0 ? " closed" : "", ks_in,
			rc, ks);
	if (live < 0) {
		if (rc == 0)
			FAIL("fi_mr_raw_attr succeeded on a closed MR");
		return;
	}
	if (m & 4) {
		if (rc == 0)
			FAIL("fi_mr_raw_attr succeeded with key_size NULL");
		return;
	}
	if (rc == -FI_ETOOSMALL && !(m & 2) && flags == 0) {
		if (raw && ks <= ks_in)
			FAIL("-FI_ETOOSMALL but *key_size %zu <= given %zu", ks,
			     ks_in);
		if (s->raw_needed && ks != s->raw_needed)
			FAIL("raw key size changed: %zu then %zu",
			     s->raw_needed, ks);
		s->raw_needed = ks;
	}
	if (rc == 0) {
		if (flags)
			FAIL("fi_mr_raw_attr accepted flags 0x%llx",
			     (unsigned long long)flags);
		if (!raw || ks > ks_in || ks == 0)
			FAIL("fi_mr_raw_attr: size %zu for a %zu-byte buffer", ks,
			     ks_in);
		if (s->raw_needed && ks != s->raw_needed)
			FAIL("raw key size %zu, earlier %zu", ks, s->raw_needed);
		s->raw_needed = ks;
		struct rec *rc_ = &s->mrs[live];
		if (ks <= RAW_STORE) {
			memcpy(rc_->raw, raw, ks);
			rc_->rawlen = ks;
			rc_->rawbase = base;
			rc_->rawkey = rc_->key;
			rc_->haveraw = 1;
		}
	} else if (!(m & 3) && flags == 0 && s->raw_needed &&
		   ks_in >= s->raw_needed && ks_in != SIZE_MAX) {
		FAIL("fi_mr_raw_attr refused a %zu-byte buffer: %d", ks_in, rc);
	}
}

static void push_mapped(struct st *s, uint64_t key)
{
	if (s->nmapped == MAX_MAPPED) {
		int rc = fi_mr_unmap_key(s->dom, key);
		if (rc)
			FAIL("fi_mr_unmap_key of a just-mapped key: %d", rc);
		return;
	}
	s->mapped[s->nmapped++] = key;
}

static void do_map_raw(struct st *s)
{
	struct rd *r = s->r;
	uint8_t m = U8(r);
	uint8_t *bytes;
	size_t len;
	uint64_t base;
	int exact = 0;
	struct rec *src = NULL;
	if (!(m & 1) && s->nmr) {
		src = &s->mrs[U8(r) % s->nmr];
		if (!src->haveraw)
			return;
		len = src->rawlen;
		base = src->rawbase;
		exact = 1;
		if (m & 2) {
			len = (len + (U8(r) % 5)) - 2;
			exact = 0;
		}
		if (m & 4) {
			base += 1 + U8(r);
			exact = 0;
		}
		bytes = tail(&g_raw, len);
		memcpy(bytes, src->raw, len < src->rawlen ? len : src->rawlen);
		if (len > src->rawlen)
			memset(bytes + src->rawlen, 0, len - src->rawlen);
		if ((m & 8) && len) {
			bytes[U8(r) % len] ^= (uint8_t)(U8(r) | 1);
			exact = 0;
		}
	} else {
		len = U8(r);
		if (len == 255)
			len = (U8(r) & 1) ? SIZE_MAX : U16(r);
		bytes = tail(&g_raw, len);
		size_t fill = len < g_raw.size ? len : g_raw.size;
		for (size_t i = 0; i < fill && i < 64; i++)
			bytes[i] = U8(r);
		base = U64(r);
	}
	uint64_t flags = (m & 0x10) ? U64(r) : 0;
	uint64_t key = 0x1111;
	int nullkey = (m & 0xe0) == 0xe0;
	int rc = fi_mr_map_raw(s->dom, base, (m & 0x20) && !nullkey ? NULL : bytes,
			       len, nullkey ? NULL : &key, flags);
	CHECK_RC("fi_mr_map_raw", rc);
	if (trace)
		fprintf(stderr, "trace: fi_mr_map_raw(%zu bytes%s) -> %d, key 0x%llx\n",
			len, exact ? ", unaltered" : "", rc,
			(unsigned long long)key);
	if (rc) {
		if (exact && flags == 0 && !nullkey && !(m & 0x20))
			FAIL("fi_mr_map_raw refused an unaltered raw key: %d", rc);
		return;
	}
	if (nullkey || ((m & 0x20) && !nullkey))
		FAIL("fi_mr_map_raw succeeded with a NULL pointer");
	if (exact && !(s->mode & FI_MR_RAW) && key != src->rawkey)
		FAIL("fi_mr_map_raw: key 0x%llx, the MR's is 0x%llx",
		     (unsigned long long)key, (unsigned long long)src->rawkey);
	push_mapped(s, key);
}

static void do_unmap(struct st *s)
{
	struct rd *r = s->r;
	uint8_t m = U8(r);
	if ((m & 1) && s->nmapped) {
		int i = U8(r) % s->nmapped;
		int rc = fi_mr_unmap_key(s->dom, s->mapped[i]);
		if (rc)
			FAIL("fi_mr_unmap_key of a mapped key: %d", rc);
		s->mapped[i] = s->mapped[--s->nmapped];
		return;
	}
	uint64_t key = (m & 2) && s->nmr ? s->mrs[U8(r) % s->nmr].key : U64(r);
	for (int i = 0; i < s->nmapped; i++)
		if (s->mapped[i] == key)
			return;
	int rc = fi_mr_unmap_key(s->dom, key);
	CHECK_RC("fi_mr_unmap_key", rc);
	if (rc == 0)
		FAIL("fi_mr_unmap_key of a key never mapped succeeded");
}

static void do_enable(struct st *s)
{
	int live;
	struct fid_mr *mr = pick_mr(s, &live);
	if (!mr)
		return;
	int rc = fi_mr_enable(mr);
	CHECK_RC("fi_mr_enable", rc);
	if (live < 0 && rc == 0)
		FAIL("fi_mr_enable succeeded on a closed MR");
}

static void do_refresh(struct st *s)
{
	int live;
	struct fid_mr *mr = pick_mr(s, &live);
	if (!mr)
		return;
	struct req q;
	memset(&q, 0, sizeof(q));
	q.kind = 2;
	gen_iovs(s, &q);
	uint64_t flags = (U8(s->r) % 8 == 0) ? U64(s->r) : 0;
	int rc = fi_mr_refresh(mr, q.iov_null ? NULL : q.iov, q.count, flags);
	CHECK_RC("fi_mr_refresh", rc);
	if (live < 0 && rc == 0)
		FAIL("fi_mr_refresh succeeded on a closed MR");
	if (rc == 0 && flags)
		FAIL("fi_mr_refresh accepted flags 0x%llx",
		     (unsigned long long)flags);
}

static void do_bind(struct st *s)
{
	int live;
	struct fid_mr *mr = pick_mr(s, &live);
	if (!mr)
		return;
	struct rd *r = s->r;
	uint8_t m = U8(r);
	struct fid *b;
	switch (m % 6) {
	case 0: b = &s->dom->fid; break;
	case 1: b = &s->fab->fid; break;
	case 2: b = s->eq ? &s->eq->fid : NULL; break;
	case 3: b = &s->mrs[U8(r) % s->nmr].mr->fid; break;
	case 4:
		b = &fake.fid;
		fake.fid.fclass = (m & 0x40) ? FI_CLASS_CNTR : FI_CLASS_EP;
		break;
	default: b = NULL; break;
	}
	uint64_t flags = (m & 0x80) ? U64(r) : (m & 0x20) ? FI_REMOTE_WRITE : 0;
	int rc = fi_mr_bind(mr, b, flags);
	CHECK_RC("fi_mr_bind", rc);
	/* Nothing here is an oxshm counter or endpoint. */
	if (rc == 0)
		FAIL("fi_mr_bind to a %s succeeded",
		     b == &fake.fid ? "foreign object" : "non-counter, non-endpoint");
}

static void do_xpu(struct st *s)
{
	int live;
	struct fid_mr *mr = pick_mr(s, &live);
	if (!mr)
		return;
	struct rd *r = s->r;
	uint8_t m = U8(r);
	size_t len = (m & 8) ? U16(r) % 64 : 8 + (m & 7) - 4;
	size_t len_in = len;
	void *b = (m & 0x10) ? NULL : tail(&g_xpu, len);
	uint64_t flags = (m & 0x20) ? FI_XPU : (m & 0x40) ? U64(r) : 0;
	struct fid_xpu_ctx *ctx = (m & 0x80) ? (struct fid_xpu_ctx *)&fake : NULL;
	int rc = fi_mr_get_xpu_desc(mr, b, (m & 1) && (m & 2) ? NULL : &len,
				    flags, ctx);
	CHECK_RC("fi_mr_get_xpu_desc", rc);
	if (live < 0 && rc == 0)
		FAIL("fi_mr_get_xpu_desc succeeded on a closed MR");
	if (rc == -FI_ETOOSMALL && b && len <= len_in)
		FAIL("fi_mr_get_xpu_desc: -FI_ETOOSMALL but *len %zu <= %zu",
		     len, len_in);
	if (rc == 0 && (len > len_in || !b))
		FAIL("fi_mr_get_xpu_desc wrote %zu bytes into %zu", len, len_in);
}

static void do_keydesc(struct st *s)
{
	int live;
	struct fid_mr *mr = pick_mr(s, &live);
	if (!mr || live < 0)
		return;
	if (fi_mr_key(mr) != mr->key || fi_mr_key(mr) != s->mrs[live].key)
		FAIL("fi_mr_key changed");
	if (fi_mr_desc(mr) != mr->mem_desc)
		FAIL("fi_mr_desc != mr->mem_desc");
}

/* Returns 1 when the domain closed (nothing was open). */
static int do_close_domain_early(struct st *s)
{
	int busy = live_count(s) || s->nmapped;
	int rc = fi_close(&s->dom->fid);
	CHECK_RC("fi_close(domain)", rc);
	if (trace)
		fprintf(stderr, "trace: fi_close(domain) early -> %d\n", rc);
	if (busy) {
		if (rc != -FI_EBUSY)
			FAIL("fi_close(domain) with %d live MRs, %d mapped keys: "
			     "%d, not -FI_EBUSY",
			     live_count(s), s->nmapped, rc);
		return 0;
	}
	if (rc)
		FAIL("fi_close(domain) with nothing open: %d", rc);
	return 1;
}

/* -------------------------------------------------------------- entry ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	init_once();
	/* FUZZ_MR_SELFTEST=1: inputs starting "LEAK" leak, "BOOM" abort, so
	 * that the run scripts' failure reporting can be checked. */
	if (selftest && size >= 4 && !memcmp(data, "LEAK", 4)) {
		void *volatile p = malloc(64);
		p = NULL;
		(void)p;
	}
	if (selftest && size >= 4 && !memcmp(data, "BOOM", 4))
		FAIL("self-test crash");
	struct rd rdr = { data, size };
	struct rd *r = &rdr;
	static struct st s; /* zeroed below; static keeps the stack small */
	memset(&s, 0, sizeof(s));
	s.r = r;

	/* The domain. */
	uint8_t d0 = U8(r), d1 = U8(r), d2 = U8(r);
	s.v = ver_ok[d1 % nver_ok];
	s.api = api_of[s.v];
	s.fab = fabrics[s.v];
	struct fi_info *info = infos[s.v];
	struct fi_domain_attr *da = info->domain_attr;
	uint64_t saved_caps = info->caps, saved_dcaps = da->caps;
	int saved_mode = da->mr_mode;
	size_t saved_limit = da->mr_iov_limit;
	uint8_t *saved_auth = da->auth_key;
	size_t saved_auth_size = da->auth_key_size;
	uint8_t dom_auth[64];

	s.hmem = d0 & 1;
	if (s.hmem) {
		info->caps |= FI_HMEM;
		da->caps |= FI_HMEM;
	} else {
		info->caps &= ~FI_HMEM;
		da->caps &= ~FI_HMEM;
	}
	switch ((d0 >> 1) & 3) {
	case 1:
		da->auth_key = NULL;
		da->auth_key_size = FI_AV_AUTH_KEY;
		/* Domain auth keys exist from API 1.5; older callers' are not read. */
		s.av_auth = s.api >= FI_VERSION(1, 5);
		break;
	case 2: {
		size_t n = 1 + d2 % 64;
		for (size_t i = 0; i < n; i++)
			dom_auth[i] = U8(r);
		da->auth_key = dom_auth;
		da->auth_key_size = n;
		break;
	}
	default:
		break;
	}
	int mode = da->mr_mode;
	if (d0 & 0x10)
		mode |= (int)(U16(r) & ALL_MR_MODE);
	if ((d0 & 0x60) == 0x60)
		mode = (d0 & 0x80) ? OX_MR_BASIC : OX_MR_SCALABLE;
	da->mr_mode = mode;
	s.mode = mode == OX_MR_BASIC ? (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
	       : mode == OX_MR_SCALABLE ? 0 : mode;
	static const size_t limits[] = { 0, 1, 2, 4, 1023, 1024, 5000, 0 };
	da->mr_iov_limit = (d0 & 0x20) ? limits[d2 % 8] : saved_limit;
	/* The domain's mr_iov_limit is read from API 1.5 (the ABI 1.1 field). */
	s.iov_limit = (da->mr_iov_limit == 0 || s.api < FI_VERSION(1, 5)) ? 1024
		      : da->mr_iov_limit < 1024 ? da->mr_iov_limit : 1024;

	int rc = fi_domain(s.fab, info, &s.dom, &s);
	if (trace)
		fprintf(stderr,
			"trace: fi_domain api %u.%u hmem %d av_auth %d "
			"auth_key_size %zu mr_mode 0x%x (effective 0x%x) "
			"mr_iov_limit %zu eq %d -> %d\n",
			FI_MAJOR(s.api), FI_MINOR(s.api), s.hmem, s.av_auth,
			da->auth_key_size, da->mr_mode, s.mode,
			da->mr_iov_limit, !!(d0 & 8), rc);
	info->caps = saved_caps;
	da->caps = saved_dcaps;
	da->mr_mode = saved_mode;
	da->mr_iov_limit = saved_limit;
	da->auth_key = saved_auth;
	da->auth_key_size = saved_auth_size;
	CHECK_RC("fi_domain", rc);
	if (rc)
		return 0;

	if (d0 & 8) {
		struct fi_eq_attr ea;
		memset(&ea, 0, sizeof(ea));
		ea.size = 16;
		ea.wait_obj = FI_WAIT_NONE;
		rc = fi_eq_open(s.fab, &ea, &s.eq, NULL);
		if (rc)
			FAIL("fi_eq_open: %d", rc);
		rc = fi_domain_bind(s.dom, &s.eq->fid, OX_REG_MR);
		CHECK_RC("fi_domain_bind(FI_REG_MR)", rc);
		if (rc) {
			if (fi_close(&s.eq->fid))
				FAIL("fi_close(eq) after a failed bind");
			s.eq = NULL;
		}
	}

	/* The operations. */
	int closed = 0;
	for (int op = 0; op < MAX_OPS && r->n && !closed; op++) {
		uint8_t o = U8(r);
		switch (o % 16) {
		case 0:
		case 1:
		case 2:
		case 3: do_register(&s, 0); break;
		case 4: do_register(&s, 1); break;
		case 5:
		case 6: do_register(&s, 2); break;
		case 7: do_close(&s); break;
		case 8: do_raw_attr(&s); break;
		case 9: do_map_raw(&s); break;
		case 10: do_unmap(&s); break;
		case 11: do_enable(&s); break;
		case 12: do_refresh(&s); break;
		case 13: do_xpu(&s); break;
		case 14:
			if (o & 0x80)
				do_bind(&s);
			else
				do_keydesc(&s);
			break;
		default:
			if (o & 0x80)
				closed = do_close_domain_early(&s);
			else
				drain_check_none(&s, "an operation");
			break;
		}
	}

	/* Tear down: sub-MRs were registered after their bases. */
	if (!closed) {
		for (int i = s.nmr - 1; i >= 0; i--) {
			struct rec *m = &s.mrs[i];
			if (!m->live)
				continue;
			rc = fi_close(&m->mr->fid);
			if (rc)
				FAIL("fi_close of MR %d at teardown: %d", i, rc);
			m->live = 0;
			if (m->parent >= 0)
				s.mrs[m->parent].nchild--;
		}
		for (int i = 0; i < s.nmapped; i++) {
			rc = fi_mr_unmap_key(s.dom, s.mapped[i]);
			if (rc)
				FAIL("fi_mr_unmap_key at teardown: %d", rc);
		}
		rc = fi_close(&s.dom->fid);
		if (rc)
			FAIL("fi_close(domain) at teardown: %d", rc);
	}
	if (s.eq) {
		rc = fi_close(&s.eq->fid);
		if (rc)
			FAIL("fi_close(eq) at teardown: %d", rc);
	}
	return 0;
}
