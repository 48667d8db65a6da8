/*
 * RMA between two processes: writes and reads of every path (inline in the
 * ring, cross-memory copies), checked byte for byte at both ends, with the
 * counters and completions they must produce.
 */
#include "peer.h"
#include <rdma/fi_domain.h>

enum { BUF = 1 << 20 };

static uint64_t raddr(struct peer *p, const struct peer_region *r, uint64_t off)
{
	return (p->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? r->base + off : off;
}

static int sizes_roundtrip(void)
{
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	unsigned char *buf = calloc(1, BUF);
	CHECK(buf);
	static const size_t sizes[] = { 1, 8, 16384, 16385, 65536, BUF };
	int rc = 0;
	if (p.is_target) {
		struct fid_mr *mr;
		CHECK_OK(peer_publish_region(&p, buf, BUF, FI_REMOTE_READ | FI_REMOTE_WRITE, &mr));
		CHECK_OK(peer_sync(&p)); /* writes done */
		peer_fill(buf, BUF, 7);
		CHECK_OK(peer_sync(&p)); /* reads may start */
		CHECK_OK(peer_sync(&p)); /* reads done */
		uint64_t n = sizeof(sizes) / sizeof(sizes[0]);
		CHECK(peer_cntr(&p, C_REMOTE_WRITE) == n);
		CHECK(peer_cntr(&p, C_REMOTE_READ) == n);
		CHECK(peer_cntr_err(&p, C_REMOTE_WRITE) == 0);
		CHECK_OK(fi_close(&mr->fid));
	} else {
		struct peer_region r;
		CHECK(peer_get(&p, &r, sizeof(r)) == 0);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			peer_fill(buf, sizes[i], (unsigned)i);
			int ctx;
			CHECK_OK(fi_write(p.ep, buf, sizes[i], NULL, p.other,
					  raddr(&p, &r, 0), r.key, &ctx));
			struct fi_cq_tagged_entry e;
			CHECK_OK(peer_wait(&p, &e, NULL));
			CHECK(e.op_context == &ctx);
			CHECK(e.flags == (FI_RMA | FI_WRITE));
		}
		CHECK(peer_cntr(&p, C_WRITE) == sizeof(sizes) / sizeof(sizes[0]));
		CHECK_OK(peer_sync(&p));
		CHECK_OK(peer_sync(&p));
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			memset(buf, 0, sizes[i]);
			CHECK_OK(fi_read(p.ep, buf, sizes[i], NULL, p.other,
					 raddr(&p, &r, 0), r.key, NULL));
			struct fi_cq_tagged_entry e;
			CHECK_OK(peer_wait(&p, &e, NULL));
			CHECK(e.flags == (FI_RMA | FI_READ));
			CHECK(e.len == sizes[i]);
			rc |= peer_check_fill(buf, sizes[i], 7);
		}
		CHECK(peer_cntr(&p, C_READ) == sizeof(sizes) / sizeof(sizes[0]));
		CHECK_OK(peer_sync(&p));
	}
	free(buf);
	return peer_close(&p, rc);
}

/* A write with a key that names nothing: an error completion with
 * FI_EINVAL at the initiator, no byte and no counter at the target. */
static int wrong_key_is_refused(void)
{
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	unsigned char buf[4096];
	memset(buf, 0xAA, sizeof(buf));
	if (p.is_target) {
		struct fid_mr *mr;
		CHECK_OK(peer_publish_region(&p, buf, sizeof(buf), FI_REMOTE_WRITE, &mr));
		CHECK_OK(peer_sync(&p));
		for (size_t i = 0; i < sizeof(buf); i++)
			CHECK(buf[i] == 0xAA);
		CHECK(peer_cntr(&p, C_REMOTE_WRITE) == 0);
		CHECK_OK(fi_close(&mr->fid));
	} else {
		struct peer_region r;
		CHECK(peer_get(&p, &r, sizeof(r)) == 0);
		unsigned char src[64];
		memset(src, 0x55, sizeof(src));
		int ctx;
		CHECK_OK(fi_write(p.ep, src, sizeof(src), NULL, p.other,
				  raddr(&p, &r, 0), r.key ^ 0x100, &ctx));
		struct fi_cq_err_entry err;
		CHECK_RC(peer_wait(&p, NULL, &err), -FI_EAVAIL);
		CHECK(err.op_context == &ctx);
		CHECK(err.err == FI_EINVAL);
		CHECK(err.flags & FI_WRITE);
		CHECK(fi_cq_strerror(p.cq, err.prov_errno, err.err_data, NULL, 0) != NULL);
		CHECK(peer_cntr(&p, C_WRITE) == 0);
		CHECK(peer_cntr_err(&p, C_WRITE) == 1);
		CHECK_OK(peer_sync(&p));
	}
	return peer_close(&p, 0);
}

