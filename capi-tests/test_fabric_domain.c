/* fi_fabric, fi_fabric2, fi_domain, fi_domain_bind and close ordering. */
#include "test.h"

#include <dlfcn.h>

typedef int (*fabric2_fn)(struct fi_info *, struct fid_fabric **, uint64_t, void *);

/*
 * fi_fabric2 is declared from the 2.x headers on; a program built against
 * older headers finds it by its symbol version, which also proves the export.
 */
static fabric2_fn get_fabric2(void)
{
#if TEST_HDR_AT_LEAST(2, 0)
	return fi_fabric2;
#else
	return (fabric2_fn)dlvsym(RTLD_DEFAULT, "fi_fabric2", "FABRIC_1.8");
#endif
}

static struct fi_info *oxshm_info(void)
{
	struct fi_info *hints = test_hints(), *info = NULL;
	int rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	return rc ? NULL : info;
}

static struct fi_eq_attr eq_attr(void)
{
	struct fi_eq_attr a;
	memset(&a, 0, sizeof(a));
	a.size = 16;
	a.wait_obj = FI_WAIT_UNSPEC;
	return a;
}

static int fabric_open_close(void)
{
	struct fi_info *info = oxshm_info();
	struct fid_fabric *fabric = NULL;
	int ctx;
	CHECK(info != NULL);
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, &ctx));
	CHECK(fabric != NULL);
	CHECK(fabric->fid.fclass == FI_CLASS_FABRIC);
	CHECK(fabric->fid.context == &ctx);
	CHECK(fabric->fid.ops != NULL && fabric->ops != NULL);
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	return 0;
}

static int fabric_unknown_prov(void)
{
	struct fi_info *info = oxshm_info();
	struct fid_fabric *fabric = (struct fid_fabric *)&fabric;
	CHECK(info != NULL);
	free(info->fabric_attr->prov_name);
	info->fabric_attr->prov_name = test_strdup("nosuch");
	/* Upstream's answer for a provider it does not have. */
	CHECK_RC(fi_fabric(info->fabric_attr, &fabric, NULL), -FI_ENODEV);
	CHECK(fabric == (struct fid_fabric *)&fabric);
	fi_freeinfo(info);
	return 0;
}

static int fabric_unknown_name(void)
{
	struct fi_info *info = oxshm_info();
	struct fid_fabric *fabric = (struct fid_fabric *)&fabric;
	CHECK(info != NULL);
	free(info->fabric_attr->name);
	info->fabric_attr->name = test_strdup("nosuch");
	CHECK_RC(fi_fabric(info->fabric_attr, &fabric, NULL), -FI_ENODATA);
	CHECK(fabric == (struct fid_fabric *)&fabric);
	fi_freeinfo(info);
	return 0;
}

static int fabric_null_args(void)
{
	struct fi_info *info = oxshm_info();
	struct fid_fabric *fabric = NULL;
	CHECK(info != NULL);
	CHECK_RC(fi_fabric(info->fabric_attr, NULL, NULL), -FI_EINVAL);
	CHECK_RC(fi_fabric(NULL, &fabric, NULL), -FI_EINVAL);
	CHECK(fabric == NULL);
	fi_freeinfo(info);
	return 0;
}

static int fabric2_open_close(void)
{
	fabric2_fn fabric2 = get_fabric2();
	struct fi_info *info = oxshm_info();
	struct fid_fabric *fabric = NULL;
	int ctx;
	CHECK(fabric2 != NULL);
	CHECK(info != NULL);
	CHECK_OK(fabric2(info, &fabric, 0, &ctx));
	CHECK(fabric != NULL && fabric->fid.fclass == FI_CLASS_FABRIC);
	CHECK(fabric->fid.context == &ctx);
	/* A fabric from fi_fabric2 serves domains like one from fi_fabric. */
	struct fid_domain *domain = NULL;
	CHECK_OK(fi_domain(fabric, info, &domain, NULL));
	CHECK_OK(fi_close(&domain->fid));
	CHECK_OK(fi_close(&fabric->fid));
	CHECK_RC(fabric2(info, NULL, 0, NULL), -FI_EINVAL);
	CHECK_RC(fabric2(NULL, &fabric, 0, NULL), -FI_EINVAL);
	fi_freeinfo(info);
	return 0;
}

static int domain_open_close(void)
{
	struct fi_info *info = oxshm_info();
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	int ctx;
	CHECK(info != NULL);
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK_OK(fi_domain(fabric, info, &domain, &ctx));
	CHECK(domain != NULL && domain->fid.fclass == FI_CLASS_DOMAIN);
	CHECK(domain->fid.context == &ctx);
	CHECK(domain->ops != NULL && domain->mr != NULL);
	CHECK_OK(fi_close(&domain->fid));
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	return 0;
}

