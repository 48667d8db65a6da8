/*
 * Data transfers inside one process: an endpoint addressing itself, and two
 * endpoints of different domains of the same process. Every path (inline,
 * one cross-memory copy, a shared copy taken whole or in halves, staged
 * pieces in the staged builds) must work when the initiator and the target
 * are the same process, and still be verified: a wrong key is refused and
 * moves nothing. Changes to an AV reach the data path's cached lookups. A
 * CQ opened smaller than what completes before a read loses no completion.
 */
#include "peer.h"
#include <rdma/fi_domain.h>

enum { BUF = 1 << 20 };
static const size_t sizes[] = { 8, 16385, 65536, 300000, BUF };
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };

/* Inserts `to`'s name into `from`'s AV. */
static int address(struct peer *from, struct peer *to, fi_addr_t *out)
{
	char name[64] = { 0 };
	size_t len = sizeof(name);
	CHECK_OK(fi_getname(&to->ep->fid, name, &len));
	const char *names[1] = { name };
	CHECK_RC(fi_av_insert(from->av, names, 1, out, 0, NULL), 1);
	return 0;
}

/* Waits for one completion of `ctx` on `p`, success expected. */
static int done(struct peer *p, void *ctx)
{
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == ctx);
	return 0;
}

/*
 * `ini` writes every size into `tgt`'s region and reads it back, then
 * writes with a wrong key; `tgt` may be `ini` itself. The target's bytes,
 * both sides' counters and the refusal are checked.
 */
static int rma_between(struct peer *ini, struct peer *tgt)
{
	unsigned char *region = calloc(1, BUF), *src = malloc(BUF), *dst = malloc(BUF);
	CHECK(region && src && dst);
	struct fid_mr *mr;
	CHECK_OK(fi_mr_reg(tgt->domain, region, BUF, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
			   &mr, NULL));
	uint64_t key = fi_mr_key(mr);
	fi_addr_t to;
	CHECK_OK(address(ini, tgt, &to));
	int ctx;
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		peer_fill(src, n, (unsigned)i);
		CHECK_OK(fi_write(ini->ep, src, n, NULL, to, peer_raddr(tgt, region, 0), key,
				  &ctx));
		CHECK_OK(done(ini, &ctx));
		CHECK_OK(peer_check_fill(region, n, (unsigned)i));
		memset(dst, 0, n);
		CHECK_OK(fi_read(ini->ep, dst, n, NULL, to, peer_raddr(tgt, region, 0), key, &ctx));
		CHECK_OK(done(ini, &ctx));
		CHECK_OK(peer_check_fill(dst, n, (unsigned)i));
	}
	/* A wrong key: refused at the target, nothing moves, error completion. */
	unsigned char before[4096];
	memcpy(before, region, sizeof(before));
	memset(src, 0xEE, 4096);
	CHECK_OK(fi_write(ini->ep, src, 4096, NULL, to, peer_raddr(tgt, region, 0), key ^ 0x100,
			  &ctx));
	struct fi_cq_err_entry err;
	CHECK_RC(peer_wait(ini, NULL, &err), -FI_EAVAIL);
	CHECK(err.op_context == &ctx);
	CHECK(err.err == FI_EINVAL);
	CHECK(memcmp(region, before, sizeof(before)) == 0);
	CHECK(peer_cntr(ini, C_WRITE) == NSIZES);
	CHECK(peer_cntr_err(ini, C_WRITE) == 1);
	CHECK(peer_cntr(ini, C_READ) == NSIZES);
	if (tgt->info->caps & FI_RMA_EVENT) {
		CHECK(peer_cntr(tgt, C_REMOTE_WRITE) == NSIZES);
		CHECK(peer_cntr(tgt, C_REMOTE_READ) == NSIZES);
	}
	CHECK_OK(fi_close(&mr->fid));
	free(region);
	free(src);
	free(dst);
	return 0;
}

static int open_one(struct peer *p)
{
	memset(p, 0, sizeof(*p));
	return peer_open_ep(p, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, 0);
}

/* An endpoint that writes to and reads from its own registered memory. */
static int rma_to_self(void)
{
	struct peer p;
	CHECK_OK(open_one(&p));
	int rc = rma_between(&p, &p);
	return peer_close_ep(&p) || rc;
}

