/*
 * stress_data: a multi-process soak of the oxshm data path.
 *
 *   stress_data [-t SECONDS] [-p PROCS] [-e EPS] [-i INFLIGHT] [-s SEED] [-M] [-H] [-D]
 *
 * The parent forks PROCS children and waits for them. Each child opens one
 * fabric and domain, one shared AV (FI_AV_TABLE) and EPS RDM endpoints, each
 * with its own CQ (FI_CQ_FORMAT_TAGGED) and counters for FI_SEND, FI_RECV,
 * FI_READ, FI_WRITE and (with FI_RMA_EVENT) FI_REMOTE_READ/FI_REMOTE_WRITE.
 * The children meet in a MAP_SHARED page created before the fork: endpoint
 * names, window keys, the barrier counter and, at the end, the results.
 *
 * Every endpoint owns a registered window of NG * SLICE bytes (NG = every
 * endpoint of the run), in which endpoint w owns bytes [w*SLICE, (w+1)*SLICE);
 * every process owns an array of NG uint64 atomic counters (slot w for
 * writer w). For the duration, one thread per endpoint keeps up to -i (8)
 * operations in flight, a random mix of
 *   - fi_write of 8 B .. 128 KiB (both the inline and the cross-memory path)
 *     of a pattern derived from (writer, sequence) into its slice on a random
 *     endpoint;
 *   - fi_read of a random piece of a slice whose write completed, checked
 *     byte for byte (and against the recorded checksum when whole);
 *   - fi_atomic FI_SUM 1 on the writer's slot at a random process;
 *   - fi_send / fi_tsend of a checksummed message (header: src, dst, seq,
 *     len, checksum) to a random endpoint; every endpoint keeps NRECV
 *     untagged and NRECV tagged receives of the largest size posted and
 *     checks every message (source address, tag, checksum, pattern).
 * Meanwhile one thread per process registers and closes throwaway MRs on
 * the same domain (heap buffers and pieces of the live windows) and every
 * few milliseconds re-registers one of its windows (or, now and then, its
 * atomic counters) under a new key: it publishes the new key with a
 * generation, marks the old generation retired and closes the old MR. An
 * initiator's write, read or atomic refused with FI_EINVAL is an expected
 * refusal iff the generation it used is retired by then (the target retires
 * before it closes), and it must have touched nothing; any other error
 * completion fails.
 *
 * At the end every process stops, drains, and (after every rotation stopped)
 * reads back every slice it wrote once more; then the exact checks: atomic
 * slots against what the writers report, every counter against successful
 * completions (and error counters against refusals), remote counters
 * against what the initiators report as accepted, every message received
 * exactly as often as its sender saw it complete. Each child, once it has
 * closed everything, checks that /dev/shm holds no oxshm-<its pid>-* entry
 * (peers reap a dead process's segments, so the parent alone could miss
 * one); the parent checks every child's exit status, prints a summary and
 * checks /dev/shm again for every child's pid and its own.
 *
 * Every wait that gives up (an operation that never completes, a message
 * that never arrives, a barrier) leaves out the time in which the kernel
 * held a thread of some process of the run in a memory-management call
 * (state D in mmap and its kin, or in a page fault), as the parent samples
 * every 50 ms, up to HELD_CAP seconds; the summary says how long that
 * was. A provider that stops answering has no such excuse: its threads
 * wait in futexes or spin.
 *
 * -s SEED makes the mix repeatable (timing aside); -M runs each process
 * under another FI_OXSHM_MR_MODE, so that initiators and targets differ in
 * FI_MR_VIRT_ADDR (addresses follow the target's mode), FI_MR_LOCAL and
 * FI_MR_PROV_KEY; -i sets the operations in flight per endpoint and -H
 * aims every operation at endpoint 0 or 1, which fills their inboxes (the
 * -FI_EAGAIN paths; e.g. -p 16 -e 4 -i 64 -H). -D binds no remote counters:
 * oxshm's initiators then copy writes and reads of 8 KiB and more
 * themselves after checking the target's shared registration slots
 * (direct RMA), under the same rotations and closes; the remote counters'
 * check is left out.
 */
#include "test.h"
#include <dirent.h>
#include <pthread.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

enum {
	MAXP = 16,		/* processes */
	MAXE = 8,		/* endpoints per process */
	MAXG = 64,		/* endpoints in all */
	SLICE = 128 * 1024,	/* bytes of a window one writer owns (= largest write) */
	MSG_MAX = 128 * 1024,	/* largest message */
	INLINE_MAX = 16384,	/* oxshm's ring payload */
	MAX_INFLIGHT = 64,	/* operations in flight per endpoint, at most (-i) */
	NRECV = 8,		/* receives posted per endpoint, per kind */
	KEYRING = 64,		/* generations of window keys kept readable */
	NCNTR = 6,
	NTHROW = 8,		/* throwaway MRs alive at once */
	ROTATE_MS = 10,		/* key rotation period */
};

/* Counter events, in the order of ep_ctx.cntr[]. */
enum { C_SEND, C_RECV, C_READ, C_WRITE, C_REMOTE_READ, C_REMOTE_WRITE };
static const uint64_t cntr_events[NCNTR] = {
	FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE,
};
static const char *const cntr_names[NCNTR] = {
	"FI_SEND", "FI_RECV", "FI_READ", "FI_WRITE", "FI_REMOTE_READ", "FI_REMOTE_WRITE",
};

enum { OP_WRITE, OP_READ, OP_ATOMIC, OP_SEND, OP_KINDS };
static const char *const op_names[OP_KINDS] = { "write", "read", "atomic", "send" };

/* ------------------------------------------------------ shared page ---- */

/* One endpoint's window as its owner publishes it. */
struct win_pub {
	_Atomic uint64_t gen;	  /* current generation (from 1) */
	_Atomic uint64_t retired; /* every generation <= this one is retired */
	_Atomic uint64_t key[KEYRING]; /* key of generation g at g % KEYRING */
	uint64_t base, len;
};

struct stats {
	uint64_t ok[OP_KINDS], refused[OP_KINDS], bytes[OP_KINDS];
	uint64_t recvs, recv_bytes, throwaway, rotations, sweep_reads, eagain;
};

struct shared {
	_Atomic int arrived; /* barrier: k-th barrier passes at k * nproc */
	_Atomic int abort_;  /* a process failed: everyone stops */
	char names[MAXG][64];
	struct win_pub win[MAXG];
	struct win_pub atom[MAXP]; /* each process's atomic counters */
	int virt[MAXP];
	/* Results, [initiator][target endpoint]: operations that completed
	 * successfully (i.e. the target accepted them). */
	uint64_t writes_ok[MAXG][MAXG], reads_ok[MAXG][MAXG];
	uint64_t atomics_ok[MAXG][MAXG], sends_ok[MAXG][MAXG];
	struct stats stats[MAXP];
	_Atomic int pid[MAXP];	/* each process's, for describe_scheduling() */
	_Atomic int described;	/* describe_scheduling(): 1 running, 2 done */
	/* Time in which the kernel held a thread of some process of the run
	 * in a memory-management call (held_in_kernel()), as the parent
	 * samples it: the give-up waits do not count it. */
	_Atomic uint64_t held_us;
};

static struct shared *sh;
static int nproc = 4, neps = 2, ng;
static double secs = 5;
static uint64_t seed0;
static int mixed_modes;
static int inflight = 8; /* operations in flight per endpoint (-i) */
static int hot;		 /* -H: every operation targets endpoint 0 or 1 */
static int direct;	 /* -D: no remote counters (direct RMA) */

/* -M: process i runs under mixed_mode[i % N] (FI_OXSHM_MR_MODE; NULL: unset),
 * so initiators and targets differ in FI_MR_VIRT_ADDR, FI_MR_LOCAL,
 * FI_MR_PROV_KEY and FI_MR_ALLOCATED. */
