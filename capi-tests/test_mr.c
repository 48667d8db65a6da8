/*
 * Memory registration: fi_mr_reg, fi_mr_regv, fi_mr_regattr, fi_mr_key,
 * fi_mr_desc, fi_close, and every input the three calls must refuse. Each
 * refusal is checked for its exact code, for leaving *mr alone, and for
 * leaving nothing behind (the domain closes with 0 at the end of the case).
 *
 * The rest of fi_mr(3) is in test_mr_*.c: keys, mr_mode bits, raw keys,
 * sub-MRs, attributes and API versions, bind/enable/refresh, close, async.
 */
#include "test.h"

/* A bit that no header set defines, neither as access bit nor as flag. */
#define UNKNOWN_BIT (1ULL << 14)

#define ALL_ACCESS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV)

/* What a refused call must leave in its mr out parameter. */
#define SENTINEL ((struct fid_mr *)(uintptr_t)0x5e5e5e50)

static char buf[3][4096];

/* An fi_mr_attr for one iov; `iov` must outlive the registration call. */
static struct fi_mr_attr attr_for(const struct iovec *iov, size_t count, uint64_t access,
				  uint64_t key)
{
	struct fi_mr_attr a;
	memset(&a, 0, sizeof(a));
	a.mr_iov = iov;
	a.iov_count = count;
	a.access = access;
	a.requested_key = key;
	a.iface = FI_HMEM_SYSTEM;
	return a;
}

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
	CHECK(fi_mr_desc(mr) != NULL);
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
	int ctx;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regv(r.domain, iov, 2, FI_READ | FI_REMOTE_WRITE, 0, 11, 0, &mr, &ctx));
	CHECK(mr != NULL && mr->fid.fclass == FI_CLASS_MR);
	CHECK(mr->fid.context == &ctx);
	CHECK(fi_mr_key(mr) == 11);
	CHECK(fi_mr_desc(mr) == mr->mem_desc && mr->mem_desc != NULL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int regattr_basic(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[1], sizeof(buf[1]) };
	struct fi_mr_attr attr = attr_for(&iov, 1, FI_REMOTE_READ | FI_REMOTE_WRITE, 99);
	int ctx;
	attr.context = &ctx;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regattr(r.domain, &attr, 0, &mr));
	CHECK(mr != NULL && mr->fid.context == &ctx);
	CHECK(fi_mr_key(mr) == 99);
	CHECK(fi_mr_desc(mr) == mr->mem_desc && mr->mem_desc != NULL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* regattr with several iovs, as regv. */
static int regattr_iovs(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov[3] = { { buf[0], 10 }, { buf[1], 20 }, { buf[2], 30 } };
	struct fi_mr_attr attr = attr_for(iov, 3, FI_REMOTE_READ, 98);
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regattr(r.domain, &attr, 0, &mr));
	CHECK(fi_mr_key(mr) == 98);
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
		for (int j = i + 1; j < 64; j++) {
			CHECK(fi_mr_key(mr[i]) != fi_mr_key(mr[j]));
			CHECK(mr[i] != mr[j]);
			CHECK(fi_mr_desc(mr[i]) != fi_mr_desc(mr[j]));
		}
	for (int i = 63; i >= 0; i--)
		CHECK_OK(fi_close(&mr[i]->fid));
	return test_close(&r);
}

/* The same buffer may be registered more than once (separate regions). */
static int same_buffer_twice(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, FI_READ, 0, 1, 0, &a, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, FI_WRITE, 0, 2, 0, &b, NULL));
	CHECK(a != b);
	CHECK_OK(fi_close(&a->fid));
	CHECK_OK(fi_close(&b->fid));
	return test_close(&r);
}

/* Each access bit of fi_mr(3) is accepted on its own and all together. */
static int each_access_bit(void)
{
	static const uint64_t bits[] = { FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ,
					 FI_REMOTE_WRITE, FI_COLLECTIVE };
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint64_t all = 0;
	CHECK_OK(test_open(&r));
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		all |= bits[i];
		CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, bits[i], 0, 10 + i, 0, &mr, NULL));
		CHECK_OK(fi_close(&mr->fid));
	}
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, all, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* The flags of fi_mr(3) FLAGS that need no special domain are accepted. */
static int plain_flags_accepted(void)
{
	uint64_t flags[] = {
		FI_RMA_EVENT,
		FI_RMA_PMEM,
#ifdef FI_MR_SINGLE_USE
		FI_MR_SINGLE_USE,
#endif
	};
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct iovec iov = { buf[1], 128 };
		struct fi_mr_attr a = attr_for(&iov, 1, FI_REMOTE_WRITE, 200 + i);
		CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 100 + i, flags[i], &mr,
				   NULL));
		CHECK_OK(fi_close(&mr->fid));
		CHECK_OK(fi_mr_regv(r.domain, &iov, 1, FI_REMOTE_READ, 0, 300 + i, flags[i], &mr,
				    NULL));
		CHECK_OK(fi_close(&mr->fid));
		CHECK_OK(fi_mr_regattr(r.domain, &a, flags[i], &mr));
		CHECK_OK(fi_close(&mr->fid));
	}
	return test_close(&r);
}

