/*
 * liboxfabric-shim.so's C layer: the versioned global API it exports and
 * the entries it puts into patched ops tables.
 *
 * Why C: each entry records its caller's return address
 * (__builtin_return_address), which tells the application's calls from
 * libfabric's calls to its own API (rxm opening tcp); stable Rust has no
 * equivalent. The entries only capture that address and hand over to the
 * Rust side in src/shim (oxshim_rs_*), where all the logic lives.
 *
 * fi_getinfo, fi_freeinfo and fi_dupinfo are forwarded unchanged to the
 * next libfabric at the same symbol version, so a caller of each ABI keeps
 * its own fi_info layout.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* oxfabric's headers (-Iinclude): upstream's layouts of the ops tables. */
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

struct fid;
struct fid_mr;
struct fid_domain;
struct fid_fabric;
struct fi_info;
struct fi_fabric_attr;
struct fi_mr_attr;
struct iovec;

#define RA __builtin_return_address(0)
#define HIDDEN __attribute__((visibility("hidden")))

static void *next_symbol(const char *name, const char *version)
{
	return dlvsym(RTLD_NEXT, name, version);
}

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const struct fi_info *, struct fi_info **);
typedef void (*freeinfo_fn)(struct fi_info *);
typedef struct fi_info *(*dupinfo_fn)(const struct fi_info *);

#define INFO_FAMILY(tag, node)                                                  \
	int oxshim_getinfo_##tag(uint32_t version, const char *n,              \
				 const char *service, uint64_t flags,          \
				 const struct fi_info *hints,                  \
				 struct fi_info **info)                        \
	{                                                                      \
		static getinfo_fn real;                                        \
		if (!real)                                                     \
			real = (getinfo_fn)next_symbol("fi_getinfo", node);    \
		if (!real)                                                     \
			return -ENOSYS;                                        \
		return real(version, n, service, flags, hints, info);          \
	}                                                                      \
	void oxshim_freeinfo_##tag(struct fi_info *info)                       \
	{                                                                      \
		static freeinfo_fn real;                                       \
		if (!real)                                                     \
			real = (freeinfo_fn)next_symbol("fi_freeinfo", node);  \
		if (real)                                                      \
			real(info);                                            \
	}                                                                      \
	struct fi_info *oxshim_dupinfo_##tag(const struct fi_info *info)       \
	{                                                                      \
		static dupinfo_fn real;                                        \
		if (!real)                                                     \
			real = (dupinfo_fn)next_symbol("fi_dupinfo", node);   \
		return real ? real(info) : NULL;                               \
	}

INFO_FAMILY(1_0, "FABRIC_1.0")
INFO_FAMILY(1_1, "FABRIC_1.1")
INFO_FAMILY(1_2, "FABRIC_1.2")
INFO_FAMILY(1_3, "FABRIC_1.3")
INFO_FAMILY(1_7, "FABRIC_1.7")
INFO_FAMILY(1_8, "FABRIC_1.8")

