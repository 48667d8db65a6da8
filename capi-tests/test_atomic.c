/*
 * Atomics between processes: the fi_*atomicvalid tables and
 * fi_query_atomic, every call form (fi_atomic, fi_atomicv, fi_atomicmsg,
 * fi_inject_atomic, fi_fetch_atomic, fi_fetch_atomicmsg, fi_compare_atomic,
 * fi_compare_atomicv) with results checked at the target and fetched values
 * at the initiator, 128-bit integers (signed and unsigned) and long double,
 * refused accesses (rights, keys), and two initiator processes hammering one
 * counter at once.
 *
 * OX_TEST_SCALE (percent, default 100; run.sh sets it for valgrind)
 * shrinks the loop counts.
 */
#include "peer.h"
#include <complex.h>
#include <stddef.h>

/* FI_INT128/FI_UINT128 are in every header set tested (1.17 has them
 * after FI_DATATYPE_LAST); the C type is the compiler's. */
#ifdef __SIZEOF_INT128__
#define HAVE_I128 1
typedef __int128 i128;
typedef unsigned __int128 u128;
#define U128(hi, lo) (((u128)(hi) << 64) | (u128)(lo))
#define U128_MAX (~(u128)0)
#endif

/* oxshm computes long double where it is the x87 extended format. */
#if defined(__x86_64__)
#define LD_OK 1
#else
#define LD_OK 0
#endif

/* `n` scaled by OX_TEST_SCALE percent, at least `min`. */
static int scaled(int n, int min)
{
	const char *s = getenv("OX_TEST_SCALE");
	int pct = s ? atoi(s) : 100;
	if (pct <= 0 || pct > 100)
		pct = 100;
	n = n * pct / 100;
	return n < min ? min : n;
}

static void arm(void)
{
	alarm(getenv("OX_TEST_SCALE") ? 240 : 30);
}

/* The target's memory: one field per check. */
struct tmem {
	uint64_t sum;
	uint64_t fetch;
	uint64_t cswap_ok, cswap_fail, mswap;
	int32_t cslt;
	int32_t imin, imax;
	double dmin, dmax, dfetch;
	uint64_t awrite;
	uint32_t multi[4];
	float complex fc;
	double complex dc;
	uint64_t vec[4];
	uint64_t vmsg[2];
	uint64_t cv[2];
	uint64_t inj;
	uint64_t pipe[1];
	uint64_t order;
#ifdef HAVE_I128
	u128 usum, ufetch, umin, umax, uminhi, ucswap, ucslt, uinj;
	i128 isum, imin128, imax128, icslt;
	u128 uvec[2];
	u128 umany[16];
#endif
	long double ld_sum, ld_min, ld_cswap;
	long double complex ldc;
};

/* Read-only region (FI_REMOTE_READ only). */
struct romem {
	uint64_t v[4];
};

/* What the target publishes. */
struct regions {
	struct peer_region rw, ro;
};

static uint64_t raddr(struct peer *p, const struct peer_region *r, size_t off)
{
	return (p->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? r->base + off : off;
}

#define RW(p, rg, field) raddr(p, &(rg)->rw, offsetof(struct tmem, field))

/* Waits for one successful completion of `ctx` with `flags`. */
static int done_ok(struct peer *p, void *ctx, uint64_t flags)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int rc = peer_wait(p, &e, &err);
	if (rc == -FI_EAVAIL) {
		fprintf(stderr, "    error completion: %s (%d)\n", fi_strerror(err.err), err.err);
		return 1;
	}
	CHECK_OK(rc);
	CHECK(e.op_context == ctx);
	if (e.flags != flags) {
		fprintf(stderr, "    completion flags 0x%llx, want 0x%llx\n",
			(unsigned long long)e.flags, (unsigned long long)flags);
		return 1;
	}
	return 0;
}

/* Waits for one error completion of `ctx`; returns its err in *err_out. */
static int done_err(struct peer *p, void *ctx, int *err_out)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int rc = peer_wait(p, &e, &err);
	if (rc == 0) {
		fprintf(stderr, "    completed with success, want an error (flags 0x%llx)\n",
			(unsigned long long)e.flags);
		return 1;
	}
	CHECK_RC(rc, -FI_EAVAIL);
	CHECK(err.op_context == ctx);
	CHECK(err.flags & FI_ATOMIC);
	*err_out = err.err;
	return 0;
}

/* The target's half of most cases: register, publish, wait for the
 * initiator's "done", run `check`, answer. */
static int serve(struct peer *p, int (*init)(struct tmem *, struct romem *),
		 int (*check)(struct peer *, struct tmem *, struct romem *))
{
	struct tmem *m = calloc(1, sizeof(*m));
	struct romem *ro = calloc(1, sizeof(*ro));
	CHECK(m && ro);
	int rc = init ? init(m, ro) : 0;
	struct fid_mr *mr, *mro;
	CHECK_OK(fi_mr_reg(p->domain, m, sizeof(*m), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
			   &mr, NULL));
	CHECK_OK(fi_mr_reg(p->domain, ro, sizeof(*ro), FI_REMOTE_READ, 0, 0, 0, &mro, NULL));
	struct regions rg = {
		{ fi_mr_key(mr), (uint64_t)(uintptr_t)m, sizeof(*m) },
		{ fi_mr_key(mro), (uint64_t)(uintptr_t)ro, sizeof(*ro) },
	};
	peer_put(p, &rg, sizeof(rg));
	CHECK_OK(peer_sync(p)); /* the initiator is done */
	if (!rc && check)
		rc = check(p, m, ro);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&mro->fid));
	free(m);
	free(ro);
	char verdict = rc ? 'F' : 'P';
	peer_put(p, &verdict, 1);
	return rc;
}

/* The initiator's end of serve: regions in, verdict out. */
static int get_regions(struct peer *p, struct regions *rg)
{
	return peer_get(p, rg, sizeof(*rg));
}

static int finish(struct peer *p, int rc)
{
	if (peer_sync(p))
		return 1;
	char verdict = 0;
	if (peer_get(p, &verdict, 1) || verdict != 'P') {
		fprintf(stderr, "    the target's checks failed\n");
		return 1;
	}
	return rc;
}

static int open_pair(struct peer *p)
{
	arm();
	return peer_open(p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0);
}

/* ------------------------------------------------------------ valid tables */

enum { BASE, FETCH, COMPARE };
struct vcase {
	int kind;
	enum fi_datatype dt;
	enum fi_op op;
	int ok;
};

