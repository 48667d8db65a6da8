/*
 * Searching for tagged messages and multi-receive buffers between two
 * processes: FI_PEEK, FI_PEEK | FI_CLAIM, FI_CLAIM, FI_DISCARD on
 * fi_trecvmsg (fi_tagged(3)); FI_MULTI_RECV buffers with
 * FI_OPT_MIN_MULTI_RECV, their release, cancel and selective completion
 * (fi_msg(3), fi_cq(3)); and the calls' answers to bad input.
 *
 * Messages of 100 bytes travel in the ring, those of 64 KiB and 1 MiB by a
 * copy when matched (staged through shared memory in the staged builds):
 * a waiting bulk sender is held until its message is received or dropped.
 */
#include "peer.h"

enum { SMALL = 100, MID = 65536, BIG = 1 << 20 };
enum { TAG = 0x900d0000 };

static void arm(void)
{
	alarm(getenv("OX_TEST_SCALE") ? 240 : 30);
}

static int open_pair(struct peer *p)
{
	arm();
	return peer_open(p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0);
}

/* fi_trecvmsg of `len` bytes at `buf` (none when buf is NULL). */
static ssize_t trecvmsg(struct peer *p, void *buf, size_t len, uint64_t tag, void *ctx,
			uint64_t flags)
{
	struct iovec iov = { buf, len };
	struct fi_msg_tagged m = {
		.msg_iov = buf ? &iov : NULL,
		.iov_count = buf ? 1 : 0,
		.addr = FI_ADDR_UNSPEC,
		.tag = tag,
		.context = ctx,
	};
	return fi_trecvmsg(p->ep, &m, flags);
}

static ssize_t recvmsg_flags(struct peer *p, void *buf, size_t len, void *ctx, uint64_t flags)
{
	struct iovec iov = { buf, len };
	struct fi_msg m = {
		.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = ctx,
	};
	return fi_recvmsg(p->ep, &m, flags);
}

/* A peek for `tag` must find nothing: one FI_ENOMSG error completion. */
static int peek_finds_nothing(struct peer *p, uint64_t tag, uint64_t flags)
{
	struct fi_context ctx;
	CHECK_OK(trecvmsg(p, NULL, 0, tag, &ctx, FI_PEEK | flags));
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	CHECK_RC(peer_wait_from(p, &e, NULL, &err), -FI_EAVAIL);
	CHECK(err.err == FI_ENOMSG);
	CHECK(err.op_context == &ctx);
	CHECK(err.flags == (FI_TAGGED | FI_RECV));
	return 0;
}

/* ------------------------------------------------------------------- peek */

static const size_t peek_sizes[] = { SMALL, MID, BIG };

