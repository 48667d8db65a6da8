/*
 * Raw keys: fi_mr_raw_attr, fi_mr_map_raw, fi_mr_unmap_key, with and
 * without FI_MR_RAW (set through FI_OXSHM_MR_MODE in a child). Under
 * FI_MR_RAW fi_mr_key is FI_KEY_NOTAVAIL and mr_key_size is the raw size;
 * the raw calls work on every MR; mapped keys must be unmapped before the
 * domain closes.
 */
#include "test.h"

#define SENTINEL ((struct fid_mr *)(uintptr_t)0x5e5e5e50)
#define RAW_ENV "FI_OXSHM_MR_MODE=FI_MR_RAW"

static char buf[2][4096];

static int open_mode(struct test_res *r, int mr_mode)
{
	struct fi_info *hints = test_hints();
	hints->domain_attr->mr_mode = mr_mode;
	memset(r, 0, sizeof(*r));
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &r->info);
	fi_freeinfo(hints);
	CHECK_OK(rc);
	CHECK_OK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	CHECK_OK(fi_domain(r->fabric, r->info, &r->domain, NULL));
	return 0;
}

/* A region's raw key: fills raw (room for 256 bytes), *size and *base. */
static int get_raw(struct fid_mr *mr, uint8_t *raw, size_t *size, uint64_t *base)
{
	*size = 256;
	CHECK_OK(fi_mr_raw_attr(mr, base, raw, size, 0));
	CHECK(*size > 0 && *size <= 256);
	return 0;
}

/* The raw round trip on a domain without FI_MR_RAW: raw key, map, unmap.
 * The mapped key is this engine's key (no translation needed). */
static int raw_attr_without_raw_mode(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t raw[256];
	size_t size;
	uint64_t base = 0, key = 0;
	CHECK_OK(test_open(&r));
	CHECK(!(r.info->domain_attr->mr_mode & FI_MR_RAW));
	CHECK(r.info->domain_attr->mr_key_size == 8);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0x77, 0,
			   &mr, NULL));
	CHECK(fi_mr_key(mr) == 0x77);
	CHECK_OK(get_raw(mr, raw, &size, &base));
	CHECK_OK(fi_mr_map_raw(r.domain, base, raw, size, &key, 0));
	CHECK(key == 0x77);
	CHECK_OK(fi_mr_unmap_key(r.domain, key));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* A short buffer: -FI_ETOOSMALL, *key_size set to the size needed, nothing
 * written; then a buffer of exactly that size works. */
static int raw_attr_too_small(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t raw[256];
	uint64_t base = 0xabab;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	size_t need = 256;
	CHECK_OK(fi_mr_raw_attr(mr, &base, raw, &need, 0));
	CHECK(need > 8);
	size_t sizes[] = { 0, 1, 8, need - 1 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		memset(raw, 0xee, sizeof(raw));
		base = 0xabab;
		CHECK_RC(fi_mr_raw_attr(mr, &base, raw, &n, 0), -FI_ETOOSMALL);
		CHECK(n == need);
		CHECK(base == 0xabab);
		for (size_t j = 0; j < sizeof(raw); j++)
			CHECK(raw[j] == 0xee);
	}
	/* NULL raw_key is a size query. */
	size_t n = 0;
	CHECK_RC(fi_mr_raw_attr(mr, &base, NULL, &n, 0), -FI_ETOOSMALL);
	CHECK(n == need);
	n = need;
	memset(raw, 0xee, sizeof(raw));
	CHECK_OK(fi_mr_raw_attr(mr, &base, raw, &n, 0));
	CHECK(n == need);
	/* Nothing past the key was written. */
	for (size_t j = need; j < sizeof(raw); j++)
		CHECK(raw[j] == 0xee);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int raw_attr_bad_args(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t raw[256];
	size_t n = sizeof(raw);
	uint64_t base;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_RC(fi_mr_raw_attr(mr, &base, raw, &n, 1), -FI_EBADFLAGS);
	CHECK_RC(fi_mr_raw_attr(mr, &base, raw, NULL, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_raw_attr(mr, NULL, raw, &n, 0), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	/* A closed region has no raw key. */
	n = sizeof(raw);
	CHECK_RC(fi_mr_raw_attr(mr, &base, raw, &n, 0), -FI_EINVAL);
	return test_close(&r);
}

/* mr_key_size of the info is what fi_mr_raw_attr needs, under FI_MR_RAW. */
static int raw_mode_key_size(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t raw[256];
	size_t n = 0;
	uint64_t base;
	CHECK_OK(open_mode(&r, FI_MR_RAW));
	CHECK(r.info->domain_attr->mr_mode == FI_MR_RAW);
	CHECK(r.info->domain_attr->mr_key_size > 8);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	CHECK_RC(fi_mr_raw_attr(mr, &base, raw, &n, 0), -FI_ETOOSMALL);
	CHECK(n == r.info->domain_attr->mr_key_size);
	CHECK_OK(fi_mr_raw_attr(mr, &base, raw, &n, 0));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* Under FI_MR_RAW fi_mr_key answers FI_KEY_NOTAVAIL for every call, the raw
 * key maps to a usable key, and the mapped key is released by unmap. */
static int raw_mode_round_trip(void)
{
	struct test_res r;
	struct fid_mr *mr[3];
	struct iovec iov[2] = { { buf[0], 100 }, { buf[1], 100 } };
	struct fi_mr_attr a;
	memset(&a, 0, sizeof(a));
	a.mr_iov = iov;
	a.iov_count = 2;
	a.access = FI_REMOTE_WRITE;
	a.requested_key = 3;
	CHECK_OK(open_mode(&r, FI_MR_RAW));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &mr[0], NULL));
	CHECK_OK(fi_mr_regv(r.domain, iov, 2, FI_REMOTE_READ, 0, 2, 0, &mr[1], NULL));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr[2]));
	uint64_t keys[3];
	for (int i = 0; i < 3; i++) {
		uint8_t raw[256];
		size_t n;
		uint64_t base;
		CHECK(fi_mr_key(mr[i]) == FI_KEY_NOTAVAIL);
		CHECK(mr[i]->key == FI_KEY_NOTAVAIL);
		CHECK(fi_mr_desc(mr[i]) != NULL);
		CHECK_OK(get_raw(mr[i], raw, &n, &base));
		CHECK(n == r.info->domain_attr->mr_key_size);
		keys[i] = FI_KEY_NOTAVAIL;
		CHECK_OK(fi_mr_map_raw(r.domain, base, raw, n, &keys[i], 0));
		CHECK(keys[i] != FI_KEY_NOTAVAIL);
		for (int j = 0; j < i; j++)
			CHECK(keys[i] != keys[j]);
	}
	/* A mapped key keeps the domain open. */
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	for (int i = 0; i < 3; i++) {
		CHECK_OK(fi_close(&mr[i]->fid));
	}
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	for (int i = 0; i < 3; i++)
		CHECK_OK(fi_mr_unmap_key(r.domain, keys[i]));
	return test_close(&r);
}

