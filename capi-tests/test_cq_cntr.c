/*
 * Completion queues and counters: fi_cq_open, read, readerr, sread, signal,
 * strerror, FI_GETWAIT; fi_cntr_open, add, set, adderr, seterr, read,
 * readerr, wait; close order against the domain; bad attributes.
 *
 * Completions themselves come from the data path, which C cannot drive yet:
 * their formats and ordering are covered by the Rust tests in
 * src/prov/oxshm/cq.rs.
 */
#include "test.h"

#include <poll.h>
#include <pthread.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000 * 1000 };
	nanosleep(&d, NULL);
}

static struct fi_cq_attr cq_attr(enum fi_cq_format format, enum fi_wait_obj wait_obj)
{
	struct fi_cq_attr a;
	memset(&a, 0, sizeof(a));
	a.format = format;
	a.wait_obj = wait_obj;
	return a;
}

static struct fi_cntr_attr cntr_attr(enum fi_wait_obj wait_obj)
{
	struct fi_cntr_attr a;
	memset(&a, 0, sizeof(a));
	a.events = FI_CNTR_EVENTS_COMP;
	a.wait_obj = wait_obj;
	return a;
}

struct cq_res {
	struct test_res r;
	struct fid_cq *cq;
};

static int cq_open(struct cq_res *c, enum fi_wait_obj wait_obj)
{
	struct fi_cq_attr a = cq_attr(FI_CQ_FORMAT_CONTEXT, wait_obj);
	c->cq = NULL;
	CHECK_OK(test_open(&c->r));
	CHECK_OK(fi_cq_open(c->r.domain, &a, &c->cq, &c->r));
	CHECK(c->cq != NULL);
	return 0;
}

static int cq_close(struct cq_res *c)
{
	if (c->cq)
		CHECK_OK(fi_close(&c->cq->fid));
	return test_close(&c->r);
}

struct cntr_res {
	struct test_res r;
	struct fid_cntr *cntr;
};

static int cntr_open(struct cntr_res *c, enum fi_wait_obj wait_obj)
{
	struct fi_cntr_attr a = cntr_attr(wait_obj);
	c->cntr = NULL;
	CHECK_OK(test_open(&c->r));
	CHECK_OK(fi_cntr_open(c->r.domain, &a, &c->cntr, &c->r));
	CHECK(c->cntr != NULL);
	return 0;
}

static int cntr_close(struct cntr_res *c)
{
	if (c->cntr)
		CHECK_OK(fi_close(&c->cntr->fid));
	return test_close(&c->r);
}

static int fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* ---- completion queues ---- */

static int cq_open_close(void)
{
	enum fi_cq_format formats[] = { FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT,
					FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA,
					FI_CQ_FORMAT_TAGGED };
	struct test_res r;
	CHECK_OK(test_open(&r));
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct fi_cq_attr a = cq_attr(formats[i], FI_WAIT_UNSPEC);
		struct fid_cq *cq = NULL;
		a.size = 16;
		CHECK_OK(fi_cq_open(r.domain, &a, &cq, &r));
		CHECK(cq != NULL);
		CHECK(cq->fid.fclass == FI_CLASS_CQ);
		CHECK(cq->fid.context == &r);
		CHECK(cq->ops != NULL);
		CHECK_OK(fi_close(&cq->fid));
	}
	return test_close(&r);
}

static int cq_open_null_args(void)
{
	struct test_res r;
	struct fi_cq_attr a = cq_attr(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	struct fid_cq *cq = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_cq_open(r.domain, &a, NULL, NULL), -FI_EINVAL);
	CHECK_RC(fi_cq_open(r.domain, NULL, &cq, NULL), -FI_EINVAL);
	CHECK(cq == NULL);
	return test_close(&r);
}