static int peek_target(struct peer *p)
{
	CHECK_OK(peer_sync(p)); /* all sent */
	CHECK_OK(peek_finds_nothing(p, TAG + 9, 0));
	unsigned char *buf = malloc(BIG);
	CHECK(buf);
	int rc = 0;
	for (unsigned i = 0; i < 3 && !rc; i++) {
		rc = 1;
		struct fi_context ctx;
		struct fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		/* Twice: a peek does not consume. */
		for (int k = 0; k < 2; k++) {
			memset(&e, 0, sizeof(e));
			CHECK_OK(trecvmsg(p, NULL, 0, TAG + i, &ctx, FI_PEEK));
			CHECK_OK(peer_wait_from(p, &e, &src, NULL));
			CHECK(e.op_context == &ctx);
			CHECK(e.flags == (FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA));
			CHECK(e.len == peek_sizes[i]);
			CHECK(e.tag == TAG + i);
			CHECK(e.data == 0xda7a00u + i);
			CHECK(src == p->other);
		}
		/* Then received whole. */
		memset(buf, 0, BIG);
		CHECK_OK(fi_trecv(p->ep, buf, BIG, NULL, FI_ADDR_UNSPEC, TAG + i, 0, &ctx));
		CHECK_OK(peer_wait_from(p, &e, &src, NULL));
		CHECK(e.flags == (FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA));
		CHECK(e.len == peek_sizes[i] && e.buf == buf);
		rc = peer_check_fill(buf, peek_sizes[i], 60u + i);
	}
	free(buf);
	CHECK_OK(rc);
	/* Peeks count no receive. */
	CHECK(peer_cntr(p, C_RECV) == 3);
	CHECK_OK(peek_finds_nothing(p, TAG, 0));
	CHECK_OK(peer_cq_stays_empty(p, 50));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int peek_initiator(struct peer *p)
{
	unsigned char *buf[3];
	struct fi_context ctx[3];
	for (unsigned i = 0; i < 3; i++) {
		buf[i] = malloc(peek_sizes[i]);
		CHECK(buf[i]);
		peer_fill(buf[i], peek_sizes[i], 60u + i);
		CHECK_OK(fi_tsenddata(p->ep, buf[i], peek_sizes[i], NULL, 0xda7a00u + i, p->other,
				      TAG + i, &ctx[i]));
	}
	CHECK_OK(peer_sync(p));
	int rc = 0, done = 0;
	for (int k = 0; k < 3 && !rc; k++) {
		struct fi_cq_tagged_entry e;
		rc = peer_wait(p, &e, NULL);
		if (!rc) {
			rc = 1;
			CHECK(e.flags == (FI_TAGGED | FI_SEND));
			done |= 1 << ((struct fi_context *)e.op_context - ctx);
			rc = 0;
		}
	}
	for (int i = 0; i < 3; i++)
		free(buf[i]);
	CHECK_OK(rc);
	CHECK(done == 7);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* A peek reports each waiting message's length, tag, data and source
 * without taking it; the receive that follows gets it whole. A peek that
 * matches nothing completes with FI_ENOMSG. */
static int peek_reports_without_consuming(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? peek_target(&p) : peek_initiator(&p));
}

/* ------------------------------------------------------------------ claim */

static int claim_target(struct peer *p)
{
	CHECK_OK(peer_sync(p)); /* both sent: first MID bytes, then SMALL */
	struct fi_context claim;
	struct fi_cq_tagged_entry e;
	CHECK_OK(trecvmsg(p, NULL, 0, TAG, &claim, FI_PEEK | FI_CLAIM));
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &claim && e.len == MID && e.tag == TAG);
	/* A second claim through the same context is refused. */
	CHECK_RC(trecvmsg(p, NULL, 0, TAG, &claim, FI_PEEK | FI_CLAIM), -FI_EBUSY);
	/* The claimed message is no one else's: an ordinary receive for the
	 * same tag takes the next one. */
	unsigned char *buf = calloc(1, MID);
	CHECK(buf);
	struct fi_context ctx;
	CHECK_OK(fi_trecv(p->ep, buf, MID, NULL, FI_ADDR_UNSPEC, TAG, 0, &ctx));
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &ctx && e.len == SMALL);
	CHECK_OK(peer_check_fill(buf, SMALL, 71));
	/* Only through its context. */
	struct fi_context other;
	CHECK_RC(trecvmsg(p, buf, MID, TAG, &other, FI_CLAIM), -FI_EINVAL);
	CHECK_RC(trecvmsg(p, buf, MID, TAG, NULL, FI_CLAIM), -FI_EINVAL);
	CHECK_OK(peer_cq_stays_empty(p, 20));
	memset(buf, 0, MID);
	CHECK_OK(trecvmsg(p, buf, MID, 0, &claim, FI_CLAIM));
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &claim && e.len == MID && e.buf == buf);
	CHECK(e.flags == (FI_TAGGED | FI_RECV));
	CHECK_OK(peer_check_fill(buf, MID, 70));
	/* Claimed once: the context holds no claim any more. */
	CHECK_RC(trecvmsg(p, buf, MID, TAG, &claim, FI_CLAIM), -FI_EINVAL);
	free(buf);
	CHECK(peer_cntr(p, C_RECV) == 2);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int claim_initiator(struct peer *p)
{
	unsigned char *big = malloc(MID), small[SMALL];
	CHECK(big);
	peer_fill(big, MID, 70);
	peer_fill(small, SMALL, 71);
	struct fi_context c1, c2;
	CHECK_OK(fi_tsend(p->ep, big, MID, NULL, p->other, TAG, &c1));
	CHECK_OK(fi_tsend(p->ep, small, SMALL, NULL, p->other, TAG, &c2));
	CHECK_OK(peer_sync(p));
	struct fi_cq_tagged_entry e;
	int rc = peer_wait(p, &e, NULL);
	if (!rc)
		rc = peer_wait(p, &e, NULL);
	free(big);
	CHECK_OK(rc);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* FI_PEEK | FI_CLAIM reserves a message for the FI_CLAIM receive with the
 * same fi_context; other receives and contexts pass it by. */
static int claim_then_receive(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? claim_target(&p) : claim_initiator(&p));
}

