/*
 * The per-MR calls besides registration and keys: fi_mr_refresh,
 * fi_mr_enable, fi_mr_bind, fi_mr_get_xpu_desc (2.7 headers),
 * fi_hmem_ze_device (2.7 headers), and fi_control on an MR. oxshm has no
 * endpoints or counters yet, so binds are checked against stand-in objects
 * of those classes, which must be refused.
 */
#include "test.h"

#include <dlfcn.h>
#include <sys/mman.h>

static char buf[2][4096];

#define RW (FI_REMOTE_READ | FI_REMOTE_WRITE)

static struct fid fake_object(size_t fclass)
{
	struct fid f;
	memset(&f, 0, sizeof(f));
	f.fclass = fclass;
	return f;
}

/* ---- fi_mr_refresh ---- */

static int refresh_whole(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_refresh(mr, NULL, 0, 0));
	struct iovec all = { buf[0], 4096 };
	CHECK_OK(fi_mr_refresh(mr, &all, 1, 0));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int refresh_inside(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec parts[3] = { { buf[0], 1 }, { buf[0] + 100, 200 }, { buf[0] + 4095, 1 } };
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_refresh(mr, &parts[1], 1, 0));
	CHECK_OK(fi_mr_refresh(mr, parts, 3, 0));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int refresh_outside(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0] + 100, 1000, RW, 0, 1, 0, &mr, NULL));
	struct iovec out[] = {
		{ buf[0] + 99, 10 },	/* starts early */
		{ buf[0] + 1000, 101 }, /* ends late */
		{ buf[1], 16 },		/* elsewhere */
	};
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
		CHECK_RC(fi_mr_refresh(mr, &out[i], 1, 0), -FI_EINVAL);
	/* One bad range among good ones fails the call. */
	struct iovec mix[2] = { { buf[0] + 100, 10 }, { buf[1], 16 } };
	CHECK_RC(fi_mr_refresh(mr, mix, 2, 0), -FI_EINVAL);
	/* The region is unaffected. */
	CHECK_OK(fi_mr_refresh(mr, NULL, 0, 0));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* A range whose pages were unmapped after registration: -FI_EFAULT. */
static int refresh_unmapped(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, p, 3 * page, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_refresh(mr, NULL, 0, 0));
	CHECK_OK(munmap(p + page, page));
	struct iovec mid = { p + page, page }, first = { p, page }, last = { p + 2 * page, page };
	CHECK_RC(fi_mr_refresh(mr, &mid, 1, 0), -FI_EFAULT);
	CHECK_RC(fi_mr_refresh(mr, NULL, 0, 0), -FI_EFAULT);
	CHECK_OK(fi_mr_refresh(mr, &first, 1, 0));
	CHECK_OK(fi_mr_refresh(mr, &last, 1, 0));
	/* Mapped again: the refresh succeeds. */
	char *again = mmap(p + page, page, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(again == p + page);
	CHECK_OK(fi_mr_refresh(mr, NULL, 0, 0));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(munmap(p, 3 * page));
	return test_close(&r);
}

/* A region of several iovs: a range inside any of them. */
static int refresh_regv(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec parts[2] = { { buf[0], 100 }, { buf[1], 100 } };
	struct iovec in = { buf[1] + 50, 50 }, gap = { buf[0] + 50, 100 };
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regv(r.domain, parts, 2, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_refresh(mr, &in, 1, 0));
	CHECK_OK(fi_mr_refresh(mr, parts, 2, 0));
	CHECK_RC(fi_mr_refresh(mr, &gap, 1, 0), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int refresh_bad_args(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec in = { buf[0], 10 };
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, RW, 0, 1, 0, &mr, NULL));
	CHECK_RC(fi_mr_refresh(mr, &in, 1, 1ULL << 14), -FI_EBADFLAGS);
	CHECK_RC(fi_mr_refresh(mr, NULL, 1, 0), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_RC(fi_mr_refresh(mr, &in, 1, 0), -FI_EINVAL);
	return test_close(&r);
}

/* ---- fi_mr_enable ---- */

static int enable_enabled_region(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_enable(mr));
	CHECK_OK(fi_mr_enable(mr));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_RC(fi_mr_enable(mr), -FI_EINVAL);
	return test_close(&r);
}

/* ---- fi_mr_bind ---- */