static const char *const mixed_mode[] = {
	NULL, "FI_MR_VIRT_ADDR|FI_MR_PROV_KEY", "FI_MR_LOCAL", "FI_MR_VIRT_ADDR|FI_MR_ALLOCATED",
	"FI_MR_LOCAL|FI_MR_VIRT_ADDR|FI_MR_PROV_KEY|FI_MR_ALLOCATED",
};

/* --------------------------------------------------------- helpers ---- */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The most time held_us may take off the give-up waits, in seconds: a
 * kernel that holds a process longer still ends the run. */
#define HELD_CAP 240

/* The clock of the give-up waits: the monotonic clock less the time the
 * kernel held a process of the run in a memory-management call (up to
 * HELD_CAP). On a host whose kernel walks the processes' memory (DAMON,
 * here with a pageout scheme on physical memory), mmap(2) has waited for
 * an anon_vma lock for more than 30 s at a time, with every other thread
 * of that process waiting behind it: time in which no provider can
 * answer, and which says nothing about the data path. */
static double wait_clock(void)
{
	double held = (double)atomic_load(&sh->held_us) * 1e-6;
	return now() - (held < HELD_CAP ? held : HELD_CAP);
}

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The bytes of a write or a message: a function of its seed only. */
static void pattern(unsigned char *b, size_t n, uint64_t seed)
{
	uint64_t s = splitmix(seed) | 1;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		uint64_t v = s ^ (s >> 29);
		memcpy(b + i, &v, 8);
	}
	s = s * 6364136223846793005ULL + 1442695040888963407ULL;
	for (; i < n; i++)
		b[i] = (unsigned char)(s >> (8 * (i & 7)));
}