static const struct vcase vcases[] = {
	{ BASE, FI_UINT64, FI_SUM, 1 },
	{ BASE, FI_INT8, FI_PROD, 1 },
	{ BASE, FI_INT32, FI_MIN, 1 },
	{ BASE, FI_UINT16, FI_BXOR, 1 },
	{ BASE, FI_DOUBLE, FI_MAX, 1 },
	{ BASE, FI_FLOAT, FI_SUM, 1 },
	{ BASE, FI_FLOAT_COMPLEX, FI_SUM, 1 },
	{ BASE, FI_DOUBLE_COMPLEX, FI_PROD, 1 },
	{ BASE, FI_UINT32, FI_ATOMIC_WRITE, 1 },
	{ BASE, FI_INT64, FI_LAND, 1 },
	{ FETCH, FI_UINT64, FI_SUM, 1 },
	{ FETCH, FI_UINT64, FI_ATOMIC_READ, 1 },
	{ FETCH, FI_DOUBLE, FI_MIN, 1 },
	{ FETCH, FI_FLOAT_COMPLEX, FI_ATOMIC_READ, 1 },
	{ COMPARE, FI_UINT64, FI_CSWAP, 1 },
	{ COMPARE, FI_UINT64, FI_MSWAP, 1 },
	{ COMPARE, FI_INT32, FI_CSWAP_LT, 1 },
	{ COMPARE, FI_DOUBLE, FI_CSWAP_GE, 1 },
	/* Refused. */
	{ BASE, FI_INT128, FI_MIN, 1 },
	{ BASE, FI_UINT128, FI_SUM, 1 },
	{ BASE, FI_INT128, FI_BXOR, 1 },
	{ FETCH, FI_UINT128, FI_ATOMIC_READ, 1 },
	{ FETCH, FI_INT128, FI_PROD, 1 },
	{ COMPARE, FI_INT128, FI_CSWAP_GT, 1 },
	{ COMPARE, FI_UINT128, FI_MSWAP, 1 },
	/* Long double: x86-64's 80-bit extended only. */
	{ BASE, FI_LONG_DOUBLE, FI_SUM, LD_OK },
	{ FETCH, FI_LONG_DOUBLE, FI_MIN, LD_OK },
	{ COMPARE, FI_LONG_DOUBLE, FI_CSWAP_LE, LD_OK },
	{ BASE, FI_LONG_DOUBLE_COMPLEX, FI_PROD, LD_OK },
	{ COMPARE, FI_LONG_DOUBLE_COMPLEX, FI_CSWAP, LD_OK },
	/* Refused. */
	{ BASE, FI_FLOAT, FI_BOR, 0 },
	{ BASE, FI_DOUBLE, FI_BAND, 0 },
	{ BASE, FI_LONG_DOUBLE, FI_BOR, 0 },
	{ COMPARE, FI_LONG_DOUBLE, FI_MSWAP, 0 },
	{ BASE, FI_LONG_DOUBLE_COMPLEX, FI_MAX, 0 },
	{ COMPARE, FI_LONG_DOUBLE_COMPLEX, FI_CSWAP_LT, 0 },
	{ COMPARE, FI_DOUBLE, FI_MSWAP, 0 },
	{ COMPARE, FI_FLOAT_COMPLEX, FI_CSWAP_LT, 0 },
	{ BASE, FI_FLOAT_COMPLEX, FI_MIN, 0 },
	/* Operations of another kind. */
	{ BASE, FI_UINT64, FI_CSWAP, 0 },
	{ BASE, FI_UINT64, FI_ATOMIC_READ, 0 },
	{ BASE, FI_UINT128, FI_ATOMIC_READ, 0 },
	{ FETCH, FI_UINT64, FI_MSWAP, 0 },
	{ FETCH, FI_INT128, FI_CSWAP, 0 },
	{ COMPARE, FI_UINT64, FI_SUM, 0 },
};

static const uint64_t vflags[] = { 0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC };

static int vcall(struct fid_ep *ep, const struct vcase *v, size_t *count)
{
	switch (v->kind) {
	case BASE:
		return fi_atomicvalid(ep, v->dt, v->op, count);
	case FETCH:
		return fi_fetch_atomicvalid(ep, v->dt, v->op, count);
	default:
		return fi_compare_atomicvalid(ep, v->dt, v->op, count);
	}
}

/* fi_atomicvalid, fi_fetch_atomicvalid, fi_compare_atomicvalid over a table:
 * 0 and a count > 0, or -FI_EOPNOTSUPP. */
static int valid_tables(void)
{
	struct peer p;
	memset(&p, 0, sizeof(p));
	CHECK_OK(peer_open_ep(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	int rc = 0;
	for (size_t i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++) {
		const struct vcase *v = &vcases[i];
		size_t count = 12345;
		int got = vcall(p.ep, v, &count);
		if (v->ok ? (got != 0 || count == 0 || count == 12345) : got != -FI_EOPNOTSUPP) {
			fprintf(stderr, "    %s(datatype %d, op %d): %d (%s), count %zu; want %s\n",
				v->kind == BASE ? "fi_atomicvalid"
				: v->kind == FETCH ? "fi_fetch_atomicvalid"
						   : "fi_compare_atomicvalid",
				(int)v->dt, (int)v->op,
				got, test_errstr(got), count, v->ok ? "0, count > 0" : "-FI_EOPNOTSUPP");
			rc = 1;
		}
	}
	/* One atomic carries the same bytes whatever the type: 16-byte
	 * elements, a sixteenth of the bytes' count. */
	size_t count = 0, c8 = 0;
	CHECK_OK(fi_atomicvalid(p.ep, FI_DOUBLE_COMPLEX, FI_SUM, &count));
	CHECK(count >= 1);
	CHECK_OK(fi_atomicvalid(p.ep, FI_UINT8, FI_SUM, &c8));
	CHECK_OK(fi_atomicvalid(p.ep, FI_INT128, FI_SUM, &count));
	CHECK(count >= 1 && count * 16 == c8);
	CHECK_OK(fi_compare_atomicvalid(p.ep, FI_UINT128, FI_CSWAP, &count));
	CHECK(count * 16 == c8);
	int crc = peer_close_ep(&p);
	CHECK_OK(rc);
	return crc;
}

/* fi_query_atomic on the domain: the same answers as the valid calls for
 * every row of the table (FI_FETCH_ATOMIC / FI_COMPARE_ATOMIC choose the
 * kind), with each type's size; FI_TAGGED is not supported, the two kind
 * flags together are bad flags. */
static int query_atomic(void)
{
	struct peer p;
	memset(&p, 0, sizeof(p));
	CHECK_OK(peer_open_ep(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	int rc = 0;
	for (size_t i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++) {
		const struct vcase *v = &vcases[i];
		size_t count = 0;
		int want = vcall(p.ep, v, &count);
		struct fi_atomic_attr a = { 12345, 678 };
		int got = fi_query_atomic(p.domain, v->dt, v->op, &a, vflags[v->kind]);
		int size_ok = 1;
		if (v->dt == FI_INT128 || v->dt == FI_UINT128 || v->dt == FI_DOUBLE_COMPLEX)
			size_ok = a.size == 16;
		else if (v->dt == FI_LONG_DOUBLE)
			size_ok = a.size == sizeof(long double);
		else if (v->dt == FI_LONG_DOUBLE_COMPLEX)
			size_ok = a.size == sizeof(long double complex);
		if (got != want || (!got && (a.count != count || !size_ok)) ||
		    (got && (a.count != 12345 || a.size != 678))) {
			fprintf(stderr, "    fi_query_atomic(datatype %d, op %d, flags 0x%llx): %d "
				"(%s), count %zu, size %zu; the valid call: %d, count %zu\n",
				(int)v->dt, (int)v->op, (unsigned long long)vflags[v->kind], got,
				test_errstr(got), a.count, a.size, want, count);
			rc = 1;
		}
	}
	struct fi_atomic_attr a;
	CHECK_RC(fi_query_atomic(p.domain, FI_UINT64, FI_SUM, &a, FI_TAGGED), -FI_EOPNOTSUPP);
	CHECK_RC(fi_query_atomic(p.domain, FI_UINT64, FI_CSWAP, &a,
				 FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC),
		 -FI_EBADFLAGS);
	int crc = peer_close_ep(&p);
	CHECK_OK(rc);
	return crc;
}

/* ------------------------------------------------------------- sum x 1000 */

static int sum_n(void)
{
	return scaled(1000, 20);
}

static int sum_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	(void)ro;
	uint64_t n = (uint64_t)sum_n();
	CHECK(m->sum == 7 + n * (n + 1) / 2);
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == n);
	CHECK(peer_cntr_err(p, C_REMOTE_WRITE) == 0);
	CHECK(peer_cntr(p, C_REMOTE_READ) == 0);
	return 0;
}

static int sum_init(struct tmem *m, struct romem *ro)
{
	(void)ro;
	m->sum = 7;
	return 0;
}

/* Posts `n` fi_atomic FI_SUM (operand i + 1, or 1 when `ones`) on the uint64
 * at `addr`, keeping up to `win` in flight; every completion is FI_ATOMIC |
 * FI_WRITE and successful. */
static int sum_stream(struct peer *p, uint64_t addr, uint64_t key, int n, int win, int ones)
{
	uint64_t *ops = malloc(sizeof(*ops) * (size_t)n);
	CHECK(ops);
	int posted = 0, done = 0, rc = 0;
	double end = peer_now() + 20;
	while (done < n && !rc && peer_now() < end) {
		while (posted < n && posted - done < win) {
			ops[posted] = ones ? 1 : (uint64_t)posted + 1;
			ssize_t r = fi_atomic(p->ep, &ops[posted], 1, NULL, p->other, addr, key,
					      FI_UINT64, FI_SUM, &ops[posted]);
			if (r == -FI_EAGAIN)
				break;
			if (r) {
				fprintf(stderr, "    fi_atomic %d: %zd (%s)\n", posted, r, test_errstr(r));
				rc = 1;
				break;
			}
			posted++;
		}
		struct fi_cq_tagged_entry e[16];
		ssize_t k = fi_cq_read(p->cq, e, 16);
		if (k == -FI_EAGAIN) {
			sched_yield(); /* see peer_wait */
			continue;
		}
		if (k < 0) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(p->cq, &err, 0);
			fprintf(stderr, "    fi_cq_read: %zd (%s), err %d (%s)\n", k, test_errstr(k),
				err.err, fi_strerror(err.err));
			rc = 1;
			break;
		}
		for (ssize_t i = 0; i < k; i++) {
			uint64_t *c = e[i].op_context;
			if (c < ops || c >= ops + posted || e[i].flags != (FI_ATOMIC | FI_WRITE)) {
				fprintf(stderr, "    bad completion: context %p flags 0x%llx\n",
					(void *)c, (unsigned long long)e[i].flags);
				rc = 1;
			}
		}
		done += (int)k;
	}
	free(ops);
	if (!rc && done != n) {
		fprintf(stderr, "    %d of %d atomics completed in 20 s\n", done, n);
		rc = 1;
	}
	return rc;
}

static int sum_initiator(struct peer *p)
{
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	int n = sum_n();
	int rc = sum_stream(p, RW(p, &rg, sum), rg.rw.key, n, 16, 0);
	if (!rc && peer_cntr(p, C_WRITE) != (uint64_t)n) {
		fprintf(stderr, "    FI_WRITE counter %llu, want %d\n",
			(unsigned long long)peer_cntr(p, C_WRITE), n);
		rc = 1;
	}
	return finish(p, rc);
}

/* fi_atomic FI_SUM on one uint64, 1000 times (window of 16): the sum at
 * the target, FI_REMOTE_WRITE counted 1000 times there, FI_WRITE here. */
static int sum_thousand(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, sum_init, sum_check)
					  : sum_initiator(&p));
}

