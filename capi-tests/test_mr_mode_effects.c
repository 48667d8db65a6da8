/*
 * What mr_mode bits change at registration, each required through
 * FI_OXSHM_MR_MODE in a child: FI_MR_ALLOCATED (unbacked ranges refused),
 * FI_MR_VIRT_ADDR (regions addressed by virtual address), FI_MR_ENDPOINT
 * and FI_MR_RMA_EVENT (regions created disabled, fi_mr_enable, fi_mr_bind),
 * FI_MR_MMU_NOTIFY (fi_mr_refresh).
 */
#include "test.h"

#include <rdma/fi_endpoint.h>
#include <sys/mman.h>

#define SENTINEL ((struct fid_mr *)(uintptr_t)0x5e5e5e50)

/* The legacy mr_mode values (2.x headers deprecate the macros). */
#define MR_BASIC (1 << 0)
#define MR_SCALABLE (1 << 1)
/* The deprecated fi_info mode bit FI_LOCAL_MR. */
#define LOCAL_MR_MODE (1ULL << 55)

#ifdef FI_MR_XPU_DESC
#define MR_XPU_BIT FI_MR_XPU_DESC
#else
#define MR_XPU_BIT 0
#endif

/* Every modern mr_mode bit an application can offer. */
#define MR_ALL                                                            \
	(FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |   \
	 FI_MR_PROV_KEY | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT |           \
	 FI_MR_ENDPOINT | FI_MR_HMEM | FI_MR_COLLECTIVE | MR_XPU_BIT)

static char buf[2][4096];

/* fi_getinfo with `mr_mode` offered; returns its code, *info on success. */
static inline int getinfo_mode(int mr_mode, struct fi_info **info)
{
	struct fi_info *hints = test_hints();
	hints->domain_attr->mr_mode = mr_mode;
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	return rc;
}

static inline int open_mode(struct test_res *r, int mr_mode)
{
	memset(r, 0, sizeof(*r));
	CHECK_OK(getinfo_mode(mr_mode, &r->info));
	CHECK_OK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	CHECK_OK(fi_domain(r->fabric, r->info, &r->domain, NULL));
	return 0;
}

/* ---- FI_MR_ALLOCATED ---- */

/* An address range that was mapped and then unmapped. The library has
 * already mapped what it needs for registrations (one was made first), so
 * nothing else lands in the hole before the call under test. */
static void *unmapped_range(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || munmap(p, len))
		abort();
	return p;
}

