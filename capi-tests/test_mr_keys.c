/*
 * MR keys: requested keys (no FI_MR_PROV_KEY) are honoured, collide with
 * -FI_ENOKEY and are rejected with -FI_EKEYREJECTED when unusable; provider
 * keys (FI_MR_PROV_KEY) are unique among live regions and unpredictable
 * over 1,000,000 registrations; fi_mr_key and fi_mr_desc agree with the
 * public fields.
 *
 * OX_TEST_SCALE (percent, default 100) shrinks the big loops; run.sh sets
 * it for the valgrind build.
 */
#include "test.h"

#include <pthread.h>

#define SENTINEL ((struct fid_mr *)(uintptr_t)0x5e5e5e50)
#define UNKNOWN_BIT (1ULL << 14)

static char buf[4][4096];

/* `n` scaled by OX_TEST_SCALE percent, at least `min`. */
static size_t scaled(size_t n, size_t min)
{
	const char *s = getenv("OX_TEST_SCALE");
	long pct = s ? strtol(s, NULL, 10) : 100;
	if (pct <= 0 || pct > 100)
		pct = 100;
	size_t v = n / 100 * (size_t)pct;
	return v < min ? min : v;
}

/* Opens oxshm with `mr_mode` offered in the hints. */
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

static struct fi_mr_attr attr_for(const struct iovec *iov, uint64_t key)
{
	struct fi_mr_attr a;
	memset(&a, 0, sizeof(a));
	a.mr_iov = iov;
	a.iov_count = 1;
	a.access = FI_REMOTE_READ | FI_REMOTE_WRITE;
	a.requested_key = key;
	return a;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* 0 when the n keys are all distinct and none is FI_KEY_NOTAVAIL. */
static int check_distinct(const uint64_t *keys, size_t n)
{
	uint64_t *s = malloc(n * sizeof(*s));
	CHECK(s != NULL);
	memcpy(s, keys, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_u64);
	size_t dups = 0, notavail = 0;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && s[i] == s[i - 1])
			dups++;
		if (s[i] == FI_KEY_NOTAVAIL)
			notavail++;
	}
	free(s);
	if (dups || notavail)
		fprintf(stderr, "    %zu repeated keys, %zu FI_KEY_NOTAVAIL among %zu\n", dups,
			notavail, n);
	CHECK(dups == 0);
	CHECK(notavail == 0);
	return 0;
}

/* 0 when consecutive keys do not follow a pattern a peer could predict:
 * differences between neighbours are not constant (nor +-1), and keys go
 * up about as often as down. */
static int check_unpredictable(const uint64_t *keys, size_t n)
{
	size_t same_step = 0, unit_step = 0, up = 0;
	for (size_t i = 1; i < n; i++) {
		uint64_t d = keys[i] - keys[i - 1];
		if (i > 1 && d == keys[i - 1] - keys[i - 2])
			same_step++;
		if (d == 1 || d == (uint64_t)-1)
			unit_step++;
		if (keys[i] > keys[i - 1])
			up++;
	}
	if (same_step > n / 100 || unit_step > n / 100 || up < n / 4 || up > n / 4 * 3)
		fprintf(stderr, "    %zu keys: %zu repeated steps, %zu +-1 steps, %zu rises\n", n,
			same_step, unit_step, up);
	CHECK(same_step <= n / 100);
	CHECK(unit_step <= n / 100);
	CHECK(up >= n / 4 && up <= n / 4 * 3);
	return 0;
}

/* ---- requested keys ---- */

