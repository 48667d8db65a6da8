/*
 * shim_misuse.c: one misuse of memory registrations per run, for
 * capi-tests/shim.sh to run under liboxfabric-shim.so.
 *
 *   shim_misuse CASE [PROVIDER]
 *
 * PROVIDER is a provider list as fi_getinfo's hints take it ("tcp;ofi_rxm",
 * "oxshm"). Each misuse sits in its own function (misuse_CASE), so that the
 * shim's report names it as the call site. The program prints
 * `CASE rc=N` for the offending call and exits 0 when that call returned
 * what the case expects (EXPECT_RC, default -FI_EINVAL), 1 otherwise.
 * Cases: clean, double_close, closed_bind, closed_refresh, closed_enable,
 * closed_control, domain_live, leak.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

/* Not static: -rdynamic puts them in the dynamic symbol table, where the
 * shim's dladdr finds their names. */
#define NOINLINE __attribute__((noinline))

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static char buf[2][8192];

static int open_domain(const char *prov)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int rc;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	if (!rc)
		rc = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!rc)
		rc = fi_domain(fabric, info, &domain, NULL);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return rc;
}

NOINLINE struct fid_mr *reg(int i)
{
	struct fid_mr *mr = NULL;
	int rc = fi_mr_reg(domain, buf[i], sizeof(buf[i]),
			   FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
			   0, (uint64_t)i + 1, 0, &mr, NULL);

	if (rc) {
		fprintf(stderr, "fi_mr_reg: %s\n", fi_strerror(-rc));
		exit(2);
	}
	return mr;
}

NOINLINE int misuse_double_close(struct fid_mr *mr)
{
	return fi_close(&mr->fid);
}

NOINLINE int misuse_closed_bind(struct fid_mr *mr)
{
	return fi_mr_bind(mr, &domain->fid, 0);
}

NOINLINE int misuse_closed_refresh(struct fid_mr *mr)
{
	struct iovec iov = { buf[0], sizeof(buf[0]) };

	return fi_mr_refresh(mr, &iov, 1, 0);
}

NOINLINE int misuse_closed_enable(struct fid_mr *mr)
{
	return fi_mr_enable(mr);
}

NOINLINE int misuse_closed_control(struct fid_mr *mr)
{
	uint64_t base = 0;
	size_t size = 0;
	uint8_t raw[64];
	struct fi_mr_raw_attr attr = { .base_addr = &base, .raw_key = raw, .key_size = &size };

	size = sizeof(raw);
	return fi_control(&mr->fid, FI_GET_RAW_MR, &attr);
}

NOINLINE int misuse_domain_live(void)
{
	return fi_close(&domain->fid);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "clean";
	const char *prov = argc > 2 ? argv[2] : "tcp;ofi_rxm";
	const char *e = getenv("EXPECT_RC");
	int expect = e ? atoi(e) : -FI_EINVAL, rc = 0, ret;
	struct fid_mr *mr, *other;

	ret = open_domain(prov);
	if (ret) {
		fprintf(stderr, "open %s: %s\n", prov, fi_strerror(-ret));
		return 2;
	}
	mr = reg(0);
	other = reg(1);
	if (!strcmp(c, "clean")) {
		rc = fi_close(&mr->fid);
		expect = 0;
	} else if (!strcmp(c, "leak")) {
		/* Left open: the shim lists it at exit. */
		printf("%s rc=0\n", c);
		return 0;
	} else if (!strcmp(c, "domain_live")) {
		rc = misuse_domain_live();
		/*
		 * Nothing more is closed: after a refused domain close some
		 * providers (rxm in 1.17) have already torn part of it down,
		 * and a second close would free it twice.
		 */
		printf("%s rc=%d\n", c, rc);
		return rc == expect ? 0 : 1;
	} else {
		if (fi_close(&mr->fid)) {
			fprintf(stderr, "first close failed\n");
			return 2;
		}
		if (!strcmp(c, "double_close"))
			rc = misuse_double_close(mr);
		else if (!strcmp(c, "closed_bind"))
			rc = misuse_closed_bind(mr);
		else if (!strcmp(c, "closed_refresh"))
			rc = misuse_closed_refresh(mr);
		else if (!strcmp(c, "closed_enable"))
			rc = misuse_closed_enable(mr);
		else if (!strcmp(c, "closed_control"))
			rc = misuse_closed_control(mr);
		else {
			fprintf(stderr, "unknown case %s\n", c);
			return 2;
		}
	}
	printf("%s rc=%d\n", c, rc);
	fi_close(&other->fid);
	ret = fi_close(&domain->fid);
	if (ret)
		fprintf(stderr, "domain close: %s\n", fi_strerror(-ret));
	fi_close(&fabric->fid);
	return rc == expect ? 0 : 1;
}
