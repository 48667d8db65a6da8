/*
 * Messages and tagged messages between two processes: every size path
 * (inline in the ring, cross-memory copy when matched), receives posted
 * before and after the message arrives, iovs, fi_sendmsg/fi_recvmsg,
 * inject, remote CQ data, truncation, tag matching with ignore masks,
 * directed receives, completion flags, source addresses and counters.
 *
 * Each case runs the target's half and the initiator's half in their own
 * functions and ends in peer_close, so a failing check in the target
 * ends the target process (its exit status fails the case in the parent).
 */
#include "peer.h"
#include <sys/mman.h>
#include <sys/wait.h>

enum { BIG = 1 << 20 };

/* A case-wide alarm in the parent (the target gets one from peer_open). */
static void arm(void)
{
	alarm(getenv("OX_TEST_SCALE") ? 240 : 30);
}

/* Waits until counter `i` reaches `want` (10 s). */
static int wait_cntr(struct peer *p, int i, uint64_t want)
{
	double end = peer_now() + 10;
	while (peer_now() < end) {
		if (peer_cntr(p, i) >= want)
			return 0;
		struct fi_cq_tagged_entry e;
		(void)fi_cq_read(p->cq, &e, 0);
		sched_yield();
	}
	fprintf(stderr, "    counter %d is %llu, want %llu\n", i,
		(unsigned long long)peer_cntr(p, i), (unsigned long long)want);
	return 1;
}

static int open_pair(struct peer *p)
{
	arm();
	return peer_open(p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0);
}

/* ------------------------------------------------------------------ sizes */

static const size_t sizes[] = { 0, 1, 100, 16384, 16385, 65536, BIG };
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };

