/*
 * Direct RMA (oxshm): a bulk write or read whose region the initiator can
 * check in the target's shared slots is copied by the initiator with one
 * cross-memory call, without a request to the target. These cases hold it
 * to the same rules as the request path:
 *
 * - direct_needs_no_target: with the target process stopped (SIGSTOP), a
 *   64 KiB write and read through a plain region still complete, with the
 *   right bytes; an access the check leaves to the target (a missing
 *   right) completes only once the target runs again, in error
 *   (FI_EACCES), and touches nothing.
 * - refusals: a wrong key, a range past the end, a missing right and a
 *   closed region complete in error at the initiator (FI_EINVAL or
 *   FI_EACCES) and leave the target's bytes alone; the allowed accesses
 *   around them land.
 * - close_waits_for_copies: the initiator streams 16 MiB writes into a
 *   region while the target closes it; once fi_close returns the target
 *   fills the buffer (faster than a cross-memory copy writes it) and finds
 *   it unchanged 50 ms later (no copy that checked the region before the
 *   close lands after it); writes after the close complete in error.
 *   Four rounds.
 * - lone_large_goes_through_target: a 1 MiB write posted alone is split
 *   with the target (two CPUs copy it), so a stopped target holds it back.
 * - counted_endpoint_keeps_requests: with a remote-write counter bound at
 *   the target (FI_RMA_EVENT), accesses go through the target, which
 *   counts every one.
 * - lone_small_goes_direct: under FI_OXSHM_LONE=1 (lone transfers skip
 *   the ring whatever a cross-memory call costs), a lone 4 KiB read and
 *   write (each posted after the application polled, nothing else
 *   waiting: a ping-pong's) complete with the target stopped, with the
 *   right bytes. Of two 4 KiB writes posted back to back, the first
 *   completes and the second (not lone: a stream's) waits for the target
 *   in the ring. Where the processes cannot copy across, all of them wait.
 * - lone_small_keeps_ring_by_env: under FI_OXSHM_LONE=0 every one of them
 *   waits for the stopped target, and all complete in order, with the
 *   right bytes, once it runs.
 * - lone_small_by_measured_cost: with no setting each process measures a
 *   cross-memory call and decides once. Whichever it decided here, the
 *   lone read and write and the burst's first go the same way (all direct
 *   or all held back), and every transfer completes in order with the
 *   right bytes.
 * - stream_batched: of a stream of 16 KiB writes posted back to back, the
 *   first is copied at once and the others wait in the endpoint's batch
 *   (the target's memory, looked at from outside, still holds the old
 *   bytes) until the application polls; then all complete, in order,
 *   with the target stopped. A write to a read-only region in the middle
 *   of a batch is left to the target: it completes with FI_EACCES once
 *   the target runs, the others without it. A batch of reads brings the
 *   written bytes back.
 * - stream_unbatched: under FI_OXSHM_BATCH=0 each of those writes is in
 *   the target's memory when its post returns; the rest as above.
 * - batch_copied_by_progress_thread: a batch the application does not
 *   poll for reaches the target's memory anyway (FI_PROGRESS_AUTO), and
 *   its completions wait in the CQ.
 * - batch_waits_for_full_ring: with the stopped target's ring filled by
 *   injected messages, a batch's refused write cannot go to the target as
 *   a request: the others complete, it stays queued, and a new write
 *   posted behind it gets -FI_EAGAIN. Once the target runs, the refused
 *   one completes with FI_EACCES and the new one goes.
 * - off_by_env: FI_OXSHM_DIRECT=0 takes every access through the target
 *   (a stopped target holds a write back).
 * - on_by_env: FI_OXSHM_DIRECT=1 is the default's behaviour. The other
 *   cases run with no setting: direct RMA is on by default.
 *
 * Sizes are 64 KiB and up, but for lone_small_goes_direct: direct RMA
 * starts at 8 KiB, at 4 KiB for a lone transfer.
 */
#include "peer.h"
#include <rdma/fi_domain.h>
#include <dirent.h>
#include <sys/uio.h>

enum { BIG = 64 * 1024, LARGE = 1024 * 1024, HUGE = 16 * 1024 * 1024 };
/* Closes under a stream of writes: a close that did not wait would be
 * caught in about 3 rounds of 5 each (measured by taking the wait out). */
enum { CLOSE_ROUNDS = 4 };

