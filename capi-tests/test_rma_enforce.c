/*
 * Enforcement of memory registrations on remote access (fi_mr(3)), between
 * two processes: every refused RMA completes in error at the initiator
 * (FI_EINVAL for a key that names no live region, FI_EACCES for a live
 * region that does not allow the access) with its context and flags, counts
 * one error on the initiator's counter and nothing else, and leaves every
 * byte and every counter of the target alone. Each case also makes the
 * accesses the region does allow, so a case cannot pass by everything
 * failing.
 *
 * The parent is the initiator, the child the target (peer.h). Without
 * FI_OXSHM_MR_MODE oxshm requires no mr_mode bit and keeps only the ones
 * it prefers (never FI_MR_VIRT_ADDR), so target addresses are offsets;
 * the _virt variants require FI_MR_VIRT_ADDR.
 *
 * Two cases guard against bugs the library had:
 * - endpoint_scoped: under FI_MR_ENDPOINT a region bound to one endpoint
 *   was accepted through another endpoint of the same domain (the target
 *   verified against the domain's registry only), and a single-use key
 *   presented through the wrong endpoint was used up by the refusal.
 * - mr_counter_close_race: a write verified just before the region's
 *   fi_close landed and was counted by the endpoint, but not by the
 *   counter bound to the region (fi_close released the bindings before it
 *   waited for verified accesses).
 */
#include "peer.h"
#include <rdma/fi_domain.h>
#include <poll.h>
#include <sys/mman.h>

enum { LEN = 4096 };

#define RW (FI_REMOTE_READ | FI_REMOTE_WRITE)
#define MODE (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)
#define ENV_MODE(bits) "FI_OXSHM_MR_MODE=" bits
#define VIRT ENV_MODE("FI_MR_PROV_KEY|FI_MR_VIRT_ADDR|FI_MR_ALLOCATED")

/* Buffers of each side (fork gives each process its own). */
static unsigned char tb[3 * LEN], tb2[LEN], tb3[LEN];
static unsigned char src[3 * LEN], dst[3 * LEN];

/* ------------------------------------------------------------ bytes -- */

static unsigned char pat(size_t i, unsigned seed)
{
	return (unsigned char)(i * 31 + seed * 7 + 1);
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, seed);
}

/* b[0, n) equals want[0, n). */
static int same(const unsigned char *b, const unsigned char *want, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != want[i]) {
			fprintf(stderr, "    %s: byte %zu is 0x%02x, want 0x%02x\n", what, i, b[i],
				want[i]);
			return 1;
		}
	return 0;
}

/* b[0, n) is pattern `seed`. */
static int untouched(const unsigned char *b, size_t n, unsigned seed, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(i, seed)) {
			fprintf(stderr, "    %s: byte %zu is 0x%02x, want 0x%02x (untouched)\n", what,
				i, b[i], pat(i, seed));
			return 1;
		}
	return 0;
}

/* ------------------------------------------------------- two sides -- */

typedef peer_side_fn side_fn;

static int pair_caps(int mr_mode, uint64_t caps, side_fn target, side_fn init)
{
	return peer_pair(mr_mode, caps, target, init);
}

static int pair(int mr_mode, side_fn target, side_fn init)
{
	return pair_caps(mr_mode, 0, target, init);
}