/* Two endpoints, each on its own fabric and domain, in one process. */
static int rma_between_domains(void)
{
	struct peer a, b;
	CHECK_OK(open_one(&a));
	CHECK_OK(open_one(&b));
	int rc = rma_between(&a, &b);
	return peer_close_ep(&a) || peer_close_ep(&b) || rc;
}

/* Atomics on an endpoint's own memory: sum, fetch-and-add, compare-swap. */
static int atomics_to_self(void)
{
	struct peer p;
	CHECK_OK(open_one(&p));
	uint64_t word = 40, one = 2, old = 0, cmp = 44, swp = 7;
	struct fid_mr *mr;
	CHECK_OK(fi_mr_reg(p.domain, &word, sizeof(word), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
			   0, 0, &mr, NULL));
	fi_addr_t me;
	CHECK_OK(address(&p, &p, &me));
	uint64_t at = peer_raddr(&p, &word, 0), key = fi_mr_key(mr);
	int ctx;
	CHECK_OK(fi_atomic(p.ep, &one, 1, NULL, me, at, key, FI_UINT64, FI_SUM, &ctx));
	CHECK_OK(done(&p, &ctx));
	CHECK(word == 42);
	CHECK_OK(fi_fetch_atomic(p.ep, &one, 1, NULL, &old, NULL, me, at, key, FI_UINT64, FI_SUM,
				 &ctx));
	CHECK_OK(done(&p, &ctx));
	CHECK(old == 42 && word == 44);
	CHECK_OK(fi_compare_atomic(p.ep, &swp, 1, NULL, &cmp, NULL, &old, NULL, me, at, key,
				   FI_UINT64, FI_CSWAP, &ctx));
	CHECK_OK(done(&p, &ctx));
	CHECK(old == 44 && word == 7);
	CHECK_OK(fi_close(&mr->fid));
	return peer_close_ep(&p);
}

/* Messages to itself: an inline one and a 64 KiB one into posted receives. */
static int messages_to_self(void)
{
	struct peer p;
	CHECK_OK(open_one(&p));
	fi_addr_t me;
	CHECK_OK(address(&p, &p, &me));
	static const size_t lens[] = { 100, 65536 };
	unsigned char *out = malloc(65536), *in = malloc(65536);
	CHECK(out && in);
	for (int i = 0; i < 2; i++) {
		int rctx, sctx;
		peer_fill(out, lens[i], 9u + (unsigned)i);
		memset(in, 0, lens[i]);
		CHECK_OK(fi_recv(p.ep, in, lens[i], NULL, me, &rctx));
		CHECK_OK(fi_send(p.ep, out, lens[i], NULL, me, &sctx));
		int seen_r = 0, seen_s = 0;
		for (int k = 0; k < 2; k++) {
			struct fi_cq_tagged_entry e;
			CHECK_OK(peer_wait(&p, &e, NULL));
			if (e.op_context == &rctx) {
				CHECK(e.len == lens[i]);
				CHECK(e.flags & FI_RECV);
				seen_r++;
			} else {
				CHECK(e.op_context == &sctx);
				seen_s++;
			}
		}
		CHECK(seen_r == 1 && seen_s == 1);
		CHECK_OK(peer_check_fill(in, lens[i], 9u + (unsigned)i));
	}
	free(out);
	free(in);
	return peer_close_ep(&p);
}

/* `from` injects 8 bytes carrying `tag` to `to_addr`; `rx` receives them
 * into a posted receive and reports the source it saw in *src. */
static int one_message(struct peer *from, fi_addr_t to_addr, struct peer *rx, unsigned char tag,
		       fi_addr_t *src)
{
	unsigned char out[8], in[8] = { 0 };
	memset(out, tag, sizeof(out));
	int rctx;
	CHECK_OK(fi_recv(rx->ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rctx));
	CHECK_OK(fi_inject(from->ep, out, sizeof(out), to_addr));
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait_from(rx, &e, src, NULL));
	CHECK(e.op_context == &rctx);
	CHECK(memcmp(in, out, sizeof(in)) == 0);
	return 0;
}

