/*
 * Older API versions and the compat symbol versions: a program written for
 * libfabric 1.x asks for FI_VERSION(1, x) and may be bound to fi_getinfo@
 * FABRIC_1.0 ... 1.9, each of which reads and writes the fi_info layout of
 * its time and never a byte past it.
 */
#include "test.h"

#include <dlfcn.h>
#include <sys/mman.h>

#define MR_BASIC (1 << 0)
#define MR_SCALABLE (1 << 1)

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const struct fi_info *, struct fi_info **);
typedef void (*freeinfo_fn)(struct fi_info *);
typedef struct fi_info *(*dupinfo_fn)(const struct fi_info *);

static const char *const compat_nodes[] = {
	"FABRIC_1.0", "FABRIC_1.1", "FABRIC_1.2", "FABRIC_1.3", "FABRIC_1.7",
	"FABRIC_1.8", "FABRIC_1.9", "FABRIC_1.10",
};

static int getinfo_at(uint32_t version, struct fi_info **out)
{
	struct fi_info *hints = test_hints();
	int rc = fi_getinfo(version, NULL, NULL, 0, hints, out);
	fi_freeinfo(hints);
	return rc;
}

static int old_api_versions(void)
{
	uint32_t versions[] = { FI_VERSION(1, 0), FI_VERSION(1, 4), FI_VERSION(1, 5),
				FI_VERSION(1, 9), FI_VERSION(1, 17), FI_VERSION(2, 0),
				TEST_HDR_VERSION };
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		struct fi_info *info = NULL;
		if (versions[i] > fi_version())
			continue; /* only when pointed at an older library */
		CHECK_OK(getinfo_at(versions[i], &info));
		CHECK_STR(info->fabric_attr->prov_name, TEST_PROV);
		/* fabric_attr->api_version exists from 1.5 on: it echoes the request. */
		if (versions[i] >= FI_VERSION(1, 5))
			CHECK(info->fabric_attr->api_version == versions[i]);
		fi_freeinfo(info);
	}
	return 0;
}

/* Before 1.5 there are only the two legacy modes; an unspecified one is chosen. */
static int legacy_mr_mode_before_1_5(void)
{
	struct fi_info *info = NULL;
	CHECK_OK(getinfo_at(FI_VERSION(1, 4), &info));
	int m = info->domain_attr->mr_mode;
	fi_freeinfo(info);
	CHECK(m == MR_BASIC || m == MR_SCALABLE);
	return 0;
}

static int old_version_opens_objects(void)
{
	struct fi_info *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_mr *mr = NULL;
	static char buf[256];
	CHECK_OK(getinfo_at(FI_VERSION(1, 5), &info));
	CHECK_OK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK_OK(fi_domain(fabric, info, &domain, NULL));
	CHECK_OK(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_READ, 0, 3, 0, &mr, NULL));
	CHECK_OK(fi_close(&mr->fid));
	CHECK_OK(fi_close(&domain->fid));
	CHECK_OK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	return 0;
}

/* Every version node of the three info calls resolves and works in pairs. */
static int every_compat_node(void)
{
	for (size_t i = 0; i < sizeof(compat_nodes) / sizeof(compat_nodes[0]); i++) {
		const char *node = compat_nodes[i];
		getinfo_fn gi = (getinfo_fn)dlvsym(RTLD_DEFAULT, "fi_getinfo", node);
		freeinfo_fn fr = (freeinfo_fn)dlvsym(RTLD_DEFAULT, "fi_freeinfo", node);
		dupinfo_fn du = (dupinfo_fn)dlvsym(RTLD_DEFAULT, "fi_dupinfo", node);
		if (!gi || !fr || !du) {
			fprintf(stderr, "    %s: fi_getinfo %p fi_freeinfo %p fi_dupinfo %p\n",
				node, (void *)gi, (void *)fr, (void *)du);
			return 1;
		}
		struct fi_info *info = NULL, *hints = test_hints();
		int rc = gi(FI_VERSION(1, 5), NULL, NULL, 0, hints, &info);
		fi_freeinfo(hints);
		CHECK_OK(rc);
		CHECK(info != NULL && info->fabric_attr && info->domain_attr);
		CHECK_STR(info->fabric_attr->prov_name, TEST_PROV);
		struct fi_info *copy = du(info);
		CHECK(copy != NULL && copy->fabric_attr != info->fabric_attr);
		CHECK_STR(copy->fabric_attr->prov_name, TEST_PROV);
		fr(copy);
		fr(info);
		fr(NULL);
	}
	return 0;
}