static int requested_keys_honoured(void)
{
	static const uint64_t keys[] = { 0, 1, 2, 0x1234, 0xdeadbeef, 1ULL << 40,
					 UINT64_MAX - 1 };
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK(!(r.info->domain_attr->mr_mode & FI_MR_PROV_KEY));
	CHECK(r.info->domain_attr->mr_key_size == 8);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct iovec iov = { buf[1], 64 };
		struct fi_mr_attr a = attr_for(&iov, keys[i]);
		CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, keys[i], 0, &mr, NULL));
		CHECK(fi_mr_key(mr) == keys[i] && mr->key == keys[i]);
		CHECK_OK(fi_close(&mr->fid));
		CHECK_OK(fi_mr_regv(r.domain, &iov, 1, FI_REMOTE_READ, 0, keys[i], 0, &mr, NULL));
		CHECK(fi_mr_key(mr) == keys[i]);
		CHECK_OK(fi_close(&mr->fid));
		CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr));
		CHECK(fi_mr_key(mr) == keys[i]);
		CHECK_OK(fi_close(&mr->fid));
	}
	return test_close(&r);
}

/* Requested keys of live regions stay what was asked, many at once. */
static int requested_keys_many_live(void)
{
	enum { N = 1000 };
	struct test_res r;
	struct fid_mr **mr = calloc(N, sizeof(*mr));
	CHECK(mr != NULL);
	CHECK_OK(test_open(&r));
	for (uint64_t i = 0; i < N; i++)
		CHECK_OK(fi_mr_reg(r.domain, buf[0] + i % 4096, 1, FI_REMOTE_READ, 0,
				   i * 7919 + 3, 0, &mr[i], NULL));
	for (uint64_t i = 0; i < N; i++)
		CHECK(fi_mr_key(mr[i]) == i * 7919 + 3);
	for (size_t i = 0; i < N; i++)
		CHECK_OK(fi_close(&mr[i]->fid));
	free(mr);
	return test_close(&r);
}

static int requested_key_in_use_reg(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = SENTINEL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 77, 0, &a, NULL));
	CHECK_RC(fi_mr_reg(r.domain, buf[1], 64, FI_REMOTE_READ, 0, 77, 0, &b, NULL), -FI_ENOKEY);
	/* Different buffer, access and flags change nothing. */
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 77, FI_RMA_EVENT, &b, NULL),
		 -FI_ENOKEY);
	CHECK(b == SENTINEL);
	CHECK(fi_mr_key(a) == 77);
	CHECK_OK(fi_close(&a->fid));
	return test_close(&r);
}

static int requested_key_in_use_regv(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = SENTINEL;
	struct iovec iov[2] = { { buf[1], 8 }, { buf[2], 8 } };
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 78, 0, &a, NULL));
	CHECK_RC(fi_mr_regv(r.domain, iov, 2, FI_REMOTE_READ, 0, 78, 0, &b, NULL), -FI_ENOKEY);
	CHECK(b == SENTINEL);
	CHECK_OK(fi_close(&a->fid));
	return test_close(&r);
}

static int requested_key_in_use_regattr(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = SENTINEL;
	struct iovec iov = { buf[1], 8 };
	struct fi_mr_attr at = attr_for(&iov, 79);
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_regattr(r.domain, &at, 0, &a));
	CHECK_RC(fi_mr_regattr(r.domain, &at, 0, &b), -FI_ENOKEY);
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 79, 0, &b, NULL), -FI_ENOKEY);
	CHECK(b == SENTINEL);
	CHECK_OK(fi_close(&a->fid));
	return test_close(&r);
}

/* FI_KEY_NOTAVAIL cannot be a key: -FI_EKEYREJECTED from all three calls. */
static int requested_key_notavail(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	struct iovec iov = { buf[1], 8 };
	struct fi_mr_attr at = attr_for(&iov, FI_KEY_NOTAVAIL);
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, FI_KEY_NOTAVAIL, 0, &mr, NULL),
		 -FI_EKEYREJECTED);
	CHECK_RC(fi_mr_regv(r.domain, &iov, 1, FI_REMOTE_READ, 0, FI_KEY_NOTAVAIL, 0, &mr, NULL),
		 -FI_EKEYREJECTED);
	CHECK_RC(fi_mr_regattr(r.domain, &at, 0, &mr), -FI_EKEYREJECTED);
	/* Local-only access does not make the key acceptable either. */
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, FI_KEY_NOTAVAIL, 0, &mr, NULL),
		 -FI_EKEYREJECTED);
	CHECK(mr == SENTINEL);
	return test_close(&r);
}