/* ---------------------------------------------------------------- discard */

static int discard_target(struct peer *p)
{
	CHECK_OK(peer_sync(p)); /* four sent, tags TAG..TAG+3 */
	struct fi_context ctx;
	struct fi_cq_tagged_entry e;
	/* Peek and discard a bulk and an inline message. */
	for (unsigned i = 0; i < 2; i++) {
		CHECK_OK(trecvmsg(p, NULL, 0, TAG + i, &ctx, FI_PEEK | FI_DISCARD));
		CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
		CHECK(e.op_context == &ctx && e.tag == TAG + i);
		CHECK(e.len == (i ? SMALL : MID));
		CHECK_OK(peek_finds_nothing(p, TAG + i, 0));
	}
	/* Claim, then discard the claim. */
	CHECK_OK(trecvmsg(p, NULL, 0, TAG + 2, &ctx, FI_PEEK | FI_CLAIM));
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.len == MID);
	CHECK_OK(trecvmsg(p, NULL, 0, 0, &ctx, FI_CLAIM | FI_DISCARD));
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &ctx && e.tag == TAG + 2 && e.len == 0);
	CHECK(e.flags == (FI_TAGGED | FI_RECV));
	CHECK_OK(peek_finds_nothing(p, TAG + 2, 0));
	/* The last one is still there and whole. */
	unsigned char buf[SMALL];
	CHECK_OK(fi_trecv(p->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG + 3, 0, &ctx));
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.len == SMALL);
	CHECK_OK(peer_check_fill(buf, SMALL, 83));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int discard_initiator(struct peer *p)
{
	unsigned char *mid[2], small[2][SMALL];
	struct fi_context ctx[4];
	for (int i = 0; i < 2; i++) {
		mid[i] = malloc(MID);
		CHECK(mid[i]);
		peer_fill(mid[i], MID, 80u + 2 * (unsigned)i);
		peer_fill(small[i], SMALL, 81u + 2 * (unsigned)i);
	}
	CHECK_OK(fi_tsend(p->ep, mid[0], MID, NULL, p->other, TAG, &ctx[0]));
	CHECK_OK(fi_tsend(p->ep, small[0], SMALL, NULL, p->other, TAG + 1, &ctx[1]));
	CHECK_OK(fi_tsend(p->ep, mid[1], MID, NULL, p->other, TAG + 2, &ctx[2]));
	CHECK_OK(fi_tsend(p->ep, small[1], SMALL, NULL, p->other, TAG + 3, &ctx[3]));
	CHECK_OK(peer_sync(p));
	/* Every send completes successfully, the discarded ones included. */
	int rc = 0, done = 0;
	for (int k = 0; k < 4 && !rc; k++) {
		struct fi_cq_tagged_entry e;
		rc = peer_wait(p, &e, NULL);
		if (!rc)
			done |= 1 << ((struct fi_context *)e.op_context - ctx);
	}
	free(mid[0]);
	free(mid[1]);
	CHECK_OK(rc);
	CHECK(done == 15);
	CHECK(peer_cntr_err(p, C_SEND) == 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* FI_PEEK | FI_DISCARD and FI_CLAIM | FI_DISCARD drop a message with a
 * completion; its sender completes successfully. */
static int discard_drops(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? discard_target(&p) : discard_initiator(&p));
}

/* -------------------------------------------------------------- bad input */

static int peek_bad_target(struct peer *p)
{
	CHECK_OK(peer_sync(p)); /* one sent */
	struct fi_context ctx;
	unsigned char buf[SMALL];
	/* Refused by the call, nothing queued, nothing consumed. */
	CHECK_RC(trecvmsg(p, NULL, 0, TAG, &ctx, FI_DISCARD), -FI_EINVAL);
	CHECK_RC(trecvmsg(p, NULL, 0, TAG, NULL, FI_PEEK | FI_CLAIM), -FI_EINVAL);
	CHECK_RC(trecvmsg(p, buf, sizeof(buf), TAG, &ctx, FI_CLAIM), -FI_EINVAL);
	CHECK_RC(trecvmsg(p, NULL, 0, TAG, &ctx, FI_CLAIM | FI_DISCARD), -FI_EINVAL);
	CHECK_RC(trecvmsg(p, buf, sizeof(buf), TAG, &ctx, FI_PEEK | FI_MULTI_RECV),
		 -FI_EINVAL);
	CHECK_RC(recvmsg_flags(p, buf, sizeof(buf), &ctx, FI_PEEK), -FI_EOPNOTSUPP);
	CHECK_RC(recvmsg_flags(p, buf, sizeof(buf), &ctx, FI_CLAIM), -FI_EOPNOTSUPP);
	CHECK_RC(recvmsg_flags(p, buf, sizeof(buf), &ctx, FI_MULTI_RECV | FI_PEEK),
		 -FI_EINVAL);
	CHECK_OK(peer_cq_stays_empty(p, 20));
	/* The message is still there. */
	CHECK_OK(fi_trecv(p->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG, 0, &ctx));
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.len == SMALL);
	CHECK_OK(peer_check_fill(buf, SMALL, 90));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int peek_bad_initiator(struct peer *p)
{
	unsigned char small[SMALL];
	peer_fill(small, SMALL, 90);
	CHECK_OK(fi_tsend(p->ep, small, SMALL, NULL, p->other, TAG, NULL));
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_sync(p));
	return 0;
}

