/*
 * Bad input: each refused call returns the right negative FI_E* code, leaves
 * its output argument alone, and says why in a libfabric-shaped log line.
 * Every case runs in a child with FI_LOG_LEVEL set, and catches its own
 * stderr around the one call under test.
 */
#include "test.h"

#include <fcntl.h>

#define WARN "FI_LOG_LEVEL=warn"
/* A request that matches nothing is not an error; it is logged at info. */
#define INFO "FI_LOG_LEVEL=info"

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

/* Restores stderr, echoes what was caught, and returns it (caller frees). */
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

/* True when `log` has a line `libfabric:<our pid>:...<level>...`. */
static int has_log_line(const char *log, const char *level)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "libfabric:%d:", (int)getpid());
	for (const char *line = log; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char *copy = strndup(line, len);
		int ok = copy && strncmp(copy, prefix, strlen(prefix)) == 0 &&
			 strstr(copy, level) != NULL;
		free(copy);
		if (ok)
			return 1;
		line = end ? end + 1 : NULL;
	}
	fprintf(stderr, "    no \"%s...%s\" log line; stderr was:\n%s", prefix, level, log);
	return 0;
}

/* Runs `call` with stderr caught; checks its code and the log line. */
#define CHECK_REFUSED(call, want, level)                                   \
	do {                                                               \
		capture_begin();                                           \
		long rc_ = (long)(call);                                   \
		char *log_ = capture_end();                                \
		int logged_ = has_log_line(log_, level);                   \
		free(log_);                                                \
		CHECK_RC(rc_, want);                                       \
		CHECK(logged_);                                            \
	} while (0)

static struct fi_info *oxshm_info(void)
{
	struct fi_info *hints = test_hints(), *info = NULL;
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (rc)
		abort();
	return info;
}

static int getinfo_null_out(void)
{
	CHECK_REFUSED(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, NULL), -FI_EINVAL,
		      "<warn>");
	return 0;
}

static int getinfo_version_too_new(void)
{
	struct fi_info *info = (struct fi_info *)&info;
	CHECK_REFUSED(fi_getinfo(FI_VERSION(3, 0), NULL, NULL, 0, NULL, &info), -FI_ENOSYS,
		      "<warn>");
	CHECK(info == (struct fi_info *)&info);
	return 0;
}

static int getinfo_impossible_caps(void)
{
	struct fi_info *hints = test_hints(), *info = (struct fi_info *)&info;
	hints->caps = FI_COLLECTIVE | FI_REMOTE_COMM;
	CHECK_REFUSED(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &info), -FI_ENODATA,
		      "libfabric:");
	fi_freeinfo(hints);
	CHECK(info == (struct fi_info *)&info);
	return 0;
}

static int getinfo_unknown_provider(void)
{
	struct fi_info *info = (struct fi_info *)&info;
	CHECK_REFUSED(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, &info), -FI_ENODATA,
		      "libfabric:");
	CHECK(info == (struct fi_info *)&info);
	return 0;
}

static int fabric_null_out(void)
{
	struct fi_info *info = oxshm_info();
	CHECK_REFUSED(fi_fabric(info->fabric_attr, NULL, NULL), -FI_EINVAL, "<warn>");
	fi_freeinfo(info);
	return 0;
}

static int fabric_null_attr(void)
{
	struct fid_fabric *fabric = NULL;
	CHECK_REFUSED(fi_fabric(NULL, &fabric, NULL), -FI_EINVAL, "<warn>");
	CHECK(fabric == NULL);
	return 0;
}

static int domain_null_out(void)
{
	struct test_res r;
	CHECK_OK(test_open(&r));
	CHECK_REFUSED(fi_domain(r.fabric, r.info, NULL, NULL), -FI_EINVAL, "<warn>");
	return test_close(&r);
}

static int domain_null_info(void)
{
	struct test_res r;
	struct fid_domain *domain = NULL;
	CHECK_OK(test_open(&r));
	CHECK_REFUSED(fi_domain(r.fabric, NULL, &domain, NULL), -FI_EINVAL, "<warn>");
	CHECK(domain == NULL);
	return test_close(&r);
}

static int eq_null_attr(void)
{
	struct test_res r;
	struct fid_eq *eq = NULL;
	CHECK_OK(test_open(&r));
	CHECK_REFUSED(fi_eq_open(r.fabric, NULL, &eq, NULL), -FI_EINVAL, "<warn>");
	CHECK(eq == NULL);
	return test_close(&r);
}

