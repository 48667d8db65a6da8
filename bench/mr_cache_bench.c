/*
 * The registration cache of oxshm's pinned mode (FI_OXSHM_PIN=1), run by
 * bench/cache_run.sh under several environments (one process each, as
 * libfabric reads its variables once):
 *   reg     fi_mr_reg of one 64 KiB buffer GROUP times (MRs live together),
 *           then fi_close of the GROUP MRs, timed apart: every
 *           registration a miss with FI_MR_CACHE_MAX_COUNT=0, a hit after
 *           the first with the cache on (of the pinning a live MR holds,
 *           or, first in each group, of the one the last group released)
 *   churn   munmap + mmap(MAP_FIXED) + touching one page of a 64 KiB buffer
 *           that has a cached registration (registered again after each
 *           change), against the same churn without registering: what a
 *           memory monitor costs the application
 * Prints `value <metric> <ns> ns` lines (medians of batches); in reg mode
 * `<metric>_reg`, `<metric>_close` and `<metric>` (the two together).
 */
#define _GNU_SOURCE
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { LEN = 64 * 1024, BATCHES = 9, GROUP = 64 };

static struct fid_domain *domain;

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "mr_cache_bench: %s: %d (%s)\n", what, rc, fi_strerror(-rc));
	exit(1);
}

static void reg_close(void *b)
{
	struct fid_mr *mr;
	int rc = fi_mr_reg(domain, b, LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL);
	if (rc)
		die("fi_mr_reg", rc);
	if ((rc = fi_close(&mr->fid)))
		die("fi_close", rc);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "reg";
	const char *label = argc > 2 ? argv[2] : mode;
	int iters = argc > 3 ? atoi(argv[3]) : 2000;
	struct fi_info *hints = fi_allocinfo(), *info;
	hints->caps = FI_RMA;
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
	hints->fabric_attr->prov_name = strdup("oxshm");
	struct fid_fabric *fabric;
	int rc = fi_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, hints, &info);
	if (rc)
		die("fi_getinfo", rc);
	if ((rc = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (rc = fi_domain(fabric, info, &domain, NULL)))
		die("open", rc);
	char *b = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		die("mmap", -1);
	memset(b, 1, LEN);
	int churn = strcmp(mode, "reg") != 0;
	int with_reg = strcmp(mode, "churn") == 0;
	double t[BATCHES];
	reg_close(b);
	for (int k = 0; k < BATCHES; k++) {
		double t0 = now_ns();
		for (int i = 0; i < iters; i++) {
			if (churn) {
				munmap(b, LEN);
				if (mmap(b, LEN, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != b)
					die("mmap fixed", -1);
				b[0] = 1;
				if (with_reg)
					reg_close(b);
			} else {
				reg_close(b);
			}
		}
		t[k] = (now_ns() - t0) / iters;
	}
	if (!churn) {
		/* Registrations and closes timed apart, GROUP MRs at a time. */
		static struct fid_mr *mrs[GROUP];
		double tr[BATCHES], tc[BATCHES];
		int groups = iters / GROUP > 0 ? iters / GROUP : 1;
		for (int k = 0; k < BATCHES; k++) {
			double reg = 0, cls = 0;
			for (int g = 0; g < groups; g++) {
				double t0 = now_ns();
				for (int i = 0; i < GROUP; i++) {
					rc = fi_mr_reg(domain, b, LEN, FI_REMOTE_READ | FI_REMOTE_WRITE,
						       0, 0, 0, &mrs[i], NULL);
					if (rc)
						die("fi_mr_reg", rc);
				}
				double t1 = now_ns();
				for (int i = 0; i < GROUP; i++)
					if ((rc = fi_close(&mrs[i]->fid)))
						die("fi_close", rc);
				double t2 = now_ns();
				reg += t1 - t0;
				cls += t2 - t1;
			}
			tr[k] = reg / groups / GROUP;
			tc[k] = cls / groups / GROUP;
		}
		qsort(tr, BATCHES, sizeof(tr[0]), cmp);
		qsort(tc, BATCHES, sizeof(tc[0]), cmp);
		printf("value %s_reg %.1f ns\n", label, tr[BATCHES / 2]);
		printf("value %s_close %.1f ns\n", label, tc[BATCHES / 2]);
	}
	qsort(t, BATCHES, sizeof(t[0]), cmp);
	printf("value %s %.1f ns\n", label, t[BATCHES / 2]);
	munmap(b, LEN);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}
