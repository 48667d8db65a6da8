/*
 * Closing memory regions and their domain: fi_close on a closed MR, calls
 * on a closed MR, a domain with live MRs (-FI_EBUSY and a log line per MR
 * with key, address and length), and the statistics FI_OXSHM_STATS=1
 * writes when a domain closes. Log cases run in a child with FI_LOG_LEVEL
 * and catch their own stderr.
 */
#include "test.h"

#include <pthread.h>

#define WARN "FI_LOG_LEVEL=warn"
#define RW (FI_REMOTE_READ | FI_REMOTE_WRITE)

static char buf[4][4096];

static int saved_fd = -1;
static FILE *capture;

static void capture_begin(void)
{
	fflush(stderr);
	capture = tmpfile();
	if (!capture)
		abort();
	saved_fd = dup(2);
	dup2(fileno(capture), 2);
}

static char *capture_end(void)
{
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	long n = ftell(capture);
	char *text = calloc(1, n > 0 ? (size_t)n + 1 : 1);
	if (!text)
		abort();
	rewind(capture);
	if (n > 0 && fread(text, 1, (size_t)n, capture) != (size_t)n)
		text[0] = '\0';
	fclose(capture);
	return text;
}

/* True when `log` contains `want`; else reports the log. */
static int log_has(const char *log, const char *want)
{
	if (strstr(log, want))
		return 1;
	fprintf(stderr, "    no \"%s\" in the log; stderr was:\n%s", want, log);
	return 0;
}

static int close_twice(void)
{
	struct test_res r;
	struct fid_mr *a = NULL, *b = NULL;
	struct iovec iov[2] = { { buf[0], 10 }, { buf[1], 10 } };
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &a, NULL));
	CHECK_OK(fi_mr_regv(r.domain, iov, 2, RW, 0, 2, 0, &b, NULL));
	CHECK_OK(fi_close(&a->fid));
	CHECK_RC(fi_close(&a->fid), -FI_EINVAL);
	CHECK_RC(fi_close(&a->fid), -FI_EINVAL);
	CHECK_OK(fi_close(&b->fid));
	CHECK_RC(fi_close(&b->fid), -FI_EINVAL);
	return test_close(&r);
}

/* Every call on a closed MR is refused. */
static int closed_mr_calls(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	uint8_t raw[256];
	size_t n = sizeof(raw);
	uint64_t base;
	struct iovec iov = { buf[0], 8 };
	struct fid ep;
	memset(&ep, 0, sizeof(ep));
	ep.fclass = FI_CLASS_EP;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_RC(fi_mr_raw_attr(mr, &base, raw, &n, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_enable(mr), -FI_EINVAL);
	CHECK_RC(fi_mr_refresh(mr, &iov, 1, 0), -FI_EINVAL);
	CHECK_RC(fi_mr_bind(mr, &ep, 0), -FI_EINVAL);
	CHECK_RC(fi_close(&mr->fid), -FI_EINVAL);
	/* Its key is free again. */
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* A domain with live MRs does not close, and stays usable. */
static int close_domain_busy(void)
{
	struct test_res r;
	struct fid_mr *mr[3], *more = NULL;
	CHECK_OK(test_open(&r));
	for (int i = 0; i < 3; i++)
		CHECK_OK(fi_mr_reg(r.domain, buf[i], 100 + i, RW, 0, 10 + i, 0, &mr[i], NULL));
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	CHECK(fi_mr_key(mr[1]) == 11);
	CHECK_OK(fi_mr_reg(r.domain, buf[3], 64, RW, 0, 13, 0, &more, NULL));
	CHECK_OK(fi_close(&more->fid));
	CHECK_OK(fi_close(&mr[0]->fid));
	CHECK_OK(fi_close(&mr[2]->fid));
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&mr[1]->fid));
	return test_close(&r);
}

/* Opens oxshm with FI_MR_VIRT_ADDR offered (kept only where required). */
static int open_virt_ok(struct test_res *r)
{
	struct fi_info *hints = test_hints();
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR;
	memset(r, 0, sizeof(*r));
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &r->info);
	fi_freeinfo(hints);
	CHECK_OK(rc);
	CHECK_OK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	CHECK_OK(fi_domain(r->fabric, r->info, &r->domain, NULL));
	return 0;
}

/* The refused close logs every live MR with its key, address (of the
 * registered buffer) and length. */
