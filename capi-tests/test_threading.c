/*
 * FI_THREAD_DOMAIN: the application serializes its calls into a domain, and
 * oxshm takes the domain's per-message locks without locked instructions
 * while its own progress threads are idle. The cases move the inbox back
 * and forth between the application and the progress threads (polling,
 * pausing so that the progress thread steps in, blocking in fi_cq_sread),
 * with two progress threads feeding one CQ, and wake a blocked reader from
 * a second thread with fi_cq_signal. Every message is checked byte for
 * byte and counted exactly once.
 */
#include "peer.h"

#include <pthread.h>

enum { ROUNDS = 48, BURST = 24, MAXLEN = 70000 };
/* Inline, one cell chain, above the inject size, the sizes whose way an
 * endpoint measures (ring or one copy by the target), a cross-memory copy. */
static const size_t lens[] = { 8, 64, 1000, 5000, 12000, MAXLEN };
enum { NLENS = sizeof(lens) / sizeof(lens[0]) };

static void pause_ms(long ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000 * 1000 };
	nanosleep(&d, NULL);
}

static void arm(void)
{
	alarm(getenv("OX_TEST_SCALE") ? 240 : 60);
}

/* How a round waits for its completions: 0 polls, 1 first leaves the
 * endpoint alone long enough for its progress thread to step in (the
 * progress thread's grace is 2 ms), 2 blocks in fi_cq_sread. */
static int wait_one(struct peer *p, int mode, struct fi_cq_tagged_entry *e)
{
	if (mode == 2) {
		ssize_t n = fi_cq_sread(p->cq, e, 1, NULL, 10000);
		if (n == 1)
			return 0;
		fprintf(stderr, "    fi_cq_sread: %s\n", test_errstr(n));
		return 1;
	}
	struct fi_cq_err_entry err;
	int rc = peer_wait(p, e, &err);
	if (rc == -FI_EAVAIL)
		fprintf(stderr, "    error completion: %s (context %p, flags 0x%llx, len %zu)\n",
			fi_strerror(err.err), err.op_context, (unsigned long long)err.flags, err.len);
	CHECK_OK(rc);
	return 0;
}

static size_t len_of(int round, int i)
{
	return lens[(round + i) % NLENS];
}

static int stream_target(struct peer *p)
{
	unsigned char *bufs = malloc((size_t)BURST * MAXLEN);
	unsigned char *win = calloc(1, 4096);
	struct fid_mr *mr;
	CHECK(bufs && win);
	CHECK_OK(peer_publish_region(p, win, 4096, FI_REMOTE_WRITE, &mr));
	uint64_t recvs = 0;
	for (int r = 0; r < ROUNDS; r++) {
		int mode = r % 3;
		for (int i = 0; i < BURST; i++)
			CHECK_OK(fi_trecv(p->ep, bufs + (size_t)i * MAXLEN, MAXLEN, NULL,
					  p->other, (uint64_t)r << 8 | (uint64_t)i, 0,
					  bufs + (size_t)i * MAXLEN));
		CHECK_OK(peer_sync(p)); /* receives posted */
		if (mode == 1)
			pause_ms(5);
		for (int i = 0; i < BURST; i++) {
			struct fi_cq_tagged_entry e;
			CHECK_OK(wait_one(p, mode, &e));
			CHECK(e.flags == (FI_RECV | FI_TAGGED));
			int k = (int)(e.tag & 0xff);
			CHECK((e.tag >> 8) == (uint64_t)r && k < BURST);
			CHECK(e.op_context == bufs + (size_t)k * MAXLEN);
			CHECK(e.len == len_of(r, k));
			CHECK_OK(peer_check_fill(e.op_context, e.len, (unsigned)(r * BURST + k)));
			recvs++;
		}
		CHECK_OK(peer_sync(p)); /* the round's write has completed */
		CHECK_OK(peer_check_fill(win, 4096, 7777u + (unsigned)r));
	}
	CHECK(peer_cntr(p, C_RECV) == recvs);
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == ROUNDS);
	CHECK_OK(fi_close(&mr->fid));
	free(bufs);
	free(win);
	return 0;
}