/* Flag combinations fi_tagged(3) rules out are refused by the call with
 * -FI_EINVAL (-FI_EOPNOTSUPP on untagged receives); the waiting message is
 * untouched. */
static int peek_bad_input(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? peek_bad_target(&p) : peek_bad_initiator(&p));
}

/* ------------------------------------------------------------ multi recv */

/* The stream: sizes cycle through these; each message is filled with its
 * index as the seed. */
static const size_t stream_sizes[] = { SMALL, 1, MID, 3000, 0, MID + 7 };
enum { NSTREAM = 40, NSIZES = sizeof(stream_sizes) / sizeof(stream_sizes[0]) };
enum { HALF = 4 * MID, MIN_MULTI = MID + 8 };

static int stream_target(struct peer *p)
{
	size_t min = MIN_MULTI, got_min = 0, len = sizeof(got_min);
	CHECK_OK(fi_setopt(&p->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			   sizeof(min)));
	CHECK_OK(fi_getopt(&p->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got_min, &len));
	CHECK(got_min == MIN_MULTI);
	unsigned char *buf = malloc(2 * HALF);
	CHECK(buf);
	struct fi_context ctx[2];
	size_t used[2] = { 0, 0 };
	for (int i = 0; i < 2; i++)
		CHECK_OK(recvmsg_flags(p, buf + i * HALF, HALF, &ctx[i], FI_MULTI_RECV));
	CHECK_OK(peer_sync(p)); /* posted: send */
	int rc = 0, msgs = 0, releases = 0;
	while (msgs < NSTREAM && !rc) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src;
		rc = peer_wait_from(p, &e, &src, NULL);
		if (rc)
			break;
		rc = 1;
		int h = (struct fi_context *)e.op_context - ctx;
		CHECK(h == 0 || h == 1);
		unsigned char *half = buf + h * HALF;
		if (e.flags & FI_RECV) {
			CHECK((e.flags & ~FI_MULTI_RECV) == (FI_MSG | FI_RECV));
			size_t want = stream_sizes[msgs % NSIZES];
			CHECK(e.len == want);
			CHECK(src == p->other);
			/* Packed one after the other. */
			CHECK((unsigned char *)e.buf == half + used[h]);
			CHECK_OK(peer_check_fill(e.buf, e.len, (unsigned)msgs));
			used[h] += e.len;
			msgs++;
		} else {
			/* A release of its own: nothing else in it. */
			CHECK(e.flags == FI_MULTI_RECV && e.len == 0);
		}
		if (e.flags & FI_MULTI_RECV) {
			/* Released for want of room, never earlier. */
			CHECK(HALF - used[h] < MIN_MULTI);
			releases++;
			used[h] = 0;
			CHECK_OK(recvmsg_flags(p, half, HALF, &ctx[h], FI_MULTI_RECV));
		}
		rc = 0;
	}
	CHECK_OK(rc);
	CHECK(releases >= 2);
	CHECK(peer_cntr(p, C_RECV) == NSTREAM);
	/* Both buffers are posted again, perhaps partly used: cancelled,
	 * each says it is released. */
	for (int i = 0; i < 2; i++)
		CHECK_OK(fi_cancel(&p->ep->fid, &ctx[i]));
	for (int i = 0; i < 2; i++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		CHECK_RC(peer_wait_from(p, &e, NULL, &err), -FI_EAVAIL);
		CHECK(err.err == FI_ECANCELED);
		CHECK(err.flags == (FI_MSG | FI_RECV | FI_MULTI_RECV));
	}
	free(buf);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int stream_initiator(struct peer *p)
{
	unsigned char *buf = malloc(MID + 7);
	CHECK(buf);
	CHECK_OK(peer_sync(p));
	int rc = 0;
	for (int i = 0; i < NSTREAM && !rc; i++) {
		size_t n = stream_sizes[i % NSIZES];
		peer_fill(buf, n, (unsigned)i);
		CHECK_OK(fi_send(p->ep, buf, n, NULL, p->other, NULL));
		struct fi_cq_tagged_entry e;
		rc = peer_wait(p, &e, NULL);
	}
	free(buf);
	CHECK_OK(rc);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* Two multi-receive buffers take a stream of messages of mixed sizes,
 * packed back to back; each is released (FI_MULTI_RECV) when less than
 * FI_OPT_MIN_MULTI_RECV remains or the next message does not fit, and is
 * posted again. */
static int multi_recv_stream(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? stream_target(&p) : stream_initiator(&p));
}