#define CAPS (FI_MSG | FI_RMA)
#define DIRECT_MODE (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)

static unsigned char tbuf[HUGE], ibuf[HUGE];

/* Opens both sides without remote counters unless FI_RMA_EVENT is in
 * `caps` (a counted endpoint keeps the request path). */
static int pair_caps(int mr_mode, uint64_t caps, peer_side_fn target, peer_side_fn init)
{
	peer_skip_cntrs =
		caps & FI_RMA_EVENT ? 0 : (1u << C_REMOTE_READ) | (1u << C_REMOTE_WRITE);
	return peer_pair(mr_mode, caps, target, init);
}

static int reg_publish(struct peer *p, void *buf, size_t len, uint64_t access,
		       struct fid_mr **mr)
{
	return peer_publish_region(p, buf, len, access, mr);
}

static int get_region(struct peer *p, struct peer_region *r)
{
	CHECK(peer_get(p, r, sizeof(*r)) == 0);
	return 0;
}

/* The target address of byte `off` of region `r`. */
static uint64_t at(struct peer *p, const struct peer_region *r, uint64_t off)
{
	return peer_raddr(p, (const void *)(uintptr_t)r->base, off);
}

/* Stops process `pid` and waits until every thread of it has stopped
 * (kill returns before they do). 0 on success. */
static int stop_all(pid_t pid)
{
	CHECK(kill(pid, SIGSTOP) == 0);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	for (int tries = 0; tries < 2000; tries++) {
		DIR *d = opendir(path);
		CHECK(d != NULL);
		int running = 0;
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char st = test_thread_state((int)pid, de->d_name);
			if (st && st != 'T' && st != 't')
				running = 1;
		}
		closedir(d);
		if (!running)
			return 0;
		usleep(1000);
	}
	fprintf(stderr, "    process %d did not stop\n", (int)pid);
	return 1;
}

/* Posts one write or read (retrying -FI_EAGAIN) with context `ctx`. */
static int post(struct peer *p, int write, void *buf, size_t len, uint64_t addr, uint64_t key,
		void *ctx)
{
	for (;;) {
		ssize_t rc = write ? fi_write(p->ep, buf, len, NULL, p->other, addr, key, ctx)
				   : fi_read(p->ep, buf, len, NULL, p->other, addr, key, ctx);
		if (rc == 0)
			return 0;
		if (rc != -FI_EAGAIN) {
			fprintf(stderr, "    post: %s\n", fi_strerror((int)-rc));
			return 1;
		}
		struct fi_cq_tagged_entry e;
		(void)fi_cq_read(p->cq, &e, 0);
	}
}

/* One access, waited for: 0 and the completion's error (0 for success). */
static int access1(struct peer *p, int write, void *buf, size_t len, uint64_t addr, uint64_t key,
		   int *err)
{
	static char ctx;
	CHECK_OK(post(p, write, buf, len, addr, key, &ctx));
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	int rc = peer_wait(p, &e, &ee);
	if (rc == 0) {
		CHECK(e.op_context == &ctx);
		*err = 0;
		return 0;
	}
	CHECK(rc == -FI_EAVAIL);
	CHECK(ee.op_context == &ctx);
	*err = ee.err;
	return 0;
}

/* ---- direct_needs_no_target ---- */

static int stopped_target(struct peer *p)
{
	struct fid_mr *rw, *ro;
	peer_fill(tbuf, 2 * BIG, 1);
	CHECK_OK(reg_publish(p, tbuf, BIG, FI_REMOTE_WRITE | FI_REMOTE_READ, &rw));
	CHECK_OK(reg_publish(p, tbuf + BIG, BIG, FI_REMOTE_READ, &ro));
	/* The initiator stops this process, works, lets it run again. */
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_check_fill(tbuf, BIG, 2));
	CHECK_OK(peer_check_fill(tbuf + BIG, BIG, 1));
	CHECK_OK(fi_close(&rw->fid));
	CHECK_OK(fi_close(&ro->fid));
	return 0;
}