static int mr_null_attr(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	CHECK_REFUSED(fi_mr_regattr(r.domain, NULL, 0, &mr), -FI_EINVAL, "<warn>");
	CHECK(mr == NULL);
	return test_close(&r);
}

static int close_busy_fabric(void)
{
	struct test_res r;
	CHECK_OK(test_open(&r));
	CHECK_REFUSED(fi_close(&r.fabric->fid), -FI_EBUSY, "<warn>");
	return test_close(&r);
}

/* See test_fabric_domain.c: a zeroed block around a copied fid. */
static struct {
	struct fid fid;
	char pad[4096];
} forged;

static int close_wrong_class(void)
{
	struct test_res r;
	CHECK_OK(test_open(&r));
	memset(&forged, 0, sizeof(forged));
	forged.fid = r.domain->fid;
	forged.fid.fclass = FI_CLASS_EQ;
	CHECK_REFUSED(fi_close(&forged.fid), -FI_EINVAL, "<warn>");
	return test_close(&r);
}

static int bind_wrong_class(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	static char buf[64];
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf, sizeof(buf), FI_READ, 0, 1, 0, &mr, NULL));
	CHECK_REFUSED(fi_domain_bind(r.domain, &mr->fid, 0), -FI_EINVAL, "<warn>");
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int bind_forged_eq(void)
{
	struct test_res r;
	CHECK_OK(test_open(&r));
	memset(&forged, 0, sizeof(forged));
	forged.fid.fclass = FI_CLASS_EQ;
	forged.fid.ops = r.domain->fid.ops;
	CHECK_REFUSED(fi_domain_bind(r.domain, &forged.fid, 0), -FI_EINVAL, "<warn>");
	return test_close(&r);
}

static int open_unknown_name(void)
{
	struct fid *fid = (struct fid *)&fid;
	CHECK_RC(fi_open(TEST_HDR_VERSION, "nosuch", NULL, 0, 0, &fid, NULL), -FI_ENOSYS);
	CHECK_REFUSED(fi_open(TEST_HDR_VERSION, NULL, NULL, 0, 0, &fid, NULL), -FI_EINVAL,
		      "<warn>");
	CHECK(fid == (struct fid *)&fid);
	return 0;
}

/* At FI_LOG_LEVEL=warn an info-level message is not printed. */
static int log_level_filters(void)
{
	struct fi_info *info = NULL;
	capture_begin();
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, &info);
	char *log = capture_end();
	int quiet = strstr(log, "<info>") == NULL && strstr(log, "<debug>") == NULL;
	if (!quiet)
		fprintf(stderr, "    unexpected lines:\n%s", log);
	free(log);
	CHECK_OK(rc);
	fi_freeinfo(info);
	CHECK(quiet);
	return 0;
}

/*
 * The panic barrier: FI_OX_PANIC_AT makes the named export panic inside the
 * library; the call must come back with -FI_EOTHER and a warning, and the
 * process must go on working.
 */
static int panic_is_caught(void)
{
	struct fi_info *info = (struct fi_info *)&info;
	CHECK_REFUSED(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, &info), -FI_EOTHER,
		      "<warn>");
	CHECK(info == (struct fi_info *)&info);
	CHECK(fi_version() >= FI_VERSION(1, 0));
	return 0;
}

static const struct test_case cases[] = {
	CASE_ENV(getinfo_null_out, WARN),
	CASE_ENV(getinfo_version_too_new, WARN),
	CASE_ENV(getinfo_impossible_caps, INFO),
	CASE_ENV(getinfo_unknown_provider, INFO " FI_PROVIDER=nosuch"),
	CASE_ENV(fabric_null_out, WARN),
	CASE_ENV(fabric_null_attr, WARN),
	CASE_ENV(domain_null_out, WARN),
	CASE_ENV(domain_null_info, WARN),
	CASE_ENV(eq_null_attr, WARN),
	CASE_ENV(mr_null_attr, WARN),
	CASE_ENV(close_busy_fabric, WARN),
	CASE_ENV(close_wrong_class, WARN),
	CASE_ENV(bind_wrong_class, WARN),
	CASE_ENV(bind_forged_eq, WARN),
	CASE_ENV(open_unknown_name, WARN),
	CASE_ENV(log_level_filters, WARN),
	CASE_ENV(panic_is_caught, WARN " FI_OX_PANIC_AT=fi_getinfo"),
};

TEST_MAIN(cases)