/*
 * Memory that ends at a PROT_NONE page: an object of `size` bytes placed at
 * its very end faults on the first byte read past it.
 */
struct guard {
	void *map;
	size_t map_len;
};

static void *guarded(struct guard *g, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	size = (size + 7) & ~(size_t)7; /* the C struct's own padding */
	g->map_len = 2 * (size_t)page;
	g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED)
		abort();
	if (mprotect((char *)g->map + page, (size_t)page, PROT_NONE))
		abort();
	char *obj = (char *)g->map + page - size;
	memset(obj, 0, size);
	return obj;
}

static void unguard(struct guard *g)
{
	munmap(g->map, g->map_len);
}

/* Sizes of one ABI generation of fi_info and its attribute structs. */
struct layout {
	size_t info, tx, rx, ep, domain, fabric;
};

/* FABRIC_1.0: no fi_info.nic, and every attribute struct in its 1.0 form. */
static const struct layout layout_1_0 = {
	.info = offsetof(struct fi_info, nic),
	.tx = offsetof(struct fi_tx_attr, tclass),
	.rx = sizeof(struct fi_rx_attr),
	.ep = offsetof(struct fi_ep_attr, auth_key_size),
	.domain = offsetof(struct fi_domain_attr, cntr_cnt),
	.fabric = offsetof(struct fi_fabric_attr, api_version),
};

/*
 * The headers' own layout at the node a program built against them binds
 * to by default (1.17: FABRIC_1.3; oxfabric's 2.7: FABRIC_1.10). The 2.1
 * headers are left out: their default node belongs to upstream 2.1's
 * library, not to a mapping this test can state from the headers alone.
 */
#if FI_MAJOR_VERSION == 1 && FI_MINOR_VERSION == 17
#define HDR_NODE "FABRIC_1.3"
#elif TEST_HDR_AT_LEAST(2, 7)
#define HDR_NODE "FABRIC_1.10"
#endif

#ifdef HDR_NODE
/* The layout of the headers this program is compiled with. */
static const struct layout layout_hdr = {
	.info = sizeof(struct fi_info),
	.tx = sizeof(struct fi_tx_attr),
	.rx = sizeof(struct fi_rx_attr),
	.ep = sizeof(struct fi_ep_attr),
	.domain = sizeof(struct fi_domain_attr),
	.fabric = sizeof(struct fi_fabric_attr),
};
#endif

struct guarded_info {
	struct guard g[6];
	struct fi_info *info;
};

/* Hand-built hints for oxshm, every struct ending at a guard page. */
static struct fi_info *guarded_hints(struct guarded_info *gi, const struct layout *l)
{
	struct fi_info *info = guarded(&gi->g[0], l->info);
	info->tx_attr = guarded(&gi->g[1], l->tx);
	info->rx_attr = guarded(&gi->g[2], l->rx);
	info->ep_attr = guarded(&gi->g[3], l->ep);
	info->domain_attr = guarded(&gi->g[4], l->domain);
	info->fabric_attr = guarded(&gi->g[5], l->fabric);
	info->ep_attr->type = FI_EP_RDM;
	info->fabric_attr->prov_name = test_strdup(TEST_PROV);
	gi->info = info;
	return info;
}

static void guarded_free(struct guarded_info *gi)
{
	free(gi->info->fabric_attr->prov_name);
	for (int i = 5; i >= 0; i--)
		unguard(&gi->g[i]);
}