/*
 * The data path reads the AV through a cache; every change to the AV must
 * reach it. A send to a removed fi_addr is refused; a TABLE slot reused
 * for another address sends there, not to the old one; a received
 * message's source follows the receiver's AV as it changes.
 */
static int av_changes_reach_the_data_path(void)
{
	struct peer a, b;
	CHECK_OK(open_one(&a));
	CHECK_OK(open_one(&b));
	fi_addr_t a_to_b, b_to_a, src;
	CHECK_OK(address(&a, &b, &a_to_b));
	CHECK_OK(address(&b, &a, &b_to_a));
	/* Twice each way, so that the second of each is a cached lookup. */
	for (int i = 0; i < 2; i++) {
		src = 12345;
		CHECK_OK(one_message(&a, a_to_b, &b, (unsigned char)(1 + i), &src));
		CHECK(src == b_to_a);
	}
	/* The sender's AV loses the address: refused, nothing sent. */
	CHECK_OK(fi_av_remove(a.av, &a_to_b, 1, 0));
	unsigned char x[8] = { 0 };
	CHECK_RC(fi_inject(a.ep, x, sizeof(x), a_to_b), -FI_EINVAL);
	CHECK_OK(peer_cq_stays_empty(&b, 50));
	/* The freed TABLE slot now names a itself: the next send goes to a. */
	fi_addr_t a_to_a;
	CHECK_OK(address(&a, &a, &a_to_a));
	CHECK(a_to_a == a_to_b);
	CHECK_OK(one_message(&a, a_to_a, &a, 7, NULL));
	CHECK_OK(peer_cq_stays_empty(&b, 50));
	/* The receiver's AV loses the sender: no source, then a new one. */
	CHECK_OK(address(&a, &b, &a_to_b));
	CHECK_OK(fi_av_remove(b.av, &b_to_a, 1, 0));
	src = 12345;
	CHECK_OK(one_message(&a, a_to_b, &b, 8, &src));
	CHECK(src == FI_ADDR_NOTAVAIL);
	fi_addr_t b_to_a2;
	CHECK_OK(address(&b, &a, &b_to_a2));
	src = 12345;
	CHECK_OK(one_message(&a, a_to_b, &b, 9, &src));
	CHECK(src == b_to_a2);
	return peer_close_ep(&a) || peer_close_ep(&b);
}

/*
 * A CQ opened smaller than what completes before the application reads it
 * loses nothing: 16 sends and their 16 receives complete (counted by the
 * counters, whose reads drive progress) into a CQ of 4 entries, the log
 * says so once, and all 32 are read afterwards, each once, in order per
 * side.
 */
