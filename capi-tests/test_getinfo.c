/* fi_getinfo, fi_freeinfo, fi_dupinfo, fi_allocinfo and fi_version. */
#include "test.h"

/*
 * The legacy mr_mode values. Upstream's 2.x headers wrap FI_MR_BASIC and
 * FI_MR_SCALABLE in a deprecation pragma that -Werror turns into an error,
 * so the tests spell out their (frozen) ABI values.
 */
#define MR_BASIC (1 << 0)
#define MR_SCALABLE (1 << 1)

/* Every mr_mode bit an application can offer in hints. */
#define MR_ALL_MODERN                                                     \
	(FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |   \
	 FI_MR_PROV_KEY | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT |           \
	 FI_MR_ENDPOINT | FI_MR_HMEM)

/* fi_getinfo at the headers' version; returns the code, frees `hints`. */
static int getinfo(struct fi_info *hints, struct fi_info **out)
{
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, out);
	fi_freeinfo(hints);
	return rc;
}

/* Expects -FI_ENODATA for `hints` and an untouched out pointer. */
static int expect_nodata(struct fi_info *hints)
{
	struct fi_info *info = (struct fi_info *)&info;
	CHECK_RC(getinfo(hints, &info), -FI_ENODATA);
	CHECK(info == (struct fi_info *)&info);
	return 0;
}

static int null_hints_lists_oxshm(void)
{
	struct fi_info *info = NULL;
	CHECK_OK(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, &info));
	CHECK(info != NULL);
	int found = 0;
	for (struct fi_info *i = info; i; i = i->next) {
		CHECK(i->fabric_attr && i->domain_attr && i->ep_attr &&
		      i->tx_attr && i->rx_attr);
		CHECK(i->fabric_attr->prov_name != NULL);
		if (strcmp(i->fabric_attr->prov_name, TEST_PROV) == 0)
			found = 1;
	}
	fi_freeinfo(info);
	CHECK(found);
	return 0;
}

/* The attributes the issue promises: honest, complete, RDM, thread safe. */
static int oxshm_attributes(void)
{
	struct fi_info *info = NULL;
	CHECK_OK(getinfo(test_hints(), &info));
	CHECK(info != NULL);
	CHECK_STR(info->fabric_attr->prov_name, TEST_PROV);
	CHECK(info->fabric_attr->name != NULL);
	CHECK(info->domain_attr->name != NULL);
	CHECK(info->ep_attr->type == FI_EP_RDM);
	CHECK(info->domain_attr->threading == FI_THREAD_SAFE);
	CHECK(info->domain_attr->mr_key_size > 0);
	CHECK(info->domain_attr->mr_iov_limit >= 1);
	CHECK(info->domain_attr->mr_cnt >= 1);
	CHECK(info->fabric_attr->prov_version != 0);
	CHECK(info->fabric_attr->api_version == TEST_HDR_VERSION);
	CHECK(info->caps & FI_LOCAL_COMM);
	CHECK(!(info->caps & FI_REMOTE_COMM));
	/* No provider-internal pointers: a fresh info is not bound to objects. */
	CHECK(info->fabric_attr->fabric == NULL);
	CHECK(info->domain_attr->domain == NULL);
	CHECK(info->handle == NULL);
	fi_freeinfo(info);
	return 0;
}

static int caps_impossible(void)
{
	struct fi_info *h = test_hints();
	/* oxshm moves data within one host and has no collectives. */
	h->caps = FI_TAGGED | FI_ATOMIC | FI_COLLECTIVE | FI_REMOTE_COMM;
	return expect_nodata(h);
}

static int caps_collective(void)
{
	struct fi_info *h = test_hints();
	h->caps = FI_COLLECTIVE;
	return expect_nodata(h);
}

static int caps_remote_comm(void)
{
	struct fi_info *h = test_hints();
	h->caps = FI_REMOTE_COMM;
	return expect_nodata(h);
}

static int caps_local_comm(void)
{
	struct fi_info *h = test_hints(), *info = NULL;
	h->caps = FI_LOCAL_COMM;
	CHECK_OK(getinfo(h, &info));
	CHECK(info->caps & FI_LOCAL_COMM);
	fi_freeinfo(info);
	return 0;
}

