/*
 * `make run`: opens oxshm the way every libfabric program does
 * (fi_getinfo -> fi_fabric -> fi_eq_open -> fi_domain -> fi_mr_reg),
 * prints what it got, and closes everything in reverse order.
 * Nothing here is oxfabric-specific: it builds against any libfabric.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define TRY(call)                                                              \
	do {                                                                   \
		int rc_ = (int)(call);                                         \
		if (rc_) {                                                     \
			fprintf(stderr, "demo: %s failed: %d (%s)\n", #call,   \
				rc_, fi_strerror(-rc_));                       \
			return 1;                                              \
		}                                                              \
	} while (0)

static char buf[1 << 16];

int main(void)
{
	struct fi_info *hints, *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_eq *eq = NULL;
	struct fid_domain *domain = NULL;
	struct fid_mr *mr = NULL;
	struct fi_eq_attr eq_attr;
	uint32_t version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
	uint32_t lib = fi_version();

	hints = fi_allocinfo();
	if (!hints) {
		fprintf(stderr, "demo: fi_allocinfo failed\n");
		return 1;
	}
	hints->fabric_attr->prov_name = strdup("oxshm");
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	TRY(fi_getinfo(version, NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);

	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	memset(&eq_attr, 0, sizeof(eq_attr));
	eq_attr.size = 64;
	eq_attr.wait_obj = FI_WAIT_UNSPEC;
	TRY(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
	TRY(fi_domain_bind(domain, &eq->fid, 0));
	TRY(fi_mr_reg(domain, buf, sizeof(buf), FI_READ | FI_WRITE | FI_REMOTE_READ |
		      FI_REMOTE_WRITE, 0, 0x0ace, 0, &mr, NULL));

	printf("libfabric    %u.%u (headers %u.%u)\n", FI_MAJOR(lib), FI_MINOR(lib),
	       FI_MAJOR(version), FI_MINOR(version));
	printf("provider     %s %u.%u\n", info->fabric_attr->prov_name,
	       FI_MAJOR(info->fabric_attr->prov_version),
	       FI_MINOR(info->fabric_attr->prov_version));
	printf("fabric       %s\n", info->fabric_attr->name);
	printf("domain       %s\n", info->domain_attr->name);
	printf("endpoint     %s\n", fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE));
	printf("caps         %s\n", fi_tostr(&info->caps, FI_TYPE_CAPS));
	printf("threading    %s\n", fi_tostr(&info->domain_attr->threading, FI_TYPE_THREADING));
	printf("mr_mode      %s\n", info->domain_attr->mr_mode
	       ? fi_tostr(&info->domain_attr->mr_mode, FI_TYPE_MR_MODE)
	       : "(none required)");
	printf("mr_key_size  %zu\n", info->domain_attr->mr_key_size);
	printf("mr_iov_limit %zu\n", info->domain_attr->mr_iov_limit);
	printf("mr_cnt       %zu\n", info->domain_attr->mr_cnt);
	printf("registered   %p, %zu bytes\n", (void *)buf, sizeof(buf));
	printf("mr key       0x%" PRIx64 "%s\n", fi_mr_key(mr),
	       info->domain_attr->mr_mode & FI_MR_PROV_KEY ? " (provider's)" : " (requested 0xace)");
	printf("mr desc      %p\n", fi_mr_desc(mr));

	TRY(fi_close(&mr->fid));
	TRY(fi_close(&domain->fid));
	TRY(fi_close(&eq->fid));
	TRY(fi_close(&fabric->fid));
	fi_freeinfo(info);
	printf("closed mr, domain, eq, fabric\n");
	return 0;
}