/* Closing a region frees its key for the next registration. */
static int requested_key_freed_on_close(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	for (int i = 0; i < 1000; i++) {
		CHECK_OK(fi_mr_reg(r.domain, buf[i % 4], 64, FI_REMOTE_WRITE, 0, 5, 0, &mr, NULL));
		CHECK(fi_mr_key(mr) == 5);
		CHECK_OK(fi_close(&mr->fid));
	}
	return test_close(&r);
}

/* A registration refused for another reason does not take its key. */
static int refused_registration_keeps_no_key(void)
{
	struct test_res r;
	struct fid_mr *mr = SENTINEL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 9, UNKNOWN_BIT, &mr, NULL),
		 -FI_EBADFLAGS);
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, UNKNOWN_BIT, 0, 9, 0, &mr, NULL), -FI_EINVAL);
	CHECK_RC(fi_mr_reg(r.domain, NULL, 64, FI_READ, 0, 9, 0, &mr, NULL), -FI_EINVAL);
	CHECK(mr == SENTINEL);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_READ, 0, 9, 0, &mr, NULL));
	CHECK(fi_mr_key(mr) == 9);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* Keys belong to a domain: two domains may use the same requested key. */
static int requested_keys_per_domain(void)
{
	struct test_res r;
	struct fid_domain *d2 = NULL;
	struct fid_mr *a = NULL, *b = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_domain(r.fabric, r.info, &d2, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 31, 0, &a, NULL));
	CHECK_OK(fi_mr_reg(d2, buf[0], 64, FI_REMOTE_READ, 0, 31, 0, &b, NULL));
	CHECK(fi_mr_key(a) == 31 && fi_mr_key(b) == 31);
	CHECK_OK(fi_close(&b->fid));
	CHECK_OK(fi_close(&d2->fid));
	CHECK_OK(fi_close(&a->fid));
	return test_close(&r);
}

/* ---- provider keys ---- */

/* oxshm keeps FI_MR_PROV_KEY when the application supports it. */
static int prov_key_negotiated(void)
{
	struct test_res r;
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	CHECK(r.info->domain_attr->mr_mode == FI_MR_PROV_KEY);
	return test_close(&r);
}

/* With FI_MR_PROV_KEY, requested_key is ignored: a repeated or unusable
 * requested key is no error, and the key comes from the provider. */
static int prov_key_ignores_requested(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = NULL, *c = NULL;
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 5, 0, &a, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[1], 64, FI_REMOTE_READ, 0, 5, 0, &b, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[2], 64, FI_REMOTE_READ, 0, FI_KEY_NOTAVAIL, 0, &c, NULL));
	CHECK(fi_mr_key(a) != fi_mr_key(b));
	CHECK(fi_mr_key(a) != FI_KEY_NOTAVAIL && fi_mr_key(b) != FI_KEY_NOTAVAIL &&
	      fi_mr_key(c) != FI_KEY_NOTAVAIL);
	CHECK(fi_mr_key(c) != fi_mr_key(a) && fi_mr_key(c) != fi_mr_key(b));
	CHECK_OK(fi_close(&a->fid));
	CHECK_OK(fi_close(&b->fid));
	CHECK_OK(fi_close(&c->fid));
	return test_close(&r);
}

