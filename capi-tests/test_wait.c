/*
 * Blocking waits between two processes: fi_trywait and poll(2) on the fd
 * of a FI_WAIT_FD CQ or counter, fi_cq_sread (FI_WAIT_UNSPEC and
 * FI_WAIT_YIELD) and fi_cntr_wait, each woken by a message from the other
 * process, with and without a timeout.
 *
 * No case measures time: where a case lets the other side sleep first (a
 * pause before sending), the pause only makes the sleeping path the likely
 * one; the checks hold either way.
 */
#include "peer.h"

#include <poll.h>

/* A case-wide alarm in the parent (the target gets one from peer_open). */
static void arm(void)
{
	alarm(getenv("OX_TEST_SCALE") ? 240 : 30);
}

static int open_pair(struct peer *p, enum fi_wait_obj obj)
{
	arm();
	peer_wait_obj = obj;
	return peer_open(p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, FI_MSG);
}

/* Whether fd is readable now (poll with a zero timeout). */
static int readable(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	return poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN);
}

static void pause_ms(long ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000 * 1000 };
	nanosleep(&d, NULL);
}

/* The initiator's half of every case: on each sync, sends one message
 * (after `pause` ms) and waits for its completion by polling. */
static int send_after(struct peer *p, int rounds, long pause)
{
	char buf[64];
	memset(buf, 'm', sizeof(buf));
	for (int i = 0; i < rounds; i++) {
		CHECK_OK(peer_sync(p)); /* the target is ready */
		if (pause)
			pause_ms(pause);
		int ctx;
		CHECK_OK(fi_send(p->ep, buf, sizeof(buf), NULL, p->other, &ctx));
		CHECK_OK(peer_sync(p)); /* fi_send has returned */
		struct fi_cq_tagged_entry e;
		CHECK_OK(peer_wait(p, &e, NULL));
		CHECK(e.op_context == &ctx);
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

/* The target's receive completion. Polled for: the process's progress
 * thread may be handling the message at the moment the application looks
 * (fi_cq_read then says -FI_EAGAIN, and fi_trywait too). */
static int read_recv(struct peer *p, void *ctx)
{
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == ctx);
	CHECK(e.flags == (FI_RECV | FI_MSG));
	CHECK(e.len == 64);
	return 0;
}

/* ------------------------------------------------------------ fi_trywait */

/*
 * After fi_trywait said 0 the application sleeps on the fd: the message
 * the other process sends makes it readable by the time fi_send has
 * returned there (the sender wakes the sleeper itself; nothing in this
 * process has to run first). Reading the CQ then finds the completion, and
 * fi_trywait leaves the fd unreadable again.
 */
static int trywait_fd_target(struct peer *p)
{
	int fd = -1;
	CHECK_OK(fi_control(&p->cq->fid, FI_GETWAIT, &fd));
	CHECK(fd >= 0);
	struct fid *f = &p->cq->fid;
	char buf[64];
	int ctx[2];
	for (int i = 0; i < 2; i++) {
		CHECK_OK(fi_recv(p->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx[i]));
		/* As an application's loop does: read, then try to wait. */
		struct fi_cq_tagged_entry e;
		CHECK_RC(fi_cq_read(p->cq, &e, 1), -FI_EAGAIN);
		CHECK_OK(fi_trywait(p->fabric, &f, 1));
		CHECK(!readable(fd));
		CHECK_OK(peer_sync(p)); /* send now */
		CHECK_OK(peer_sync(p)); /* sent */
		CHECK(readable(fd));
		CHECK_OK(read_recv(p, &ctx[i]));
		/* The send's acknowledgment may complete nothing here, but it
		 * may still be on its way: drain until the CQ says empty. */
		while (fi_trywait(p->fabric, &f, 1) == -FI_EAGAIN)
			CHECK_RC(fi_cq_read(p->cq, &e, 1), -FI_EAGAIN);
		CHECK(!readable(fd));
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

static int trywait_fd_woken_by_message(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p, FI_WAIT_FD));
	return peer_close(&p, p.is_target ? trywait_fd_target(&p) : send_after(&p, 2, 0));
}

/* A message waiting in the inbox, not yet read by anyone: fi_trywait says
 * -FI_EAGAIN (sleeping now would miss it); once read, 0. */
static int trywait_pending_target(struct peer *p)
{
	struct fid *f = &p->cq->fid;
	char buf[64];
	int ctx;
	CHECK_OK(fi_recv(p->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx));
	CHECK_OK(peer_sync(p)); /* send now */
	CHECK_OK(peer_sync(p)); /* sent */
	CHECK_RC(fi_trywait(p->fabric, &f, 1), -FI_EAGAIN);
	CHECK_OK(read_recv(p, &ctx));
	struct fi_cq_tagged_entry e;
	while (fi_trywait(p->fabric, &f, 1) == -FI_EAGAIN)
		CHECK_RC(fi_cq_read(p->cq, &e, 1), -FI_EAGAIN);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int trywait_eagain_while_message_waits(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p, FI_WAIT_FD));
	return peer_close(&p, p.is_target ? trywait_pending_target(&p) : send_after(&p, 1, 0));
}

/* The same with the receive counter's fd: readable once the message is
 * sent, the count read, unreadable after the next fi_trywait. */
