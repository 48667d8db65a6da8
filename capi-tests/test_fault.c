/*
 * Peers that go away mid-stream: killed with SIGKILL (target or initiator)
 * or closing their endpoint cleanly. The survivor's operations all
 * complete (success or an error completion with FI_EIO/FI_EHOSTUNREACH)
 * within 2 s, its calls keep returning, it can go on using and closing
 * its objects, and /dev/shm keeps no oxshm segment of either process.
 *
 * Every process arms alarm() so that nothing can hang the suite.
 */
#include "peer.h"
#include <dirent.h>

enum { CHUNK = 64 * 1024, REGION = 16 * CHUNK, WINDOW = 4 };
/* The promise under test: everything completes this soon after the peer
 * is gone. */
#define DEADLINE 2.0

static void arm(void)
{
	alarm(getenv("OX_TEST_SCALE") ? 240 : 30);
}

/* /dev/shm entries of oxshm endpoints of process `pid`. */
static int shm_entries(pid_t pid)
{
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "oxshm-%d-", (int)pid);
	DIR *d = opendir("/dev/shm");
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
			fprintf(stderr, "    left in /dev/shm: %s\n", e->d_name);
			n++;
		}
	closedir(d);
	return n;
}

static int gone_err(int err)
{
	return err == FI_EIO || err == FI_EHOSTUNREACH;
}

/*
 * The initiator's stream: keeps up to WINDOW 64 KiB fi_writes in flight to
 * the target's region. Stops posting once `extra` operations were posted
 * after *t_gone became nonzero (set by the caller's `on_progress` hook once
 * the peer is gone), and returns when all posted operations completed.
 * Every call must return 0 or -FI_EAGAIN, promptly; every completion is a
 * success or FI_EIO/FI_EHOSTUNREACH; all of them done by *t_gone + DEADLINE.
 */
struct stream {
	struct peer *p;
	const struct peer_region *r;
	unsigned char *src;
	int posted, done, ok, failed, extra;
	double t_gone, slowest_call, last_done;
	/* Called after each completion; may set t_gone. */
	int (*on_progress)(struct stream *);
	pid_t victim;
};

static int stream_run(struct stream *s)
{
	struct peer *p = s->p;
	int after = 0, rc = 0;
	double hard_end = peer_now() + 15;
	while (peer_now() < hard_end) {
		int stop_posting = s->t_gone && after >= s->extra;
		if (stop_posting && s->posted == s->done)
			break;
		if (!stop_posting && s->posted - s->done < WINDOW) {
			uint64_t off = (uint64_t)(s->posted % (REGION / CHUNK)) * CHUNK;
			double t0 = peer_now();
			ssize_t r = fi_write(p->ep, s->src, CHUNK, NULL, p->other,
					     peer_raddr(p, (void *)(uintptr_t)s->r->base, off),
					     s->r->key, NULL);
			double dt = peer_now() - t0;
			if (dt > s->slowest_call)
				s->slowest_call = dt;
			if (r == 0) {
				s->posted++;
				if (s->t_gone)
					after++;
			} else if (r != -FI_EAGAIN) {
				fprintf(stderr, "    fi_write returned %zd (%s)\n", r, test_errstr(r));
				rc = 1;
				break;
			}
		}
		struct fi_cq_tagged_entry e;
		ssize_t n = fi_cq_read(p->cq, &e, 1);
		if (n == 1) {
			s->done++;
			s->ok++;
		} else if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;
			memset(&err, 0, sizeof(err));
			CHECK_RC(fi_cq_readerr(p->cq, &err, 0), 1);
			s->done++;
			s->failed++;
			if (!gone_err(err.err)) {
				fprintf(stderr, "    error completion %d (%s), want FI_EIO or "
					"FI_EHOSTUNREACH\n", err.err, fi_strerror(err.err));
				rc = 1;
			}
			if (!s->t_gone) {
				fprintf(stderr, "    error completion before the peer went away\n");
				rc = 1;
			}
		} else if (n != -FI_EAGAIN) {
			fprintf(stderr, "    fi_cq_read returned %zd (%s)\n", n, test_errstr(n));
			rc = 1;
			break;
		} else {
			sched_yield(); /* see peer_wait */
		}
		if (n == 1 || n == -FI_EAVAIL) {
			s->last_done = peer_now();
			if (s->on_progress && s->on_progress(s))
				rc = 1;
		}
		if (s->t_gone && !(s->posted == s->done && after >= s->extra) &&
		    peer_now() > s->t_gone + DEADLINE + 8)
			break;
	}
	if (s->posted != s->done) {
		fprintf(stderr, "    %d of %d operations never completed\n", s->posted - s->done,
			s->posted);
		rc = 1;
	} else if (s->t_gone && s->last_done > s->t_gone + DEADLINE) {
		fprintf(stderr, "    the last operation completed %.2f s after the peer went away\n",
			s->last_done - s->t_gone);
		rc = 1;
	}
	if (s->slowest_call > 0.5) {
		fprintf(stderr, "    a fi_write call took %.2f s\n", s->slowest_call);
		rc = 1;
	}
	if (!s->t_gone) {
		fprintf(stderr, "    the peer never went away\n");
		rc = 1;
	}
	return rc;
}