/* ------------------------------------------------------------------ fetch */

enum { NFETCH = 50, NPIPE = 8 };

static int fetch_init(struct tmem *m, struct romem *ro)
{
	(void)ro;
	m->fetch = 100;
	m->pipe[0] = 1000;
	m->dfetch = 0.5;
	return 0;
}

static int fetch_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	(void)ro;
	CHECK(m->fetch == 100 + NFETCH);
	CHECK(m->pipe[0] == 1000 + NPIPE * 3);
	CHECK(m->dfetch == 0.5 + 0.25 * 4);
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == NFETCH + NPIPE + 4);
	return 0;
}

static int fetch_initiator(struct peer *p)
{
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	int rc = 0;
	/* One at a time: the old values, in order. */
	for (int i = 0; i < NFETCH && !rc; i++) {
		uint64_t one = 1, old = 0xdead;
		int ctx;
		CHECK_OK(fi_fetch_atomic(p->ep, &one, 1, NULL, &old, NULL, p->other,
					 RW(p, &rg, fetch), rg.rw.key, FI_UINT64, FI_SUM, &ctx));
		rc = done_ok(p, &ctx, FI_ATOMIC | FI_READ);
		if (!rc && old != 100u + (unsigned)i) {
			fprintf(stderr, "    fetch %d returned %llu, want %d\n", i,
				(unsigned long long)old, 100 + i);
			rc = 1;
		}
	}
	CHECK_OK(rc);
	/* Several in flight: each gets a distinct old value. */
	uint64_t three[NPIPE], olds[NPIPE];
	for (int i = 0; i < NPIPE; i++) {
		three[i] = 3;
		olds[i] = 0;
		CHECK_OK(fi_fetch_atomic(p->ep, &three[i], 1, NULL, &olds[i], NULL, p->other,
					 RW(p, &rg, pipe), rg.rw.key, FI_UINT64, FI_SUM, &olds[i]));
	}
	for (int i = 0; i < NPIPE; i++) {
		struct fi_cq_tagged_entry e;
		CHECK_OK(peer_wait(p, &e, NULL));
		CHECK(e.flags == (FI_ATOMIC | FI_READ));
	}
	unsigned seen = 0;
	for (int i = 0; i < NPIPE; i++) {
		CHECK(olds[i] >= 1000 && olds[i] < 1000 + NPIPE * 3 && (olds[i] - 1000) % 3 == 0);
		unsigned bit = 1u << ((olds[i] - 1000) / 3);
		CHECK(!(seen & bit));
		seen |= bit;
	}
	/* Doubles. */
	for (int i = 0; i < 4; i++) {
		double q = 0.25, old = -1;
		int ctx;
		CHECK_OK(fi_fetch_atomic(p->ep, &q, 1, NULL, &old, NULL, p->other,
					 RW(p, &rg, dfetch), rg.rw.key, FI_DOUBLE, FI_SUM, &ctx));
		CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
		CHECK(old == 0.5 + 0.25 * i);
	}
	CHECK(peer_cntr(p, C_READ) == NFETCH + NPIPE + 4);
	CHECK(peer_cntr(p, C_WRITE) == 0);
	return finish(p, 0);
}

/* fi_fetch_atomic FI_SUM: old values in order one at a time, distinct
 * ones when pipelined, on uint64 and double. */
static int fetch_sum_old_values(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, fetch_init, fetch_check)
					  : fetch_initiator(&p));
}

/* --------------------------------------------------------------- compare */

static int cmp_init(struct tmem *m, struct romem *ro)
{
	(void)ro;
	m->cswap_ok = 41;
	m->cswap_fail = 50;
	m->mswap = 0x1234;
	m->cslt = 10;
	return 0;
}

