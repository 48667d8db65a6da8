/* Event queues: fi_eq_open, write, read, readerr, sread, strerror, bind. */
#include "test.h"

#include <pthread.h>
#include <time.h>

struct eq_res {
	struct test_res r;
	struct fid_eq *eq;
};

static int eq_open(struct eq_res *e, enum fi_wait_obj wait_obj)
{
	struct fi_eq_attr a;
	memset(&a, 0, sizeof(a));
	a.size = 8;
	a.flags = FI_WRITE;
	a.wait_obj = wait_obj;
	e->eq = NULL;
	CHECK_OK(test_open(&e->r));
	CHECK_OK(fi_eq_open(e->r.fabric, &a, &e->eq, &e->r));
	CHECK(e->eq != NULL);
	return 0;
}

static int eq_close(struct eq_res *e)
{
	if (e->eq)
		CHECK_OK(fi_close(&e->eq->fid));
	return test_close(&e->r);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct fi_eq_entry entry(void *fid, void *ctx, uint64_t data)
{
	struct fi_eq_entry e;
	memset(&e, 0, sizeof(e));
	e.fid = fid;
	e.context = ctx;
	e.data = data;
	return e;
}

static int open_close(void)
{
	struct eq_res e;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	CHECK(e.eq->fid.fclass == FI_CLASS_EQ);
	CHECK(e.eq->fid.context == &e.r);
	CHECK(e.eq->ops != NULL);
	return eq_close(&e);
}

static int open_null_args(void)
{
	struct test_res r;
	struct fi_eq_attr a;
	struct fid_eq *eq = NULL;
	memset(&a, 0, sizeof(a));
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_eq_open(r.fabric, &a, NULL, NULL), -FI_EINVAL);
	CHECK_RC(fi_eq_open(r.fabric, NULL, &eq, NULL), -FI_EINVAL);
	CHECK(eq == NULL);
	return test_close(&r);
}

static int read_empty(void)
{
	struct eq_res e;
	struct fi_eq_entry got;
	uint32_t event = 12345;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	CHECK_RC(fi_eq_read(e.eq, &event, &got, sizeof(got), 0), -FI_EAGAIN);
	CHECK(event == 12345);
	return eq_close(&e);
}

static int write_then_read(void)
{
	struct eq_res e;
	int ctx;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	struct fi_eq_entry in = entry(&e.r.domain->fid, &ctx, 0xfeedfacecafebeefULL), out;
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	uint32_t event = 12345;
	memset(&out, 0, sizeof(out));
	CHECK_RC(fi_eq_read(e.eq, &event, &out, sizeof(out), 0), sizeof(out));
	CHECK(event == FI_NOTIFY);
	CHECK(out.fid == &e.r.domain->fid);
	CHECK(out.context == &ctx);
	CHECK(out.data == 0xfeedfacecafebeefULL);
	CHECK_RC(fi_eq_read(e.eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);
	return eq_close(&e);
}

static int fifo_order(void)
{
	struct eq_res e;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	uint32_t events[] = { FI_NOTIFY, FI_MR_COMPLETE, FI_AV_COMPLETE };
	for (uint64_t i = 0; i < 3; i++) {
		struct fi_eq_entry in = entry(NULL, NULL, i + 100);
		CHECK_RC(fi_eq_write(e.eq, events[i], &in, sizeof(in), 0), sizeof(in));
	}
	for (uint64_t i = 0; i < 3; i++) {
		struct fi_eq_entry out;
		uint32_t event;
		CHECK_RC(fi_eq_read(e.eq, &event, &out, sizeof(out), 0), sizeof(out));
		CHECK(event == events[i]);
		CHECK(out.data == i + 100);
	}
	return eq_close(&e);
}

static int read_peek(void)
{
	struct eq_res e;
	struct fi_eq_entry in = entry(NULL, NULL, 42), out;
	uint32_t event;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	CHECK_RC(fi_eq_read(e.eq, &event, &out, sizeof(out), FI_PEEK), sizeof(out));
	CHECK(out.data == 42);
	memset(&out, 0, sizeof(out));
	CHECK_RC(fi_eq_read(e.eq, &event, &out, sizeof(out), 0), sizeof(out));
	CHECK(out.data == 42);
	CHECK_RC(fi_eq_read(e.eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);
	return eq_close(&e);
}

/* No error was queued: readerr has nothing to give. */
static int readerr_empty(void)
{
	struct eq_res e;
	struct fi_eq_err_entry err;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	memset(&err, 0, sizeof(err));
	CHECK_RC(fi_eq_readerr(e.eq, &err, 0), -FI_EAGAIN);
	/* A normal entry does not show up as an error. */
	struct fi_eq_entry in = entry(NULL, NULL, 1);
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	CHECK_RC(fi_eq_readerr(e.eq, &err, 0), -FI_EAGAIN);
	return eq_close(&e);
}

/* oxshm's provider-specific fi_eq_write flag (bit 60): queue an error entry. */
#define OXSHM_EQ_ERR (1ULL << 60)

static int readerr_entry(void)
{
	struct eq_res e;
	struct fi_eq_err_entry in, out;
	struct fi_eq_entry ev;
	uint32_t event = 0;
	char detail[] = "detail";
	char small[3];
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	memset(&in, 0, sizeof(in));
	in.fid = &e.eq->fid;
	in.context = &e;
	in.data = 42;
	in.err = FI_EIO;
	in.prov_errno = FI_EIO;
	in.err_data = detail;
	in.err_data_size = sizeof(detail);
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), OXSHM_EQ_ERR), sizeof(in));
	/* A pending error blocks normal reads and wakes sread. */
	CHECK_RC(fi_eq_read(e.eq, &event, &ev, sizeof(ev), 0), -FI_EAVAIL);
	CHECK_RC(fi_eq_sread(e.eq, &event, &ev, sizeof(ev), 1000, 0), -FI_EAVAIL);
	/* A caller-supplied err_data buffer gets as much as fits. */
	memset(&out, 0, sizeof(out));
	out.err_data = small;
	out.err_data_size = sizeof(small);
	CHECK_RC(fi_eq_readerr(e.eq, &out, FI_PEEK), sizeof(out));
	CHECK(out.err_data == small && out.err_data_size == sizeof(small));
	CHECK(memcmp(small, "det", 3) == 0);
	/* Without one, err_data points at the library's copy. */
	memset(&out, 0, sizeof(out));
	CHECK_RC(fi_eq_readerr(e.eq, &out, 0), sizeof(out));
	CHECK(out.fid == &e.eq->fid && out.context == &e && out.data == 42);
	CHECK(out.err == FI_EIO && out.prov_errno == FI_EIO);
	CHECK(out.err_data_size == sizeof(detail));
	CHECK(out.err_data && strcmp(out.err_data, "detail") == 0);
	CHECK(fi_eq_strerror(e.eq, out.prov_errno, out.err_data, NULL, 0) != NULL);
	CHECK_RC(fi_eq_readerr(e.eq, &out, 0), -FI_EAGAIN);
	CHECK_RC(fi_eq_read(e.eq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);
	/* A short error entry and unknown flags are refused. */
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in) - 1, OXSHM_EQ_ERR), -FI_EINVAL);
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), 1ULL << 61), -FI_EBADFLAGS);
	return eq_close(&e);
}