static int close_domain_busy_log(void)
{
	struct test_res r;
	struct fid_mr *mr[3];
	size_t len[3] = { 100, 2048, 4096 };
	CHECK_OK(open_virt_ok(&r));
	for (int i = 0; i < 3; i++)
		CHECK_OK(fi_mr_reg(r.domain, buf[i], len[i], RW, 0, 0x70 + i, 0, &mr[i], NULL));
	capture_begin();
	int rc = fi_close(&r.domain->fid);
	char *log = capture_end();
	int ok = 1;
	for (int i = 0; i < 3; i++) {
		char want[128];
		snprintf(want, sizeof(want), "key 0x%x, address 0x%llx, %zu bytes", 0x70 + i,
			 (unsigned long long)(uintptr_t)buf[i], len[i]);
		ok = ok && log_has(log, want);
	}
	ok = ok && log_has(log, "<warn>");
	free(log);
	for (int i = 0; i < 3; i++)
		CHECK_OK(fi_close(&mr[i]->fid));
	CHECK_RC(rc, -FI_EBUSY);
	CHECK_OK(test_close(&r));
	CHECK(ok);
	return 0;
}

/* The same with FI_MR_VIRT_ADDR required (FI_OXSHM_MR_MODE). */
static int close_domain_busy_log_virt_addr(void)
{
	return close_domain_busy_log();
}

/* Many live MRs: the log gives their number. */
static int close_domain_busy_log_many(void)
{
	enum { N = 40 };
	struct test_res r;
	struct fid_mr *mr[N];
	CHECK_OK(test_open(&r));
	for (int i = 0; i < N; i++)
		CHECK_OK(fi_mr_reg(r.domain, buf[0] + i, 8, RW, 0, 0x100 + i, 0, &mr[i], NULL));
	capture_begin();
	int rc = fi_close(&r.domain->fid);
	char *log = capture_end();
	int ok = log_has(log, "40 memory region") && log_has(log, "key 0x1");
	free(log);
	for (int i = 0; i < N; i++)
		CHECK_OK(fi_close(&mr[i]->fid));
	CHECK_RC(rc, -FI_EBUSY);
	CHECK_OK(test_close(&r));
	CHECK(ok);
	return 0;
}

/* A domain whose MRs are all closed closes quietly (no warning). */
static int close_domain_quiet(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	capture_begin();
	int rc = fi_close(&r.domain->fid);
	char *log = capture_end();
	int quiet = strstr(log, "<warn>") == NULL;
	if (!quiet)
		fprintf(stderr, "    unexpected:\n%s", log);
	free(log);
	CHECK_OK(rc);
	r.domain = NULL;
	CHECK(quiet);
	return test_close(&r);
}

#if TEST_HDR_AT_LEAST(2, 0)
/* Live sub-MRs keep the domain open too. */
static int close_domain_busy_sub(void)
{
	struct test_res r;
	struct fid_mr *base = NULL, *sub = NULL;
	struct iovec iov = { buf[0] + 8, 8 };
	struct fi_mr_attr a;
	memset(&a, 0, sizeof(a));
	a.mr_iov = &iov;
	a.iov_count = 1;
	a.access = FI_REMOTE_READ;
	a.requested_key = 2;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &base, NULL));
	a.base_mr = base;
	CHECK_OK(fi_mr_regattr(r.domain, &a, 0, &sub));
	CHECK_RC(fi_close(&base->fid), -FI_EBUSY);
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&sub->fid));
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&base->fid));
	return test_close(&r);
}
#endif

/* MRs close in any order. */
static int close_any_order(void)
{
	enum { N = 1000 };
	struct test_res r;
	struct fid_mr **mr = calloc(N, sizeof(*mr));
	int *order = calloc(N, sizeof(*order));
	CHECK(mr && order);
	CHECK_OK(test_open(&r));
	for (int i = 0; i < N; i++) {
		CHECK_OK(fi_mr_reg(r.domain, buf[i % 4], 64, RW, 0, (uint64_t)i, 0, &mr[i], NULL));
		order[i] = i;
	}
	unsigned s = 12345;
	for (int i = N - 1; i > 0; i--) {
		s = s * 1103515245u + 12345u;
		int j = (int)((s >> 8) % (unsigned)(i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < N; i++) {
		CHECK(fi_mr_key(mr[order[i]]) == (uint64_t)order[i]);
		CHECK_OK(fi_close(&mr[order[i]]->fid));
	}
	free(mr);
	free(order);
	return test_close(&r);
}

struct closer {
	struct fid_mr *mr;
	pthread_barrier_t *go;
	int rc;
};

static void *close_one(void *arg)
{
	struct closer *c = arg;
	pthread_barrier_wait(c->go);
	c->rc = fi_close(&c->mr->fid);
	return NULL;
}

/* Two threads closing the same MR at once: one gets 0, the other
 * -FI_EINVAL, and the key is free afterwards. */
static int close_race(void)
{
	struct test_res r;
	CHECK_OK(test_open(&r));
	for (int round = 0; round < 1000; round++) {
		struct fid_mr *mr = NULL;
		pthread_barrier_t go;
		struct closer c[2];
		pthread_t t[2];
		CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 7, 0, &mr, NULL));
		CHECK_OK(pthread_barrier_init(&go, NULL, 2));
		for (int i = 0; i < 2; i++) {
			c[i].mr = mr;
			c[i].go = &go;
			CHECK_OK(pthread_create(&t[i], NULL, close_one, &c[i]));
		}
		for (int i = 0; i < 2; i++)
			CHECK_OK(pthread_join(t[i], NULL));
		pthread_barrier_destroy(&go);
		int ok = (c[0].rc == 0) + (c[1].rc == 0);
		int inval = (c[0].rc == -FI_EINVAL) + (c[1].rc == -FI_EINVAL);
		if (ok != 1 || inval != 1)
			fprintf(stderr, "    round %d: closes returned %d and %d\n", round, c[0].rc,
				c[1].rc);
		CHECK(ok == 1 && inval == 1);
	}
	return test_close(&r);
}