/* Requested keys and provider keys both hide behind raw keys. */
static int raw_mode_with_prov_key(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = NULL;
	CHECK_OK(open_mode(&r, FI_MR_RAW | FI_MR_PROV_KEY));
	CHECK(r.info->domain_attr->mr_mode == (FI_MR_RAW | FI_MR_PROV_KEY));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &a, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &b, NULL));
	CHECK(fi_mr_key(a) == FI_KEY_NOTAVAIL && fi_mr_key(b) == FI_KEY_NOTAVAIL);
	uint8_t ra[256], rb[256];
	size_t na, nb;
	uint64_t ba, bb, ka, kb;
	CHECK_OK(get_raw(a, ra, &na, &ba));
	CHECK_OK(get_raw(b, rb, &nb, &bb));
	CHECK(na == nb && memcmp(ra, rb, na) != 0);
	CHECK_OK(fi_mr_map_raw(r.domain, ba, ra, na, &ka, 0));
	CHECK_OK(fi_mr_map_raw(r.domain, bb, rb, nb, &kb, 0));
	CHECK(ka != kb);
	CHECK_OK(fi_mr_unmap_key(r.domain, ka));
	CHECK_OK(fi_mr_unmap_key(r.domain, kb));
	CHECK_OK(fi_close(&a->fid));
	CHECK_OK(fi_close(&b->fid));
	return test_close(&r);
}

/* Closing a domain with a mapped key: -FI_EBUSY; after unmapping: 0. */
static int close_domain_with_mapped_key(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t raw[256];
	size_t n;
	uint64_t base, key;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 5, 0, &mr, NULL));
	CHECK_OK(get_raw(mr, raw, &n, &base));
	CHECK_OK(fi_mr_map_raw(r.domain, base, raw, n, &key, 0));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	CHECK_OK(fi_mr_unmap_key(r.domain, key));
	return test_close(&r);
}