static int unexp_target(struct peer *p)
{
	size_t min = SMALL;
	CHECK_OK(fi_setopt(&p->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			   sizeof(min)));
	CHECK_OK(peer_sync(p)); /* three sent before any buffer */
	/* Room for two: the third waits for the next buffer. */
	size_t room = SMALL + MID + SMALL / 2;
	unsigned char *buf = malloc(room), *more = malloc(BIG);
	CHECK(buf && more);
	struct fi_context ctx, ctx2;
	CHECK_OK(recvmsg_flags(p, buf, room, &ctx, FI_MULTI_RECV));
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &ctx && e.len == SMALL && e.buf == buf);
	CHECK(e.flags == (FI_MSG | FI_RECV));
	CHECK_OK(peer_check_fill(buf, SMALL, 0));
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &ctx && e.len == MID && e.buf == buf + SMALL);
	CHECK(e.flags == (FI_MSG | FI_RECV | FI_MULTI_RECV));
	CHECK_OK(peer_check_fill(buf + SMALL, MID, 1));
	CHECK_OK(peer_cq_stays_empty(p, 20));
	/* The minimum is read when a buffer is posted: with 1, the byte left
	 * after the third message keeps the next buffer. */
	min = 1;
	CHECK_OK(fi_setopt(&p->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			   sizeof(min)));
	CHECK_OK(recvmsg_flags(p, more, BIG, &ctx2, FI_MULTI_RECV));
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &ctx2 && e.len == BIG - 1 && e.buf == more);
	CHECK(e.flags == (FI_MSG | FI_RECV));
	CHECK_OK(peer_check_fill(more, BIG - 1, 2));
	CHECK_OK(peer_cq_stays_empty(p, 20));
	CHECK_OK(peer_sync(p)); /* a fourth, of 1 byte */
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &ctx2 && e.len == 1 && e.buf == more + BIG - 1);
	CHECK(e.flags == (FI_MSG | FI_RECV | FI_MULTI_RECV));
	free(buf);
	free(more);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int unexp_initiator(struct peer *p)
{
	size_t sizes[4] = { SMALL, MID, BIG - 1, 1 };
	unsigned char *buf[4];
	struct fi_context ctx[4];
	for (unsigned i = 0; i < 4; i++) {
		buf[i] = malloc(sizes[i]);
		CHECK(buf[i]);
		peer_fill(buf[i], sizes[i], i);
	}
	for (int i = 0; i < 3; i++)
		CHECK_OK(fi_send(p->ep, buf[i], sizes[i], NULL, p->other, &ctx[i]));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_sync(p));
	CHECK_OK(fi_send(p->ep, buf[3], sizes[3], NULL, p->other, &ctx[3]));
	int rc = 0;
	for (int k = 0; k < 4 && !rc; k++) {
		struct fi_cq_tagged_entry e;
		rc = peer_wait(p, &e, NULL);
	}
	for (int i = 0; i < 4; i++)
		free(buf[i]);
	CHECK_OK(rc);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* A multi-receive buffer posted after its messages takes as many as fit
 * (the last of them carries FI_MULTI_RECV); the rest wait for the next
 * buffer. */