#define SYMVER3(tag, node, def)                                                \
	__asm__(".symver oxshim_getinfo_" #tag ", fi_getinfo" def node);      \
	__asm__(".symver oxshim_freeinfo_" #tag ", fi_freeinfo" def node);    \
	__asm__(".symver oxshim_dupinfo_" #tag ", fi_dupinfo" def node);

SYMVER3(1_0, "FABRIC_1.0", "@")
SYMVER3(1_1, "FABRIC_1.1", "@")
SYMVER3(1_2, "FABRIC_1.2", "@")
SYMVER3(1_3, "FABRIC_1.3", "@")
SYMVER3(1_7, "FABRIC_1.7", "@")
SYMVER3(1_8, "FABRIC_1.8", "@@")

/* ------------------------------------------------------------ fabric ---- */

HIDDEN int oxshim_rs_fabric(void *ra, int abi_1_0, struct fi_fabric_attr *attr,
			    struct fid_fabric **fabric, void *context);
HIDDEN int oxshim_rs_fabric2(void *ra, struct fi_info *info,
			     struct fid_fabric **fabric, uint64_t flags,
			     void *context);

int oxshim_fabric_1_0(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context)
{
	return oxshim_rs_fabric(RA, 1, attr, fabric, context);
}

int oxshim_fabric_1_1(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context)
{
	return oxshim_rs_fabric(RA, 0, attr, fabric, context);
}

int oxshim_fabric2_1_8(struct fi_info *info, struct fid_fabric **fabric,
		       uint64_t flags, void *context)
{
	return oxshim_rs_fabric2(RA, info, fabric, flags, context);
}

__asm__(".symver oxshim_fabric_1_0, fi_fabric@FABRIC_1.0");
__asm__(".symver oxshim_fabric_1_1, fi_fabric@@FABRIC_1.1");
__asm__(".symver oxshim_fabric2_1_8, fi_fabric2@@FABRIC_1.8");

/* ------------------------------------------- entries of patched tables -- */

HIDDEN int oxshim_rs_fabric_close(void *ra, struct fid *fid);
HIDDEN int oxshim_rs_domain(void *ra, struct fid_fabric *fabric,
			    struct fi_info *info, struct fid_domain **domain,
			    uint64_t flags, void *context, int v2);
HIDDEN int oxshim_rs_domain_close(void *ra, struct fid *fid);
HIDDEN int oxshim_rs_mr_reg(void *ra, struct fid *fid, const void *buf,
			    size_t len, uint64_t access, uint64_t offset,
			    uint64_t requested_key, uint64_t flags,
			    struct fid_mr **mr, void *context);
HIDDEN int oxshim_rs_mr_regv(void *ra, struct fid *fid, const struct iovec *iov,
			     size_t count, uint64_t access, uint64_t offset,
			     uint64_t requested_key, uint64_t flags,
			     struct fid_mr **mr, void *context);
HIDDEN int oxshim_rs_mr_regattr(void *ra, struct fid *fid,
				const struct fi_mr_attr *attr, uint64_t flags,
				struct fid_mr **mr);
HIDDEN int oxshim_rs_mr_close(void *ra, struct fid *fid);
HIDDEN int oxshim_rs_mr_bind(void *ra, struct fid *fid, struct fid *bfid,
			     uint64_t flags);
HIDDEN int oxshim_rs_mr_control(void *ra, struct fid *fid, int command,
				void *arg);

HIDDEN int oxshim_tr_fabric_close(struct fid *fid)
{
	return oxshim_rs_fabric_close(RA, fid);
}

HIDDEN int oxshim_tr_domain(struct fid_fabric *fabric, struct fi_info *info,
			    struct fid_domain **domain, void *context)
{
	return oxshim_rs_domain(RA, fabric, info, domain, 0, context, 0);
}

HIDDEN int oxshim_tr_domain2(struct fid_fabric *fabric, struct fi_info *info,
			     struct fid_domain **domain, uint64_t flags,
			     void *context)
{
	return oxshim_rs_domain(RA, fabric, info, domain, flags, context, 1);
}

HIDDEN int oxshim_tr_domain_close(struct fid *fid)
{
	return oxshim_rs_domain_close(RA, fid);
}

HIDDEN int oxshim_tr_mr_reg(struct fid *fid, const void *buf, size_t len,
			    uint64_t access, uint64_t offset,
			    uint64_t requested_key, uint64_t flags,
			    struct fid_mr **mr, void *context)
{
	return oxshim_rs_mr_reg(RA, fid, buf, len, access, offset,
				requested_key, flags, mr, context);
}

HIDDEN int oxshim_tr_mr_regv(struct fid *fid, const struct iovec *iov,
			     size_t count, uint64_t access, uint64_t offset,
			     uint64_t requested_key, uint64_t flags,
			     struct fid_mr **mr, void *context)
{
	return oxshim_rs_mr_regv(RA, fid, iov, count, access, offset,
				 requested_key, flags, mr, context);
}

HIDDEN int oxshim_tr_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
				uint64_t flags, struct fid_mr **mr)
{
	return oxshim_rs_mr_regattr(RA, fid, attr, flags, mr);
}

/*
 * Where a table copy of the shim's keeps its owner word (the hook that
 * installed it): after the provider's slots, their size rounded up to
 * `ours` (the table's size in these headers) and to a word, as
 * src/shim/objects.rs (TableCopy, owner_of) lays it out.
 */
static inline const uintptr_t *owner_word(const void *table, size_t ours)
{
	size_t size = *(const size_t *)table;

	return (const uintptr_t *)table + ((size > ours ? size : ours) + 7) / 8;
}

static inline const void *owner_of(const void *table, size_t ours)
{
	return (const void *)*owner_word(table, ours);
}

/*
 * The registration entries of a domain libfabric opened itself (rxm's tcp
 * domain), whose calls are all libfabric's own: each counts the call and
 * hands it, arguments untouched, to the provider's table (a tail call).
 * (Installed only where the provider's table has the slot: TableCopy::set.)
 * The shim's copy of the domain's MR table, which the call came through,
 * carries after the provider's slots (rounded up to ours, as
 * src/shim/objects.rs TableCopy lays it out) the owner word, the
 * provider's table and the shards of the domain's count.
 */
struct oxshim_int {
	uintptr_t owner;
	const struct fi_ops_mr *orig;
	uint64_t *shards;
};

static inline const struct oxshim_int *int_of(const struct fid *fid)
{
	const struct fi_ops_mr *t;

	if (!fid || fid->fclass != FI_CLASS_DOMAIN)
		return NULL;
	t = ((const struct fid_domain *)fid)->mr;
	return (const struct oxshim_int *)owner_word(t, sizeof(*t));
}

/*
 * Mirrors src/tally.rs (Tally::bump): a thread adds to a shard only it
 * writes, without a locked instruction; the threads after the first
 * OXSHIM_SHARDS - 1 share the last one, with a locked add. The thread's
 * shard (initial-exec TLS: one load) comes from a sequence of the C
 * entries' own; no tally they count is bumped from Rust.
 */
enum { OXSHIM_SHARDS = 8 };
static __thread unsigned oxshim_shard __attribute__((tls_model("initial-exec")));
static unsigned oxshim_next_shard;

static inline __attribute__((always_inline)) void count(uint64_t *shards)
{
	unsigned s = oxshim_shard; /* the shard + 1; 0: none yet */

	if (__builtin_expect(s == 0, 0)) {
		s = __atomic_add_fetch(&oxshim_next_shard, 1, __ATOMIC_RELAXED);
		if (s > OXSHIM_SHARDS)
			s = OXSHIM_SHARDS;
		oxshim_shard = s;
	}
	if (s < OXSHIM_SHARDS)
		__atomic_store_n(&shards[s - 1], __atomic_load_n(&shards[s - 1], __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&shards[OXSHIM_SHARDS - 1], 1, __ATOMIC_RELAXED);
}

/*
 * The body of each: the provider's table and count from the copy the call
 * came through, the count, and the provider's `slot` called with the
 * arguments untouched (a tail call).
 */
#define FORWARD_INT(slot, ...)                                                 \
	const struct oxshim_int *t = int_of(fid);                              \
	if (!t)                                                                \
		return -FI_EINVAL;                                             \
	if (!t->orig->slot)                                                    \
		return -FI_ENOSYS;                                             \
	count(t->shards);                                                      \
	return t->orig->slot(__VA_ARGS__);

HIDDEN int oxshim_tr_mr_reg_int(struct fid *fid, const void *buf, size_t len,
				uint64_t access, uint64_t offset,
				uint64_t requested_key, uint64_t flags,
				struct fid_mr **mr, void *context)
{
	FORWARD_INT(reg, fid, buf, len, access, offset, requested_key, flags, mr, context)
}

HIDDEN int oxshim_tr_mr_regv_int(struct fid *fid, const struct iovec *iov,
				 size_t count_, uint64_t access, uint64_t offset,
				 uint64_t requested_key, uint64_t flags,
				 struct fid_mr **mr, void *context)
{
	FORWARD_INT(regv, fid, iov, count_, access, offset, requested_key, flags, mr, context)
}

HIDDEN int oxshim_tr_mr_regattr_int(struct fid *fid, const struct fi_mr_attr *attr,
				    uint64_t flags, struct fid_mr **mr)
{
	FORWARD_INT(regattr, fid, attr, flags, mr)
}

HIDDEN int oxshim_tr_mr_close(struct fid *fid)
{
	return oxshim_rs_mr_close(RA, fid);
}

HIDDEN int oxshim_tr_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return oxshim_rs_mr_bind(RA, fid, bfid, flags);
}

HIDDEN int oxshim_tr_mr_control(struct fid *fid, int command, void *arg)
{
	return oxshim_rs_mr_control(RA, fid, command, arg);
}

/* ------------------------------------------------- endpoints, data path -- */

/*
 * The data-path entries of an application's endpoint (src/shim/ep.rs):
 * each describes the local buffers of the call and their descs as a few
 * segments, lets the Rust side check them (oxshim_rs_dp), and forwards the
 * call unchanged to the provider's table, which oxshim_rs_dp returns. A
 * NULL answer (an endpoint the shim does not know, or a misuse in strict
 * mode) fails the call with -FI_EINVAL before the provider sees it.
 */

/* Mirrors src/shim/ep.rs (Seg). */
enum { SEG_BUF, SEG_IOV, SEG_IOC, SEG_ELEMS };

struct oxshim_seg {
	const void *ptr;	/* buffer, iovec array or fi_ioc array */
	size_t n;		/* bytes, entries or elements */
	void *desc;		/* the desc, or the array of descs */
	uint64_t access;	/* FI_SEND, FI_RECV, FI_READ or FI_WRITE */
	uint16_t kind;
	uint16_t inject;	/* FI_INJECT: no desc needed */
	uint32_t datatype;
};

/* Mirrors the head of src/shim/ep.rs (EpHook): the provider's tables. */
struct oxshim_ep {
	struct fi_ops_msg *msg;
	struct fi_ops_tagged *tagged;
	struct fi_ops_rma *rma;
	struct fi_ops_atomic *atomic;
};

HIDDEN const struct oxshim_ep *oxshim_rs_dp(void *ra, struct fid_ep *ep, const char *call,
					    const struct oxshim_seg *segs, size_t n);

HIDDEN const struct oxshim_ep *oxshim_rs_dp1(const void *hint, struct fid_ep *ep, const void *buf,
					     size_t len, void *desc, uint64_t access);

#define BUF(p, len, d, acc) { (p), (len), (d), (acc), SEG_BUF, 0, 0 }
#define IOV(v, cnt, d, acc, inj) { (v), (cnt), (void *)(d), (acc), SEG_IOV, (inj), 0 }
#define IOC(v, cnt, d, acc, dt, inj) { (v), (cnt), (void *)(d), (acc), SEG_IOC, (inj), (dt) }
#define ELEMS(p, cnt, d, acc, dt) { (p), (cnt), (d), (acc), SEG_ELEMS, 0, (dt) }
#define INJ(flags) ((flags) & FI_INJECT ? 1 : 0)
#define CHECK(name, ...)                                                       \
	const struct oxshim_seg s[] = { __VA_ARGS__ };                         \
	const struct oxshim_ep *h =                                            \
		oxshim_rs_dp(RA, ep, name, s, sizeof(s) / sizeof(s[0]));       \
	if (!h)                                                                \
		return -FI_EINVAL;
/*
 * One local buffer (the plain forms): oxshim_rs_dp1 answers the common
 * case, a known endpoint and a buffer that passes, without building the
 * segment; anything else takes the whole path, which checks again and
 * records what it finds. The call came through ep->tab; when that table's
 * `slot` is this very entry, it is the shim's copy, and its owner word
 * names the endpoint's hook (a hint Rust checks against `ep`): the hook is
 * found from lines the call itself just read, not from the lookup table.
 */
#define CHECK1(name, tab, slot, p, len, d, acc)                                \
	const struct oxshim_ep *h = oxshim_rs_dp1(                             \
		ep->tab->slot == oxshim_tr_##tab##_##slot                       \
			? owner_of(ep->tab, sizeof(*ep->tab))                  \
			: NULL,                                                \
		ep, (p), (len), (d), (acc));                                   \
	if (__builtin_expect(!h, 0)) {                                         \
		const struct oxshim_seg s[] = { BUF(p, len, d, acc) };         \
		h = oxshim_rs_dp(RA, ep, name, s, 1);                          \
		if (!h)                                                        \
			return -FI_EINVAL;                                     \
	}

/* fi_msg */
HIDDEN ssize_t oxshim_tr_msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
				  fi_addr_t src_addr, void *context)
{
	CHECK1("fi_recv", msg, recv, buf, len, desc, FI_RECV)
	return h->msg->recv(ep, buf, len, desc, src_addr, context);
}

HIDDEN ssize_t oxshim_tr_msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
				   size_t count, fi_addr_t src_addr, void *context)
{
	CHECK("fi_recvv", IOV(iov, count, desc, FI_RECV, 0))
	return h->msg->recvv(ep, iov, desc, count, src_addr, context);
}