static int two_domains(void)
{
	struct test_res r;
	struct fid_domain *second = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_domain(r.fabric, r.info, &second, NULL));
	CHECK(second != r.domain);
	CHECK_OK(fi_close(&second->fid));
	return test_close(&r);
}

static int domain_null_args(void)
{
	struct test_res r;
	struct fid_domain *domain = NULL;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_domain(r.fabric, r.info, NULL, NULL), -FI_EINVAL);
	CHECK_RC(fi_domain(r.fabric, NULL, &domain, NULL), -FI_EINVAL);
	CHECK(domain == NULL);
	return test_close(&r);
}

static int fabric_busy_with_domain(void)
{
	struct test_res r;
	CHECK_OK(test_open(&r));
	CHECK_RC(fi_close(&r.fabric->fid), -FI_EBUSY);
	/* The refused close changed nothing: the domain still works. */
	struct fid_mr *mr = NULL;
	static char buf[64];
	CHECK_OK(fi_mr_reg(r.domain, buf, sizeof(buf), FI_READ, 0, 1, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int fabric_busy_with_eq(void)
{
	struct test_res r;
	struct fi_eq_attr a = eq_attr();
	struct fid_eq *eq = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_close(&r.domain->fid));
	r.domain = NULL;
	CHECK_OK(fi_eq_open(r.fabric, &a, &eq, NULL));
	CHECK_RC(fi_close(&r.fabric->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&eq->fid));
	return test_close(&r);
}

static int domain_busy_with_mr(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	static char buf[64];
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf, sizeof(buf), FI_READ | FI_WRITE, 0, 7, 0,
			   &mr, NULL));
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/* An EQ bound to a domain stays referenced until the domain is closed. */
static int eq_bound_to_domain(void)
{
	struct test_res r;
	struct fi_eq_attr a = eq_attr();
	struct fid_eq *eq = NULL;
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_eq_open(r.fabric, &a, &eq, NULL));
	CHECK_OK(fi_domain_bind(r.domain, &eq->fid, 0));
	CHECK_RC(fi_close(&eq->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&r.domain->fid));
	r.domain = NULL;
	CHECK_OK(fi_close(&eq->fid));
	return test_close(&r);
}

static int domain_bind_wrong_class(void)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	static char buf[64];
	CHECK_OK(test_open(&r));
	CHECK_OK(fi_mr_reg(r.domain, buf, sizeof(buf), FI_READ, 0, 3, 0, &mr, NULL));
	CHECK_RC(fi_domain_bind(r.domain, &mr->fid, 0), -FI_EINVAL);
	CHECK_RC(fi_domain_bind(r.domain, &r.fabric->fid, 0), -FI_EINVAL);
	CHECK_RC(fi_domain_bind(r.domain, &r.domain->fid, 0), -FI_EINVAL);
	CHECK_RC(fi_domain_bind(r.domain, NULL, 0), -FI_EINVAL);
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

/*
 * A fid that is not oxshm's own but reaches oxshm's close through its ops
 * (a copy of a live object, or one with a forged class) is refused, not
 * trusted. The copy sits in a zeroed block so a check that looks past the
 * fid reads zeros, not someone else's memory.
 */
struct forged {
	struct fid fid;
	char pad[4096];
};

static int close_forged_fid(void)
{
	struct test_res r;
	static struct forged forged;
	CHECK_OK(test_open(&r));
	memset(&forged, 0, sizeof(forged));
	forged.fid = r.domain->fid;
	CHECK_RC(fi_close(&forged.fid), -FI_EINVAL);
	forged.fid.fclass = FI_CLASS_MR;
	CHECK_RC(fi_close(&forged.fid), -FI_EINVAL);
	memset(&forged, 0, sizeof(forged));
	forged.fid = r.fabric->fid;
	CHECK_RC(fi_close(&forged.fid), -FI_EINVAL);
	/* The real objects are untouched and still close in order. */
	return test_close(&r);
}

static const struct test_case cases[] = {
	CASE(fabric_open_close),
	CASE(fabric_unknown_prov),
	CASE(fabric_unknown_name),
	CASE(fabric_null_args),
	CASE(fabric2_open_close),
	CASE(domain_open_close),
	CASE(two_domains),
	CASE(domain_null_args),
	CASE(fabric_busy_with_domain),
	CASE(fabric_busy_with_eq),
	CASE(domain_busy_with_mr),
	CASE(eq_bound_to_domain),
	CASE(domain_bind_wrong_class),
	CASE(close_forged_fid),
};

TEST_MAIN(cases)