/* ------------------------------------------------ (a) target killed */

/* After the third completion: SIGKILL the target, reaping it at once
 * (`reap`) or leaving it a zombie until the stream is over. */
static int kill_after_three(struct stream *s, int reap)
{
	if (s->t_gone || s->done < 3)
		return 0;
	CHECK(kill(s->victim, SIGKILL) == 0);
	if (reap) {
		int st;
		CHECK(waitpid(s->victim, &st, 0) == s->victim);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	s->t_gone = peer_now();
	return 0;
}

static int kill_reaped(struct stream *s)
{
	return kill_after_three(s, 1);
}

static int kill_zombie(struct stream *s)
{
	return kill_after_three(s, 0);
}

static int target_until_killed(struct peer *p)
{
	unsigned char *buf = calloc(1, REGION);
	CHECK(buf);
	struct fid_mr *mr;
	CHECK_OK(fi_mr_reg(p->domain, buf, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			   NULL));
	struct peer_region r = { fi_mr_key(mr), (uint64_t)(uintptr_t)buf, REGION };
	peer_put(p, &r, sizeof(r));
	/* Serve until SIGKILL (the alarm of peer_open ends a stray one). */
	for (;;)
		pause();
}

static int kill_target(int reap)
{
	arm();
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	if (p.is_target)
		return peer_close(&p, target_until_killed(&p));
	pid_t victim = p.child, me = getpid();
	struct peer_region r;
	int rc = peer_get(&p, &r, sizeof(r)) ? 1 : 0;
	unsigned char *src = malloc(CHUNK);
	CHECK(src);
	memset(src, 0x5A, CHUNK);
	struct stream s = { .p = &p, .r = &r, .src = src, .extra = 20,
			    .on_progress = reap ? kill_reaped : kill_zombie, .victim = victim };
	if (!rc)
		rc = stream_run(&s);
	free(src);
	if (!s.t_gone)
		kill(victim, SIGKILL);
	if (!rc && s.ok < 3) {
		fprintf(stderr, "    only %d writes succeeded before the kill\n", s.ok);
		rc = 1;
	}
	/* The dead peer leaves the AV like any other. */
	if (fi_av_remove(p.av, &p.other, 1, 0)) {
		fprintf(stderr, "    fi_av_remove of the dead peer failed\n");
		rc = 1;
	}
	if (!reap || !s.t_gone) {
		int st;
		if (waitpid(victim, &st, 0) != victim)
			rc = 1;
	}
	if (peer_close_ep(&p))
		rc = 1;
	close(p.to);
	close(p.from);
	if (shm_entries(victim) || shm_entries(me))
		rc = 1;
	return rc;
}

/* SIGKILL of the target, reaped at once: the stream's operations complete
 * within 2 s, later ones fail fast, fi_av_remove works, no segment left. */
static int kill_target_reaped(void)
{
	return kill_target(1);
}

/* The same with the killed target left a zombie (not yet waited for by
 * its parent, as when the launcher reaps it late): dead all the same. */
static int kill_target_zombie(void)
{
	return kill_target(0);
}

/* ---------------------------------------------- (b) initiator killed */

enum { NMSG = 2 };

/* The doomed initiator: two 64 KiB messages the target has no receive
 * for (they wait, unexpected, for their bytes to be pulled), then writes
 * until it is killed. */
static int doomed_initiator(struct peer *p)
{
	struct peer_region r;
	CHECK(peer_get(p, &r, sizeof(r)) == 0);
	unsigned char *msg = malloc(CHUNK), *src = malloc(CHUNK);
	CHECK(msg && src);
	memset(msg, 0x33, CHUNK);
	memset(src, 0x44, CHUNK);
	for (int i = 0; i < NMSG; i++)
		CHECK_OK(fi_send(p->ep, msg, CHUNK, NULL, p->other, NULL));
	char t = 'w';
	peer_put(p, &t, 1);
	int posted = 0, done = 0;
	for (;;) {
		if (posted - done < WINDOW) {
			uint64_t off = (uint64_t)(posted % (REGION / CHUNK)) * CHUNK;
			ssize_t rc = fi_write(p->ep, src, CHUNK, NULL, p->other,
					      peer_raddr(p, (void *)(uintptr_t)r.base, off), r.key,
					      NULL);
			if (rc == 0)
				posted++;
			else if (rc != -FI_EAGAIN)
				return 1;
		}
		struct fi_cq_tagged_entry e;
		if (fi_cq_read(p->cq, &e, 1) == 1)
			done++;
		else
			sched_yield();
	}
}

static int kill_initiator_mid_stream(void)
{
	arm();
	int up[2], down[2];
	CHECK(pipe(up) == 0 && pipe(down) == 0);
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	struct peer p;
	memset(&p, 0, sizeof(p));
	if (kid == 0) {
		alarm(60);
		close(up[0]);
		close(down[1]);
		p.to = up[1];
		p.from = down[0];
		p.is_target = 1;
		int rc = peer_open_ep(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0);
		if (!rc)
			rc = peer_swap_names(&p);
		if (!rc)
			rc = doomed_initiator(&p);
		fflush(NULL);
		_exit(rc ? 1 : 0);
	}
	close(up[1]);
	close(down[0]);
	p.to = down[1];
	p.from = up[0];
	pid_t me = getpid();
	int rc = peer_open_ep(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0);
	if (!rc)
		rc = peer_swap_names(&p);
	unsigned char *buf = calloc(1, REGION);
	CHECK(buf);
	struct fid_mr *mr = NULL;
	if (!rc)
		rc = fi_mr_reg(p.domain, buf, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL) != 0;
	if (!rc) {
		struct peer_region r = { fi_mr_key(mr), (uint64_t)(uintptr_t)buf, REGION };
		peer_put(&p, &r, sizeof(r));
		char t = 0;
		rc = peer_get(&p, &t, 1) || t != 'w';
	}
	/* Let the stream run, then kill it in the middle. */
	double end = peer_now() + 10;
	while (!rc && peer_cntr(&p, C_REMOTE_WRITE) < 5 && peer_now() < end) {
		struct fi_cq_tagged_entry e;
		(void)fi_cq_read(p.cq, &e, 1);
		sched_yield();
	}
	if (!rc && peer_cntr(&p, C_REMOTE_WRITE) < 5) {
		fprintf(stderr, "    the initiator's writes did not arrive\n");
		rc = 1;
	}
	kill(kid, SIGKILL);
	int st = 0;
	if (waitpid(kid, &st, 0) != kid || !WIFSIGNALED(st)) {
		fprintf(stderr, "    initiator exited with status 0x%x, want SIGKILL\n", st);
		rc = 1;
	}
	double t_gone = peer_now();
	/* The target keeps working: new registrations, closes. */
	if (!rc) {
		unsigned char other[4096];
		struct fid_mr *mr2;
		CHECK_OK(fi_mr_reg(p.domain, other, sizeof(other), FI_REMOTE_WRITE, 0, 0, 0, &mr2,
				   NULL));
		CHECK_OK(fi_close(&mr2->fid));
		CHECK_OK(fi_close(&mr->fid));
		mr = NULL;
		/* The dead sender's unexpected messages: a receive for each
		 * completes (the bytes are gone: an error), none hangs. */
		unsigned char *rb = malloc(CHUNK);
		CHECK(rb);
		int got = 0;
		for (int i = 0; i < NMSG && !rc; i++) {
			int ctx;
			CHECK_OK(fi_recv(p.ep, rb, CHUNK, NULL, FI_ADDR_UNSPEC, &ctx));
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;
			int w = peer_wait(&p, &e, &err);
			if (w == -FI_EAVAIL) {
				if (!gone_err(err.err) || err.op_context != &ctx) {
					fprintf(stderr, "    receive of a dead sender's message: err %d "
						"(%s)\n", err.err, fi_strerror(err.err));
					rc = 1;
				}
			} else if (w == 0) {
				fprintf(stderr, "    receive of a dead sender's 64 KiB message "
					"succeeded (len %zu)\n", e.len);
				rc = 1;
			} else {
				rc = 1;
			}
			got++;
		}
		free(rb);
		if (!rc && peer_now() > t_gone + DEADLINE) {
			fprintf(stderr, "    the receives took %.2f s\n", peer_now() - t_gone);
			rc = 1;
		}
		(void)got;
	}
	if (mr && fi_close(&mr->fid))
		rc = 1;
	if (peer_close_ep(&p))
		rc = 1;
	free(buf);
	close(p.to);
	close(p.from);
	if (shm_entries(kid) || shm_entries(me))
		rc = 1;
	return rc;
}

/* --------------------------------------------------- (c) clean close */

static int closing_target(struct peer *p)
{
	unsigned char *buf = calloc(1, REGION);
	CHECK(buf);
	struct fid_mr *mr;
	CHECK_OK(fi_mr_reg(p->domain, buf, REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			   NULL));
	struct peer_region r = { fi_mr_key(mr), (uint64_t)(uintptr_t)buf, REGION };
	peer_put(p, &r, sizeof(r));
	CHECK_OK(peer_sync(p)); /* the first writes are done */
	CHECK_OK(fi_close(&p->ep->fid));
	p->ep = NULL;
	CHECK_OK(peer_sync(p)); /* closed */
	CHECK_OK(peer_sync(p)); /* the initiator is done */
	CHECK_OK(fi_close(&mr->fid));
	free(buf);
	if (shm_entries(getpid()))
		return 1;
	return 0;
}

static int closing_initiator(struct peer *p)
{
	struct peer_region r;
	CHECK(peer_get(p, &r, sizeof(r)) == 0);
	unsigned char *src = malloc(CHUNK);
	CHECK(src);
	memset(src, 0x11, CHUNK);
	int rc = 0;
	for (int i = 0; i < 3 && !rc; i++) {
		CHECK_OK(fi_write(p->ep, src, i == 1 ? 100 : CHUNK, NULL, p->other,
				  peer_raddr(p, (void *)(uintptr_t)r.base, 0), r.key, NULL));
		rc = peer_wait(p, NULL, NULL);
	}
	CHECK_OK(rc);
	CHECK_OK(peer_sync(p));
	CHECK_OK(peer_sync(p)); /* its endpoint is closed */
	double t_gone = peer_now(), last = t_gone;
	/* A window of writes (inline and cross-memory) and a send, twice:
	 * before and after the survivor noticed. */
	for (int round = 0; round < 2; round++) {
		int ctx[WINDOW + 1];
		for (int i = 0; i < WINDOW; i++) {
			ssize_t w = fi_write(p->ep, src, i % 2 ? 64 : CHUNK, NULL, p->other,
					     peer_raddr(p, (void *)(uintptr_t)r.base, 0), r.key,
					     &ctx[i]);
			CHECK(w == 0);
		}
		CHECK_OK(fi_send(p->ep, src, 32, NULL, p->other, &ctx[WINDOW]));
		for (int i = 0; i <= WINDOW; i++) {
			struct fi_cq_tagged_entry e;
			struct fi_cq_err_entry err;
			int w = peer_wait(p, &e, &err);
			if (w == 0) {
				fprintf(stderr, "    an operation to a closed endpoint succeeded\n");
				rc = 1;
			} else if (w == -FI_EAVAIL) {
				if (!gone_err(err.err)) {
					fprintf(stderr, "    error completion %d (%s)\n", err.err,
						fi_strerror(err.err));
					rc = 1;
				}
			} else {
				rc = 1;
			}
			last = peer_now();
		}
		if (rc)
			break;
	}
	free(src);
	if (last > t_gone + DEADLINE) {
		fprintf(stderr, "    the operations took %.2f s to fail\n", last - t_gone);
		rc = 1;
	}
	CHECK(peer_cntr_err(p, C_WRITE) == 2 * WINDOW);
	CHECK(peer_cntr_err(p, C_SEND) == 2);
	CHECK_OK(peer_sync(p));
	return rc;
}

/* A target that closes its endpoint (and lives on): later writes and sends
 * to it complete in error within 2 s. */
static int peer_closes_endpoint(void)
{
	arm();
	struct peer p;
	CHECK_OK(peer_open(&p, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, 0));
	return peer_close(&p, p.is_target ? closing_target(&p) : closing_initiator(&p));
}

static const struct test_case cases[] = {
	CASE(kill_target_reaped),
	CASE(kill_target_zombie),
	CASE(kill_initiator_mid_stream),
	CASE(peer_closes_endpoint),
};

TEST_MAIN(cases)
