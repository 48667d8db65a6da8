/*
 * Sub-MRs (fi_mr_attr.base_mr, from API 2.0): a region carved from a
 * registered one. It must lie inside its base, gets its own key and rights
 * (no wider than the base's), inherits iface/device/hmem_data/page_size,
 * may itself be a base; a base with live sub-MRs does not close.
 * With headers older than 2.0 the struct has no base_mr: one case checks
 * that such an attr still registers.
 */
#include "test.h"

#include <sys/mman.h>

#define SENTINEL ((struct fid_mr *)(uintptr_t)0x5e5e5e50)

static char buf[4][4096];

#if !TEST_HDR_AT_LEAST(2, 0)

/* Without base_mr in the struct, regattr registers plain regions. */
static int no_base_mr_before_2_0(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a;
	memset(&a, 0, sizeof(a));
	a.mr_iov = &iov;
	a.iov_count = 1;
	a.access = FI_REMOTE_READ;
	a.requested_key = 1;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK(fi_mr_key(mr) == 1);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static const struct test_case cases[] = {
	CASE(no_base_mr_before_2_0),
};

#else

static int open_mode(struct test_res *r, uint64_t caps, int mr_mode)
{
	struct fi_info *hints = test_hints();
	hints->caps = caps;
	hints->domain_attr->mr_mode = mr_mode;
	memset(r, 0, sizeof(*r));
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &r->info);
	fi_freeinfo(hints);
	CHECK_OK(rc);
	CHECK_OK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	CHECK_OK(fi_domain(r->fabric, r->info, &r->domain, NULL));
	return 0;
}

/* A sub-MR request over [p, p+len) of `base`; `iov` must outlive it. */
static struct fi_mr_attr sub_attr(struct iovec *iov, void *p, size_t len, uint64_t access,
				  uint64_t key, const struct fid_mr *base)
{
	struct fi_mr_attr a;
	memset(&a, 0, sizeof(a));
	iov->iov_base = p;
	iov->iov_len = len;
	a.mr_iov = iov;
	a.iov_count = 1;
	a.access = access;
	a.requested_key = key;
	a.base_mr = base;
	return a;
}

#define RW (FI_REMOTE_READ | FI_REMOTE_WRITE)

