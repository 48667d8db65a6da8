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
 *
 * Then the data path: an RDM endpoint posts RECV_BATCH receives (fi_recv,
 * each with the desc of a registered 4 KiB buffer), timed together, and
 * cancels them (not timed); the median over ROUNDS rounds of the time per
 * fi_recv is printed as `recv_ns=N` (in tenths of a nanosecond as
 * `recv_dns=N`). A posted receive is the cheapest data-path call that
 * reaches the provider and takes a desc, so what the shim adds to it
 * shows plainly.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
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

enum { RECV_BATCH = 32 };

/* Posts and cancels receives; prints the median cost of one fi_recv. */
static int bench_recv(struct fid_domain *domain, struct fi_info *info, char *buf, size_t rounds)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_context ctx[RECV_BATCH];
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_mr *mr;
	uint64_t *per = calloc(rounds, sizeof(uint64_t));
	size_t batch = RECV_BATCH;
	int rc;

	if (!per)
		return -FI_ENOMEM;
	if (info->rx_attr->size && info->rx_attr->size < batch)
		batch = info->rx_attr->size;
	rc = fi_cq_open(domain, &cq_attr, &cq, NULL);
	if (!rc)
		rc = fi_av_open(domain, &av_attr, &av, NULL);
	if (!rc)
		rc = fi_endpoint(domain, info, &ep, NULL);
	if (!rc)
		rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_ep_bind(ep, &av->fid, 0);
	if (!rc)
		rc = fi_enable(ep);
	if (!rc)
		rc = fi_mr_reg(domain, buf, batch * 4096, FI_RECV, 0, 999, 0, &mr, NULL);
	if (rc)
		return rc;
	for (size_t r = 0; r < rounds; r++) {
		uint64_t t0 = now_ns();

		for (size_t i = 0; i < batch; i++) {
			rc = fi_recv(ep, buf + i * 4096, 4096, fi_mr_desc(mr), FI_ADDR_UNSPEC, &ctx[i]);
			if (rc)
				return rc;
		}
		/* Tenths of a nanosecond per call. */
		per[r] = (now_ns() - t0) * 10 / batch;
		for (size_t i = 0; i < batch; i++)
			fi_cancel(&ep->fid, &ctx[i]);
		for (size_t got = 0; got < batch;) {
			struct fi_cq_entry e;
			struct fi_cq_err_entry err = { 0 };
			ssize_t n = fi_cq_read(cq, &e, 1);

			if (n == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1)
				got++;
			else if (n == 1)
				got++;
		}
	}
	{
		uint64_t m = median(per, rounds);

		printf("recv_ns=%llu recv_dns=%llu\n", (unsigned long long)(m / 10),
		       (unsigned long long)m);
	}
	fi_close(&ep->fid);
	fi_close(&mr->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	free(per);
	return 0;
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
	printf("reg_ns=%llu close_ns=%llu pair_ns=%llu ",
	       (unsigned long long)median(reg, rounds * batch),
	       (unsigned long long)median(cls, rounds * batch),
	       (unsigned long long)median(pair, rounds * batch));
	rc = bench_recv(domain, info, buf, rounds * 4);
	if (rc) {
		fprintf(stderr, "data path on %s: %s\n", prov, fi_strerror(-rc));
		return 2;
	}
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
