/*
 * Asynchronous registration (deprecated, fi_mr(3)): a domain bound to an EQ
 * with FI_REG_MR reports every successful registration as an
 * FI_MR_COMPLETE event carrying the MR's fid and the registration's
 * context; *mr is written before the event can be read; refused calls make
 * no event.
 */
#include "test.h"

#include <pthread.h>

/* FI_REG_MR: 2.x headers deprecate the macro; this is its ABI value. */
#define REG_MR (1ULL << 59)
#define RW (FI_REMOTE_READ | FI_REMOTE_WRITE)

static char buf[2][4096];

struct async_res {
	struct test_res r;
	struct fid_eq *eq;
};

static int async_open(struct async_res *a, uint64_t bind_flags, size_t size)
{
	struct fi_eq_attr ea;
	memset(&ea, 0, sizeof(ea));
	ea.size = size;
	ea.wait_obj = FI_WAIT_UNSPEC;
	a->eq = NULL;
	CHECK_OK(test_open(&a->r));
	CHECK_OK(fi_eq_open(a->r.fabric, &ea, &a->eq, NULL));
	CHECK_OK(fi_domain_bind(a->r.domain, &a->eq->fid, bind_flags));
	return 0;
}

static int async_close(struct async_res *a)
{
	CHECK_OK(fi_close(&a->r.domain->fid));
	a->r.domain = NULL;
	CHECK_OK(fi_close(&a->eq->fid));
	return test_close(&a->r);
}

/* Reads one event, which must be FI_MR_COMPLETE for `mr` with `ctx`. */
static int expect_event(struct fid_eq *eq, struct fid_mr *mr, void *ctx)
{
	struct fi_eq_entry e;
	uint32_t event = 0;
	memset(&e, 0, sizeof(e));
	CHECK_RC(fi_eq_read(eq, &event, &e, sizeof(e), 0), sizeof(e));
	CHECK(event == FI_MR_COMPLETE);
	CHECK(e.fid == &mr->fid);
	CHECK(e.context == ctx);
	return 0;
}

static int expect_no_event(struct fid_eq *eq)
{
	struct fi_eq_entry e;
	uint32_t event = 0;
	CHECK_RC(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);
	return 0;
}

/* fi_mr_reg, fi_mr_regv and fi_mr_regattr each make one event, in order. */
static int async_events(void)
{
	struct async_res a;
	struct fid_mr *m1 = NULL, *m2 = NULL, *m3 = NULL;
	int c1, c2, c3;
	struct iovec iov = { buf[1], 64 };
	struct fi_mr_attr at;
	memset(&at, 0, sizeof(at));
	at.mr_iov = &iov;
	at.iov_count = 1;
	at.access = RW;
	at.requested_key = 3;
	at.context = &c3;
	CHECK_OK(async_open(&a, REG_MR, 16));
	CHECK_OK(expect_no_event(a.eq));
	CHECK_OK(fi_mr_reg(a.r.domain, buf[0], 64, RW, 0, 1, 0, &m1, &c1));
	CHECK_OK(fi_mr_regv(a.r.domain, &iov, 1, RW, 0, 2, 0, &m2, &c2));
	CHECK_OK(fi_mr_regattr(a.r.domain, &at, 0, &m3));
	CHECK_OK(expect_event(a.eq, m1, &c1));
	CHECK_OK(expect_event(a.eq, m2, &c2));
	CHECK_OK(expect_event(a.eq, m3, &c3));
	CHECK_OK(expect_no_event(a.eq));
	/* The MRs work as synchronous ones do. */
	CHECK(fi_mr_key(m1) == 1 && fi_mr_key(m2) == 2 && fi_mr_key(m3) == 3);
	CHECK(m1->fid.context == &c1);
	CHECK_OK(fi_close(&m1->fid));
	CHECK_OK(fi_close(&m2->fid));
	CHECK_OK(fi_close(&m3->fid));
	/* Closing makes no event. */
	CHECK_OK(expect_no_event(a.eq));
	return async_close(&a);
}