HIDDEN ssize_t oxshim_tr_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	CHECK("fi_recvmsg", IOV(msg ? msg->msg_iov : NULL, msg ? msg->iov_count : 0,
				msg ? msg->desc : NULL, FI_RECV, 0))
	return h->msg->recvmsg(ep, msg, flags);
}

HIDDEN ssize_t oxshim_tr_msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
				  fi_addr_t dest_addr, void *context)
{
	CHECK1("fi_send", msg, send, buf, len, desc, FI_SEND)
	return h->msg->send(ep, buf, len, desc, dest_addr, context);
}

HIDDEN ssize_t oxshim_tr_msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
				   size_t count, fi_addr_t dest_addr, void *context)
{
	CHECK("fi_sendv", IOV(iov, count, desc, FI_SEND, 0))
	return h->msg->sendv(ep, iov, desc, count, dest_addr, context);
}

HIDDEN ssize_t oxshim_tr_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	CHECK("fi_sendmsg", IOV(msg ? msg->msg_iov : NULL, msg ? msg->iov_count : 0,
				msg ? msg->desc : NULL, FI_SEND, INJ(flags)))
	return h->msg->sendmsg(ep, msg, flags);
}

HIDDEN ssize_t oxshim_tr_msg_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
				      uint64_t data, fi_addr_t dest_addr, void *context)
{
	CHECK1("fi_senddata", msg, senddata, buf, len, desc, FI_SEND)
	return h->msg->senddata(ep, buf, len, desc, data, dest_addr, context);
}