/*
 * A stream of fi_writedata of 8-16 KiB (the sizes whose way, through the
 * ring or one copy by the target, an endpoint measures; FI_OXSHM_SINGLE
 * fixes it in the env cases): every byte lands where it was aimed, and
 * the target gets each write's remote CQ data exactly once.
 */
enum { WD_N = 192, WD_SLOT = 16384 };

static size_t wd_len(int i)
{
	return 8192 + (size_t)(i * 1031) % 8193;
}

static int writedata_stream(void)
{
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	unsigned char *buf = calloc(WD_N, WD_SLOT);
	CHECK(buf);
	int rc = 0;
	if (p.is_target) {
		struct fid_mr *mr;
		CHECK_OK(peer_publish_region(&p, buf, (size_t)WD_N * WD_SLOT, FI_REMOTE_WRITE, &mr));
		static unsigned char seen[WD_N];
		for (int k = 0; k < WD_N; k++) {
			struct fi_cq_tagged_entry e;
			CHECK_OK(peer_wait(&p, &e, NULL));
			CHECK(e.flags & FI_REMOTE_CQ_DATA);
			CHECK(e.data >= 1 && e.data <= WD_N && !seen[e.data - 1]);
			seen[e.data - 1] = 1;
		}
		CHECK_OK(peer_sync(&p)); /* every write completed at the initiator */
		for (int i = 0; i < WD_N; i++) {
			rc |= peer_check_fill(buf + (size_t)i * WD_SLOT, wd_len(i), 100u + (unsigned)i);
			for (size_t b = wd_len(i); b < WD_SLOT; b++)
				rc |= buf[(size_t)i * WD_SLOT + b] != 0;
		}
		CHECK(peer_cntr(&p, C_REMOTE_WRITE) == WD_N);
		CHECK_OK(fi_close(&mr->fid));
	} else {
		struct peer_region r;
		CHECK(peer_get(&p, &r, sizeof(r)) == 0);
		for (int i = 0; i < WD_N; i++)
			peer_fill(buf + (size_t)i * WD_SLOT, wd_len(i), 100u + (unsigned)i);
		int done = 0;
		for (int i = 0; i < WD_N; i++) {
			ssize_t w;
			while ((w = fi_writedata(p.ep, buf + (size_t)i * WD_SLOT, wd_len(i), NULL,
						 (uint64_t)i + 1, p.other,
						 raddr(&p, &r, (uint64_t)i * WD_SLOT), r.key,
						 NULL)) == -FI_EAGAIN) {
				struct fi_cq_tagged_entry e;
				if (fi_cq_read(p.cq, &e, 1) == 1)
					done++;
			}
			CHECK_OK(w);
		}
		while (done < WD_N) {
			struct fi_cq_tagged_entry e;
			CHECK_OK(peer_wait(&p, &e, NULL));
			CHECK(e.flags == (FI_RMA | FI_WRITE));
			done++;
		}
		CHECK(peer_cntr(&p, C_WRITE) == WD_N);
		CHECK_OK(peer_sync(&p));
	}
	free(buf);
	return peer_close(&p, rc);
}

static const struct test_case cases[] = {
	CASE(sizes_roundtrip),
	CASE(wrong_key_is_refused),
	CASE(writedata_stream),
	CASE_ENV(writedata_stream, "FI_OXSHM_SINGLE=1"),
	CASE_ENV(writedata_stream, "FI_OXSHM_SINGLE=0"),
};

TEST_MAIN(cases)