static int cmp_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	(void)p;
	(void)ro;
	CHECK(m->cswap_ok == 42);
	CHECK(m->cswap_fail == 50);
	CHECK(m->mswap == 0xF034);
	/* CSWAP_LT swaps when compare < target: 5 < 10 swapped in 99, then
	 * 100 < 99 left it. */
	CHECK(m->cslt == 99);
	return 0;
}

static int cmp_initiator(struct peer *p)
{
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	int ctx;
	/* CSWAP that succeeds: compare == target. */
	uint64_t op = 42, cmp = 41, old = 0;
	CHECK_OK(fi_compare_atomic(p->ep, &op, 1, NULL, &cmp, NULL, &old, NULL, p->other,
				   RW(p, &rg, cswap_ok), rg.rw.key, FI_UINT64, FI_CSWAP, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == 41);
	/* CSWAP that fails: compare != target; the old value comes back. */
	op = 7;
	cmp = 49;
	old = 0;
	CHECK_OK(fi_compare_atomic(p->ep, &op, 1, NULL, &cmp, NULL, &old, NULL, p->other,
				   RW(p, &rg, cswap_fail), rg.rw.key, FI_UINT64, FI_CSWAP, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == 50);
	/* MSWAP: (operand & mask) | (target & ~mask). */
	op = 0xF0F0;
	cmp = 0xFF00;
	old = 0;
	CHECK_OK(fi_compare_atomic(p->ep, &op, 1, NULL, &cmp, NULL, &old, NULL, p->other,
				   RW(p, &rg, mswap), rg.rw.key, FI_UINT64, FI_MSWAP, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == 0x1234);
	/* CSWAP_LT on int32: 5 < 10, swapped to 99; then 100 < 99 fails. */
	int32_t iop = 99, icmp = 5, iold = 0;
	CHECK_OK(fi_compare_atomic(p->ep, &iop, 1, NULL, &icmp, NULL, &iold, NULL, p->other,
				   RW(p, &rg, cslt), rg.rw.key, FI_INT32, FI_CSWAP_LT, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(iold == 10);
	iop = -1;
	icmp = 100;
	CHECK_OK(fi_compare_atomic(p->ep, &iop, 1, NULL, &icmp, NULL, &iold, NULL, p->other,
				   RW(p, &rg, cslt), rg.rw.key, FI_INT32, FI_CSWAP_LT, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(iold == 99);
	return finish(p, 0);
}

/* fi_compare_atomic: FI_CSWAP that succeeds and one that fails (result =
 * old value either way), FI_MSWAP, FI_CSWAP_LT on int32. */
static int compare_swap(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, cmp_init, cmp_check) : cmp_initiator(&p));
}

/* ---------------------------------------------------------------- min/max */

static int mm_init(struct tmem *m, struct romem *ro)
{
	(void)ro;
	m->imin = 5;
	m->imax = 5;
	m->dmin = 1.5;
	m->dmax = 1.5;
	return 0;
}

static int mm_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	(void)p;
	(void)ro;
	CHECK(m->imin == -3);
	CHECK(m->imax == 7);
	CHECK(m->dmin == -0.25);
	CHECK(m->dmax == 2.5);
	return 0;
}

static int mm_initiator(struct peer *p)
{
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	int ctx;
	static const int32_t imins[] = { -3, 10 }, imaxs[] = { 7, -100 };
	static const double dmins[] = { -0.25, 3 }, dmaxs[] = { 2.5, -7 };
	for (int i = 0; i < 2; i++) {
		int32_t a = imins[i], b = imaxs[i];
		CHECK_OK(fi_atomic(p->ep, &a, 1, NULL, p->other, RW(p, &rg, imin), rg.rw.key,
				   FI_INT32, FI_MIN, &ctx));
		CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
		CHECK_OK(fi_atomic(p->ep, &b, 1, NULL, p->other, RW(p, &rg, imax), rg.rw.key,
				   FI_INT32, FI_MAX, &ctx));
		CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	}
	/* Doubles through the fetch form: the old values come back too. */
	double want_min_old[] = { 1.5, -0.25 }, want_max_old[] = { 1.5, 2.5 };
	for (int i = 0; i < 2; i++) {
		double a = dmins[i], b = dmaxs[i], old = 99;
		CHECK_OK(fi_fetch_atomic(p->ep, &a, 1, NULL, &old, NULL, p->other,
					 RW(p, &rg, dmin), rg.rw.key, FI_DOUBLE, FI_MIN, &ctx));
		CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
		CHECK(old == want_min_old[i]);
		CHECK_OK(fi_fetch_atomic(p->ep, &b, 1, NULL, &old, NULL, p->other,
					 RW(p, &rg, dmax), rg.rw.key, FI_DOUBLE, FI_MAX, &ctx));
		CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
		CHECK(old == want_max_old[i]);
	}
	return finish(p, 0);
}

/* FI_MIN / FI_MAX on int32 (fi_atomic) and double (fi_fetch_atomic). */
static int min_max(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, mm_init, mm_check) : mm_initiator(&p));
}

/* ------------------------------------------------------- read, write, multi */

static int rw_init(struct tmem *m, struct romem *ro)
{
	m->awrite = 5;
	for (int i = 0; i < 4; i++) {
		m->multi[i] = (uint32_t)(i + 1);
		ro->v[i] = 0xAB00u + (unsigned)i;
	}
	m->fc = 1.0f + 2.0f * I;
	m->dc = 1.0 + 1.0 * I;
	return 0;
}

static int rw_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	CHECK(m->awrite == 0x5555AAAA5555AAAAULL);
	static const uint32_t want[4] = { 11, 22, 33, 44 };
	for (int i = 0; i < 4; i++) {
		CHECK(m->multi[i] == want[i]);
		CHECK(ro->v[i] == 0xAB00u + (unsigned)i);
	}
	CHECK(crealf(m->fc) == 1.5f && cimagf(m->fc) == 1.75f);
	/* (1 + i)(1 + i) = 2i */
	CHECK(creal(m->dc) == 0.0 && cimag(m->dc) == 2.0);
	/* Reads: ATOMIC_READ of 1 and of 4 elements; writes: the write, the
	 * multi-element sum, the fetch on multi, two complex ops. */
	CHECK(peer_cntr(p, C_REMOTE_READ) == 2);
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == 5);
	return 0;
}

