/*
 * mr_mode negotiation in fi_getinfo: a bit the domain needs is kept when
 * the application offers it and makes the request fail when it does not;
 * bits it does not need are cleared (oxshm keeps FI_MR_PROV_KEY when it is
 * offered and FI_OXSHM_MR_MODE is unset); FI_MR_BASIC and FI_MR_SCALABLE
 * are never cleared. FI_OXSHM_MR_MODE fixes the bits an oxshm domain
 * requires, so each required bit runs in a child with that variable.
 * See also test_mr_match.c (every match opens) and test_mr_mode_effects.c
 * (what each bit changes at registration); FI_MR_RAW is in test_mr_raw.c.
 */
#include "test.h"

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

/* Checks negotiation for a domain that requires exactly `bit` (set through
 * FI_OXSHM_MR_MODE by the case's env), then opens and uses such a domain. */
static int requires_bit(int bit)
{
	struct fi_info *info = (struct fi_info *)&info;
	/* Not offered: nothing matches. */
	CHECK_RC(getinfo_mode(0, &info), -FI_ENODATA);
	CHECK_RC(getinfo_mode(MR_ALL & ~bit, &info), -FI_ENODATA);
	CHECK(info == (struct fi_info *)&info);
	/* Offered alone: kept. */
	CHECK_OK(getinfo_mode(bit, &info));
	CHECK(info->domain_attr->mr_mode == bit);
	fi_freeinfo(info);
	/* Offered with everything else: the rest is cleared. */
	CHECK_OK(getinfo_mode(MR_ALL, &info));
	CHECK(info->domain_attr->mr_mode == bit);
	fi_freeinfo(info);
	/* No hints: the requirement is reported. */
	CHECK_OK(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, &info));
	CHECK(info->domain_attr->mr_mode == bit);
	fi_freeinfo(info);

	/* A domain of that mode registers (with the access the mode asks for). */
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(open_mode(&r, MR_ALL));
	uint64_t access = FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV;
	if (bit == FI_MR_COLLECTIVE)
		access |= FI_COLLECTIVE;
	CHECK_OK(fi_mr_reg(r.domain, buf[0], sizeof(buf[0]), access, 0, 1, 0, &mr, NULL));
	if (bit == FI_MR_RAW)
		CHECK(fi_mr_key(mr) == FI_KEY_NOTAVAIL);
	else
		CHECK(fi_mr_key(mr) != FI_KEY_NOTAVAIL);
	if (bit != FI_MR_PROV_KEY && bit != FI_MR_RAW)
		CHECK(fi_mr_key(mr) == 1);
	CHECK(fi_mr_desc(mr) != NULL);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(test_close(&r));

	/* fi_domain refuses an info that drops the required bit. */
	CHECK_OK(getinfo_mode(bit, &r.info));
	CHECK_OK(fi_fabric(r.info->fabric_attr, &r.fabric, NULL));
	r.info->domain_attr->mr_mode = 0;
	r.domain = (struct fid_domain *)&r;
	CHECK_RC(fi_domain(r.fabric, r.info, &r.domain, NULL), -FI_EINVAL);
	CHECK(r.domain == (struct fid_domain *)&r);
	r.domain = NULL;
	return test_close(&r);
}

static int mode_local(void) { return requires_bit(FI_MR_LOCAL); }
static int mode_raw(void) { return requires_bit(FI_MR_RAW); }
static int mode_virt_addr(void) { return requires_bit(FI_MR_VIRT_ADDR); }
static int mode_allocated(void) { return requires_bit(FI_MR_ALLOCATED); }
static int mode_prov_key(void) { return requires_bit(FI_MR_PROV_KEY); }
static int mode_mmu_notify(void) { return requires_bit(FI_MR_MMU_NOTIFY); }
static int mode_rma_event(void) { return requires_bit(FI_MR_RMA_EVENT); }
static int mode_endpoint(void) { return requires_bit(FI_MR_ENDPOINT); }
static int mode_hmem(void) { return requires_bit(FI_MR_HMEM); }
static int mode_collective(void) { return requires_bit(FI_MR_COLLECTIVE); }
#ifdef FI_MR_XPU_DESC
static int mode_xpu_desc(void) { return requires_bit(FI_MR_XPU_DESC); }
#endif

/* Several bits at once, by name list and by number. */
static int mode_list(void)
{
	struct fi_info *info = (struct fi_info *)&info;
	int want = FI_MR_LOCAL | FI_MR_VIRT_ADDR;
	CHECK_RC(getinfo_mode(FI_MR_LOCAL, &info), -FI_ENODATA);
	CHECK_RC(getinfo_mode(FI_MR_VIRT_ADDR, &info), -FI_ENODATA);
	CHECK_OK(getinfo_mode(MR_ALL, &info));
	CHECK(info->domain_attr->mr_mode == want);
	fi_freeinfo(info);
	return 0;
}

static int mode_number(void)
{
	struct fi_info *info = NULL;
	CHECK_OK(getinfo_mode(MR_ALL, &info));
	CHECK(info->domain_attr->mr_mode == (FI_MR_LOCAL | FI_MR_PROV_KEY));
	fi_freeinfo(info);
	return 0;
}