static int sizes_target(struct peer *p)
{
	unsigned char *buf = malloc(BIG);
	CHECK(buf);
	int rc = 0;
	for (size_t i = 0; i < NSIZES && !rc; i++) {
		memset(buf, 0, BIG);
		int ctx;
		CHECK_OK(fi_recv(p->ep, buf, BIG, NULL, FI_ADDR_UNSPEC, &ctx));
		CHECK_OK(peer_sync(p)); /* posted: send */
		struct fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		rc = peer_wait_from(p, &e, &src, NULL);
		if (rc)
			break;
		rc = 1;
		CHECK(e.op_context == &ctx);
		CHECK(e.flags == (FI_RECV | FI_MSG));
		CHECK(e.len == sizes[i]);
		CHECK(e.buf == buf);
		CHECK(src == p->other);
		rc = peer_check_fill(buf, sizes[i], (unsigned)i);
		/* Nothing past the message was written. */
		if (!rc && sizes[i] < BIG)
			CHECK(buf[sizes[i]] == 0);
	}
	free(buf);
	CHECK(rc == 0);
	CHECK(peer_cntr(p, C_RECV) == NSIZES);
	CHECK(peer_cntr_err(p, C_RECV) == 0);
	CHECK(peer_cntr(p, C_SEND) == 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int sizes_initiator(struct peer *p)
{
	unsigned char *buf = malloc(BIG);
	CHECK(buf);
	int rc = 0;
	for (size_t i = 0; i < NSIZES && !rc; i++) {
		peer_fill(buf, sizes[i], (unsigned)i);
		CHECK_OK(peer_sync(p));
		int ctx;
		CHECK_OK(fi_send(p->ep, buf, sizes[i], NULL, p->other, &ctx));
		struct fi_cq_tagged_entry e;
		rc = peer_wait(p, &e, NULL);
		if (rc)
			break;
		CHECK(e.op_context == &ctx);
		CHECK(e.flags == (FI_SEND | FI_MSG));
	}
	free(buf);
	CHECK_OK(rc);
	CHECK(peer_cntr(p, C_SEND) == NSIZES);
	CHECK(peer_cntr_err(p, C_SEND) == 0);
	CHECK(peer_cntr(p, C_RECV) == 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* Receive posted first, then the message: 0 B to 1 MiB, data, flags,
 * source address and both counters exact. */
static int send_recv_sizes(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? sizes_target(&p) : sizes_initiator(&p));
}

/* ------------------------------------------------------ source addresses */

static int nosource_target(struct peer *p)
{
	char buf[64] = { 0 };
	int ctx;
	CHECK_OK(fi_recv(p->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx));
	CHECK_OK(peer_sync(p)); /* posted: send */
	struct fi_cq_tagged_entry e;
	fi_addr_t src = p->other;
	CHECK_OK(peer_wait_from(p, &e, &src, NULL));
	CHECK(e.op_context == &ctx);
	CHECK(e.len == 8);
	CHECK(src == FI_ADDR_NOTAVAIL);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int nosource_initiator(struct peer *p)
{
	char buf[8] = "oxshm!!";
	CHECK_OK(peer_sync(p));
	CHECK_OK(fi_inject(p->ep, buf, sizeof(buf), p->other));
	CHECK_OK(peer_sync(p));
	return 0;
}

/*
 * FI_SOURCE, a secondary capability that costs a lookup per received
 * message, is granted only when asked for (fi_getinfo(3)); without it
 * fi_cq_readfrom reports FI_ADDR_NOTAVAIL (fi_cq(3)). send_recv_sizes
 * checks the source with it.
 */
static int source_only_with_fi_source(void)
{
	arm();
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
			   FI_MSG | FI_TAGGED));
	int rc = 0;
	if (p.info->caps & (FI_SOURCE | FI_SOURCE_ERR)) {
		fprintf(stderr, "    caps granted without being asked: %s\n",
			fi_tostr(&p.info->caps, FI_TYPE_CAPS));
		rc = 1;
	}
	if (!rc)
		rc = p.is_target ? nosource_target(&p) : nosource_initiator(&p);
	return peer_close(&p, rc);
}

/* ------------------------------------------------------------ large stream */

/*
 * A stream of large messages sent back to back into receives posted
 * before: from 64 KiB on, and behind one another, the receiver shares the
 * copies with the sender (the sender copies whole messages in turn, or
 * the first half of a lone large one, into the receive buffers). Every
 * byte, each completion's context, length and flags, and nothing written
 * past a message. Completions may come in any order.
 */
enum { NSTREAM = 24 };
static const size_t stream_len[3] = { 65536, 262144 + 5, BIG };

/* The next completion of the stream: the index of its buffer (each
 * buffer is its operation's context), each once, with `flags`; -1 and a
 * line on stderr otherwise. */
static int stream_next(struct peer *p, unsigned char **buf, int *seen, uint64_t flags,
		       struct fi_cq_tagged_entry *e)
{
	if (peer_wait(p, e, NULL))
		return -1;
	int i = 0;
	while (i < NSTREAM && e->op_context != buf[i])
		i++;
	if (i == NSTREAM || seen[i] || e->flags != flags) {
		fprintf(stderr, "    completion %p (flags 0x%llx): not the stream's, or twice\n",
			e->op_context, (unsigned long long)e->flags);
		return -1;
	}
	seen[i] = 1;
	return i;
}

static int stream_target(struct peer *p)
{
	unsigned char *buf[NSTREAM];
	for (int i = 0; i < NSTREAM; i++) {
		buf[i] = calloc(1, stream_len[i % 3] + 1);
		CHECK(buf[i]);
		CHECK_OK(fi_recv(p->ep, buf[i], stream_len[i % 3] + 1, NULL, FI_ADDR_UNSPEC,
				 buf[i]));
	}
	CHECK_OK(peer_sync(p)); /* posted: send */
	int seen[NSTREAM] = { 0 }, rc = 0;
	for (int k = 0; k < NSTREAM && !rc; k++) {
		struct fi_cq_tagged_entry e;
		int i = stream_next(p, buf, seen, FI_RECV | FI_MSG, &e);
		if (i < 0 || e.len != stream_len[i % 3] ||
		    peer_check_fill(buf[i], stream_len[i % 3], 100 + (unsigned)i) ||
		    buf[i][stream_len[i % 3]] != 0)
			rc = 1;
	}
	for (int i = 0; i < NSTREAM; i++)
		free(buf[i]);
	CHECK_OK(rc);
	CHECK(peer_cntr(p, C_RECV) == NSTREAM);
	CHECK(peer_cntr_err(p, C_RECV) == 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int stream_initiator(struct peer *p)
{
	unsigned char *buf[NSTREAM];
	for (int i = 0; i < NSTREAM; i++) {
		buf[i] = malloc(stream_len[i % 3]);
		CHECK(buf[i]);
		peer_fill(buf[i], stream_len[i % 3], 100 + (unsigned)i);
	}
	CHECK_OK(peer_sync(p));
	for (int i = 0; i < NSTREAM; i++) {
		ssize_t r;
		while ((r = fi_send(p->ep, buf[i], stream_len[i % 3], NULL, p->other, buf[i])) ==
		       -FI_EAGAIN)
			(void)fi_cq_read(p->cq, NULL, 0);
		CHECK_OK(r);
	}
	int seen[NSTREAM] = { 0 }, rc = 0;
	for (int k = 0; k < NSTREAM && !rc; k++) {
		struct fi_cq_tagged_entry e;
		rc = stream_next(p, buf, seen, FI_SEND | FI_MSG, &e) < 0;
	}
	/* The sender's buffers are intact (its share only read them). */
	for (int i = 0; i < NSTREAM && !rc; i++)
		rc = peer_check_fill(buf[i], stream_len[i % 3], 100 + (unsigned)i);
	for (int i = 0; i < NSTREAM; i++)
		free(buf[i]);
	CHECK_OK(rc);
	CHECK(peer_cntr(p, C_SEND) == NSTREAM);
	CHECK(peer_cntr_err(p, C_SEND) == 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int large_message_stream(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? stream_target(&p) : stream_initiator(&p));
}

/* ---------------------------------------------------------- failed copies */

/*
 * Bulk sends whose buffer's second half may not be read: the target's copy
 * of those bytes fails, alone or shared (the target copies the second
 * half of a shared one itself, in a stream before it grants the first).
 * Each such send and its receive complete in error with FI_EFAULT, at
 * both ends, and good sends after them and among them arrive whole.
 */
enum { HOLE_LEN = 512 * 1024, NHOLE = 4 };
/* Then a stream of 32 KiB sends, bad and good in turn: shares of several
 * sends copied in one system call (when one fails, each is copied again
 * alone, and only the bad ones fail). */
enum { MIX_LEN = 32 * 1024, NMIX = 8 };

static int mix_target(struct peer *p)
{
	unsigned char *buf[NMIX];
	for (int i = 0; i < NMIX; i++) {
		buf[i] = calloc(1, MIX_LEN);
		CHECK(buf[i]);
		CHECK_OK(fi_recv(p->ep, buf[i], MIX_LEN, NULL, FI_ADDR_UNSPEC, buf[i]));
	}
	CHECK_OK(peer_sync(p)); /* posted: send */
	int seen[NMIX] = { 0 }, rc = 0;
	for (int k = 0; k < NMIX && !rc; k++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = peer_wait(p, &e, &err);
		void *ctx = r == -FI_EAVAIL ? err.op_context : e.op_context;
		int i = 0;
		while (i < NMIX && ctx != buf[i])
			i++;
		/* Receive i takes send i (FI_ORDER_SAS): the even ones are bad. */
		if (i == NMIX || seen[i] || (i % 2 == 0 && (r != -FI_EAVAIL || err.err != FI_EFAULT)) ||
		    (i % 2 == 1 && (r != 0 || e.len != MIX_LEN ||
				    peer_check_fill(buf[i], MIX_LEN, 80u + (unsigned)i)))) {
			fprintf(stderr, "    mixed receive %d: %d, err %d\n", i, r, err.err);
			rc = 1;
		} else {
			seen[i] = 1;
		}
	}
	for (int i = 0; i < NMIX; i++)
		free(buf[i]);
	return rc;
}

static int mix_initiator(struct peer *p, unsigned char *bad)
{
	unsigned char *good[NMIX];
	int ctx[NMIX];
	for (int i = 0; i < NMIX; i++) {
		good[i] = malloc(MIX_LEN);
		CHECK(good[i]);
		peer_fill(good[i], MIX_LEN, 80u + (unsigned)i);
	}
	CHECK_OK(peer_sync(p));
	for (int i = 0; i < NMIX; i++)
		CHECK_OK(fi_send(p->ep, i % 2 ? good[i] : bad, MIX_LEN, NULL, p->other, &ctx[i]));
	int seen[NMIX] = { 0 }, rc = 0;
	for (int k = 0; k < NMIX && !rc; k++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = peer_wait(p, &e, &err);
		int i = (int)((int *)(r == -FI_EAVAIL ? err.op_context : e.op_context) - ctx);
		if (i < 0 || i >= NMIX || seen[i] || (i % 2 == 0 && (r != -FI_EAVAIL || err.err != FI_EFAULT)) ||
		    (i % 2 == 1 && r != 0)) {
			fprintf(stderr, "    mixed send %d: %d, err %d\n", i, r, err.err);
			rc = 1;
		} else {
			seen[i] = 1;
		}
	}
	for (int i = 0; i < NMIX; i++)
		free(good[i]);
	return rc;
}

static int hole_target(struct peer *p)
{
	unsigned char *buf[NHOLE + 1];
	for (int i = 0; i <= NHOLE; i++) {
		buf[i] = calloc(1, HOLE_LEN);
		CHECK(buf[i]);
		CHECK_OK(fi_recv(p->ep, buf[i], HOLE_LEN, NULL, FI_ADDR_UNSPEC, buf[i]));
	}
	CHECK_OK(peer_sync(p)); /* posted: send */
	int failed = 0, rc = 0;
	for (int k = 0; k < NHOLE && !rc; k++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = peer_wait(p, &e, &err);
		if (r != -FI_EAVAIL || err.err != FI_EFAULT || err.op_context == buf[NHOLE]) {
			fprintf(stderr, "    bad send %d: %d, err %d\n", k, r, err.err);
			rc = 1;
		}
		failed++;
	}
	CHECK_OK(rc);
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == buf[NHOLE] && e.len == HOLE_LEN);
	CHECK_OK(peer_check_fill(buf[NHOLE], HOLE_LEN, 77));
	for (int i = 0; i <= NHOLE; i++)
		free(buf[i]);
	CHECK(failed == NHOLE);
	CHECK(peer_cntr(p, C_RECV) == 1);
	CHECK(peer_cntr_err(p, C_RECV) == NHOLE);
	CHECK_OK(mix_target(p));
	CHECK(peer_cntr(p, C_RECV) == 1 + NMIX / 2);
	CHECK(peer_cntr_err(p, C_RECV) == NHOLE + NMIX / 2);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int hole_initiator(struct peer *p)
{
	unsigned char *m = mmap(NULL, 2 * HOLE_LEN, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	unsigned char *hole = m + HOLE_LEN / 2;
	/* The buffer's second half, to the end of the mapping, may not be
	 * read (left mapped: valgrind would place its own memory in a hole). */
	CHECK_OK(mprotect(hole + HOLE_LEN / 2, HOLE_LEN, PROT_NONE));
	memset(hole, 5, HOLE_LEN / 2);
	unsigned char *good = malloc(HOLE_LEN);
	CHECK(good);
	peer_fill(good, HOLE_LEN, 77);
	int ctx[NHOLE + 1];
	CHECK_OK(peer_sync(p));
	for (int i = 0; i < NHOLE; i++)
		CHECK_OK(fi_send(p->ep, hole, HOLE_LEN, NULL, p->other, &ctx[i]));
	int rc = 0;
	for (int k = 0; k < NHOLE && !rc; k++) {
		struct fi_cq_err_entry err;
		int r = peer_wait(p, NULL, &err);
		if (r != -FI_EAVAIL || err.err != FI_EFAULT) {
			fprintf(stderr, "    bad send %d: %d, err %d\n", k, r, err.err);
			rc = 1;
		}
	}
	CHECK_OK(rc);
	CHECK_OK(fi_send(p->ep, good, HOLE_LEN, NULL, p->other, &ctx[NHOLE]));
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == &ctx[NHOLE]);
	CHECK(peer_cntr(p, C_SEND) == 1);
	CHECK(peer_cntr_err(p, C_SEND) == NHOLE);
	CHECK_OK(peer_check_fill(good, HOLE_LEN, 77));
	free(good);
	/* Its first half readable, its second not. */
	CHECK_OK(mix_initiator(p, hole + HOLE_LEN / 2 - MIX_LEN / 2));
	CHECK(peer_cntr(p, C_SEND) == 1 + NMIX / 2);
	CHECK(peer_cntr_err(p, C_SEND) == NHOLE + NMIX / 2);
	CHECK_OK(munmap(m, 2 * HOLE_LEN));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int bulk_send_from_a_hole_fails_at_both_ends(void)
{
	/* Staged transfers (FI_OXSHM_CMA=0) read the send buffer in the
	 * sending process itself, where an unmapped buffer faults as any
	 * memcpy from it would: only cross-memory copies can fail cleanly. */
	const char *cma = getenv("FI_OXSHM_CMA");
	if (cma && strcmp(cma, "0") == 0) {
		fprintf(stderr, "    skipped: staged transfers (FI_OXSHM_CMA=0)\n");
		return 0;
	}
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? hole_target(&p) : hole_initiator(&p));
}

/* ------------------------------------------------------------- unexpected */

static const size_t unexp_sizes[] = { 100, 65536, BIG };

static int unexpected_target(struct peer *p)
{
	CHECK_OK(peer_sync(p)); /* all three sent, the small one completed */
	/* They are here (or on their way): nothing completes without a receive. */
	CHECK_OK(peer_cq_stays_empty(p, 100));
	unsigned char *buf[3];
	int ctx[3];
	for (int i = 0; i < 3; i++) {
		buf[i] = calloc(1, BIG);
		CHECK(buf[i]);
		CHECK_OK(fi_recv(p->ep, buf[i], BIG, NULL, FI_ADDR_UNSPEC, &ctx[i]));
	}
	int seen = 0, rc = 0;
	for (int k = 0; k < 3 && !rc; k++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		rc = peer_wait_from(p, &e, &src, NULL);
		if (rc)
			break;
		rc = 1;
		int i = (int)((int *)e.op_context - ctx);
		CHECK(i >= 0 && i < 3);
		CHECK(e.flags == (FI_RECV | FI_MSG));
		CHECK(src == p->other);
		CHECK(e.buf == buf[i]);
		/* Completions may come in any order (comp_order 0), but the
		 * messages are matched in the order sent (FI_ORDER_SAS):
		 * receive i takes message i. */
		int m = -1;
		for (int j = 0; j < 3; j++)
			if (e.len == unexp_sizes[j])
				m = j;
		CHECK(m == i && !(seen & (1 << m)));
		seen |= 1 << m;
		rc = peer_check_fill(buf[i], e.len, 40u + (unsigned)m);
	}
	for (int i = 0; i < 3; i++)
		free(buf[i]);
	CHECK_OK(rc);
	CHECK(seen == 7);
	CHECK(peer_cntr(p, C_RECV) == 3);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int unexpected_initiator(struct peer *p)
{
	unsigned char *buf[3];
	int ctx[3];
	for (int i = 0; i < 3; i++) {
		buf[i] = malloc(unexp_sizes[i]);
		CHECK(buf[i]);
		peer_fill(buf[i], unexp_sizes[i], 40u + (unsigned)i);
		CHECK_OK(fi_send(p->ep, buf[i], unexp_sizes[i], NULL, p->other, &ctx[i]));
	}
	int rc = 0;
	struct fi_cq_tagged_entry e;
	/* The small one is buffered at the target: it completes first, with
	 * no receive posted. The large ones wait for their receives (their
	 * bytes move when matched). */
	rc = peer_wait(p, &e, NULL);
	if (!rc) {
		rc = 1;
		CHECK(e.op_context == &ctx[0]);
		CHECK(e.flags == (FI_SEND | FI_MSG));
		rc = peer_cq_stays_empty(p, 100);
	}
	CHECK_OK(rc);
	CHECK(peer_cntr(p, C_SEND) == 1);
	CHECK_OK(peer_sync(p));
	int seen = 0;
	for (int k = 0; k < 2; k++) {
		CHECK_OK(peer_wait(p, &e, NULL));
		int i = (int)((int *)e.op_context - ctx);
		CHECK(i == 1 || i == 2);
		CHECK(!(seen & (1 << i)));
		seen |= 1 << i;
		CHECK(e.flags == (FI_SEND | FI_MSG));
	}
	for (int i = 0; i < 3; i++)
		free(buf[i]);
	CHECK(peer_cntr(p, C_SEND) == 3);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* Messages that arrive before their receive (small: buffered; large:
 * pulled when the receive is posted). */
static int unexpected_small_and_large(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? unexpected_target(&p) : unexpected_initiator(&p));
}

/* ------------------------------------------------------------------- iovs */

/* Send-side pieces of the two messages (small, large), receive-side pieces. */
static const size_t iov_send[2][4] = { { 7, 300, 1000, 0 }, { 20000, 30000, 50000, 3 } };
static const size_t iov_recv[2][3] = { { 500, 1000, 0 }, { 40000, 40000, 40000 } };
static const size_t iov_nsend[2] = { 3, 4 }, iov_nrecv[2] = { 2, 3 };

static size_t sum(const size_t *v, size_t n)
{
	size_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return s;
}

static int iov_target(struct peer *p)
{
	CHECK(p->info->rx_attr->iov_limit == 4);
	unsigned char junk[8];
	struct iovec five[5];
	for (int i = 0; i < 5; i++)
		five[i] = (struct iovec){ junk, 1 };
	CHECK_RC(fi_recvv(p->ep, five, NULL, 5, FI_ADDR_UNSPEC, NULL), -FI_EINVAL);
	for (int m = 0; m < 2; m++) {
		size_t total = sum(iov_recv[m], iov_nrecv[m]);
		unsigned char *flat = calloc(1, total);
		CHECK(flat);
		struct iovec iov[3];
		size_t at = 0;
		for (size_t i = 0; i < iov_nrecv[m]; i++) {
			iov[i] = (struct iovec){ flat + at, iov_recv[m][i] };
			at += iov_recv[m][i];
		}
		int ctx;
		CHECK_OK(fi_recvv(p->ep, iov, NULL, iov_nrecv[m], FI_ADDR_UNSPEC, &ctx));
		CHECK_OK(peer_sync(p));
		struct fi_cq_tagged_entry e;
		int rc = peer_wait(p, &e, NULL);
		size_t want = sum(iov_send[m], iov_nsend[m]);
		if (!rc) {
			rc = 1;
			CHECK(e.op_context == &ctx);
			CHECK(e.len == want);
			CHECK(e.flags == (FI_RECV | FI_MSG));
			/* The receive pieces are consecutive here: the message
			 * fills them in order. */
			rc = peer_check_fill(flat, want, 60u + (unsigned)m);
			for (size_t i = want; i < total && !rc; i++)
				rc = flat[i] != 0;
		}
		free(flat);
		CHECK_OK(rc);
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

static int iov_initiator(struct peer *p)
{
	CHECK(p->info->tx_attr->iov_limit == 4);
	unsigned char junk[8];
	struct iovec five[5];
	for (int i = 0; i < 5; i++)
		five[i] = (struct iovec){ junk, 1 };
	CHECK_RC(fi_sendv(p->ep, five, NULL, 5, p->other, NULL), -FI_EINVAL);
	CHECK_RC(fi_tsendv(p->ep, five, NULL, 5, p->other, 1, NULL), -FI_EINVAL);
	for (int m = 0; m < 2; m++) {
		size_t total = sum(iov_send[m], iov_nsend[m]);
		unsigned char *flat = malloc(total);
		CHECK(flat);
		peer_fill(flat, total, 60u + (unsigned)m);
		/* Separate buffers per piece, so a gather that reads the wrong
		 * place shows. */
		struct iovec iov[4];
		size_t at = 0;
		for (size_t i = 0; i < iov_nsend[m]; i++) {
			void *b = malloc(iov_send[m][i]);
			CHECK(b);
			memcpy(b, flat + at, iov_send[m][i]);
			iov[i] = (struct iovec){ b, iov_send[m][i] };
			at += iov_send[m][i];
		}
		CHECK_OK(peer_sync(p));
		int ctx;
		int rc = (int)fi_sendv(p->ep, iov, NULL, iov_nsend[m], p->other, &ctx);
		struct fi_cq_tagged_entry e;
		if (!rc)
			rc = peer_wait(p, &e, NULL);
		for (size_t i = 0; i < iov_nsend[m]; i++)
			free(iov[i].iov_base);
		free(flat);
		CHECK_OK(rc);
		CHECK(e.op_context == &ctx);
		CHECK(e.flags == (FI_SEND | FI_MSG));
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

/* fi_sendv/fi_recvv: 3 pieces into 2 (inline), 4 into 3 (cross-memory);
 * 5 iovs are over iov_limit (-FI_EINVAL). */
static int sendv_recvv(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? iov_target(&p) : iov_initiator(&p));
}

/* ---------------------------------------------------------------- sendmsg */

static const size_t msg_sizes[2] = { 200, 65536 };

static int sendmsg_target(struct peer *p)
{
	for (int m = 0; m < 2; m++) {
		unsigned char *b = calloc(1, msg_sizes[m]);
		CHECK(b);
		int ctx;
		struct iovec iov = { b, msg_sizes[m] };
		struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				      .context = &ctx };
		CHECK_OK(fi_recvmsg(p->ep, &msg, FI_COMPLETION));
		CHECK_OK(peer_sync(p));
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		int rc = peer_wait_from(p, &e, &src, NULL);
		if (!rc) {
			rc = 1;
			CHECK(e.op_context == &ctx);
			CHECK(e.flags == (FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA));
			CHECK(e.data == 0xD00D0000u + (unsigned)m);
			CHECK(e.len == msg_sizes[m]);
			CHECK(src == p->other);
			rc = peer_check_fill(b, msg_sizes[m], 80u + (unsigned)m);
		}
		free(b);
		CHECK_OK(rc);
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

static int sendmsg_initiator(struct peer *p)
{
	for (int m = 0; m < 2; m++) {
		size_t n = msg_sizes[m], half = n / 2;
		unsigned char *b = malloc(n);
		CHECK(b);
		peer_fill(b, n, 80u + (unsigned)m);
		int ctx;
		struct iovec iov[2] = { { b, half }, { b + half, n - half } };
		struct fi_msg msg = { .msg_iov = iov, .iov_count = 2, .addr = p->other,
				      .context = &ctx, .data = 0xD00D0000u + (unsigned)m };
		CHECK_OK(peer_sync(p));
		int rc = (int)fi_sendmsg(p->ep, &msg, FI_COMPLETION | FI_REMOTE_CQ_DATA);
		struct fi_cq_tagged_entry e;
		if (!rc)
			rc = peer_wait(p, &e, NULL);
		free(b);
		CHECK_OK(rc);
		CHECK(e.op_context == &ctx);
		CHECK(e.flags == (FI_SEND | FI_MSG));
	}
	CHECK(peer_cntr(p, C_SEND) == 2);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* fi_sendmsg (2 iovs, FI_REMOTE_CQ_DATA) into fi_recvmsg, small and large. */
static int sendmsg_recvmsg(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? sendmsg_target(&p) : sendmsg_initiator(&p));
}

/* ----------------------------------------------------------------- inject */

/* INJ_MAX: oxshm's inject size, upstream shm's. */
enum { NINJ = 50, INJ_LEN = 64, INJ_MAX = 4096 };

static int inject_target(struct peer *p)
{
	unsigned char (*b)[INJ_LEN + 1] = calloc(NINJ + 1, INJ_LEN + 1);
	unsigned char *full = calloc(1, INJ_MAX);
	CHECK(b && full);
	for (int i = 0; i < NINJ; i++)
		CHECK_OK(fi_recv(p->ep, b[i], INJ_LEN + 1, NULL, FI_ADDR_UNSPEC, &b[i]));
	CHECK_OK(fi_recv(p->ep, full, INJ_MAX, NULL, FI_ADDR_UNSPEC, full));
	CHECK_OK(peer_sync(p));
	int seen[NINJ] = { 0 }, rc = 0;
	for (int k = 0; k < NINJ + 1 && !rc; k++) {
		struct fi_cq_tagged_entry e;
		rc = peer_wait(p, &e, NULL);
		if (rc)
			break;
		rc = 1;
		if (e.op_context == full) {
			CHECK(e.len == INJ_MAX);
			rc = peer_check_fill(full, INJ_MAX, 9);
			continue;
		}
		unsigned char *r = e.op_context;
		int i = (int)((r - b[0]) / (INJ_LEN + 1));
		CHECK(i >= 0 && i < NINJ);
		CHECK(e.len == INJ_LEN);
		CHECK(e.flags == (FI_RECV | FI_MSG));
		/* Byte 0 says which inject it was; the rest is its fill. */
		int m = r[0];
		CHECK(m < NINJ && !seen[m]);
		seen[m] = 1;
		rc = peer_check_fill(r + 1, INJ_LEN - 1, (unsigned)m);
	}
	free(b);
	free(full);
	CHECK_OK(rc);
	CHECK(peer_cntr(p, C_RECV) == NINJ + 1);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int inject_initiator(struct peer *p)
{
	CHECK(p->info->tx_attr->inject_size == INJ_MAX);
	unsigned char buf[INJ_MAX + 1] = { 0 };
	CHECK_RC(fi_inject(p->ep, buf, sizeof(buf), p->other), -FI_EMSGSIZE);
	CHECK_OK(peer_sync(p));
	for (int i = 0; i < NINJ; i++) {
		buf[0] = (unsigned char)i;
		peer_fill(buf + 1, INJ_LEN - 1, (unsigned)i);
		CHECK_OK(fi_inject(p->ep, buf, INJ_LEN, p->other));
		/* The buffer is ours again at once. */
		memset(buf, 0xEE, INJ_LEN);
	}
	peer_fill(buf, INJ_MAX, 9);
	CHECK_OK(fi_inject(p->ep, buf, INJ_MAX, p->other));
	memset(buf, 0xEE, INJ_MAX);
	/* Injects complete at the counter only, never at the CQ. */
	CHECK_OK(wait_cntr(p, C_SEND, NINJ + 1));
	CHECK_OK(peer_cq_stays_empty(p, 50));
	CHECK(peer_cntr(p, C_SEND) == NINJ + 1);
	CHECK(peer_cntr_err(p, C_SEND) == 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* Where a send completes: one of at most the inject size once it is in
 * the target's inbox (transmit complete), even while the whole target
 * process is stopped; the same with FI_DELIVERY_COMPLETE only once the
 * target took it, after it is resumed. */
static int completion_point_target(struct peer *p)
{
	unsigned char a[32], b[32];
	CHECK_OK(peer_sync(p)); /* stopped, then resumed, after this */
	CHECK_OK(peer_sync(p));
	CHECK_OK(fi_recv(p->ep, a, sizeof(a), NULL, FI_ADDR_UNSPEC, a));
	CHECK_OK(fi_recv(p->ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, b));
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == a && e.len == sizeof(a));
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == b && e.len == sizeof(b));
	CHECK_OK(peer_check_fill(a, sizeof(a), 1));
	CHECK_OK(peer_check_fill(b, sizeof(b), 2));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int completion_point_initiator(struct peer *p)
{
	unsigned char x[32], y[32];
	int cx, cy, st;
	struct fi_cq_tagged_entry e;
	peer_fill(x, sizeof(x), 1);
	peer_fill(y, sizeof(y), 2);
	CHECK_OK(peer_sync(p));
	CHECK(kill(p->child, SIGSTOP) == 0);
	CHECK(waitpid(p->child, &st, WUNTRACED) == p->child && WIFSTOPPED(st));
	CHECK_OK(fi_send(p->ep, x, sizeof(x), NULL, p->other, &cx));
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == &cx && e.flags == (FI_SEND | FI_MSG));
	struct iovec iov = { y, sizeof(y) };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = p->other, .context = &cy };
	CHECK_OK(fi_sendmsg(p->ep, &m, FI_DELIVERY_COMPLETE | FI_COMPLETION));
	int quiet = peer_cq_stays_empty(p, 300);
	CHECK(kill(p->child, SIGCONT) == 0);
	CHECK_OK(quiet);
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == &cy && e.flags == (FI_SEND | FI_MSG));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int completion_point(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? completion_point_target(&p)
					  : completion_point_initiator(&p));
}

/* fi_inject: buffer reusable on return, no CQ entry, FI_SEND counter. */
static int inject_counts_no_completion(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? inject_target(&p) : inject_initiator(&p));
}

/* FI_INJECT as an operation flag (fi_sendmsg, or the endpoint's default
 * flags) frees the buffer at once but, unlike fi_inject, still completes:
 * fi_msg(3). Two sends each way; the target checks the bytes. */
static int inject_flag_target(struct peer *p)
{
	unsigned char b[2][INJ_LEN];
	for (int i = 0; i < 2; i++)
		CHECK_OK(fi_recv(p->ep, b[i], INJ_LEN, NULL, FI_ADDR_UNSPEC, b[i]));
	CHECK_OK(peer_sync(p));
	for (int k = 0; k < 2; k++) {
		struct fi_cq_tagged_entry e;
		CHECK_OK(peer_wait(p, &e, NULL));
		unsigned char *r = e.op_context;
		CHECK(r == b[0] || r == b[1]);
		CHECK(e.len == INJ_LEN);
		CHECK_OK(peer_check_fill(r, INJ_LEN, r == b[0] ? 21u : 22u));
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

static int inject_flag_initiator(struct peer *p)
{
	unsigned char buf[INJ_LEN];
	struct iovec iov = { buf, INJ_LEN };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = p->other, .context = &iov };
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_sync(p));
	peer_fill(buf, INJ_LEN, 21);
	CHECK_OK(fi_sendmsg(p->ep, &m, FI_INJECT | FI_COMPLETION));
	memset(buf, 0xEE, INJ_LEN);
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == &iov);
	CHECK(e.flags == (FI_SEND | FI_MSG));
	/* The same through the endpoint's default transmit flags. */
	uint64_t f = FI_TRANSMIT | FI_INJECT | FI_COMPLETION;
	CHECK_OK(fi_control(&p->ep->fid, FI_SETOPSFLAG, &f));
	peer_fill(buf, INJ_LEN, 22);
	CHECK_OK(fi_send(p->ep, buf, INJ_LEN, NULL, p->other, buf));
	memset(buf, 0xEE, INJ_LEN);
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == buf);
	CHECK(peer_cntr(p, C_SEND) == 2);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int inject_flag_completes(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? inject_flag_target(&p) : inject_flag_initiator(&p));
}

/* ----------------------------------------------------------------- order */

/* FI_ORDER_SAS: sends of every size path, posted back to back, are matched
 * by the receives in the order they were posted. Each message starts with
 * its sequence number. */
enum { NSAS = 48 };
static const size_t sas_sizes[4] = { 16, 100000, 200, 8192 };

static int sas_target(struct peer *p)
{
	/* Initialised: the sender may copy its own bytes out (valgrind
	 * checks what a system call reads). */
	unsigned char *b = calloc(NSAS, 100000);
	CHECK(b);
	for (int i = 0; i < NSAS; i++)
		CHECK_OK(fi_recv(p->ep, b + (size_t)i * 100000, 100000, NULL, FI_ADDR_UNSPEC,
				 b + (size_t)i * 100000));
	CHECK_OK(peer_sync(p));
	int rc = 0;
	for (int k = 0; k < NSAS && !rc; k++) {
		struct fi_cq_tagged_entry e;
		rc = peer_wait(p, &e, NULL);
		if (rc)
			break;
		unsigned char *r = e.op_context;
		int i = (int)((r - b) / 100000);
		uint32_t seq;
		memcpy(&seq, r, sizeof(seq));
		if (seq != (uint32_t)i || e.len != sas_sizes[i % 4]) {
			fprintf(stderr, "    receive %d got message %u (%zu bytes)\n", i, seq, e.len);
			rc = 1;
		}
	}
	free(b);
	CHECK_OK(rc);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int sas_initiator(struct peer *p)
{
	CHECK(p->info->tx_attr->msg_order & FI_ORDER_SAS);
	CHECK(p->info->rx_attr->msg_order & FI_ORDER_SAS);
	/* Initialised: the sender may copy its own bytes out (valgrind
	 * checks what a system call reads). */
	unsigned char *b = calloc(NSAS, 100000);
	CHECK(b);
	CHECK_OK(peer_sync(p));
	for (int i = 0; i < NSAS; i++) {
		unsigned char *m = b + (size_t)i * 100000;
		uint32_t seq = (uint32_t)i;
		memcpy(m, &seq, sizeof(seq));
		ssize_t r;
		while ((r = fi_send(p->ep, m, sas_sizes[i % 4], NULL, p->other, m)) == -FI_EAGAIN)
			sched_yield();
		CHECK_OK(r);
	}
	int rc = 0;
	for (int k = 0; k < NSAS && !rc; k++)
		rc = peer_wait(p, NULL, NULL);
	free(b);
	CHECK_OK(rc);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int send_after_send_order(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? sas_target(&p) : sas_initiator(&p));
}

/* --------------------------------------------------------------- senddata */

/* fi_senddata small and large, fi_injectdata, fi_tsenddata. */
static const size_t data_sizes[4] = { 16, 100000, 24, 300 };

static int senddata_target(struct peer *p)
{
	for (int m = 0; m < 4; m++) {
		unsigned char *b = calloc(1, data_sizes[m]);
		CHECK(b);
		int ctx;
		if (m < 3)
			CHECK_OK(fi_recv(p->ep, b, data_sizes[m], NULL, FI_ADDR_UNSPEC, &ctx));
		else
			CHECK_OK(fi_trecv(p->ep, b, data_sizes[m], NULL, FI_ADDR_UNSPEC, 0x77, 0,
					  &ctx));
		CHECK_OK(peer_sync(p));
		struct fi_cq_tagged_entry e;
		int rc = peer_wait(p, &e, NULL);
		if (!rc) {
			rc = 1;
			CHECK(e.op_context == &ctx);
			CHECK(e.flags == (FI_RECV | (m < 3 ? FI_MSG : FI_TAGGED) | FI_REMOTE_CQ_DATA));
			if (m == 3)
				CHECK(e.tag == 0x77);
			CHECK(e.data == 0x1234567890abcdefULL + (unsigned)m);
			CHECK(e.len == data_sizes[m]);
			rc = peer_check_fill(b, data_sizes[m], 100u + (unsigned)m);
		}
		free(b);
		CHECK_OK(rc);
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

static int senddata_initiator(struct peer *p)
{
	for (int m = 0; m < 4; m++) {
		unsigned char *b = malloc(data_sizes[m]);
		CHECK(b);
		peer_fill(b, data_sizes[m], 100u + (unsigned)m);
		CHECK_OK(peer_sync(p));
		int ctx, rc;
		uint64_t data = 0x1234567890abcdefULL + (unsigned)m;
		struct fi_cq_tagged_entry e;
		if (m < 2) {
			rc = (int)fi_senddata(p->ep, b, data_sizes[m], NULL, data, p->other, &ctx);
			if (!rc)
				rc = peer_wait(p, &e, NULL);
			if (!rc && (e.op_context != &ctx || e.flags != (FI_SEND | FI_MSG))) {
				fprintf(stderr, "    send completion: flags 0x%llx\n",
					(unsigned long long)e.flags);
				rc = 1;
			}
		} else if (m == 2) {
			rc = (int)fi_injectdata(p->ep, b, data_sizes[m], data, p->other);
			if (!rc)
				rc = wait_cntr(p, C_SEND, 3);
		} else {
			rc = (int)fi_tsenddata(p->ep, b, data_sizes[m], NULL, data, p->other, 0x77,
					       &ctx);
			if (!rc)
				rc = peer_wait(p, &e, NULL);
			if (!rc && (e.op_context != &ctx || e.flags != (FI_SEND | FI_TAGGED)))
				rc = 1;
		}
		free(b);
		CHECK_OK(rc);
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

/* fi_senddata (small, large), fi_injectdata and fi_tsenddata:
 * FI_REMOTE_CQ_DATA and the data in the receiver's entry. */
static int senddata_remote_cq_data(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? senddata_target(&p) : senddata_initiator(&p));
}

/* ------------------------------------------------------------- truncation */

/* Inline and cross-memory, each with the receive posted first and after
 * the message arrived. */
static const size_t trunc_len[4] = { 100, 65536, 100, 65536 };
static const size_t trunc_room[4] = { 10, 1000, 10, 1000 };

static int trunc_target(struct peer *p)
{
	for (int m = 0; m < 4; m++) {
		int late = m >= 2;
		unsigned char *b = calloc(1, trunc_room[m] + 16);
		CHECK(b);
		int ctx;
		if (late) {
			CHECK_OK(peer_sync(p)); /* sent */
			CHECK_OK(peer_cq_stays_empty(p, 50));
		}
		CHECK_OK(fi_recv(p->ep, b, trunc_room[m], NULL, FI_ADDR_UNSPEC, &ctx));
		if (!late)
			CHECK_OK(peer_sync(p));
		struct fi_cq_err_entry err;
		int rc = peer_wait(p, NULL, &err);
		if (rc == -FI_EAVAIL) {
			rc = 1;
			CHECK(err.err == FI_ETRUNC);
			CHECK(err.op_context == &ctx);
			CHECK(err.len == trunc_room[m]);
			CHECK(err.olen == trunc_len[m] - trunc_room[m]);
			CHECK(err.flags & FI_RECV);
			CHECK(err.flags & FI_MSG);
			rc = peer_check_fill(b, trunc_room[m], 120u + (unsigned)m);
			/* Not a byte past the buffer. */
			for (size_t i = trunc_room[m]; i < trunc_room[m] + 16 && !rc; i++)
				rc = b[i] != 0;
		} else {
			fprintf(stderr, "    truncated receive %d: %d (%s), want an error completion\n",
				m, rc, test_errstr(rc));
			rc = 1;
		}
		free(b);
		CHECK_OK(rc);
		CHECK(peer_cntr_err(p, C_RECV) == (uint64_t)m + 1);
		CHECK_OK(peer_sync(p));
	}
	CHECK(peer_cntr(p, C_RECV) == 0);
	return 0;
}

static int trunc_initiator(struct peer *p)
{
	for (int m = 0; m < 4; m++) {
		int late = m >= 2;
		unsigned char *b = malloc(trunc_len[m]);
		CHECK(b);
		peer_fill(b, trunc_len[m], 120u + (unsigned)m);
		int ctx, rc = 0;
		if (!late)
			rc = peer_sync(p);
		if (!rc)
			rc = (int)fi_send(p->ep, b, trunc_len[m], NULL, p->other, &ctx);
		if (late)
			peer_sync(p);
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		/* The sender's operation completes (success, or an error), with
		 * its context. */
		if (!rc)
			rc = peer_wait(p, &e, &err);
		if (rc == -FI_EAVAIL)
			rc = err.op_context == &ctx ? 0 : 1;
		else if (!rc)
			rc = e.op_context == &ctx && e.flags == (FI_SEND | FI_MSG) ? 0 : 1;
		free(b);
		CHECK_OK(rc);
		CHECK_OK(peer_sync(p));
	}
	return 0;
}

/* 100 bytes into 10 (inline) and 64 KiB into 1000 (cross-memory), posted
 * before and after arrival: FI_ETRUNC with len = the buffer and olen =
 * what did not fit. */
static int truncation(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? trunc_target(&p) : trunc_initiator(&p));
}

/* ----------------------------------------------------------------- tagged */

#define TAG_A 0x1155ULL /* matched by 0x1100 with ignore 0xff */
#define TAG_B 0xB0B0ULL

static int tagged_target(struct peer *p)
{
	unsigned char a[128], b[128], c[70000], d[128];
	int ca, cb, cc, cd;
	/* Round 1 (receives posted first): B's receive first, then A's by mask. */
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	CHECK_OK(fi_trecv(p->ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, TAG_B, 0, &cb));
	CHECK_OK(fi_trecv(p->ep, a, sizeof(a), NULL, FI_ADDR_UNSPEC, 0x1100, 0xff, &ca));
	/* One that matches nothing sent (another tag, same ignore mask). */
	CHECK_OK(fi_trecv(p->ep, d, sizeof(d), NULL, FI_ADDR_UNSPEC, 0x2200, 0xff, &cd));
	/* An untagged receive does not take tagged messages. */
	CHECK_OK(fi_recv(p->ep, d, sizeof(d), NULL, FI_ADDR_UNSPEC, &cc));
	CHECK_OK(peer_sync(p));
	for (int k = 0; k < 2; k++) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		CHECK_OK(peer_wait_from(p, &e, &src, NULL));
		CHECK(e.flags == (FI_RECV | FI_TAGGED));
		CHECK(src == p->other);
		if (e.op_context == &ca) {
			CHECK(e.tag == TAG_A);
			CHECK(e.len == 10);
			CHECK_OK(peer_check_fill(a, 10, 1));
		} else {
			CHECK(e.op_context == &cb);
			CHECK(e.tag == TAG_B);
			CHECK(e.len == 20);
			CHECK_OK(peer_check_fill(b, 20, 2));
		}
	}
	CHECK_OK(peer_cq_stays_empty(p, 50));
	/* Round 2 (both arrive first): the second one sent is received first. */
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_cq_stays_empty(p, 100));
	memset(a, 0, sizeof(a));
	memset(c, 0, sizeof(c));
	CHECK_OK(fi_trecv(p->ep, c, sizeof(c), NULL, FI_ADDR_UNSPEC, TAG_B, 0, &cb));
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == &cb);
	CHECK(e.tag == TAG_B);
	CHECK(e.len == 65536);
	CHECK_OK(peer_check_fill(c, 65536, 4));
	CHECK_OK(fi_trecv(p->ep, a, sizeof(a), NULL, FI_ADDR_UNSPEC, TAG_A, 0, &ca));
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == &ca);
	CHECK(e.tag == TAG_A);
	CHECK(e.len == 30);
	CHECK_OK(peer_check_fill(a, 30, 3));
	/* The untagged and the 0x22xx receives are still there: an untagged
	 * message goes to the untagged receive, a 0x22ab one to the other. */
	CHECK_OK(peer_sync(p));
	for (int k = 0; k < 2; k++) {
		CHECK_OK(peer_wait(p, &e, NULL));
		if (e.op_context == &cc) {
			CHECK(e.flags == (FI_RECV | FI_MSG));
			CHECK(e.len == 5);
		} else {
			CHECK(e.op_context == &cd);
			CHECK(e.flags == (FI_RECV | FI_TAGGED));
			CHECK(e.tag == 0x22ab);
			CHECK(e.len == 6);
		}
	}
	CHECK(peer_cntr(p, C_RECV) == 6);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int tagged_initiator(struct peer *p)
{
	unsigned char a[30], b[20], *c = malloc(65536);
	CHECK(c);
	int ca, cb;
	peer_fill(a, 10, 1);
	peer_fill(b, 20, 2);
	CHECK_OK(peer_sync(p));
	CHECK_OK(fi_tsend(p->ep, a, 10, NULL, p->other, TAG_A, &ca));
	CHECK_OK(fi_tsend(p->ep, b, 20, NULL, p->other, TAG_B, &cb));
	for (int k = 0; k < 2; k++) {
		struct fi_cq_tagged_entry e;
		CHECK_OK(peer_wait(p, &e, NULL));
		CHECK(e.op_context == &ca || e.op_context == &cb);
		CHECK(e.flags == (FI_SEND | FI_TAGGED));
	}
	peer_fill(a, 30, 3);
	peer_fill(c, 65536, 4);
	CHECK_OK(fi_tsend(p->ep, a, 30, NULL, p->other, TAG_A, &ca));
	CHECK_OK(fi_tsend(p->ep, c, 65536, NULL, p->other, TAG_B, &cb));
	CHECK_OK(peer_sync(p));
	for (int k = 0; k < 2; k++) {
		struct fi_cq_tagged_entry e;
		CHECK_OK(peer_wait(p, &e, NULL));
		CHECK(e.op_context == &ca || e.op_context == &cb);
		CHECK(e.flags == (FI_SEND | FI_TAGGED));
	}
	free(c);
	CHECK_OK(peer_sync(p));
	CHECK_OK(fi_tinject(p->ep, "tagd22", 6, p->other, 0x22ab));
	CHECK_OK(fi_inject(p->ep, "plain", 5, p->other));
	CHECK_OK(wait_cntr(p, C_SEND, 6));
	CHECK_OK(peer_sync(p));
	return 0;
}

/* Tag matching: exact tags, ignore masks, receives taken out of order
 * (posted first and unexpected), tagged and untagged kept apart. */
static int tagged_matching(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? tagged_target(&p) : tagged_initiator(&p));
}

/* --------------------------------------------------------------- directed */

static int directed_target(struct peer *p)
{
	/* A second AV entry, for an address that is not the sender: our own. */
	char name[64] = { 0 };
	size_t len = sizeof(name);
	CHECK_OK(fi_getname(&p->ep->fid, name, &len));
	const char *names[1] = { name };
	fi_addr_t self;
	CHECK_RC(fi_av_insert(p->av, names, 1, &self, 0, NULL), 1);
	CHECK(self != p->other);
	unsigned char d1[64] = { 0 }, d2[64] = { 0 }, g[64] = { 0 }, t1[64] = { 0 };
	int c1, c2, cg, ct;
	CHECK_OK(fi_recv(p->ep, d1, sizeof(d1), NULL, self, &c1));
	CHECK_OK(fi_trecv(p->ep, t1, sizeof(t1), NULL, self, 7, 0, &ct));
	CHECK_OK(fi_recv(p->ep, g, sizeof(g), NULL, FI_ADDR_UNSPEC, &cg));
	CHECK_OK(peer_sync(p)); /* the initiator sends one message, tag-7 one */
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	CHECK_OK(peer_wait_from(p, &e, &src, NULL));
	CHECK(e.op_context == &cg);
	CHECK(src == p->other);
	CHECK_OK(peer_check_fill(g, 40, 11));
	/* The directed ones stay pending; the tagged message waits unexpected. */
	CHECK_OK(peer_cq_stays_empty(p, 100));
	/* A receive directed at the sender takes the tagged message. */
	CHECK_OK(fi_trecv(p->ep, d2, sizeof(d2), NULL, p->other, 7, 0, &c2));
	CHECK_OK(peer_wait_from(p, &e, &src, NULL));
	CHECK(e.op_context == &c2);
	CHECK(e.flags == (FI_RECV | FI_TAGGED));
	CHECK(e.tag == 7);
	CHECK(src == p->other);
	CHECK_OK(peer_check_fill(d2, 50, 12));
	/* Our own messages to ourselves match the receives directed at us. */
	unsigned char m1[33], m2[34];
	peer_fill(m1, sizeof(m1), 13);
	peer_fill(m2, sizeof(m2), 14);
	int s1, s2;
	CHECK_OK(fi_send(p->ep, m1, sizeof(m1), NULL, self, &s1));
	CHECK_OK(fi_tsend(p->ep, m2, sizeof(m2), NULL, self, 7, &s2));
	int got = 0;
	for (int k = 0; k < 4; k++) {
		CHECK_OK(peer_wait_from(p, &e, &src, NULL));
		if (e.op_context == &s1 || e.op_context == &s2) {
			CHECK(e.flags == (FI_SEND | (e.op_context == &s1 ? FI_MSG : FI_TAGGED)));
			got |= e.op_context == &s1 ? 1 : 2;
		} else if (e.op_context == &c1) {
			CHECK(e.flags == (FI_RECV | FI_MSG));
			CHECK(src == self);
			CHECK(e.len == sizeof(m1));
			CHECK_OK(peer_check_fill(d1, sizeof(m1), 13));
			got |= 4;
		} else {
			CHECK(e.op_context == &ct);
			CHECK(e.flags == (FI_RECV | FI_TAGGED));
			CHECK(src == self);
			CHECK(e.len == sizeof(m2));
			CHECK_OK(peer_check_fill(t1, sizeof(m2), 14));
			got |= 8;
		}
	}
	CHECK(got == 15);
	CHECK(peer_cntr(p, C_RECV) == 4);
	CHECK(peer_cntr(p, C_SEND) == 2);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int directed_initiator(struct peer *p)
{
	unsigned char a[40], b[50];
	peer_fill(a, sizeof(a), 11);
	peer_fill(b, sizeof(b), 12);
	CHECK_OK(peer_sync(p));
	int ca, cb;
	CHECK_OK(fi_send(p->ep, a, sizeof(a), NULL, p->other, &ca));
	CHECK_OK(fi_tsend(p->ep, b, sizeof(b), NULL, p->other, 7, &cb));
	for (int k = 0; k < 2; k++) {
		struct fi_cq_tagged_entry e;
		CHECK_OK(peer_wait(p, &e, NULL));
		CHECK(e.op_context == &ca || e.op_context == &cb);
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

/* FI_DIRECTED_RECV: a receive for another source does not take the
 * message; one for the sender does; loopback messages match receives
 * directed at the endpoint's own address. */
static int directed_recv(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? directed_target(&p) : directed_initiator(&p));
}

/* -------------------------------------------------------------- local only */

/* One endpoint in this process (no peer): argument checks and queue sizes. */
static int local_open(struct peer *p)
{
	memset(p, 0, sizeof(*p));
	return peer_open_ep(p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0);
}

/* What the call refuses: FI_PEEK/FI_CLAIM on untagged receives, and
 * FI_MULTI_RECV on tagged ones (no FI_TAGGED_MULTI_RECV). Peek, claim and
 * multi-receive buffers themselves are in test_peek_multi.c. */
static int recv_flags_unsupported(void)
{
	struct peer p;
	CHECK_OK(local_open(&p));
	unsigned char b[256];
	struct iovec iov = { b, sizeof(b) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC };
	CHECK_RC(fi_recvmsg(p.ep, &msg, FI_PEEK), -FI_EOPNOTSUPP);
	CHECK_RC(fi_recvmsg(p.ep, &msg, FI_CLAIM), -FI_EOPNOTSUPP);
	struct fi_msg_tagged tm = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC };
	CHECK_RC(fi_trecvmsg(p.ep, &tm, FI_MULTI_RECV), -FI_EOPNOTSUPP);
	return peer_close_ep(&p);
}

/*
 * fi_rx_size_left / fi_tx_size_left: within the queue size, and a lower
 * bound: that many receives can be posted without -FI_EAGAIN, whatever is
 * already posted (fi_endpoint(3)).
 */
/* Deprecated in upstream's headers (1.17 and 2.1), still part of the API. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static int size_left(void)
{
	struct peer p;
	CHECK_OK(local_open(&p));
	ssize_t tx = fi_tx_size_left(p.ep), rx = fi_rx_size_left(p.ep);
	CHECK(tx > 0 && (size_t)tx <= p.info->tx_attr->size);
	CHECK(rx > 0 && (size_t)rx <= p.info->rx_attr->size);
	unsigned char b[8];
	enum { PRE = 3 };
	for (int i = 0; i < PRE; i++)
		CHECK_OK(fi_recv(p.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, NULL));
	rx = fi_rx_size_left(p.ep);
	/* The posted receives are counted. */
	CHECK(rx >= 0 && (size_t)rx <= p.info->rx_attr->size - PRE);
	int rc = 0;
	for (ssize_t i = 0; i < rx && !rc; i++) {
		rc = (int)fi_recv(p.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, NULL);
		if (rc)
			fprintf(stderr, "    fi_rx_size_left said %zd after %d posted; receive %zd "
				"returned %d (%s)\n", rx, PRE, i + 1, rc, test_errstr(rc));
	}
	int crc = peer_close_ep(&p);
	CHECK_OK(rc);
	return crc;
}
#pragma GCC diagnostic pop

static const struct test_case cases[] = {
	CASE(send_recv_sizes),
	CASE(source_only_with_fi_source),
	CASE(large_message_stream),
	CASE(bulk_send_from_a_hole_fails_at_both_ends),
	CASE(unexpected_small_and_large),
	CASE(sendv_recvv),
	CASE(sendmsg_recvmsg),
	CASE(inject_counts_no_completion),
	CASE(inject_flag_completes),
	CASE(completion_point),
	CASE(send_after_send_order),
	CASE(senddata_remote_cq_data),
	CASE(truncation),
	CASE(tagged_matching),
	CASE(directed_recv),
	CASE(recv_flags_unsupported),
	CASE(size_left),
};

TEST_MAIN(cases)