static uint64_t checksum(const unsigned char *b, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ n;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v;
		memcpy(&v, b + i, 8);
		h = (h ^ v) * 0x100000001b3ULL;
		h ^= h >> 32;
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t seed_of(int kind, int gid, uint64_t seq)
{
	return ((uint64_t)kind << 56) ^ ((uint64_t)gid << 40) ^ seq;
}

/* Sizes that cover the inline path, its boundary and the cross-memory path. */
static size_t rand_size(uint64_t *r, size_t min, size_t max)
{
	static const size_t edges[] = { INLINE_MAX - 1, INLINE_MAX, INLINE_MAX + 1, 4096, 65536 };
	size_t n;
	switch (rnd(r) % 8) {
	case 0:
		n = min + rnd(r) % 64;
		break;
	case 1:
	case 2:
		n = min + rnd(r) % (INLINE_MAX - min + 1);
		break;
	case 3:
		n = edges[rnd(r) % (sizeof(edges) / sizeof(edges[0]))];
		break;
	default:
		n = INLINE_MAX + 1 + rnd(r) % (max - INLINE_MAX);
		break;
	}
	return n < min ? min : n > max ? max : n;
}

/* ----------------------------------------------------- per process ---- */

enum { S_EMPTY, S_BUSY, S_VALID };
struct slice {
	int state;
	size_t len;
	uint64_t seq, sum;
};

struct msg_hdr {
	uint32_t src, dst;
	uint64_t seq, len, sum, tagged;
};

struct op {
	int busy, kind, tgt;
	uint64_t gen, key, seq;
	size_t len, off;
	struct slice prev; /* the slice before this write or read */
	unsigned char *buf;
	struct fid_mr *mr;
	void *desc;
};

struct rbuf {
	int tagged;
	unsigned char *buf;
	struct fid_mr *mr;
	void *desc;
};

struct proc;

struct ep_ctx {
	struct proc *pr;
	int idx, gid;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *cntr[NCNTR];
	unsigned char *win;
	size_t win_len;
	struct fid_mr *win_mr; /* the MR thread's once running */
	uint64_t win_gen;
	struct op ops[MAX_INFLIGHT];
	int busy;
	struct rbuf rb[2 * NRECV];
	struct slice slices[MAXG];
	unsigned char *scratch;
	uint64_t rng, seq;
	/* Successful operations per target endpoint, messages per source. */
	uint64_t ok[OP_KINDS][MAXG];
	uint64_t recv_from[MAXG];
	struct stats st;
	pthread_t th;
	_Atomic int state; /* 0 running, 1 drained, 2 swept, 3 done */
};

enum { PH_RUN, PH_SWEEP, PH_RECV };

struct proc {
	int id;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	fi_addr_t addrs[MAXG];
	int virt, local, prov_key;
	_Atomic uint64_t next_key;
	uint64_t *atom;
	struct fid_mr *atom_mr; /* the MR thread's once running */
	uint64_t atom_gen;
	struct ep_ctx eps[MAXE];
	_Atomic int phase;
	_Atomic int mr_stop;
	double deadline;
	pthread_t mr_th;
	uint64_t throwaway, rotations;
};

static int my_id = -1;

static int failf(const char *who, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Reports a failure, tells every process to stop; returns 1. */
static int failf(const char *who, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (my_id < 0)
		fprintf(stderr, "stress_data: FAIL: %s\n", msg);
	else
		fprintf(stderr, "stress_data[%d%s%s]: FAIL: %s\n", my_id, who ? " " : "",
			who ? who : "", msg);
	fflush(stderr);
	if (sh)
		atomic_store(&sh->abort_, 1);
	return 1;
}

#define FAIL(...) failf(NULL, __VA_ARGS__)
#define EFAIL(e, ...) efail((e)->gid, __VA_ARGS__)

static int efail(int gid, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* failf for endpoint `gid`. */
static int efail(int gid, const char *fmt, ...)
{
	char who[16], msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(who, sizeof(who), "ep %d", gid);
	return failf(who, "%s", msg);
}

/* A libfabric call that must return 0. */
#define OK(expr)                                                                  \
	do {                                                                      \
		long r_ = (long)(expr);                                           \
		if (r_ != 0)                                                      \
			return FAIL("%s:%d: %s returned %ld (%s)", __FILE__, __LINE__, \
				    #expr, r_, test_errstr(r_));                  \
	} while (0)

/* A phase's wait for operations or messages: long enough for a loaded
 * machine, short enough that the endpoint says what it waits for before
 * a barrier or await_eps gives up, and before the parent's alarm. */
#define PHASE_WAIT 30

static int aborted(void)
{
	return atomic_load(&sh->abort_);
}

/* The k-th barrier of the run (k from 1). */
static int barrier(int k)
{
	atomic_fetch_add(&sh->arrived, 1);
	/* Past a phase's wait: the endpoint that holds everyone up says why
	 * first. */
	double end = wait_clock() + secs + PHASE_WAIT + 10;
	while (atomic_load(&sh->arrived) < k * nproc) {
		if (aborted())
			return 1;
		if (wait_clock() > end)
			return FAIL("barrier %d: timed out (%d of %d arrived)", k,
				    atomic_load(&sh->arrived) - (k - 1) * nproc, nproc);
		usleep(200);
	}
	return 0;
}

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	if (!p) {
		FAIL("out of memory (%zu bytes)", n);
		_exit(1);
	}
	memset(p, 0, n);
	return p;
}

static uint64_t want_key(struct proc *pr)
{
	return pr->prov_key ? 0 : atomic_fetch_add(&pr->next_key, 1);
}

/* A region's current (generation, key); consistent with each other. */
static void pub_key(struct win_pub *w, uint64_t *gen, uint64_t *key)
{
	for (;;) {
		uint64_t g = atomic_load(&w->gen);
		uint64_t k = atomic_load(&w->key[g % KEYRING]);
		if (atomic_load(&w->gen) == g) {
			*gen = g;
			*key = k;
			return;
		}
	}
}

static uint64_t raddr(int tproc, uint64_t base, uint64_t off)
{
	return sh->virt[tproc] ? base + off : off;
}

/* ------------------------------------------------------- data path ---- */

static int post_recv(struct ep_ctx *e, struct rbuf *b)
{
	ssize_t r;
	for (;;) {
		r = b->tagged ? fi_trecv(e->ep, b->buf, MSG_MAX, b->desc, FI_ADDR_UNSPEC, 0,
					 ~(uint64_t)0, b)
			      : fi_recv(e->ep, b->buf, MSG_MAX, b->desc, FI_ADDR_UNSPEC, b);
		if (r != -FI_EAGAIN)
			break;
		sched_yield();
	}
	if (r)
		return EFAIL(e, "fi_%srecv: %zd (%s)", b->tagged ? "t" : "", r, test_errstr(r));
	return 0;
}

static struct op *free_op(struct ep_ctx *e)
{
	for (int i = 0; i < inflight; i++)
		if (!e->ops[i].busy)
			return &e->ops[i];
	return NULL;
}

/* Posts one operation of `kind` (to target `t`, or a random one when t < 0).
 * Returns 0 when posted or skipped (-FI_EAGAIN, nothing suitable), 1 on
 * failure. `full` reads whole slices. */
static int post_op(struct ep_ctx *e, int kind, int t, int full)
{
	struct proc *pr = e->pr;
	struct op *op = free_op(e);
	if (!op)
		return 0;
	if (t < 0) {
		t = (int)(rnd(&e->rng) % (uint64_t)(hot && ng > 1 ? 2 : ng));
		/* Writes want a slice not in use; reads one whose write completed. */
		if (kind == OP_WRITE || kind == OP_READ) {
			int want = kind == OP_WRITE ? -1 : S_VALID, i;
			for (i = 0; i < ng; i++) {
				int c = (t + i) % ng;
				int s = e->slices[c].state;
				if (want < 0 ? s != S_BUSY : s == want) {
					t = c;
					break;
				}
			}
			if (i == ng)
				return 0;
		}
	}
	int tproc = t / neps;
	ssize_t r = 0;
	op->kind = kind;
	op->tgt = t;
	op->seq = ++e->seq;
	switch (kind) {
	case OP_WRITE: {
		op->len = rand_size(&e->rng, 8, SLICE);
		pattern(op->buf, op->len, seed_of(OP_WRITE, e->gid, op->seq));
		pub_key(&sh->win[t], &op->gen, &op->key);
		uint64_t a = raddr(tproc, sh->win[t].base, (uint64_t)e->gid * SLICE);
		r = fi_write(e->ep, op->buf, op->len, op->desc, pr->addrs[t], a, op->key, op);
		break;
	}
	case OP_READ: {
		struct slice *s = &e->slices[t];
		if (full || rnd(&e->rng) % 2) {
			op->off = 0;
			op->len = s->len;
		} else {
			op->off = rnd(&e->rng) % s->len;
			op->len = 1 + rnd(&e->rng) % (s->len - op->off);
		}
		memset(op->buf, 0xEE, op->len);
		pub_key(&sh->win[t], &op->gen, &op->key);
		uint64_t a = raddr(tproc, sh->win[t].base, (uint64_t)e->gid * SLICE + op->off);
		r = fi_read(e->ep, op->buf, op->len, op->desc, pr->addrs[t], a, op->key, op);
		break;
	}
	case OP_ATOMIC: {
		uint64_t one = 1;
		memcpy(op->buf, &one, 8);
		op->len = 8;
		pub_key(&sh->atom[tproc], &op->gen, &op->key);
		uint64_t a = raddr(tproc, sh->atom[tproc].base, (uint64_t)e->gid * 8);
		r = fi_atomic(e->ep, op->buf, 1, op->desc, pr->addrs[t], a, op->key, FI_UINT64,
			      FI_SUM, op);
		break;
	}
	case OP_SEND: {
		struct msg_hdr h = { .src = (uint32_t)e->gid, .dst = (uint32_t)t, .seq = op->seq };
		h.tagged = rnd(&e->rng) & 1;
		op->len = rand_size(&e->rng, sizeof(h), MSG_MAX);
		h.len = op->len;
		unsigned char *pl = op->buf + sizeof(h);
		pattern(pl, op->len - sizeof(h), seed_of(OP_SEND, e->gid, op->seq));
		h.sum = checksum(pl, op->len - sizeof(h));
		memcpy(op->buf, &h, sizeof(h));
		uint64_t tag = ((uint64_t)e->gid << 32) | (op->seq & 0xffffffffu);
		r = h.tagged ? fi_tsend(e->ep, op->buf, op->len, op->desc, pr->addrs[t], tag, op)
			     : fi_send(e->ep, op->buf, op->len, op->desc, pr->addrs[t], op);
		break;
	}
	}
	if (r == -FI_EAGAIN) {
		e->seq--;
		e->st.eagain++;
		return 0;
	}
	if (r)
		return EFAIL(e, "fi_%s to ep %d (len %zu): %zd (%s)", op_names[kind], t, op->len, r,
			     test_errstr(r));
	if (kind == OP_WRITE || kind == OP_READ) {
		op->prev = e->slices[t];
		e->slices[t].state = S_BUSY;
	}
	op->busy = 1;
	e->busy++;
	return 0;
}

static int done_op(struct ep_ctx *e, struct op *op, const struct fi_cq_tagged_entry *c)
{
	static const uint64_t want[OP_KINDS] = {
		FI_RMA | FI_WRITE, FI_RMA | FI_READ, FI_ATOMIC | FI_WRITE, 0,
	};
	int t = op->tgt;
	if (op->kind == OP_SEND) {
		if (c->flags != (FI_MSG | FI_SEND) && c->flags != (FI_TAGGED | FI_SEND))
			return EFAIL(e, "send completion flags 0x%llx",
				     (unsigned long long)c->flags);
	} else if (c->flags != want[op->kind]) {
		return EFAIL(e, "%s completion flags 0x%llx, want 0x%llx", op_names[op->kind],
			     (unsigned long long)c->flags, (unsigned long long)want[op->kind]);
	}
	switch (op->kind) {
	case OP_WRITE:
		e->slices[t] = (struct slice){ S_VALID, op->len, op->seq,
					       checksum(op->buf, op->len) };
		break;
	case OP_READ: {
		struct slice *s = &op->prev;
		if (c->len != op->len)
			return EFAIL(e, "read of %zu bytes completed with len %zu", op->len, c->len);
		pattern(e->scratch, s->len, seed_of(OP_WRITE, e->gid, s->seq));
		if (memcmp(op->buf, e->scratch + op->off, op->len)) {
			size_t i = 0;
			while (op->buf[i] == e->scratch[op->off + i])
				i++;
			return EFAIL(e,
				     "read back of ep %d's slice (write seq %llu, %zu bytes; read %zu "
				     "at %zu): byte %zu is 0x%02x, want 0x%02x",
				     t, (unsigned long long)s->seq, s->len, op->len, op->off,
				     op->off + i, op->buf[i], e->scratch[op->off + i]);
		}
		if (op->off == 0 && op->len == s->len && checksum(op->buf, op->len) != s->sum)
			return EFAIL(e, "read back of ep %d: checksum differs", t);
		e->slices[t] = *s;
		break;
	}
	default:
		break;
	}
	e->ok[op->kind][t]++;
	e->st.ok[op->kind]++;
	e->st.bytes[op->kind] += op->len;
	op->busy = 0;
	e->busy--;
	return 0;
}

static int done_recv(struct ep_ctx *e, struct rbuf *b, const struct fi_cq_tagged_entry *c,
		     fi_addr_t from)
{
	struct msg_hdr h;
	uint64_t kind = b->tagged ? FI_TAGGED : FI_MSG;
	if (c->flags != (FI_RECV | kind))
		return EFAIL(e, "receive completion flags 0x%llx", (unsigned long long)c->flags);
	if (c->buf != b->buf)
		return EFAIL(e, "receive completion buf %p, want %p", c->buf, (void *)b->buf);
	if (c->len < sizeof(h))
		return EFAIL(e, "received %zu bytes, shorter than a header", c->len);
	memcpy(&h, b->buf, sizeof(h));
	if (h.dst != (uint32_t)e->gid || h.src >= (uint32_t)ng || h.len != c->len ||
	    h.tagged != (uint64_t)b->tagged)
		return EFAIL(e,
			     "bad message: src %u dst %u len %llu tagged %llu; completion len %zu, "
			     "%stagged receive",
			     h.src, h.dst, (unsigned long long)h.len, (unsigned long long)h.tagged,
			     c->len, b->tagged ? "" : "un");
	if (b->tagged && c->tag != (((uint64_t)h.src << 32) | (h.seq & 0xffffffffu)))
		return EFAIL(e, "message from ep %u seq %llu: tag 0x%llx", h.src,
			     (unsigned long long)h.seq, (unsigned long long)c->tag);
	if (from != e->pr->addrs[h.src])
		return EFAIL(e, "message from ep %u: source fi_addr %llu, want %llu", h.src,
			     (unsigned long long)from, (unsigned long long)e->pr->addrs[h.src]);
	size_t n = c->len - sizeof(h);
	unsigned char *pl = b->buf + sizeof(h);
	if (checksum(pl, n) != h.sum)
		return EFAIL(e, "message from ep %u seq %llu (%zu bytes): checksum differs", h.src,
			     (unsigned long long)h.seq, c->len);
	pattern(e->scratch, n, seed_of(OP_SEND, (int)h.src, h.seq));
	if (memcmp(pl, e->scratch, n))
		return EFAIL(e, "message from ep %u seq %llu: payload differs", h.src,
			     (unsigned long long)h.seq);
	e->recv_from[h.src]++;
	e->st.recvs++;
	e->st.recv_bytes += c->len;
	return post_recv(e, b);
}

static int is_op(struct ep_ctx *e, void *ctx)
{
	return (char *)ctx >= (char *)e->ops && (char *)ctx < (char *)(e->ops + inflight);
}

static int is_rbuf(struct ep_ctx *e, void *ctx)
{
	return (char *)ctx >= (char *)e->rb && (char *)ctx < (char *)(e->rb + 2 * NRECV);
}

static int done_err(struct ep_ctx *e, const struct fi_cq_err_entry *err)
{
	char why[128];
	snprintf(why, sizeof(why), "err %d (%s), prov_errno %d (%s)", err->err,
		 fi_strerror(err->err), err->prov_errno,
		 fi_cq_strerror(e->cq, err->prov_errno, err->err_data, NULL, 0));
	if (!is_op(e, err->op_context))
		return EFAIL(e, "error completion of %s: %s",
			     is_rbuf(e, err->op_context) ? "a receive" : "an unknown context", why);
	struct op *op = err->op_context;
	if (!op->busy)
		return EFAIL(e, "error completion of an idle op: %s", why);
	int t = op->tgt;
	struct win_pub *w = op->kind == OP_ATOMIC ? &sh->atom[t / neps] : &sh->win[t];
	uint64_t retired = atomic_load(&w->retired);
	if (op->kind != OP_SEND && err->err == FI_EINVAL && op->gen <= retired) {
		/* The target retired this key: nothing was touched. */
		if (op->kind != OP_ATOMIC)
			e->slices[t] = op->prev;
		e->st.refused[op->kind]++;
		op->busy = 0;
		e->busy--;
		return 0;
	}
	return EFAIL(e,
		     "%s of %zu bytes to ep %d (key 0x%llx, generation %llu; window retired up "
		     "to %llu, now at %llu) failed: %s",
		     op_names[op->kind], op->len, t, (unsigned long long)op->key,
		     (unsigned long long)op->gen, (unsigned long long)retired,
		     (unsigned long long)atomic_load(&w->gen), why);
}

/* Reads the CQ once; returns 1 on failure, else 0 (*got: entries read). */
static int poll_cq(struct ep_ctx *e, int *got)
{
	struct fi_cq_tagged_entry c[16];
	fi_addr_t from[16];
	*got = 0;
	ssize_t n = fi_cq_readfrom(e->cq, c, 16, from);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err;
		memset(&err, 0, sizeof(err));
		ssize_t k = fi_cq_readerr(e->cq, &err, 0);
		if (k != 1)
			return EFAIL(e, "fi_cq_readerr: %zd (%s)", k, test_errstr(k));
		*got = 1;
		return done_err(e, &err);
	}
	if (n < 0)
		return EFAIL(e, "fi_cq_readfrom: %zd (%s)", n, test_errstr(n));
	for (ssize_t i = 0; i < n; i++) {
		void *ctx = c[i].op_context;
		int rc;
		if (is_op(e, ctx) && ((struct op *)ctx)->busy)
			rc = done_op(e, ctx, &c[i]);
		else if (is_rbuf(e, ctx))
			rc = done_recv(e, ctx, &c[i], from[i]);
		else
			rc = EFAIL(e, "completion with unknown context %p (flags 0x%llx)", ctx,
				   (unsigned long long)c[i].flags);
		if (rc)
			return 1;
	}
	*got = (int)n;
	return 0;
}

/* When an endpoint gives up waiting: every thread of every process, with
 * what the scheduler gave it (/proc/<pid>/task/<tid>/schedstat: time on a
 * CPU, time waiting for one, time slices), now and 1 s later. A process
 * whose threads got next to nothing meanwhile was starved of the CPUs (or,
 * in state D, waits in the kernel: in the ASan builds, threads whose
 * allocator was mapping memory have waited in mmap(2), one for an
 * anon_vma lock, the others for the mmap lock it held, while DAMON
 * walked the host's memory; wait_clock() leaves such time out, so this
 * shows a longer hold); one whose threads ran without answering is stuck.
 * Once per run: a later give-up waits for it, so that nobody stops (and
 * takes its threads away) while it runs. */
static void describe_scheduling(void)
{
	int was = 0;
	if (!atomic_compare_exchange_strong(&sh->described, &was, 1)) {
		for (int i = 0; i < 200 && atomic_load(&sh->described) == 1; i++)
			usleep(50000);
		return;
	}
	char cmd[1024];
	int n = snprintf(cmd, sizeof(cmd), "for k in 'at the give-up' '1 s later'; do for p in");
	for (int i = 0; i < nproc && n < (int)sizeof(cmd) - 16; i++) {
		int p = atomic_load(&sh->pid[i]);
		if (p > 0)
			n += snprintf(cmd + n, sizeof(cmd) - n, " %d", p);
	}
	snprintf(cmd + n, sizeof(cmd) - n,
		 "; do for t in /proc/$p/task/*; do read run wait slices < $t/schedstat && "
		 "echo \"stress_data: $k: pid $p thread ${t##*/} ($(cat $t/comm)): state "
		 "$(cut -d' ' -f3 $t/stat) in $(cat $t/wchan) (system call "
		 "$(cut -d' ' -f1 $t/syscall)), $((run / 1000000)) ms on a CPU, "
		 "$((wait / 1000000)) ms waiting for one, $slices slices\"; done; done; "
		 "[ \"$k\" = '1 s later' ] || sleep 1; done 1>&2 2>/dev/null");
	fflush(stderr);
	if (system(cmd) != 0) {
	}
	atomic_store(&sh->described, 2);
}

/* Polls until no operation is in flight (or the phase's time is up). */
static int drain(struct ep_ctx *e, const char *what)
{
	double end = wait_clock() + PHASE_WAIT;
	while (e->busy) {
		int got;
		if (poll_cq(e, &got))
			return 1;
		if (aborted())
			return 1;
		if (!got) {
			if (wait_clock() > end) {
				for (int i = 0; i < inflight; i++)
					if (e->ops[i].busy)
						fprintf(stderr, "    op %d: %s of %zu bytes to ep %d\n",
							i, op_names[e->ops[i].kind], e->ops[i].len,
							e->ops[i].tgt);
				describe_scheduling();
				return EFAIL(e, "%s: %d operation(s) never completed", what, e->busy);
			}
			sched_yield();
		}
	}
	return 0;
}

/* Polls (serving receives) until the process reaches `phase`. */
static int await_phase(struct ep_ctx *e, int phase)
{
	while (atomic_load(&e->pr->phase) < phase) {
		int got;
		if (poll_cq(e, &got) || aborted())
			return 1;
		if (!got)
			usleep(100);
	}
	return 0;
}

static int ep_run(struct ep_ctx *e)
{
	struct proc *pr = e->pr;
	/* The mix: writes, reads, atomics, sends. */
	static const int mix[] = { OP_WRITE, OP_WRITE, OP_WRITE, OP_READ, OP_READ, OP_READ,
				   OP_ATOMIC, OP_ATOMIC, OP_SEND, OP_SEND, OP_SEND };
	unsigned iter = 0;
	while (now() < pr->deadline) {
		if (aborted())
			return 1;
		if (e->busy < inflight) {
			int kind = mix[rnd(&e->rng) % (sizeof(mix) / sizeof(mix[0]))];
			if (post_op(e, kind, -1, 0))
				return 1;
		}
		int got;
		if (poll_cq(e, &got))
			return 1;
		/* Two cores for everyone: don't hog one while waiting. */
		if (!got && e->busy == inflight && (++iter & 15) == 0)
			sched_yield();
	}
	if (drain(e, "drain"))
		return 1;
	atomic_store(&e->state, 1);
	if (await_phase(e, PH_SWEEP))
		return 1;
	/* Every rotation has stopped: read back every slice written, whole. */
	for (int t = 0; t < ng;) {
		if (e->slices[t].state != S_VALID) {
			t++;
			continue;
		}
		if (free_op(e)) {
			uint64_t before = e->seq;
			if (post_op(e, OP_READ, t, 1))
				return 1;
			if (e->seq != before) {
				e->st.sweep_reads++;
				t++;
			}
		}
		int got;
		if (poll_cq(e, &got) || aborted())
			return 1;
	}
	if (drain(e, "final read-back"))
		return 1;
	for (int t = 0; t < ng; t++) {
		sh->writes_ok[e->gid][t] = e->ok[OP_WRITE][t];
		sh->reads_ok[e->gid][t] = e->ok[OP_READ][t];
		sh->atomics_ok[e->gid][t] = e->ok[OP_ATOMIC][t];
		sh->sends_ok[e->gid][t] = e->ok[OP_SEND][t];
	}
	atomic_store(&e->state, 2);
	if (await_phase(e, PH_RECV))
		return 1;
	/* Every sender's messages completed: they must all be here. */
	double end = wait_clock() + PHASE_WAIT;
	for (;;) {
		int missing = -1;
		for (int s = 0; s < ng && missing < 0; s++)
			if (e->recv_from[s] != sh->sends_ok[s][e->gid])
				missing = s;
		if (missing < 0)
			break;
		if (e->recv_from[missing] > sh->sends_ok[missing][e->gid])
			return EFAIL(e, "received %llu messages from ep %d, which sent %llu",
				     (unsigned long long)e->recv_from[missing], missing,
				     (unsigned long long)sh->sends_ok[missing][e->gid]);
		int got;
		if (poll_cq(e, &got) || aborted())
			return 1;
		if (!got) {
			if (wait_clock() > end) {
				describe_scheduling();
				return EFAIL(e, "received %llu messages from ep %d, which sent %llu",
					     (unsigned long long)e->recv_from[missing], missing,
					     (unsigned long long)sh->sends_ok[missing][e->gid]);
			}
			usleep(100);
		}
	}
	atomic_store(&e->state, 3);
	return 0;
}

static void *ep_thread(void *arg)
{
	struct ep_ctx *e = arg;
	if (ep_run(e))
		atomic_store(&sh->abort_, 1);
	return NULL;
}

/* ------------------------------------------------------ MR churn ---- */

/* Registers `buf` again under a new key, publishes it at generation
 * *gen + 1, retires the old generation and closes the old MR. */
static int rotate(struct proc *pr, void *buf, size_t len, struct fid_mr **cur, uint64_t *gen,
		  struct win_pub *w)
{
	struct fid_mr *mr;
	OK(fi_mr_reg(pr->domain, buf, len, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, want_key(pr), 0,
		     &mr, NULL));
	uint64_t g = *gen + 1;
	atomic_store(&w->key[g % KEYRING], fi_mr_key(mr));
	atomic_store(&w->gen, g);
	/* Retired before the close: a refusal is seen only after it. */
	atomic_store(&w->retired, g - 1);
	OK(fi_close(&(*cur)->fid));
	*cur = mr;
	*gen = g;
	pr->rotations++;
	return 0;
}

static int mr_churn(struct proc *pr)
{
	static const uint64_t rights[] = { FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE,
					   FI_SEND, FI_RECV };
	struct {
		struct fid_mr *mr;
		void *heap;
	} pool[NTHROW];
	memset(pool, 0, sizeof(pool));
	uint64_t rng = splitmix(seed0 ^ ((uint64_t)pr->id << 20) ^ 0x4d52) | 1;
	double next_rot = now() + ROTATE_MS * 1e-3;
	int rc = 0;
	while (!atomic_load(&pr->mr_stop) && !aborted()) {
		int i = (int)(rnd(&rng) % NTHROW);
		if (pool[i].mr) {
			if (fi_close(&pool[i].mr->fid)) {
				rc = FAIL("fi_close of a throwaway MR failed");
				break;
			}
			free(pool[i].heap);
			pool[i].mr = NULL;
			pool[i].heap = NULL;
		} else {
			void *buf;
			size_t len = 1 + rnd(&rng) % 65536;
			if (rnd(&rng) % 4 == 0) {
				/* A piece of a live window: overlapping registrations. */
				struct ep_ctx *e = &pr->eps[rnd(&rng) % (uint64_t)neps];
				size_t off = rnd(&rng) % (e->win_len - len);
				buf = e->win + off;
			} else {
				pool[i].heap = buf = malloc(len);
				if (!buf) {
					rc = FAIL("out of memory");
					break;
				}
			}
			uint64_t access = 0;
			while (!access)
				for (size_t k = 0; k < sizeof(rights) / sizeof(rights[0]); k++)
					if (rnd(&rng) & 1)
						access |= rights[k];
			long r = fi_mr_reg(pr->domain, buf, len, access, 0, want_key(pr), 0,
					   &pool[i].mr, NULL);
			if (r) {
				rc = FAIL("fi_mr_reg of a throwaway MR (%zu bytes, access 0x%llx): "
					  "%ld (%s)",
					  len, (unsigned long long)access, r, test_errstr(r));
				pool[i].mr = NULL;
				break;
			}
			pr->throwaway++;
		}
		if (now() >= next_rot) {
			/* A window mostly; now and then the atomic counters. */
			int j = (int)(rnd(&rng) % (uint64_t)(neps + 1));
			struct ep_ctx *e = &pr->eps[j < neps ? j : 0];
			if (j < neps ? rotate(pr, e->win, e->win_len, &e->win_mr, &e->win_gen,
					      &sh->win[e->gid])
				     : rotate(pr, pr->atom, (size_t)ng * 8, &pr->atom_mr,
					      &pr->atom_gen, &sh->atom[pr->id])) {
				rc = 1;
				break;
			}
			next_rot = now() + ROTATE_MS * 1e-3;
		}
		usleep(50);
	}
	for (int i = 0; i < NTHROW; i++) {
		if (pool[i].mr && fi_close(&pool[i].mr->fid))
			rc = FAIL("fi_close of a throwaway MR failed");
		free(pool[i].heap);
	}
	return rc;
}

static void *mr_thread(void *arg)
{
	if (mr_churn(arg))
		atomic_store(&sh->abort_, 1);
	return NULL;
}

/* ------------------------------------------------------- a child ---- */

static int open_ep(struct proc *pr, struct ep_ctx *e)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 1024,
				 .wait_obj = FI_WAIT_NONE };
	OK(fi_cq_open(pr->domain, &ca, &e->cq, NULL));
	OK(fi_endpoint(pr->domain, pr->info, &e->ep, NULL));
	OK(fi_ep_bind(e->ep, &pr->av->fid, 0));
	OK(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	for (int i = 0; i < NCNTR; i++) {
		struct fi_cntr_attr at = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
		if (cntr_events[i] & (FI_REMOTE_READ | FI_REMOTE_WRITE) &&
		    (!(pr->info->caps & FI_RMA_EVENT) || direct))
			continue;
		OK(fi_cntr_open(pr->domain, &at, &e->cntr[i], NULL));
		OK(fi_ep_bind(e->ep, &e->cntr[i]->fid, cntr_events[i]));
	}
	OK(fi_enable(e->ep));
	size_t len = sizeof(sh->names[0]);
	OK(fi_getname(&e->ep->fid, sh->names[e->gid], &len));

	/* Local buffers (registered under FI_MR_LOCAL). */
	for (int i = 0; i < inflight; i++) {
		struct op *op = &e->ops[i];
		op->buf = xalloc(MSG_MAX > SLICE ? MSG_MAX : SLICE);
		if (pr->local) {
			OK(fi_mr_reg(pr->domain, op->buf, SLICE, FI_SEND | FI_READ | FI_WRITE, 0,
				     want_key(pr), 0, &op->mr, NULL));
			op->desc = fi_mr_desc(op->mr);
		}
	}
	for (int i = 0; i < 2 * NRECV; i++) {
		struct rbuf *b = &e->rb[i];
		b->tagged = i >= NRECV;
		b->buf = xalloc(MSG_MAX);
		if (pr->local) {
			OK(fi_mr_reg(pr->domain, b->buf, MSG_MAX, FI_RECV, 0, want_key(pr), 0, &b->mr,
				     NULL));
			b->desc = fi_mr_desc(b->mr);
		}
	}
	e->scratch = xalloc(SLICE);

	/* The window, generation 1. */
	e->win_len = (size_t)ng * SLICE;
	e->win = xalloc(e->win_len);
	OK(fi_mr_reg(pr->domain, e->win, e->win_len, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
		     want_key(pr), 0, &e->win_mr, NULL));
	e->win_gen = 1;
	struct win_pub *w = &sh->win[e->gid];
	w->base = (uint64_t)(uintptr_t)e->win;
	w->len = e->win_len;
	atomic_store(&w->key[1], fi_mr_key(e->win_mr));
	atomic_store(&w->retired, 0);
	atomic_store(&w->gen, 1);
	e->rng = splitmix(seed0 ^ ((uint64_t)e->gid << 32)) | 1;
	return 0;
}

static int close_ep(struct proc *pr, struct ep_ctx *e)
{
	(void)pr;
	if (e->ep)
		OK(fi_close(&e->ep->fid));
	for (int i = 0; i < NCNTR; i++)
		if (e->cntr[i])
			OK(fi_close(&e->cntr[i]->fid));
	if (e->cq)
		OK(fi_close(&e->cq->fid));
	if (e->win_mr)
		OK(fi_close(&e->win_mr->fid));
	for (int i = 0; i < inflight; i++) {
		if (e->ops[i].mr)
			OK(fi_close(&e->ops[i].mr->fid));
		free(e->ops[i].buf);
	}
	for (int i = 0; i < 2 * NRECV; i++) {
		if (e->rb[i].mr)
			OK(fi_close(&e->rb[i].mr->fid));
		free(e->rb[i].buf);
	}
	free(e->scratch);
	free(e->win);
	return 0;
}

static uint64_t cntr_val(struct ep_ctx *e, int i)
{
	return e->cntr[i] ? fi_cntr_read(e->cntr[i]) : 0;
}

static uint64_t cntr_err(struct ep_ctx *e, int i)
{
	return e->cntr[i] ? fi_cntr_readerr(e->cntr[i]) : 0;
}

#define EXPECT_CNTR(e, i, want, werr)                                                        \
	do {                                                                                 \
		uint64_t v_ = cntr_val(e, i), x_ = cntr_err(e, i);                           \
		if ((e)->cntr[i] && (v_ != (uint64_t)(want) || x_ != (uint64_t)(werr)))     \
			rc |= EFAIL(e, "%s counter is %llu (errors %llu), want %llu (errors %llu)", \
				    cntr_names[i], (unsigned long long)v_, (unsigned long long)x_, \
				    (unsigned long long)(want), (unsigned long long)(werr));  \
	} while (0)

static int verify(struct proc *pr)
{
	int rc = 0;
	for (int j = 0; j < neps; j++) {
		struct ep_ctx *e = &pr->eps[j];
		uint64_t sum[OP_KINDS] = { 0 }, rw = 0, rr = 0, recvs = 0;
		for (int t = 0; t < ng; t++)
			for (int k = 0; k < OP_KINDS; k++)
				sum[k] += e->ok[k][t];
		for (int s = 0; s < ng; s++) {
			rw += sh->writes_ok[s][e->gid] + sh->atomics_ok[s][e->gid];
			rr += sh->reads_ok[s][e->gid];
			recvs += e->recv_from[s];
		}
		EXPECT_CNTR(e, C_WRITE, sum[OP_WRITE] + sum[OP_ATOMIC],
			    e->st.refused[OP_WRITE] + e->st.refused[OP_ATOMIC]);
		EXPECT_CNTR(e, C_READ, sum[OP_READ], e->st.refused[OP_READ]);
		EXPECT_CNTR(e, C_SEND, sum[OP_SEND], 0);
		EXPECT_CNTR(e, C_RECV, recvs, 0);
		EXPECT_CNTR(e, C_REMOTE_WRITE, rw, 0);
		EXPECT_CNTR(e, C_REMOTE_READ, rr, 0);
	}
	for (int w = 0; w < ng; w++) {
		uint64_t want = 0;
		for (int j = 0; j < neps; j++)
			want += sh->atomics_ok[w][pr->id * neps + j];
		if (pr->atom[w] != want)
			rc |= FAIL("atomic slot of ep %d is %llu; it reports %llu sums here", w,
				   (unsigned long long)pr->atom[w], (unsigned long long)want);
	}
	return rc;
}

/* Entries of /dev/shm named for `pid`, each reported (and removed when
 * `remove`: the parent's clean-up after a failed run). */
static int shm_leftovers(pid_t pid, int remove)
{
	char pre[32];
	int n = 0;
	snprintf(pre, sizeof(pre), "oxshm-%d-", (int)pid);
	DIR *d = opendir("/dev/shm");
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, pre, strlen(pre)) == 0) {
			FAIL("/dev/shm/%s left behind", de->d_name);
			n++;
			if (remove) {
				char path[300];
				snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
				unlink(path);
			}
		}
	closedir(d);
	return n;
}