static int multi_recv_unexpected(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? unexp_target(&p) : unexp_initiator(&p));
}

static int release_target(struct peer *p)
{
	size_t min = 16;
	CHECK_OK(fi_setopt(&p->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			   sizeof(min)));
	unsigned char multi[SMALL + 50], plain[SMALL], cancelled[SMALL], trunc[10];
	struct fi_context cm, cp, cc, ct;
	CHECK_OK(recvmsg_flags(p, multi, sizeof(multi), &cm, FI_MULTI_RECV));
	CHECK_OK(fi_recv(p->ep, plain, sizeof(plain), NULL, FI_ADDR_UNSPEC, &cp));
	CHECK_OK(peer_sync(p)); /* posted: two of SMALL bytes */
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &cm && e.len == SMALL && e.flags == (FI_MSG | FI_RECV));
	/* 50 bytes left, >= 16 but too few for the second: the buffer is
	 * released on its own and the message goes to the next receive. */
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &cm && e.flags == FI_MULTI_RECV && e.len == 0);
	CHECK_OK(peer_wait_from(p, &e, NULL, NULL));
	CHECK(e.op_context == &cp && e.len == SMALL && e.flags == (FI_MSG | FI_RECV));
	CHECK_OK(peer_check_fill(multi, SMALL, 0));
	CHECK_OK(peer_check_fill(plain, SMALL, 1));
	/* Cancelled fresh: FI_ECANCELED with FI_MULTI_RECV. */
	CHECK_OK(recvmsg_flags(p, cancelled, sizeof(cancelled), &cc, FI_MULTI_RECV));
	CHECK_OK(fi_cancel(&p->ep->fid, &cc));
	struct fi_cq_err_entry err;
	CHECK_RC(peer_wait_from(p, &e, NULL, &err), -FI_EAVAIL);
	CHECK(err.op_context == &cc && err.err == FI_ECANCELED);
	CHECK(err.flags == (FI_MSG | FI_RECV | FI_MULTI_RECV));
	CHECK_OK(fi_cancel(&p->ep->fid, &cc)); /* again: nothing to cancel */
	/* A fresh buffer smaller than the message truncates it. */
	CHECK_OK(recvmsg_flags(p, trunc, sizeof(trunc), &ct, FI_MULTI_RECV));
	CHECK_OK(peer_sync(p)); /* posted: a third of SMALL bytes */
	CHECK_RC(peer_wait_from(p, &e, NULL, &err), -FI_EAVAIL);
	CHECK(err.op_context == &ct && err.err == FI_ETRUNC);
	CHECK(err.len == sizeof(trunc) && err.olen == SMALL - sizeof(trunc));
	CHECK(err.flags == (FI_MSG | FI_RECV | FI_MULTI_RECV));
	CHECK_OK(peer_check_fill(trunc, sizeof(trunc), 2));
	CHECK_OK(peer_cq_stays_empty(p, 20));
	/* An empty buffer is refused. */
	CHECK_RC(recvmsg_flags(p, trunc, 0, &ct, FI_MULTI_RECV), -FI_EINVAL);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int release_initiator(struct peer *p)
{
	unsigned char b[3][SMALL];
	for (unsigned i = 0; i < 3; i++)
		peer_fill(b[i], SMALL, i);
	CHECK_OK(peer_sync(p));
	CHECK_OK(fi_send(p->ep, b[0], SMALL, NULL, p->other, NULL));
	CHECK_OK(fi_send(p->ep, b[1], SMALL, NULL, p->other, NULL));
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK_OK(peer_sync(p)); /* the truncating buffer is posted */
	CHECK_OK(fi_send(p->ep, b[2], SMALL, NULL, p->other, NULL));
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK_OK(peer_sync(p));
	return 0;
}