static uint64_t raddr(const struct peer *p, const struct peer_region *r, uint64_t off)
{
	return (p->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? r->base + off : off;
}

static int virt(const struct peer *p)
{
	return (p->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
}

/* Target: registers [buf, buf+len) with `access` and `flags`. */
static int reg(struct peer *p, void *buf, size_t len, uint64_t access, uint64_t key,
	       uint64_t flags, struct fid_mr **mr)
{
	CHECK_OK(fi_mr_reg(p->domain, buf, len, access, 0, key, flags, mr, NULL));
	return 0;
}

/* Target: publishes a region (its key, first byte, length). */
static void publish(struct peer *p, struct fid_mr *mr, const void *base, size_t len)
{
	struct peer_region r = { fi_mr_key(mr), (uint64_t)(uintptr_t)base, len };
	peer_put(p, &r, sizeof(r));
}

static int get_region(struct peer *p, struct peer_region *r)
{
	CHECK(peer_get(p, r, sizeof(*r)) == 0);
	return 0;
}

/* The CQ holds nothing (no entry, no error entry). */
static int cq_empty(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e;
	CHECK_RC(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
	return 0;
}

/* Target: its remote counters count exactly the accepted accesses. */
static int remote_counts(struct peer *p, uint64_t writes, uint64_t reads)
{
	uint64_t w = peer_cntr(p, C_REMOTE_WRITE), r = peer_cntr(p, C_REMOTE_READ);
	if (w != writes || r != reads) {
		fprintf(stderr, "    target counters: %llu remote writes, %llu remote reads; "
			"want %llu, %llu\n", (unsigned long long)w, (unsigned long long)r,
			(unsigned long long)writes, (unsigned long long)reads);
		return 1;
	}
	/* Refusals leave no trace at the target: no error count, no entry. */
	CHECK(peer_cntr_err(p, C_REMOTE_WRITE) == 0);
	CHECK(peer_cntr_err(p, C_REMOTE_READ) == 0);
	return cq_empty(p->cq);
}

/* ------------------------------------------------------- initiator -- */

/* What the initiator's counters must read. */
struct tally {
	uint64_t ok[PEER_CNTRS], err[PEER_CNTRS];
};

static int check_tally(struct peer *p, const struct tally *t)
{
	static const char *names[PEER_CNTRS] = { "send", "recv", "read", "write",
						 "remote read", "remote write" };
	int rc = 0;
	for (int i = 0; i < PEER_CNTRS; i++) {
		uint64_t ok = peer_cntr(p, i), err = peer_cntr_err(p, i);
		if (ok != t->ok[i] || err != t->err[i]) {
			fprintf(stderr, "    %s counter: %llu ok, %llu errors; want %llu, %llu\n",
				names[i], (unsigned long long)ok, (unsigned long long)err,
				(unsigned long long)t->ok[i], (unsigned long long)t->err[i]);
			rc = 1;
		}
	}
	return rc;
}

enum op { OP_WRITE, OP_READ, OP_WRITEDATA };

/* `want` for an access that may be refused either way. */
#define ANY_REFUSAL (-1)

/*
 * Posts one RMA and checks its completion: success when `want` is 0, else
 * an error completion with err == want, this operation's context, flags
 * FI_RMA | FI_WRITE or FI_READ, and a printable fi_cq_strerror. Then the
 * CQ must be empty and every counter must match the tally.
 */
static int rma(struct peer *p, struct tally *t, enum op op, void *buf, size_t len, void *desc,
	       uint64_t addr, uint64_t key, uint64_t data, int want)
{
	int ctx;
	ssize_t rc;
	uint64_t dir = op == OP_READ ? FI_READ : FI_WRITE;
	int c = op == OP_READ ? C_READ : C_WRITE;
	switch (op) {
	case OP_WRITE:
		rc = fi_write(p->ep, buf, len, desc, p->other, addr, key, &ctx);
		break;
	case OP_READ:
		rc = fi_read(p->ep, buf, len, desc, p->other, addr, key, &ctx);
		break;
	default:
		rc = fi_writedata(p->ep, buf, len, desc, data, p->other, addr, key, &ctx);
		break;
	}
	CHECK_RC(rc, 0);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int w = peer_wait(p, &e, &err);
	if (want == 0) {
		if (w == -FI_EAVAIL)
			fprintf(stderr, "    unexpected error completion: %s\n",
				fi_strerror(err.err));
		CHECK_RC(w, 0);
		CHECK(e.op_context == &ctx);
		CHECK(e.flags == (FI_RMA | dir));
		t->ok[c]++;
	} else {
		if (w == 0)
			fprintf(stderr, "    the access was accepted, want %s\n",
				want < 0 ? "a refusal" : fi_strerror(want));
		CHECK_RC(w, -FI_EAVAIL);
		int good = want == ANY_REFUSAL ? (err.err == FI_EINVAL || err.err == FI_EACCES)
					       : err.err == want;
		if (!good)
			fprintf(stderr, "    err is %d (%s), want %d (%s)\n", err.err,
				fi_strerror(err.err), want, want < 0 ? "a refusal" : fi_strerror(want));
		CHECK(good);
		CHECK(err.op_context == &ctx);
		CHECK(err.flags == (FI_RMA | dir));
		CHECK(fi_cq_strerror(p->cq, err.prov_errno, err.err_data, NULL, 0) != NULL);
		t->err[c]++;
	}
	CHECK_OK(cq_empty(p->cq));
	return check_tally(p, t);
}

/* The call site's line is reported along with the helper's. */
#define WRITE(p, t, buf, len, addr, key, want) \
	CHECK_OK(rma(p, t, OP_WRITE, buf, len, NULL, addr, key, 0, want))
#define READ(p, t, buf, len, addr, key, want) \
	CHECK_OK(rma(p, t, OP_READ, buf, len, NULL, addr, key, 0, want))
#define WRITEDATA(p, t, buf, len, addr, key, data, want) \
	CHECK_OK(rma(p, t, OP_WRITEDATA, buf, len, NULL, addr, key, data, want))

/* Waits (up to 10 s) until counter i reads ok/err, driving progress. */
static int wait_cntr(struct peer *p, int i, uint64_t ok, uint64_t err)
{
	double end = peer_now() + 10;
	while (peer_now() < end) {
		uint64_t o = peer_cntr(p, i), e = peer_cntr_err(p, i);
		if (o == ok && e == err)
			return 0;
		if (o > ok || e > err)
			break;
	}
	fprintf(stderr, "    counter %d: %llu ok, %llu errors; want %llu, %llu\n", i,
		(unsigned long long)peer_cntr(p, i), (unsigned long long)peer_cntr_err(p, i),
		(unsigned long long)ok, (unsigned long long)err);
	return 1;
}

/* ============================================== 1. wrong key ========= */

static int wrong_key_target(struct peer *p)
{
	struct fid_mr *mr;
	unsigned char want[16];
	fill(tb, LEN, 1);
	CHECK_OK(reg(p, tb, LEN, RW, 0x5a5a, 0, &mr));
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	fill(want, 16, 2);
	CHECK_OK(untouched(tb, 100, 1, "before the write"));
	CHECK_OK(same(tb + 100, want, 16, "the accepted write"));
	for (size_t i = 116; i < LEN; i++)
		CHECK(tb[i] == pat(i, 1));
	CHECK_OK(remote_counts(p, 1, 1));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int wrong_key_init(struct peer *p)
{
	struct peer_region r;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	fill(src, LEN, 2);
	const uint64_t bad[] = { r.key ^ 0x100, ~r.key, r.key + 1, r.key ^ (1ULL << 63) };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		WRITE(p, &t, src, 16, raddr(p, &r, 100), bad[i], FI_EINVAL);
		/* The cross-memory path is refused the same way. */
		WRITE(p, &t, src, LEN, raddr(p, &r, 0), bad[i], FI_EINVAL);
		memset(dst, 0, LEN);
		READ(p, &t, dst, 16, raddr(p, &r, 0), bad[i], FI_EINVAL);
		READ(p, &t, dst, LEN, raddr(p, &r, 0), bad[i], FI_EINVAL);
		for (size_t k = 0; k < LEN; k++)
			CHECK(dst[k] == 0);
	}
	/* The right key works. */
	WRITE(p, &t, src, 16, raddr(p, &r, 100), r.key, 0);
	READ(p, &t, dst, 16, raddr(p, &r, 0), r.key, 0);
	CHECK_OK(untouched(dst, 16, 1, "read back"));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int wrong_key_prov(void)
{
	return pair(MODE, wrong_key_target, wrong_key_init);
}

/* Requested keys (mr_mode 0): keys go through the key index. */
static int wrong_key_requested(void)
{
	return pair(0, wrong_key_target, wrong_key_init);
}

/* ============================================== 2. stale key ========= */

static int stale_key_target(struct peer *p)
{
	struct fid_mr *mr;
	fill(tb, LEN, 3);
	CHECK_OK(reg(p, tb, LEN, RW, 10, 0, &mr));
	uint64_t old = fi_mr_key(mr);
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(reg(p, tb, LEN, RW, 11, 0, &mr));
	CHECK(fi_mr_key(mr) != old);
	struct peer_region r = { old, (uint64_t)(uintptr_t)tb, LEN };
	peer_put(p, &r, sizeof(r));
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	unsigned char want[16];
	fill(want, 16, 4);
	CHECK_OK(same(tb, want, 16, "the accepted write"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb[i] == pat(i, 3));
	CHECK_OK(remote_counts(p, 1, 1));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int stale_key_init(struct peer *p)
{
	struct peer_region old, cur;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &old));
	CHECK_OK(get_region(p, &cur));
	fill(src, LEN, 4);
	WRITE(p, &t, src, 16, raddr(p, &old, 0), old.key, FI_EINVAL);
	WRITE(p, &t, src, LEN, raddr(p, &old, 0), old.key, FI_EINVAL);
	READ(p, &t, dst, 16, raddr(p, &old, 0), old.key, FI_EINVAL);
	/* The new key works; the old one still does not. */
	WRITE(p, &t, src, 16, raddr(p, &cur, 0), cur.key, 0);
	WRITE(p, &t, src, 16, raddr(p, &old, 0), old.key, FI_EINVAL);
	READ(p, &t, dst, 32, raddr(p, &cur, 0), cur.key, 0);
	CHECK_OK(same(dst, src, 16, "read back"));
	for (size_t i = 16; i < 32; i++)
		CHECK(dst[i] == pat(i, 3));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int stale_key_prov(void)
{
	return pair(MODE, stale_key_target, stale_key_init);
}

static int stale_key_requested(void)
{
	return pair(0, stale_key_target, stale_key_init);
}

/* ========================================= 3. one byte past the end == */

static int past_end_target(struct peer *p)
{
	struct fid_mr *mr;
	fill(tb, LEN, 5);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &mr));
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	CHECK_OK(untouched(tb, LEN - 1, 5, "region"));
	CHECK(tb[LEN - 1] == 0xc3);
	CHECK_OK(remote_counts(p, 1, 2));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int past_end_init(struct peer *p)
{
	struct peer_region r;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	fill(src, 2 * LEN, 6);
	WRITE(p, &t, src, LEN + 1, raddr(p, &r, 0), r.key, FI_EACCES);
	WRITE(p, &t, src, 1, raddr(p, &r, LEN), r.key, FI_EACCES);
	WRITE(p, &t, src, 2, raddr(p, &r, LEN - 1), r.key, FI_EACCES);
	WRITE(p, &t, src, 16, raddr(p, &r, LEN + 4096), r.key, FI_EACCES);
	READ(p, &t, dst, LEN + 1, raddr(p, &r, 0), r.key, FI_EACCES);
	READ(p, &t, dst, 1, raddr(p, &r, LEN), r.key, FI_EACCES);
	/* address + length wraps around: out of range, not a small range. */
	WRITE(p, &t, src, 2, UINT64_MAX, r.key, FI_EACCES);
	WRITE(p, &t, src, 16, (uint64_t)0 - 8, r.key, FI_EACCES);
	if (virt(p)) {
		/* One byte before the region. */
		WRITE(p, &t, src, 1, r.base - 1, r.key, FI_EACCES);
		WRITE(p, &t, src, 16, r.base - 8, r.key, FI_EACCES);
		/* Offsets are not addresses under FI_MR_VIRT_ADDR. */
		WRITE(p, &t, src, 1, 0, r.key, FI_EACCES);
	}
	/* The exact last byte works; a read of the whole region too. */
	unsigned char one = 0xc3;
	WRITE(p, &t, &one, 1, raddr(p, &r, LEN - 1), r.key, 0);
	READ(p, &t, dst, 1, raddr(p, &r, LEN - 1), r.key, 0);
	CHECK(dst[0] == 0xc3);
	READ(p, &t, dst, LEN, raddr(p, &r, 0), r.key, 0);
	CHECK_OK(untouched(dst, LEN - 1, 5, "read back"));
	CHECK(dst[LEN - 1] == 0xc3);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int past_end(void)
{
	return pair(MODE, past_end_target, past_end_init);
}

static int past_end_virt_target(struct peer *p)
{
	CHECK(virt(p));
	return past_end_target(p);
}

static int past_end_virt_init(struct peer *p)
{
	CHECK(virt(p));
	return past_end_init(p);
}

static int past_end_virt(void)
{
	return pair(MODE, past_end_virt_target, past_end_virt_init);
}

/* ====================================== 4. regions of several iovs === */

/* tb holds two iovs of one region, [0, LEN) and [2 LEN, 3 LEN), with a gap
 * between them; tb2 two contiguous iovs, [0, 100) and [100, 200). */
static unsigned char *regv_at(uint64_t off)
{
	return off < LEN ? tb + off : tb + LEN + off;
}

static void regv_apply(unsigned char *img, uint64_t off, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		img[regv_at(off + i) - tb] = b[i];
}

static int regv_check_mode(struct peer *p, int want)
{
	if (p->info->domain_attr->mr_mode != want) {
		fprintf(stderr, "    negotiated mr_mode 0x%x, want 0x%x\n",
			p->info->domain_attr->mr_mode, want);
		return 1;
	}
	return 0;
}

static int regv_target(struct peer *p)
{
	struct fid_mr *mr, *mr2;
	static unsigned char img[3 * LEN], a[4000], b[20], c[20];
	struct iovec iov[2] = { { tb, LEN }, { tb + 2 * LEN, LEN } };
	struct iovec iov2[2] = { { tb2, 100 }, { tb2 + 100, 100 } };
	fill(tb, 3 * LEN, 7);
	fill(tb2, LEN, 8);
	CHECK_OK(fi_mr_regv(p->domain, iov, 2, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_mr_regv(p->domain, iov2, 2, RW, 0, 2, 0, &mr2, NULL));
	publish(p, mr, tb, 2 * LEN);
	publish(p, mr, tb + 2 * LEN, LEN); /* the second iov's address */
	publish(p, mr2, tb2, 200);
	CHECK_OK(peer_sync(p));
	fill(img, 3 * LEN, 7);
	fill(a, sizeof(a), 9);
	fill(b, sizeof(b), 10);
	fill(c, sizeof(c), 11);
	if (!virt(p)) {
		/* Spanning writes land in both iovs, in order. */
		regv_apply(img, LEN - 2000, a, 4000);
		regv_apply(img, LEN - 10, b, 20);
		CHECK_OK(remote_counts(p, 3, 1));
	} else {
		/* The last bytes of iov 0 and the first of iov 1, separately. */
		memcpy(img + LEN - 10, b, 10);
		memcpy(img + 2 * LEN, b + 10, 10);
		CHECK_OK(remote_counts(p, 3, 1));
	}
	CHECK_OK(same(tb, img, 3 * LEN, "regv region"));
	/* The contiguous region took one write across its iovs. */
	for (size_t i = 0; i < 200; i++)
		CHECK(tb2[i] == (i >= 90 && i < 110 ? c[i - 90] : pat(i, 8)));
	CHECK_OK(fi_close(&mr2->fid));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int regv_init(struct peer *p)
{
	struct peer_region r, r1, r2;
	struct tally t = { { 0 }, { 0 } };
	static unsigned char a[4000], b[20], c[20], img[3 * LEN];
	CHECK_OK(get_region(p, &r));
	CHECK_OK(get_region(p, &r1));
	CHECK_OK(get_region(p, &r2));
	fill(a, sizeof(a), 9);
	fill(b, sizeof(b), 10);
	fill(c, sizeof(c), 11);
	fill(src, sizeof(src), 12);
	if (!virt(p)) {
		/* Offsets run over the concatenation of the iovs: 2 LEN bytes. */
		WRITE(p, &t, a, sizeof(a), LEN - 2000, r.key, 0);
		WRITE(p, &t, b, sizeof(b), LEN - 10, r.key, 0);
		WRITE(p, &t, src, 1, 2 * LEN, r.key, FI_EACCES);
		WRITE(p, &t, src, 2 * LEN + 1, 0, r.key, FI_EACCES);
		WRITE(p, &t, src, 20, 2 * LEN - 10, r.key, FI_EACCES);
		READ(p, &t, dst, 2, 2 * LEN - 1, r.key, FI_EACCES);
		READ(p, &t, dst, 2 * LEN + 1, 0, r.key, FI_EACCES);
		/* Reading it all gives both iovs back to back. */
		READ(p, &t, dst, 2 * LEN, 0, r.key, 0);
		fill(img, 3 * LEN, 7);
		for (size_t i = 0; i < 4000; i++)
			img[i < 2000 ? LEN - 2000 + i : 2 * LEN + i - 2000] = a[i];
		for (size_t i = 0; i < 20; i++)
			img[i < 10 ? LEN - 10 + i : 2 * LEN + i - 10] = b[i];
		CHECK_OK(same(dst, img, LEN, "read of iov 0"));
		CHECK_OK(same(dst + LEN, img + 2 * LEN, LEN, "read of iov 1"));
	} else {
		/* Addresses: the gap between the iovs is not registered. */
		WRITE(p, &t, b, sizeof(b), r.base + LEN - 10, r.key, FI_EACCES);
		WRITE(p, &t, a, sizeof(a), r.base + LEN - 2000, r.key, FI_EACCES);
		WRITE(p, &t, src, 1, r.base + LEN, r.key, FI_EACCES);
		WRITE(p, &t, src, 20, r1.base - 10, r.key, FI_EACCES);
		WRITE(p, &t, src, 3 * LEN, r.base, r.key, FI_EACCES);
		WRITE(p, &t, src, 1, r1.base + LEN, r.key, FI_EACCES);
		READ(p, &t, dst, 20, r.base + LEN - 10, r.key, FI_EACCES);
		READ(p, &t, dst, LEN + 1, r1.base, r.key, FI_EACCES);
		/* Either iov alone is fine. */
		WRITE(p, &t, b, 10, r.base + LEN - 10, r.key, 0);
		WRITE(p, &t, b + 10, 10, r1.base, r.key, 0);
		READ(p, &t, dst, LEN, r1.base, r.key, 0);
		CHECK_OK(same(dst, b + 10, 10, "read of iov 1"));
		for (size_t i = 10; i < LEN; i++)
			CHECK(dst[i] == pat(2 * LEN + i, 7));
	}
	/* Contiguous iovs: a range across them is inside, in both modes. */
	WRITE(p, &t, c, sizeof(c), raddr(p, &r2, 90), r2.key, 0);
	WRITE(p, &t, src, 201, raddr(p, &r2, 0), r2.key, FI_EACCES);
	CHECK_OK(peer_sync(p));
	return 0;
}

#define REGV_SIDES(name, mode)                           \
	static int name##_target(struct peer *p)         \
	{                                                \
		CHECK_OK(regv_check_mode(p, mode));      \
		return regv_target(p);                   \
	}                                                \
	static int name##_init(struct peer *p)           \
	{                                                \
		CHECK_OK(regv_check_mode(p, mode));      \
		return regv_init(p);                     \
	}

REGV_SIDES(regv_offsets, FI_MR_PROV_KEY | FI_MR_ALLOCATED)
REGV_SIDES(regv_unalloc, FI_MR_PROV_KEY)
REGV_SIDES(regv_virt, MODE)

static int regv_offsets(void)
{
	return pair(FI_MR_PROV_KEY | FI_MR_ALLOCATED, regv_offsets_target, regv_offsets_init);
}

/* Without FI_MR_ALLOCATED (not offered): the target's copies into its own
 * memory go through the checked path. */
static int regv_offsets_unallocated(void)
{
	return pair(FI_MR_PROV_KEY, regv_unalloc_target, regv_unalloc_init);
}

static int regv_virt(void)
{
	return pair(MODE, regv_virt_target, regv_virt_init);
}

/* ======================================== 5. missing remote right ==== */

static int rights_target(struct peer *p)
{
	struct fid_mr *ro, *wo, *none;
	fill(tb, LEN, 13);
	fill(tb2, LEN, 14);
	fill(tb3, LEN, 15);
	CHECK_OK(reg(p, tb, LEN, FI_REMOTE_READ, 1, 0, &ro));
	CHECK_OK(reg(p, tb2, LEN, FI_REMOTE_WRITE, 2, 0, &wo));
	/* Local rights only: no remote access at all. */
	CHECK_OK(reg(p, tb3, LEN, FI_READ | FI_WRITE, 3, 0, &none));
	publish(p, ro, tb, LEN);
	publish(p, wo, tb2, LEN);
	publish(p, none, tb3, LEN);
	CHECK_OK(peer_sync(p));
	unsigned char want[16];
	fill(want, 16, 16);
	CHECK_OK(untouched(tb, LEN, 13, "read-only region"));
	CHECK_OK(same(tb2, want, 16, "write-only region"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb2[i] == pat(i, 14));
	CHECK_OK(untouched(tb3, LEN, 15, "region without remote rights"));
	CHECK_OK(remote_counts(p, 1, 1));
	CHECK_OK(fi_close(&ro->fid));
	CHECK_OK(fi_close(&wo->fid));
	CHECK_OK(fi_close(&none->fid));
	return 0;
}

static int rights_init(struct peer *p)
{
	struct peer_region ro, wo, none;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &ro));
	CHECK_OK(get_region(p, &wo));
	CHECK_OK(get_region(p, &none));
	fill(src, LEN, 16);
	WRITE(p, &t, src, 16, raddr(p, &ro, 0), ro.key, FI_EACCES);
	WRITE(p, &t, src, 4000, raddr(p, &ro, 0), ro.key, FI_EACCES);
	WRITEDATA(p, &t, src, 16, raddr(p, &ro, 0), ro.key, 7, FI_EACCES);
	READ(p, &t, dst, 16, raddr(p, &ro, 0), ro.key, 0);
	CHECK_OK(untouched(dst, 16, 13, "read of the read-only region"));
	memset(dst, 0, LEN);
	READ(p, &t, dst, 16, raddr(p, &wo, 0), wo.key, FI_EACCES);
	READ(p, &t, dst, 4000, raddr(p, &wo, 0), wo.key, FI_EACCES);
	for (size_t i = 0; i < 4000; i++)
		CHECK(dst[i] == 0);
	WRITE(p, &t, src, 16, raddr(p, &wo, 0), wo.key, 0);
	WRITE(p, &t, src, 16, raddr(p, &none, 0), none.key, FI_EACCES);
	READ(p, &t, dst, 16, raddr(p, &none, 0), none.key, FI_EACCES);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int missing_right(void)
{
	return pair(MODE, rights_target, rights_init);
}

/* ============================================ 6. disabled region ===== */

/*
 * FI_MR_RMA_EVENT: a region registered with FI_RMA_EVENT starts disabled
 * and takes no access until fi_mr_enable. FI_MR_ENDPOINT: every region
 * starts disabled, and enables once bound to an endpoint.
 */
static int disabled_mode(struct peer *p, int bit)
{
	if (!(p->info->domain_attr->mr_mode & bit)) {
		fprintf(stderr, "    negotiated mr_mode 0x%x lacks 0x%x\n",
			p->info->domain_attr->mr_mode, bit);
		return 1;
	}
	return 0;
}

static int disabled_target(struct peer *p)
{
	struct fid_mr *mr, *ctl;
	int ep_mode = p->info->domain_attr->mr_mode & FI_MR_ENDPOINT;
	CHECK_OK(disabled_mode(p, ep_mode ? FI_MR_ENDPOINT : FI_MR_RMA_EVENT));
	fill(tb, LEN, 17);
	fill(tb2, LEN, 18);
	CHECK_OK(reg(p, tb, LEN, RW, 1, FI_RMA_EVENT, &mr));
	/* The control region is usable at once. */
	CHECK_OK(reg(p, tb2, LEN, RW, 2, 0, &ctl));
	if (ep_mode) {
		CHECK_OK(fi_mr_bind(ctl, &p->ep->fid, 0));
		CHECK_OK(fi_mr_enable(ctl));
	}
	publish(p, mr, tb, LEN);
	publish(p, ctl, tb2, LEN);
	CHECK_OK(peer_sync(p)); /* refused accesses done */
	CHECK_OK(untouched(tb, LEN, 17, "disabled region"));
	CHECK_OK(remote_counts(p, 1, 0));
	if (ep_mode) {
		/* Not bound to an endpoint yet: it cannot be enabled. */
		CHECK(fi_mr_enable(mr) < 0);
		CHECK_OK(fi_mr_bind(mr, &p->ep->fid, 0));
	}
	CHECK_OK(fi_mr_enable(mr));
	CHECK_OK(peer_sync(p)); /* enabled */
	CHECK_OK(peer_sync(p)); /* accepted accesses done */
	unsigned char want[16];
	fill(want, 16, 19);
	CHECK_OK(same(tb, want, 16, "enabled region"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb[i] == pat(i, 17));
	CHECK_OK(same(tb2 + 100, want, 16, "control region"));
	CHECK_OK(remote_counts(p, 2, 1));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&ctl->fid));
	return 0;
}

static int disabled_init(struct peer *p)
{
	struct peer_region r, ctl;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	CHECK_OK(get_region(p, &ctl));
	fill(src, LEN, 19);
	WRITE(p, &t, src, 16, raddr(p, &r, 0), r.key, FI_EACCES);
	WRITE(p, &t, src, 4000, raddr(p, &r, 0), r.key, FI_EACCES);
	READ(p, &t, dst, 16, raddr(p, &r, 0), r.key, FI_EACCES);
	WRITE(p, &t, src, 16, raddr(p, &ctl, 100), ctl.key, 0);
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_sync(p));
	WRITE(p, &t, src, 16, raddr(p, &r, 0), r.key, 0);
	READ(p, &t, dst, 32, raddr(p, &r, 0), r.key, 0);
	CHECK_OK(same(dst, src, 16, "read back"));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int disabled_until_enabled(void)
{
	return pair(MODE | FI_MR_RMA_EVENT, disabled_target, disabled_init);
}

static int disabled_until_bound_to_ep(void)
{
	return pair(MODE | FI_MR_ENDPOINT, disabled_target, disabled_init);
}

/* ============================================== 7. sub-regions ======= */

#if TEST_HDR_AT_LEAST(2, 0)

/* A write-only sub-region over tb[1024, 1536) of a read-write base; once
 * the sub-region closes, its key names nothing and the base still works. */
static int sub_target(struct peer *p)
{
	struct fid_mr *base, *sub;
	struct iovec iov = { tb + 1024, 512 };
	struct fi_mr_attr a;
	fill(tb, LEN, 20);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &base));
	memset(&a, 0, sizeof(a));
	a.mr_iov = &iov;
	a.iov_count = 1;
	a.access = FI_REMOTE_WRITE;
	a.requested_key = 2;
	a.base_mr = base;
	CHECK_OK(fi_mr_regattr(p->domain, &a, 0, &sub));
	publish(p, base, tb, LEN);
	publish(p, sub, tb + 1024, 512);
	CHECK_OK(peer_sync(p)); /* accesses through the sub-region done */
	CHECK_OK(remote_counts(p, 2, 1));
	CHECK_OK(fi_close(&sub->fid));
	CHECK_OK(peer_sync(p)); /* closed */
	CHECK_OK(peer_sync(p)); /* accesses after the close done */
	unsigned char want[LEN];
	fill(want, LEN, 21);
	for (size_t i = 0; i < LEN; i++) {
		unsigned char w = pat(i, 20);
		if (i >= 1024 && i < 1040)
			w = want[i - 1024];
		if (i == 1535)
			w = 0x5c;
		if (i >= 2000 && i < 2016)
			w = want[i];
		if (tb[i] != w) {
			fprintf(stderr, "    byte %zu is 0x%02x, want 0x%02x\n", i, tb[i], w);
			return 1;
		}
	}
	CHECK_OK(remote_counts(p, 3, 1));
	CHECK_OK(fi_close(&base->fid));
	return 0;
}

static int sub_init(struct peer *p)
{
	struct peer_region base, sub;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &base));
	CHECK_OK(get_region(p, &sub));
	fill(src, LEN, 21);
	/* Outside the sub-range, though inside the base. */
	WRITE(p, &t, src, 1, raddr(p, &sub, 512), sub.key, FI_EACCES);
	WRITE(p, &t, src, 513, raddr(p, &sub, 0), sub.key, FI_EACCES);
	WRITE(p, &t, src, 2, raddr(p, &sub, 511), sub.key, FI_EACCES);
	WRITE(p, &t, src, 1, raddr(p, &sub, 0) - 1, sub.key, FI_EACCES);
	WRITE(p, &t, src, 4000, raddr(p, &sub, 0), sub.key, FI_EACCES);
	if (virt(p))
		WRITE(p, &t, src, 16, base.base, sub.key, FI_EACCES);
	/* A right the sub-region lacks (its base has it). */
	READ(p, &t, dst, 16, raddr(p, &sub, 0), sub.key, FI_EACCES);
	READ(p, &t, dst, 512, raddr(p, &sub, 0), sub.key, FI_EACCES);
	/* Inside, with its right: first and last bytes. */
	WRITE(p, &t, src, 16, raddr(p, &sub, 0), sub.key, 0);
	unsigned char x = 0x5c;
	WRITE(p, &t, &x, 1, raddr(p, &sub, 511), sub.key, 0);
	/* The base still reads all of it. */
	READ(p, &t, dst, LEN, raddr(p, &base, 0), base.key, 0);
	CHECK_OK(same(dst + 1024, src, 16, "read back through the base"));
	CHECK(dst[1535] == 0x5c);
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_sync(p));
	WRITE(p, &t, src, 16, raddr(p, &sub, 0), sub.key, FI_EINVAL);
	WRITE(p, &t, src + 2000, 16, raddr(p, &base, 2000), base.key, 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int sub_region(void)
{
	return pair(MODE, sub_target, sub_init);
}

static int sub_virt_target(struct peer *p)
{
	CHECK(virt(p));
	return sub_target(p);
}

static int sub_virt_init(struct peer *p)
{
	CHECK(virt(p));
	return sub_init(p);
}

static int sub_region_virt(void)
{
	return pair(MODE, sub_virt_target, sub_virt_init);
}

#endif

/* ============================================= 8. single-use keys ==== */

#ifdef FI_MR_SINGLE_USE

static int single_target(struct peer *p)
{
	struct fid_mr *mr, *wo;
	fill(tb, LEN, 22);
	fill(tb2, LEN, 23);
	CHECK_OK(reg(p, tb, LEN, RW, 1, FI_MR_SINGLE_USE, &mr));
	CHECK_OK(reg(p, tb2, LEN, FI_REMOTE_WRITE, 2, FI_MR_SINGLE_USE, &wo));
	publish(p, mr, tb, LEN);
	publish(p, wo, tb2, LEN);
	CHECK_OK(peer_sync(p));
	unsigned char want[16];
	fill(want, 16, 24);
	CHECK_OK(same(tb, want, 16, "single-use region"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb[i] == pat(i, 22));
	CHECK_OK(same(tb2 + 200, want, 16, "write-only single-use region"));
	for (size_t i = 0; i < LEN; i++)
		CHECK((i >= 200 && i < 216) || tb2[i] == pat(i, 23));
	CHECK_OK(remote_counts(p, 2, 0));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&wo->fid));
	return 0;
}

static int single_init(struct peer *p)
{
	struct peer_region r, wo;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	CHECK_OK(get_region(p, &wo));
	fill(src, LEN, 24);
	/* A refused access does not use the key up. */
	WRITE(p, &t, src, 1, raddr(p, &r, LEN), r.key, FI_EACCES);
	WRITE(p, &t, src, 16, raddr(p, &r, 0), r.key, 0);
	/* Used: nothing more, of any kind. */
	WRITE(p, &t, src, 16, raddr(p, &r, 100), r.key, FI_EACCES);
	WRITE(p, &t, src, 4000, raddr(p, &r, 0), r.key, FI_EACCES);
	READ(p, &t, dst, 16, raddr(p, &r, 0), r.key, FI_EACCES);
	/* A read it has no right to does not use it up either. */
	READ(p, &t, dst, 16, raddr(p, &wo, 0), wo.key, FI_EACCES);
	WRITE(p, &t, src, 16, raddr(p, &wo, 200), wo.key, 0);
	WRITE(p, &t, src, 16, raddr(p, &wo, 200), wo.key, FI_EACCES);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int single_use(void)
{
	return pair(MODE, single_target, single_init);
}

#endif

/* ================================================= 9. auth keys ====== */

/*
 * A second endpoint of the initiator, on a domain of its own (with its own
 * auth key), reaching the same target. It is a struct peer without pipes
 * or child; close it with alt_close.
 */
static int alt_open(struct peer *p, struct peer *alt, fi_addr_t dest, const char *dom_key,
		    const char *ep_key)
{
	memset(alt, 0, sizeof(*alt));
	alt->info = fi_dupinfo(p->info);
	CHECK(alt->info);
	if (dom_key) {
		alt->info->domain_attr->auth_key = (uint8_t *)test_strdup(dom_key);
		alt->info->domain_attr->auth_key_size = strlen(dom_key);
	}
	if (ep_key) {
		alt->info->ep_attr->auth_key = (uint8_t *)test_strdup(ep_key);
		alt->info->ep_attr->auth_key_size = strlen(ep_key);
	}
	CHECK_OK(fi_domain(p->fabric, alt->info, &alt->domain, NULL));
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	CHECK_OK(fi_av_open(alt->domain, &av_attr, &alt->av, NULL));
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_UNSPEC };
	CHECK_OK(fi_cq_open(alt->domain, &cq_attr, &alt->cq, NULL));
	CHECK_OK(fi_endpoint(alt->domain, alt->info, &alt->ep, NULL));
	CHECK_OK(fi_ep_bind(alt->ep, &alt->av->fid, 0));
	CHECK_OK(fi_ep_bind(alt->ep, &alt->cq->fid, FI_TRANSMIT | FI_RECV));
	for (int i = C_SEND; i <= C_WRITE; i++) {
		struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP,
					   .wait_obj = FI_WAIT_UNSPEC };
		CHECK_OK(fi_cntr_open(alt->domain, &ca, &alt->cntr[i], NULL));
		CHECK_OK(fi_ep_bind(alt->ep, &alt->cntr[i]->fid, peer_events[i]));
	}
	CHECK_OK(fi_enable(alt->ep));
	char name[64] = { 0 };
	size_t len = sizeof(name);
	CHECK_OK(fi_av_lookup(p->av, dest, name, &len));
	const char *names[1] = { name };
	CHECK_RC(fi_av_insert(alt->av, names, 1, &alt->other, 0, NULL), 1);
	return 0;
}

static int alt_close(struct peer *alt)
{
	if (alt->ep)
		CHECK_OK(fi_close(&alt->ep->fid));
	for (int i = 0; i < PEER_CNTRS; i++)
		if (alt->cntr[i])
			CHECK_OK(fi_close(&alt->cntr[i]->fid));
	if (alt->cq)
		CHECK_OK(fi_close(&alt->cq->fid));
	if (alt->av)
		CHECK_OK(fi_close(&alt->av->fid));
	if (alt->domain)
		CHECK_OK(fi_close(&alt->domain->fid));
	fi_freeinfo(alt->info);
	memset(alt, 0, sizeof(*alt));
	return 0;
}

/* One write (and, when accepted, one read) through an endpoint with the
 * given domain and endpoint auth keys. */
static int auth_try(struct peer *p, fi_addr_t dest, const struct peer_region *r,
		    const char *dom_key, const char *ep_key, uint64_t off, int want)
{
	struct peer alt;
	struct tally t = { { 0 }, { 0 } };
	int rc = alt_open(p, &alt, dest, dom_key, ep_key);
	if (!rc)
		rc = rma(&alt, &t, OP_WRITE, src + off, 16, NULL, raddr(p, r, off), r->key, 0, want);
	if (!rc)
		rc = rma(&alt, &t, OP_READ, dst, 16, NULL, raddr(p, r, off), r->key, 0, want);
	if (!rc && !want)
		rc = same(dst, src + off, 16, "read back");
	if (rc)
		fprintf(stderr, "    (domain key %s, endpoint key %s)\n", dom_key ? dom_key : "none",
			ep_key ? ep_key : "none");
	return alt_close(&alt) || rc;
}

static int auth_target(struct peer *p)
{
	struct fid_mr *mr;
	struct iovec iov = { tb, LEN };
	struct fi_mr_attr a;
	uint8_t key[] = { 'k', 'e', 'y', '-', 'A' };
	fill(tb, LEN, 25);
	memset(&a, 0, sizeof(a));
	a.mr_iov = &iov;
	a.iov_count = 1;
	a.access = RW;
	a.requested_key = 1;
	a.auth_key = key;
	a.auth_key_size = sizeof(key);
	CHECK_OK(fi_mr_regattr(p->domain, &a, 0, &mr));
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	unsigned char want[LEN];
	fill(want, LEN, 26);
	for (size_t i = 0; i < LEN; i++)
		CHECK(tb[i] == ((i < 16 || (i >= 100 && i < 116)) ? want[i] : pat(i, 25)));
	CHECK_OK(remote_counts(p, 2, 2));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int auth_init(struct peer *p)
{
	struct peer_region r;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	fill(src, LEN, 26);
	/* No auth key at all. */
	WRITE(p, &t, src, 16, raddr(p, &r, 0), r.key, FI_EACCES);
	WRITE(p, &t, src, 4000, raddr(p, &r, 0), r.key, FI_EACCES);
	READ(p, &t, dst, 16, raddr(p, &r, 0), r.key, FI_EACCES);
	/* Other keys: different, a prefix, longer. */
	CHECK_OK(auth_try(p, p->other, &r, "key-B", NULL, 0, FI_EACCES));
	CHECK_OK(auth_try(p, p->other, &r, "key-", NULL, 0, FI_EACCES));
	CHECK_OK(auth_try(p, p->other, &r, "key-AB", NULL, 0, FI_EACCES));
	/* The endpoint's key counts, not its domain's. */
	CHECK_OK(auth_try(p, p->other, &r, "key-A", "key-B", 0, FI_EACCES));
	/* Matching keys. */
	CHECK_OK(auth_try(p, p->other, &r, "key-A", NULL, 0, 0));
	CHECK_OK(auth_try(p, p->other, &r, NULL, "key-A", 100, 0));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int auth_key_mismatch(void)
{
	return pair(MODE, auth_target, auth_init);
}

/* ========================================= 10. FI_MR_LOCAL descs ===== */

#define LOCAL_MODE "FI_MR_LOCAL|FI_MR_PROV_KEY|FI_MR_VIRT_ADDR|FI_MR_ALLOCATED"
#define LOCAL_BITS (FI_MR_LOCAL | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)

static int local_target(struct peer *p)
{
	struct fid_mr *mr;
	CHECK(p->info->domain_attr->mr_mode == LOCAL_BITS);
	fill(tb, LEN, 27);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &mr));
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	unsigned char want[LEN];
	fill(want, LEN, 28);
	for (size_t i = 0; i < LEN; i++) {
		unsigned char w = pat(i, 27);
		if (i < 16 || (i >= 200 && i < 216))
			w = want[i];
		if (i >= 100 && i < 108)
			w = want[2000 + i - 100];
		if (tb[i] != w) {
			fprintf(stderr, "    byte %zu is 0x%02x, want 0x%02x\n", i, tb[i], w);
			return 1;
		}
	}
	CHECK_OK(remote_counts(p, 3, 1));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int local_init(struct peer *p)
{
	struct peer_region r;
	struct tally t = { { 0 }, { 0 } };
	struct fid_mr *rw, *other, *ro, *part, *remote_only;
	int ctx;
	CHECK(p->info->domain_attr->mr_mode == LOCAL_BITS);
	CHECK_OK(get_region(p, &r));
	fill(src, LEN, 28);
	CHECK_OK(fi_mr_reg(p->domain, src, LEN, FI_READ | FI_WRITE, 0, 0, 0, &rw, NULL));
	CHECK_OK(fi_mr_reg(p->domain, dst, LEN, FI_WRITE, 0, 0, 0, &other, NULL));
	CHECK_OK(fi_mr_reg(p->domain, src, LEN, FI_READ, 0, 0, 0, &ro, NULL));
	CHECK_OK(fi_mr_reg(p->domain, src, 8, FI_WRITE, 0, 0, 0, &part, NULL));
	CHECK_OK(fi_mr_reg(p->domain, src, LEN, FI_REMOTE_READ, 0, 0, 0, &remote_only, NULL));
	uint64_t a = raddr(p, &r, 0);
	/* Refused by the call: nothing posted. */
	CHECK_RC(fi_write(p->ep, src, 16, NULL, p->other, a, r.key, &ctx), -FI_EINVAL);
	CHECK_RC(fi_write(p->ep, src, 16, fi_mr_desc(other), p->other, a, r.key, &ctx),
		 -FI_EINVAL);
	CHECK_RC(fi_write(p->ep, src, 16, fi_mr_desc(part), p->other, a, r.key, &ctx),
		 -FI_EINVAL);
	CHECK_RC(fi_write(p->ep, src, 16, fi_mr_desc(ro), p->other, a, r.key, &ctx), -FI_EACCES);
	CHECK_RC(fi_writedata(p->ep, src, 16, NULL, 1, p->other, a, r.key, &ctx), -FI_EINVAL);
	CHECK_RC(fi_read(p->ep, dst, 16, NULL, p->other, a, r.key, &ctx), -FI_EINVAL);
	CHECK_RC(fi_read(p->ep, dst, 16, fi_mr_desc(other), p->other, a, r.key, &ctx),
		 -FI_EACCES);
	CHECK_RC(fi_read(p->ep, dst, 16, fi_mr_desc(rw), p->other, a, r.key, &ctx), -FI_EINVAL);
	/* A descriptor of another domain, though it covers the buffer. */
	struct fid_domain *d2;
	struct fid_mr *foreign;
	CHECK_OK(fi_domain(p->fabric, p->info, &d2, NULL));
	CHECK_OK(fi_mr_reg(d2, src, LEN, FI_READ | FI_WRITE, 0, 0, 0, &foreign, NULL));
	CHECK_RC(fi_write(p->ep, src, 16, fi_mr_desc(foreign), p->other, a, r.key, &ctx),
		 -FI_EINVAL);
	CHECK_OK(fi_close(&foreign->fid));
	CHECK_OK(fi_close(&d2->fid));
	struct iovec iov[2] = { { src, 8 }, { src + 8, 8 } };
	void *descs[2] = { fi_mr_desc(rw), NULL };
	CHECK_RC(fi_writev(p->ep, iov, descs, 2, p->other, a, r.key, &ctx), -FI_EINVAL);
	usleep(20000);
	CHECK_OK(cq_empty(p->cq));
	CHECK_OK(check_tally(p, &t));
	/* Correct descriptors. */
	CHECK_OK(rma(p, &t, OP_WRITE, src, 16, fi_mr_desc(rw), a, r.key, 0, 0));
	/* A registration naming no local right allows them all (fi_mr(3)). */
	CHECK_OK(rma(p, &t, OP_WRITE, src + 200, 16, fi_mr_desc(remote_only),
		     raddr(p, &r, 200), r.key, 0, 0));
	CHECK_OK(rma(p, &t, OP_READ, src + 1024, 16, fi_mr_desc(rw), a, r.key, 0, 0));
	CHECK_OK(same(src + 1024, src, 16, "read back"));
	fill(src, LEN, 28);
	/* Inject takes no descriptor. */
	CHECK_OK(fi_inject_write(p->ep, src + 2000, 8, p->other, raddr(p, &r, 100), r.key));
	t.ok[C_WRITE]++;
	CHECK_OK(wait_cntr(p, C_WRITE, t.ok[C_WRITE], 0));
	CHECK_OK(cq_empty(p->cq));
	CHECK_OK(check_tally(p, &t));
	CHECK_OK(fi_close(&rw->fid));
	CHECK_OK(fi_close(&other->fid));
	CHECK_OK(fi_close(&ro->fid));
	CHECK_OK(fi_close(&part->fid));
	CHECK_OK(fi_close(&remote_only->fid));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int local_desc(void)
{
	return pair(LOCAL_BITS, local_target, local_init);
}

/* ======================================= 11. counters bound to an MR == */

static int bound_target(struct peer *p)
{
	struct fid_mr *mr;
	struct fid_cntr *wc, *rc;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	int rma_event = p->info->domain_attr->mr_mode & FI_MR_RMA_EVENT;
	fill(tb, LEN, 29);
	CHECK_OK(fi_cntr_open(p->domain, &ca, &wc, NULL));
	CHECK_OK(fi_cntr_open(p->domain, &ca, &rc, NULL));
	CHECK_OK(reg(p, tb, LEN, RW, 1, FI_RMA_EVENT, &mr));
	CHECK_OK(fi_mr_bind(mr, &wc->fid, FI_REMOTE_WRITE));
	if (rma_event) {
		CHECK_OK(fi_mr_enable(mr));
		/* No binding after fi_mr_enable: rc stays unbound. */
		CHECK(fi_mr_bind(mr, &rc->fid, FI_REMOTE_READ) < 0);
	} else {
		CHECK_OK(fi_mr_bind(mr, &rc->fid, FI_REMOTE_READ));
	}
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	CHECK(fi_cntr_read(wc) == 3);
	CHECK(fi_cntr_readerr(wc) == 0);
	CHECK(fi_cntr_read(rc) == (rma_event ? 0 : 1));
	CHECK(fi_cntr_readerr(rc) == 0);
	CHECK_OK(remote_counts(p, 3, 1));
	unsigned char want[LEN];
	fill(want, LEN, 30);
	for (size_t i = 0; i < LEN; i++) {
		unsigned char w = pat(i, 29);
		if (i < 16 || (i >= 100 && i < 116) || (i >= 500 && i < 4000))
			w = want[i];
		if (tb[i] != w) {
			fprintf(stderr, "    byte %zu is 0x%02x, want 0x%02x\n", i, tb[i], w);
			return 1;
		}
	}
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&wc->fid));
	CHECK_OK(fi_close(&rc->fid));
	return 0;
}

static int bound_init(struct peer *p)
{
	struct peer_region r;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	fill(src, LEN, 30);
	WRITE(p, &t, src, 16, raddr(p, &r, 0), r.key, 0);
	WRITE(p, &t, src + 100, 16, raddr(p, &r, 100), r.key, 0);
	WRITE(p, &t, src, 1, raddr(p, &r, LEN), r.key, FI_EACCES);
	WRITE(p, &t, src + 500, 3500, raddr(p, &r, 500), r.key, 0);
	READ(p, &t, dst, 16, raddr(p, &r, 0), r.key, 0);
	READ(p, &t, dst, LEN + 1, raddr(p, &r, 0), r.key, FI_EACCES);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int mr_bound_counter(void)
{
	return pair(MODE, bound_target, bound_init);
}

static int mr_bound_counter_rma_event(void)
{
	return pair(MODE | FI_MR_RMA_EVENT, bound_target, bound_init);
}

/* =========================================== 12. remote CQ data ====== */

static int remote_entry(struct peer *p, uint64_t data, size_t len)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	CHECK_OK(peer_wait(p, &e, &err));
	if (e.flags != (FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE | FI_RMA) || e.data != data)
		fprintf(stderr, "    remote entry: flags 0x%llx data 0x%llx len %zu\n",
			(unsigned long long)e.flags, (unsigned long long)e.data, e.len);
	CHECK(e.flags == (FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE | FI_RMA));
	CHECK(e.data == data);
	(void)len;
	return 0;
}

static int cq_data_target(struct peer *p)
{
	struct fid_mr *mr;
	fill(tb, LEN, 31);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &mr));
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	/* Exactly the two accepted writes, in order, and nothing else. */
	CHECK_OK(remote_entry(p, 0xfeed, 16));
	CHECK_OK(remote_entry(p, 0xbeef, 4000));
	CHECK_OK(cq_empty(p->cq));
	unsigned char want[LEN];
	fill(want, LEN, 32);
	CHECK_OK(same(tb, want, 4000, "written region"));
	for (size_t i = 4000; i < LEN; i++)
		CHECK(tb[i] == pat(i, 31));
	CHECK_OK(remote_counts(p, 2, 0));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int cq_data_init(struct peer *p)
{
	struct peer_region r;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	fill(src, LEN, 32);
	WRITEDATA(p, &t, src, 16, raddr(p, &r, LEN - 8), r.key, 0xdead, FI_EACCES);
	WRITEDATA(p, &t, src, 16, raddr(p, &r, 0), r.key ^ 0x100, 0xdead, FI_EINVAL);
	WRITEDATA(p, &t, src, 16, raddr(p, &r, 0), r.key, 0xfeed, 0);
	WRITEDATA(p, &t, src, LEN + 1, raddr(p, &r, 0), r.key, 0xdead, FI_EACCES);
	WRITEDATA(p, &t, src, 4000, raddr(p, &r, 0), r.key, 0xbeef, 0);
	WRITEDATA(p, &t, src, 4000, raddr(p, &r, 0), ~r.key, 0xdead, FI_EINVAL);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int remote_cq_data(void)
{
	return pair(MODE, cq_data_target, cq_data_init);
}

/* ==================================== 13. region closed under a peer == */

static int closed_target(struct peer *p)
{
	struct fid_mr *mr, *ctl;
	fill(tb, LEN, 33);
	fill(tb2, LEN, 34);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &mr));
	CHECK_OK(reg(p, tb2, LEN, RW, 2, 0, &ctl));
	publish(p, mr, tb, LEN);
	publish(p, ctl, tb2, LEN);
	CHECK_OK(peer_sync(p)); /* the initiator used it */
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(peer_sync(p)); /* closed */
	CHECK_OK(peer_sync(p)); /* the initiator is done */
	unsigned char want[16];
	fill(want, 16, 35);
	CHECK_OK(same(tb, want, 16, "write before the close"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb[i] == pat(i, 33));
	CHECK_OK(same(tb2, want, 16, "control region"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb2[i] == pat(i, 34));
	CHECK_OK(remote_counts(p, 2, 0));
	CHECK_OK(fi_close(&ctl->fid));
	return 0;
}

static int closed_init(struct peer *p)
{
	struct peer_region r, ctl;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	CHECK_OK(get_region(p, &ctl));
	fill(src, LEN, 35);
	WRITE(p, &t, src, 16, raddr(p, &r, 0), r.key, 0);
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_sync(p));
	WRITE(p, &t, src + 16, 16, raddr(p, &r, 16), r.key, FI_EINVAL);
	WRITE(p, &t, src, 4000, raddr(p, &r, 0), r.key, FI_EINVAL);
	READ(p, &t, dst, 16, raddr(p, &r, 0), r.key, FI_EINVAL);
	WRITEDATA(p, &t, src, 16, raddr(p, &r, 0), r.key, 5, FI_EINVAL);
	WRITE(p, &t, src, 16, raddr(p, &ctl, 0), ctl.key, 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int closed_region(void)
{
	return pair(MODE, closed_target, closed_init);
}

/* ============================================== 14. inject ========== */

static int inject_target(struct peer *p)
{
	struct fid_mr *mr;
	fill(tb, LEN, 36);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &mr));
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	CHECK_OK(remote_entry(p, 0xabc, 8));
	CHECK_OK(cq_empty(p->cq));
	unsigned char want[16];
	fill(want, 16, 37);
	CHECK_OK(same(tb, want, 16, "injected bytes"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb[i] == pat(i, 36));
	CHECK_OK(remote_counts(p, 2, 0));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

/* After a refused inject: an error entry is allowed (with no context),
 * not required. */
static int inject_err_entry(struct peer *p, int want)
{
	struct fi_cq_tagged_entry e;
	ssize_t n = fi_cq_read(p->cq, &e, 1);
	if (n == -FI_EAGAIN)
		return 0;
	CHECK_RC(n, -FI_EAVAIL);
	struct fi_cq_err_entry err;
	memset(&err, 0, sizeof(err));
	CHECK_RC(fi_cq_readerr(p->cq, &err, 0), 1);
	CHECK(err.err == want);
	CHECK(err.op_context == NULL);
	return cq_empty(p->cq);
}

static int inject_init(struct peer *p)
{
	struct peer_region r;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	fill(src, LEN, 37);
	CHECK_OK(fi_inject_write(p->ep, src, 8, p->other, raddr(p, &r, 0), r.key));
	t.ok[C_WRITE]++;
	CHECK_OK(wait_cntr(p, C_WRITE, t.ok[C_WRITE], t.err[C_WRITE]));
	CHECK_OK(cq_empty(p->cq));
	/* Bad key, then out of range: one write error each. */
	CHECK_OK(fi_inject_write(p->ep, src + 8, 8, p->other, raddr(p, &r, 8), r.key ^ 0x100));
	t.err[C_WRITE]++;
	CHECK_OK(wait_cntr(p, C_WRITE, t.ok[C_WRITE], t.err[C_WRITE]));
	CHECK_OK(inject_err_entry(p, FI_EINVAL));
	CHECK_OK(fi_inject_write(p->ep, src + 8, 8, p->other, raddr(p, &r, LEN - 4), r.key));
	t.err[C_WRITE]++;
	CHECK_OK(wait_cntr(p, C_WRITE, t.ok[C_WRITE], t.err[C_WRITE]));
	CHECK_OK(inject_err_entry(p, FI_EACCES));
	CHECK_OK(fi_inject_writedata(p->ep, src + 8, 8, 0xdead, p->other, raddr(p, &r, 8),
				     ~r.key));
	t.err[C_WRITE]++;
	CHECK_OK(wait_cntr(p, C_WRITE, t.ok[C_WRITE], t.err[C_WRITE]));
	CHECK_OK(inject_err_entry(p, FI_EINVAL));
	CHECK_OK(fi_inject_writedata(p->ep, src + 8, 8, 0xabc, p->other, raddr(p, &r, 8), r.key));
	t.ok[C_WRITE]++;
	CHECK_OK(wait_cntr(p, C_WRITE, t.ok[C_WRITE], t.err[C_WRITE]));
	CHECK_OK(cq_empty(p->cq));
	/* Past the inject size: refused by the call. */
	size_t max = p->info->tx_attr->inject_size;
	CHECK(max > 0);
	unsigned char *big = calloc(1, max + 1);
	CHECK(big);
	ssize_t too_big = fi_inject_write(p->ep, big, max + 1, p->other, raddr(p, &r, 0), r.key);
	free(big);
	CHECK_RC(too_big, -FI_EMSGSIZE);
	CHECK_OK(check_tally(p, &t));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int inject_write(void)
{
	return pair(MODE, inject_target, inject_init);
}

/* Without a write counter an injected write waits for no answer: a good
 * one lands; a refused one (bad key, out of range) changes nothing at the
 * target and leaves no trace at the initiator, which has no completion
 * and no counter to carry it. */
static int inject_nocntr_target(struct peer *p)
{
	struct fid_mr *mr;
	fill(tb, LEN, 40);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &mr));
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	CHECK_OK(remote_entry(p, 0xabd, 8));
	unsigned char want[16];
	fill(want, 16, 41);
	CHECK_OK(same(tb, want, 16, "injected bytes"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb[i] == pat(i, 40));
	CHECK_OK(remote_counts(p, 2, 0));
	CHECK_OK(peer_sync(p));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int inject_nocntr_init(struct peer *p)
{
	struct peer_region r;
	CHECK(p->cntr[C_WRITE] == NULL);
	CHECK_OK(get_region(p, &r));
	fill(src, LEN, 41);
	CHECK_OK(fi_inject_write(p->ep, src, 8, p->other, raddr(p, &r, 0), r.key));
	CHECK_OK(fi_inject_write(p->ep, src + 8, 8, p->other, raddr(p, &r, 8), r.key ^ 0x100));
	CHECK_OK(fi_inject_write(p->ep, src + 8, 8, p->other, raddr(p, &r, LEN - 4), r.key));
	CHECK_OK(fi_inject_writedata(p->ep, src + 8, 8, 0xabd, p->other, raddr(p, &r, 8), r.key));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_cq_stays_empty(p, 50));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int inject_write_no_counter(void)
{
	peer_skip_cntrs = 1u << C_WRITE;
	int rc = pair(MODE, inject_nocntr_target, inject_nocntr_init);
	peer_skip_cntrs = 0;
	return rc;
}

/* ================================= extra: zero-length accesses ====== */

/* A zero-length access passes the same key, right and range checks (the
 * address may be the region's end) and counts as one event. */
static int zero_target(struct peer *p)
{
	struct fid_mr *mr, *ro;
	fill(tb, LEN, 38);
	fill(tb2, LEN, 39);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &mr));
	CHECK_OK(reg(p, tb2, LEN, FI_REMOTE_READ, 2, 0, &ro));
	publish(p, mr, tb, LEN);
	publish(p, ro, tb2, LEN);
	CHECK_OK(peer_sync(p));
	CHECK_OK(untouched(tb, LEN, 38, "region"));
	CHECK_OK(untouched(tb2, LEN, 39, "read-only region"));
	CHECK_OK(remote_counts(p, 2, 2));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&ro->fid));
	return 0;
}