/* Waits (with the ep threads serving) until every endpoint reached state s. */
static int await_eps(struct proc *pr, int s)
{
	/* The run itself, then its three waits and some slack. */
	double left = pr->deadline - now();
	double end = wait_clock() + (left > 0 ? left : 0) + 3 * PHASE_WAIT + 5;
	for (;;) {
		int all = 1;
		for (int j = 0; j < neps; j++)
			if (atomic_load(&pr->eps[j].state) < s)
				all = 0;
		if (all)
			return 0;
		if (aborted())
			return 1;
		if (wait_clock() > end)
			return FAIL("endpoint threads did not reach state %d", s);
		usleep(500);
	}
}

static int child(int id)
{
	static struct proc P; /* large: not on the stack */
	struct proc *pr = &P;
	pr->id = id;
	atomic_store(&sh->pid[id], (int)getpid());
	atomic_store(&pr->next_key, ((uint64_t)id << 40) + 1);
	if (mixed_modes) {
		/* Read by the library at its first call, which is below. */
		const char *m = mixed_mode[id % (int)(sizeof(mixed_mode) / sizeof(mixed_mode[0]))];
		if (m)
			setenv("FI_OXSHM_MR_MODE", m, 1);
		else
			unsetenv("FI_OXSHM_MR_MODE");
	}

	struct fi_info *h = test_hints();
	h->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RMA_EVENT | FI_SOURCE;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->av_type = FI_AV_TABLE;
	int r = fi_getinfo(TEST_HDR_VERSION, NULL, NULL, 0, h, &pr->info);
	fi_freeinfo(h);
	OK(r);
	int mode = pr->info->domain_attr->mr_mode;
	pr->virt = !!(mode & FI_MR_VIRT_ADDR);
	pr->local = !!(mode & FI_MR_LOCAL);
	pr->prov_key = !!(mode & FI_MR_PROV_KEY);
	if (pr->info->tx_attr->size < (size_t)inflight)
		return FAIL("tx_size %zu is under %d", pr->info->tx_attr->size, inflight);
	if (!(pr->info->caps & FI_RMA_EVENT))
		return FAIL("no FI_RMA_EVENT: remote counters cannot be checked");
	OK(fi_fabric(pr->info->fabric_attr, &pr->fabric, NULL));
	OK(fi_domain(pr->fabric, pr->info, &pr->domain, NULL));
	struct fi_av_attr aa = { .type = FI_AV_TABLE, .count = (size_t)ng };
	OK(fi_av_open(pr->domain, &aa, &pr->av, NULL));
	for (int j = 0; j < neps; j++) {
		struct ep_ctx *e = &pr->eps[j];
		e->pr = pr;
		e->idx = j;
		e->gid = id * neps + j;
		if (open_ep(pr, e))
			return 1;
	}
	pr->atom = xalloc((size_t)ng * 8);
	OK(fi_mr_reg(pr->domain, pr->atom, (size_t)ng * 8, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
		     want_key(pr), 0, &pr->atom_mr, NULL));
	pr->atom_gen = 1;
	sh->atom[id].base = (uint64_t)(uintptr_t)pr->atom;
	sh->atom[id].len = (size_t)ng * 8;
	atomic_store(&sh->atom[id].key[1], fi_mr_key(pr->atom_mr));
	atomic_store(&sh->atom[id].gen, 1);
	sh->virt[id] = pr->virt;
	if (barrier(1)) /* names and keys published */
		return 1;

	/* One AV for the domain: every name of the run, in endpoint order. */
	const char *names[MAXG];
	for (int g = 0; g < ng; g++)
		names[g] = sh->names[g];
	r = fi_av_insert(pr->av, names, (size_t)ng, pr->addrs, 0, NULL);
	if (r != ng)
		return FAIL("fi_av_insert of %d names: %d", ng, r);
	for (int j = 0; j < neps; j++)
		for (int i = 0; i < 2 * NRECV; i++)
			if (post_recv(&pr->eps[j], &pr->eps[j].rb[i]))
				return 1;
	if (barrier(2)) /* everyone can receive */
		return 1;

	pr->deadline = now() + secs;
	if (pthread_create(&pr->mr_th, NULL, mr_thread, pr))
		return FAIL("pthread_create");
	for (int j = 0; j < neps; j++)
		if (pthread_create(&pr->eps[j].th, NULL, ep_thread, &pr->eps[j]))
			return FAIL("pthread_create");
	int rc = await_eps(pr, 1);
	atomic_store(&pr->mr_stop, 1);
	pthread_join(pr->mr_th, NULL);
	if (rc || aborted() || barrier(3)) /* no more rotations anywhere */
		return 1;
	atomic_store(&pr->phase, PH_SWEEP);
	if (await_eps(pr, 2) || barrier(4)) /* every result published */
		return 1;
	atomic_store(&pr->phase, PH_RECV);
	rc = await_eps(pr, 3);
	for (int j = 0; j < neps; j++)
		pthread_join(pr->eps[j].th, NULL);
	if (rc || aborted())
		return 1;
	rc = verify(pr);

	struct stats *st = &sh->stats[id];
	for (int j = 0; j < neps; j++) {
		struct stats *s = &pr->eps[j].st;
		for (int k = 0; k < OP_KINDS; k++) {
			st->ok[k] += s->ok[k];
			st->refused[k] += s->refused[k];
			st->bytes[k] += s->bytes[k];
		}
		st->recvs += s->recvs;
		st->recv_bytes += s->recv_bytes;
		st->sweep_reads += s->sweep_reads;
		st->eagain += s->eagain;
	}
	st->throwaway = pr->throwaway;
	st->rotations = pr->rotations;
	if (barrier(5)) /* everyone checked; nobody posts any more */
		return 1;

	for (int j = 0; j < neps; j++)
		if (close_ep(pr, &pr->eps[j]))
			return 1;
	OK(fi_close(&pr->atom_mr->fid));
	OK(fi_close(&pr->av->fid));
	OK(fi_close(&pr->domain->fid));
	OK(fi_close(&pr->fabric->fid));
	fi_freeinfo(pr->info);
	free(pr->atom);
	/* Closed endpoints leave no segment (peers would reap it after our
	 * exit, which would hide it from the parent). */
	if (shm_leftovers(getpid(), 0))
		rc = 1;
	/* No stale pointer may keep a leaked object reachable for LSan. */
	memset(pr, 0, sizeof(*pr));
	return rc;
}