/* A used buffer too small for the next message is released with a
 * completion of its own (flags FI_MULTI_RECV, len 0) and the message goes
 * on; a cancelled buffer completes with FI_ECANCELED and FI_MULTI_RECV; a
 * fresh buffer too small truncates (FI_ETRUNC). */
static int multi_recv_release_cancel_trunc(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p));
	return peer_close(&p, p.is_target ? release_target(&p) : release_initiator(&p));
}

/* ------------------------------------------------- multi recv, local only */

/* An endpoint of this process with its own CQ bound for receives with
 * `cq_flags`, opened from `info` (caps as given). */
struct local {
	struct test_res r;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t self;
};

static int local_open(struct local *l, uint64_t drop_caps, uint64_t cq_flags)
{
	memset(l, 0, sizeof(*l));
	CHECK_OK(test_open(&l->r));
	l->r.info->caps &= ~drop_caps;
	l->r.info->rx_attr->caps &= ~drop_caps;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	CHECK_OK(fi_av_open(l->r.domain, &av_attr, &l->av, NULL));
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = FI_WAIT_NONE };
	CHECK_OK(fi_cq_open(l->r.domain, &cq_attr, &l->cq, NULL));
	CHECK_OK(fi_endpoint(l->r.domain, l->r.info, &l->ep, NULL));
	CHECK_OK(fi_ep_bind(l->ep, &l->av->fid, 0));
	CHECK_OK(fi_ep_bind(l->ep, &l->cq->fid, FI_TRANSMIT | FI_RECV | cq_flags));
	CHECK_OK(fi_enable(l->ep));
	char name[64] = { 0 };
	size_t len = sizeof(name);
	CHECK_OK(fi_getname(&l->ep->fid, name, &len));
	const char *names[1] = { name };
	CHECK_RC(fi_av_insert(l->av, names, 1, &l->self, 0, NULL), 1);
	return 0;
}

static int local_close(struct local *l)
{
	CHECK_OK(fi_close(&l->ep->fid));
	CHECK_OK(fi_close(&l->cq->fid));
	CHECK_OK(fi_close(&l->av->fid));
	return test_close(&l->r);
}

/* The next receive-side completion of `l` (sends skipped). */
static int local_next(struct local *l, struct fi_cq_tagged_entry *e)
{
	double end = peer_now() + 10;
	while (peer_now() < end) {
		ssize_t n = fi_cq_read(l->cq, e, 1);
		if (n == 1 && (e->flags & FI_SEND))
			continue;
		if (n == 1)
			return 0;
		if (n != -FI_EAGAIN)
			return (int)n;
		sched_yield();
	}
	return -FI_ETIMEDOUT;
}

/* Under FI_SELECTIVE_COMPLETION, the pieces of a buffer posted without
 * FI_COMPLETION are not reported, but the buffer's release is (fi_msg(3)). */