/* fi_mr_key is the public key field; fi_mr_desc the public descriptor. */
static int prov_key_accessors(void)
{
	struct test_res r;
	struct fid_mr *mr[3];
	struct iovec iov = { buf[1], 64 };
	struct fi_mr_attr a = attr_for(&iov, 0);
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 0, 0, &mr[0], NULL));
	CHECK_OK(fi_mr_regv(r.domain, &iov, 1, FI_REMOTE_READ, 0, 0, 0, &mr[1], NULL));
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &mr[2]));
	for (int i = 0; i < 3; i++) {
		CHECK(fi_mr_key(mr[i]) == mr[i]->key);
		CHECK(mr[i]->key != FI_KEY_NOTAVAIL);
		CHECK(fi_mr_desc(mr[i]) == mr[i]->mem_desc);
		CHECK(fi_mr_desc(mr[i]) != NULL);
		for (int j = 0; j < i; j++)
			CHECK(mr[i]->key != mr[j]->key);
	}
	for (int i = 0; i < 3; i++)
		CHECK_OK(fi_close(&mr[i]->fid));
	return test_close(&r);
}

/* 1,000,000 register+close pairs: every key differs from every other one
 * (so a stale key never names a later region), and the sequence has no
 * visible pattern. */
static int prov_keys_million_loop(void)
{
	size_t n = scaled(1000000, 10000);
	uint64_t *keys = malloc(n * sizeof(*keys));
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK(keys != NULL);
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	for (size_t i = 0; i < n; i++) {
		int rc = fi_mr_reg(r.domain, buf[i % 4], 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
				   0, 0, &mr, NULL);
		if (rc) {
			fprintf(stderr, "    registration %zu failed\n", i);
			CHECK_OK(rc);
		}
		keys[i] = fi_mr_key(mr);
		if (keys[i] != mr->key)
			CHECK(keys[i] == mr->key);
		rc = fi_close(&mr->fid);
		if (rc) {
			fprintf(stderr, "    close %zu failed\n", i);
			CHECK_OK(rc);
		}
	}
	int bad = check_distinct(keys, n) || check_unpredictable(keys, n);
	free(keys);
	CHECK(!bad);
	return test_close(&r);
}

/* 100,000 regions live at once: their keys are all distinct and unordered. */
static int prov_keys_100k_live(void)
{
	size_t n = scaled(100000, 1000);
	uint64_t *keys = malloc(n * sizeof(*keys));
	struct fid_mr **mr = calloc(n, sizeof(*mr));
	struct test_res r;
	CHECK(keys != NULL && mr != NULL);
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	for (size_t i = 0; i < n; i++) {
		int rc = fi_mr_reg(r.domain, buf[i % 4] + i % 4000, 64, FI_REMOTE_READ, 0, 0, 0,
				   &mr[i], NULL);
		if (rc) {
			fprintf(stderr, "    registration %zu failed\n", i);
			CHECK_OK(rc);
		}
		keys[i] = fi_mr_key(mr[i]);
	}
	int bad = check_distinct(keys, n) || check_unpredictable(keys, n);
	/* Close every other one, register as many again: still distinct. */
	for (size_t i = 0; !bad && i < n; i += 2)
		CHECK_OK(fi_close(&mr[i]->fid));
	for (size_t i = 0; !bad && i < n; i += 2) {
		CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 0, 0, &mr[i], NULL));
		keys[i] = fi_mr_key(mr[i]);
	}
	bad = bad || check_distinct(keys, n);
	for (size_t i = 0; i < n; i++)
		CHECK_OK(fi_close(&mr[i]->fid));
	free(keys);
	free(mr);
	CHECK(!bad);
	return test_close(&r);
}

/* A key of a closed region is not handed out again at once. */
static int prov_key_not_reused(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
	uint64_t first = fi_mr_key(mr);
	CHECK_OK(fi_close(&mr->fid));
	for (int i = 0; i < 1000; i++) {
		CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
		CHECK(fi_mr_key(mr) != first);
		CHECK_OK(fi_close(&mr->fid));
	}
	return test_close(&r);
}

/* Two domains draw keys independently: the same sequence of operations
 * does not give the same keys. */