static int ep_type_msg(void)
{
	struct fi_info *h = test_hints();
	h->ep_attr->type = FI_EP_MSG;
	return expect_nodata(h);
}

static int ep_type_dgram(void)
{
	struct fi_info *h = test_hints();
	h->ep_attr->type = FI_EP_DGRAM;
	return expect_nodata(h);
}

static int ep_type_rdm(void)
{
	struct fi_info *h = test_hints(), *info = NULL;
	h->ep_attr->type = FI_EP_RDM;
	CHECK_OK(getinfo(h, &info));
	CHECK(info->ep_attr->type == FI_EP_RDM);
	fi_freeinfo(info);
	return 0;
}

static int prov_name_nosuch(void)
{
	struct fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = test_strdup("nosuch");
	return expect_nodata(h);
}

static int fabric_name_nosuch(void)
{
	struct fi_info *h = test_hints();
	h->fabric_attr->name = test_strdup("nosuch");
	return expect_nodata(h);
}

static int domain_name_nosuch(void)
{
	struct fi_info *h = test_hints();
	h->domain_attr->name = test_strdup("nosuch");
	return expect_nodata(h);
}

/* Names from a first fi_getinfo select the same offer again. */
static int names_round_trip(void)
{
	struct fi_info *first = NULL, *again = NULL;
	CHECK_OK(getinfo(test_hints(), &first));
	struct fi_info *h = test_hints();
	h->fabric_attr->name = test_strdup(first->fabric_attr->name);
	h->domain_attr->name = test_strdup(first->domain_attr->name);
	CHECK_OK(getinfo(h, &again));
	CHECK_STR(again->fabric_attr->name, first->fabric_attr->name);
	CHECK_STR(again->domain_attr->name, first->domain_attr->name);
	fi_freeinfo(first);
	fi_freeinfo(again);
	return 0;
}

static int addr_format_mismatch(void)
{
	struct fi_info *h = test_hints();
	h->addr_format = FI_SOCKADDR_IB;
	return expect_nodata(h);
}

static int threading_domain_ok(void)
{
	struct fi_info *h = test_hints(), *info = NULL;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	CHECK_OK(getinfo(h, &info));
	fi_freeinfo(info);
	return 0;
}

static int prov_excluded_by_env(void)
{
	struct fi_info *info = (struct fi_info *)&info;
	CHECK_RC(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, &info), -FI_ENODATA);
	CHECK(info == (struct fi_info *)&info);
	return 0;
}

static int prov_unknown_by_env(void)
{
	return prov_excluded_by_env();
}

static int prov_selected_by_env(void)
{
	struct fi_info *info = NULL;
	CHECK_OK(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, &info));
	CHECK_STR(info->fabric_attr->prov_name, TEST_PROV);
	fi_freeinfo(info);
	return 0;
}

static int version_too_new(void)
{
	struct fi_info *info = (struct fi_info *)&info;
	CHECK_RC(fi_getinfo(FI_VERSION(2, 8), NULL, NULL, 0, NULL, &info), -FI_ENOSYS);
	CHECK_RC(fi_getinfo(FI_VERSION(3, 0), NULL, NULL, 0, NULL, &info), -FI_ENOSYS);
	CHECK(info == (struct fi_info *)&info);
	return 0;
}

static int null_info_out(void)
{
	CHECK_RC(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, NULL), -FI_EINVAL);
	return 0;
}

/* mr_mode the application offers -> mr_mode in the result. */
static int mr_mode_result(int offered, int *got)
{
	struct fi_info *h = test_hints(), *info = NULL;
	h->domain_attr->mr_mode = offered;
	CHECK_OK(getinfo(h, &info));
	*got = info->domain_attr->mr_mode;
	fi_freeinfo(info);
	return 0;
}

static int mr_mode_basic_stays(void)
{
	int got;
	CHECK_OK(mr_mode_result(MR_BASIC, &got));
	CHECK(got == MR_BASIC);
	return 0;
}

static int mr_mode_scalable_stays(void)
{
	int got;
	CHECK_OK(mr_mode_result(MR_SCALABLE, &got));
	CHECK(got == MR_SCALABLE);
	return 0;
}

