/*
 * Every info fi_getinfo returns for an mr_mode request is one fi_domain
 * accepts, whatever bits the domain requires (FI_OXSHM_MR_MODE, in a
 * child) and whatever the application offers, legacy values included.
 */
#include "test.h"

#include <sys/mman.h>

#define SENTINEL ((struct fid_mr *)(uintptr_t)0x5e5e5e50)

/* The legacy mr_mode values (2.x headers deprecate the macros). */
#define MR_BASIC (1 << 0)
#define MR_SCALABLE (1 << 1)
/* The deprecated fi_info mode bit FI_LOCAL_MR. */
#define LOCAL_MR_MODE (1ULL << 55)

#ifdef FI_MR_XPU_DESC
#define MR_XPU_BIT FI_MR_XPU_DESC
#else
#define MR_XPU_BIT 0
#endif

/* Every modern mr_mode bit an application can offer. */
#define MR_ALL                                                            \
	(FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |   \
	 FI_MR_PROV_KEY | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT |           \
	 FI_MR_ENDPOINT | FI_MR_HMEM | FI_MR_COLLECTIVE | MR_XPU_BIT)

/* fi_getinfo with `mr_mode` offered; returns its code, *info on success. */
static inline int getinfo_mode(int mr_mode, struct fi_info **info)
{
	struct fi_info *hints = test_hints();
	hints->domain_attr->mr_mode = mr_mode;
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	return rc;
}

static inline int open_mode(struct test_res *r, int mr_mode)
{
	memset(r, 0, sizeof(*r));
	CHECK_OK(getinfo_mode(mr_mode, &r->info));
	CHECK_OK(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	CHECK_OK(fi_domain(r->fabric, r->info, &r->domain, NULL));
	return 0;
}

/* A required bit outside what FI_MR_BASIC stands for: basic cannot match. */
static int basic_cannot_meet_raw(void)
{
	struct fi_info *info = (struct fi_info *)&info;
	CHECK_RC(getinfo_mode(MR_BASIC, &info), -FI_ENODATA);
	CHECK(info == (struct fi_info *)&info);
	return 0;
}

/* FI_MR_SCALABLE means "no mr_mode requirement": a domain that requires a
 * bit (here FI_MR_RAW) cannot serve it, and an info fi_getinfo returns must
 * open with fi_domain. */
static int scalable_cannot_meet_raw(void)
{
	struct test_res r;
	memset(&r, 0, sizeof(r));
	int rc = getinfo_mode(MR_SCALABLE, &r.info);
	if (rc == 0) {
		fprintf(stderr, "    fi_getinfo matched FI_MR_SCALABLE (mr_mode 0x%x)\n",
			r.info->domain_attr->mr_mode);
		CHECK_OK(fi_fabric(r.info->fabric_attr, &r.fabric, NULL));
		int drc = fi_domain(r.fabric, r.info, &r.domain, NULL);
		fprintf(stderr, "    and fi_domain on that info returned %d\n", drc);
		if (drc)
			r.domain = NULL;
		CHECK_OK(test_close(&r));
	}
	CHECK_RC(rc, -FI_ENODATA);
	return 0;
}

/* Whatever fi_getinfo returns opens with fi_domain: for each mr_mode an
 * application may offer (every single bit, all of them, none, FI_MR_BASIC,
 * FI_MR_SCALABLE, with and without the FI_LOCAL_MR mode bit; at API 1.4
 * and at the headers' version), a match must be a domain that fi_domain
 * accepts. Run under several FI_OXSHM_MR_MODE. */
static int matches_open(void)
{
	int offers[] = { 0, MR_ALL, MR_BASIC, MR_SCALABLE, FI_MR_LOCAL, FI_MR_RAW,
			 FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_MMU_NOTIFY,
			 FI_MR_RMA_EVENT, FI_MR_ENDPOINT, FI_MR_HMEM, FI_MR_COLLECTIVE,
			 FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
			 FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_LOCAL };
	uint32_t versions[] = { FI_VERSION(1, 4), TEST_HDR_VERSION };
	int bad = 0;
	for (size_t vi = 0; vi < 2; vi++)
	for (size_t i = 0; i < sizeof(offers) / sizeof(offers[0]); i++) {
		for (int local = 0; local < 2; local++) {
			struct fi_info *hints = test_hints(), *info = NULL;
			hints->domain_attr->mr_mode = offers[i];
			if (local)
				hints->mode |= LOCAL_MR_MODE;
			int rc = fi_getinfo(versions[vi], NULL, NULL, 0, hints, &info);
			fi_freeinfo(hints);
			if (rc == -FI_ENODATA)
				continue;
			CHECK_OK(rc);
			struct fid_fabric *fab = NULL;
			struct fid_domain *dom = NULL;
			CHECK_OK(fi_fabric(info->fabric_attr, &fab, NULL));
			int drc = fi_domain(fab, info, &dom, NULL);
			if (drc) {
				fprintf(stderr,
					"    API %u.%u, offered mr_mode 0x%x%s: fi_getinfo gave "
					"mr_mode 0x%x, fi_domain returned %d\n",
					FI_MAJOR(versions[vi]), FI_MINOR(versions[vi]),
					offers[i], local ? " + FI_LOCAL_MR" : "",
					info->domain_attr->mr_mode, drc);
				bad++;
			} else {
				CHECK_OK(fi_close(&dom->fid));
			}
			CHECK_OK(fi_close(&fab->fid));
			fi_freeinfo(info);
		}
	}
	CHECK(bad == 0);
	return 0;
}

static int matches_open_default(void) { return matches_open(); }
static int matches_open_local(void) { return matches_open(); }
static int matches_open_raw(void) { return matches_open(); }
static int matches_open_basic_bits(void) { return matches_open(); }
static int matches_open_endpoint(void) { return matches_open(); }

#define ENV_MODE(bits) "FI_OXSHM_MR_MODE=" bits

static const struct test_case cases[] = {
	CASE_ENV(basic_cannot_meet_raw, ENV_MODE("FI_MR_RAW")),
	CASE_ENV(scalable_cannot_meet_raw, ENV_MODE("FI_MR_RAW")),
	CASE(matches_open_default),
	CASE_ENV(matches_open_local, ENV_MODE("FI_MR_LOCAL")),
	CASE_ENV(matches_open_raw, ENV_MODE("FI_MR_RAW")),
	CASE_ENV(matches_open_basic_bits, ENV_MODE("FI_MR_VIRT_ADDR,FI_MR_ALLOCATED,FI_MR_PROV_KEY")),
	CASE_ENV(matches_open_endpoint, ENV_MODE("FI_MR_ENDPOINT")),
};

TEST_MAIN(cases)