/* fi_tagged */
HIDDEN ssize_t oxshim_tr_tagged_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
				     fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
				     void *context)
{
	CHECK1("fi_trecv", tagged, recv, buf, len, desc, FI_RECV)
	return h->tagged->recv(ep, buf, len, desc, src_addr, tag, ignore, context);
}

HIDDEN ssize_t oxshim_tr_tagged_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
				      size_t count, fi_addr_t src_addr, uint64_t tag,
				      uint64_t ignore, void *context)
{
	CHECK("fi_trecvv", IOV(iov, count, desc, FI_RECV, 0))
	return h->tagged->recvv(ep, iov, desc, count, src_addr, tag, ignore, context);
}

HIDDEN ssize_t oxshim_tr_tagged_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
					uint64_t flags)
{
	CHECK("fi_trecvmsg", IOV(msg ? msg->msg_iov : NULL, msg ? msg->iov_count : 0,
				 msg ? msg->desc : NULL, FI_RECV, 0))
	return h->tagged->recvmsg(ep, msg, flags);
}

HIDDEN ssize_t oxshim_tr_tagged_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
				     fi_addr_t dest_addr, uint64_t tag, void *context)
{
	CHECK1("fi_tsend", tagged, send, buf, len, desc, FI_SEND)
	return h->tagged->send(ep, buf, len, desc, dest_addr, tag, context);
}

