/* fi_strerror, fi_tostr and fi_tostr_r. */
#include "test.h"

/*
 * The fabric errno texts, as upstream's `fi_strerror N` (Debian's 1.17
 * /usr/bin/fi_strerror) prints them: programs and logs match on these.
 */
static const struct {
	int num;
	const char *text;
} fabric_errnos[] = {
	{ 256, "Unspecified error" },
	{ 257, "Provided buffer is too small" },
	{ 258, "Operation not permitted in current state" },
	{ 259, "Error available" },
	{ 260, "Flags not supported" },
	{ 261, "Missing or unavailable event queue" },
	{ 262, "Invalid resource domain" },
	{ 263, "Missing or unavailable completion queue" },
	{ 264, "CRC error" },
	{ 265, "Truncation error" },
	{ 266, "Required key not available" },
	{ 267, "Missing or unavailable address vector" },
	{ 268, "Queue has been overrun" },
	{ 269, "Receiver not ready, no receive buffers available" },
};

static int strerror_fabric_errnos(void)
{
	for (size_t i = 0; i < sizeof(fabric_errnos) / sizeof(fabric_errnos[0]); i++) {
		const char *s = fi_strerror(fabric_errnos[i].num);
		if (!s || strcmp(s, fabric_errnos[i].text) != 0) {
			fprintf(stderr, "    fi_strerror(%d) = \"%s\", want \"%s\"\n",
				fabric_errnos[i].num, s ? s : "(null)", fabric_errnos[i].text);
			return 1;
		}
	}
	return 0;
}

static int strerror_named(void)
{
	CHECK_STR(fi_strerror(FI_ENOKEY), "Required key not available");
	CHECK_STR(fi_strerror(FI_EBADFLAGS), "Flags not supported");
	CHECK_STR(fi_strerror(FI_EOTHER), "Unspecified error");
	CHECK_STR(fi_strerror(FI_ETOOSMALL), "Provided buffer is too small");
#if TEST_HDR_AT_LEAST(2, 0)
	/* Newer than Debian's binary: only that it has a text of its own. */
	CHECK(strcmp(fi_strerror(FI_ENOMR), "Unspecified error") != 0);
#endif
	return 0;
}

/* Below the fabric range, fi_strerror is the C library's strerror. */
static int strerror_system(void)
{
	int nums[] = { FI_EPERM, FI_EAGAIN, FI_EINVAL, FI_ENODATA, FI_EBUSY, FI_ENOSPC,
		       FI_ENOSYS, FI_ENOMEM, FI_EKEYREJECTED, FI_ECONNREFUSED };
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		char want[256];
		snprintf(want, sizeof(want), "%s", strerror(nums[i]));
		CHECK_STR(fi_strerror(nums[i]), want);
	}
	CHECK_STR(fi_strerror(FI_EAGAIN), "Resource temporarily unavailable");
	CHECK_STR(fi_strerror(FI_EINVAL), "Invalid argument");
	return 0;
}

static int strerror_never_null(void)
{
	int nums[] = { 0, 255, 100000, -1, -FI_ENOKEY };
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		const char *s = fi_strerror(nums[i]);
		CHECK(s != NULL && s[0] != '\0');
	}
	return 0;
}

static int contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle)) {
		fprintf(stderr, "    missing \"%s\" in:\n%s\n", needle, hay ? hay : "(null)");
		return 0;
	}
	return 1;
}

static int tostr_info(void)
{
	struct fi_info *hints = test_hints(), *info = NULL;
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	CHECK_OK(rc);
	char *s = test_strdup(fi_tostr(info, FI_TYPE_INFO));
	int ok = contains(s, "fi_info:") && contains(s, "caps:") &&
		 contains(s, "fi_tx_attr:") && contains(s, "fi_rx_attr:") &&
		 contains(s, "fi_ep_attr:") && contains(s, "fi_domain_attr:") &&
		 contains(s, "fi_fabric_attr:") && contains(s, "FI_EP_RDM") &&
		 contains(s, "FI_THREAD_SAFE") && contains(s, "prov_name: " TEST_PROV) &&
		 contains(s, "FI_LOCAL_COMM") && contains(s, "mr_mode:");
	free(s);
	fi_freeinfo(info);
	CHECK(ok);
	return 0;
}

static int tostr_types(void)
{
	uint64_t caps = FI_LOCAL_COMM | FI_RMA;
	enum fi_ep_type ep = FI_EP_RDM;
	int mr_mode = FI_MR_LOCAL | FI_MR_PROV_KEY;
	enum fi_threading th = FI_THREAD_SAFE;
	uint32_t ver = FI_VERSION(1, 5);
	char libver[32];
	/* Upstream prints the library's own version here, whatever it is given. */
	snprintf(libver, sizeof(libver), "%u.%u.", FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
	CHECK(contains(fi_tostr(&caps, FI_TYPE_CAPS), "FI_LOCAL_COMM"));
	CHECK(contains(fi_tostr(&caps, FI_TYPE_CAPS), "FI_RMA"));
	CHECK(contains(fi_tostr(&ep, FI_TYPE_EP_TYPE), "FI_EP_RDM"));
	CHECK(contains(fi_tostr(&mr_mode, FI_TYPE_MR_MODE), "FI_MR_LOCAL"));
	CHECK(contains(fi_tostr(&mr_mode, FI_TYPE_MR_MODE), "FI_MR_PROV_KEY"));
	CHECK(contains(fi_tostr(&th, FI_TYPE_THREADING), "FI_THREAD_SAFE"));
	CHECK(contains(fi_tostr(&ver, FI_TYPE_VERSION), libver));
	return 0;
}

static int tostr_r_matches_and_truncates(void)
{
	uint64_t caps = FI_LOCAL_COMM | FI_MSG | FI_RMA;
	char full[1024], small[8];
	char *want = test_strdup(fi_tostr(&caps, FI_TYPE_CAPS));
	CHECK(fi_tostr_r(full, sizeof(full), &caps, FI_TYPE_CAPS) == full);
	CHECK_STR(full, want);
	memset(small, 'x', sizeof(small));
	CHECK(fi_tostr_r(small, sizeof(small), &caps, FI_TYPE_CAPS) == small);
	CHECK(memchr(small, '\0', sizeof(small)) != NULL);
	CHECK(strncmp(small, want, strlen(small)) == 0);
	free(want);
	return 0;
}

static const struct test_case cases[] = {
	CASE(strerror_fabric_errnos),
	CASE(strerror_named),
	CASE(strerror_system),
	CASE(strerror_never_null),
	CASE(tostr_info),
	CASE(tostr_types),
	CASE(tostr_r_matches_and_truncates),
};

TEST_MAIN(cases)
