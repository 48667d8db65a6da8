/*
 * The whole path a libfabric program walks: fi_getinfo -> fi_fabric ->
 * fi_eq_open -> fi_domain -> fi_domain_bind -> fi_mr_reg -> close. Each step
 * prints a `result:` line; run.sh requires those lines to be the same in
 * every header build (so they leave out what legitimately differs, such as
 * the API version each build asks for).
 */
#include "test.h"

static void result(const char *step, const char *fmt, unsigned long long a,
		   unsigned long long b)
{
	printf("result: %-10s ", step);
	printf(fmt, a, b);
	printf("\n");
}

static int full_flow(void)
{
	static char buf[8192];
	struct fi_info *hints = test_hints(), *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_eq *eq = NULL;
	struct fid_domain *domain = NULL;
	struct fid_mr *mr = NULL;
	struct fi_eq_attr attr;
	int rc;

	hints->ep_attr->type = FI_EP_RDM;
	rc = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	CHECK_OK(rc);
	printf("result: info       prov=%s fabric=%s domain=%s next=%s\n",
	       info->fabric_attr->prov_name, info->fabric_attr->name, info->domain_attr->name,
	       info->next ? "yes" : "no");
	result("caps", "caps=0x%llx mode=0x%llx", info->caps, info->mode);
	result("ep", "type=%llu addr_format=%llu", info->ep_attr->type, info->addr_format);
	result("domain", "threading=%llu mr_mode=0x%llx", info->domain_attr->threading,
	       (unsigned)info->domain_attr->mr_mode);
	result("mr_limits", "key_size=%llu iov_limit=%llu", info->domain_attr->mr_key_size,
	       info->domain_attr->mr_iov_limit);
	result("mr_cnt", "mr_cnt=%llu prov_version=0x%llx", info->domain_attr->mr_cnt,
	       info->fabric_attr->prov_version);

	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	memset(&attr, 0, sizeof(attr));
	attr.size = 16;
	attr.flags = FI_WRITE;
	attr.wait_obj = FI_WAIT_UNSPEC;
	CHECK_OK(fi_eq_open(fabric, &attr, &eq, NULL));
	CHECK_OK(fi_domain(fabric, info, &domain, NULL));
	CHECK_OK(fi_domain_bind(domain, &eq->fid, 0));
	result("classes", "fabric=%llu domain=%llu", fabric->fid.fclass, domain->fid.fclass);

	struct fi_eq_entry in, out;
	uint32_t event = 0;
	memset(&in, 0, sizeof(in));
	in.data = 0x5eed;
	ssize_t w = fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	ssize_t r = fi_eq_read(eq, &event, &out, sizeof(out), 0);
	result("eq", "write=%llu read=%llu", (unsigned long long)w, (unsigned long long)r);
	CHECK(r == (ssize_t)sizeof(out) && event == FI_NOTIFY && out.data == 0x5eed);

	CHECK_OK(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
			   0xace, 0, &mr, NULL));
	result("mr", "class=%llu key=0x%llx", mr->fid.fclass, fi_mr_key(mr));

	int busy_domain = fi_close(&domain->fid);
	int busy_fabric = fi_close(&fabric->fid);
	result("busy", "domain=%lld fabric=%lld", (unsigned long long)(long long)busy_domain,
	       (unsigned long long)(long long)busy_fabric);
	CHECK_RC(busy_domain, -FI_EBUSY);
	CHECK_RC(busy_fabric, -FI_EBUSY);

	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&domain->fid));
	CHECK_OK(fi_close(&eq->fid));
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	result("closed", "rc=%llu%llu", 0, 0);
	return 0;
}

static const struct test_case cases[] = {
	CASE(full_flow),
};

TEST_MAIN(cases)