static int sub_inside_own_key(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = NULL;
	struct iovec iov;
	int ctx;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &base, NULL));
	struct fi_mr_attr a = sub_attr(&iov, buf[0] + 100, 200, FI_REMOTE_READ, 2, base);
	a.context = &ctx;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
	CHECK(sub != NULL && sub != base);
	CHECK(sub->fid.fclass == FI_CLASS_MR && sub->fid.context == &ctx);
	CHECK(fi_mr_key(sub) == 2 && fi_mr_key(base) == 1);
	CHECK(fi_mr_desc(sub) != NULL && fi_mr_desc(sub) != fi_mr_desc(base));
	CHECK_OK(fi_close(&sub->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* Provider keys: the sub-MR's key differs from its base's. */
static int sub_prov_key(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = NULL;
	struct iovec iov;
	CHECK_OK(open_mode(&r, 0, FI_MR_PROV_KEY));
	CHECK(r.info->domain_attr->mr_mode == FI_MR_PROV_KEY);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 0, 0, &base, NULL));
	struct fi_mr_attr a = sub_attr(&iov, buf[0], 8, FI_REMOTE_WRITE, 0, base);
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
	CHECK(fi_mr_key(sub) != fi_mr_key(base));
	CHECK(fi_mr_key(sub) != FI_KEY_NOTAVAIL);
	CHECK_OK(fi_close(&sub->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* The base's whole range, its first and its last byte are inside. */
static int sub_edges_inside(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub[3];
	struct iovec iov[3];
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[1], 4096, RW, 0, 1, 0, &base, NULL));
	struct fi_mr_attr a0 = sub_attr(&iov[0], buf[1], 4096, RW, 2, base);
	struct fi_mr_attr a1 = sub_attr(&iov[1], buf[1], 1, RW, 3, base);
	struct fi_mr_attr a2 = sub_attr(&iov[2], buf[1] + 4095, 1, RW, 4, base);
	CHECK_OK(fi_mr_regattr(r.domain, &a0, 0, &sub[0]));
	CHECK_OK(fi_mr_regattr(r.domain, &a1, 0, &sub[1]));
	CHECK_OK(fi_mr_regattr(r.domain, &a2, 0, &sub[2]));
	for (int i = 0; i < 3; i++)
		CHECK_OK(fi_close(&sub[i]->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* Any byte outside the base: -FI_EINVAL, nothing written. */
static int sub_outside(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = SENTINEL;
	struct iovec iov;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[1] + 100, 1000, RW, 0, 1, 0, &base, NULL));
	struct {
		char *p;
		size_t len;
	} out[] = {
		{ buf[1] + 99, 10 },	/* starts one byte early */
		{ buf[1] + 1000, 101 }, /* ends one byte late */
		{ buf[1] + 99, 1002 },	/* wider on both sides */
		{ buf[1] + 1100, 1 },	/* just past the end */
		{ buf[2], 64 },		/* elsewhere */
	};
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		struct fi_mr_attr a = sub_attr(&iov, out[i].p, out[i].len, FI_REMOTE_READ, 2, base);
		CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &sub), -FI_EINVAL);
	}
	CHECK(sub == SENTINEL);
	/* None was counted as a sub-MR: the base closes. */
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* Rights the base lacks cannot be granted by a sub-MR. */
static int sub_wider_access(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = SENTINEL;
	struct iovec iov;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, FI_REMOTE_READ | FI_READ, 0, 1, 0, &base,
			   NULL));
	struct fi_mr_attr a = sub_attr(&iov, buf[0], 64, FI_REMOTE_READ | FI_REMOTE_WRITE, 2, base);
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &sub), -FI_EINVAL);
	a.access = FI_WRITE;
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &sub), -FI_EINVAL);
	CHECK(sub == SENTINEL);
	/* Narrower or equal rights are fine. */
	a.access = FI_REMOTE_READ;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
	CHECK_OK(fi_close(&sub->fid));
	a.access = FI_REMOTE_READ | FI_READ;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
	CHECK_OK(fi_close(&sub->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* A base with a live sub-MR: -FI_EBUSY; after the sub-MR closes: 0. */
static int sub_close_order(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *s1 = NULL, *s2 = NULL;
	struct iovec i1, i2;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &base, NULL));
	struct fi_mr_attr a1 = sub_attr(&i1, buf[0], 64, RW, 2, base);
	struct fi_mr_attr a2 = sub_attr(&i2, buf[0] + 64, 64, RW, 3, base);
	CHECK_OK(fi_mr_regattr(r.domain, &a1, 0, &s1));
	CHECK_OK(fi_mr_regattr(r.domain, &a2, 0, &s2));
	CHECK_RC(fi_close(&base->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&s1->fid));
	CHECK_RC(fi_close(&base->fid), -FI_EBUSY);
	/* The base is still live and usable after the refused close. */
	CHECK(fi_mr_key(base) == 1);
	CHECK_OK(fi_close(&s2->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* base -> mid -> leaf: each level closes only after the one below. */
static int sub_hierarchy_3_levels(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *mid = NULL, *leaf = NULL, *bad = SENTINEL;
	struct iovec i1, i2, i3;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW | FI_READ, 0, 1, 0, &base, NULL));
	struct fi_mr_attr a1 = sub_attr(&i1, buf[0] + 1024, 2048, RW, 2, base);
	CHECK_OK(fi_mr_regattr(r.domain, &a1, 0, &mid));
	struct fi_mr_attr a2 = sub_attr(&i2, buf[0] + 1024 + 512, 512, FI_REMOTE_READ, 3, mid);
	CHECK_OK(fi_mr_regattr(r.domain, &a2, 0, &leaf));
	CHECK(fi_mr_key(leaf) == 3);
	/* The leaf is checked against its own base (mid), not the top. */
	struct fi_mr_attr a3 = sub_attr(&i3, buf[0], 16, FI_REMOTE_READ, 4, mid);
	CHECK_RC(fi_mr_regattr(r.domain, &a3, 0, &bad), -FI_EINVAL);
	a3 = sub_attr(&i3, buf[0] + 1024, 16, FI_READ, 4, mid);
	CHECK_RC(fi_mr_regattr(r.domain, &a3, 0, &bad), -FI_EINVAL);
	CHECK(bad == SENTINEL);
	CHECK_RC(fi_close(&base->fid), -FI_EBUSY);
	CHECK_RC(fi_close(&mid->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&leaf->fid));
	CHECK_RC(fi_close(&base->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&mid->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* A closed base, a foreign object and another domain's MR: -FI_EINVAL. */
static int sub_bad_base(void)
{
	struct test_res r;
	struct fid_domain *d2 = NULL;
	struct fid_mr *base = NULL, *other = NULL, *sub = SENTINEL;
	struct fid_mr fake;
	struct iovec iov;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_domain(r.fabric, r.info, &d2, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &base, NULL));
	CHECK_OK(fi_mr_reg(d2, buf[0], 4096, RW, 0, 1, 0, &other, NULL));
	struct fi_mr_attr a = sub_attr(&iov, buf[0], 64, RW, 2, other);
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &sub), -FI_EINVAL);
	memset(&fake, 0, sizeof(fake));
	fake.fid.fclass = FI_CLASS_MR;
	a.base_mr = &fake;
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &sub), -FI_EINVAL);
	a.base_mr = (struct fid_mr *)r.domain;
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &sub), -FI_EINVAL);
	CHECK_OK(fi_close(&base->fid));
	a.base_mr = base;
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &sub), -FI_EINVAL);
	CHECK(sub == SENTINEL);
	CHECK_OK(fi_close(&other->fid));
	CHECK_OK(fi_close(&d2->fid));
	return test_close(&r);
}