static int prov_keys_differ_between_domains(void)
{
	struct test_res r;
	struct fid_domain *d2 = NULL;
	uint64_t k1[16], k2[16];
	struct fid_mr *mr = NULL;
	int same = 0;
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	CHECK_OK(fi_domain(r.fabric, r.info, &d2, NULL));
	for (int i = 0; i < 16; i++) {
		CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
		k1[i] = fi_mr_key(mr);
		CHECK_OK(fi_close(&mr->fid));
		CHECK_OK(fi_mr_reg(d2, buf[0], 64, FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
		k2[i] = fi_mr_key(mr);
		CHECK_OK(fi_close(&mr->fid));
		same += k1[i] == k2[i];
	}
	CHECK(same < 2);
	CHECK_OK(fi_close(&d2->fid));
	return test_close(&r);
}

/* FI_OXSHM_MR_MODE=FI_MR_PROV_KEY: hints that cannot take provider keys
 * match nothing; hints that can get them. */
static int prov_key_required(void)
{
	struct fi_info *hints = test_hints(), *info = (struct fi_info *)&info;
	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	CHECK_RC(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &info), -FI_ENODATA);
	CHECK(info == (struct fi_info *)&info);
	fi_freeinfo(hints);
	struct test_res r;
	struct fid_mr *a = NULL, *b = NULL;
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY | FI_MR_LOCAL));
	CHECK(r.info->domain_attr->mr_mode == FI_MR_PROV_KEY);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &a, NULL));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, 1, 0, &b, NULL));
	CHECK(fi_mr_key(a) != fi_mr_key(b));
	CHECK_OK(fi_close(&a->fid));
	CHECK_OK(fi_close(&b->fid));
	return test_close(&r);
}

/* Requested keys at scale: register+close of distinct keys, then a key
 * space reused. */
static int requested_keys_loop(void)
{
	size_t n = scaled(100000, 1000);
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	for (size_t i = 0; i < n; i++) {
		uint64_t key = (uint64_t)i * 0x9e3779b97f4a7c15ULL;
		if (key == FI_KEY_NOTAVAIL)
			continue;
		int rc = fi_mr_reg(r.domain, buf[0], 64, FI_REMOTE_READ, 0, key, 0, &mr, NULL);
		if (rc)
			fprintf(stderr, "    key 0x%llx\n", (unsigned long long)key);
		CHECK_OK(rc);
		CHECK(fi_mr_key(mr) == key);
		CHECK_OK(fi_close(&mr->fid));
	}
	return test_close(&r);
}

/* ---- threads ---- */

enum { THREADS = 4 };

struct key_worker {
	struct fid_domain *domain;
	size_t n;
	uint64_t *keys;
	struct fid_mr **mr;
	int failed;
};

static void *register_many(void *arg)
{
	struct key_worker *w = arg;
	for (size_t i = 0; i < w->n; i++) {
		if (fi_mr_reg(w->domain, buf[i % 4], 64, FI_REMOTE_READ, 0, 0, 0, &w->mr[i], NULL)) {
			w->failed++;
			w->mr[i] = NULL;
			w->keys[i] = FI_KEY_NOTAVAIL;
			continue;
		}
		w->keys[i] = fi_mr_key(w->mr[i]);
	}
	return NULL;
}

static void *close_many(void *arg)
{
	struct key_worker *w = arg;
	for (size_t i = 0; i < w->n; i++)
		if (w->mr[i] && fi_close(&w->mr[i]->fid))
			w->failed++;
	return NULL;
}

/* Threads registering at once never get the same provider key, and close
 * at once cleanly. */