static int small_cq_loses_no_completion(void)
{
	enum { N = 16 };
	struct peer p;
	peer_cq_size = 4;
	int rc = open_one(&p);
	peer_cq_size = 0;
	CHECK_OK(rc);
	CHECK(p.info->tx_attr->size >= N && p.info->rx_attr->size >= N);
	CHECK(p.cntr[C_SEND] && p.cntr[C_RECV]);
	fi_addr_t me;
	CHECK_OK(address(&p, &p, &me));
	static unsigned char out[N][64], in[N][64];
	static int rctx[N], sctx[N];
	for (int i = 0; i < N; i++) {
		memset(out[i], i + 1, sizeof(out[i]));
		CHECK_OK(fi_recv(p.ep, in[i], sizeof(in[i]), NULL, me, &rctx[i]));
	}
	/* The log says, once, that the CQ holds more than its size. */
	FILE *cap = tmpfile();
	CHECK(cap != NULL);
	fflush(stderr);
	int saved = dup(2);
	dup2(fileno(cap), 2);
	int spins = 0, bad = 0;
	for (int i = 0; i < N && !bad; i++)
		bad = fi_send(p.ep, out[i], sizeof(out[i]), NULL, me, &sctx[i]) != 0;
	while (!bad && (fi_cntr_read(p.cntr[C_SEND]) < N || fi_cntr_read(p.cntr[C_RECV]) < N)) {
		if (++spins >= 10000000 || fi_cntr_readerr(p.cntr[C_SEND]) ||
		    fi_cntr_readerr(p.cntr[C_RECV])) {
			bad = 1;
			break;
		}
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char text[4096];
	rewind(cap);
	size_t got = fread(text, 1, sizeof(text) - 1, cap);
	text[got] = '\0';
	fclose(cap);
	CHECK(!bad);
	if (!strstr(text, "beyond its size"))
		fprintf(stderr, "    log was: %s\n", text);
	CHECK(strstr(text, "completion queue of 4 entries is full") &&
	      strstr(text, "beyond its size"));
	CHECK(strstr(strstr(text, "beyond its size") + 1, "beyond its size") == NULL);
	int next_r = 0, next_s = 0;
	while (next_r + next_s < 2 * N) {
		struct fi_cq_tagged_entry e[8];
		ssize_t n = fi_cq_read(p.cq, e, 8);
		CHECK(n > 0);
		for (ssize_t k = 0; k < n; k++) {
			if (next_r < N && e[k].op_context == &rctx[next_r]) {
				CHECK(e[k].flags & FI_RECV);
				CHECK(e[k].len == sizeof(in[0]));
				CHECK(memcmp(in[next_r], out[next_r], sizeof(in[0])) == 0);
				next_r++;
			} else {
				CHECK(next_s < N && e[k].op_context == &sctx[next_s]);
				CHECK(e[k].flags & FI_SEND);
				next_s++;
			}
		}
	}
	struct fi_cq_tagged_entry e;
	CHECK_RC(fi_cq_read(p.cq, &e, 1), -FI_EAGAIN);
	return peer_close_ep(&p);
}

/*
 * The one-buffer calls (fi_inject, fi_injectdata, fi_send and their
 * tagged forms, fi_inject_write, fi_inject_writedata, fi_recv, fi_trecv)
 * take a short path of their own, which leaves every unusual case to the
 * general one. Those cases behave as the general path says. A NULL buffer
 * with a length is refused with -FI_EINVAL and takes nothing: no counter
 * moves, the receives posted before take the next messages, a refused
 * receive is not left queued (a later message goes to the receive posted
 * after it), a refused write leaves the target's bytes alone. A NULL
 * buffer of 0 bytes, to a peer already met, is a message of 0 bytes.
 * FI_DELIVERY_COMPLETE among the endpoint's transmit flags sends a tagged
 * inject through the general path, which still delivers it. Injected
 * writes here go through the general path too (the endpoint has a write
 * counter), which still lands them.
 */
static int one_buffer_calls_decline_cleanly(void)
{
	struct peer p;
	CHECK_OK(open_one(&p));
	fi_addr_t me;
	CHECK_OK(address(&p, &p, &me));
	unsigned char in[16] = { 0 }, tin[16] = { 0 }, out[16];
	memset(out, 0x5A, sizeof(out));
	int rctx, tctx, sctx, r2, t2;
	struct fi_cq_tagged_entry e;
	/* The peer met once, so that what follows is the short path's. */
	CHECK_OK(fi_recv(p.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rctx));
	CHECK_OK(fi_inject(p.ep, out, 4, me));
	CHECK_OK(peer_wait(&p, &e, NULL));
	CHECK(e.op_context == &rctx && e.len == 4);

	CHECK_OK(fi_recv(p.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &rctx));
	CHECK_OK(fi_trecv(p.ep, tin, sizeof(tin), NULL, FI_ADDR_UNSPEC, 77, 0, &tctx));
	CHECK_RC(fi_inject(p.ep, NULL, 8, me), -FI_EINVAL);
	CHECK_RC(fi_injectdata(p.ep, NULL, 8, 1, me), -FI_EINVAL);
	CHECK_RC(fi_tinject(p.ep, NULL, 8, me, 77), -FI_EINVAL);
	CHECK_RC(fi_tinjectdata(p.ep, NULL, 8, 1, me, 77), -FI_EINVAL);
	CHECK_RC(fi_send(p.ep, NULL, 8, NULL, me, &sctx), -FI_EINVAL);
	CHECK_RC(fi_tsend(p.ep, NULL, 8, NULL, me, 77, &sctx), -FI_EINVAL);
	CHECK_RC(fi_recv(p.ep, NULL, 8, NULL, FI_ADDR_UNSPEC, &sctx), -FI_EINVAL);
	CHECK_RC(fi_trecv(p.ep, NULL, 8, NULL, FI_ADDR_UNSPEC, 78, 0, &sctx), -FI_EINVAL);
	CHECK_OK(peer_cq_stays_empty(&p, 20));
	CHECK(peer_cntr(&p, C_SEND) == 1 && peer_cntr(&p, C_RECV) == 1);
	CHECK(peer_cntr_err(&p, C_SEND) == 0 && peer_cntr_err(&p, C_RECV) == 0);

	/* 0 bytes from NULL: a message, into the receive posted first. */
	CHECK_OK(fi_inject(p.ep, NULL, 0, me));
	CHECK_OK(peer_wait(&p, &e, NULL));
	CHECK(e.op_context == &rctx && e.len == 0);
	/* No refused receive was left queued: the next message of each kind
	 * goes to the receive posted after it. */
	CHECK_OK(fi_inject(p.ep, out, 8, me));
	CHECK_OK(fi_tinject(p.ep, out, 8, me, 78));
	CHECK_OK(fi_recv(p.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &r2));
	CHECK_OK(fi_trecv(p.ep, tin, sizeof(tin), NULL, FI_ADDR_UNSPEC, 78, 0, &t2));
	for (int i = 0; i < 2; i++) {
		CHECK_OK(peer_wait(&p, &e, NULL));
		CHECK(e.op_context == &r2 || e.op_context == &t2);
		CHECK(e.len == 8);
	}

	/* FI_DELIVERY_COMPLETE by default: the tagged inject still arrives. */
	uint64_t f = FI_TRANSMIT | FI_DELIVERY_COMPLETE;
	CHECK_OK(fi_control(&p.ep->fid, FI_SETOPSFLAG, &f));
	f = FI_TRANSMIT;
	CHECK_OK(fi_control(&p.ep->fid, FI_GETOPSFLAG, &f));
	CHECK(f & FI_DELIVERY_COMPLETE);
	CHECK_OK(fi_tinject(p.ep, out, sizeof(out), me, 77));
	CHECK_OK(peer_wait(&p, &e, NULL));
	CHECK(e.op_context == &tctx && e.len == sizeof(out) && e.tag == 77);
	CHECK(memcmp(tin, out, sizeof(out)) == 0);

	/* An inject write from NULL is refused and writes nothing; a good one
	 * lands, counted once. */
	unsigned char region[16] = { 0 }, zero[16] = { 0 };
	struct fid_mr *mr;
	CHECK_OK(fi_mr_reg(p.domain, region, sizeof(region), FI_REMOTE_WRITE, 0, 0, 0, &mr,
			   NULL));
	uint64_t key = fi_mr_key(mr);
	CHECK_RC(fi_inject_write(p.ep, NULL, 8, me, peer_raddr(&p, region, 0), key),
		 -FI_EINVAL);
	CHECK_RC(fi_inject_writedata(p.ep, NULL, 8, 1, me, peer_raddr(&p, region, 0), key),
		 -FI_EINVAL);
	CHECK_OK(peer_cq_stays_empty(&p, 20));
	CHECK(memcmp(region, zero, sizeof(region)) == 0);
	CHECK(peer_cntr(&p, C_WRITE) == 0 && peer_cntr_err(&p, C_WRITE) == 0);
	CHECK_OK(fi_inject_write(p.ep, out, 8, me, peer_raddr(&p, region, 0), key));
	CHECK_OK(fi_cntr_wait(p.cntr[C_WRITE], 1, 10000));
	CHECK(memcmp(region, out, 8) == 0 && memcmp(region + 8, zero, 8) == 0);
	CHECK(peer_cntr_err(&p, C_WRITE) == 0);
	CHECK_OK(fi_close(&mr->fid));
	return peer_close_ep(&p);
}

static const struct test_case cases[] = {
	CASE(rma_to_self),
	CASE(rma_between_domains),
	CASE(atomics_to_self),
	CASE(messages_to_self),
	CASE(av_changes_reach_the_data_path),
	CASE_ENV(small_cq_loses_no_completion, "FI_LOG_LEVEL=warn"),
	CASE(one_buffer_calls_decline_cleanly),
};

TEST_MAIN(cases)