static int zero_init(struct peer *p)
{
	struct peer_region r, ro;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	CHECK_OK(get_region(p, &ro));
	WRITE(p, &t, src, 0, raddr(p, &r, 0), r.key ^ 0x100, FI_EINVAL);
	READ(p, &t, dst, 0, raddr(p, &r, 0), r.key ^ 0x100, FI_EINVAL);
	WRITE(p, &t, src, 0, raddr(p, &r, LEN + 1), r.key, FI_EACCES);
	READ(p, &t, dst, 0, raddr(p, &r, LEN + 1), r.key, FI_EACCES);
	WRITE(p, &t, src, 0, raddr(p, &ro, 0), ro.key, FI_EACCES);
	WRITE(p, &t, src, 0, raddr(p, &r, 0), r.key, 0);
	WRITE(p, &t, src, 0, raddr(p, &r, LEN), r.key, 0);
	READ(p, &t, dst, 0, raddr(p, &r, LEN), r.key, 0);
	READ(p, &t, dst, 0, raddr(p, &ro, 0), ro.key, 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int zero_length(void)
{
	return pair(MODE, zero_target, zero_init);
}

/* ========================================= extra: atomics ============ */

static uint64_t at_rw[64], at_ro[64], at_wo[64];

/* Posts one atomic (0 base, 1 fetch, 2 compare) and checks its completion
 * like rma() does. */
static int atomic_op(struct peer *p, struct tally *t, int kind, enum fi_op op, uint64_t *v,
		     uint64_t *cmp, uint64_t *res, uint64_t addr, uint64_t key, int want)
{
	int ctx;
	ssize_t rc;
	if (kind == 0)
		rc = fi_atomic(p->ep, v, 1, NULL, p->other, addr, key, FI_UINT64, op, &ctx);
	else if (kind == 1)
		rc = fi_fetch_atomic(p->ep, v, 1, NULL, res, NULL, p->other, addr, key, FI_UINT64,
				     op, &ctx);
	else
		rc = fi_compare_atomic(p->ep, v, 1, NULL, cmp, NULL, res, NULL, p->other, addr, key,
				       FI_UINT64, op, &ctx);
	CHECK_RC(rc, 0);
	uint64_t dir = kind == 0 ? FI_WRITE : FI_READ;
	int c = kind == 0 ? C_WRITE : C_READ;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int w = peer_wait(p, &e, &err);
	if (want == 0) {
		if (w == -FI_EAVAIL)
			fprintf(stderr, "    unexpected error completion: %s\n", fi_strerror(err.err));
		CHECK_RC(w, 0);
		CHECK(e.op_context == &ctx);
		CHECK(e.flags == (FI_ATOMIC | dir));
		t->ok[c]++;
	} else {
		CHECK_RC(w, -FI_EAVAIL);
		if (err.err != want)
			fprintf(stderr, "    err is %d (%s), want %d\n", err.err, fi_strerror(err.err),
				want);
		CHECK(err.err == want);
		CHECK(err.op_context == &ctx);
		CHECK(err.flags == (FI_ATOMIC | dir));
		t->err[c]++;
	}
	CHECK_OK(cq_empty(p->cq));
	return check_tally(p, t);
}

#define ATOMIC(kind, op, addr, key, want) \
	CHECK_OK(atomic_op(p, &t, kind, op, &v, &cmp, &res, addr, key, want))

static int atomic_target(struct peer *p)
{
	struct fid_mr *rw, *ro, *wo;
	for (int i = 0; i < 64; i++) {
		at_rw[i] = 100 + i;
		at_ro[i] = 300 + i;
		at_wo[i] = 200 + i;
	}
	CHECK_OK(reg(p, at_rw, sizeof(at_rw), RW, 1, 0, &rw));
	CHECK_OK(reg(p, at_ro, sizeof(at_ro), FI_REMOTE_READ, 2, 0, &ro));
	CHECK_OK(reg(p, at_wo, sizeof(at_wo), FI_REMOTE_WRITE, 3, 0, &wo));
	publish(p, rw, at_rw, sizeof(at_rw));
	publish(p, ro, at_ro, sizeof(at_ro));
	publish(p, wo, at_wo, sizeof(at_wo));
	CHECK_OK(peer_sync(p));
	CHECK(at_rw[0] == 7);
	CHECK(at_wo[0] == 205);
	for (int i = 1; i < 64; i++)
		CHECK(at_rw[i] == 100u + i && at_wo[i] == 200u + i);
	for (int i = 0; i < 64; i++)
		CHECK(at_ro[i] == 300u + i);
	/* Fetching atomics that modify count as remote writes. */
	CHECK_OK(remote_counts(p, 4, 1));
	CHECK_OK(fi_close(&rw->fid));
	CHECK_OK(fi_close(&ro->fid));
	CHECK_OK(fi_close(&wo->fid));
	return 0;
}

static int atomic_init(struct peer *p)
{
	struct peer_region rw, ro, wo;
	struct tally t = { { 0 }, { 0 } };
	uint64_t v = 5, cmp = 0, res = 0;
	CHECK_OK(get_region(p, &rw));
	CHECK_OK(get_region(p, &ro));
	CHECK_OK(get_region(p, &wo));
	uint64_t end = sizeof(at_rw);
	/* Refused: key, range, rights. */
	ATOMIC(0, FI_SUM, raddr(p, &rw, 0), rw.key ^ 0x100, FI_EINVAL);
	ATOMIC(0, FI_SUM, raddr(p, &rw, end), rw.key, FI_EACCES);
	ATOMIC(0, FI_SUM, raddr(p, &rw, end - 4), rw.key, FI_EACCES);
	ATOMIC(1, FI_SUM, raddr(p, &rw, end), rw.key, FI_EACCES);
	ATOMIC(0, FI_SUM, raddr(p, &ro, 0), ro.key, FI_EACCES);
	ATOMIC(1, FI_SUM, raddr(p, &ro, 0), ro.key, FI_EACCES);
	ATOMIC(1, FI_SUM, raddr(p, &wo, 0), wo.key, FI_EACCES);
	ATOMIC(1, FI_ATOMIC_READ, raddr(p, &wo, 0), wo.key, FI_EACCES);
	ATOMIC(2, FI_CSWAP, raddr(p, &ro, 0), ro.key, FI_EACCES);
	ATOMIC(2, FI_CSWAP, raddr(p, &wo, 0), wo.key, FI_EACCES);
	/* Allowed. */
	ATOMIC(0, FI_SUM, raddr(p, &wo, 0), wo.key, 0);
	ATOMIC(0, FI_SUM, raddr(p, &rw, 0), rw.key, 0);
	v = 1;
	ATOMIC(1, FI_SUM, raddr(p, &rw, 0), rw.key, 0);
	CHECK(res == 105);
	ATOMIC(1, FI_ATOMIC_READ, raddr(p, &ro, 0), ro.key, 0);
	CHECK(res == 300);
	v = 7;
	cmp = 106;
	ATOMIC(2, FI_CSWAP, raddr(p, &rw, 0), rw.key, 0);
	CHECK(res == 106);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int atomics_enforced(void)
{
	return pair(MODE, atomic_target, atomic_init);
}

/* ============================ extra: a region closed under traffic === */

/*
 * The target closes a region while the initiator streams writes into it
 * (a few in flight, inline and cross-memory). Every write verified before
 * the close lands and is counted; none after it: once fi_close returns
 * the target rewrites the buffer, and no byte of it may change again.
 */
static int traffic_target(struct peer *p)
{
	struct fid_mr *mr;
	fill(tb, LEN, 40);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &mr));
	publish(p, mr, tb, LEN);
	CHECK_OK(peer_sync(p));
	/* Well into the stream, with the progress thread at work. */
	double end = peer_now() + 10;
	while (peer_cntr(p, C_REMOTE_WRITE) < 200)
		CHECK(peer_now() < end);
	usleep(1000);
	CHECK_OK(fi_close(&mr->fid));
	fill(tb, LEN, 41);
	CHECK_OK(peer_sync(p)); /* the initiator saw the refusals */
	uint64_t accepted;
	CHECK(peer_get(p, &accepted, sizeof(accepted)) == 0);
	CHECK_OK(untouched(tb, LEN, 41, "buffer after the close"));
	CHECK(accepted >= 200);
	CHECK_OK(remote_counts(p, accepted, 0));
	return 0;
}

static int traffic_init(struct peer *p)
{
	enum { WIN = 4, RING = 64 };
	struct peer_region r;
	struct tally t = { { 0 }, { 0 } };
	uint64_t seq[RING], posted = 0, done = 0, max_ok = 0, min_err = UINT64_MAX;
	CHECK_OK(get_region(p, &r));
	fill(src, LEN, 42);
	CHECK_OK(peer_sync(p));
	double end = peer_now() + 10;
	while (min_err == UINT64_MAX || done < posted) {
		CHECK(peer_now() < end);
		if (min_err == UINT64_MAX && posted - done < WIN) {
			size_t len = posted % 2 ? LEN : 16;
			seq[posted % RING] = posted;
			ssize_t rc = fi_write(p->ep, src, len, NULL, p->other, raddr(p, &r, 0), r.key,
					      &seq[posted % RING]);
			if (rc == -FI_EAGAIN)
				continue;
			CHECK_RC(rc, 0);
			posted++;
			continue;
		}
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int w = peer_wait(p, &e, &err);
		if (w == 0) {
			uint64_t s = *(uint64_t *)e.op_context;
			max_ok = s > max_ok ? s : max_ok;
			t.ok[C_WRITE]++;
		} else {
			CHECK_RC(w, -FI_EAVAIL);
			CHECK(err.err == FI_EINVAL);
			uint64_t s = *(uint64_t *)err.op_context;
			min_err = s < min_err ? s : min_err;
			t.err[C_WRITE]++;
		}
		done++;
	}
	/* Accepted ones all came before the first refused one. */
	CHECK(t.ok[C_WRITE] > 0);
	CHECK(max_ok < min_err);
	CHECK_OK(check_tally(p, &t));
	WRITE(p, &t, src, 16, raddr(p, &r, 0), r.key, FI_EINVAL);
	WRITE(p, &t, src, LEN, raddr(p, &r, 0), r.key, FI_EINVAL);
	CHECK_OK(peer_sync(p));
	peer_put(p, &t.ok[C_WRITE], sizeof(t.ok[C_WRITE]));
	return 0;
}

static int close_under_traffic(void)
{
	return pair(MODE, traffic_target, traffic_init);
}

/* ============================= extra: a page made inaccessible ====== */

/*
 * Without FI_MR_ALLOCATED, a registered page the target can no longer
 * access fails the access (FI_EFAULT) instead of crashing the target. The
 * page is made PROT_NONE rather than unmapped, so that nothing else (a
 * thread stack, the sanitizer's allocator) can be mapped into the hole.
 * Skipped under valgrind, which reports the library's deliberate probe of
 * that page (process_vm_readv/writev on it) as an error.
 */
static int under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");
	return pre && strstr(pre, "vgpreload") != NULL;
}