static int trywait_cntr_target(struct peer *p)
{
	struct fid_cntr *c = p->cntr[C_RECV];
	int fd = -1;
	CHECK_OK(fi_control(&c->fid, FI_GETWAIT, &fd));
	struct fid *f = &c->fid;
	char buf[64];
	int ctx;
	CHECK_OK(fi_recv(p->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx));
	CHECK(fi_cntr_read(c) == 0);
	CHECK_OK(fi_trywait(p->fabric, &f, 1));
	CHECK(!readable(fd));
	CHECK_OK(peer_sync(p)); /* send now */
	CHECK_OK(peer_sync(p)); /* sent */
	CHECK(readable(fd));
	/* The message is counted once handled (here or by the progress
	 * thread, which may be at it). */
	double end = peer_now() + 10;
	while (fi_cntr_read(c) == 0 && peer_now() < end)
		sched_yield();
	CHECK(fi_cntr_read(c) == 1);
	while (fi_trywait(p->fabric, &f, 1) == -FI_EAGAIN)
		(void)fi_cntr_read(c);
	CHECK(!readable(fd));
	CHECK(fi_cntr_read(c) == 1);
	CHECK_OK(read_recv(p, &ctx));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int trywait_cntr_woken_by_message(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p, FI_WAIT_FD));
	return peer_close(&p, p.is_target ? trywait_cntr_target(&p) : send_after(&p, 1, 0));
}

/* ------------------------------------------------- sread and cntr_wait */

/* fi_cq_sread blocks until the other process's message completes the
 * receive (it sends 50 ms after the target is ready, so the target has
 * gone to sleep). */
static int sread_target(struct peer *p)
{
	char buf[64];
	int ctx[3];
	for (int i = 0; i < 3; i++) {
		CHECK_OK(fi_recv(p->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx[i]));
		CHECK_OK(peer_sync(p)); /* ready */
		struct fi_cq_tagged_entry e;
		CHECK_RC(fi_cq_sread(p->cq, &e, 1, NULL, 20000), 1);
		CHECK(e.op_context == &ctx[i]);
		CHECK(e.flags == (FI_RECV | FI_MSG));
		CHECK_OK(peer_sync(p)); /* the initiator's fi_send returned */
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

static int sread_woken_by_message(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p, FI_WAIT_UNSPEC));
	return peer_close(&p, p.is_target ? sread_target(&p) : send_after(&p, 3, 50));
}

static int sread_yield_woken_by_message(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p, FI_WAIT_YIELD));
	return peer_close(&p, p.is_target ? sread_target(&p) : send_after(&p, 3, 50));
}

/* A timed sread with nothing coming returns -FI_EAGAIN; the next one
 * returns the message that came meanwhile. */
static int sread_timeout_target(struct peer *p)
{
	char buf[64];
	int ctx;
	struct fi_cq_tagged_entry e;
	CHECK_OK(fi_recv(p->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx));
	CHECK_RC(fi_cq_sread(p->cq, &e, 1, NULL, 20), -FI_EAGAIN);
	CHECK_RC(fi_cq_sread(p->cq, &e, 1, NULL, 0), -FI_EAGAIN);
	CHECK_OK(peer_sync(p)); /* send now */
	CHECK_RC(fi_cq_sread(p->cq, &e, 1, NULL, 20000), 1);
	CHECK(e.op_context == &ctx);
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int sread_timeout_then_message(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p, FI_WAIT_UNSPEC));
	return peer_close(&p, p.is_target ? sread_timeout_target(&p) : send_after(&p, 1, 0));
}

/* fi_cntr_wait on the receive counter returns once the message came: the
 * count is exact, and the completion follows (it is queued after the
 * count, by whichever thread handled the message). */
static int cntr_wait_target(struct peer *p)
{
	struct fid_cntr *c = p->cntr[C_RECV];
	char buf[64];
	int ctx[3];
	CHECK_RC(fi_cntr_wait(c, 1, 20), -FI_ETIMEDOUT);
	for (int i = 0; i < 3; i++) {
		CHECK_OK(fi_recv(p->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx[i]));
		CHECK_OK(peer_sync(p)); /* ready */
		CHECK_OK(fi_cntr_wait(c, (uint64_t)i + 1, 20000));
		CHECK(fi_cntr_read(c) == (uint64_t)i + 1);
		CHECK_OK(read_recv(p, &ctx[i]));
		CHECK_OK(peer_sync(p));
	}
	CHECK(fi_cntr_readerr(c) == 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int cntr_wait_woken_by_message(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p, FI_WAIT_UNSPEC));
	return peer_close(&p, p.is_target ? cntr_wait_target(&p) : send_after(&p, 3, 50));
}

static int cntr_wait_fd_woken_by_message(void)
{
	struct peer p;
	CHECK_OK(open_pair(&p, FI_WAIT_FD));
	return peer_close(&p, p.is_target ? cntr_wait_target(&p) : send_after(&p, 3, 50));
}

static const struct test_case cases[] = {
	CASE(trywait_fd_woken_by_message),
	CASE(trywait_eagain_while_message_waits),
	CASE(trywait_cntr_woken_by_message),
	CASE(sread_woken_by_message),
	CASE(sread_yield_woken_by_message),
	CASE(sread_timeout_then_message),
	CASE(cntr_wait_woken_by_message),
	CASE(cntr_wait_fd_woken_by_message),
};

TEST_MAIN(cases)