/* A base of several iovs: a sub-MR inside one of them is fine; one over
 * the gap between them is outside. */
static int sub_of_regv_base(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = NULL, *bad = SENTINEL;
	struct iovec parts[2] = { { buf[0], 4096 }, { buf[2], 4096 } };
	struct iovec iov;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regv(r.domain, parts, 2, RW, 0, 1, 0, &base, NULL));
	struct fi_mr_attr a = sub_attr(&iov, buf[2] + 10, 100, RW, 2, base);
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
	a = sub_attr(&iov, buf[1] + 10, 100, RW, 3, base);
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &bad), -FI_EINVAL);
	a = sub_attr(&iov, buf[0] + 4000, 200, RW, 3, base);
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &bad), -FI_EINVAL);
	CHECK(bad == SENTINEL);
	/* A sub-MR of two iovs, each inside. */
	struct iovec two[2] = { { buf[0], 10 }, { buf[2] + 4000, 96 } };
	struct fid_mr *sub2 = NULL;
	a = sub_attr(&iov, NULL, 0, RW, 4, base);
	a.mr_iov = two;
	a.iov_count = 2;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub2));
	CHECK_OK(fi_close(&sub2->fid));
	CHECK_OK(fi_close(&sub->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* Adjacent bases: a sub-MR over both is outside either one. */
static int sub_across_two_bases(void)
{
	struct test_res r;
	struct fid_mr *b1 = NULL, *b2 = NULL, *bad = SENTINEL;
	struct iovec iov;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 2048, RW, 0, 1, 0, &b1, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0] + 2048, 2048, RW, 0, 2, 0, &b2, NULL));
	struct fi_mr_attr a = sub_attr(&iov, buf[0] + 2000, 100, RW, 3, b1);
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &bad), -FI_EINVAL);
	a.base_mr = b2;
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &bad), -FI_EINVAL);
	CHECK(bad == SENTINEL);
	CHECK_OK(fi_close(&b1->fid));
	CHECK_OK(fi_close(&b2->fid));
	return test_close(&r);
}

/* A sub-MR's requested key follows the key rules. */
static int sub_requested_key_in_use(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = SENTINEL;
	struct iovec iov;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &base, NULL));
	struct fi_mr_attr a = sub_attr(&iov, buf[0], 64, RW, 1, base);
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &sub), -FI_ENOKEY);
	a.requested_key = FI_KEY_NOTAVAIL;
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &sub), -FI_EKEYREJECTED);
	CHECK(sub == SENTINEL);
	/* The refused sub-MRs did not count against the base. */
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* iface, device, hmem_data and page_size come from the base: on a sub-MR
 * they are ignored, even values that would be refused on a base. */