static int mr_mode_unneeded_bits_cleared(void)
{
	int got;
	/*
	 * oxshm needs none of these by default; it keeps only FI_MR_PROV_KEY
	 * (its preferred key scheme) when the application supports it.
	 */
	CHECK_OK(mr_mode_result(MR_ALL_MODERN, &got));
	CHECK(got == FI_MR_PROV_KEY);
	CHECK_OK(mr_mode_result(MR_ALL_MODERN & ~FI_MR_PROV_KEY, &got));
	CHECK(got == 0);
	CHECK_OK(mr_mode_result(0, &got));
	CHECK(got == 0);
	return 0;
}

/* The two legacy modes exclude each other: no match or malformed hints. */
static int mr_mode_basic_and_scalable(void)
{
	struct fi_info *h = test_hints(), *info = NULL;
	h->domain_attr->mr_mode = MR_BASIC | MR_SCALABLE;
	int rc = getinfo(h, &info);
	CHECK(rc == -FI_ENODATA || rc == -FI_EINVAL);
	return 0;
}

#if TEST_HDR_AT_LEAST(2, 7)
static int mr_mode_xpu_desc_cleared(void)
{
	int got;
	CHECK_OK(mr_mode_result(FI_MR_LOCAL | FI_MR_XPU_DESC, &got));
	CHECK(!(got & FI_MR_XPU_DESC));
	return 0;
}
#endif

/* Run with FI_OXSHM_MR_MODE=FI_MR_PROV_KEY. */
static int mr_mode_env_prov_key(void)
{
	int got;
	struct fi_info *h = test_hints();
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
	CHECK_OK(expect_nodata(h));

	CHECK_OK(mr_mode_result(FI_MR_PROV_KEY | FI_MR_LOCAL, &got));
	CHECK(got == FI_MR_PROV_KEY);
	/* FI_MR_BASIC means VIRT_ADDR | ALLOCATED | PROV_KEY: it fits. */
	CHECK_OK(mr_mode_result(MR_BASIC, &got));
	CHECK(got == MR_BASIC);
	/* FI_MR_SCALABLE promises application keys: it does not. */
	h = test_hints();
	h->domain_attr->mr_mode = MR_SCALABLE;
	CHECK_OK(expect_nodata(h));

	struct fi_info *info = NULL;
	CHECK_OK(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, NULL, &info));
	CHECK(info->domain_attr->mr_mode & FI_MR_PROV_KEY);
	fi_freeinfo(info);
	return 0;
}

static int dupinfo_deep_copy(void)
{
	struct fi_info *orig = NULL;
	CHECK_OK(getinfo(test_hints(), &orig));
	struct fi_info *copy = fi_dupinfo(orig);
	CHECK(copy != NULL && copy != orig);
	CHECK(copy->next == NULL);
	CHECK(copy->caps == orig->caps && copy->mode == orig->mode);
	CHECK(copy->addr_format == orig->addr_format);
	CHECK(copy->fabric_attr != orig->fabric_attr);
	CHECK(copy->domain_attr != orig->domain_attr);
	CHECK(copy->ep_attr != orig->ep_attr);
	CHECK(copy->tx_attr != orig->tx_attr && copy->rx_attr != orig->rx_attr);
	CHECK(copy->fabric_attr->name != orig->fabric_attr->name);
	CHECK(copy->fabric_attr->prov_name != orig->fabric_attr->prov_name);
	CHECK(copy->domain_attr->name != orig->domain_attr->name);
	CHECK_STR(copy->fabric_attr->name, orig->fabric_attr->name);
	CHECK_STR(copy->fabric_attr->prov_name, orig->fabric_attr->prov_name);
	CHECK_STR(copy->domain_attr->name, orig->domain_attr->name);
	CHECK(copy->domain_attr->mr_mode == orig->domain_attr->mr_mode);
	CHECK(copy->domain_attr->mr_key_size == orig->domain_attr->mr_key_size);
	CHECK(copy->ep_attr->type == orig->ep_attr->type);
	CHECK(copy->tx_attr->size == orig->tx_attr->size);
	CHECK(copy->src_addrlen == orig->src_addrlen);
	if (orig->src_addr)
		CHECK(copy->src_addr != orig->src_addr &&
		      memcmp(copy->src_addr, orig->src_addr, orig->src_addrlen) == 0);

	char *saved = test_strdup(orig->fabric_attr->name);
	free(copy->fabric_attr->name);
	copy->fabric_attr->name = test_strdup("changed");
	copy->domain_attr->name[0] = '#';
	copy->domain_attr->mr_key_size = 1234;
	CHECK_STR(orig->fabric_attr->name, saved);
	CHECK(orig->domain_attr->name[0] != '#');
	CHECK(orig->domain_attr->mr_key_size != 1234);
	free(saved);
	fi_freeinfo(copy);
	fi_freeinfo(orig);
	return 0;
}

