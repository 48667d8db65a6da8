/*
 * test.h: the tiny harness shared by the capi-tests programs.
 *
 * A program is a table of named cases; each case returns 0 on success. The
 * harness prints one line per case and `N passed, N failed` at the end, and
 * exits non-zero when any case failed. A case with `env` set runs in a child
 * re-executed with those variables (libfabric reads FI_PROVIDER, FI_LOG_LEVEL
 * and friends once, so they cannot be changed from inside a running process).
 *
 * Include this first: it sets _GNU_SOURCE for dlvsym and friends.
 */
#ifndef OXF_TEST_H
#define OXF_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

/* run.sh states which header set each build must see; a mix-up fails here. */
#if defined(TEST_EXPECT_MAJOR) && \
	(FI_MAJOR_VERSION != TEST_EXPECT_MAJOR || FI_MINOR_VERSION != TEST_EXPECT_MINOR)
#error "compiled against the wrong header set"
#endif

/* The API version of the headers this program is compiled against. */
#define TEST_HDR_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define TEST_HDR_AT_LEAST(maj, min) \
	(FI_MAJOR_VERSION > (maj) || (FI_MAJOR_VERSION == (maj) && FI_MINOR_VERSION >= (min)))

/*
 * The only provider oxfabric ships. -DTEST_PROV='"shm"' points the tests at
 * another library's provider, to check a test's own logic against upstream.
 */
#ifndef TEST_PROV
#define TEST_PROV "oxshm"
#endif

struct test_case {
	const char *name;
	int (*run)(void);
	/* NULL, or space-separated NAME=value pairs for a re-executed child. */
	const char *env;
};

#define CASE(fn) { #fn, fn, NULL }
#define CASE_ENV(fn, env) { #fn, fn, env }

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "    %s:%d: check failed: %s\n",   \
				__FILE__, __LINE__, #cond);                \
			return 1;                                          \
		}                                                          \
	} while (0)

/* Compares a libfabric return code (0 or -FI_E*) with the expected one. */
#define CHECK_RC(expr, want)                                               \
	do {                                                               \
		long got_ = (long)(expr);                                  \
		long want_ = (long)(want);                                 \
		if (got_ != want_) {                                       \
			fprintf(stderr, "    %s:%d: %s returned %ld (%s), "    \
				"want %ld (%s)\n", __FILE__, __LINE__,     \
				#expr, got_, test_errstr(got_), want_,     \
				test_errstr(want_));                       \
			return 1;                                          \
		}                                                          \
	} while (0)

#define CHECK_OK(expr) CHECK_RC(expr, 0)

#define CHECK_STR(got, want)                                               \
	do {                                                               \
		const char *g_ = (got), *w_ = (want);                      \
		if (!g_ || strcmp(g_, w_) != 0) {                          \
			fprintf(stderr, "    %s:%d: %s is \"%s\", want "       \
				"\"%s\"\n", __FILE__, __LINE__, #got,      \
				g_ ? g_ : "(null)", w_);                   \
			return 1;                                          \
		}                                                          \
	} while (0)

static inline const char *test_errstr(long rc)
{
	if (rc >= 0)
		return "ok";
	return fi_strerror((int)-rc);
}

/* The state letter of thread `tid` of process `pid` (the third field of
 * /proc/<pid>/task/<tid>/stat: R, S, D, T, t, ...), 0 when it cannot be
 * read (the thread is gone). */
static inline char test_thread_state(int pid, const char *tid)
{
	char path[96], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%.32s/stat", pid, tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* After the command name, which may hold spaces and parentheses. */
	const char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : 0;
}

/* A strdup that aborts: hints strings are freed by fi_freeinfo. */
static inline char *test_strdup(const char *s)
{
	char *d = strdup(s);
	if (!d)
		abort();
	return d;
}

/* hints for oxshm at the headers' API version, from fi_allocinfo. */
static inline struct fi_info *test_hints(void)
{
	struct fi_info *h = fi_allocinfo();
	if (!h)
		abort();
	h->fabric_attr->prov_name = test_strdup(TEST_PROV);
	return h;
}

/* Runs `cases` in a child with its env pairs added; returns 0 on success. */
static inline int test_run_child(const char *self, const struct test_case *c)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		char *pairs = test_strdup(c->env), *save = NULL;
		for (char *kv = strtok_r(pairs, " ", &save); kv;
		     kv = strtok_r(NULL, " ", &save))
			putenv(kv);
		setenv("OXF_TEST_CHILD_CASE", c->name, 1);
		char *argv[] = { (char *)self, NULL };
		execv(self, argv);
		perror("execv");
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		return 1;
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "    child killed by signal %d\n", WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status) != 0;
}

static inline int test_main(int argc, char **argv, const struct test_case *cases,
			    size_t n)
{
	const char *child = getenv("OXF_TEST_CHILD_CASE");
	const char *only = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;

	(void)argc;
	if (child) {
		/* Re-executed for one env case: run it here, report by exit code. */
		for (size_t i = 0; i < n; i++)
			if (strcmp(cases[i].name, child) == 0)
				return cases[i].run() != 0;
		fprintf(stderr, "no case named %s\n", child);
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	for (size_t i = 0; i < n; i++) {
		const struct test_case *c = &cases[i];
		if (only && strcmp(only, c->name) != 0)
			continue;
		/* Printed before the case runs so a crash names its case. */
		printf("  %-44s ", c->name);
		int rc = c->env ? test_run_child(argv[0], c) : c->run();
		printf("%s\n", rc ? "FAIL" : "ok");
		if (rc)
			failed++;
		else
			passed++;
	}
	printf("%s: %d passed, %d failed\n", argv[0], passed, failed);
	return failed || (passed == 0) ? 1 : 0;
}

#define TEST_MAIN(cases)                                                   \
	int main(int argc, char **argv)                                    \
	{                                                                  \
		return test_main(argc, argv, cases,                        \
				 sizeof(cases) / sizeof((cases)[0]));      \
	}

/* oxshm opened down to a domain, the way every program starts. */
struct test_res {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};

/* Fills `r` (fi_getinfo, fi_fabric, fi_domain); returns 0 or 1 after a report. */
static inline int test_open(struct test_res *r)
{
	struct fi_info *hints = test_hints();
	memset(r, 0, sizeof(*r));
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &r->info);
	fi_freeinfo(hints);
	CHECK_OK(rc);
	CHECK(r->info != NULL);
	CHECK_OK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	CHECK_OK(fi_domain(r->fabric, r->info, &r->domain, NULL));
	return 0;
}

/* Closes what test_open opened; returns 0 or 1 after a report. */
static inline int test_close(struct test_res *r)
{
	if (r->domain)
		CHECK_OK(fi_close(&r->domain->fid));
	if (r->fabric)
		CHECK_OK(fi_close(&r->fabric->fid));
	fi_freeinfo(r->info);
	memset(r, 0, sizeof(*r));
	return 0;
}

#endif /* OXF_TEST_H */
