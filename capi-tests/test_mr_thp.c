/*
 * Registered memory that peers may access goes on transparent huge pages
 * where the application has touched it (a peer's cross-memory copy pins
 * it one small page at a time): a remotely accessible region's resident
 * whole 2 MiB blocks are collapsed at fi_mr_reg, with their contents; a
 * local-only region, a block the application touched only in part and
 * FI_OXSHM_THP=0 are left as they were, and no memory is added.
 *
 * What the kernel did is read from /proc/self/smaps (AnonHugePages, Rss of
 * the mapping). Where the kernel cannot (THP off, or older than 6.7, which
 * lacks PAGEMAP_SCAN) the cases check that registration still works and
 * changes nothing, and say so.
 */
#include "test.h"

#include <sys/mman.h>
#include <sys/utsname.h>

#define HUGE ((size_t)2 << 20)

/* Whether this kernel collapses on request: THP not "never", Linux 6.7+
 * (MADV_COLLAPSE, and PAGEMAP_SCAN to find what is not yet huge). */
static int kernel_collapses(void)
{
	char line[256] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	if (strstr(line, "[never]") || !line[0])
		return 0;
	f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
	unsigned long pmd = 0;
	if (!f || fscanf(f, "%lu", &pmd) != 1)
		pmd = 0;
	if (f)
		fclose(f);
	if (pmd != HUGE)
		return 0;
	struct utsname u;
	int maj = 0, min = 0;
	if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &maj, &min) != 2)
		return 0;
	return maj > 6 || (maj == 6 && min >= 7);
}

/* Rss and AnonHugePages (kB) of the mapping holding `addr`. */
static int smaps(const void *addr, long *rss, long *huge)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int inside = 0;
	*rss = *huge = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		char c;
		if (sscanf(line, "%lx-%lx %c", &a, &b, &c) == 3 && strchr(line, '-') < strchr(line, ' ')) {
			inside = (uintptr_t)addr >= a && (uintptr_t)addr < b;
			continue;
		}
		if (!inside)
			continue;
		if (!strncmp(line, "Rss:", 4))
			*rss = atol(line + 4);
		else if (!strncmp(line, "AnonHugePages:", 14))
			*huge = atol(line + 14);
	}
	fclose(f);
	return *rss < 0 || *huge < 0 ? -1 : 0;
}

/* `blocks` 2 MiB blocks, aligned, in a fresh private anonymous mapping
 * whose first and last pages are inaccessible, so that no other mapping
 * (the domain's own, say) merges with it and its smaps entry is its own. */
static char *blocks(size_t n, void **map, size_t *map_len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	*map_len = (n + 2) * HUGE;
	*map = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*map == MAP_FAILED)
		return NULL;
	if (mprotect(*map, page, PROT_NONE) != 0 ||
	    mprotect((char *)*map + *map_len - page, page, PROT_NONE) != 0)
		return NULL;
	return (char *)(((uintptr_t)*map + page + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
}

static void fill(char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (char)(i * 7 + i / 4096);
}

static int intact(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (char)(i * 7 + i / 4096)) {
			fprintf(stderr, "    byte %zu changed\n", i);
			return 0;
		}
	return 1;
}

/* Registers `len` bytes at `p` with `access` and reports AnonHugePages. */
static int reg_and_look(char *p, size_t len, uint64_t access, long *rss, long *huge)
{
	struct test_res r;
	struct fid_mr *mr = NULL;
	CHECK_OK(test_open(&r));
	/* A little before and after: only the whole blocks inside count. */
	CHECK_OK(fi_mr_reg(r.domain, p - 100, len + 200, access, 0, 0, 0, &mr, NULL));
	CHECK_OK(smaps(p, rss, huge));
	CHECK_OK(fi_close(&mr->fid));
	return test_close(&r);
}

static int remote_region_goes_on_huge_pages(void)
{
	void *map;
	size_t map_len;
	long rss, huge;
	char *p = blocks(3, &map, &map_len);
	CHECK(p != NULL);
	fill(p, 2 * HUGE);
	/* The region is blocks 0 and 1 (and 100 bytes around them). */
	CHECK_OK(reg_and_look(p, 2 * HUGE, FI_REMOTE_WRITE, &rss, &huge));
	if (kernel_collapses()) {
		CHECK(huge >= 2 * (long)(HUGE / 1024));
	} else {
		fprintf(stderr, "    (this kernel does not collapse on request: checked that nothing changed)\n");
		CHECK(huge == 0);
	}
	CHECK(intact(p, 2 * HUGE));
	/* The memory stays usable, and registers again. */
	fill(p, 2 * HUGE);
	CHECK_OK(reg_and_look(p, 2 * HUGE, FI_REMOTE_READ, &rss, &huge));
	CHECK(intact(p, 2 * HUGE));
	munmap(map, map_len);
	return 0;
}

/* Two touched blocks registered with `access` stay on small pages. */
static int left_alone(uint64_t access)
{
	void *map;
	size_t map_len;
	long rss, huge;
	char *p = blocks(2, &map, &map_len);
	CHECK(p != NULL);
	fill(p, 2 * HUGE);
	CHECK_OK(reg_and_look(p, 2 * HUGE, access, &rss, &huge));
	CHECK(huge == 0);
	CHECK(intact(p, 2 * HUGE));
	munmap(map, map_len);
	return 0;
}

static int local_only_region_is_left_alone(void)
{
	return left_alone(FI_SEND | FI_RECV | FI_READ | FI_WRITE);
}

/* Run with FI_OXSHM_THP=0. */
static int thp_off_leaves_it_alone(void)
{
	return left_alone(FI_REMOTE_WRITE | FI_REMOTE_READ);
}

/* A block touched every other page and one never touched: no memory added. */
static int sparse_blocks_add_no_memory(void)
{
	void *map;
	size_t map_len;
	long rss0, huge0, rss, huge;
	char *p = blocks(2, &map, &map_len);
	CHECK(p != NULL);
	for (size_t i = 0; i < HUGE; i += 8192)
		p[i] = 1;
	CHECK_OK(smaps(p, &rss0, &huge0));
	CHECK_OK(reg_and_look(p, 2 * HUGE, FI_REMOTE_WRITE | FI_REMOTE_READ, &rss, &huge));
	CHECK(huge == 0);
	if (rss > rss0 + 64) {
		fprintf(stderr, "    Rss %ld -> %ld kB\n", rss0, rss);
		CHECK(rss <= rss0 + 64);
	}
	for (size_t i = 0; i < 2 * HUGE; i++)
		CHECK(p[i] == (i < HUGE && i % 8192 == 0 ? 1 : 0));
	munmap(map, map_len);
	return 0;
}

static const struct test_case cases[] = {
	CASE(remote_region_goes_on_huge_pages),
	CASE(local_only_region_is_left_alone),
	CASE_ENV(thp_off_leaves_it_alone, "FI_OXSHM_THP=0"),
	CASE(sparse_blocks_add_no_memory),
};

TEST_MAIN(cases)