static int bind_fake_counter(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct fid cntr = fake_object(FI_CLASS_CNTR);
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, FI_RMA_EVENT, &mr, NULL));
	CHECK_RC(fi_mr_bind(mr, &cntr, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, &cntr, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, &cntr, FI_SEND), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int bind_fake_endpoint(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct fid ep = fake_object(FI_CLASS_EP);
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_RC(fi_mr_bind(mr, &ep, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, &ep, FI_REMOTE_WRITE), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* Objects of oxshm that are not counters or endpoints, NULL, and a
 * closed MR. */
static int bind_wrong_objects(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL, *other = NULL;
	struct fid_eq *eq = NULL;
	struct fi_eq_attr ea;
	memset(&ea, 0, sizeof(ea));
	ea.size = 4;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_eq_open(r.fabric, &ea, &eq, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[1], 64, RW, 0, 2, 0, &other, NULL));
	CHECK_RC(fi_mr_bind(mr, &r.domain->fid, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, &r.fabric->fid, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, &eq->fid, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, &other->fid, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, &mr->fid, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, NULL, 0), -FI_EINVAL);
	CHECK_OK(fi_close(&other->fid));
	CHECK_OK(fi_close(&mr->fid));
	struct fid ep = fake_object(FI_CLASS_EP);
	CHECK_RC(fi_mr_bind(mr, &ep, 0), -FI_EINVAL);
	CHECK_OK(fi_close(&r.domain->fid));
	r.domain = NULL;
	CHECK_OK(fi_close(&eq->fid));
	return test_close(&r);
}

/* ---- fi_control on an MR ---- */

static int control_unknown(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	int arg = 0;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_RC(fi_control(&mr->fid, 12345, &arg), -FI_ENOSYS);
	CHECK_RC(fi_control(&mr->fid, FI_ENABLE, NULL), 0);
	CHECK_RC(fi_control(&mr->fid, FI_REFRESH, NULL), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* ---- fi_mr_get_xpu_desc and fi_hmem_ze_device (2.7 headers) ---- */

#if FI_MAJOR_VERSION == 2 && FI_MINOR_VERSION >= 7
static int xpu_desc_too_small(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t out[64];
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	size_t len = 0;
	CHECK_RC(fi_mr_get_xpu_desc(mr, out, &len, 0, NULL), -FI_ETOOSMALL);
	size_t need = len;
	CHECK(need > 0 && need <= sizeof(out));
	len = need - 1;
	memset(out, 0xee, sizeof(out));
	CHECK_RC(fi_mr_get_xpu_desc(mr, out, &len, 0, NULL), -FI_ETOOSMALL);
	CHECK(len == need);
	for (size_t i = 0; i < sizeof(out); i++)
		CHECK(out[i] == 0xee);
	/* NULL buf is a size query. */
	len = sizeof(out);
	CHECK_RC(fi_mr_get_xpu_desc(mr, NULL, &len, 0, NULL), -FI_ETOOSMALL);
	CHECK(len == need);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int xpu_desc_ok(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL, *other = NULL;
	uint8_t a[64], b[64];
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[1], 64, RW, 0, 2, 0, &other, NULL));
	size_t la = sizeof(a), lb = sizeof(b);
	memset(a, 0xee, sizeof(a));
	CHECK_OK(fi_mr_get_xpu_desc(mr, a, &la, 0, NULL));
	CHECK(la > 0 && la < sizeof(a));
	for (size_t i = la; i < sizeof(a); i++)
		CHECK(a[i] == 0xee);
	CHECK_OK(fi_mr_get_xpu_desc(other, b, &lb, 0, NULL));
	CHECK(la == lb && memcmp(a, b, la) != 0);
	/* Exactly the size needed works too, and gives the same bytes. */
	size_t lc = la;
	memset(b, 0, sizeof(b));
	CHECK_OK(fi_mr_get_xpu_desc(mr, b, &lc, 0, NULL));
	CHECK(lc == la && memcmp(a, b, la) == 0);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&other->fid));
	return test_close(&r);
}

static int xpu_desc_bad_args(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t out[64];
	size_t len = sizeof(out);
	struct fid fake = fake_object(FI_CLASS_XPU_CTX);
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	/* FI_XPU needs a valid XPU context; oxshm has none, so none is valid. */
	CHECK_RC(fi_mr_get_xpu_desc(mr, out, &len, FI_XPU, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_get_xpu_desc(mr, out, &len, FI_XPU, (struct fid_xpu_ctx *)&fake),
		 -FI_EINVAL);
	CHECK_RC(fi_mr_get_xpu_desc(mr, out, &len, 0, (struct fid_xpu_ctx *)&fake), -FI_EINVAL);
	CHECK_RC(fi_mr_get_xpu_desc(mr, out, &len, 1ULL << 14, NULL), -FI_EBADFLAGS);
	CHECK_RC(fi_mr_get_xpu_desc(mr, out, NULL, 0, NULL), -FI_EINVAL);
	CHECK(len == sizeof(out));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_RC(fi_mr_get_xpu_desc(mr, out, &len, 0, NULL), -FI_EINVAL);
	return test_close(&r);
}

static int ze_device(void)
{
	CHECK(fi_hmem_ze_device(0, 0) == 0);
	CHECK(fi_hmem_ze_device(0, 5) == 5);
	CHECK(fi_hmem_ze_device(1, 2) == (1 << 16 | 2));
	CHECK(fi_hmem_ze_device(3, 0) == 3 << 16);
	return 0;
}
#endif

/* The library exports fi_hmem_ze_device whatever the headers (upstream's
 * 2.x headers make it inline, 1.17's lack it): driver << 16 | device. */
static int ze_device_symbol(void)
{
	int (*ze)(int, int);
	void *sym = dlsym(RTLD_DEFAULT, "fi_hmem_ze_device");
	CHECK(sym != NULL);
	memcpy(&ze, &sym, sizeof(ze));
	CHECK(ze(0, 0) == 0);
	CHECK(ze(2, 7) == (2 << 16 | 7));
	return 0;
}

static const struct test_case cases[] = {
	CASE(refresh_whole),
	CASE(refresh_inside),
	CASE(refresh_outside),
	CASE(refresh_unmapped),
	CASE(refresh_regv),
	CASE(refresh_bad_args),
	CASE(enable_enabled_region),
	CASE(bind_fake_counter),
	CASE(bind_fake_endpoint),
	CASE(bind_wrong_objects),
	CASE(control_unknown),
	CASE(ze_device_symbol),
#if FI_MAJOR_VERSION == 2 && FI_MINOR_VERSION >= 7
	CASE(xpu_desc_too_small),
	CASE(xpu_desc_ok),
	CASE(xpu_desc_bad_args),
	CASE(ze_device),
#endif
};

TEST_MAIN(cases)
