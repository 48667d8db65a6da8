/*
 * shim_bench.c: what a registration and a close cost through whatever
 * libfabric is loaded, for bench/shim_run.sh to run with and without
 * liboxfabric-shim.so preloaded.
 *
 *   shim_bench PROVIDER ROUNDS BATCH
 *
 * Each round registers BATCH buffers of 4 KiB (fi_mr_reg), then closes
 * them, timing each call with clock_gettime around it; the medians of
 * the per-call times over all rounds are printed as
 * `reg_ns=N close_ns=N pair_ns=N`.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	const char *prov = argc > 1 ? argv[1] : "oxshm";
	size_t rounds = argc > 2 ? strtoul(argv[2], NULL, 0) : 200;
	size_t batch = argc > 3 ? strtoul(argv[3], NULL, 0) : 64;
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_mr **mrs = calloc(batch, sizeof(*mrs));
	uint64_t *reg = calloc(rounds * batch, sizeof(uint64_t));
	uint64_t *cls = calloc(rounds * batch, sizeof(uint64_t));
	uint64_t *pair = calloc(rounds * batch, sizeof(uint64_t));
	char *buf = aligned_alloc(4096, batch * 4096);
	int rc;

	if (!hints || !mrs || !reg || !cls || !pair || !buf)
		return 2;
	memset(buf, 1, batch * 4096);
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
	if (rc) {
		fprintf(stderr, "open %s: %s\n", prov, fi_strerror(-rc));
		return 2;
	}
	for (size_t r = 0; r < rounds; r++) {
		for (size_t i = 0; i < batch; i++) {
			uint64_t t0 = now_ns();

			rc = fi_mr_reg(domain, buf + i * 4096, 4096, FI_SEND | FI_RECV | FI_READ | FI_WRITE,
				       0, i + 1, 0, &mrs[i], NULL);
			reg[r * batch + i] = now_ns() - t0;
			if (rc) {
				fprintf(stderr, "fi_mr_reg: %s\n", fi_strerror(-rc));
				return 2;
			}
		}
		for (size_t i = 0; i < batch; i++) {
			uint64_t t0 = now_ns();

			fi_close(&mrs[i]->fid);
			cls[r * batch + i] = now_ns() - t0;
			pair[r * batch + i] = reg[r * batch + i] + cls[r * batch + i];
		}
	}
	printf("reg_ns=%llu close_ns=%llu pair_ns=%llu\n",
	       (unsigned long long)median(reg, rounds * batch),
	       (unsigned long long)median(cls, rounds * batch),
	       (unsigned long long)median(pair, rounds * batch));
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(buf);
	free(pair);
	free(cls);
	free(reg);
	free(mrs);
	return 0;
}