static int multi_recv_selective(void)
{
	struct local l;
	arm();
	CHECK_OK(local_open(&l, 0, FI_SELECTIVE_COMPLETION));
	size_t min = 41;
	CHECK_OK(fi_setopt(&l.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			   sizeof(min)));
	unsigned char buf[100], msg[30];
	struct fi_context ctx;
	struct iovec iov = { buf, sizeof(buf) };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			    .context = &ctx };
	CHECK_OK(fi_recvmsg(l.ep, &m, FI_MULTI_RECV));
	for (int i = 0; i < 2; i++) {
		peer_fill(msg, sizeof(msg), (unsigned)i);
		CHECK_OK(fi_send(l.ep, msg, sizeof(msg), NULL, l.self, NULL));
	}
	struct fi_cq_tagged_entry e;
	CHECK_OK(local_next(&l, &e));
	/* 40 bytes left after two, < 41: the second piece releases the buffer. */
	CHECK(e.op_context == &ctx && e.flags == (FI_MSG | FI_RECV | FI_MULTI_RECV));
	CHECK(e.len == sizeof(msg) && e.buf == buf + sizeof(msg));
	CHECK_OK(peer_check_fill(buf, sizeof(msg), 0));
	CHECK_OK(peer_check_fill(buf + sizeof(msg), sizeof(msg), 1));
	CHECK_RC(fi_cq_read(l.cq, &e, 1), -FI_EAGAIN);
	return local_close(&l);
}

/* FI_MULTI_RECV needs the capability (-FI_EOPNOTSUPP without it, also for
 * tagged receives without FI_TAGGED_MULTI_RECV); a default FI_MULTI_RECV
 * op flag leaves tagged receives alone. */
static int multi_recv_needs_cap(void)
{
	struct local l;
	arm();
	CHECK_OK(local_open(&l, FI_MULTI_RECV, 0));
	CHECK(!(l.r.info->caps & FI_MULTI_RECV));
	unsigned char buf[64];
	struct iovec iov = { buf, sizeof(buf) };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC };
	CHECK_RC(fi_recvmsg(l.ep, &m, FI_MULTI_RECV), -FI_EOPNOTSUPP);
	CHECK_OK(local_close(&l));

	CHECK_OK(local_open(&l, 0, 0));
	CHECK(l.r.info->caps & FI_MULTI_RECV);
	struct fi_msg_tagged tm = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC };
	CHECK_RC(fi_trecvmsg(l.ep, &tm, FI_MULTI_RECV), -FI_EOPNOTSUPP);
	/* Default FI_MULTI_RECV (FI_SETOPSFLAG on the receive side): plain
	 * fi_recv gets it, fi_trecv does not. */
	uint64_t f = FI_RECV | FI_MULTI_RECV;
	CHECK_OK(fi_control(&l.ep->fid, FI_SETOPSFLAG, &f));
	size_t min = 8;
	CHECK_OK(fi_setopt(&l.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			   sizeof(min)));
	unsigned char tbuf[64], msg[40] = { 0 };
	struct fi_context c1, c2;
	CHECK_OK(fi_recv(l.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &c1));
	CHECK_OK(fi_trecv(l.ep, tbuf, sizeof(tbuf), NULL, FI_ADDR_UNSPEC, 5, 0, &c2));
	CHECK_OK(fi_send(l.ep, msg, sizeof(msg), NULL, l.self, NULL));
	CHECK_OK(fi_tsend(l.ep, msg, sizeof(msg), NULL, l.self, 5, NULL));
	struct fi_cq_tagged_entry e[2];
	CHECK_OK(local_next(&l, &e[0]));
	CHECK_OK(local_next(&l, &e[1]));
	for (int i = 0; i < 2; i++) {
		if (e[i].op_context == &c1)
			CHECK(e[i].flags == (FI_MSG | FI_RECV)); /* 24 bytes left >= 8 */
		else
			CHECK(e[i].op_context == &c2 && e[i].flags == (FI_TAGGED | FI_RECV));
	}
	/* The multi-receive buffer is still posted: a second message fills it. */
	CHECK_OK(fi_send(l.ep, msg, 20, NULL, l.self, NULL));
	CHECK_OK(local_next(&l, &e[0]));
	CHECK(e[0].op_context == &c1 && e[0].flags == (FI_MSG | FI_RECV | FI_MULTI_RECV));
	CHECK(e[0].buf == buf + sizeof(msg));
	return local_close(&l);
}

static const struct test_case cases[] = {
	CASE(peek_reports_without_consuming),
	CASE(claim_then_receive),
	CASE(discard_drops),
	CASE(peek_bad_input),
	CASE(multi_recv_stream),
	CASE(multi_recv_unexpected),
	CASE(multi_recv_release_cancel_trunc),
	CASE(multi_recv_selective),
	CASE(multi_recv_needs_cap),
};

TEST_MAIN(cases)