/* Without FI_OXSHM_MR_MODE oxshm needs no bit; of those offered it keeps
 * FI_MR_PROV_KEY only. */
static int default_clears_unneeded(void)
{
	struct fi_info *info = NULL;
	CHECK_OK(getinfo_mode(MR_ALL, &info));
	CHECK(info->domain_attr->mr_mode == FI_MR_PROV_KEY);
	fi_freeinfo(info);
	CHECK_OK(getinfo_mode(MR_ALL & ~FI_MR_PROV_KEY, &info));
	CHECK(info->domain_attr->mr_mode == 0);
	fi_freeinfo(info);
	CHECK_OK(getinfo_mode(0, &info));
	CHECK(info->domain_attr->mr_mode == 0);
	fi_freeinfo(info);
	return 0;
}

/* FI_MR_BASIC alone is kept, and means VIRT_ADDR | ALLOCATED | PROV_KEY. */
static int basic_forced(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = NULL, *c = SENTINEL;
	CHECK_OK(open_mode(&r, MR_BASIC));
	CHECK(r.info->domain_attr->mr_mode == MR_BASIC);
	/* PROV_KEY: requested keys ignored. */
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &a, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[1], 64, FI_REMOTE_READ, 0, 1, 0, &b, NULL));
	CHECK(fi_mr_key(a) != fi_mr_key(b));
	/* VIRT_ADDR: the base address is the buffer's. */
	uint64_t base = 0;
	uint8_t raw[256];
	size_t n = sizeof(raw);
	CHECK_OK(fi_mr_raw_attr(a, &base, raw, &n, 0));
	CHECK(base == (uint64_t)(uintptr_t)buf[0]);
	/* ALLOCATED: an unmapped range is refused. */
	long page = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	CHECK(p != MAP_FAILED);
	CHECK_OK(munmap(p, (size_t)page));
	CHECK_RC(fi_mr_reg(r.domain, p, (size_t)page, FI_REMOTE_READ, 0, 0, 0, &c, NULL),
		 -FI_EFAULT);
	CHECK(c == SENTINEL);
	CHECK_OK(fi_close(&a->fid));
	CHECK_OK(fi_close(&b->fid));
	return test_close(&r);
}

/* FI_MR_SCALABLE alone is kept: requested keys and offsets from 0. */
static int scalable_kept(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = SENTINEL;
	CHECK_OK(open_mode(&r, MR_SCALABLE));
	CHECK(r.info->domain_attr->mr_mode == MR_SCALABLE);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 17, 0, &a, NULL));
	CHECK(fi_mr_key(a) == 17);
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 17, 0, &b, NULL), -FI_ENOKEY);
	CHECK(b == SENTINEL);
	CHECK_OK(fi_close(&a->fid));
	return test_close(&r);
}

/* FI_MR_BASIC or FI_MR_SCALABLE mixed with other bits matches nothing. */
static int legacy_mixed_refused(void)
{
	struct fi_info *info = (struct fi_info *)&info;
	CHECK_RC(getinfo_mode(MR_BASIC | FI_MR_LOCAL, &info), -FI_ENODATA);
	CHECK_RC(getinfo_mode(MR_SCALABLE | FI_MR_PROV_KEY, &info), -FI_ENODATA);
	CHECK(info == (struct fi_info *)&info);
	return 0;
}

#define ENV_MODE(bits) "FI_OXSHM_MR_MODE=" bits

static const struct test_case cases[] = {
	CASE(default_clears_unneeded),
	CASE(basic_forced),
	CASE(scalable_kept),
	CASE(legacy_mixed_refused),
	CASE_ENV(mode_local, ENV_MODE("FI_MR_LOCAL")),
	CASE_ENV(mode_raw, ENV_MODE("FI_MR_RAW")),
	CASE_ENV(mode_virt_addr, ENV_MODE("FI_MR_VIRT_ADDR")),
	CASE_ENV(mode_allocated, ENV_MODE("FI_MR_ALLOCATED")),
	CASE_ENV(mode_prov_key, ENV_MODE("FI_MR_PROV_KEY")),
	CASE_ENV(mode_mmu_notify, ENV_MODE("FI_MR_MMU_NOTIFY")),
	CASE_ENV(mode_rma_event, ENV_MODE("FI_MR_RMA_EVENT")),
	CASE_ENV(mode_endpoint, ENV_MODE("FI_MR_ENDPOINT")),
	CASE_ENV(mode_hmem, ENV_MODE("FI_MR_HMEM")),
	CASE_ENV(mode_collective, ENV_MODE("FI_MR_COLLECTIVE")),
#ifdef FI_MR_XPU_DESC
	CASE_ENV(mode_xpu_desc, ENV_MODE("FI_MR_XPU_DESC")),
#endif
	CASE_ENV(mode_list, ENV_MODE("FI_MR_LOCAL,FI_MR_VIRT_ADDR")),
	CASE_ENV(mode_number, ENV_MODE("0x44")),
};

TEST_MAIN(cases)