static int prov_keys_threads(void)
{
	size_t per = scaled(25000, 500);
	struct test_res r;
	struct key_worker w[THREADS];
	pthread_t t[THREADS];
	uint64_t *all = malloc(THREADS * per * sizeof(*all));
	CHECK(all != NULL);
	CHECK_OK(open_mode(&r, FI_MR_PROV_KEY));
	for (int i = 0; i < THREADS; i++) {
		w[i].domain = r.domain;
		w[i].n = per;
		w[i].keys = all + i * per;
		w[i].mr = calloc(per, sizeof(*w[i].mr));
		w[i].failed = 0;
		CHECK(w[i].mr != NULL);
	}
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, register_many, &w[i]));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	int failed = 0;
	for (int i = 0; i < THREADS; i++)
		failed += w[i].failed;
	int bad = check_distinct(all, THREADS * per);
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, close_many, &w[i]));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	for (int i = 0; i < THREADS; i++) {
		failed += w[i].failed;
		free(w[i].mr);
	}
	free(all);
	CHECK(failed == 0);
	CHECK(!bad);
	return test_close(&r);
}

struct key_racer {
	struct fid_domain *domain;
	uint64_t key;
	pthread_barrier_t *go;
	int rc;
	struct fid_mr *mr;
};

static void *race_key(void *arg)
{
	struct key_racer *k = arg;
	pthread_barrier_wait(k->go);
	k->rc = fi_mr_reg(k->domain, buf[0], 64, FI_REMOTE_READ, 0, k->key, 0, &k->mr, NULL);
	return NULL;
}

/* Threads asking for the same key at once: one gets it, the others
 * -FI_ENOKEY. */
static int requested_key_race(void)
{
	struct test_res r;
	int rounds = (int)scaled(2000, 50);
	CHECK_OK(test_open(&r));
	for (int round = 0; round < rounds; round++) {
		pthread_barrier_t go;
		struct key_racer k[THREADS];
		pthread_t t[THREADS];
		CHECK_OK(pthread_barrier_init(&go, NULL, THREADS));
		for (int i = 0; i < THREADS; i++) {
			k[i].domain = r.domain;
			k[i].key = 1000 + (uint64_t)round;
			k[i].go = &go;
			k[i].mr = NULL;
			CHECK_OK(pthread_create(&t[i], NULL, race_key, &k[i]));
		}
		int won = 0, lost = 0;
		/* All done before any winner closes (which frees the key). */
		for (int i = 0; i < THREADS; i++)
			CHECK_OK(pthread_join(t[i], NULL));
		for (int i = 0; i < THREADS; i++) {
			if (k[i].rc == 0) {
				won++;
				CHECK(fi_mr_key(k[i].mr) == 1000 + (uint64_t)round);
				CHECK_OK(fi_close(&k[i].mr->fid));
			} else if (k[i].rc == -FI_ENOKEY) {
				lost++;
			}
		}
		pthread_barrier_destroy(&go);
		if (won != 1 || lost != THREADS - 1)
			fprintf(stderr, "    round %d: %d won, %d -FI_ENOKEY\n", round, won, lost);
		CHECK(won == 1 && lost == THREADS - 1);
	}
	return test_close(&r);
}

static const struct test_case cases[] = {
	CASE(requested_keys_honoured),
	CASE(requested_keys_many_live),
	CASE(requested_key_in_use_reg),
	CASE(requested_key_in_use_regv),
	CASE(requested_key_in_use_regattr),
	CASE(requested_key_notavail),
	CASE(requested_key_freed_on_close),
	CASE(refused_registration_keeps_no_key),
	CASE(requested_keys_per_domain),
	CASE(requested_keys_loop),
	CASE(prov_key_negotiated),
	CASE(prov_key_ignores_requested),
	CASE(prov_key_accessors),
	CASE(prov_keys_million_loop),
	CASE(prov_keys_100k_live),
	CASE(prov_key_not_reused),
	CASE(prov_keys_threads),
	CASE(requested_key_race),
	CASE(prov_keys_differ_between_domains),
	CASE_ENV(prov_key_required, "FI_OXSHM_MR_MODE=FI_MR_PROV_KEY"),
};

TEST_MAIN(cases)