static int rw_initiator(struct peer *p)
{
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	int ctx;
	/* FI_ATOMIC_READ needs only FI_REMOTE_READ: on the read-only region. */
	uint64_t got = 0;
	CHECK_OK(fi_fetch_atomic(p->ep, NULL, 1, NULL, &got, NULL, p->other,
				 raddr(p, &rg.ro, 8), rg.ro.key, FI_UINT64, FI_ATOMIC_READ, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(got == 0xAB01);
	uint64_t all[4] = { 0 };
	CHECK_OK(fi_fetch_atomic(p->ep, NULL, 4, NULL, all, NULL, p->other,
				 raddr(p, &rg.ro, 0), rg.ro.key, FI_UINT64, FI_ATOMIC_READ, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	for (int i = 0; i < 4; i++)
		CHECK(all[i] == 0xAB00u + (unsigned)i);
	/* FI_ATOMIC_WRITE. */
	uint64_t w = 0x5555AAAA5555AAAAULL;
	CHECK_OK(fi_atomic(p->ep, &w, 1, NULL, p->other, RW(p, &rg, awrite), rg.rw.key,
			   FI_UINT64, FI_ATOMIC_WRITE, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	/* Four elements in one operation, then a fetch of all four (+0). */
	uint32_t add[4] = { 10, 20, 30, 40 }, zero[4] = { 0 }, old4[4] = { 0 };
	CHECK_OK(fi_atomic(p->ep, add, 4, NULL, p->other, RW(p, &rg, multi), rg.rw.key,
			   FI_UINT32, FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	CHECK_OK(fi_fetch_atomic(p->ep, zero, 4, NULL, old4, NULL, p->other, RW(p, &rg, multi),
				 rg.rw.key, FI_UINT32, FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old4[0] == 11 && old4[1] == 22 && old4[2] == 33 && old4[3] == 44);
	/* Complex. */
	float complex fc = 0.5f - 0.25f * I;
	CHECK_OK(fi_atomic(p->ep, &fc, 1, NULL, p->other, RW(p, &rg, fc), rg.rw.key,
			   FI_FLOAT_COMPLEX, FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	double complex dc = 1.0 + 1.0 * I;
	CHECK_OK(fi_atomic(p->ep, &dc, 1, NULL, p->other, RW(p, &rg, dc), rg.rw.key,
			   FI_DOUBLE_COMPLEX, FI_PROD, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	return finish(p, 0);
}

/* FI_ATOMIC_READ (1 and 4 elements, read-only region), FI_ATOMIC_WRITE,
 * a 4-element FI_SUM and its fetch, float and double complex. */
static int read_write_multi_complex(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, rw_init, rw_check) : rw_initiator(&p));
}

/* --------------------------------------------------------------- ordering */

enum { NORDER = 200 };

/* Posts an operation, retrying while the ring is full (progress is
 * automatic, so it drains). */
#define POST_RETRY(call)                                                       \
	do {                                                                   \
		ssize_t r_;                                                    \
		while ((r_ = (call)) == -FI_EAGAIN)                           \
			sched_yield();                                         \
		CHECK_OK(r_);                                                  \
	} while (0)

static int order_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	(void)ro;
	CHECK(m->order == 7);
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == 3 * NORDER);
	CHECK(peer_cntr(p, C_REMOTE_READ) == 2 * NORDER);
	return 0;
}

static int order_initiator(struct peer *p)
{
	const uint64_t want = FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR |
			      FI_ORDER_ATOMIC_WAW | FI_ORDER_SAS;
	CHECK((p->info->tx_attr->msg_order & want) == want);
	CHECK((p->info->rx_attr->msg_order & want) == want);
	CHECK(p->info->ep_attr->max_order_raw_size >= sizeof(uint64_t));
	CHECK(p->info->ep_attr->max_order_war_size >= sizeof(uint64_t));
	CHECK(p->info->ep_attr->max_order_waw_size >= sizeof(uint64_t));
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	uint64_t at = RW(p, &rg, order), one = 1, seven = 7;
	int ctx[5];
	for (int i = 0; i < NORDER; i++) {
		uint64_t w = 2 * (uint64_t)i + 1, raw = 0, war = 0;
		/* Posted back to back, no wait: write, sum (WAW), read (RAW),
		 * read then write (WAR). */
		POST_RETRY(fi_atomic(p->ep, &w, 1, NULL, p->other, at, rg.rw.key, FI_UINT64,
				     FI_ATOMIC_WRITE, &ctx[0]));
		POST_RETRY(fi_atomic(p->ep, &one, 1, NULL, p->other, at, rg.rw.key, FI_UINT64,
				     FI_SUM, &ctx[1]));
		POST_RETRY(fi_fetch_atomic(p->ep, NULL, 1, NULL, &raw, NULL, p->other, at,
					   rg.rw.key, FI_UINT64, FI_ATOMIC_READ, &ctx[2]));
		POST_RETRY(fi_fetch_atomic(p->ep, NULL, 1, NULL, &war, NULL, p->other, at,
					   rg.rw.key, FI_UINT64, FI_ATOMIC_READ, &ctx[3]));
		POST_RETRY(fi_atomic(p->ep, &seven, 1, NULL, p->other, at, rg.rw.key, FI_UINT64,
				     FI_ATOMIC_WRITE, &ctx[4]));
		for (int k = 0; k < 5; k++) {
			struct fi_cq_tagged_entry e;
			CHECK_OK(peer_wait(p, &e, NULL));
		}
		if (raw != w + 1 || war != w + 1) {
			fprintf(stderr, "    round %d: read %llu and %llu, want %llu\n", i,
				(unsigned long long)raw, (unsigned long long)war,
				(unsigned long long)(w + 1));
			return finish(p, 1);
		}
	}
	return finish(p, 0);
}

/* msg_order advertises FI_ORDER_SAS and the four atomic orderings; atomics
 * posted back to back to one location execute in the order posted. */
static int atomic_ordering(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, NULL, order_check) : order_initiator(&p));
}

/* ------------------------------------------------------------- call forms */

enum { NINJ = 20 };

static int forms_init(struct tmem *m, struct romem *ro)
{
	(void)ro;
	for (int i = 0; i < 4; i++)
		m->vec[i] = 100u * (unsigned)i;
	m->vmsg[0] = 1000;
	m->vmsg[1] = 2000;
	m->cv[0] = 1;
	m->cv[1] = 2;
	m->inj = 0;
	return 0;
}

static int forms_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	(void)ro;
	for (int i = 0; i < 4; i++)
		CHECK(m->vec[i] == 100u * (unsigned)i + (unsigned)i + 1);
	CHECK(m->vmsg[0] == 1005 && m->vmsg[1] == 2006);
	CHECK(m->cv[0] == 77 && m->cv[1] == 2);
	CHECK(m->inj == NINJ * (NINJ + 1) / 2);
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == 3 + NINJ);
	return 0;
}

static int forms_initiator(struct peer *p)
{
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	int ctx;
	/* fi_atomicv: two iocs of two elements onto four. */
	uint64_t a[2] = { 1, 2 }, b[2] = { 3, 4 };
	struct fi_ioc iov[2] = { { a, 2 }, { b, 2 } };
	CHECK_OK(fi_atomicv(p->ep, iov, NULL, 2, p->other, RW(p, &rg, vec), rg.rw.key,
			    FI_UINT64, FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	/* fi_fetch_atomicmsg. */
	uint64_t op[2] = { 5, 6 }, res[2] = { 0 };
	struct fi_ioc msg_iov = { op, 2 }, res_iov = { res, 2 };
	struct fi_rma_ioc rma = { RW(p, &rg, vmsg), 2, rg.rw.key };
	struct fi_msg_atomic msg = {
		.msg_iov = &msg_iov, .iov_count = 1, .addr = p->other, .rma_iov = &rma,
		.rma_iov_count = 1, .datatype = FI_UINT64, .op = FI_SUM, .context = &ctx,
	};
	CHECK_OK(fi_fetch_atomicmsg(p->ep, &msg, &res_iov, NULL, 1, FI_COMPLETION));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(res[0] == 1000 && res[1] == 2000);
	/* fi_compare_atomicv: CSWAP of two elements, the first matches. */
	uint64_t cop[2] = { 77, 88 }, ccmp[2] = { 1, 3 }, cres[2] = { 0 };
	struct fi_ioc co = { cop, 2 }, cc = { ccmp, 2 }, cr = { cres, 2 };
	CHECK_OK(fi_compare_atomicv(p->ep, &co, NULL, 1, &cc, NULL, 1, &cr, NULL, 1, p->other,
				    RW(p, &rg, cv), rg.rw.key, FI_UINT64, FI_CSWAP, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(cres[0] == 1 && cres[1] == 2);
	/* fi_inject_atomic: the operand is ours again on return; no CQ
	 * entry, the FI_WRITE counter counts them. */
	uint64_t before = peer_cntr(p, C_WRITE);
	uint64_t *v = malloc(sizeof(*v));
	CHECK(v);
	for (int i = 1; i <= NINJ; i++) {
		*v = (uint64_t)i;
		int r = (int)fi_inject_atomic(p->ep, v, 1, p->other, RW(p, &rg, inj), rg.rw.key,
					      FI_UINT64, FI_SUM);
		*v = 0xFFFF;
		if (r)
			free(v);
		CHECK_OK(r);
	}
	free(v);
	double end = peer_now() + 10;
	while (peer_cntr(p, C_WRITE) < before + NINJ && peer_now() < end)
		sched_yield();
	CHECK(peer_cntr(p, C_WRITE) == before + NINJ);
	struct fi_cq_tagged_entry e;
	CHECK_RC(fi_cq_read(p->cq, &e, 1), -FI_EAGAIN);
	return finish(p, 0);
}

/* fi_atomicv, fi_fetch_atomicmsg, fi_compare_atomicv, fi_inject_atomic. */
static int call_forms(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, forms_init, forms_check)
					  : forms_initiator(&p));
}

/* ---------------------------------------------------------------- refused */

static int ref_init(struct tmem *m, struct romem *ro)
{
	m->sum = 3;
	for (int i = 0; i < 4; i++)
		ro->v[i] = 9;
	return 0;
}

static int ref_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	CHECK(m->sum == 3);
	for (int i = 0; i < 4; i++)
		CHECK(ro->v[i] == 9);
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == 0);
	CHECK(peer_cntr(p, C_REMOTE_READ) == 0);
	return 0;
}

static int ref_initiator(struct peer *p)
{
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	int ctx, err = 0;
	uint64_t one = 1, old = 0x77, cmp = 9;
	/* Writes to a region registered for remote reads only. */
	CHECK_OK(fi_atomic(p->ep, &one, 1, NULL, p->other, raddr(p, &rg.ro, 0), rg.ro.key,
			   FI_UINT64, FI_SUM, &ctx));
	CHECK_OK(done_err(p, &ctx, &err));
	CHECK(err == FI_EACCES);
	CHECK_OK(fi_fetch_atomic(p->ep, &one, 1, NULL, &old, NULL, p->other,
				 raddr(p, &rg.ro, 8), rg.ro.key, FI_UINT64, FI_SUM, &ctx));
	CHECK_OK(done_err(p, &ctx, &err));
	CHECK(err == FI_EACCES);
	CHECK(old == 0x77);
	CHECK_OK(fi_compare_atomic(p->ep, &one, 1, NULL, &cmp, NULL, &old, NULL, p->other,
				   raddr(p, &rg.ro, 16), rg.ro.key, FI_UINT64, FI_CSWAP, &ctx));
	CHECK_OK(done_err(p, &ctx, &err));
	CHECK(err == FI_EACCES);
	/* A key that names nothing. */
	CHECK_OK(fi_atomic(p->ep, &one, 1, NULL, p->other, RW(p, &rg, sum), rg.rw.key ^ 0x100,
			   FI_UINT64, FI_SUM, &ctx));
	CHECK_OK(done_err(p, &ctx, &err));
	CHECK(err == FI_EINVAL);
	/* Past the end of the region. */
	CHECK_OK(fi_atomic(p->ep, &one, 1, NULL, p->other, raddr(p, &rg.rw, sizeof(struct tmem)),
			   rg.rw.key, FI_UINT64, FI_ATOMIC_WRITE, &ctx));
	CHECK_OK(done_err(p, &ctx, &err));
	CHECK(err != 0);
	CHECK(peer_cntr(p, C_WRITE) == 0);
	CHECK(peer_cntr_err(p, C_WRITE) == 3);
	CHECK(peer_cntr(p, C_READ) == 0);
	CHECK(peer_cntr_err(p, C_READ) == 2);
	/* Refused by the call itself: an unsupported combination, too many
	 * elements for one atomic. */
	float f = 1;
	CHECK_RC(fi_atomic(p->ep, &f, 1, NULL, p->other, RW(p, &rg, sum), rg.rw.key, FI_FLOAT,
			   FI_BOR, &ctx), -FI_EOPNOTSUPP);
	size_t max = 0;
	CHECK_OK(fi_atomicvalid(p->ep, FI_UINT64, FI_SUM, &max));
	uint64_t *many = calloc(max + 1, sizeof(*many));
	CHECK(many);
	ssize_t r = fi_atomic(p->ep, many, max + 1, NULL, p->other, RW(p, &rg, sum), rg.rw.key,
			      FI_UINT64, FI_SUM, &ctx);
	free(many);
	CHECK(r < 0 && r != -FI_EAGAIN);
	return finish(p, 0);
}

/* Refused at the target: writes to a read-only region (FI_EACCES), a wrong
 * key (FI_EINVAL), past the region's end; the target's memory untouched. */
static int refused(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, ref_init, ref_check) : ref_initiator(&p));
}

/* ---------------------------------------------------------- 128-bit */

#ifdef HAVE_I128
static int i128_init(struct tmem *m, struct romem *ro)
{
	(void)ro;
	m->usum = U128(0, UINT64_MAX);
	m->isum = (i128)(U128_MAX >> 1); /* INT128_MAX */
	m->ufetch = U128(7, 8);
	m->imin128 = m->imax128 = 1;
	m->umin = m->umax = 1;
	m->uminhi = U128(1, 0);
	m->ucswap = U128(1, 5);
	m->icslt = 1;
	m->ucslt = 1;
	m->uvec[0] = U128(1, 1);
	m->uvec[1] = U128(2, 2);
	for (int i = 0; i < 16; i++)
		m->umany[i] = U128(i, UINT64_MAX);
	return 0;
}

static int i128_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	(void)ro;
	/* 2^64 - 1 + 1 carried into the high half, then + 2^64 (fetch). */
	CHECK(m->usum == U128(2, 0));
	/* INT128_MAX + 1 wraps to INT128_MIN. */
	CHECK(m->isum == (i128)((u128)1 << 127));
	CHECK(m->ufetch == U128(7, 8) + U128(1, 1));
	/* The same bits, -1 signed and the maximum unsigned. */
	CHECK(m->imin128 == -1);
	CHECK(m->imax128 == 1);
	CHECK(m->umin == 1);
	CHECK(m->umax == U128_MAX);
	CHECK(m->uminhi == U128(0, UINT64_MAX));
	/* CSWAP: equal low halves did not swap, the full value did. */
	CHECK(m->ucswap == U128(9, 9));
	/* CSWAP_LT with compare -1 / U128_MAX against 1: signed swaps. */
	CHECK(m->icslt == 42);
	CHECK(m->ucslt == 1);
	CHECK(m->uvec[0] == U128(1, 1) + U128(10, 0) && m->uvec[1] == U128(2, 2) + 1);
	for (int i = 0; i < 16; i++)
		CHECK(m->umany[i] == U128(i + 1, 0));
	CHECK(m->uinj == U128(3, 3) * 5);
	/* Writes: sums 3, fetch-add 1, min/max 5, cswap 2, cslt 2, v 1,
	 * msg 1, inject 5; the one read: ATOMIC_READ. */
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == 20);
	CHECK(peer_cntr(p, C_REMOTE_READ) == 1);
	return 0;
}

static int i128_initiator(struct peer *p)
{
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	int ctx;
	uint64_t key = rg.rw.key;
	/* FI_SUM with a carry, then fetch-and-add of 2^64. */
	u128 one = 1, old = 0;
	CHECK_OK(fi_atomic(p->ep, &one, 1, NULL, p->other, RW(p, &rg, usum), key, FI_UINT128,
			   FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	u128 hi = U128(1, 0);
	CHECK_OK(fi_fetch_atomic(p->ep, &hi, 1, NULL, &old, NULL, p->other, RW(p, &rg, usum), key,
				 FI_UINT128, FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == U128(1, 0));
	i128 ione = 1;
	CHECK_OK(fi_atomic(p->ep, &ione, 1, NULL, p->other, RW(p, &rg, isum), key, FI_INT128,
			   FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	/* Fetch: the old value, both halves. */
	u128 add = U128(1, 1);
	old = 0;
	CHECK_OK(fi_fetch_atomic(p->ep, &add, 1, NULL, &old, NULL, p->other, RW(p, &rg, ufetch),
				 key, FI_UINT128, FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == U128(7, 8));
	old = 0;
	CHECK_OK(fi_fetch_atomic(p->ep, NULL, 1, NULL, &old, NULL, p->other, RW(p, &rg, ufetch),
				 key, FI_UINT128, FI_ATOMIC_READ, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == U128(8, 9));
	/* MIN and MAX of the same bits as signed and as unsigned. */
	i128 ineg = -1;
	u128 umax = U128_MAX, ulow = U128(0, UINT64_MAX);
	CHECK_OK(fi_atomic(p->ep, &ineg, 1, NULL, p->other, RW(p, &rg, imin128), key, FI_INT128,
			   FI_MIN, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	CHECK_OK(fi_atomic(p->ep, &ineg, 1, NULL, p->other, RW(p, &rg, imax128), key, FI_INT128,
			   FI_MAX, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	CHECK_OK(fi_atomic(p->ep, &umax, 1, NULL, p->other, RW(p, &rg, umin), key, FI_UINT128,
			   FI_MIN, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	old = 0;
	CHECK_OK(fi_fetch_atomic(p->ep, &umax, 1, NULL, &old, NULL, p->other, RW(p, &rg, umax),
				 key, FI_UINT128, FI_MAX, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == 1);
	/* The high half decides: 2^64 - 1 < 2^64. */
	CHECK_OK(fi_atomic(p->ep, &ulow, 1, NULL, p->other, RW(p, &rg, uminhi), key, FI_UINT128,
			   FI_MIN, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	/* CSWAP compares all 128 bits. */
	u128 swap = U128(9, 9), cmp = 5;
	old = 0;
	CHECK_OK(fi_compare_atomic(p->ep, &swap, 1, NULL, &cmp, NULL, &old, NULL, p->other,
				   RW(p, &rg, ucswap), key, FI_UINT128, FI_CSWAP, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == U128(1, 5));
	cmp = U128(1, 5);
	CHECK_OK(fi_compare_atomic(p->ep, &swap, 1, NULL, &cmp, NULL, &old, NULL, p->other,
				   RW(p, &rg, ucswap), key, FI_UINT128, FI_CSWAP, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == U128(1, 5));
	/* CSWAP_LT (compare < target): -1 < 1 signed, U128_MAX > 1. */
	i128 i42 = 42;
	u128 u42 = 42;
	CHECK_OK(fi_compare_atomic(p->ep, &i42, 1, NULL, &ineg, NULL, &old, NULL, p->other,
				   RW(p, &rg, icslt), key, FI_INT128, FI_CSWAP_LT, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK_OK(fi_compare_atomic(p->ep, &u42, 1, NULL, &umax, NULL, &old, NULL, p->other,
				   RW(p, &rg, ucslt), key, FI_UINT128, FI_CSWAP_LT, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == 1);
	/* fi_atomicv: two iocs of one element each. */
	u128 a0 = U128(10, 0), a1 = 1;
	struct fi_ioc iov[2] = { { &a0, 1 }, { &a1, 1 } };
	CHECK_OK(fi_atomicv(p->ep, iov, NULL, 2, p->other, RW(p, &rg, uvec), key, FI_UINT128,
			    FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	/* The most elements of one atomic (fi_atomicmsg), then one more. */
	size_t max = 0;
	CHECK_OK(fi_atomicvalid(p->ep, FI_UINT128, FI_SUM, &max));
	CHECK(max == 16);
	u128 ones[17];
	for (int i = 0; i < 17; i++)
		ones[i] = 1;
	struct fi_ioc mi = { ones, 16 };
	struct fi_rma_ioc rma = { RW(p, &rg, umany), 16, key };
	struct fi_msg_atomic msg = {
		.msg_iov = &mi, .iov_count = 1, .addr = p->other, .rma_iov = &rma,
		.rma_iov_count = 1, .datatype = FI_UINT128, .op = FI_SUM, .context = &ctx,
	};
	CHECK_OK(fi_atomicmsg(p->ep, &msg, FI_COMPLETION));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	mi.count = rma.count = 17;
	ssize_t r = fi_atomicmsg(p->ep, &msg, FI_COMPLETION);
	CHECK(r < 0 && r != -FI_EAGAIN);
	/* fi_inject_atomic, five times. */
	uint64_t before = peer_cntr(p, C_WRITE);
	for (int i = 0; i < 5; i++) {
		u128 v = U128(3, 3);
		CHECK_OK(fi_inject_atomic(p->ep, &v, 1, p->other, RW(p, &rg, uinj), key, FI_UINT128,
					  FI_SUM));
	}
	double end = peer_now() + 10;
	while (peer_cntr(p, C_WRITE) < before + 5 && peer_now() < end)
		sched_yield();
	CHECK(peer_cntr(p, C_WRITE) == before + 5);
	return finish(p, 0);
}

/* FI_INT128 / FI_UINT128 between processes: carries across the halves and
 * wrap at the type's ends (fi_atomic, fi_fetch_atomic), MIN/MAX and
 * CSWAP_LT of the same bits as signed and as unsigned, CSWAP on all 128
 * bits, ATOMIC_READ, fi_atomicv, 16 elements in one fi_atomicmsg (17
 * refused), fi_inject_atomic. */
static int int128(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, i128_init, i128_check) : i128_initiator(&p));
}
#endif

/* ------------------------------------------------------------ long double */

#if LD_OK
static int ld_init(struct tmem *m, struct romem *ro)
{
	(void)ro;
	m->ld_sum = 0x1p63L;
	m->ld_min = 2.5L;
	m->ld_cswap = -0.0L;
	m->ldc = 1.0L + 2.0L * I;
	return 0;
}

static int ld_check(struct peer *p, struct tmem *m, struct romem *ro)
{
	(void)p;
	(void)ro;
	/* 2^63 + 1 needs 64 significant bits: a double would lose the 1. */
	CHECK(m->ld_sum == 0x1p63L + 1.0L);
	CHECK(m->ld_sum != (long double)(double)m->ld_sum);
	CHECK(m->ld_min == -0.125L);
	CHECK(m->ld_cswap == 7.0L);
	/* (1 + 2i)(3 + 4i) = -5 + 10i */
	CHECK(creall(m->ldc) == -5.0L && cimagl(m->ldc) == 10.0L);
	return 0;
}

static int ld_initiator(struct peer *p)
{
	struct regions rg;
	CHECK_OK(get_regions(p, &rg));
	int ctx;
	uint64_t key = rg.rw.key;
	long double one = 1.0L, old = 0, lo = -0.125L, hi = 3.0L, seven = 7.0L, zero = 0.0L;
	CHECK_OK(fi_atomic(p->ep, &one, 1, NULL, p->other, RW(p, &rg, ld_sum), key, FI_LONG_DOUBLE,
			   FI_SUM, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	CHECK_OK(fi_fetch_atomic(p->ep, &hi, 1, NULL, &old, NULL, p->other, RW(p, &rg, ld_min), key,
				 FI_LONG_DOUBLE, FI_MIN, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == 2.5L);
	CHECK_OK(fi_fetch_atomic(p->ep, &lo, 1, NULL, &old, NULL, p->other, RW(p, &rg, ld_min), key,
				 FI_LONG_DOUBLE, FI_MIN, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == 2.5L);
	/* 0 == -0, as in C. */
	CHECK_OK(fi_compare_atomic(p->ep, &seven, 1, NULL, &zero, NULL, &old, NULL, p->other,
				   RW(p, &rg, ld_cswap), key, FI_LONG_DOUBLE, FI_CSWAP, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_READ));
	CHECK(old == 0.0L);
	long double complex z = 3.0L + 4.0L * I;
	CHECK_OK(fi_atomic(p->ep, &z, 1, NULL, p->other, RW(p, &rg, ldc), key,
			   FI_LONG_DOUBLE_COMPLEX, FI_PROD, &ctx));
	CHECK_OK(done_ok(p, &ctx, FI_ATOMIC | FI_WRITE));
	return finish(p, 0);
}

/* FI_LONG_DOUBLE and FI_LONG_DOUBLE_COMPLEX between processes: a sum that
 * needs the 64-bit significand, MIN through the fetch form, CSWAP with
 * 0 == -0, a complex product. */
static int long_double(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? serve(&p, ld_init, ld_check) : ld_initiator(&p));
}
#endif

/* ------------------------------------------------------- two initiators */

/*
 * Three processes: the parent is the target; two forked initiators each
 * open their own endpoint (peer_open_ep), send their name up a pipe, get
 * the target's name and region down another, and add 1 to one uint64
 * `n` times. Pipes: up[k] child k -> parent, down[k] parent -> child k.
 */
static int hammer_child(int up, int down, int n)
{
	alarm(getenv("OX_TEST_SCALE") ? 240 : 30);
	struct peer p;
	memset(&p, 0, sizeof(p));
	p.to = up;
	p.from = down;
	p.is_target = 1; /* peer_close would _exit: we close by hand */
	CHECK_OK(peer_open_ep(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	CHECK_OK(peer_swap_names(&p));
	struct peer_region r;
	CHECK(peer_get(&p, &r, sizeof(r)) == 0);
	char go;
	CHECK(peer_get(&p, &go, 1) == 0 && go == 'g');
	int rc = sum_stream(&p, raddr(&p, &r, 0), r.key, n, 16, 1);
	if (!rc && peer_cntr(&p, C_WRITE) != (uint64_t)n)
		rc = 1;
	char done = rc ? 'F' : 'D';
	peer_put(&p, &done, 1);
	/* Stay open until the target has checked. */
	CHECK(peer_get(&p, &go, 1) == 0);
	if (peer_close_ep(&p))
		rc = 1;
	return rc;
}

static int two_initiators(void)
{
	arm();
	int n = scaled(2000, 50);
	int up[2][2], down[2][2];
	pid_t kid[2];
	for (int k = 0; k < 2; k++) {
		CHECK(pipe(up[k]) == 0 && pipe(down[k]) == 0);
		fflush(NULL);
		kid[k] = fork();
		CHECK(kid[k] >= 0);
		if (kid[k] == 0) {
			/* The parent's ends of the earlier children's pipes. */
			for (int j = 0; j < k; j++) {
				close(up[j][0]);
				close(down[j][1]);
			}
			close(up[k][0]);
			close(down[k][1]);
			int rc = hammer_child(up[k][1], down[k][0], n);
			fflush(NULL);
			_exit(rc ? 1 : 0);
		}
		close(up[k][1]);
		close(down[k][0]);
	}
	struct peer t;
	memset(&t, 0, sizeof(t));
	int rc = peer_open_ep(&t, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0);
	uint64_t *cell = calloc(1, 64);
	struct fid_mr *mr = NULL;
	if (!rc)
		rc = fi_mr_reg(t.domain, cell, 64, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL) != 0;
	struct peer_region r = { mr ? fi_mr_key(mr) : 0, (uint64_t)(uintptr_t)cell, 64 };
	/* Each child's name in (inserted, though the target needs no
	 * address to answer), ours and the region out. */
	fi_addr_t addrs[2];
	for (int k = 0; k < 2 && !rc; k++) {
		t.to = down[k][1];
		t.from = up[k][0];
		rc = peer_swap_names(&t);
		addrs[k] = t.other;
		if (!rc)
			peer_put(&t, &r, sizeof(r));
	}
	char go = 'g';
	for (int k = 0; k < 2 && !rc; k++)
		if (write(down[k][1], &go, 1) != 1)
			rc = 1;
	for (int k = 0; k < 2 && !rc; k++) {
		char done = 0;
		if (read(up[k][0], &done, 1) != 1 || done != 'D') {
			fprintf(stderr, "    initiator %d failed\n", k);
			rc = 1;
		}
	}
	if (!rc) {
		/* Both are done: every atomic was executed before its response. */
		if (*cell != 2 * (uint64_t)n) {
			fprintf(stderr, "    final value %llu, want %d\n", (unsigned long long)*cell,
				2 * n);
			rc = 1;
		}
		if (peer_cntr(&t, C_REMOTE_WRITE) != 2 * (uint64_t)n) {
			fprintf(stderr, "    FI_REMOTE_WRITE counter %llu, want %d\n",
				(unsigned long long)peer_cntr(&t, C_REMOTE_WRITE), 2 * n);
			rc = 1;
		}
		(void)addrs;
	}
	for (int k = 0; k < 2; k++) {
		if (write(down[k][1], &go, 1) != 1)
			rc = 1;
		close(down[k][1]);
	}
	for (int k = 0; k < 2; k++) {
		int st = 0;
		if (waitpid(kid[k], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "    initiator %d exited with status 0x%x\n", k, st);
			rc = 1;
		}
		close(up[k][0]);
	}
	if (mr && fi_close(&mr->fid))
		rc = 1;
	free(cell);
	if (peer_close_ep(&t))
		rc = 1;
	return rc;
}

static const struct test_case cases[] = {
	CASE(valid_tables),
	CASE(sum_thousand),
	CASE(fetch_sum_old_values),
	CASE(compare_swap),
	CASE(min_max),
	CASE(read_write_multi_complex),
	CASE(atomic_ordering),
	CASE(call_forms),
	CASE(refused),
	CASE(query_atomic),
#ifdef HAVE_I128
	CASE(int128),
#endif
#if LD_OK
	CASE(long_double),
#endif
	CASE(two_initiators),
};

TEST_MAIN(cases)