static int stopped_init(struct peer *p)
{
	struct peer_region rw, ro;
	CHECK_OK(get_region(p, &rw));
	CHECK_OK(get_region(p, &ro));
	CHECK_OK(stop_all(p->child));
	int err;
	/* Read the target's first pattern, then write the second over it. */
	CHECK_OK(access1(p, 0, ibuf, BIG, at(p, &rw, 0), rw.key, &err));
	CHECK(err == 0);
	CHECK_OK(peer_check_fill(ibuf, BIG, 1));
	peer_fill(ibuf, BIG, 2);
	CHECK_OK(access1(p, 1, ibuf, BIG, at(p, &rw, 0), rw.key, &err));
	CHECK(err == 0);
	/* A write to the read-only region is the target's to refuse: no
	 * completion while it is stopped. */
	static char ctx;
	CHECK_OK(post(p, 1, ibuf, BIG, at(p, &ro, 0), ro.key, &ctx));
	CHECK_OK(peer_cq_stays_empty(p, 300));
	CHECK(kill(p->child, SIGCONT) == 0);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	CHECK(peer_wait(p, &e, &ee) == -FI_EAVAIL);
	CHECK(ee.op_context == &ctx && ee.err == FI_EACCES);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* Whether this run lets oxshm copy across processes: not under
 * FI_OXSHM_CMA=0 (the staged runs of the suite), nor where Yama's
 * ptrace_scope is 2 or 3. Without it every access goes through the target. */
static int cma_possible(void)
{
	const char *e = getenv("FI_OXSHM_CMA");
	if (e && strcmp(e, "0") == 0)
		return 0;
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	return scope < 2;
}

/* Bytes of the write that a stopped target must hold back (set before
 * the fork, so both sides see it). */
static size_t held_len;
static int held_target(struct peer *p);
static int held_init(struct peer *p);

static int direct_needs_no_target(void)
{
	if (!cma_possible()) {
		fprintf(stderr, "    no cross-memory attach here: a stopped target holds "
				"writes back\n");
		held_len = BIG;
		return pair_caps(DIRECT_MODE, CAPS, held_target, held_init);
	}
	return pair_caps(DIRECT_MODE, CAPS, stopped_target, stopped_init);
}

/* ---- lone_large_goes_through_target, off_by_env ---- */

static int held_target(struct peer *p)
{
	struct fid_mr *mr;
	memset(tbuf, 0, held_len);
	CHECK_OK(reg_publish(p, tbuf, held_len, FI_REMOTE_WRITE, &mr));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_check_fill(tbuf, held_len, 9));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

/* One write of held_len bytes to a stopped target: no completion while it
 * is stopped, a successful one once it runs again. */
static int held_init(struct peer *p)
{
	struct peer_region r;
	CHECK_OK(get_region(p, &r));
	peer_fill(ibuf, held_len, 9);
	CHECK_OK(stop_all(p->child));
	static char ctx;
	CHECK_OK(post(p, 1, ibuf, held_len, at(p, &r, 0), r.key, &ctx));
	CHECK_OK(peer_cq_stays_empty(p, 300));
	CHECK(kill(p->child, SIGCONT) == 0);
	struct fi_cq_tagged_entry e;
	CHECK_OK(peer_wait(p, &e, NULL));
	CHECK(e.op_context == &ctx);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* Posted alone, a transfer this large is split with the target. */
static int lone_large_goes_through_target(void)
{
	held_len = LARGE;
	return pair_caps(DIRECT_MODE, CAPS, held_target, held_init);
}

/* Under FI_OXSHM_DIRECT=0 (set by the case table) even 64 KiB waits. */
static int off_by_env(void)
{
	held_len = BIG;
	return pair_caps(DIRECT_MODE, CAPS, held_target, held_init);
}

/* FI_OXSHM_DIRECT=1 (set by the case table) says what the default says. */
static int on_by_env(void)
{
	return direct_needs_no_target();
}

/* ---- refusals ---- */

static int refusals_target(struct peer *p)
{
	struct fid_mr *rw, *wo, *gone;
	peer_fill(tbuf, 3 * BIG, 5);
	CHECK_OK(reg_publish(p, tbuf, BIG, FI_REMOTE_WRITE | FI_REMOTE_READ, &rw));
	CHECK_OK(reg_publish(p, tbuf + BIG, BIG, FI_REMOTE_WRITE, &wo));
	CHECK_OK(reg_publish(p, tbuf + 2 * BIG, BIG, FI_REMOTE_WRITE, &gone));
	CHECK_OK(fi_close(&gone->fid));
	CHECK_OK(peer_sync(p));
	/* Only the allowed write landed: the first half of the first region. */
	peer_fill(ibuf, BIG / 2, 6);
	CHECK(memcmp(tbuf, ibuf, BIG / 2) == 0);
	peer_fill(ibuf, 3 * BIG, 5);
	CHECK(memcmp(tbuf + BIG / 2, ibuf + BIG / 2, 3 * BIG - BIG / 2) == 0);
	CHECK_OK(fi_close(&rw->fid));
	CHECK_OK(fi_close(&wo->fid));
	return 0;
}

static int refusals_init(struct peer *p)
{
	struct peer_region rw, wo, gone;
	CHECK_OK(get_region(p, &rw));
	CHECK_OK(get_region(p, &wo));
	CHECK_OK(get_region(p, &gone));
	int err;
	peer_fill(ibuf, BIG, 7);
	/* A key that names nothing, the closed region's key. */
	CHECK_OK(access1(p, 1, ibuf, BIG / 2, at(p, &rw, 0), rw.key ^ 0x5a5a5a5a00ull, &err));
	CHECK(err == FI_EINVAL);
	CHECK_OK(access1(p, 1, ibuf, BIG / 2, at(p, &gone, 0), gone.key, &err));
	CHECK(err == FI_EINVAL);
	/* One byte past the end; a read of a write-only region. */
	CHECK_OK(access1(p, 1, ibuf, BIG / 2, at(p, &rw, BIG / 2 + 1), rw.key, &err));
	CHECK(err == FI_EACCES);
	CHECK_OK(access1(p, 0, ibuf, BIG / 2, at(p, &wo, 0), wo.key, &err));
	CHECK(err == FI_EACCES);
	CHECK_OK(peer_check_fill(ibuf, BIG, 7));
	/* What the regions allow lands. */
	peer_fill(ibuf, BIG / 2, 6);
	CHECK_OK(access1(p, 1, ibuf, BIG / 2, at(p, &rw, 0), rw.key, &err));
	CHECK(err == 0);
	CHECK_OK(access1(p, 0, ibuf, BIG / 2, at(p, &rw, BIG / 2), rw.key, &err));
	CHECK(err == 0);
	CHECK_OK(peer_check_fill(ibuf, BIG / 2, 5));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int refusals(void)
{
	return pair_caps(DIRECT_MODE, CAPS, refusals_target, refusals_init);
}

/* The same with target addresses that are virtual addresses. */
static int refusals_virt(void)
{
	return refusals();
}

/* ---- close_waits_for_copies ---- */

static int close_target(struct peer *p)
{
	for (int round = 0; round < CLOSE_ROUNDS; round++) {
		struct fid_mr *mr;
		memset(tbuf, 0, HUGE);
		CHECK_OK(reg_publish(p, tbuf, HUGE, FI_REMOTE_WRITE, &mr));
		/* Let the stream run, then close under it. */
		CHECK_OK(peer_sync(p));
		usleep(20 * 1000);
		CHECK_OK(fi_close(&mr->fid));
		memset(tbuf, 0xee, HUGE);
		usleep(50 * 1000);
		for (size_t i = 0; i < HUGE; i++) {
			if (tbuf[i] != 0xee) {
				fprintf(stderr, "    round %d: byte %zu written after fi_close returned\n",
					round, i);
				return 1;
			}
		}
		unsigned char done = 1;
		peer_put(p, &done, 1);
		CHECK_OK(peer_sync(p));
	}
	return 0;
}

static int close_init(struct peer *p)
{
	memset(ibuf, 0x11, HUGE);
	for (int round = 0; round < CLOSE_ROUNDS; round++) {
		struct peer_region r;
		CHECK_OK(get_region(p, &r));
		CHECK_OK(peer_sync(p));
		int ok = 0, refused = 0;
		/* Writes until one is refused, then a few more: every one after
		 * the first refusal is refused too. */
		for (int i = 0; i < 20000 && refused < 16; i++) {
			int err;
			CHECK_OK(access1(p, 1, ibuf, HUGE, at(p, &r, 0), r.key, &err));
			if (err == 0) {
				CHECK(refused == 0);
				ok++;
			} else {
				CHECK(err == FI_EINVAL);
				refused++;
			}
		}
		CHECK(ok > 0 && refused == 16);
		unsigned char done;
		CHECK(peer_get(p, &done, 1) == 0 && done == 1);
		CHECK_OK(peer_sync(p));
	}
	return 0;
}

static int close_waits_for_copies(void)
{
	return pair_caps(DIRECT_MODE, CAPS, close_target, close_init);
}

/* ---- lone_small_goes_direct ---- */

enum { SMALLX = 4096 };

static int lone_small_target(struct peer *p)
{
	struct fid_mr *mr;
	for (int i = 0; i < 3; i++)
		peer_fill(tbuf + i * SMALLX, SMALLX, 1);
	CHECK_OK(reg_publish(p, tbuf, 3 * SMALLX, FI_REMOTE_WRITE | FI_REMOTE_READ, &mr));
	/* The initiator stops this process, works, lets it run again. */
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_check_fill(tbuf, SMALLX, 2));
	CHECK_OK(peer_check_fill(tbuf + SMALLX, SMALLX, 3));
	CHECK_OK(peer_check_fill(tbuf + 2 * SMALLX, SMALLX, 4));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

/* How lone_small_init expects lone transfers to go: LONE_DIRECT (where
 * the processes can copy across), LONE_RING, or LONE_MEASURED (as the
 * first one went). */
enum { LONE_RING, LONE_DIRECT, LONE_MEASURED };
static int lone_expect;

/* Drives progress for up to `ms` milliseconds: 1 with *e filled when a
 * completion showed up, 0 when none did, -1 on an error completion. */
static int cq_within(struct peer *p, int ms, struct fi_cq_tagged_entry *e)
{
	double end = peer_now() + ms / 1000.0;
	while (peer_now() < end) {
		ssize_t n = fi_cq_read(p->cq, e, 1);
		if (n == 1)
			return 1;
		if (n != -FI_EAGAIN) {
			fprintf(stderr, "    fi_cq_read returned %zd (%s)\n", n, test_errstr(n));
			return -1;
		}
		sched_yield();
	}
	return 0;
}

static int lone_small_init(struct peer *p)
{
	struct peer_region r;
	CHECK_OK(get_region(p, &r));
	CHECK_OK(stop_all(p->child));
	static char ctx[3];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	/* A lone read, then a lone write: done by this process alone. */
	CHECK_OK(post(p, 0, ibuf, SMALLX, at(p, &r, 0), r.key, &ctx[0]));
	int direct;
	if (lone_expect == LONE_MEASURED) {
		int got = cq_within(p, 300, &e);
		CHECK(got >= 0);
		direct = got;
		fprintf(stderr, "    lone transfers %s here\n",
			direct ? "skip the ring" : "keep the ring");
		CHECK(!direct || cma_possible());
	} else {
		direct = lone_expect == LONE_DIRECT && cma_possible();
		if (direct)
			CHECK_OK(peer_wait(p, &e, &ee));
		else
			CHECK_OK(peer_cq_stays_empty(p, 300));
	}
	if (direct) {
		CHECK(e.op_context == &ctx[0]);
		CHECK_OK(peer_check_fill(ibuf, SMALLX, 1));
	}
	peer_fill(ibuf + SMALLX, SMALLX, 2);
	CHECK_OK(post(p, 1, ibuf + SMALLX, SMALLX, at(p, &r, 0), r.key, &ctx[1]));
	if (direct) {
		CHECK_OK(peer_wait(p, &e, &ee));
		CHECK(e.op_context == &ctx[1]);
	}
	/* Two writes back to back, no poll between: the first is lone, the
	 * second waits for the target. */
	static char burst[2];
	peer_fill(ibuf + 2 * SMALLX, SMALLX, 3);
	peer_fill(ibuf + 3 * SMALLX, SMALLX, 4);
	CHECK_OK(post(p, 1, ibuf + 2 * SMALLX, SMALLX, at(p, &r, SMALLX), r.key, &burst[0]));
	CHECK_OK(post(p, 1, ibuf + 3 * SMALLX, SMALLX, at(p, &r, 2 * SMALLX), r.key, &burst[1]));
	if (direct) {
		CHECK_OK(peer_wait(p, &e, &ee));
		CHECK(e.op_context == &burst[0]);
	}
	CHECK_OK(peer_cq_stays_empty(p, 300));
	CHECK(kill(p->child, SIGCONT) == 0);
	/* Whatever waited completes now, in order, without error. */
	int left = direct ? 1 : 4;
	void *want[4] = {&ctx[0], &ctx[1], &burst[0], &burst[1]};
	for (int i = 4 - left; i < 4; i++) {
		CHECK_OK(peer_wait(p, &e, &ee));
		CHECK(e.op_context == want[i]);
	}
	if (!direct)
		CHECK_OK(peer_check_fill(ibuf, SMALLX, 1));
	CHECK_OK(peer_sync(p));
	return 0;
}

static int lone_small(int expect)
{
	if (!cma_possible())
		fprintf(stderr, "    no cross-memory attach here: a stopped target holds "
				"every transfer back\n");
	lone_expect = expect;
	return pair_caps(DIRECT_MODE, CAPS, lone_small_target, lone_small_init);
}

/* FI_OXSHM_LONE=1 (set by the case table). */
static int lone_small_goes_direct(void)
{
	return lone_small(LONE_DIRECT);
}

/* FI_OXSHM_LONE=0 (set by the case table). */
static int lone_small_keeps_ring_by_env(void)
{
	return lone_small(LONE_RING);
}

static int lone_small_by_measured_cost(void)
{
	return lone_small(LONE_MEASURED);
}

/* ---- stream_batched, stream_unbatched, batch_copied_by_progress_thread ---- */

enum { SX = 16384, NSX = 8 };
/* Whether the case expects a stream's writes held until a poll. */
static int batch_expect;

/* Whether bytes [off, off+len) of the stopped target's buffer at `base`
 * hold pattern `seed` (read from outside, with process_vm_readv):
 * 1 yes, 0 no, -1 when the read failed. */
static int target_holds(pid_t pid, uint64_t base, size_t off, size_t len, unsigned seed)
{
	static unsigned char got[SX], want[HUGE];
	struct iovec l = { got, len }, r = { (void *)(uintptr_t)(base + off), len };
	if (len > SX || process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)len)
		return -1;
	peer_fill(want, off + len, seed);
	return memcmp(got, want + off, len) == 0;
}

static int batch_target(struct peer *p)
{
	struct fid_mr *rw, *ro;
	peer_fill(tbuf, NSX * SX, 1);
	memset(tbuf + NSX * SX, 0, SX);
	CHECK_OK(reg_publish(p, tbuf, NSX * SX, FI_REMOTE_WRITE | FI_REMOTE_READ, &rw));
	CHECK_OK(reg_publish(p, tbuf + NSX * SX, SX, FI_REMOTE_READ, &ro));
	/* The initiator stops this process, works, lets it run again. */
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_check_fill(tbuf, NSX * SX, 2));
	for (size_t i = 0; i < SX; i++)
		CHECK(tbuf[NSX * SX + i] == 0);
	CHECK_OK(fi_close(&rw->fid));
	CHECK_OK(fi_close(&ro->fid));
	return 0;
}

static int batch_init(struct peer *p)
{
	struct peer_region rw, ro;
	CHECK_OK(get_region(p, &rw));
	CHECK_OK(get_region(p, &ro));
	CHECK_OK(stop_all(p->child));
	static char ctx[NSX + 1], rctx[NSX];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	peer_fill(ibuf, NSX * SX, 2);
	/* A poll first: the stream starts after it. */
	(void)fi_cq_read(p->cq, &e, 0);
	/* Writes 0-3, the refused one, writes 4-7: no poll between. */
	for (int i = 0; i < NSX; i++) {
		if (i == NSX / 2)
			CHECK_OK(post(p, 1, ibuf, SX, at(p, &ro, 0), ro.key, &ctx[NSX]));
		CHECK_OK(post(p, 1, ibuf + i * SX, SX, at(p, &rw, i * SX), rw.key, &ctx[i]));
		if (!cma_possible())
			continue;
		/* Looked at before any poll: the first went at once; the others
		 * wait for one (or, unbatched, went at once too). */
		int held = target_holds(p->child, rw.base, i * SX, SX, 1);
		CHECK(held >= 0);
		CHECK(held == (batch_expect && i > 0));
	}
	if (!cma_possible()) {
		/* Every access waits for the stopped target. */
		CHECK_OK(peer_cq_stays_empty(p, 300));
		CHECK(kill(p->child, SIGCONT) == 0);
		for (int i = 0; i <= NSX; i++) {
			int rc = peer_wait(p, &e, &ee);
			CHECK(rc == 0 || (rc == -FI_EAVAIL && ee.op_context == &ctx[NSX] &&
					  ee.err == FI_EACCES));
		}
		CHECK_OK(peer_sync(p));
		return 0;
	}
	/* The poll: all eight complete, in order, the target still stopped. */
	for (int i = 0; i < NSX; i++) {
		CHECK_OK(peer_wait(p, &e, &ee));
		CHECK(e.op_context == &ctx[i]);
		CHECK(target_holds(p->child, rw.base, i * SX, SX, 2) == 1);
	}
	/* The refused one waits for the target. */
	CHECK_OK(peer_cq_stays_empty(p, 100));
	/* A batch of reads brings the bytes back. */
	memset(ibuf, 0, NSX * SX);
	for (int i = 0; i < NSX; i++)
		CHECK_OK(post(p, 0, ibuf + i * SX, SX, at(p, &rw, i * SX), rw.key, &rctx[i]));
	for (int i = 0; i < NSX; i++) {
		CHECK_OK(peer_wait(p, &e, &ee));
		CHECK(e.op_context == &rctx[i]);
	}
	CHECK_OK(peer_check_fill(ibuf, NSX * SX, 2));
	CHECK(kill(p->child, SIGCONT) == 0);
	CHECK(peer_wait(p, &e, &ee) == -FI_EAVAIL);
	CHECK(ee.op_context == &ctx[NSX] && ee.err == FI_EACCES);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int stream_batched(void)
{
	batch_expect = 1;
	return pair_caps(DIRECT_MODE, CAPS, batch_target, batch_init);
}

/* FI_OXSHM_BATCH=0 (set by the case table). */
static int stream_unbatched(void)
{
	batch_expect = 0;
	return pair_caps(DIRECT_MODE, CAPS, batch_target, batch_init);
}

static int auto_target(struct peer *p)
{
	struct fid_mr *mr;
	peer_fill(tbuf, NSX * SX, 1);
	CHECK_OK(reg_publish(p, tbuf, NSX * SX, FI_REMOTE_WRITE, &mr));
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_check_fill(tbuf, NSX * SX, 2));
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int auto_init(struct peer *p)
{
	struct peer_region r;
	CHECK_OK(get_region(p, &r));
	CHECK_OK(stop_all(p->child));
	static char ctx[NSX];
	struct fi_cq_tagged_entry e;
	peer_fill(ibuf, NSX * SX, 2);
	(void)fi_cq_read(p->cq, &e, 0);
	for (int i = 0; i < NSX; i++)
		CHECK_OK(post(p, 1, ibuf + i * SX, SX, at(p, &r, i * SX), r.key, &ctx[i]));
	/* No call into the library from here: the progress thread copies
	 * the batch (within a few milliseconds: allow 5 s). */
	double end = peer_now() + 5;
	while (target_holds(p->child, r.base, (NSX - 1) * SX, SX, 2) != 1) {
		CHECK(peer_now() < end);
		usleep(1000);
	}
	for (int i = 0; i < NSX; i++)
		CHECK(target_holds(p->child, r.base, i * SX, SX, 2) == 1);
	/* Their completions wait in the CQ, in order. */
	for (int i = 0; i < NSX; i++) {
		CHECK_OK(peer_wait(p, &e, NULL));
		CHECK(e.op_context == &ctx[i]);
	}
	CHECK(kill(p->child, SIGCONT) == 0);
	CHECK_OK(peer_sync(p));
	return 0;
}

/* Runs `target` and `init`, which need direct RMA; where the processes
 * cannot copy across, checks that a stopped target holds a write back
 * instead. */
static int direct_pair(peer_side_fn target, peer_side_fn init)
{
	if (!cma_possible()) {
		fprintf(stderr, "    no cross-memory attach here: nothing goes direct\n");
		held_len = BIG;
		return pair_caps(DIRECT_MODE, CAPS, held_target, held_init);
	}
	return pair_caps(DIRECT_MODE, CAPS, target, init);
}

static int batch_copied_by_progress_thread(void)
{
	return direct_pair(auto_target, auto_init);
}

static int full_ring_init(struct peer *p)
{
	struct peer_region rw, ro;
	CHECK_OK(get_region(p, &rw));
	CHECK_OK(get_region(p, &ro));
	CHECK_OK(stop_all(p->child));
	static char ctx[NSX + 1], late;
	static uint64_t word;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	peer_fill(ibuf, NSX * SX, 2);
	/* Injected messages until the target's ring is full. */
	int sent = 0;
	for (;;) {
		ssize_t rc = fi_inject(p->ep, &word, sizeof(word), p->other);
		if (rc == -FI_EAGAIN)
			break;
		CHECK(rc == 0);
		CHECK(++sent < 100000);
	}
	CHECK(sent > 0);
	/* No poll since: all of these wait in the batch; the refused one is
	 * fifth. */
	for (int i = 0; i < NSX; i++) {
		if (i == 4)
			CHECK(fi_write(p->ep, ibuf, SX, NULL, p->other, at(p, &ro, 0), ro.key,
				       &ctx[NSX]) == 0);
		CHECK(fi_write(p->ep, ibuf + i * SX, SX, NULL, p->other, at(p, &rw, i * SX),
			       rw.key, &ctx[i]) == 0);
	}
	/* The poll copies the four before it; it cannot be requested. */
	for (int i = 0; i < 4; i++) {
		CHECK_OK(peer_wait(p, &e, &ee));
		CHECK(e.op_context == &ctx[i]);
	}
	CHECK_OK(peer_cq_stays_empty(p, 100));
	/* Nothing overtakes it. */
	CHECK(fi_write(p->ep, ibuf, SX, NULL, p->other, at(p, &rw, 0), rw.key, &late) ==
	      -FI_EAGAIN);
	CHECK(kill(p->child, SIGCONT) == 0);
	/* The refused one fails once the target answers; the ones behind it
	 * complete, in order, once it is requested. */
	int next = 4, refused = 0;
	while (next < NSX || !refused) {
		int rc = peer_wait(p, &e, &ee);
		if (rc == -FI_EAVAIL) {
			CHECK(!refused && ee.op_context == &ctx[NSX] && ee.err == FI_EACCES);
			refused = 1;
			continue;
		}
		CHECK_OK(rc);
		CHECK(next < NSX && e.op_context == &ctx[next]);
		next++;
	}
	CHECK_OK(post(p, 1, ibuf, SX, at(p, &rw, 0), rw.key, &late));
	CHECK_OK(peer_wait(p, &e, &ee));
	CHECK(e.op_context == &late);
	CHECK_OK(peer_sync(p));
	return 0;
}

static int batch_waits_for_full_ring(void)
{
	return direct_pair(batch_target, full_ring_init);
}

/* ---- counted_endpoint_keeps_requests ---- */

static int counted_target(struct peer *p)
{
	struct fid_mr *mr;
	CHECK(p->cntr[C_REMOTE_WRITE] != NULL);
	CHECK_OK(reg_publish(p, tbuf, BIG, FI_REMOTE_WRITE, &mr));
	CHECK_OK(peer_sync(p));
	CHECK(peer_cntr(p, C_REMOTE_WRITE) == 8);
	CHECK_OK(fi_close(&mr->fid));
	return 0;
}

static int counted_init(struct peer *p)
{
	struct peer_region r;
	CHECK_OK(get_region(p, &r));
	for (int i = 0; i < 8; i++) {
		int err;
		CHECK_OK(access1(p, 1, ibuf, BIG, at(p, &r, 0), r.key, &err));
		CHECK(err == 0);
	}
	CHECK_OK(peer_sync(p));
	return 0;
}

static int counted_endpoint_keeps_requests(void)
{
	return pair_caps(DIRECT_MODE, CAPS | FI_RMA_EVENT, counted_target, counted_init);
}

static const struct test_case cases[] = {
	CASE(direct_needs_no_target),
	CASE(refusals),
	CASE_ENV(refusals_virt, "FI_OXSHM_MR_MODE=FI_MR_PROV_KEY|FI_MR_VIRT_ADDR"),
	CASE(close_waits_for_copies),
	CASE(lone_large_goes_through_target),
	CASE_ENV(lone_small_goes_direct, "FI_OXSHM_LONE=1"),
	CASE_ENV(lone_small_keeps_ring_by_env, "FI_OXSHM_LONE=0"),
	CASE(lone_small_by_measured_cost),
	CASE(counted_endpoint_keeps_requests),
	CASE(stream_batched),
	CASE_ENV(stream_unbatched, "FI_OXSHM_BATCH=0"),
	CASE(batch_copied_by_progress_thread),
	CASE(batch_waits_for_full_ring),
	CASE_ENV(off_by_env, "FI_OXSHM_DIRECT=0"),
	CASE_ENV(on_by_env, "FI_OXSHM_DIRECT=1"),
};

TEST_MAIN(cases)