static int inaccessible_target(struct peer *p)
{
	struct fid_mr *mr;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	CHECK(!(p->info->domain_attr->mr_mode & FI_MR_ALLOCATED));
	unsigned char *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	fill(m, 3 * page, 43);
	CHECK_OK(reg(p, m, 3 * page, RW, 1, 0, &mr));
	CHECK_OK(mprotect(m + page, page, PROT_NONE));
	publish(p, mr, m, 3 * page);
	CHECK_OK(peer_sync(p));
	unsigned char want[16];
	fill(want, 16, 44);
	CHECK_OK(same(m, want, 16, "first page"));
	CHECK_OK(same(m + 2 * page, want, 16, "last page"));
	for (size_t i = 16; i < page; i++)
		CHECK(m[i] == pat(i, 43) && m[2 * page + i] == pat(2 * page + i, 43));
	CHECK_OK(remote_counts(p, 2, 1));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(munmap(m, 3 * page));
	return 0;
}

static int inaccessible_init(struct peer *p)
{
	struct peer_region r;
	struct tally t = { { 0 }, { 0 } };
	CHECK_OK(get_region(p, &r));
	uint64_t page = r.len / 3;
	fill(src, LEN, 44);
	WRITE(p, &t, src, 16, raddr(p, &r, page), r.key, FI_EFAULT);
	WRITE(p, &t, src, page, raddr(p, &r, page), r.key, FI_EFAULT);
	READ(p, &t, dst, 16, raddr(p, &r, page + 100), r.key, FI_EFAULT);
	READ(p, &t, dst, page, raddr(p, &r, page), r.key, FI_EFAULT);
	WRITE(p, &t, src, 16, raddr(p, &r, 0), r.key, 0);
	WRITE(p, &t, src, 16, raddr(p, &r, 2 * page), r.key, 0);
	READ(p, &t, dst, 16, raddr(p, &r, 2 * page), r.key, 0);
	CHECK_OK(same(dst, src, 16, "read back"));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int inaccessible_page(void)
{
	if (under_valgrind())
		return 0;
	return pair(FI_MR_PROV_KEY, inaccessible_target, inaccessible_init);
}

/* =============== extra: the domain's auth key is its regions' default == */

/* The target's regions live in a domain opened with auth key "dom-K"
 * (fi_domain(3): the default key of its registrations); one region names
 * its own key. The initiator's domain key must match the region's. */
static int auth_default_target(struct peer *p)
{
	struct peer alt;
	struct fid_mr *inherit, *own;
	struct iovec iov = { tb2, LEN };
	struct fi_mr_attr a;
	uint8_t key[] = { 'o', 'w', 'n' };
	fill(tb, LEN, 45);
	fill(tb2, LEN, 46);
	CHECK_OK(alt_open(p, &alt, p->other, "dom-K", NULL));
	char name[64] = { 0 };
	size_t len = sizeof(name);
	CHECK_OK(fi_getname(&alt.ep->fid, name, &len));
	peer_put(p, name, sizeof(name));
	CHECK_OK(fi_mr_reg(alt.domain, tb, LEN, RW, 0, 1, 0, &inherit, NULL));
	memset(&a, 0, sizeof(a));
	a.mr_iov = &iov;
	a.iov_count = 1;
	a.access = RW;
	a.requested_key = 2;
	a.auth_key = key;
	a.auth_key_size = sizeof(key);
	CHECK_OK(fi_mr_regattr(alt.domain, &a, 0, &own));
	publish(p, inherit, tb, LEN);
	publish(p, own, tb2, LEN);
	CHECK_OK(peer_sync(p));
	unsigned char want[LEN];
	fill(want, LEN, 47);
	CHECK_OK(same(tb, want, 16, "region with the domain's key"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb[i] == pat(i, 45));
	CHECK_OK(same(tb2 + 100, want + 100, 16, "region with its own key"));
	for (size_t i = 0; i < LEN; i++)
		CHECK((i >= 100 && i < 116) || tb2[i] == pat(i, 46));
	CHECK_OK(fi_close(&inherit->fid));
	CHECK_OK(fi_close(&own->fid));
	return alt_close(&alt);
}

static int auth_default_init(struct peer *p)
{
	struct peer_region inherit, own;
	struct tally t = { { 0 }, { 0 } };
	char name[64];
	fi_addr_t dest, main_other = p->other;
	CHECK(peer_get(p, name, sizeof(name)) == 0);
	const char *names[1] = { name };
	CHECK_RC(fi_av_insert(p->av, names, 1, &dest, 0, NULL), 1);
	CHECK_OK(get_region(p, &inherit));
	CHECK_OK(get_region(p, &own));
	fill(src, LEN, 47);
	/* No key. */
	p->other = dest;
	int rc = rma(p, &t, OP_WRITE, src, 16, NULL, raddr(p, &inherit, 0), inherit.key, 0,
		     FI_EACCES);
	if (!rc)
		rc = rma(p, &t, OP_WRITE, src, 16, NULL, raddr(p, &own, 0), own.key, 0, FI_EACCES);
	p->other = main_other;
	CHECK_OK(rc);
	CHECK_OK(auth_try(p, dest, &inherit, "dom-X", NULL, 0, FI_EACCES));
	CHECK_OK(auth_try(p, dest, &own, "dom-K", NULL, 100, FI_EACCES));
	CHECK_OK(auth_try(p, dest, &inherit, "own", NULL, 0, FI_EACCES));
	CHECK_OK(auth_try(p, dest, &inherit, "dom-K", NULL, 0, 0));
	CHECK_OK(auth_try(p, dest, &own, NULL, "own", 100, 0));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int auth_domain_default(void)
{
	return pair(MODE, auth_default_target, auth_default_init);
}

/* ==================== extra: FI_MR_ENDPOINT regions are per endpoint == */

/* Where the headers have single-use keys, endpoint 1's region has one: a
 * refusal through the wrong endpoint must not use it up. */
#ifdef FI_MR_SINGLE_USE
#define EP1_FLAGS FI_MR_SINGLE_USE
#else
#define EP1_FLAGS 0
#endif

/* The target has a second endpoint on its domain; a region bound to one
 * endpoint is reached through it, and not through the other. */
static int ep_scoped_target(struct peer *p)
{
	struct fid_ep *ep2;
	struct fid_cq *cq2;
	struct fid_mr *mr1, *mr2;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC };
	CHECK(p->info->domain_attr->mr_mode & FI_MR_ENDPOINT);
	fill(tb, LEN, 48);
	fill(tb2, LEN, 49);
	CHECK_OK(fi_cq_open(p->domain, &cq_attr, &cq2, NULL));
	CHECK_OK(fi_endpoint(p->domain, p->info, &ep2, NULL));
	CHECK_OK(fi_ep_bind(ep2, &p->av->fid, 0));
	CHECK_OK(fi_ep_bind(ep2, &cq2->fid, FI_TRANSMIT | FI_RECV));
	CHECK_OK(fi_enable(ep2));
	char name[64] = { 0 };
	size_t len = sizeof(name);
	CHECK_OK(fi_getname(&ep2->fid, name, &len));
	peer_put(p, name, sizeof(name));
	CHECK_OK(reg(p, tb, LEN, RW, 1, EP1_FLAGS, &mr1));
	CHECK_OK(fi_mr_bind(mr1, &p->ep->fid, 0));
	CHECK_OK(fi_mr_enable(mr1));
	CHECK_OK(reg(p, tb2, LEN, RW, 2, 0, &mr2));
	CHECK_OK(fi_mr_bind(mr2, &ep2->fid, 0));
	CHECK_OK(fi_mr_enable(mr2));
	publish(p, mr1, tb, LEN);
	publish(p, mr2, tb2, LEN);
	CHECK_OK(peer_sync(p));
	unsigned char want[LEN];
	fill(want, LEN, 50);
	int rc = same(tb, want, 16, "region of endpoint 1");
	for (size_t i = 16; i < LEN && !rc; i++)
		rc = tb[i] != pat(i, 48);
	rc |= same(tb2 + 100, want + 100, 16, "region of endpoint 2");
	for (size_t i = 0; i < LEN && !rc; i++)
		rc = !((i >= 100 && i < 116) || tb2[i] == pat(i, 49));
	/* Endpoint 1's counters saw its own region's write only. */
	rc |= remote_counts(p, 1, 0);
	/* An MR bound to an endpoint closes first (fi_mr(3)). */
	CHECK_RC(fi_close(&ep2->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&mr1->fid));
	CHECK_OK(fi_close(&mr2->fid));
	CHECK_OK(fi_close(&ep2->fid));
	CHECK_OK(fi_close(&cq2->fid));
	return rc;
}

/* Through the wrong endpoint the key names no region there (FI_EINVAL)
 * or one it may not use (FI_EACCES): either refusal is right. */
static int ep_refused(struct peer *p, struct tally *t, fi_addr_t to,
		      const struct peer_region *r, uint64_t off)
{
	fi_addr_t keep = p->other;
	p->other = to;
	int rc = rma(p, t, OP_WRITE, src + off, 16, NULL, raddr(p, r, off), r->key, 0,
		     ANY_REFUSAL);
	p->other = keep;
	return rc;
}

static int ep_scoped_init(struct peer *p)
{
	struct peer_region r1, r2;
	struct tally t = { { 0 }, { 0 } };
	char name[64];
	fi_addr_t ep2, ep1 = p->other;
	CHECK(peer_get(p, name, sizeof(name)) == 0);
	const char *names[1] = { name };
	CHECK_RC(fi_av_insert(p->av, names, 1, &ep2, 0, NULL), 1);
	CHECK_OK(get_region(p, &r1));
	CHECK_OK(get_region(p, &r2));
	fill(src, LEN, 50);
	int rc = ep_refused(p, &t, ep2, &r1, 0);
	if (rc) {
		/* Keep going (the tally follows what happened) to check the rest. */
		t.ok[C_WRITE] = peer_cntr(p, C_WRITE);
		t.err[C_WRITE] = peer_cntr_err(p, C_WRITE);
	}
	int rc1 = ep_refused(p, &t, ep1, &r2, 100);
	if (rc1) {
		t.ok[C_WRITE] = peer_cntr(p, C_WRITE);
		t.err[C_WRITE] = peer_cntr_err(p, C_WRITE);
	}
	rc |= rc1;
	WRITE(p, &t, src, 16, raddr(p, &r1, 0), r1.key, 0);
	p->other = ep2;
	int rc2 = rma(p, &t, OP_WRITE, src + 100, 16, NULL, raddr(p, &r2, 100), r2.key, 0, 0);
	p->other = ep1;
	CHECK_OK(peer_sync(p));
	return rc || rc2;
}

static int endpoint_scoped(void)
{
	return pair(MODE | FI_MR_ENDPOINT, ep_scoped_target, ep_scoped_init);
}

/* ===================================================== extra: raw keys == */

/* Under FI_MR_RAW the target publishes raw keys; the initiator maps them.
 * A raw key of a closed region maps, but names nothing at the target. */
struct raw_pub {
	uint64_t base, len;
	size_t size;
	uint8_t raw[256];
};

static int raw_publish(struct peer *p, struct fid_mr *mr, size_t len)
{
	struct raw_pub r;
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r.raw);
	r.len = len;
	CHECK_OK(fi_mr_raw_attr(mr, &r.base, r.raw, &r.size, 0));
	peer_put(p, &r, sizeof(r));
	return 0;
}

static int raw_target(struct peer *p)
{
	struct fid_mr *mr, *gone;
	CHECK(p->info->domain_attr->mr_mode & FI_MR_RAW);
	fill(tb, LEN, 51);
	fill(tb2, LEN, 52);
	CHECK_OK(reg(p, tb, LEN, RW, 1, 0, &mr));
	CHECK(fi_mr_key(mr) == FI_KEY_NOTAVAIL);
	CHECK_OK(reg(p, tb2, LEN, RW, 2, 0, &gone));
	CHECK_OK(raw_publish(p, mr, LEN));
	CHECK_OK(raw_publish(p, gone, LEN));
	CHECK_OK(fi_close(&gone->fid));
	CHECK_OK(peer_sync(p)); /* closed */
	CHECK_OK(peer_sync(p)); /* the initiator is done */
	unsigned char want[16];
	fill(want, 16, 53);
	CHECK_OK(same(tb, want, 16, "region"));
	for (size_t i = 16; i < LEN; i++)
		CHECK(tb[i] == pat(i, 51));
	CHECK_OK(untouched(tb2, LEN, 52, "closed region"));
	CHECK_OK(remote_counts(p, 1, 1));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int raw_init(struct peer *p)
{
	struct raw_pub a, b;
	struct tally t = { { 0 }, { 0 } };
	uint64_t ka, kb, kc;
	CHECK(peer_get(p, &a, sizeof(a)) == 0);
	CHECK(peer_get(p, &b, sizeof(b)) == 0);
	fill(src, LEN, 53);
	CHECK_OK(fi_mr_map_raw(p->domain, a.base, a.raw, a.size, &ka, 0));
	CHECK_OK(fi_mr_map_raw(p->domain, b.base, b.raw, b.size, &kb, 0));
	/* A corrupted raw key does not map. */
	a.raw[9] ^= 1;
	CHECK(fi_mr_map_raw(p->domain, a.base, a.raw, a.size, &kc, 0) < 0);
	a.raw[9] ^= 1;
	CHECK_OK(peer_sync(p)); /* b's region is closed now */
	struct peer_region ra = { ka, a.base, a.len }, rb = { kb, b.base, b.len };
	WRITE(p, &t, src, 16, raddr(p, &rb, 0), kb, FI_EINVAL);
	READ(p, &t, dst, 16, raddr(p, &rb, 0), kb, FI_EINVAL);
	WRITE(p, &t, src, 1, raddr(p, &ra, LEN), ka, FI_EACCES);
	WRITE(p, &t, src, 16, raddr(p, &ra, 0), ka ^ 0x100, FI_EINVAL);
	WRITE(p, &t, src, 16, raddr(p, &ra, 0), ka, 0);
	READ(p, &t, dst, 16, raddr(p, &ra, 0), ka, 0);
	CHECK_OK(same(dst, src, 16, "read back"));
	CHECK_OK(fi_mr_unmap_key(p->domain, ka));
	CHECK_OK(fi_mr_unmap_key(p->domain, kb));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int raw_keys(void)
{
	return pair(MODE | FI_MR_RAW, raw_target, raw_init);
}

/* ======================= extra: MR counters and closes under traffic == */

/*
 * Requested key 5 is registered, bound to one counter, enabled and closed,
 * over and over, while the initiator streams writes at key 5. Under
 * FI_MR_RMA_EVENT a region takes no access before fi_mr_enable, which
 * comes after the binding, so each accepted write landed in a region bound
 * to the counter: the counter must end at the number of writes the
 * initiator saw accepted, like the endpoint's FI_REMOTE_WRITE counter.
 * (Without that mode a region is live from fi_mr_reg on, and a write
 * between the registration and the binding would rightly go uncounted.)
 */
static int churn_target(struct peer *p)
{
	struct fid_cntr *c;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct pollfd pf = { .fd = p->from, .events = POLLIN };
	CHECK_OK(fi_cntr_open(p->domain, &ca, &c, NULL));
	int rounds = 0;
	double end = peer_now() + 20;
	while (poll(&pf, 1, 0) == 0) {
		struct fid_mr *mr;
		CHECK(peer_now() < end);
		CHECK_OK(reg(p, tb, LEN, RW, 5, FI_RMA_EVENT, &mr));
		CHECK_OK(fi_mr_bind(mr, &c->fid, FI_REMOTE_WRITE));
		CHECK_OK(fi_mr_enable(mr));
		usleep(100);
		CHECK_OK(fi_close(&mr->fid));
		rounds++;
	}
	CHECK_OK(peer_sync(p));
	uint64_t accepted;
	CHECK(peer_get(p, &accepted, sizeof(accepted)) == 0);
	uint64_t counted = fi_cntr_read(c), ep = peer_cntr(p, C_REMOTE_WRITE);
	if (counted != accepted || ep != accepted)
		fprintf(stderr, "    %d rounds: %llu writes accepted, the MR counter counted %llu, "
			"the endpoint counter %llu\n", rounds, (unsigned long long)accepted,
			(unsigned long long)counted, (unsigned long long)ep);
	CHECK_OK(fi_close(&c->fid));
	CHECK(ep == accepted);
	CHECK(counted == accepted);
	return 0;
}

static int churn_init(struct peer *p)
{
	enum { WIN = 4, OPS = 3000 };
	uint64_t posted = 0, done = 0, ok = 0;
	int ctx;
	fill(src, LEN, 54);
	double end = peer_now() + 20;
	/* Until OPS are done and some were accepted (the first region may come
	 * late: then writes go on past OPS), and none is still in flight (its
	 * completion would reach the counter after the count below). */
	while (done < OPS || !ok || done < posted) {
		CHECK(peer_now() < end);
		if ((posted < OPS || !ok) && posted - done < WIN) {
			ssize_t rc = fi_write(p->ep, src, posted % 3 ? LEN : 64, NULL, p->other, 0, 5,
					      &ctx);
			if (rc != -FI_EAGAIN) {
				CHECK_RC(rc, 0);
				posted++;
			}
			continue;
		}
		struct fi_cq_err_entry err;
		int w = peer_wait(p, NULL, &err);
		if (w == 0)
			ok++;
		else {
			CHECK_RC(w, -FI_EAVAIL);
			/* No region under key 5, or one not enabled yet. */
			CHECK(err.err == FI_EINVAL || err.err == FI_EACCES);
		}
		done++;
	}
	CHECK(peer_cntr(p, C_WRITE) == ok);
	CHECK(ok > 0);
	CHECK_OK(peer_sync(p));
	peer_put(p, &ok, sizeof(ok));
	return 0;
}

static int mr_counter_close_race(void)
{
	return pair(FI_MR_RMA_EVENT, churn_target, churn_init);
}

static const struct test_case cases[] = {
	CASE(wrong_key_prov),
	CASE(wrong_key_requested),
	CASE(stale_key_prov),
	CASE(stale_key_requested),
	CASE(past_end),
	CASE_ENV(past_end_virt, VIRT),
	CASE_ENV(regv_offsets, ENV_MODE("FI_MR_PROV_KEY|FI_MR_ALLOCATED")),
	CASE(regv_offsets_unallocated),
	CASE_ENV(regv_virt, VIRT),
	CASE(missing_right),
	CASE_ENV(disabled_until_enabled, ENV_MODE("FI_MR_RMA_EVENT|FI_MR_PROV_KEY")),
	CASE_ENV(disabled_until_bound_to_ep, ENV_MODE("FI_MR_ENDPOINT|FI_MR_PROV_KEY")),
#if TEST_HDR_AT_LEAST(2, 0)
	CASE(sub_region),
	CASE_ENV(sub_region_virt, VIRT),
#endif
#ifdef FI_MR_SINGLE_USE
	CASE(single_use),
#endif
	CASE(auth_key_mismatch),
	CASE_ENV(local_desc, ENV_MODE(LOCAL_MODE)),
	CASE(mr_bound_counter),
	CASE_ENV(mr_bound_counter_rma_event, ENV_MODE("FI_MR_RMA_EVENT|FI_MR_PROV_KEY")),
	CASE(remote_cq_data),
	CASE(closed_region),
	CASE(inject_write),
	CASE(inject_write_no_counter),
	CASE(zero_length),
	CASE(atomics_enforced),
	CASE(close_under_traffic),
	CASE(inaccessible_page),
	CASE(auth_domain_default),
	CASE_ENV(endpoint_scoped, ENV_MODE("FI_MR_ENDPOINT|FI_MR_PROV_KEY")),
	CASE_ENV(raw_keys, ENV_MODE("FI_MR_RAW|FI_MR_PROV_KEY")),
	CASE_ENV(mr_counter_close_race, ENV_MODE("FI_MR_RMA_EVENT")),
};

TEST_MAIN(cases)