static int write_needs_fi_write(void)
{
	struct test_res r;
	struct fid_eq *eq = NULL;
	struct fi_eq_attr a;
	struct fi_eq_entry in = entry(NULL, NULL, 1);
	memset(&a, 0, sizeof(a));
	a.wait_obj = FI_WAIT_UNSPEC;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_eq_open(r.fabric, &a, &eq, NULL));
	CHECK_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), -FI_EINVAL);
	CHECK_OK(fi_close(&eq->fid));
	return test_close(&r);
}

static int queue_full(void)
{
	struct eq_res e;
	struct fi_eq_entry in = entry(NULL, NULL, 1);
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	for (int i = 0; i < 8; i++)
		CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), 0), -FI_EAGAIN);
	return eq_close(&e);
}

static int getwait_fd(void)
{
	struct eq_res e;
	struct fi_eq_entry in = entry(NULL, NULL, 1), out;
	uint32_t event;
	int fd = -1;
	CHECK_OK(eq_open(&e, FI_WAIT_FD));
	CHECK_OK(fi_control(&e.eq->fid, FI_GETWAIT, &fd));
	CHECK(fd >= 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	CHECK(poll(&p, 1, 0) == 0);
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLIN));
	CHECK_RC(fi_eq_read(e.eq, &event, &out, sizeof(out), 0), sizeof(out));
	CHECK(poll(&p, 1, 0) == 0);
	return eq_close(&e);
}

static int sread_timeout(void)
{
	struct eq_res e;
	struct fi_eq_entry out;
	uint32_t event;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	double t0 = now_ms();
	CHECK_RC(fi_eq_sread(e.eq, &event, &out, sizeof(out), 100, 0), -FI_EAGAIN);
	double waited = now_ms() - t0;
	/* Coarse: it slept rather than spun out, and it did come back. */
	if (waited < 90 || waited > 5000)
		fprintf(stderr, "    sread waited %.1f ms for a 100 ms timeout\n", waited);
	CHECK(waited >= 90 && waited <= 5000);
	return eq_close(&e);
}

static int sread_ready(void)
{
	struct eq_res e;
	struct fi_eq_entry in = entry(NULL, NULL, 9), out;
	uint32_t event;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	double t0 = now_ms();
	CHECK_RC(fi_eq_sread(e.eq, &event, &out, sizeof(out), 5000, 0), sizeof(out));
	CHECK(now_ms() - t0 < 2500);
	CHECK(out.data == 9);
	return eq_close(&e);
}

