/*
 * Memory registration at the foundation stage: fi_mr_reg, fi_mr_regv,
 * fi_mr_regattr, fi_mr_key, fi_mr_desc, fi_close, and the inputs that must
 * be refused. The MR issue deepens this (keys, sub-MRs, bind, enable, ...).
 */
#include "test.h"

/* A bit that no header set defines, neither as access bit nor as flag. */
#define UNKNOWN_BIT (1ULL << 14)

#define ALL_ACCESS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV)

static char buf[3][4096];

static int reg_key_desc_close(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	int ctx;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], sizeof(buf[0]), ALL_ACCESS, 0, 5, 0, &mr, &ctx));
	CHECK(mr != NULL);
	CHECK(mr->fid.fclass == FI_CLASS_MR);
	CHECK(mr->fid.context == &ctx);
	CHECK(mr->fid.ops != NULL);
	uint64_t key = fi_mr_key(mr);
	CHECK(key != FI_KEY_NOTAVAIL);
	/* The inline fi_mr_key reads the public field; both must agree. */
	CHECK(key == mr->key);
	CHECK(fi_mr_desc(mr) == mr->mem_desc);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* Without FI_MR_PROV_KEY the application chooses the key. */
static int requested_key_used(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK(!(r.info->domain_attr->mr_mode & FI_MR_PROV_KEY));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 0x1234, 0, &mr, NULL));
	CHECK(fi_mr_key(mr) == 0x1234);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int requested_key_in_use(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = (struct fid_mr *)&b;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 77, 0, &a, NULL));
	CHECK_RC(fi_mr_reg(r.domain, buf[1], 64, FI_REMOTE_READ, 0, 77, 0, &b, NULL),
		 -FI_ENOKEY);
	CHECK(b == (struct fid_mr *)&b);
	CHECK_OK(fi_close(&a->fid));
	/* Closing released the key. */
	CHECK_OK(fi_mr_reg(r.domain, buf[1], 64, FI_REMOTE_READ, 0, 77, 0, &a, NULL));
	CHECK_OK(fi_close(&a->fid));
	return test_close(&r);
}

static int regv_two_iovs(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov[2] = { { buf[0], 100 }, { buf[2], 200 } };
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regv(r.domain, iov, 2, FI_READ | FI_REMOTE_WRITE, 0, 11, 0, &mr, NULL));
	CHECK(mr != NULL && mr->fid.fclass == FI_CLASS_MR);
	CHECK(fi_mr_key(mr) != FI_KEY_NOTAVAIL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int regattr_basic(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[1], sizeof(buf[1]) };
	struct fi_mr_attr attr;
	int ctx;
	memset(&attr, 0, sizeof(attr));
	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = FI_REMOTE_READ | FI_REMOTE_WRITE;
	attr.requested_key = 99;
	attr.context = &ctx;
	attr.iface = FI_HMEM_SYSTEM;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regattr(r.domain, &attr, 0, &mr));
	CHECK(mr != NULL && mr->fid.context == &ctx);
	CHECK(fi_mr_key(mr) == 99);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int many_mrs(void)
{
	struct test_res r;
	struct fid_mr *mr[64];
	CHECK_OK(test_open(&r));
	for (int i = 0; i < 64; i++)
		CHECK_OK(fi_mr_reg(r.domain, buf[0] + i, 1, FI_READ, 0, 1000 + i, 0, &mr[i], NULL));
	for (int i = 0; i < 64; i++)
		for (int j = i + 1; j < 64; j++)
			CHECK(fi_mr_key(mr[i]) != fi_mr_key(mr[j]));
	for (int i = 63; i >= 0; i--)
		CHECK_OK(fi_close(&mr[i]->fid));
	return test_close(&r);
}

static int bad_null_buf(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, NULL, 4096, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == NULL);
	return test_close(&r);
}

static int bad_null_out(void)
{
	struct test_res r;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 1, 0, NULL, NULL), -FI_EINVAL);
	return test_close(&r);
}

static int bad_iov_count(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regv(r.domain, &iov, 0, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_regv(r.domain, NULL, 1, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	/* More iovs than mr_iov_limit. */
	size_t n = r.info->domain_attr->mr_iov_limit + 1;
	struct iovec *many = calloc(n, sizeof(*many));
	CHECK(many != NULL);
	for (size_t i = 0; i < n; i++) {
		many[i].iov_base = buf[0] + i % 4096;
		many[i].iov_len = 1;
	}
	int rc = fi_mr_regv(r.domain, many, n, FI_READ, 0, 1, 0, &mr, NULL);
	free(many);
	CHECK_RC(rc, -FI_EINVAL);
	CHECK(mr == NULL);
	return test_close(&r);
}

static int bad_access_bits(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ | UNKNOWN_BIT, 0, 1, 0, &mr, NULL),
		 -FI_EINVAL);
	CHECK(mr == NULL);
	return test_close(&r);
}

static int bad_flags(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 1, UNKNOWN_BIT, &mr, NULL),
		 -FI_EBADFLAGS);
	CHECK(mr == NULL);
	return test_close(&r);
}

static int bad_null_attr(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, NULL, 0, &mr), -FI_EINVAL);
	CHECK(mr == NULL);
	return test_close(&r);
}

/* Refused registrations left nothing behind: the domain closes. */
static int refusals_leave_nothing(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	(void)fi_mr_reg(r.domain, NULL, 4096, FI_READ, 0, 1, 0, &mr, NULL);
	(void)fi_mr_reg(r.domain, buf[0], 64, UNKNOWN_BIT, 0, 1, 0, &mr, NULL);
	(void)fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 1, UNKNOWN_BIT, &mr, NULL);
	CHECK(mr == NULL);
	/* Key 1 is still free. */
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static const struct test_case cases[] = {
	CASE(reg_key_desc_close),
	CASE(requested_key_used),
	CASE(requested_key_in_use),
	CASE(regv_two_iovs),
	CASE(regattr_basic),
	CASE(many_mrs),
	CASE(bad_null_buf),
	CASE(bad_null_out),
	CASE(bad_iov_count),
	CASE(bad_access_bits),
	CASE(bad_flags),
	CASE(bad_null_attr),
	CASE(refusals_leave_nothing),
};

TEST_MAIN(cases)