/* fi_dupinfo copies one entry, not the list behind it. */
static int dupinfo_not_list(void)
{
	struct fi_info *a = fi_allocinfo(), *b = fi_allocinfo();
	a->next = b;
	struct fi_info *copy = fi_dupinfo(a);
	CHECK(copy != NULL && copy->next == NULL);
	fi_freeinfo(copy);
	fi_freeinfo(a); /* frees b too */
	return 0;
}

static int allocinfo_allocates_attrs(void)
{
	struct fi_info *i = fi_allocinfo();
	CHECK(i != NULL);
	CHECK(i->tx_attr && i->rx_attr && i->ep_attr && i->domain_attr &&
	      i->fabric_attr);
	CHECK(i->next == NULL && i->caps == 0 && i->src_addr == NULL);
	CHECK(i->fabric_attr->name == NULL && i->fabric_attr->prov_name == NULL);
	CHECK(i->domain_attr->name == NULL && i->domain_attr->mr_mode == 0);
	CHECK(i->ep_attr->type == FI_EP_UNSPEC);
	fi_freeinfo(i);
	i = fi_dupinfo(NULL);
	CHECK(i != NULL && i->domain_attr != NULL && i->fabric_attr != NULL);
	fi_freeinfo(i);
	return 0;
}

static int freeinfo_null(void)
{
	fi_freeinfo(NULL);
	return 0;
}

static int version_reported(void)
{
	uint32_t v = fi_version();
	CHECK(FI_MAJOR(v) >= 1);
	/* The library is at least as new as any header set we build against. */
	CHECK(v >= TEST_HDR_VERSION);
#if TEST_HDR_AT_LEAST(2, 7)
	CHECK(v == FI_VERSION(2, 7));
#endif
	return 0;
}

static const struct test_case cases[] = {
	CASE(null_hints_lists_oxshm),
	CASE(oxshm_attributes),
	CASE(caps_impossible),
	CASE(caps_collective),
	CASE(caps_remote_comm),
	CASE(caps_local_comm),
	CASE(ep_type_msg),
	CASE(ep_type_dgram),
	CASE(ep_type_rdm),
	CASE(prov_name_nosuch),
	CASE(fabric_name_nosuch),
	CASE(domain_name_nosuch),
	CASE(names_round_trip),
	CASE(addr_format_mismatch),
	CASE(threading_domain_ok),
	CASE_ENV(prov_excluded_by_env, "FI_PROVIDER=^oxshm"),
	CASE_ENV(prov_selected_by_env, "FI_PROVIDER=oxshm"),
	CASE_ENV(prov_unknown_by_env, "FI_PROVIDER=nosuch"),
	CASE(version_too_new),
	CASE(null_info_out),
	CASE(mr_mode_basic_stays),
	CASE(mr_mode_scalable_stays),
	CASE(mr_mode_unneeded_bits_cleared),
	CASE(mr_mode_basic_and_scalable),
#if TEST_HDR_AT_LEAST(2, 7)
	CASE(mr_mode_xpu_desc_cleared),
#endif
	CASE_ENV(mr_mode_env_prov_key, "FI_OXSHM_MR_MODE=FI_MR_PROV_KEY"),
	CASE(dupinfo_deep_copy),
	CASE(dupinfo_not_list),
	CASE(allocinfo_allocates_attrs),
	CASE(freeinfo_null),
	CASE(version_reported),
};

TEST_MAIN(cases)