HIDDEN ssize_t oxshim_tr_tagged_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
				      size_t count, fi_addr_t dest_addr, uint64_t tag,
				      void *context)
{
	CHECK("fi_tsendv", IOV(iov, count, desc, FI_SEND, 0))
	return h->tagged->sendv(ep, iov, desc, count, dest_addr, tag, context);
}

HIDDEN ssize_t oxshim_tr_tagged_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
					uint64_t flags)
{
	CHECK("fi_tsendmsg", IOV(msg ? msg->msg_iov : NULL, msg ? msg->iov_count : 0,
				 msg ? msg->desc : NULL, FI_SEND, INJ(flags)))
	return h->tagged->sendmsg(ep, msg, flags);
}

HIDDEN ssize_t oxshim_tr_tagged_senddata(struct fid_ep *ep, const void *buf, size_t len,
					 void *desc, uint64_t data, fi_addr_t dest_addr,
					 uint64_t tag, void *context)
{
	CHECK1("fi_tsenddata", tagged, senddata, buf, len, desc, FI_SEND)
	return h->tagged->senddata(ep, buf, len, desc, data, dest_addr, tag, context);
}

/* fi_rma: the local buffer of a read is written by the network (FI_READ),
 * that of a write is read from (FI_WRITE); fi_mr(3), "access". */
HIDDEN ssize_t oxshim_tr_rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
				  fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	CHECK1("fi_read", rma, read, buf, len, desc, FI_READ)
	return h->rma->read(ep, buf, len, desc, src_addr, addr, key, context);
}

HIDDEN ssize_t oxshim_tr_rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
				   size_t count, fi_addr_t src_addr, uint64_t addr, uint64_t key,
				   void *context)
{
	CHECK("fi_readv", IOV(iov, count, desc, FI_READ, 0))
	return h->rma->readv(ep, iov, desc, count, src_addr, addr, key, context);
}

