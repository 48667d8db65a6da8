/*
 * msg_cpu.c: the CPU cost of the small-message path, one process, one
 * endpoint sending to itself (`make bench`, bench/msg_cpu_run.sh).
 *
 *   msg_cpu PROVIDER N
 *
 * Prints, in nanoseconds of this thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID, so time the thread spends preempted does not
 * count), the least over 5 rounds of:
 *   empty_read_ns  one fi_cq_read on an idle CQ (the polling loop's cost);
 *   msg_ns         fi_recv + fi_inject of 64 bytes to itself + fi_cq_read
 *                  until the receive completes (the message path's cost).
 * Built against upstream's headers; runs on any libfabric.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

#define TRY(x)                                                          \
	do {                                                            \
		int r_ = (int)(x);                                      \
		if (r_) {                                               \
			fprintf(stderr, "%s: %s\n", #x, fi_strerror(-r_)); \
			return 1;                                       \
		}                                                       \
	} while (0)

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: msg_cpu PROVIDER N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	struct fi_info *hints = fi_allocinfo(), *info;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup(argv[1]);
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	TRY(fi_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, hints, &info));
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	TRY(fi_cq_open(domain, &cq_attr, &cq, NULL));
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	TRY(fi_av_open(domain, &av_attr, &av, NULL));
	TRY(fi_endpoint(domain, info, &ep, NULL));
	TRY(fi_ep_bind(ep, &av->fid, 0));
	TRY(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_enable(ep));
	char name[256];
	size_t len = sizeof(name);
	TRY(fi_getname(&ep->fid, name, &len));
	fi_addr_t self;
	if (fi_av_insert(av, name, 1, &self, 0, NULL) != 1)
		return 1;

	struct fi_cq_tagged_entry e;
	double best = 1e9;
	for (int k = 0; k < 5; k++) {
		double t = cpu_now();
		for (int j = 0; j < n; j++)
			(void)fi_cq_read(cq, &e, 1);
		t = cpu_now() - t;
		if (t < best)
			best = t;
	}
	printf("empty_read_ns=%.1f ", best / n * 1e9);

	char sbuf[64] = { 0 }, rbuf[64];
	int m = n / 10 > 0 ? n / 10 : 1;
	best = 1e9;
	for (int k = 0; k < 5; k++) {
		double t = cpu_now();
		for (int j = 0; j < m; j++) {
			TRY(fi_recv(ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, rbuf));
			ssize_t r;
			while ((r = fi_inject(ep, sbuf, sizeof(sbuf), self)) == -FI_EAGAIN)
				(void)fi_cq_read(cq, &e, 1);
			TRY(r);
			while ((r = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN)
				;
			if (r != 1 || e.op_context != rbuf || e.len != sizeof(sbuf)) {
				fprintf(stderr, "receive: %zd\n", r);
				return 1;
			}
		}
		t = cpu_now() - t;
		if (t < best)
			best = t;
	}
	printf("msg_ns=%.1f\n", best / m * 1e9);

	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}