static int cq_bad_attrs(void)
{
	struct test_res r;
	struct fid_cq *cq = NULL;
	struct fi_cq_attr a;
	CHECK_OK(test_open(&r));
	a = cq_attr(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	a.format = (enum fi_cq_format)99;
	CHECK_RC(fi_cq_open(r.domain, &a, &cq, NULL), -FI_EINVAL);
	a = cq_attr(FI_CQ_FORMAT_CONTEXT, FI_WAIT_SET);
	CHECK_RC(fi_cq_open(r.domain, &a, &cq, NULL), -FI_ENOSYS);
	a = cq_attr(FI_CQ_FORMAT_CONTEXT, FI_WAIT_MUTEX_COND);
	CHECK_RC(fi_cq_open(r.domain, &a, &cq, NULL), -FI_ENOSYS);
	a = cq_attr(FI_CQ_FORMAT_CONTEXT, (enum fi_wait_obj)77);
	CHECK_RC(fi_cq_open(r.domain, &a, &cq, NULL), -FI_ENOSYS);
	a = cq_attr(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	a.flags = FI_WRITE;
	CHECK_RC(fi_cq_open(r.domain, &a, &cq, NULL), -FI_EBADFLAGS);
	a = cq_attr(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC);
	a.wait_cond = (enum fi_cq_wait_cond)7;
	CHECK_RC(fi_cq_open(r.domain, &a, &cq, NULL), -FI_EINVAL);
#if TEST_HDR_AT_LEAST(2, 7)
	a = cq_attr(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	a.flags = FI_XPU;
	CHECK_RC(fi_cq_open(r.domain, &a, &cq, NULL), -FI_ENOSYS);
#endif
	CHECK(cq == NULL);
	/* FI_AFFINITY is a hint, and a size of 0 picks the default. */
	a = cq_attr(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE);
	a.flags = FI_AFFINITY;
	a.signaling_vector = 0;
	CHECK_OK(fi_cq_open(r.domain, &a, &cq, NULL));
	CHECK_OK(fi_close(&cq->fid));
	return test_close(&r);
}

static int cq_read_empty(void)
{
	struct cq_res c;
	struct fi_cq_entry e[4];
	struct fi_cq_err_entry err;
	fi_addr_t src[4];
	CHECK_OK(cq_open(&c, FI_WAIT_UNSPEC));
	CHECK_RC(fi_cq_read(c.cq, e, 4), -FI_EAGAIN);
	CHECK_RC(fi_cq_readfrom(c.cq, e, 4, src), -FI_EAGAIN);
	memset(&err, 0, sizeof(err));
	CHECK_RC(fi_cq_readerr(c.cq, &err, 0), -FI_EAGAIN);
	CHECK_RC(fi_cq_readerr(c.cq, &err, FI_PEEK), -FI_EAGAIN);
	/* A NULL buffer with a count is refused; count 0 just polls. */
	CHECK_RC(fi_cq_read(c.cq, NULL, 1), -FI_EINVAL);
	CHECK_RC(fi_cq_read(c.cq, NULL, 0), -FI_EAGAIN);
	return cq_close(&c);
}

static int cq_close_order(void)
{
	struct cq_res c;
	CHECK_OK(cq_open(&c, FI_WAIT_NONE));
	CHECK_RC(fi_close(&c.r.domain->fid), -FI_EBUSY);
	/* The refused close changed nothing: the CQ still works. */
	struct fi_cq_entry e;
	CHECK_RC(fi_cq_read(c.cq, &e, 1), -FI_EAGAIN);
	CHECK_OK(fi_close(&c.cq->fid));
	c.cq = NULL;
	return cq_close(&c);
}

static int cq_sread_timeout(void)
{
	struct cq_res c;
	struct fi_cq_entry e;
	CHECK_OK(cq_open(&c, FI_WAIT_UNSPEC));
	double t0 = now_ms();
	CHECK_RC(fi_cq_sread(c.cq, &e, 1, NULL, 100), -FI_EAGAIN);
	double waited = now_ms() - t0;
	/* Coarse: it slept rather than spun out, and it did come back. */
	if (waited < 90 || waited > 5000)
		fprintf(stderr, "    sread waited %.1f ms for a 100 ms timeout\n", waited);
	CHECK(waited >= 90 && waited <= 5000);
	t0 = now_ms();
	CHECK_RC(fi_cq_sread(c.cq, &e, 1, NULL, 0), -FI_EAGAIN);
	CHECK(now_ms() - t0 < 2500);
	return cq_close(&c);
}

static void *late_signal(void *arg)
{
	sleep_ms(50);
	return (void *)(intptr_t)fi_cq_signal(arg);
}

/* fi_cq_signal wakes a blocked sread, which returns -FI_EAGAIN (as
 * libfabric's util CQ does). */
static int cq_sread_signal(void)
{
	struct cq_res c;
	struct fi_cq_entry e;
	pthread_t t;
	void *trc;
	CHECK_OK(cq_open(&c, FI_WAIT_UNSPEC));
	CHECK(pthread_create(&t, NULL, late_signal, c.cq) == 0);
	double t0 = now_ms();
	ssize_t rc = fi_cq_sread(c.cq, &e, 1, NULL, 20000);
	double waited = now_ms() - t0;
	CHECK(pthread_join(t, &trc) == 0);
	CHECK(trc == NULL);
	CHECK_RC(rc, -FI_EAGAIN);
	CHECK(waited < 10000);
	/* A signal nobody waited for ends the next blocking read at once. */
	CHECK_OK(fi_cq_signal(c.cq));
	t0 = now_ms();
	CHECK_RC(fi_cq_sread(c.cq, &e, 1, NULL, 20000), -FI_EAGAIN);
	CHECK(now_ms() - t0 < 10000);
	return cq_close(&c);
}

static int cq_threshold_sread(void)
{
	struct test_res r;
	struct fid_cq *cq = NULL;
	struct fi_cq_attr a = cq_attr(FI_CQ_FORMAT_MSG, FI_WAIT_UNSPEC);
	struct fi_cq_msg_entry e[4];
	a.wait_cond = FI_CQ_COND_THRESHOLD;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_cq_open(r.domain, &a, &cq, NULL));
	/* The threshold is the value of cond; nothing arrives, so it times out. */
	CHECK_RC(fi_cq_sread(cq, e, 4, (void *)(uintptr_t)2, 20), -FI_EAGAIN);
	CHECK_OK(fi_close(&cq->fid));
	return test_close(&r);
}

static int cq_wait_none(void)
{
	struct cq_res c;
	struct fi_cq_entry e;
	int fd = -1;
	enum fi_wait_obj obj = FI_WAIT_FD;
	CHECK_OK(cq_open(&c, FI_WAIT_NONE));
	CHECK_RC(fi_cq_sread(c.cq, &e, 1, NULL, 0), -FI_ENOSYS);
	CHECK_RC(fi_cq_signal(c.cq), -FI_ENOSYS);
	CHECK_RC(fi_control(&c.cq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	CHECK(fd == -1);
	CHECK_OK(fi_control(&c.cq->fid, FI_GETWAITOBJ, &obj));
	CHECK(obj == FI_WAIT_NONE);
	CHECK_RC(fi_control(&c.cq->fid, 12345, NULL), -FI_ENOSYS);
	return cq_close(&c);
}

static int cq_getwait_fd(void)
{
	struct cq_res c;
	struct fi_cq_entry e;
	int fd = -1;
	enum fi_wait_obj obj = FI_WAIT_NONE;
	CHECK_OK(cq_open(&c, FI_WAIT_FD));
	CHECK_OK(fi_control(&c.cq->fid, FI_GETWAIT, &fd));
	CHECK(fd >= 0);
	CHECK_OK(fi_control(&c.cq->fid, FI_GETWAITOBJ, &obj));
	CHECK(obj == FI_WAIT_FD);
	CHECK_RC(fi_control(&c.cq->fid, FI_GETWAIT, NULL), -FI_EINVAL);
	CHECK(!fd_readable(fd));
	/* A signal makes the fd readable until a read consumes it. */
	CHECK_OK(fi_cq_signal(c.cq));
	struct pollfd p = { .fd = fd, .events = POLLIN };
	CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLIN));
	CHECK_RC(fi_cq_read(c.cq, &e, 1), -FI_EAGAIN);
	CHECK(!fd_readable(fd));
	return cq_close(&c);
}

static int cq_readerr_bad_args(void)
{
	struct cq_res c;
	struct fi_cq_err_entry err;
	CHECK_OK(cq_open(&c, FI_WAIT_NONE));
	CHECK_RC(fi_cq_readerr(c.cq, NULL, 0), -FI_EINVAL);
	memset(&err, 0, sizeof(err));
	CHECK_RC(fi_cq_readerr(c.cq, &err, 1ULL << 62), -FI_EBADFLAGS);
	return cq_close(&c);
}

static int cq_strerror_text(void)
{
	struct cq_res c;
	char buf[128];
	CHECK_OK(cq_open(&c, FI_WAIT_NONE));
	memset(buf, 'x', sizeof(buf));
	const char *s = fi_cq_strerror(c.cq, FI_EACCES, NULL, buf, sizeof(buf));
	CHECK(s != NULL && s[0] != '\0');
	CHECK(memchr(buf, '\0', sizeof(buf)) != NULL);
	CHECK_STR(buf, s);
	CHECK_STR(buf, fi_strerror(FI_EACCES));
	s = fi_cq_strerror(c.cq, FI_EKEYREJECTED, NULL, NULL, 0);
	CHECK(s != NULL && s[0] != '\0');
	return cq_close(&c);
}

/* A bad attribute is logged, as every refused call is. */
static int cq_bad_attr_logged(void)
{
	struct test_res r;
	struct fid_cq *cq = NULL;
	struct fi_cq_attr a = cq_attr((enum fi_cq_format)99, FI_WAIT_NONE);
	char text[4096];
	CHECK_OK(test_open(&r));
	FILE *cap = tmpfile();
	CHECK(cap != NULL);
	fflush(stderr);
	int saved = dup(2);
	dup2(fileno(cap), 2);
	int rc = fi_cq_open(r.domain, &a, &cq, NULL);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(cap);
	size_t n = fread(text, 1, sizeof(text) - 1, cap);
	text[n] = '\0';
	fclose(cap);
	CHECK_RC(rc, -FI_EINVAL);
	if (!strstr(text, "oxshm") || !strstr(text, "format"))
		fprintf(stderr, "    log was: %s\n", text);
	CHECK(strstr(text, "oxshm") && strstr(text, "format"));
	return test_close(&r);
}

/* ---- counters ---- */

static int cntr_open_close(void)
{
	struct cntr_res c;
	CHECK_OK(cntr_open(&c, FI_WAIT_UNSPEC));
	CHECK(c.cntr->fid.fclass == FI_CLASS_CNTR);
	CHECK(c.cntr->fid.context == &c.r);
	CHECK(c.cntr->ops != NULL);
	CHECK(fi_cntr_read(c.cntr) == 0);
	CHECK(fi_cntr_readerr(c.cntr) == 0);
	return cntr_close(&c);
}

static int cntr_bad_attrs(void)
{
	struct test_res r;
	struct fid_cntr *cntr = NULL;
	struct fi_cntr_attr a;
	CHECK_OK(test_open(&r));
	a = cntr_attr(FI_WAIT_NONE);
	CHECK_RC(fi_cntr_open(r.domain, NULL, &cntr, NULL), -FI_EINVAL);
	CHECK_RC(fi_cntr_open(r.domain, &a, NULL, NULL), -FI_EINVAL);
	a.events = (enum fi_cntr_events)9;
	CHECK_RC(fi_cntr_open(r.domain, &a, &cntr, NULL), -FI_EINVAL);
	a = cntr_attr(FI_WAIT_SET);
	CHECK_RC(fi_cntr_open(r.domain, &a, &cntr, NULL), -FI_ENOSYS);
	a = cntr_attr(FI_WAIT_MUTEX_COND);
	CHECK_RC(fi_cntr_open(r.domain, &a, &cntr, NULL), -FI_ENOSYS);
	a = cntr_attr(FI_WAIT_NONE);
	a.flags = FI_AFFINITY;
	CHECK_RC(fi_cntr_open(r.domain, &a, &cntr, NULL), -FI_EBADFLAGS);
#if TEST_HDR_AT_LEAST(2, 7)
	a = cntr_attr(FI_WAIT_NONE);
	a.flags = FI_XPU;
	CHECK_RC(fi_cntr_open(r.domain, &a, &cntr, NULL), -FI_ENOSYS);
#endif
	CHECK(cntr == NULL);
	return test_close(&r);
}

/* Byte counters exist from API 2.0; before that the value is no event. */
static int cntr_events_bytes(void)
{
	struct test_res r;
	struct fid_cntr *cntr = NULL;
	struct fi_cntr_attr a = cntr_attr(FI_WAIT_NONE);
	a.events = (enum fi_cntr_events)1;
	CHECK_OK(test_open(&r));
#if TEST_HDR_AT_LEAST(2, 0)
	CHECK(a.events == FI_CNTR_EVENTS_BYTES);
	CHECK_OK(fi_cntr_open(r.domain, &a, &cntr, NULL));
	CHECK_OK(fi_cntr_add(cntr, 4096));
	CHECK(fi_cntr_read(cntr) == 4096);
	CHECK_OK(fi_close(&cntr->fid));
#else
	CHECK_RC(fi_cntr_open(r.domain, &a, &cntr, NULL), -FI_EINVAL);
	CHECK(cntr == NULL);
#endif
	return test_close(&r);
}

static int cntr_add_set_read(void)
{
	struct cntr_res c;
	CHECK_OK(cntr_open(&c, FI_WAIT_NONE));
	CHECK_OK(fi_cntr_add(c.cntr, 5));
	CHECK_OK(fi_cntr_add(c.cntr, 7));
	CHECK(fi_cntr_read(c.cntr) == 12);
	CHECK_OK(fi_cntr_set(c.cntr, 1000));
	CHECK(fi_cntr_read(c.cntr) == 1000);
	CHECK_OK(fi_cntr_set(c.cntr, 0));
	CHECK(fi_cntr_read(c.cntr) == 0);
	/* Errors count apart from completions. */
	CHECK_OK(fi_cntr_adderr(c.cntr, 2));
	CHECK_OK(fi_cntr_adderr(c.cntr, 1));
	CHECK(fi_cntr_readerr(c.cntr) == 3);
	CHECK(fi_cntr_read(c.cntr) == 0);
	CHECK_OK(fi_cntr_seterr(c.cntr, 40));
	CHECK(fi_cntr_readerr(c.cntr) == 40);
	CHECK_OK(fi_cntr_seterr(c.cntr, 0));
	CHECK(fi_cntr_readerr(c.cntr) == 0);
	/* A uint64_t wraps. */
	CHECK_OK(fi_cntr_set(c.cntr, UINT64_MAX));
	CHECK_OK(fi_cntr_add(c.cntr, 2));
	CHECK(fi_cntr_read(c.cntr) == 1);
	return cntr_close(&c);
}

static int cntr_close_order(void)
{
	struct cntr_res c;
	CHECK_OK(cntr_open(&c, FI_WAIT_UNSPEC));
	CHECK_RC(fi_close(&c.r.domain->fid), -FI_EBUSY);
	CHECK_OK(fi_cntr_add(c.cntr, 1));
	CHECK(fi_cntr_read(c.cntr) == 1);
	CHECK_OK(fi_close(&c.cntr->fid));
	c.cntr = NULL;
	return cntr_close(&c);
}

static int cntr_wait_timeout(void)
{
	struct cntr_res c;
	CHECK_OK(cntr_open(&c, FI_WAIT_UNSPEC));
	CHECK_OK(fi_cntr_wait(c.cntr, 0, 0));
	double t0 = now_ms();
	CHECK_RC(fi_cntr_wait(c.cntr, 1, 100), -FI_ETIMEDOUT);
	double waited = now_ms() - t0;
	if (waited < 90 || waited > 5000)
		fprintf(stderr, "    wait took %.1f ms for a 100 ms timeout\n", waited);
	CHECK(waited >= 90 && waited <= 5000);
	CHECK_OK(fi_cntr_add(c.cntr, 3));
	t0 = now_ms();
	CHECK_OK(fi_cntr_wait(c.cntr, 3, 5000));
	CHECK(now_ms() - t0 < 2500);
	return cntr_close(&c);
}

struct late_op {
	struct fid_cntr *cntr;
	int err;
	int rc;
};

static void *late_add(void *arg)
{
	struct late_op *op = arg;
	for (int i = 0; i < 3; i++) {
		sleep_ms(20);
		op->rc = op->err ? fi_cntr_adderr(op->cntr, 1) : fi_cntr_add(op->cntr, 1);
		if (op->rc)
			break;
	}
	return NULL;
}

/* A blocked wait wakes when another thread adds (a real wait object). */
static int cntr_wait_woken_by_add(void)
{
	struct cntr_res c;
	pthread_t t;
	CHECK_OK(cntr_open(&c, FI_WAIT_UNSPEC));
	struct late_op op = { c.cntr, 0, -1 };
	CHECK(pthread_create(&t, NULL, late_add, &op) == 0);
	double t0 = now_ms();
	int rc = fi_cntr_wait(c.cntr, 3, 20000);
	double waited = now_ms() - t0;
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_OK(op.rc);
	CHECK_OK(rc);
	CHECK(fi_cntr_read(c.cntr) == 3);
	CHECK(waited < 10000);
	return cntr_close(&c);
}

/* A change of the error count ends the wait with -FI_EAVAIL. */
static int cntr_wait_error(void)
{
	struct cntr_res c;
	pthread_t t;
	CHECK_OK(cntr_open(&c, FI_WAIT_UNSPEC));
	struct late_op op = { c.cntr, 1, -1 };
	CHECK(pthread_create(&t, NULL, late_add, &op) == 0);
	int rc = fi_cntr_wait(c.cntr, 100, 20000);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_OK(op.rc);
	CHECK_RC(rc, -FI_EAVAIL);
	CHECK(fi_cntr_readerr(c.cntr) >= 1);
	CHECK(fi_cntr_read(c.cntr) == 0);
	return cntr_close(&c);
}

static int cntr_getwait_fd(void)
{
	struct cntr_res c;
	int fd = -1;
	enum fi_wait_obj obj = FI_WAIT_NONE;
	CHECK_OK(cntr_open(&c, FI_WAIT_FD));
	CHECK_OK(fi_control(&c.cntr->fid, FI_GETWAIT, &fd));
	CHECK(fd >= 0);
	CHECK_OK(fi_control(&c.cntr->fid, FI_GETWAITOBJ, &obj));
	CHECK(obj == FI_WAIT_FD);
	CHECK(!fd_readable(fd));
	CHECK_OK(fi_cntr_add(c.cntr, 1));
	CHECK(fd_readable(fd));
	/* Reading the counter re-arms the fd for the next change. */
	CHECK(fi_cntr_read(c.cntr) == 1);
	CHECK(!fd_readable(fd));
	CHECK_OK(fi_cntr_adderr(c.cntr, 1));
	CHECK(fd_readable(fd));
	CHECK(fi_cntr_readerr(c.cntr) == 1);
	CHECK(!fd_readable(fd));
	return cntr_close(&c);
}

static int cntr_getwait_none(void)
{
	struct cntr_res c;
	int fd = -1;
	CHECK_OK(cntr_open(&c, FI_WAIT_NONE));
	CHECK_RC(fi_control(&c.cntr->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	CHECK(fd == -1);
	return cntr_close(&c);
}

/* fi_trywait takes CQs and counters as well as EQs. */
static int trywait_cq_cntr(void)
{
	struct cq_res c;
	struct fid_cntr *cntr = NULL;
	struct fi_cntr_attr ca = cntr_attr(FI_WAIT_FD);
	CHECK_OK(cq_open(&c, FI_WAIT_FD));
	CHECK_OK(fi_cntr_open(c.r.domain, &ca, &cntr, NULL));
	struct fid *fids[2] = { &c.cq->fid, &cntr->fid };
	CHECK_OK(fi_trywait(c.r.fabric, fids, 2));
	CHECK_OK(fi_close(&cntr->fid));
	return cq_close(&c);
}

static const struct test_case cases[] = {
	CASE(cq_open_close),
	CASE(trywait_cq_cntr),
	CASE(cq_open_null_args),
	CASE(cq_bad_attrs),
	CASE(cq_read_empty),
	CASE(cq_close_order),
	CASE(cq_sread_timeout),
	CASE(cq_sread_signal),
	CASE(cq_threshold_sread),
	CASE(cq_wait_none),
	CASE(cq_getwait_fd),
	CASE(cq_readerr_bad_args),
	CASE(cq_strerror_text),
	CASE_ENV(cq_bad_attr_logged, "FI_LOG_LEVEL=warn"),
	CASE(cntr_open_close),
	CASE(cntr_bad_attrs),
	CASE(cntr_events_bytes),
	CASE(cntr_add_set_read),
	CASE(cntr_close_order),
	CASE(cntr_wait_timeout),
	CASE(cntr_wait_woken_by_add),
	CASE(cntr_wait_error),
	CASE(cntr_getwait_fd),
	CASE(cntr_getwait_none),
};

TEST_MAIN(cases)