static int warm_up(struct fid_domain *d)
{
	struct fid_mr *mr = NULL;
	CHECK_OK(fi_mr_reg(d, buf[0], 64, FI_REMOTE_READ, 0, 1000, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int allocated_unbacked_refused(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	CHECK_OK(open_mode(&r, FI_MR_ALLOCATED));
	CHECK(r.info->domain_attr->mr_mode == FI_MR_ALLOCATED);
	CHECK_OK(warm_up(r.domain));
	void *p = unmapped_range(2 * page);
	CHECK_RC(fi_mr_reg(r.domain, p, 2 * page, FI_REMOTE_READ, 0, 1, 0, &mr, NULL), -FI_EFAULT);
	CHECK_RC(fi_mr_reg(r.domain, (char *)p + 10, 1, FI_REMOTE_READ, 0, 1, 0, &mr, NULL),
		 -FI_EFAULT);
	struct iovec iov[2] = { { buf[0], 64 }, { p, 64 } };
	CHECK_RC(fi_mr_regv(r.domain, iov, 2, FI_REMOTE_READ, 0, 1, 0, &mr, NULL), -FI_EFAULT);
	struct fi_mr_attr a;
	memset(&a, 0, sizeof(a));
	a.mr_iov = &iov[1];
	a.iov_count = 1;
	a.access = FI_REMOTE_READ;
	a.requested_key = 1;
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EFAULT);
	CHECK(mr == SENTINEL);
	/* Nothing was kept: key 1 is free. */
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* A range whose first page is mapped and second is not. */
static int allocated_partly_unbacked(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	CHECK_OK(open_mode(&r, FI_MR_ALLOCATED));
	CHECK_OK(warm_up(r.domain));
	char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	CHECK_OK(munmap(p + page, page));
	CHECK_RC(fi_mr_reg(r.domain, p, 2 * page, FI_REMOTE_READ, 0, 1, 0, &mr, NULL), -FI_EFAULT);
	CHECK_RC(fi_mr_reg(r.domain, p + page - 1, 2, FI_REMOTE_READ, 0, 1, 0, &mr, NULL),
		 -FI_EFAULT);
	CHECK(mr == SENTINEL);
	CHECK_OK(fi_mr_reg(r.domain, p, page, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(munmap(p, page));
	return test_close(&r);
}

/* Backed memory of every kind registers under FI_MR_ALLOCATED. */
static int allocated_backed_works(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char stack[256];
	char *heap = malloc(100000);
	CHECK(heap != NULL);
	char *map = mmap(NULL, 4 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	CHECK_OK(open_mode(&r, FI_MR_ALLOCATED));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], sizeof(buf), FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_mr_reg(r.domain, stack, sizeof(stack), FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_mr_reg(r.domain, heap, 100000, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	/* Mapped but never touched pages are mapped too. */
	CHECK_OK(fi_mr_reg(r.domain, map, 4 * page, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	struct iovec iov[3] = { { buf[0], 10 }, { heap + 5000, 10 }, { map + page, page } };
	CHECK_OK(fi_mr_regv(r.domain, iov, 3, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	free(heap);
	CHECK_OK(munmap(map, 4 * page));
	return test_close(&r);
}

/* Without FI_MR_ALLOCATED any address range registers, backed or not. */
static int unallocated_unbacked_registers(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	CHECK_OK(open_mode(&r, 0));
	CHECK(!(r.info->domain_attr->mr_mode & FI_MR_ALLOCATED));
	CHECK_OK(warm_up(r.domain));
	void *p = unmapped_range(2 * page);
	CHECK_OK(fi_mr_reg(r.domain, p, 2 * page, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* ---- FI_MR_VIRT_ADDR ---- */

static int virt_addr_base(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint64_t base = 0;
	uint8_t raw[256];
	size_t n = sizeof(raw);
	CHECK_OK(open_mode(&r, FI_MR_VIRT_ADDR));
	CHECK(r.info->domain_attr->mr_mode == FI_MR_VIRT_ADDR);
	CHECK_OK(fi_mr_reg(r.domain, buf[1] + 100, 64, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_raw_attr(mr, &base, raw, &n, 0));
	CHECK(base == (uint64_t)(uintptr_t)(buf[1] + 100));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* ---- FI_MR_ENDPOINT and FI_MR_RMA_EVENT ---- */

/* A stand-in for an object of another provider (oxshm has no endpoints or
 * counters yet, so none of its own exists). */
static struct fid fake_object(size_t fclass)
{
	struct fid f;
	memset(&f, 0, sizeof(f));
	f.fclass = fclass;
	return f;
}

/* FI_MR_ENDPOINT: regions start disabled and cannot be enabled before an
 * endpoint is bound; a foreign endpoint cannot be bound. */
static int endpoint_created_disabled(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct fid ep = fake_object(FI_CLASS_EP);
	CHECK_OK(open_mode(&r, FI_MR_ENDPOINT));
	CHECK(r.info->domain_attr->mr_mode == FI_MR_ENDPOINT);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_RC(fi_mr_enable(mr), -FI_EOPBADSTATE);
	CHECK_RC(fi_mr_bind(mr, &ep, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, &ep, FI_REMOTE_WRITE), -FI_EINVAL);
	/* The refused bind changed nothing. */
	CHECK_RC(fi_mr_enable(mr), -FI_EOPBADSTATE);
	/* A disabled region closes like any other. */
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* FI_MR_RMA_EVENT: a region registered with FI_RMA_EVENT starts disabled
 * and is enabled by fi_mr_enable (again: no change); one without the flag
 * is usable at once, and fi_mr_enable on it does nothing. */
static int rma_event_enable(void)
{
	struct test_res r;
	struct fid_mr *ev = NULL, *plain = NULL;
	struct fid cntr = fake_object(FI_CLASS_CNTR);
	CHECK_OK(open_mode(&r, FI_MR_RMA_EVENT));
	CHECK(r.info->domain_attr->mr_mode == FI_MR_RMA_EVENT);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_WRITE, 0, 1, FI_RMA_EVENT, &ev, NULL));
	CHECK_RC(fi_mr_bind(ev, &cntr, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_OK(fi_mr_enable(ev));
	CHECK_OK(fi_mr_enable(ev));
	CHECK_RC(fi_mr_bind(ev, &cntr, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_OK(fi_mr_reg(r.domain, buf[1], 64, FI_REMOTE_WRITE, 0, 2, 0, &plain, NULL));
	CHECK_OK(fi_mr_enable(plain));
	CHECK_OK(fi_close(&ev->fid));
	CHECK_OK(fi_close(&plain->fid));
	return test_close(&r);
}

/* A region closes while still disabled (never enabled). */
static int rma_event_close_disabled(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(open_mode(&r, FI_MR_RMA_EVENT));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_WRITE, 0, 1, FI_RMA_EVENT, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* FI_MR_ENDPOINT with a real endpoint: bind, enable, no binding after
 * enable, and the MR must close before its endpoint. */
static int endpoint_bind_real(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct fid_ep *ep = NULL;
	CHECK_OK(open_mode(&r, FI_MR_ENDPOINT));
	CHECK_OK(fi_endpoint(r.domain, r.info, &ep, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_RC(fi_mr_enable(mr), -FI_EOPBADSTATE);
	CHECK_RC(fi_mr_bind(mr, &ep->fid, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_OK(fi_mr_bind(mr, &ep->fid, 0));
	CHECK_OK(fi_mr_enable(mr));
	CHECK_RC(fi_mr_bind(mr, &ep->fid, 0), -FI_EOPBADSTATE);
	/* MR before endpoint. */
	CHECK_RC(fi_close(&ep->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&ep->fid));
	return test_close(&r);
}

/* FI_MR_RMA_EVENT with a real counter: bound with FI_REMOTE_WRITE before
 * fi_mr_enable, only to a region registered with FI_RMA_EVENT; the counter
 * cannot close while an MR is bound to it. */
static int rma_event_counter_real(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct fid_cntr *cntr = NULL;
	struct fi_cntr_attr ca;
	memset(&ca, 0, sizeof(ca));
	ca.events = FI_CNTR_EVENTS_COMP;
	ca.wait_obj = FI_WAIT_NONE;
	CHECK_OK(open_mode(&r, FI_MR_RMA_EVENT));
	CHECK_OK(fi_cntr_open(r.domain, &ca, &cntr, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_WRITE, 0, 1, FI_RMA_EVENT, &mr, NULL));
	CHECK_RC(fi_mr_bind(mr, &cntr->fid, 0), -FI_EINVAL);
	CHECK_OK(fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE));
	CHECK_OK(fi_mr_enable(mr));
	CHECK_RC(fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE), -FI_EOPBADSTATE);
	CHECK_RC(fi_close(&cntr->fid), -FI_EBUSY);
	/* A region registered without FI_RMA_EVENT takes no counter. */
	struct fid_mr *plain = NULL;
	CHECK_OK(fi_mr_reg(r.domain, buf[1], 64, FI_REMOTE_WRITE, 0, 2, 0, &plain, NULL));
	CHECK_RC(fi_mr_bind(plain, &cntr->fid, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_OK(fi_close(&plain->fid));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&cntr->fid));
	return test_close(&r);
}

/* Both bits: an endpoint is still needed before enabling. */
static int endpoint_and_rma_event(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(open_mode(&r, FI_MR_ENDPOINT | FI_MR_RMA_EVENT));
	CHECK(r.info->domain_attr->mr_mode == (FI_MR_ENDPOINT | FI_MR_RMA_EVENT));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_WRITE, 0, 1, FI_RMA_EVENT, &mr, NULL));
	CHECK_RC(fi_mr_enable(mr), -FI_EOPBADSTATE);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* Without the mode bits, FI_RMA_EVENT is accepted and the region usable. */
static int rma_event_flag_without_mode(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(open_mode(&r, 0));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_WRITE, 0, 1, FI_RMA_EVENT, &mr, NULL));
	CHECK_OK(fi_mr_enable(mr));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* FI_MR_MMU_NOTIFY: fi_mr_refresh is supported. */
static int mmu_notify_refresh(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0] + 8, 16 };
	CHECK_OK(open_mode(&r, FI_MR_MMU_NOTIFY));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_WRITE, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_refresh(mr, NULL, 0, 0));
	CHECK_OK(fi_mr_refresh(mr, &iov, 1, 0));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

#define ENV_MODE(bits) "FI_OXSHM_MR_MODE=" bits

static const struct test_case cases[] = {
	CASE_ENV(allocated_unbacked_refused, ENV_MODE("FI_MR_ALLOCATED")),
	CASE_ENV(allocated_partly_unbacked, ENV_MODE("FI_MR_ALLOCATED")),
	CASE_ENV(allocated_backed_works, ENV_MODE("FI_MR_ALLOCATED")),
	CASE(unallocated_unbacked_registers),
	CASE_ENV(virt_addr_base, ENV_MODE("FI_MR_VIRT_ADDR")),
	CASE_ENV(endpoint_created_disabled, ENV_MODE("FI_MR_ENDPOINT")),
	CASE_ENV(endpoint_bind_real, ENV_MODE("FI_MR_ENDPOINT")),
	CASE_ENV(rma_event_counter_real, ENV_MODE("FI_MR_RMA_EVENT")),
	CASE_ENV(rma_event_enable, ENV_MODE("FI_MR_RMA_EVENT")),
	CASE_ENV(rma_event_close_disabled, ENV_MODE("FI_MR_RMA_EVENT")),
	CASE_ENV(endpoint_and_rma_event, ENV_MODE("FI_MR_ENDPOINT|FI_MR_RMA_EVENT")),
	CASE(rma_event_flag_without_mode),
	CASE_ENV(mmu_notify_refresh, ENV_MODE("FI_MR_MMU_NOTIFY")),
};

TEST_MAIN(cases)