/* FI_OXSHM_STATS=1: the domain's statistics are logged when it closes. */
static int stats_at_close(void)
{
	struct test_res r;
	struct fid_mr *mr[3], *bad = NULL;
	CHECK_OK(test_open(&r));
	for (int i = 0; i < 3; i++)
		CHECK_OK(fi_mr_reg(r.domain, buf[i], 64, RW, 0, 1 + i, 0, &mr[i], NULL));
	/* One refusal before the engine, one by it. */
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 9, 1ULL << 14, &bad, NULL), -FI_EBADFLAGS);
	CHECK_RC(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &bad, NULL), -FI_ENOKEY);
	for (int i = 0; i < 3; i++)
		CHECK_OK(fi_close(&mr[i]->fid));
	capture_begin();
	int rc = fi_close(&r.domain->fid);
	char *log = capture_end();
	int ok = log_has(log, "domain statistics") && log_has(log, "3 registrations") &&
		 log_has(log, "3 closes") && log_has(log, "2 refused") &&
		 log_has(log, "0 live MRs");
	free(log);
	CHECK_OK(rc);
	r.domain = NULL;
	CHECK(ok);
	return test_close(&r);
}

/* Without FI_OXSHM_STATS no statistics are written (even at log level
 * info). */
static int no_stats_by_default(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf[0], 64, RW, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	capture_begin();
	int rc = fi_close(&r.domain->fid);
	char *log = capture_end();
	int none = strstr(log, "domain statistics") == NULL;
	free(log);
	CHECK_OK(rc);
	r.domain = NULL;
	CHECK(none);
	return test_close(&r);
}

/* Two threads registering and closing on one domain: a close must never
 * mark the other thread's new MR (which may reuse the freed slot) closed. */
struct churn {
	struct fid_domain *domain;
	char *buf;
	int iters;
	int bad;
	uint64_t key_base; /* distinct requested keys per thread */
};

static void *churn_thread(void *arg)
{
	struct churn *c = arg;
	for (int i = 0; i < c->iters; i++) {
		struct fid_mr *mr = NULL;
		if (fi_mr_reg(c->domain, c->buf, 64, FI_REMOTE_READ, 0, c->key_base + (uint64_t)i, 0,
			      &mr, NULL)) {
			c->bad++;
			continue;
		}
		if (mr->fid.fclass != FI_CLASS_MR)
			c->bad++;
		if (fi_close(&mr->fid))
			c->bad++;
	}
	return NULL;
}

static int concurrent_reg_close_churn(void)
{
	struct test_res r;
	static char bufs[2][4096];
	struct churn c[2];
	pthread_t th[2];
	int scale = getenv("OX_TEST_SCALE") ? atoi(getenv("OX_TEST_SCALE")) : 100;
	CHECK_OK(test_open(&r));
	for (int t = 0; t < 2; t++) {
		c[t] = (struct churn){ r.domain, bufs[t], 2000 * (scale > 0 ? scale : 1), 0,
				       ((uint64_t)t + 1) << 32 };
		CHECK(pthread_create(&th[t], NULL, churn_thread, &c[t]) == 0);
	}
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	CHECK(c[0].bad == 0 && c[1].bad == 0);
	/* Nothing leaked: the domain closes. */
	return test_close(&r);
}

static const struct test_case cases[] = {
	CASE(concurrent_reg_close_churn),
	CASE(close_twice),
	CASE(closed_mr_calls),
	CASE(close_domain_busy),
	CASE_ENV(close_domain_busy_log, WARN),
	CASE_ENV(close_domain_busy_log_virt_addr, WARN " FI_OXSHM_MR_MODE=FI_MR_VIRT_ADDR"),
	CASE_ENV(close_domain_busy_log_many, WARN),
	CASE_ENV(close_domain_quiet, WARN),
#if TEST_HDR_AT_LEAST(2, 0)
	CASE(close_domain_busy_sub),
#endif
	CASE(close_any_order),
	CASE(close_race),
	CASE_ENV(stats_at_close, "FI_OXSHM_STATS=1"),
	CASE_ENV(no_stats_by_default, "FI_LOG_LEVEL=info"),
};

TEST_MAIN(cases)