/* Each map needs its unmap. */
static int map_twice_unmap_twice(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t raw[256];
	size_t n;
	uint64_t base, k1, k2;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 6, 0, &mr, NULL));
	CHECK_OK(get_raw(mr, raw, &n, &base));
	CHECK_OK(fi_mr_map_raw(r.domain, base, raw, n, &k1, 0));
	CHECK_OK(fi_mr_map_raw(r.domain, base, raw, n, &k2, 0));
	CHECK(k1 == k2);
	CHECK_OK(fi_mr_unmap_key(r.domain, k1));
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	CHECK_OK(fi_mr_unmap_key(r.domain, k2));
	CHECK_RC(fi_mr_unmap_key(r.domain, k2), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* Keys never mapped cannot be unmapped. */
static int unmap_unknown_key(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_unmap_key(r.domain, 12345), -FI_EINVAL);
	/* A registered but unmapped key neither. */
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 7, 0, &mr, NULL));
	CHECK_RC(fi_mr_unmap_key(r.domain, 7), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* fi_mr_map_raw refuses what is not a raw key of this format. */
static int map_raw_bad_input(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t raw[256], bad[256];
	size_t n;
	uint64_t base, key = 0x4444;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 8, 0, &mr, NULL));
	CHECK_OK(get_raw(mr, raw, &n, &base));
	/* Wrong sizes. */
	CHECK_RC(fi_mr_map_raw(r.domain, base, raw, n - 1, &key, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_map_raw(r.domain, base, raw, 0, &key, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_map_raw(r.domain, base, raw, 8, &key, 0), -FI_EINVAL);
	/* Each byte flipped in turn. */
	for (size_t i = 0; i < n; i++) {
		memcpy(bad, raw, n);
		bad[i] ^= 0x40;
		int rc = fi_mr_map_raw(r.domain, base, bad, n, &key, 0);
		if (rc != -FI_EINVAL)
			fprintf(stderr, "    byte %zu flipped\n", i);
		CHECK_RC(rc, -FI_EINVAL);
	}
	/* All zeros, and a base address that is not the key's. */
	memset(bad, 0, n);
	CHECK_RC(fi_mr_map_raw(r.domain, base, bad, n, &key, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_map_raw(r.domain, base + 1, raw, n, &key, 0), -FI_EINVAL);
	/* NULL pointers, flags. */
	CHECK_RC(fi_mr_map_raw(r.domain, base, NULL, n, &key, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_map_raw(r.domain, base, raw, n, NULL, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_map_raw(r.domain, base, raw, n, &key, 1), -FI_EBADFLAGS);
	CHECK(key == 0x4444);
	/* None of them counted as a mapping: the domain closes. */
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* The peer maps: a raw key from one domain maps on another. */
static int map_on_peer_domain(void)
{
	struct test_res r;
	struct fid_domain *peer = NULL;
	struct fid_mr *mr = NULL;
	uint8_t raw[256];
	size_t n;
	uint64_t base, key;
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	CHECK_OK(fi_domain(r.fabric, r.info, &peer, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
	CHECK_OK(get_raw(mr, raw, &n, &base));
	CHECK_OK(fi_mr_map_raw(peer, base, raw, n, &key, 0));
	CHECK(key == fi_mr_key(mr));
	/* The mapping belongs to the peer: the owner closes, the peer not. */
	CHECK_OK(fi_close(&mr->fid));
	CHECK_RC(fi_mr_unmap_key(r.domain, key), -FI_EINVAL);
	CHECK_RC(fi_close(&peer->fid), -FI_EBUSY);
	CHECK_OK(fi_mr_unmap_key(peer, key));
	CHECK_OK(fi_close(&peer->fid));
	return test_close(&r);
}

/* Raw keys of regions with different extents and rights differ. */
static int raw_keys_describe_region(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = NULL;
	uint8_t ra[256], rb[256];
	size_t na, nb;
	uint64_t ba, bb;
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 0, 0, &a, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 128, FI_REMOTE_WRITE, 0, 0, 0, &b, NULL));
	CHECK_OK(get_raw(a, ra, &na, &ba));
	CHECK_OK(get_raw(b, rb, &nb, &bb));
	CHECK(na == nb);
	CHECK(memcmp(ra, rb, na) != 0);
	CHECK_OK(fi_close(&a->fid));
	CHECK_OK(fi_close(&b->fid));
	return test_close(&r);
}

/* The raw attr through the ops table (control FI_GET_RAW_MR) and the
 * domain's (FI_MAP_RAW_MR, FI_UNMAP_KEY), as upstream's inline wrappers. */
static int raw_through_control(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t raw[256];
	size_t n = sizeof(raw);
	uint64_t base = 0, key = 0;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 9, 0, &mr, NULL));
	struct fi_mr_raw_attr ra = { .flags = 0, .base_addr = &base, .raw_key = raw,
				     .key_size = &n };
	CHECK_OK(mr->fid.ops->control(&mr->fid, FI_GET_RAW_MR, &ra));
	struct fi_mr_map_raw map = { .flags = 0, .base_addr = base, .raw_key = raw,
				     .key_size = n, .key = &key };
	CHECK_OK(r.domain->fid.ops->control(&r.domain->fid, FI_MAP_RAW_MR, &map));
	CHECK(key == 9);
	CHECK_OK(r.domain->fid.ops->control(&r.domain->fid, FI_UNMAP_KEY, &key));
	CHECK_RC(r.domain->fid.ops->control(&r.domain->fid, FI_UNMAP_KEY, NULL), -FI_EINVAL);
	CHECK_RC(mr->fid.ops->control(&mr->fid, FI_GET_RAW_MR, NULL), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static const struct test_case cases[] = {
	CASE(raw_attr_without_raw_mode),
	CASE(raw_attr_too_small),
	CASE(raw_attr_bad_args),
	CASE_ENV(raw_mode_key_size, RAW_ENV),
	CASE_ENV(raw_mode_round_trip, RAW_ENV),
	CASE_ENV(raw_mode_with_prov_key, "FI_OXSHM_MR_MODE=FI_MR_RAW,FI_MR_PROV_KEY"),
	CASE(close_domain_with_mapped_key),
	CASE(map_twice_unmap_twice),
	CASE(unmap_unknown_key),
	CASE(map_raw_bad_input),
	CASE(map_on_peer_domain),
	CASE(raw_keys_describe_region),
	CASE(raw_through_control),
};

TEST_MAIN(cases)