/* A NULL context is reported as NULL. */
static int async_null_context(void)
{
	struct async_res a;
	struct fid_mr *mr = NULL;
	CHECK_OK(async_open(&a, REG_MR, 4));
	CHECK_OK(fi_mr_reg(a.r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(expect_event(a.eq, mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return async_close(&a);
}

/* A refused registration makes no event. */
static int async_refused_no_event(void)
{
	struct async_res a;
	struct fid_mr *mr = NULL, *bad = NULL;
	int ctx;
	CHECK_OK(async_open(&a, REG_MR, 8));
	CHECK_OK(fi_mr_reg(a.r.domain, buf[0], 64, RW, 0, 1, 0, &mr, &ctx));
	CHECK_OK(expect_event(a.eq, mr, &ctx));
	CHECK_RC(fi_mr_reg(a.r.domain, buf[0], 64, RW, 0, 1, 0, &bad, &ctx), -FI_ENOKEY);
	CHECK_RC(fi_mr_reg(a.r.domain, buf[0], 0, RW, 0, 2, 0, &bad, &ctx), -FI_EINVAL);
	CHECK_RC(fi_mr_reg(a.r.domain, buf[0], 64, RW, 0, 2, 1ULL << 14, &bad, &ctx),
		 -FI_EBADFLAGS);
	CHECK_OK(expect_no_event(a.eq));
	CHECK_OK(fi_close(&mr->fid));
	return async_close(&a);
}

/* Bound without FI_REG_MR: registrations stay synchronous, no events. */
static int bind_without_reg_mr(void)
{
	struct async_res a;
	struct fid_mr *mr = NULL;
	CHECK_OK(async_open(&a, 0, 4));
	CHECK_OK(fi_mr_reg(a.r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(expect_no_event(a.eq));
	CHECK_OK(fi_close(&mr->fid));
	return async_close(&a);
}

#if TEST_HDR_AT_LEAST(2, 0)
/* A sub-MR's registration is reported like any other. */
static int async_sub_mr(void)
{
	struct async_res a;
	struct fid_mr *base = NULL, *sub = NULL;
	int cb, cs;
	struct iovec iov = { buf[0], 8 };
	struct fi_mr_attr at;
	memset(&at, 0, sizeof(at));
	at.mr_iov = &iov;
	at.iov_count = 1;
	at.access = FI_REMOTE_READ;
	at.requested_key = 2;
	at.context = &cs;
	CHECK_OK(async_open(&a, REG_MR, 4));
	CHECK_OK(fi_mr_reg(a.r.domain, buf[0], 64, RW, 0, 1, 0, &base, &cb));
	at.base_mr = base;
	CHECK_OK(fi_mr_regattr(a.r.domain, &at, 0, &sub));
	CHECK_OK(expect_event(a.eq, base, &cb));
	CHECK_OK(expect_event(a.eq, sub, &cs));
	CHECK_OK(fi_close(&sub->fid));
	CHECK_OK(fi_close(&base->fid));
	return async_close(&a);
}
#endif

/* *mr is written before the event can be read: a reader thread that sees
 * the event for slot i finds slot i already holding the event's fid. */
enum { RACE_N = 2000 };

struct race {
	struct fid_eq *eq;
	struct fid_mr *slot[RACE_N];
	int bad, seen;
};

static void *race_reader(void *arg)
{
	struct race *x = arg;
	while (x->seen < RACE_N) {
		struct fi_eq_entry e;
		uint32_t event;
		ssize_t n = fi_eq_sread(x->eq, &event, &e, sizeof(e), 1000, 0);
		if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT)
			continue;
		if (n != (ssize_t)sizeof(e) || event != FI_MR_COMPLETE) {
			x->bad++;
			break;
		}
		struct fid_mr **slot = e.context;
		struct fid_mr *now = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (now == NULL || &now->fid != e.fid)
			x->bad++;
		x->seen++;
	}
	return NULL;
}

static int async_mr_written_before_event(void)
{
	struct async_res a;
	static struct race x;
	pthread_t t;
	memset(&x, 0, sizeof(x));
	CHECK_OK(async_open(&a, REG_MR, 4 * RACE_N));
	x.eq = a.eq;
	CHECK_OK(pthread_create(&t, NULL, race_reader, &x));
	int rc = 0;
	for (int i = 0; i < RACE_N && rc == 0; i++)
		rc = fi_mr_reg(a.r.domain, buf[i % 2], 64, RW, 0, (uint64_t)i, 0, &x.slot[i],
			       &x.slot[i]);
	CHECK_OK(rc);
	CHECK_OK(pthread_join(t, NULL));
	if (x.bad)
		fprintf(stderr, "    %d of %d events came before their *mr\n", x.bad, x.seen);
	CHECK(x.bad == 0);
	CHECK(x.seen == RACE_N);
	for (int i = 0; i < RACE_N; i++)
		CHECK_OK(fi_close(&x.slot[i]->fid));
	return async_close(&a);
}

/* Unknown bind flags are refused, and the EQ stays unbound. */
static int bind_bad_flags(void)
{
	struct test_res r;
	struct fid_eq *eq = NULL;
	struct fid_mr *mr = NULL;
	struct fi_eq_attr ea;
	memset(&ea, 0, sizeof(ea));
	ea.size = 4;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_eq_open(r.fabric, &ea, &eq, NULL));
	CHECK_RC(fi_domain_bind(r.domain, &eq->fid, REG_MR | (1ULL << 14)), -FI_EBADFLAGS);
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(expect_no_event(eq));
	CHECK_OK(fi_close(&mr->fid));
	/* Not bound: the EQ closes before the domain. */
	CHECK_OK(fi_close(&eq->fid));
	return test_close(&r);
}

/* A bound EQ cannot close before its domain. */
static int bound_eq_close_order(void)
{
	struct async_res a;
	CHECK_OK(async_open(&a, REG_MR, 4));
	CHECK_RC(fi_close(&a.eq->fid), -FI_EBUSY);
	return async_close(&a);
}

static const struct test_case cases[] = {
	CASE(async_events),
	CASE(async_null_context),
	CASE(async_refused_no_event),
	CASE(bind_without_reg_mr),
#if TEST_HDR_AT_LEAST(2, 0)
	CASE(async_sub_mr),
#endif
	CASE(async_mr_written_before_event),
	CASE(bind_bad_flags),
	CASE(bound_eq_close_order),
};

TEST_MAIN(cases)
