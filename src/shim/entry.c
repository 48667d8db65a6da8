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