HIDDEN ssize_t oxshim_tr_rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
				     uint64_t flags)
{
	CHECK("fi_readmsg", IOV(msg ? msg->msg_iov : NULL, msg ? msg->iov_count : 0,
				msg ? msg->desc : NULL, FI_READ, 0))
	return h->rma->readmsg(ep, msg, flags);
}

HIDDEN ssize_t oxshim_tr_rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
				   fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
	CHECK1("fi_write", rma, write, buf, len, desc, FI_WRITE)
	return h->rma->write(ep, buf, len, desc, dest_addr, addr, key, context);
}

HIDDEN ssize_t oxshim_tr_rma_writev(struct fid_ep *ep, const struct iovec *iov, void **desc,
				    size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
				    void *context)
{
	CHECK("fi_writev", IOV(iov, count, desc, FI_WRITE, 0))
	return h->rma->writev(ep, iov, desc, count, dest_addr, addr, key, context);
}

HIDDEN ssize_t oxshim_tr_rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
				      uint64_t flags)
{
	CHECK("fi_writemsg", IOV(msg ? msg->msg_iov : NULL, msg ? msg->iov_count : 0,
				 msg ? msg->desc : NULL, FI_WRITE, INJ(flags)))
	return h->rma->writemsg(ep, msg, flags);
}

HIDDEN ssize_t oxshim_tr_rma_writedata(struct fid_ep *ep, const void *buf, size_t len,
				       void *desc, uint64_t data, fi_addr_t dest_addr,
				       uint64_t addr, uint64_t key, void *context)
{
	CHECK1("fi_writedata", rma, writedata, buf, len, desc, FI_WRITE)
	return h->rma->writedata(ep, buf, len, desc, data, dest_addr, addr, key, context);
}

/* fi_atomic: operands are sources (FI_WRITE), results are written by the
 * network (FI_READ). FI_ATOMIC_READ ignores the operand buffer. */
#define OPERAND(op, cnt) ((op) == FI_ATOMIC_READ ? 0 : (cnt))

HIDDEN ssize_t oxshim_tr_atomic_write(struct fid_ep *ep, const void *buf, size_t count,
				      void *desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
				      enum fi_datatype datatype, enum fi_op op, void *context)
{
	CHECK("fi_atomic", ELEMS(buf, count, desc, FI_WRITE, datatype))
	return h->atomic->write(ep, buf, count, desc, dest_addr, addr, key, datatype, op, context);
}

HIDDEN ssize_t oxshim_tr_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
				       size_t count, fi_addr_t dest_addr, uint64_t addr,
				       uint64_t key, enum fi_datatype datatype, enum fi_op op,
				       void *context)
{
	CHECK("fi_atomicv", IOC(iov, count, desc, FI_WRITE, datatype, 0))
	return h->atomic->writev(ep, iov, desc, count, dest_addr, addr, key, datatype, op,
				 context);
}

HIDDEN ssize_t oxshim_tr_atomic_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
					 uint64_t flags)
{
	CHECK("fi_atomicmsg", IOC(msg ? msg->msg_iov : NULL, msg ? msg->iov_count : 0,
				  msg ? msg->desc : NULL, FI_WRITE, msg ? msg->datatype : 0,
				  INJ(flags)))
	return h->atomic->writemsg(ep, msg, flags);
}

HIDDEN ssize_t oxshim_tr_atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count,
					  void *desc, void *result, void *result_desc,
					  fi_addr_t dest_addr, uint64_t addr, uint64_t key,
					  enum fi_datatype datatype, enum fi_op op, void *context)
{
	CHECK("fi_fetch_atomic", ELEMS(buf, OPERAND(op, count), desc, FI_WRITE, datatype),
	      ELEMS(result, count, result_desc, FI_READ, datatype))
	return h->atomic->readwrite(ep, buf, count, desc, result, result_desc, dest_addr, addr,
				    key, datatype, op, context);
}

HIDDEN ssize_t oxshim_tr_atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov,
					   void **desc, size_t count, struct fi_ioc *resultv,
					   void **result_desc, size_t result_count,
					   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
					   enum fi_datatype datatype, enum fi_op op, void *context)
{
	CHECK("fi_fetch_atomicv", IOC(iov, OPERAND(op, count), desc, FI_WRITE, datatype, 0),
	      IOC(resultv, result_count, result_desc, FI_READ, datatype, 0))
	return h->atomic->readwritev(ep, iov, desc, count, resultv, result_desc, result_count,
				     dest_addr, addr, key, datatype, op, context);
}