static int stream_init(struct peer *p)
{
	unsigned char *bufs = malloc((size_t)BURST * MAXLEN);
	unsigned char *src = malloc(4096);
	struct peer_region win;
	CHECK(bufs && src);
	CHECK(peer_get(p, &win, sizeof(win)) == 0);
	uint64_t sends = 0;
	for (int r = 0; r < ROUNDS; r++) {
		int mode = (r + 1) % 3;
		CHECK_OK(peer_sync(p));
		for (int i = 0; i < BURST; i++) {
			unsigned char *b = bufs + (size_t)i * MAXLEN;
			peer_fill(b, len_of(r, i), (unsigned)(r * BURST + i));
			ssize_t rc;
			while ((rc = fi_tsend(p->ep, b, len_of(r, i), NULL, p->other,
					      (uint64_t)r << 8 | (uint64_t)i, b)) == -FI_EAGAIN)
				fi_cq_read(p->cq, NULL, 0);
			CHECK_OK(rc);
		}
		if (mode == 1)
			pause_ms(5);
		for (int i = 0; i < BURST; i++) {
			struct fi_cq_tagged_entry e;
			CHECK_OK(wait_one(p, mode, &e));
			CHECK(e.flags == (FI_SEND | FI_TAGGED));
			sends++;
		}
		/* A write the target's progress serves while it may be asleep. */
		peer_fill(src, 4096, 7777u + (unsigned)r);
		CHECK_OK(fi_write(p->ep, src, 4096, NULL, p->other,
				  peer_raddr(p, (void *)(uintptr_t)win.base, 0), win.key, src));
		struct fi_cq_tagged_entry e;
		CHECK_OK(wait_one(p, mode, &e));
		CHECK(e.op_context == src && e.flags == (FI_RMA | FI_WRITE));
		CHECK_OK(peer_sync(p));
	}
	CHECK(peer_cntr(p, C_SEND) == sends);
	CHECK(peer_cntr(p, C_WRITE) == ROUNDS);
	free(bufs);
	free(src);
	return 0;
}

/*
 * Two processes in FI_THREAD_DOMAIN domains trade bursts of tagged sends of
 * every size class and an RMA write per round; each side alternates between
 * polling, pausing (its progress thread takes the inbox and fills the CQ),
 * and blocking in fi_cq_sread, out of step with the other.
 */
static int stream_across_progress_thread_handovers(void)
{
	arm();
	peer_threading = FI_THREAD_DOMAIN;
	return peer_pair(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0, stream_target,
			 stream_init);
}

/* fi_getinfo keeps the threading model asked for, and the domain takes it. */
static int domain_threading_is_kept(void)
{
	struct fi_info *h = test_hints(), *info = NULL;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	CHECK_OK(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, h, &info));
	fi_freeinfo(h);
	CHECK(info->domain_attr->threading == FI_THREAD_DOMAIN);
	struct fid_fabric *fab;
	struct fid_domain *dom;
	CHECK_OK(fi_fabric(info->fabric_attr, &fab, NULL));
	CHECK_OK(fi_domain(fab, info, &dom, NULL));
	CHECK_OK(fi_close(&dom->fid));
	CHECK_OK(fi_close(&fab->fid));
	fi_freeinfo(info);
	return 0;
}

/* A threading value past the last model is refused, with nothing opened. */
static int unknown_threading_is_refused(void)
{
	struct fi_info *h = test_hints(), *info = NULL;
	h->domain_attr->threading = (enum fi_threading)(FI_THREAD_ENDPOINT + 7);
	CHECK_RC(fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, h, &info), -FI_ENODATA);
	CHECK(info == NULL);
	fi_freeinfo(h);
	return 0;
}

/* ------------------------------------------------ two endpoints, one CQ */

enum { SHARED_MSGS = 1200, SHARED_LEN = 256 };