static int sub_inherits_attrs(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = NULL;
	struct iovec iov;
	CHECK_OK(open_mode(&r, FI_HMEM, 0));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &base, NULL));
	struct fi_mr_attr a = sub_attr(&iov, buf[0], 64, RW, 2, base);
	a.iface = (enum fi_hmem_iface)99;
	a.device.reserved = 7;
	a.page_size = 12345;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
	CHECK_OK(fi_close(&sub->fid));
	a.iface = FI_HMEM_CUDA;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
	CHECK_OK(fi_close(&sub->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* The base_mr field must be NULL with FI_MR_DMABUF (on an FI_HMEM domain,
 * where FI_MR_DMABUF is allowed). */
static int sub_dmabuf_refused(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = SENTINEL;
	struct fi_mr_dmabuf db;
	struct fi_mr_attr a;
	CHECK_OK(open_mode(&r, FI_HMEM, 0));
	CHECK(r.info->caps & FI_HMEM);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &base, NULL));
	int fd = memfd_create("ox-sub-dmabuf", 0);
	CHECK(fd >= 0);
	CHECK_OK(ftruncate(fd, 4096));
	void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(map != MAP_FAILED);
	memset(&db, 0, sizeof(db));
	db.fd = fd;
	db.len = 64;
	db.base_addr = map;
	memset(&a, 0, sizeof(a));
	a.dmabuf = &db;
	a.iov_count = 1;
	a.access = RW;
	a.requested_key = 2;
	a.base_mr = base;
	CHECK_RC(fi_mr_regattr(r.domain, &a, FI_MR_DMABUF, &sub), -FI_EINVAL);
	CHECK(sub == SENTINEL);
	/* The same dmabuf without base_mr registers. */
	a.base_mr = NULL;
	CHECK_OK(fi_mr_regattr(r.domain, &a, FI_MR_DMABUF, &sub));
	CHECK_OK(fi_close(&sub->fid));
	CHECK_OK(fi_close(&base->fid));
	CHECK_OK(munmap(map, 4096));
	CHECK_OK(close(fd));
	return test_close(&r);
}

/* sub_mr_cnt is a hint, not a limit. */
static int sub_mr_cnt_hint(void)
{
	enum { N = 20 };
	struct test_res r;
	struct fid_mr *base = NULL, *sub[N];
	struct iovec iov, biov = { buf[3], 4096 };
	struct fi_mr_attr b;
	memset(&b, 0, sizeof(b));
	b.mr_iov = &biov;
	b.iov_count = 1;
	b.access = RW;
	b.requested_key = 1;
	b.sub_mr_cnt = 4;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regattr(r.domain, &b, 0, &base));
	for (int i = 0; i < N; i++) {
		struct fi_mr_attr a = sub_attr(&iov, buf[3] + i * 100, 100, RW, 100 + i, base);
		CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub[i]));
	}
	CHECK_RC(fi_close(&base->fid), -FI_EBUSY);
	for (int i = N - 1; i >= 0; i--)
		CHECK_OK(fi_close(&sub[i]->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* A sub-MR has a raw key of its own. */
static int sub_raw_key(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = NULL;
	struct iovec iov;
	uint8_t rb[256], rs[256];
	size_t nb = sizeof(rb), ns = sizeof(rs);
	uint64_t bb, bs, key;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &base, NULL));
	struct fi_mr_attr a = sub_attr(&iov, buf[0] + 64, 64, FI_REMOTE_READ, 2, base);
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
	CHECK_OK(fi_mr_raw_attr(base, &bb, rb, &nb, 0));
	CHECK_OK(fi_mr_raw_attr(sub, &bs, rs, &ns, 0));
	CHECK(nb == ns && memcmp(rb, rs, nb) != 0);
	CHECK_OK(fi_mr_map_raw(r.domain, bs, rs, ns, &key, 0));
	CHECK(key == 2);
	CHECK_OK(fi_mr_unmap_key(r.domain, key));
	CHECK_OK(fi_close(&sub->fid));
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

/* Many sub-MRs made and closed on one base leave it closable. */
static int sub_churn(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = NULL;
	struct iovec iov;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &base, NULL));
	for (int i = 0; i < 10000; i++) {
		struct fi_mr_attr a = sub_attr(&iov, buf[0] + i % 4000, 96, RW, 2, base);
		CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
		CHECK_OK(fi_close(&sub->fid));
	}
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}

static const struct test_case cases[] = {
	CASE(sub_inside_own_key),
	CASE(sub_prov_key),
	CASE(sub_edges_inside),
	CASE(sub_outside),
	CASE(sub_wider_access),
	CASE(sub_close_order),
	CASE(sub_hierarchy_3_levels),
	CASE(sub_bad_base),
	CASE(sub_of_regv_base),
	CASE(sub_across_two_bases),
	CASE(sub_requested_key_in_use),
	CASE(sub_inherits_attrs),
	CASE(sub_dmabuf_refused),
	CASE(sub_mr_cnt_hint),
	CASE(sub_raw_key),
	CASE(sub_churn),
};

#endif

TEST_MAIN(cases)