/* ---- fi_mr_reg refusals ---- */

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

static int reg_len_zero(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 0, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_reg(r.domain, NULL, 0, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int reg_offset_nonzero(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 1, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 4096, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

/* A range that wraps around the end of the address space. */
static int reg_wrapping_range(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, (void *)(UINTPTR_MAX - 15), 64, FI_READ, 0, 1, 0, &mr, NULL),
		 -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int bad_access_bits(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ | UNKNOWN_BIT, 0, 1, 0, &mr, NULL),
		 -FI_EINVAL);
	/* Flag bits are not access bits. */
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ | FI_RMA_EVENT, 0, 1, 0, &mr, NULL),
		 -FI_EINVAL);
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, 1ULL << 63, 0, 1, 0, &mr, NULL), -FI_EINVAL);
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
	/* An access bit is not a flag. */
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 1, FI_REMOTE_WRITE, &mr, NULL),
		 -FI_EBADFLAGS);
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 1, 1ULL << 63, &mr, NULL),
		 -FI_EBADFLAGS);
	CHECK(mr == NULL);
	return test_close(&r);
}

/* ---- fi_mr_regv refusals ---- */

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

static int regv_count_zero(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regv(r.domain, &iov, 0, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_regv(r.domain, NULL, 0, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regv_null_iov(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regv(r.domain, NULL, 2, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

/* Builds `n` one-byte iovs over buf; the caller frees. */
static struct iovec *iovs_n(size_t n)
{
	struct iovec *v = calloc(n, sizeof(*v));
	if (!v)
		abort();
	for (size_t i = 0; i < n; i++) {
		v[i].iov_base = &buf[i % 3][(i / 3) % 4096];
		v[i].iov_len = 1;
	}
	return v;
}

/* mr_iov_limit (at least 4) iovs register; one more is refused. */
static int regv_at_and_over_limit(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(test_open(&r));
	size_t lim = r.info->domain_attr->mr_iov_limit;
	CHECK(lim >= 4);
	struct iovec *v = iovs_n(lim + 1);
	int over = fi_mr_regv(r.domain, v, lim + 1, FI_READ, 0, 1, 0, &mr, NULL);
	int at = over == -FI_EINVAL ? fi_mr_regv(r.domain, v, lim, FI_READ, 0, 1, 0, &mr, NULL) : 1;
	free(v);
	CHECK_RC(over, -FI_EINVAL);
	CHECK_OK(at);
	CHECK(mr != SENTINEL && mr != NULL);
	CHECK(fi_mr_key(mr) == 1);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* The domain's limit is the one in the info given to fi_domain. */
static int regv_limit_from_info(void)
{
	struct test_res r;
	struct fi_info *hints = test_hints();
	struct fid_mr *mr = SENTINEL;
	memset(&r, 0, sizeof(r));
	CHECK_OK(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &r.info));
	fi_freeinfo(hints);
	r.info->domain_attr->mr_iov_limit = 4;
	CHECK_OK(fi_fabric(r.info->fabric_attr, &r.fabric, NULL));
	CHECK_OK(fi_domain(r.fabric, r.info, &r.domain, NULL));
	struct iovec *v = iovs_n(5);
	int over = fi_mr_regv(r.domain, v, 5, FI_READ, 0, 1, 0, &mr, NULL);
	int at = fi_mr_regv(r.domain, v, 4, FI_READ, 0, 2, 0, &mr, NULL);
	free(v);
	CHECK_RC(over, -FI_EINVAL);
	CHECK_OK(at);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int regv_zero_len_iov(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov[2] = { { buf[0], 64 }, { buf[1], 0 } };
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regv(r.domain, iov, 2, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_regv(r.domain, &iov[1], 1, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regv_null_base(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov[2] = { { buf[0], 64 }, { NULL, 64 } };
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regv(r.domain, iov, 2, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_regv(r.domain, &iov[1], 1, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regv_offset_nonzero(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regv(r.domain, &iov, 1, FI_READ, 0x10, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regv_bad_access(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regv(r.domain, &iov, 1, FI_READ | UNKNOWN_BIT, 0, 1, 0, &mr, NULL),
		 -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regv_bad_flags(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regv(r.domain, &iov, 1, FI_READ, 0, 1, UNKNOWN_BIT, &mr, NULL),
		 -FI_EBADFLAGS);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regv_null_out(void)
{
	struct test_res r;
	struct iovec iov = { buf[0], 64 };
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regv(r.domain, &iov, 1, FI_READ, 0, 1, 0, NULL, NULL), -FI_EINVAL);
	return test_close(&r);
}

/* ---- fi_mr_regattr refusals ---- */

static int bad_null_attr(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, NULL, 0, &mr), -FI_EINVAL);
	CHECK(mr == NULL);
	return test_close(&r);
}

static int regattr_null_out(void)
{
	struct test_res r;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, 1, FI_READ, 1);
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, NULL), -FI_EINVAL);
	return test_close(&r);
}

static int regattr_count_zero(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, 0, FI_READ, 1);
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regattr_null_iov(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct fi_mr_attr a = attr_for(NULL, 1, FI_READ, 1);
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regattr_over_limit(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(test_open(&r));
	size_t lim = r.info->domain_attr->mr_iov_limit;
	struct iovec *v = iovs_n(lim + 1);
	struct fi_mr_attr a = attr_for(v, lim + 1, FI_READ, 1);
	int over = fi_mr_regattr(r.domain, &a, 0, &mr);
	a.iov_count = lim;
	int at = over == -FI_EINVAL ? fi_mr_regattr(r.domain, &a, 0, &mr) : 1;
	free(v);
	CHECK_RC(over, -FI_EINVAL);
	CHECK_OK(at);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int regattr_zero_len(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 0 };
	struct fi_mr_attr a = attr_for(&iov, 1, FI_READ, 1);
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regattr_null_base(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { NULL, 64 };
	struct fi_mr_attr a = attr_for(&iov, 1, FI_READ, 1);
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regattr_offset_nonzero(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, 1, FI_READ, 1);
	a.offset = 8;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regattr_bad_access(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, 1, FI_READ | UNKNOWN_BIT, 1);
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

static int regattr_bad_flags(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, 1, FI_READ, 1);
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, UNKNOWN_BIT, &mr), -FI_EBADFLAGS);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

#if TEST_HDR_AT_LEAST(2, 0)
/* hmem_data is reserved and must be NULL. */
static int regattr_hmem_data(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, 1, FI_READ, 1);
	a.hmem_data = buf[1];
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	a.hmem_data = NULL;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}
#endif

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

/* Many refusals of every kind in a row, each with the same requested key:
 * none writes *mr, none keeps the key, and the domain closes. */
static int refusals_keep_no_key(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec ok = { buf[0], 64 }, zero = { buf[0], 0 }, nul = { NULL, 64 };
	CHECK_OK(test_open(&r));
	for (int i = 0; i < 100; i++) {
		struct fi_mr_attr a = attr_for(&ok, 1, FI_READ, 42);
		CHECK_RC(fi_mr_reg(r.domain, buf[0], 0, FI_READ, 0, 42, 0, &mr, NULL), -FI_EINVAL);
		CHECK_RC(fi_mr_reg(r.domain, buf[0], 8, FI_READ, 3, 42, 0, &mr, NULL), -FI_EINVAL);
		CHECK_RC(fi_mr_regv(r.domain, &zero, 1, FI_READ, 0, 42, 0, &mr, NULL), -FI_EINVAL);
		CHECK_RC(fi_mr_regv(r.domain, &nul, 1, FI_READ, 0, 42, 0, &mr, NULL), -FI_EINVAL);
		a.iov_count = 0;
		CHECK_RC(fi_mr_regattr(r.domain, &a, 0, &mr), -FI_EINVAL);
		a.iov_count = 1;
		CHECK_RC(fi_mr_regattr(r.domain, &a, UNKNOWN_BIT, &mr), -FI_EBADFLAGS);
		CHECK(mr == SENTINEL);
	}
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 42, 0, &mr, NULL));
	CHECK(fi_mr_key(mr) == 42);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* The ops tables the inline wrappers of upstream's headers go through give
 * the same results as the exported functions. */
static int vtable_paths(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, 1, FI_READ, 3);
	int ctx;
	CHECK_OK(test_open(&r));
	CHECK(r.domain->mr != NULL && r.domain->mr->reg && r.domain->mr->regv &&
	      r.domain->mr->regattr);
	CHECK_OK(r.domain->mr->reg(&r.domain->fid, buf[0], 64, FI_READ, 0, 1, 0, &mr, &ctx));
	CHECK(mr->key == 1 && mr->fid.context == &ctx);
	CHECK_OK(mr->fid.ops->close(&mr->fid));
	CHECK_OK(r.domain->mr->regv(&r.domain->fid, &iov, 1, FI_READ, 0, 2, 0, &mr, &ctx));
	CHECK(mr->key == 2);
	CHECK_OK(mr->fid.ops->close(&mr->fid));
	CHECK_OK(r.domain->mr->regattr(&r.domain->fid, &a, 0, &mr));
	CHECK(mr->key == 3);
	CHECK_OK(mr->fid.ops->close(&mr->fid));
	/* Refusals through the table too. */
	CHECK_RC(r.domain->mr->reg(&r.domain->fid, buf[0], 0, FI_READ, 0, 1, 0, &mr, NULL),
		 -FI_EINVAL);
	CHECK_RC(r.domain->mr->regattr(&r.domain->fid, NULL, 0, &mr), -FI_EINVAL);
	return test_close(&r);
}

/* An object that is not a domain is refused by the registration calls. */
static int reg_on_wrong_object(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(test_open(&r));
	int (*reg)(struct fid *, const void *, size_t, uint64_t, uint64_t, uint64_t, uint64_t,
		   struct fid_mr **, void *) = r.domain->mr->reg;
	CHECK_RC(reg(&r.fabric->fid, buf[0], 64, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(reg(NULL, buf[0], 64, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

#if FI_MAJOR_VERSION == 2 && FI_MINOR_VERSION >= 7
/* oxfabric's headers make the fi_mr_* calls exported functions that take
 * NULL objects (upstream's inline wrappers would dereference them). */
static int exported_null_objects(void)
{
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[0], 64 };
	struct fi_mr_attr a = attr_for(&iov, 1, FI_READ, 1);
	uint8_t raw[64];
	size_t n = sizeof(raw);
	uint64_t base = 0, key = 0;
	struct fid f;
	memset(&f, 0, sizeof(f));
	CHECK_RC(fi_mr_reg(NULL, buf[0], 64, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_regv(NULL, &iov, 1, FI_READ, 0, 1, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_regattr(NULL, &a, 0, &mr), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	CHECK(fi_mr_key(NULL) == FI_KEY_NOTAVAIL);
	CHECK(fi_mr_desc(NULL) == NULL);
	CHECK_RC(fi_mr_raw_attr(NULL, &base, raw, &n, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_map_raw(NULL, 0, raw, n, &key, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_unmap_key(NULL, 1), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(NULL, &f, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_refresh(NULL, &iov, 1, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_enable(NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_get_xpu_desc(NULL, raw, &n, 0, NULL), -FI_EINVAL);
	CHECK_RC(fi_close(NULL), -FI_EINVAL);
	return 0;
}
#endif

static const struct test_case cases[] = {
	CASE(reg_key_desc_close),
	CASE(requested_key_used),
	CASE(requested_key_in_use),
	CASE(regv_two_iovs),
	CASE(regattr_basic),
	CASE(regattr_iovs),
	CASE(many_mrs),
	CASE(same_buffer_twice),
	CASE(each_access_bit),
	CASE(plain_flags_accepted),
	CASE(bad_null_buf),
	CASE(bad_null_out),
	CASE(reg_len_zero),
	CASE(reg_offset_nonzero),
	CASE(reg_wrapping_range),
	CASE(bad_access_bits),
	CASE(bad_flags),
	CASE(bad_iov_count),
	CASE(regv_count_zero),
	CASE(regv_null_iov),
	CASE(regv_at_and_over_limit),
	CASE(regv_limit_from_info),
	CASE(regv_zero_len_iov),
	CASE(regv_null_base),
	CASE(regv_offset_nonzero),
	CASE(regv_bad_access),
	CASE(regv_bad_flags),
	CASE(regv_null_out),
	CASE(bad_null_attr),
	CASE(regattr_null_out),
	CASE(regattr_count_zero),
	CASE(regattr_null_iov),
	CASE(regattr_over_limit),
	CASE(regattr_zero_len),
	CASE(regattr_null_base),
	CASE(regattr_offset_nonzero),
	CASE(regattr_bad_access),
	CASE(regattr_bad_flags),
#if TEST_HDR_AT_LEAST(2, 0)
	CASE(regattr_hmem_data),
#endif
	CASE(refusals_leave_nothing),
	CASE(refusals_keep_no_key),
	CASE(vtable_paths),
	CASE(reg_on_wrong_object),
#if FI_MAJOR_VERSION == 2 && FI_MINOR_VERSION >= 7
	CASE(exported_null_objects),
#endif
};

TEST_MAIN(cases)