/* getinfo + dupinfo + freeinfo of version `node` on hints of layout `l`. */
static int guarded_round_trip(const char *node, const struct layout *l, uint32_t api)
{
	getinfo_fn gi = (getinfo_fn)dlvsym(RTLD_DEFAULT, "fi_getinfo", node);
	freeinfo_fn fr = (freeinfo_fn)dlvsym(RTLD_DEFAULT, "fi_freeinfo", node);
	dupinfo_fn du = (dupinfo_fn)dlvsym(RTLD_DEFAULT, "fi_dupinfo", node);
	CHECK(gi && fr && du);

	struct guarded_info g;
	struct fi_info *hints = guarded_hints(&g, l);
	struct fi_info *info = NULL;
	CHECK_OK(gi(api, NULL, NULL, 0, hints, &info));
	CHECK(info != NULL);
	CHECK_STR(info->fabric_attr->prov_name, TEST_PROV);
	CHECK(info->ep_attr->type == FI_EP_RDM);

	struct fi_info *copy = du(hints);
	CHECK(copy != NULL);
	CHECK_STR(copy->fabric_attr->prov_name, TEST_PROV);
	CHECK(copy->ep_attr->type == FI_EP_RDM);
	CHECK(copy->fabric_attr != hints->fabric_attr);
	fr(copy);
	fr(info);
	guarded_free(&g);
	return 0;
}

static int guard_page_1_0(void)
{
	return guarded_round_trip("FABRIC_1.0", &layout_1_0, FI_VERSION(1, 0));
}

#ifdef HDR_NODE
static int guard_page_headers_layout(void)
{
	return guarded_round_trip(HDR_NODE, &layout_hdr, TEST_HDR_VERSION);
}
#endif

/* The 1.0 dupinfo of a short fi_info writes a short copy: no nic field. */
static int dupinfo_1_0_reads_short_info(void)
{
	dupinfo_fn du = (dupinfo_fn)dlvsym(RTLD_DEFAULT, "fi_dupinfo", "FABRIC_1.0");
	freeinfo_fn fr = (freeinfo_fn)dlvsym(RTLD_DEFAULT, "fi_freeinfo", "FABRIC_1.0");
	CHECK(du && fr);
	struct guard g;
	struct fi_info *info = guarded(&g, offsetof(struct fi_info, nic));
	info->caps = FI_LOCAL_COMM;
	info->addr_format = FI_ADDR_STR;
	struct fi_info *copy = du(info);
	CHECK(copy != NULL);
	CHECK(copy->caps == FI_LOCAL_COMM && copy->addr_format == FI_ADDR_STR);
	CHECK(copy->next == NULL);
	fr(copy);
	unguard(&g);
	return 0;
}

/*
 * A 1.0 program opens a domain with its own 1.0-sized structures (through
 * fi_fabric@FABRIC_1.0, so the fabric runs at API 1.0): fi_domain reads
 * nothing past them.
 */
typedef int (*fabric_fn)(struct fi_fabric_attr *, struct fid_fabric **, void *);

static int domain_open_1_0_structs(void)
{
	fabric_fn fab10 = (fabric_fn)dlvsym(RTLD_DEFAULT, "fi_fabric", "FABRIC_1.0");
	CHECK(fab10 != NULL);
	struct guarded_info g;
	struct fi_info *info = guarded_hints(&g, &layout_1_0);
	info->domain_attr->mr_mode = 2; /* FI_MR_SCALABLE, the 1.0 default */
	struct fid_fabric *fab = NULL;
	struct fid_domain *dom = NULL;
	CHECK_OK(fab10(info->fabric_attr, &fab, NULL));
	CHECK_OK(fi_domain(fab, info, &dom, NULL));
	CHECK_OK(fi_close(&dom->fid));
	CHECK_OK(fi_close(&fab->fid));
	guarded_free(&g);
	return 0;
}

static const struct test_case cases[] = {
	CASE(old_api_versions),
	CASE(legacy_mr_mode_before_1_5),
	CASE(old_version_opens_objects),
	CASE(every_compat_node),
	CASE(guard_page_1_0),
	CASE(domain_open_1_0_structs),
#ifdef HDR_NODE
	CASE(guard_page_headers_layout),
#endif
	CASE(dupinfo_1_0_reads_short_info),
};

TEST_MAIN(cases)