HIDDEN ssize_t oxshim_tr_atomic_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
					     struct fi_ioc *resultv, void **result_desc,
					     size_t result_count, uint64_t flags)
{
	CHECK("fi_fetch_atomicmsg",
	      IOC(msg ? msg->msg_iov : NULL, msg ? OPERAND(msg->op, msg->iov_count) : 0,
		  msg ? msg->desc : NULL, FI_WRITE, msg ? msg->datatype : 0, 0),
	      IOC(resultv, result_count, result_desc, FI_READ, msg ? msg->datatype : 0, 0))
	return h->atomic->readwritemsg(ep, msg, resultv, result_desc, result_count, flags);
}

HIDDEN ssize_t oxshim_tr_atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count,
					  void *desc, const void *compare, void *compare_desc,
					  void *result, void *result_desc, fi_addr_t dest_addr,
					  uint64_t addr, uint64_t key, enum fi_datatype datatype,
					  enum fi_op op, void *context)
{
	CHECK("fi_compare_atomic", ELEMS(buf, count, desc, FI_WRITE, datatype),
	      ELEMS(compare, count, compare_desc, FI_WRITE, datatype),
	      ELEMS(result, count, result_desc, FI_READ, datatype))
	return h->atomic->compwrite(ep, buf, count, desc, compare, compare_desc, result,
				    result_desc, dest_addr, addr, key, datatype, op, context);
}

HIDDEN ssize_t oxshim_tr_atomic_compwritev(struct fid_ep *ep, const struct fi_ioc *iov,
					   void **desc, size_t count,
					   const struct fi_ioc *comparev, void **compare_desc,
					   size_t compare_count, struct fi_ioc *resultv,
					   void **result_desc, size_t result_count,
					   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
					   enum fi_datatype datatype, enum fi_op op, void *context)
{
	CHECK("fi_compare_atomicv", IOC(iov, count, desc, FI_WRITE, datatype, 0),
	      IOC(comparev, compare_count, compare_desc, FI_WRITE, datatype, 0),
	      IOC(resultv, result_count, result_desc, FI_READ, datatype, 0))
	return h->atomic->compwritev(ep, iov, desc, count, comparev, compare_desc, compare_count,
				     resultv, result_desc, result_count, dest_addr, addr, key,
				     datatype, op, context);
}

HIDDEN ssize_t oxshim_tr_atomic_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
					     const struct fi_ioc *comparev, void **compare_desc,
					     size_t compare_count, struct fi_ioc *resultv,
					     void **result_desc, size_t result_count,
					     uint64_t flags)
{
	CHECK("fi_compare_atomicmsg",
	      IOC(msg ? msg->msg_iov : NULL, msg ? msg->iov_count : 0, msg ? msg->desc : NULL,
		  FI_WRITE, msg ? msg->datatype : 0, 0),
	      IOC(comparev, compare_count, compare_desc, FI_WRITE, msg ? msg->datatype : 0, 0),
	      IOC(resultv, result_count, result_desc, FI_READ, msg ? msg->datatype : 0, 0))
	return h->atomic->compwritemsg(ep, msg, comparev, compare_desc, compare_count, resultv,
				       result_desc, result_count, flags);
}

/* domain->ops (endpoint, scalable_ep, endpoint2) and the endpoint's close */
HIDDEN int oxshim_rs_dom_endpoint(void *ra, struct fid_domain *domain, struct fi_info *info,
				  struct fid_ep **ep, uint64_t flags, void *context, int which);
HIDDEN int oxshim_rs_ep_close(void *ra, struct fid *fid);

HIDDEN int oxshim_tr_dom_endpoint(struct fid_domain *domain, struct fi_info *info,
				  struct fid_ep **ep, void *context)
{
	return oxshim_rs_dom_endpoint(RA, domain, info, ep, 0, context, 0);
}

HIDDEN int oxshim_tr_dom_scalable_ep(struct fid_domain *domain, struct fi_info *info,
				     struct fid_ep **sep, void *context)
{
	return oxshim_rs_dom_endpoint(RA, domain, info, sep, 0, context, 1);
}

HIDDEN int oxshim_tr_dom_endpoint2(struct fid_domain *domain, struct fi_info *info,
				   struct fid_ep **ep, uint64_t flags, void *context)
{
	return oxshim_rs_dom_endpoint(RA, domain, info, ep, flags, context, 2);
}