static int shared_cq_of_two_endpoints(void)
{
	arm();
	struct peer p;
	memset(&p, 0, sizeof(p));
	peer_threading = FI_THREAD_DOMAIN;
	CHECK_OK(peer_open_ep(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	struct fid_ep *ep2;
	CHECK_OK(fi_endpoint(p.domain, p.info, &ep2, NULL));
	CHECK_OK(fi_ep_bind(ep2, &p.av->fid, 0));
	CHECK_OK(fi_ep_bind(ep2, &p.cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK_OK(fi_enable(ep2));
	char n1[64] = { 0 }, n2[64] = { 0 };
	size_t len = sizeof(n1);
	CHECK_OK(fi_getname(&p.ep->fid, n1, &len));
	len = sizeof(n2);
	CHECK_OK(fi_getname(&ep2->fid, n2, &len));
	const char *names[2] = { n1, n2 };
	fi_addr_t a[2];
	CHECK_RC(fi_av_insert(p.av, names, 2, a, 0, NULL), 2);

	/* Each endpoint sends to the other; every message lands in a slot of
	 * its own, and the one CQ gets a send and a receive for each. */
	static unsigned char out[2][SHARED_MSGS][SHARED_LEN], in[2][SHARED_MSGS][SHARED_LEN];
	static unsigned char seen[2][2][SHARED_MSGS];
	memset(seen, 0, sizeof(seen));
	struct fid_ep *eps[2] = { p.ep, ep2 };
	enum { WINDOW = 40 };
	int posted = 0, got = 0;
	while (got < 4 * SHARED_MSGS) {
		/* A window of receives and sends on both endpoints... */
		int upto = posted + WINDOW < SHARED_MSGS ? posted + WINDOW : SHARED_MSGS;
		for (int i = posted; i < upto; i++)
			for (int s = 0; s < 2; s++) {
				CHECK_OK(fi_trecv(eps[s], in[s][i], SHARED_LEN, NULL, a[1 - s],
						  (uint64_t)i, 0, &in[s][i]));
				peer_fill(out[s][i], SHARED_LEN, (unsigned)(s * SHARED_MSGS + i));
				ssize_t rc;
				while ((rc = fi_tsend(eps[s], out[s][i], SHARED_LEN, NULL, a[1 - s],
						      (uint64_t)i, &out[s][i])) == -FI_EAGAIN)
					fi_cq_read(p.cq, NULL, 0);
				CHECK_OK(rc);
			}
		posted = upto;
		/* ...then, every other window, time for both progress threads
		 * to serve their inboxes into the shared CQ concurrently. */
		if ((posted / WINDOW) % 2)
			pause_ms(4);
		int want = 4 * posted;
		while (got < want) {
			struct fi_cq_tagged_entry e;
			CHECK_OK(peer_wait(&p, &e, NULL));
			int s, i, recv = (e.flags & FI_RECV) != 0;
			unsigned char *ctx = e.op_context;
			if (recv) {
				s = ctx >= in[1][0];
				i = (int)((ctx - in[s][0]) / SHARED_LEN);
				CHECK(e.tag == (uint64_t)i && e.len == SHARED_LEN);
				CHECK_OK(peer_check_fill(in[s][i], SHARED_LEN,
							 (unsigned)((1 - s) * SHARED_MSGS + i)));
			} else {
				s = ctx >= out[1][0];
				i = (int)((ctx - out[s][0]) / SHARED_LEN);
			}
			CHECK(i >= 0 && i < posted);
			CHECK(!seen[recv][s][i]);
			seen[recv][s][i] = 1;
			got++;
		}
	}
	CHECK(peer_cq_stays_empty(&p, 20) == 0);
	CHECK_OK(fi_close(&ep2->fid));
	CHECK_OK(peer_close_ep(&p));
	return 0;
}

/* ------------------------------------------------------- fi_cq_signal */

static void *late_signal(void *cq)
{
	pause_ms(50);
	return (void *)(intptr_t)fi_cq_signal(cq);
}

/* A thread blocked in fi_cq_sread is woken by fi_cq_signal from another
 * thread: the one call made outside the application's serialization. */
static int cq_signal_from_another_thread(void)
{
	arm();
	struct peer p;
	memset(&p, 0, sizeof(p));
	peer_threading = FI_THREAD_DOMAIN;
	peer_wait_obj = FI_WAIT_UNSPEC;
	CHECK_OK(peer_open_ep(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, FI_MSG));
	for (int k = 0; k < 5; k++) {
		pthread_t t;
		void *trc;
		struct fi_cq_tagged_entry e;
		CHECK(pthread_create(&t, NULL, late_signal, p.cq) == 0);
		ssize_t rc = fi_cq_sread(p.cq, &e, 1, NULL, 20000);
		CHECK(pthread_join(t, &trc) == 0);
		CHECK(trc == NULL);
		CHECK_RC(rc, -FI_EAGAIN);
	}
	CHECK_OK(peer_close_ep(&p));
	return 0;
}

static const struct test_case cases[] = {
	CASE(domain_threading_is_kept),
	CASE(unknown_threading_is_refused),
	CASE(stream_across_progress_thread_handovers),
	CASE_ENV(stream_across_progress_thread_handovers, "FI_OXSHM_SINGLE=0"),
	CASE(shared_cq_of_two_endpoints),
	CASE(cq_signal_from_another_thread),
};

TEST_MAIN(cases)