/* ------------------------------------------------------- the parent ---- */

static pid_t kids[MAXP];
/* A shell script that describes where each child's threads are (state,
 * wait channel, system call, kernel stack where readable, user stacks
 * where gdb is installed), written once the children exist, for the
 * alarm to run before it kills them. */
static char where_cmd[4096];

static void describe_children(void)
{
	int n = snprintf(where_cmd, sizeof(where_cmd), "for p in");
	for (int i = 0; i < nproc && n < (int)sizeof(where_cmd) - 16; i++)
		if (kids[i] > 0)
			n += snprintf(where_cmd + n, sizeof(where_cmd) - n, " %d", (int)kids[i]);
	snprintf(where_cmd + n, sizeof(where_cmd) - n,
		 "; do for t in /proc/$p/task/*; do "
		 "echo \"stress_data: pid $p thread ${t##*/} ($(cat $t/comm)): state "
		 "$(cut -d' ' -f3 $t/stat) wchan $(cat $t/wchan) syscall $(cat $t/syscall)\"; "
		 "head -n 12 $t/stack 2>/dev/null | sed 's/^/    /'; done; "
		 "command -v gdb >/dev/null && timeout 30 gdb -p $p -batch -ex "
		 "'thread apply all bt 16' 2>/dev/null | grep -E '^(#|Thread)'; done");
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "stress_data: FAIL: timed out; where the children are:\n";
	if (write(2, m, sizeof(m) - 1) < 0) {
	}
	/* fork, exec and waitpid are async-signal-safe. */
	pid_t d = where_cmd[0] ? fork() : -1;
	if (d == 0) {
		dup2(2, 1);
		execl("/bin/sh", "sh", "-c", where_cmd, (char *)NULL);
		_exit(127);
	}
	if (d > 0)
		while (waitpid(d, NULL, 0) < 0 && errno == EINTR) {
		}
	for (int i = 0; i < nproc; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	_exit(1);
}

/* Whether the kernel holds a thread of a child in a memory-management
 * call: state D (uninterruptible) in mmap, mprotect, munmap, brk, mremap
 * or madvise, or in a page fault (no system call: -1). A thread of a
 * provider that waits for its peers sleeps in state S (futex, nanosleep)
 * or spins, so this never covers for a stuck data path. */
static int held_in_kernel(void)
{
	static const long mm_calls[] = { -1, 9, 10, 11, 12, 25, 28 };
	for (int i = 0; i < nproc; i++) {
		char path[96];
		if (kids[i] <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task", (int)kids[i]);
		DIR *d = opendir(path);
		if (!d)
			continue;
		struct dirent *t;
		int held = 0;
		while (!held && (t = readdir(d)) != NULL) {
			if (t->d_name[0] == '.')
				continue;
			if (test_thread_state((int)kids[i], t->d_name) != 'D')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%.16s/syscall", (int)kids[i],
				 t->d_name);
			FILE *f = fopen(path, "r");
			if (!f)
				continue;
			long nr = -2;
			if (fscanf(f, "%ld", &nr) != 1)
				nr = -2;
			fclose(f);
			for (size_t k = 0; k < sizeof(mm_calls) / sizeof(mm_calls[0]); k++)
				held |= nr == mm_calls[k];
		}
		closedir(d);
		if (held)
			return 1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: stress_data [-t SECONDS] [-p PROCS] [-e EPS] [-i INFLIGHT] [-s SEED] [-M] [-H] [-D]\n"
			"  (PROCS <= %d, EPS <= %d, PROCS * EPS <= %d, INFLIGHT <= %d; -M: a different\n"
			"  FI_OXSHM_MR_MODE in each process; -H: every operation to endpoint 0 or 1;\n"
			"  -D: no remote counters, so that RMA may go direct)\n",
		MAXP, MAXE, MAXG, MAX_INFLIGHT);
	exit(2);
}

int main(int argc, char **argv)
{
	int c;
	seed0 = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	while ((c = getopt(argc, argv, "t:p:e:i:s:MHDh")) != -1) {
		switch (c) {
		case 't':
			secs = atof(optarg);
			break;
		case 'p':
			nproc = atoi(optarg);
			break;
		case 'e':
			neps = atoi(optarg);
			break;
		case 's':
			seed0 = strtoull(optarg, NULL, 0);
			break;
		case 'M':
			mixed_modes = 1;
			break;
		case 'i':
			inflight = atoi(optarg);
			break;
		case 'H':
			hot = 1;
			break;
		case 'D':
			direct = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || secs <= 0 || secs > 3600 || nproc < 1 || nproc > MAXP ||
	    neps < 1 || neps > MAXE || nproc * neps > MAXG || inflight < 1 ||
	    inflight > MAX_INFLIGHT)
		usage();
	ng = nproc * neps;
	/* After every child's own timeouts (await_eps), which say what they
	 * wait for; later by the time the kernel held a child
	 * (held_in_kernel(), up to HELD_CAP), as theirs are. */
	unsigned alarm_s = (unsigned)secs + 3 * PHASE_WAIT + 15;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("stress_data: %d processes x %d endpoints, %d in flight each, %.1f s, seed 0x%llx%s%s\n",
	       nproc, neps, inflight, secs, (unsigned long long)seed0,
	       mixed_modes ? ", mixed mr_modes" : "", hot ? ", hot spot" : "");
	signal(SIGALRM, on_alarm);
	alarm(alarm_s + HELD_CAP);
	double t0 = now();
	fflush(NULL);
	for (int i = 0; i < nproc; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			atomic_store(&sh->abort_, 1);
			break;
		}
		if (p == 0) {
			/* Later than the parent's, which describes them first. */
			signal(SIGALRM, SIG_DFL);
			alarm(alarm_s + HELD_CAP + 30);
			my_id = i;
			int rc = child(i);
			fflush(NULL);
			/* exit(), not _exit(): LeakSanitizer runs at exit. A failed
			 * child skips it (its objects are still open). */
			if (rc)
				_exit(1);
			exit(0);
		}
		kids[i] = p;
	}
	describe_children();
	int rc = 0, left = 0;
	for (int i = 0; i < nproc; i++)
		left += kids[i] > 0;
	/* Samples the children every 50 ms meanwhile: time in which the
	 * kernel held one of them does not count against the waits. */
	double last = now(), held_s = 0, streak = 0, longest = 0;
	while (left > 0) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);
		if (p == 0) {
			usleep(50000);
			double t = now();
			if (held_in_kernel()) {
				held_s += t - last;
				streak += t - last;
				if (streak > longest)
					longest = streak;
				atomic_store(&sh->held_us, (uint64_t)(held_s * 1e6));
			} else {
				streak = 0;
			}
			last = t;
			if (t - t0 - (held_s < HELD_CAP ? held_s : HELD_CAP) > alarm_s)
				on_alarm(SIGALRM);
			continue;
		}
		if (p < 0) {
			perror("wait");
			rc = 1;
			break;
		}
		int i = 0;
		while (i < nproc && kids[i] != p)
			i++;
		if (i == nproc)
			continue;
		left--;
		if (WIFSIGNALED(status)) {
			fprintf(stderr, "stress_data: FAIL: process %d (pid %d) killed by signal %d\n", i,
				(int)p, WTERMSIG(status));
			rc = 1;
		} else if (WEXITSTATUS(status)) {
			fprintf(stderr, "stress_data: FAIL: process %d (pid %d) exited %d\n", i, (int)p,
				WEXITSTATUS(status));
			rc = 1;
		}
		if (rc)
			atomic_store(&sh->abort_, 1);
	}
	alarm(0);
	double wall = now() - t0;
	if (longest >= 1)
		printf("stress_data: the kernel held a process in a memory-management call "
		       "(state D) for %.1f s in all, %.1f s at the longest; the waits did not "
		       "count it\n",
		       held_s, longest);
	if (nproc > 0 && kids[nproc - 1] <= 0)
		rc = 1;

	struct stats tot;
	memset(&tot, 0, sizeof(tot));
	for (int i = 0; i < nproc; i++) {
		struct stats *s = &sh->stats[i];
		for (int k = 0; k < OP_KINDS; k++) {
			tot.ok[k] += s->ok[k];
			tot.refused[k] += s->refused[k];
			tot.bytes[k] += s->bytes[k];
		}
		tot.recvs += s->recvs;
		tot.throwaway += s->throwaway;
		tot.rotations += s->rotations;
		tot.sweep_reads += s->sweep_reads;
		tot.eagain += s->eagain;
	}
	uint64_t all = 0;
	for (int k = 0; k < OP_KINDS; k++)
		all += tot.ok[k];
	printf("stress_data: writes %llu (%.0f/s, %.1f MiB), reads %llu (%.0f/s, %.1f MiB, %llu "
	       "in the final read-back), atomics %llu (%.0f/s), sends %llu (%.0f/s, %.1f MiB), "
	       "recvs %llu\n",
	       (unsigned long long)tot.ok[OP_WRITE], tot.ok[OP_WRITE] / secs,
	       tot.bytes[OP_WRITE] / 1048576.0, (unsigned long long)tot.ok[OP_READ],
	       tot.ok[OP_READ] / secs, tot.bytes[OP_READ] / 1048576.0,
	       (unsigned long long)tot.sweep_reads, (unsigned long long)tot.ok[OP_ATOMIC],
	       tot.ok[OP_ATOMIC] / secs, (unsigned long long)tot.ok[OP_SEND],
	       tot.ok[OP_SEND] / secs, tot.bytes[OP_SEND] / 1048576.0,
	       (unsigned long long)tot.recvs);
	printf("stress_data: expected refusals (retired keys): %llu writes, %llu reads, %llu "
	       "atomics; -FI_EAGAIN %llu; throwaway MRs %llu, key rotations %llu\n",
	       (unsigned long long)tot.refused[OP_WRITE], (unsigned long long)tot.refused[OP_READ],
	       (unsigned long long)tot.refused[OP_ATOMIC], (unsigned long long)tot.eagain,
	       (unsigned long long)tot.throwaway, (unsigned long long)tot.rotations);

	int leaks = shm_leftovers(getpid(), 1);
	for (int i = 0; i < nproc; i++)
		if (kids[i] > 0)
			leaks += shm_leftovers(kids[i], 1);
	if (leaks)
		rc = 1;
	printf("stress_data: %s: %llu operations in %.1f s (%.0f ops/s), wall %.1f s\n",
	       rc ? "FAIL" : "ok", (unsigned long long)all, secs, all / secs, wall);
	munmap(sh, sizeof(*sh));
	return rc;
}