HIDDEN int oxshim_tr_ep_close(struct fid *fid)
{
	return oxshim_rs_ep_close(RA, fid);
}

/* ------------------------------------------ memory under a live MR ------ */

/*
 * munmap, mremap, madvise, brk and sbrk, interposed (the shim is preloaded
 * ahead of libc; shim.map gives them libc's symbol version, which the
 * program's references name). Each forwards the call, and when it
 * succeeded tells the Rust side which range lost its pages, with the
 * caller's address; src/shim/unmap.rs reports the live MRs over it.
 * libc's own calls (free() of a large block unmaps it from inside libc)
 * do not pass through here.
 */
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { UNMAP_MUNMAP, UNMAP_MREMAP, UNMAP_MADVISE, UNMAP_BRK, UNMAP_SBRK };

HIDDEN void oxshim_rs_unmap(void *ra, int call, uintptr_t start, uintptr_t end);

static uintptr_t page_up(uintptr_t a)
{
	uintptr_t p = (uintptr_t)sysconf(_SC_PAGESIZE);

	return (a + p - 1) & ~(p - 1);
}

int oxshim_munmap(void *addr, size_t len)
{
	long rc = syscall(SYS_munmap, addr, len);

	if (rc == 0)
		oxshim_rs_unmap(RA, UNMAP_MUNMAP, (uintptr_t)addr, page_up((uintptr_t)addr + len));
	return (int)rc;
}

void *oxshim_mremap(void *old, size_t old_size, size_t new_size, int flags, ...)
{
	void *new_addr = NULL, *res;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	res = (void *)syscall(SYS_mremap, old, old_size, new_size, flags, new_addr);
	if (res != MAP_FAILED) {
		uintptr_t o = (uintptr_t)old;

		if (res != old)
			oxshim_rs_unmap(RA, UNMAP_MREMAP, o, page_up(o + old_size));
		else if (new_size < old_size)
			oxshim_rs_unmap(RA, UNMAP_MREMAP, page_up(o + new_size), page_up(o + old_size));
	}
	return res;
}

int oxshim_madvise(void *addr, size_t len, int advice)
{
	int rc = (int)syscall(SYS_madvise, addr, len, advice);

	/* The advices after which the pages read back as new (zeroes). */
	if (rc == 0 && (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE))
		oxshim_rs_unmap(RA, UNMAP_MADVISE, (uintptr_t)addr, page_up((uintptr_t)addr + len));
	return rc;
}

/* brk and sbrk keep libc's idea of the break: libc's own are called. */
typedef int (*brk_fn)(void *);
typedef void *(*sbrk_fn)(intptr_t);

static sbrk_fn real_sbrk(void)
{
	static sbrk_fn f;

	if (!f)
		f = (sbrk_fn)dlsym(RTLD_NEXT, "sbrk");
	return f;
}

int oxshim_brk(void *addr)
{
	static brk_fn f;
	sbrk_fn s = real_sbrk();
	void *old;
	int rc;

	if (!f)
		f = (brk_fn)dlsym(RTLD_NEXT, "brk");
	if (!f || !s) {
		errno = ENOSYS;
		return -1;
	}
	old = s(0);
	rc = f(addr);
	if (rc == 0 && (uintptr_t)addr < (uintptr_t)old)
		oxshim_rs_unmap(RA, UNMAP_BRK, page_up((uintptr_t)addr), page_up((uintptr_t)old));
	return rc;
}

void *oxshim_sbrk(intptr_t increment)
{
	sbrk_fn s = real_sbrk();
	void *old;

	if (!s) {
		errno = ENOSYS;
		return (void *)-1;
	}
	old = s(increment);
	if (old != (void *)-1 && increment < 0)
		oxshim_rs_unmap(RA, UNMAP_SBRK, page_up((uintptr_t)old + increment),
				page_up((uintptr_t)old));
	return old;
}

__asm__(".symver oxshim_munmap, munmap@@GLIBC_2.2.5");
__asm__(".symver oxshim_mremap, mremap@@GLIBC_2.2.5");
__asm__(".symver oxshim_madvise, madvise@@GLIBC_2.2.5");
__asm__(".symver oxshim_brk, brk@@GLIBC_2.2.5");
__asm__(".symver oxshim_sbrk, sbrk@@GLIBC_2.2.5");