static void *late_writer(void *arg)
{
	struct fid_eq *eq = arg;
	struct fi_eq_entry in = entry(NULL, NULL, 77);
	struct timespec delay = { 0, 50 * 1000 * 1000 };
	nanosleep(&delay, NULL);
	if (fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0) != (ssize_t)sizeof(in))
		return (void *)1;
	return NULL;
}

/* A blocked sread wakes up when another thread writes (a real wait object). */
static int sread_wakes_on_write(void)
{
	struct eq_res e;
	struct fi_eq_entry out;
	uint32_t event;
	pthread_t t;
	void *trc;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	CHECK(pthread_create(&t, NULL, late_writer, e.eq) == 0);
	double t0 = now_ms();
	ssize_t rc = fi_eq_sread(e.eq, &event, &out, sizeof(out), 10000, 0);
	double waited = now_ms() - t0;
	CHECK(pthread_join(t, &trc) == 0);
	CHECK(trc == NULL);
	CHECK_RC(rc, sizeof(out));
	CHECK(out.data == 77);
	CHECK(waited < 5000);
	return eq_close(&e);
}

static int eq_strerror(void)
{
	struct eq_res e;
	char buf[128];
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	memset(buf, 'x', sizeof(buf));
	const char *s = fi_eq_strerror(e.eq, FI_EINVAL, NULL, buf, sizeof(buf));
	CHECK(s != NULL && s[0] != '\0');
	CHECK(memchr(buf, '\0', sizeof(buf)) != NULL);
	CHECK_STR(buf, s);
	s = fi_eq_strerror(e.eq, 0, NULL, NULL, 0);
	CHECK(s != NULL);
	return eq_close(&e);
}

static int bind_to_domain(void)
{
	struct eq_res e;
	CHECK_OK(eq_open(&e, FI_WAIT_UNSPEC));
	CHECK_OK(fi_domain_bind(e.r.domain, &e.eq->fid, 0));
	/* The domain lets go of the EQ when it closes. */
	CHECK_OK(fi_close(&e.r.domain->fid));
	e.r.domain = NULL;
	return eq_close(&e);
}

static int wait_none_read(void)
{
	struct eq_res e;
	struct fi_eq_entry in = entry(NULL, NULL, 5), out;
	uint32_t event;
	CHECK_OK(eq_open(&e, FI_WAIT_NONE));
	CHECK_RC(fi_eq_write(e.eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	CHECK_RC(fi_eq_read(e.eq, &event, &out, sizeof(out), 0), sizeof(out));
	CHECK(out.data == 5);
	return eq_close(&e);
}

/* A program of API 1.0-1.4 passes the old, 40-byte fi_eq_err_entry (no
 * err_data_size): fi_eq_readerr must not write past it. */
struct old_err_entry {
	fid_t fid;
	void *context;
	uint64_t data;
	int err;
	int prov_errno;
	void *err_data;
};

static int readerr_old_api_layout(void)
{
	struct fi_info *hints = test_hints(), *info = NULL;
	struct fid_fabric *fab = NULL;
	struct fid_eq *eq = NULL;
	struct fi_eq_attr a;
	struct fi_eq_err_entry in;
	static char detail[8] = "detail";
	struct {
		struct old_err_entry e;
		uint64_t canary;
	} out;
	CHECK_OK(fi_getinfo(FI_VERSION(1, 4), NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	CHECK_OK(fi_fabric(info->fabric_attr, &fab, NULL));
	memset(&a, 0, sizeof(a));
	a.flags = FI_WRITE;
	a.wait_obj = FI_WAIT_UNSPEC;
	CHECK_OK(fi_eq_open(fab, &a, &eq, NULL));
	memset(&in, 0, sizeof(in));
	in.err = FI_EIO;
	in.err_data = detail;
	in.err_data_size = sizeof(detail);
	CHECK_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), OXSHM_EQ_ERR), sizeof(in));
	memset(&out, 0, sizeof(out));
	out.canary = 0x1111111111111111ULL;
	CHECK_RC(fi_eq_readerr(eq, (struct fi_eq_err_entry *)&out.e, 0), sizeof(out.e));
	CHECK(out.canary == 0x1111111111111111ULL);
	CHECK(out.e.err == FI_EIO);
	CHECK(out.e.err_data && memcmp(out.e.err_data, "detail", 6) == 0);
	CHECK_OK(fi_close(&eq->fid));
	CHECK_OK(fi_close(&fab->fid));
	fi_freeinfo(info);
	return 0;
}

static const struct test_case cases[] = {
	CASE(open_close),
	CASE(open_null_args),
	CASE(read_empty),
	CASE(write_then_read),
	CASE(fifo_order),
	CASE(read_peek),
	CASE(readerr_empty),
	CASE(readerr_entry),
	CASE(readerr_old_api_layout),
	CASE(write_needs_fi_write),
	CASE(queue_full),
	CASE(getwait_fd),
	CASE(sread_timeout),
	CASE(sread_ready),
	CASE(sread_wakes_on_write),
	CASE(eq_strerror),
	CASE(bind_to_domain),
	CASE(wait_none_read),
};

TEST_MAIN(cases)
