/*
 * Address vectors and endpoints (control path): fi_av_open, insert,
 * insertsvc, lookup, remove, straddr, FI_AV_TABLE vs FI_AV_MAP handles, bad
 * addresses; fi_endpoint, fi_ep_bind (AV, EQ, CQ, counter), fi_enable,
 * fi_getname/fi_setname, fi_getopt/fi_setopt, operation flags, close order;
 * the data calls answer -FI_ENOSYS until oxshm offers them; bad input gets
 * -FI_EINVAL and a log line.
 *
 * oxshm addresses are FI_ADDR_STR strings "fi_oxshm://<pid>/<ep-id>/<nonce>"
 * (nonce: 16 lowercase hex digits).
 */
#include "test.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_atomic.h>

#include <stdbool.h>

#define WARN "FI_LOG_LEVEL=warn"

/* ------------------------------------------------------------------ */
/* Resources                                                          */

struct res {
	struct test_res r;
	struct fid_av *av;
	struct fid_ep *ep;
};

static int av_open(struct test_res *r, enum fi_av_type type, struct fid_av **av)
{
	struct fi_av_attr a;
	memset(&a, 0, sizeof(a));
	a.type = type;
	a.count = 16;
	*av = NULL;
	CHECK_OK(fi_av_open(r->domain, &a, av, r));
	CHECK(*av != NULL);
	return 0;
}

/* Domain, a TABLE AV and an endpoint (not bound, not enabled). */
static int res_open(struct res *s)
{
	memset(s, 0, sizeof(*s));
	CHECK_OK(test_open(&s->r));
	CHECK_OK(av_open(&s->r, FI_AV_TABLE, &s->av));
	CHECK_OK(fi_endpoint(s->r.domain, s->r.info, &s->ep, s));
	CHECK(s->ep != NULL);
	return 0;
}

static int res_close(struct res *s)
{
	if (s->ep)
		CHECK_OK(fi_close(&s->ep->fid));
	if (s->av)
		CHECK_OK(fi_close(&s->av->fid));
	return test_close(&s->r);
}

/* Bound to its AV and enabled. */
static int res_enable(struct res *s)
{
	CHECK_OK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK_OK(fi_enable(s->ep));
	return 0;
}

/* A well-formed oxshm address of this process. */
static void make_addr(char *buf, size_t len, unsigned ep_id, unsigned long long nonce)
{
	snprintf(buf, len, "fi_oxshm://%d/%u/%016llx", (int)getpid(), ep_id, nonce);
}

static int get_name(struct fid_ep *ep, char *buf, size_t len)
{
	size_t n = len;
	CHECK_OK(fi_getname(&ep->fid, buf, &n));
	CHECK(n == strlen(buf) + 1);
	return 0;
}

/* stderr capture, for the cases that check the log line */
static int saved_fd = -1;
static FILE *capture;

static void capture_begin(void)
{
	fflush(stderr);
	capture = tmpfile();
	if (!capture)
		abort();
	saved_fd = dup(2);
	dup2(fileno(capture), 2);
}

static char *capture_end(void)
{
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	long n = ftell(capture);
	char *text = calloc(1, n > 0 ? (size_t)n + 1 : 1);
	if (!text)
		abort();
	rewind(capture);
	if (n > 0 && fread(text, 1, (size_t)n, capture) != (size_t)n)
		text[0] = '\0';
	fclose(capture);
	return text;
}

/* True when `log` has a line "libfabric:<pid>:...<warn>..." */
static int has_warning(const char *log)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "libfabric:%d:", (int)getpid());
	for (const char *line = log; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > strlen(prefix) && strncmp(line, prefix, strlen(prefix)) == 0) {
			char *copy = strndup(line, len);
			int ok = copy && strstr(copy, "<warn>") != NULL;
			free(copy);
			if (ok)
				return 1;
		}
		line = end ? end + 1 : NULL;
	}
	fprintf(stderr, "    no \"%s...<warn>\" log line; stderr was:\n%s", prefix, log);
	return 0;
}

#define CHECK_REFUSED(call, want)                                          \
	do {                                                               \
		capture_begin();                                           \
		long rc_ = (long)(call);                                   \
		char *log_ = capture_end();                                \
		int logged_ = has_warning(log_);                           \
		free(log_);                                                \
		CHECK_RC(rc_, want);                                       \
		CHECK(logged_);                                            \
	} while (0)

/* ------------------------------------------------------------------ */
/* Address vectors                                                    */

static int av_open_types(void)
{
	struct test_res r;
	struct fi_av_attr a;
	struct fid_av *av = NULL;
	CHECK_OK(test_open(&r));
	memset(&a, 0, sizeof(a));
	a.type = FI_AV_UNSPEC;
	CHECK_OK(fi_av_open(r.domain, &a, &av, &r));
	CHECK(av->fid.fclass == FI_CLASS_AV);
	CHECK(av->fid.context == &r);
	CHECK(av->ops != NULL);
	/* UNSPEC is a table, and the attribute says so. */
	CHECK(a.type == FI_AV_TABLE);
	/* An open AV keeps its domain open. */
	CHECK_RC(fi_close(&r.domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&av->fid));
	a.type = FI_AV_MAP;
	CHECK_OK(fi_av_open(r.domain, &a, &av, NULL));
	CHECK(a.type == FI_AV_MAP);
	CHECK_OK(fi_close(&av->fid));
	return test_close(&r);
}

static int av_open_bad_attr(void)
{
	struct test_res r;
	struct fi_av_attr a;
	struct fid_av *av = (struct fid_av *)&av;
	CHECK_OK(test_open(&r));
	memset(&a, 0, sizeof(a));
	a.type = (enum fi_av_type)42;
	CHECK_RC(fi_av_open(r.domain, &a, &av, NULL), -FI_EINVAL);
	a.type = FI_AV_TABLE;
	a.flags = FI_EVENT; /* asynchronous insertion: not supported */
	CHECK_RC(fi_av_open(r.domain, &a, &av, NULL), -FI_EBADFLAGS);
	a.flags = FI_READ; /* read-only needs a named AV */
	CHECK_RC(fi_av_open(r.domain, &a, &av, NULL), -FI_EINVAL);
	a.flags = 0;
	a.name = "shared";
	CHECK_RC(fi_av_open(r.domain, &a, &av, NULL), -FI_ENOSYS);
	a.name = NULL;
	CHECK_RC(fi_av_open(r.domain, NULL, &av, NULL), -FI_EINVAL);
	CHECK_RC(fi_av_open(r.domain, &a, NULL, NULL), -FI_EINVAL);
	CHECK(av == (struct fid_av *)&av);
	return test_close(&r);
}

/* TABLE handles are indices in insertion order; a freed index is reused. */
/* The names themselves, as fi_getname wrote them (what programs written
 * for upstream's shm pass), instead of an array of pointers: one name, and
 * names in fixed 64-byte slots. */
static int av_insert_names_inline(void)
{
	struct test_res r;
	struct fid_av *av;
	char slots[2][64], got[64];
	fi_addr_t fa[2] = { 99, 99 };
	memset(slots, 0, sizeof(slots));
	CHECK_OK(test_open(&r));
	CHECK_OK(av_open(&r, FI_AV_TABLE, &av));
	make_addr(slots[0], sizeof(slots[0]), 7, 0x7777);
	make_addr(slots[1], sizeof(slots[1]), 8, 0x8888);
	CHECK_RC(fi_av_insert(av, slots[0], 1, fa, 0, NULL), 1);
	CHECK_RC(fi_av_insert(av, slots, 2, fa, 0, NULL), 2);
	for (int i = 0; i < 2; i++) {
		size_t len = sizeof(got);
		CHECK_OK(fi_av_lookup(av, fa[i], got, &len));
		CHECK_STR(got, slots[i]);
	}
	CHECK_OK(fi_close(&av->fid));
	return test_close(&r);
}

static int av_table_insert_lookup_remove(void)
{
	struct test_res r;
	struct fid_av *av;
	char a0[64], a1[64], a2[64], a3[64], got[64];
	const char *addrs[3] = { a0, a1, a2 };
	fi_addr_t fa[3] = { 99, 99, 99 };
	CHECK_OK(test_open(&r));
	CHECK_OK(av_open(&r, FI_AV_TABLE, &av));
	make_addr(a0, sizeof(a0), 1, 0x1111);
	make_addr(a1, sizeof(a1), 2, 0x2222);
	make_addr(a2, sizeof(a2), 3, 0xabcdef0123456789ULL);
	make_addr(a3, sizeof(a3), 4, 0x4444);
	CHECK_RC(fi_av_insert(av, addrs, 3, fa, 0, NULL), 3);
	CHECK(fa[0] == 0 && fa[1] == 1 && fa[2] == 2);
	for (int i = 0; i < 3; i++) {
		size_t len = sizeof(got);
		memset(got, 0, sizeof(got));
		CHECK_OK(fi_av_lookup(av, fa[i], got, &len));
		CHECK_STR(got, addrs[i]);
		CHECK(len == strlen(addrs[i]) + 1);
	}
	/* A short buffer: the size needed, nothing copied. */
	size_t len = 5;
	memset(got, '#', sizeof(got));
	CHECK_RC(fi_av_lookup(av, 0, got, &len), -FI_ETOOSMALL);
	CHECK(len == strlen(a0) + 1);
	CHECK(got[0] == '#');
	/* Removal frees index 1; the next insertion takes it. */
	fi_addr_t one = 1;
	CHECK_OK(fi_av_remove(av, &one, 1, 0));
	len = sizeof(got);
	CHECK_RC(fi_av_lookup(av, 1, got, &len), -FI_EINVAL);
	const char *more[1] = { a3 };
	fi_addr_t fa3 = 99;
	CHECK_RC(fi_av_insert(av, more, 1, &fa3, 0, NULL), 1);
	CHECK(fa3 == 1);
	/* A table needs no fi_addr array. */
	CHECK_RC(fi_av_insert(av, more, 1, NULL, 0, NULL), 1);
	len = sizeof(got);
	CHECK_OK(fi_av_lookup(av, 3, got, &len));
	CHECK_STR(got, a3);
	CHECK_OK(fi_close(&av->fid));
	return test_close(&r);
}

/* MAP handles are opaque (not the indices a table gives) and go stale. */
static int av_map_handles(void)
{
	struct test_res r;
	struct fid_av *av;
	char a0[64], a1[64], got[64];
	const char *addrs[2] = { a0, a1 };
	fi_addr_t fa[2], again;
	CHECK_OK(test_open(&r));
	CHECK_OK(av_open(&r, FI_AV_MAP, &av));
	make_addr(a0, sizeof(a0), 10, 0x10);
	make_addr(a1, sizeof(a1), 11, 0x11);
	CHECK_RC(fi_av_insert(av, addrs, 2, fa, 0, NULL), 2);
	CHECK(fa[0] != FI_ADDR_NOTAVAIL && fa[1] != FI_ADDR_NOTAVAIL);
	CHECK(fa[0] != fa[1]);
	CHECK(fa[0] > 1 && fa[1] > 1);
	size_t len = sizeof(got);
	CHECK_OK(fi_av_lookup(av, fa[1], got, &len));
	CHECK_STR(got, a1);
	len = sizeof(got);
	CHECK_RC(fi_av_lookup(av, 0, got, &len), -FI_EINVAL);
	/* After removal and reuse of its slot, the old handle is refused. */
	CHECK_OK(fi_av_remove(av, &fa[0], 1, 0));
	CHECK_RC(fi_av_insert(av, addrs, 1, &again, 0, NULL), 1);
	CHECK(again != fa[0]);
	len = sizeof(got);
	CHECK_RC(fi_av_lookup(av, fa[0], got, &len), -FI_EINVAL);
	CHECK_RC(fi_av_remove(av, &fa[0], 1, 0), -FI_EINVAL);
	len = sizeof(got);
	CHECK_OK(fi_av_lookup(av, again, got, &len));
	CHECK_STR(got, a0);
	/* MAP handles can only be learned from the fi_addr array. */
	CHECK_RC(fi_av_insert(av, addrs, 1, NULL, 0, NULL), -FI_EINVAL);
	CHECK_OK(fi_close(&av->fid));
	return test_close(&r);
}

static int av_bad_addresses(void)
{
	struct test_res r;
	struct fid_av *av;
	char good[64], other[64];
	const char *addrs[6];
	fi_addr_t fa[6];
	int errs[6];
	CHECK_OK(test_open(&r));
	CHECK_OK(av_open(&r, FI_AV_TABLE, &av));
	make_addr(good, sizeof(good), 20, 0x20);
	make_addr(other, sizeof(other), 21, 0x21);
	addrs[0] = good;
	addrs[1] = "fi_sockaddr_in://127.0.0.1:5000";
	addrs[2] = NULL;
	addrs[3] = "fi_oxshm://1/2/ABCDEF0123456789"; /* not lowercase */
	addrs[4] = other;
	addrs[5] = "fi_oxshm://01/2/0123456789abcdef"; /* leading zero */
	for (int i = 0; i < 6; i++)
		errs[i] = -1;
	CHECK_RC(fi_av_insert(av, addrs, 6, fa, FI_SYNC_ERR, errs), 2);
	CHECK(fa[0] == 0 && fa[4] == 1);
	CHECK(fa[1] == FI_ADDR_NOTAVAIL && fa[2] == FI_ADDR_NOTAVAIL);
	CHECK(fa[3] == FI_ADDR_NOTAVAIL && fa[5] == FI_ADDR_NOTAVAIL);
	CHECK(errs[0] == 0 && errs[4] == 0);
	CHECK(errs[1] == FI_EINVAL && errs[2] == FI_EINVAL);
	CHECK(errs[3] == FI_EINVAL && errs[5] == FI_EINVAL);
	/* Without FI_SYNC_ERR, the context is left alone. */
	errs[0] = 7;
	CHECK_RC(fi_av_insert(av, &addrs[1], 1, fa, 0, errs), 0);
	CHECK(errs[0] == 7 && fa[0] == FI_ADDR_NOTAVAIL);
	/* Whole-call refusals. */
	CHECK_RC(fi_av_insert(av, addrs, 1, fa, FI_SYNC_ERR, NULL), -FI_EINVAL);
	CHECK_RC(fi_av_insert(av, NULL, 1, fa, 0, NULL), -FI_EINVAL);
	CHECK_RC(fi_av_insert(av, addrs, 1, fa, 1ULL << 3, NULL), -FI_EBADFLAGS);
	CHECK_RC(fi_av_insert(av, NULL, 0, NULL, 0, NULL), 0);
	/* Removal is all or nothing. */
	fi_addr_t mixed[2] = { 0, 17 };
	CHECK_RC(fi_av_remove(av, mixed, 2, 0), -FI_EINVAL);
	char got[64];
	size_t len = sizeof(got);
	CHECK_OK(fi_av_lookup(av, 0, got, &len));
	CHECK_STR(got, good);
	CHECK_OK(fi_close(&av->fid));
	return test_close(&r);
}

static int av_insertsvc_insertsym(void)
{
	struct test_res r;
	struct fid_av *av;
	char a[64], got[64];
	fi_addr_t fa = 99;
	CHECK_OK(test_open(&r));
	CHECK_OK(av_open(&r, FI_AV_TABLE, &av));
	make_addr(a, sizeof(a), 30, 0x30);
	/* The whole FI_ADDR_STR address as node, service NULL. */
	CHECK_RC(fi_av_insertsvc(av, a, NULL, &fa, 0, NULL), 1);
	CHECK(fa == 0);
	size_t len = sizeof(got);
	CHECK_OK(fi_av_lookup(av, 0, got, &len));
	CHECK_STR(got, a);
	/* A service nobody publishes: not inserted (no wait here), with
	 * FI_EADDRNOTAVAIL through FI_SYNC_ERR. */
	setenv("FI_OXSHM_NAME_WAIT", "0", 1);
	int err = 0;
	CHECK_RC(fi_av_insertsvc(av, "localhost", "oxtest-none", &fa, FI_SYNC_ERR, &err), 0);
	CHECK(fa == FI_ADDR_NOTAVAIL);
	CHECK(err == FI_EADDRNOTAVAIL);
	unsetenv("FI_OXSHM_NAME_WAIT");
	/* A bad service, or a node that is not this host: -FI_EINVAL. */
	CHECK_RC(fi_av_insertsvc(av, "localhost", "no spaces", &fa, 0, NULL), -FI_EINVAL);
	CHECK_RC(fi_av_insertsvc(av, "g00n13s.invalid", "5000", &fa, 0, NULL), -FI_EINVAL);
	/* A host without a service names no endpoint. */
	CHECK_RC(fi_av_insertsvc(av, "localhost", NULL, &fa, 0, NULL), 0);
	CHECK(fa == FI_ADDR_NOTAVAIL);
	CHECK_RC(fi_av_insertsym(av, "node1", 2, "5000", 2, &fa, 0, NULL), -FI_ENOSYS);
	CHECK_OK(fi_close(&av->fid));
	return test_close(&r);
}

/* Addresses from node and service: fi_getinfo reports them, an endpoint
 * opened with one publishes its service when enabled, fi_av_insert finds
 * the endpoint through it; a second endpoint cannot take a live service,
 * and one whose owner closed is free again. */
static int service_names(void)
{
	char svc[32], text[64], name[64], got[64];
	snprintf(svc, sizeof(svc), "oxtest-%d", (int)getpid());
	struct fi_info *hints = fi_allocinfo(), *src = NULL, *dst = NULL;
	CHECK(hints != NULL);
	hints->fabric_attr->prov_name = strdup("oxshm");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	CHECK_OK(fi_getinfo(FI_VERSION(1, 18), "127.0.0.1", svc, FI_SOURCE, hints, &src));
	snprintf(text, sizeof(text), "fi_oxshm://127.0.0.1:%s", svc);
	CHECK(src->src_addrlen == strlen(text) + 1);
	CHECK_STR((char *)src->src_addr, text);
	CHECK_OK(fi_getinfo(FI_VERSION(1, 18), "localhost", svc, 0, hints, &dst));
	CHECK(dst->dest_addr != NULL && dst->src_addr != NULL);
	/* Not this host: no provider can reach it. */
	struct fi_info *none = NULL;
	CHECK_RC(fi_getinfo(FI_VERSION(1, 18), "g00n13s.invalid", svc, 0, hints, &none),
		 -FI_ENODATA);

	struct res a, b;
	CHECK_OK(res_open(&a));
	struct fid_ep *server = NULL, *second = NULL;
	CHECK_OK(fi_endpoint(a.r.domain, src, &server, NULL));
	CHECK_OK(fi_ep_bind(server, &a.av->fid, 0));
	CHECK_OK(fi_enable(server));
	CHECK_OK(get_name(server, name, sizeof(name)));
	CHECK(strstr(name, svc) == NULL); /* its own endpoint name */
	/* The service is taken while the server lives. */
	CHECK_OK(fi_endpoint(a.r.domain, src, &second, NULL));
	CHECK_OK(fi_ep_bind(second, &a.av->fid, 0));
	CHECK_RC(fi_enable(second), -FI_EADDRINUSE);
	CHECK_OK(fi_close(&second->fid));

	/* Another domain resolves the destination to the server. */
	CHECK_OK(res_open(&b));
	CHECK_OK(res_enable(&b));
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	const char *addrs[1] = { dst->dest_addr };
	CHECK_RC(fi_av_insert(b.av, addrs, 1, &fa, 0, NULL), 1);
	size_t len = sizeof(got);
	CHECK_OK(fi_av_lookup(b.av, fa, got, &len));
	CHECK_STR(got, name);

	/* Closed: the service resolves no more, and is free to publish. */
	CHECK_OK(fi_close(&server->fid));
	setenv("FI_OXSHM_NAME_WAIT", "20", 1);
	CHECK_RC(fi_av_insert(b.av, addrs, 1, &fa, 0, NULL), 0);
	unsetenv("FI_OXSHM_NAME_WAIT");
	CHECK_OK(fi_endpoint(a.r.domain, src, &second, NULL));
	CHECK_OK(fi_ep_bind(second, &a.av->fid, 0));
	CHECK_OK(fi_enable(second));
	CHECK_OK(fi_close(&second->fid));

	fi_freeinfo(src);
	fi_freeinfo(dst);
	fi_freeinfo(hints);
	CHECK_OK(res_close(&b));
	return res_close(&a);
}

static int av_straddr(void)
{
	struct test_res r;
	struct fid_av *av;
	char a[64], buf[64];
	CHECK_OK(test_open(&r));
	CHECK_OK(av_open(&r, FI_AV_TABLE, &av));
	make_addr(a, sizeof(a), 40, 0x40);
	size_t len = sizeof(buf);
	CHECK(fi_av_straddr(av, a, buf, &len) == buf);
	CHECK_STR(buf, a);
	CHECK(len == strlen(a) + 1);
	/* Truncated like upstream: NUL-terminated, len says what was needed. */
	memset(buf, '#', sizeof(buf));
	len = 12;
	CHECK(fi_av_straddr(av, a, buf, &len) == buf);
	CHECK(len == strlen(a) + 1);
	CHECK(strlen(buf) == 11 && strncmp(buf, a, 11) == 0);
	CHECK(buf[12] == '#');
	/* Any string prints; it need not be inserted or valid. */
	len = sizeof(buf);
	CHECK(fi_av_straddr(av, "not-an-address", buf, &len) == buf);
	CHECK_STR(buf, "not-an-address");
	len = sizeof(buf);
	CHECK(fi_av_straddr(av, NULL, buf, &len) == NULL);
	CHECK_OK(fi_close(&av->fid));
	return test_close(&r);
}

static int av_unsupported_ops(void)
{
	struct test_res r;
	struct fid_av *av;
	struct fid_eq *eq;
	struct fi_eq_attr ea;
	CHECK_OK(test_open(&r));
	CHECK_OK(av_open(&r, FI_AV_TABLE, &av));
	memset(&ea, 0, sizeof(ea));
	CHECK_OK(fi_eq_open(r.fabric, &ea, &eq, NULL));
	CHECK(av->ops->av_set != NULL);
#if TEST_HDR_AT_LEAST(2, 0)
	fi_addr_t fa;
	CHECK_RC(fi_av_insert_auth_key(av, "k", 1, &fa, 0), -FI_ENOSYS);
	CHECK_RC(fi_av_set_user_id(av, 0, 0, 0), -FI_ENOSYS);
#endif
#if TEST_HDR_AT_LEAST(2, 7)
	CHECK(av->ops->lookup2 != NULL);
	size_t len = 0;
	CHECK_RC(fi_av_lookup2(av, 0, NULL, &len, 0, NULL), -FI_ENOSYS);
#endif
	/* fi_av_bind (deprecated, for FI_EVENT AVs). */
	CHECK_RC(av->fid.ops->bind(&av->fid, &eq->fid, 0), -FI_ENOSYS);
	CHECK_OK(fi_close(&eq->fid));
	CHECK_OK(fi_close(&av->fid));
	return test_close(&r);
}

/* ------------------------------------------------------------------ */
/* Endpoints                                                          */

static int ep_open_close(void)
{
	struct res s;
	CHECK_OK(res_open(&s));
	CHECK(s.ep->fid.fclass == FI_CLASS_EP);
	CHECK(s.ep->fid.context == &s);
	CHECK(s.ep->ops && s.ep->cm && s.ep->msg && s.ep->rma);
	CHECK(s.ep->tagged && s.ep->atomic && s.ep->collective);
	/* fi_endpoint2 with flags 0 is fi_endpoint; other flags are refused. */
	struct fid_ep *ep2 = NULL;
	CHECK_OK(fi_endpoint2(s.r.domain, s.r.info, &ep2, 0, NULL));
	CHECK_OK(fi_close(&ep2->fid));
	ep2 = NULL;
	CHECK_RC(fi_endpoint2(s.r.domain, s.r.info, &ep2, 1, NULL), -FI_EBADFLAGS);
	CHECK(ep2 == NULL);
	/* The endpoint keeps its domain open. */
	CHECK_RC(fi_close(&s.r.domain->fid), -FI_EBUSY);
	return res_close(&s);
}

static int ep_info_checked(void)
{
	struct test_res r;
	struct fid_ep *ep = NULL;
	CHECK_OK(test_open(&r));
	struct fi_info *info = fi_dupinfo(r.info);
	CHECK(info != NULL);
	info->ep_attr->type = FI_EP_MSG;
	CHECK_RC(fi_endpoint(r.domain, info, &ep, NULL), -FI_ENODATA);
	info->ep_attr->type = FI_EP_RDM;
	info->caps |= FI_COLLECTIVE; /* not offered */
	CHECK_RC(fi_endpoint(r.domain, info, &ep, NULL), -FI_ENODATA);
	info->caps = r.info->caps;
	info->addr_format = FI_SOCKADDR_IN;
	CHECK_RC(fi_endpoint(r.domain, info, &ep, NULL), -FI_ENODATA);
	info->addr_format = FI_ADDR_STR;
	CHECK(ep == NULL);
	CHECK_OK(fi_endpoint(r.domain, info, &ep, NULL));
	CHECK_OK(fi_close(&ep->fid));
	fi_freeinfo(info);
	return test_close(&r);
}

static int ep_enable_needs_av(void)
{
	struct res s;
	CHECK_OK(res_open(&s));
	CHECK_RC(fi_enable(s.ep), -FI_ENOAV);
	CHECK_OK(res_enable(&s));
	/* Enabling twice is harmless. */
	CHECK_OK(fi_enable(s.ep));
	return res_close(&s);
}

static int ep_bind_and_close_order(void)
{
	struct res s;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_av *av2;
	struct fi_eq_attr ea;
	struct fi_cq_attr ca;
	struct fi_cntr_attr na;
	CHECK_OK(res_open(&s));
	memset(&ea, 0, sizeof(ea));
	memset(&ca, 0, sizeof(ca));
	memset(&na, 0, sizeof(na));
	ca.format = FI_CQ_FORMAT_CONTEXT;
	ca.wait_obj = FI_WAIT_NONE;
	na.events = FI_CNTR_EVENTS_COMP;
	na.wait_obj = FI_WAIT_NONE;
	CHECK_OK(fi_eq_open(s.r.fabric, &ea, &eq, NULL));
	CHECK_OK(fi_cq_open(s.r.domain, &ca, &cq, NULL));
	CHECK_OK(fi_cntr_open(s.r.domain, &na, &cntr, NULL));
	CHECK_OK(av_open(&s.r, FI_AV_MAP, &av2));

	/* Flags per object kind. */
	CHECK_RC(fi_ep_bind(s.ep, &s.av->fid, FI_RECV), -FI_EBADFLAGS);
	CHECK_RC(fi_ep_bind(s.ep, &eq->fid, FI_TRANSMIT), -FI_EBADFLAGS);
	CHECK_RC(fi_ep_bind(s.ep, &cq->fid, 0), -FI_EBADFLAGS);
	CHECK_RC(fi_ep_bind(s.ep, &cq->fid, FI_TRANSMIT | FI_READ), -FI_EBADFLAGS);
	/* A counter bound for no event binds nothing (as upstream): it is not
	 * held, so it closes while the endpoint is open. */
	{
		struct fid_cntr *idle = NULL;
		CHECK_OK(fi_cntr_open(s.r.domain, &na, &idle, NULL));
		CHECK_OK(fi_ep_bind(s.ep, &idle->fid, 0));
		CHECK_OK(fi_close(&idle->fid));
	}
	CHECK_RC(fi_ep_bind(s.ep, &cntr->fid, FI_SEND | FI_TAGGED), -FI_EBADFLAGS);
	/* Remote counters need FI_RMA_EVENT: an endpoint opened without it
	 * refuses them. */
	{
		struct fi_info *plain = fi_dupinfo(s.r.info);
		struct fid_ep *ep2 = NULL;
		CHECK(plain != NULL);
		plain->caps &= ~(uint64_t)FI_RMA_EVENT;
		CHECK_OK(fi_endpoint(s.r.domain, plain, &ep2, NULL));
		CHECK_RC(fi_ep_bind(ep2, &cntr->fid, FI_REMOTE_WRITE), -FI_EINVAL);
		CHECK_OK(fi_close(&ep2->fid));
		fi_freeinfo(plain);
	}

	CHECK_OK(fi_ep_bind(s.ep, &s.av->fid, 0));
	CHECK_RC(fi_ep_bind(s.ep, &av2->fid, 0), -FI_EINVAL); /* one AV */
	CHECK_OK(fi_ep_bind(s.ep, &eq->fid, 0));
	CHECK_OK(fi_ep_bind(s.ep, &cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION));
	CHECK_RC(fi_ep_bind(s.ep, &cq->fid, FI_RECV), -FI_EINVAL); /* one per direction */
	CHECK_OK(fi_ep_bind(s.ep, &cntr->fid, FI_SEND | FI_RECV | FI_READ | FI_WRITE));
	CHECK_OK(fi_enable(s.ep));
	CHECK_RC(fi_ep_bind(s.ep, &av2->fid, 0), -FI_EOPBADSTATE);

	/* What the endpoint is bound to stays open while it is. */
	CHECK_RC(fi_close(&s.av->fid), -FI_EBUSY);
	CHECK_RC(fi_close(&eq->fid), -FI_EBUSY);
	CHECK_RC(fi_close(&cq->fid), -FI_EBUSY);
	CHECK_RC(fi_close(&cntr->fid), -FI_EBUSY);
	CHECK_RC(fi_close(&s.r.domain->fid), -FI_EBUSY);
	CHECK_OK(fi_close(&av2->fid));
	CHECK_OK(fi_close(&s.ep->fid));
	s.ep = NULL;
	CHECK_OK(fi_close(&cntr->fid));
	CHECK_OK(fi_close(&cq->fid));
	CHECK_OK(fi_close(&eq->fid));
	return res_close(&s);
}

static int ep_getname_setname(void)
{
	struct res s;
	struct fid_ep *other;
	char name[64], mine[64], got[64], prefix[32];
	CHECK_OK(res_open(&s));
	CHECK_OK(fi_endpoint(s.r.domain, s.r.info, &other, NULL));
	/* Size query, then the name. */
	size_t len = 0;
	CHECK_RC(fi_getname(&s.ep->fid, NULL, &len), -FI_ETOOSMALL);
	CHECK(len > 0 && len <= 64);
	size_t need = len;
	len = need - 1;
	memset(name, '#', sizeof(name));
	CHECK_RC(fi_getname(&s.ep->fid, name, &len), -FI_ETOOSMALL);
	CHECK(len == need && name[0] == '#');
	CHECK_OK(get_name(s.ep, name, sizeof(name)));
	CHECK(strlen(name) + 1 == need);
	snprintf(prefix, sizeof(prefix), "fi_oxshm://%d/", (int)getpid());
	CHECK(strncmp(name, prefix, strlen(prefix)) == 0);
	/* Two endpoints, two names. */
	CHECK_OK(get_name(other, got, sizeof(got)));
	CHECK(strcmp(name, got) != 0);

	/* A name of this process, not in use: accepted (with or without NUL). */
	make_addr(mine, sizeof(mine), 4000000000u, 0x5eed);
	CHECK_OK(fi_setname(&s.ep->fid, mine, strlen(mine)));
	CHECK_OK(get_name(s.ep, got, sizeof(got)));
	CHECK_STR(got, mine);
	CHECK_OK(fi_setname(&s.ep->fid, mine, strlen(mine) + 1));
	/* In use by another endpoint. */
	CHECK_RC(fi_setname(&other->fid, mine, strlen(mine) + 1), -FI_EADDRINUSE);
	/* Not an oxshm address, or another process's. */
	CHECK_RC(fi_setname(&s.ep->fid, "fi_oxshm://x:no spaces", 23), -FI_EINVAL);
	CHECK_RC(fi_setname(&s.ep->fid, "fi_oxshm://1/2", 15), -FI_EINVAL);
	char foreign[64];
	snprintf(foreign, sizeof(foreign), "fi_oxshm://%d/1/0000000000000001",
		 getpid() == 1 ? 2 : 1);
	CHECK_RC(fi_setname(&s.ep->fid, foreign, strlen(foreign) + 1), -FI_EINVAL);
	CHECK_OK(get_name(s.ep, got, sizeof(got)));
	CHECK_STR(got, mine);

	/* A peer inserts the name; lookup gives it back. */
	const char *addrs[1] = { got };
	fi_addr_t fa;
	CHECK_RC(fi_av_insert(s.av, addrs, 1, &fa, 0, NULL), 1);
	char back[64];
	len = sizeof(back);
	CHECK_OK(fi_av_lookup(s.av, fa, back, &len));
	CHECK_STR(back, mine);

	/* After fi_enable the name is fixed. */
	CHECK_OK(res_enable(&s));
	CHECK_RC(fi_setname(&s.ep->fid, name, strlen(name) + 1), -FI_EOPBADSTATE);
	/* RDM endpoints have no peer. */
	len = sizeof(got);
	CHECK_RC(fi_getpeer(s.ep, got, &len), -FI_ENOSYS);
	/* Closing frees the name for reuse. */
	CHECK_OK(fi_close(&s.ep->fid));
	s.ep = NULL;
	CHECK_OK(fi_setname(&other->fid, mine, strlen(mine) + 1));
	CHECK_OK(fi_close(&other->fid));
	return res_close(&s);
}

static int ep_options(void)
{
	struct res s;
	size_t v = 0, len = sizeof(v);
	int p2p = -1;
	size_t plen = sizeof(p2p);
	CHECK_OK(res_open(&s));
	CHECK_OK(fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
	CHECK(len == sizeof(size_t) && v > 0);
	size_t want = 4096;
	CHECK_OK(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &want, sizeof(want)));
	CHECK_OK(fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
	CHECK(v == 4096);
	CHECK_RC(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &want, 2),
		 -FI_EINVAL);
	len = 2;
	CHECK_RC(fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len),
		 -FI_ETOOSMALL);
	CHECK(len == sizeof(size_t));
	/* No connection data on RDM endpoints; the option is read only. */
	len = sizeof(v);
	CHECK_OK(fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len));
	CHECK(v == 0);
	CHECK_RC(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, sizeof(v)),
		 -FI_EOPNOTSUPP);
	/* Peer-to-peer for device memory. */
	CHECK_OK(fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, &p2p, &plen));
	CHECK(p2p == FI_HMEM_P2P_ENABLED);
	p2p = FI_HMEM_P2P_DISABLED;
	CHECK_OK(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, &p2p, sizeof(p2p)));
	p2p = FI_HMEM_P2P_REQUIRED;
	CHECK_RC(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, &p2p, sizeof(p2p)),
		 -FI_EOPNOTSUPP);
	p2p = 99;
	CHECK_RC(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, &p2p, sizeof(p2p)),
		 -FI_EINVAL);
	CHECK_OK(fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_FI_HMEM_P2P, &p2p, &plen));
	CHECK(p2p == FI_HMEM_P2P_DISABLED);
#if TEST_HDR_AT_LEAST(1, 18)
	bool no = false;
	CHECK_OK(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CUDA_API_PERMITTED, &no,
			   sizeof(no)));
#endif
#if TEST_HDR_AT_LEAST(2, 0)
	len = sizeof(v);
	CHECK_OK(fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MAX_MSG_SIZE, &v, &len));
	CHECK(v == s.r.info->ep_attr->max_msg_size);
	want = 1024;
	CHECK_OK(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MAX_MSG_SIZE, &want, sizeof(want)));
	CHECK_OK(fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MAX_MSG_SIZE, &v, &len));
	CHECK(v == 1024);
	want = s.r.info->ep_attr->max_msg_size + 1;
	CHECK_RC(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MAX_MSG_SIZE, &want, sizeof(want)),
		 -FI_EINVAL);
#endif
	/* Unknown options and levels. */
	len = sizeof(v);
	CHECK_RC(fi_getopt(&s.ep->fid, FI_OPT_ENDPOINT, 12345, &v, &len), -FI_ENOPROTOOPT);
	CHECK_RC(fi_getopt(&s.ep->fid, 7, FI_OPT_MIN_MULTI_RECV, &v, &len), -FI_ENOPROTOOPT);
	CHECK_RC(fi_setopt(&s.ep->fid, FI_OPT_ENDPOINT, FI_OPT_BUFFERED_LIMIT, &v, sizeof(v)),
		 -FI_ENOPROTOOPT);
	return res_close(&s);
}

static int ep_ops_flags(void)
{
	struct res s;
	uint64_t f;
	CHECK_OK(res_open(&s));
	f = FI_TRANSMIT;
	CHECK_OK(fi_control(&s.ep->fid, FI_GETOPSFLAG, &f));
	CHECK(f == s.r.info->tx_attr->op_flags);
	f = FI_TRANSMIT | FI_COMPLETION | FI_DELIVERY_COMPLETE;
	CHECK_OK(fi_control(&s.ep->fid, FI_SETOPSFLAG, &f));
	f = FI_TRANSMIT;
	CHECK_OK(fi_control(&s.ep->fid, FI_GETOPSFLAG, &f));
	CHECK(f == (FI_COMPLETION | FI_DELIVERY_COMPLETE));
	f = FI_RECV | FI_MULTI_RECV;
	CHECK_OK(fi_control(&s.ep->fid, FI_SETOPSFLAG, &f));
	f = FI_RECV;
	CHECK_OK(fi_control(&s.ep->fid, FI_GETOPSFLAG, &f));
	CHECK(f == FI_MULTI_RECV);
	f = FI_RECV | FI_INJECT;
	CHECK_RC(fi_control(&s.ep->fid, FI_SETOPSFLAG, &f), -FI_EBADFLAGS);
	f = FI_RECV | FI_TRANSMIT;
	CHECK_RC(fi_control(&s.ep->fid, FI_GETOPSFLAG, &f), -FI_EINVAL);
	f = 0;
	CHECK_RC(fi_control(&s.ep->fid, FI_GETOPSFLAG, &f), -FI_EINVAL);
	CHECK_RC(fi_control(&s.ep->fid, FI_GETOPSFLAG, NULL), -FI_EINVAL);
	return res_close(&s);
}

/* Data transfers on one endpoint: a destination that is not in the AV is
 * refused at the call (nothing posted); collectives and connection
 * management are not offered. */
static int ep_data_ops_checked(void)
{
	struct res s;
	char buf[16] = { 0 };
	struct iovec iov[5] = { { buf, 8 }, { buf, 8 }, { buf, 8 }, { buf, 8 }, { buf, 8 } };
	uint64_t key = 0;
	CHECK_OK(res_open(&s));
	/* Before fi_enable nothing can be posted. */
	CHECK_RC(fi_send(s.ep, buf, sizeof(buf), NULL, 0, NULL), -FI_EOPBADSTATE);
	CHECK_OK(res_enable(&s));
	CHECK_RC(fi_send(s.ep, buf, sizeof(buf), NULL, 0, NULL), -FI_EINVAL);
	CHECK_RC(fi_sendv(s.ep, iov, NULL, 1, 0, NULL), -FI_EINVAL);
	CHECK_RC(fi_sendv(s.ep, iov, NULL, 5, 0, NULL), -FI_EINVAL); /* iov_limit 4 */
	CHECK_RC(fi_inject(s.ep, buf, 8, 0), -FI_EINVAL);
	CHECK_RC(fi_senddata(s.ep, buf, 8, NULL, 1, 0, NULL), -FI_EINVAL);
	CHECK_RC(fi_tsend(s.ep, buf, 8, NULL, 0, 5, NULL), -FI_EINVAL);
	CHECK_RC(fi_write(s.ep, buf, 8, NULL, 0, 0, key, NULL), -FI_EINVAL);
	CHECK_RC(fi_read(s.ep, buf, 8, NULL, 0, 0, key, NULL), -FI_EINVAL);
	CHECK_RC(fi_inject_write(s.ep, buf, 8, 0, 0, key), -FI_EINVAL);
	CHECK_RC(fi_atomic(s.ep, buf, 1, NULL, 0, 0, key, FI_UINT64, FI_SUM, NULL), -FI_EINVAL);
	CHECK_RC(fi_fetch_atomic(s.ep, buf, 1, NULL, buf + 8, NULL, 0, 0, key, FI_UINT64, FI_SUM,
				 NULL),
		 -FI_EINVAL);
	/* Past the inject size. */
	static char big[1 << 16];
	CHECK_RC(fi_inject_write(s.ep, big, sizeof(big), 0, 0, key), -FI_EMSGSIZE);
	/* A receive needs no peer: it is posted (and stays pending). */
	CHECK_OK(fi_trecv(s.ep, buf, 8, NULL, FI_ADDR_UNSPEC, 5, 0, NULL));
	CHECK_RC(s.ep->ops->rx_size_left(s.ep), s.r.info->rx_attr->size - 1);
	size_t count = 0;
	CHECK_OK(fi_atomicvalid(s.ep, FI_UINT64, FI_SUM, &count));
	CHECK(count > 0);
	CHECK_RC(fi_atomicvalid(s.ep, FI_FLOAT, FI_BOR, &count), -FI_EOPNOTSUPP);
	CHECK_RC(fi_barrier(s.ep, 0, NULL), -FI_ENOSYS);
	CHECK_OK(fi_cancel(&s.ep->fid, NULL));
	CHECK_RC(s.ep->ops->tx_size_left(s.ep), s.r.info->tx_attr->size);
	/* Connection management belongs to FI_EP_MSG. */
	CHECK_RC(fi_connect(s.ep, "x", NULL, 0), -FI_ENOSYS);
	CHECK_RC(fi_shutdown(s.ep, 0), -FI_ENOSYS);
	return res_close(&s);
}

/* fi_cancel of a posted receive: it completes with FI_ECANCELED (its
 * context, FI_RECV), leaves the queue, and cancelling again does nothing. */
static int ep_cancel_receive(void)
{
	struct res s;
	struct fid_cq *cq = NULL;
	struct fi_cq_attr ca;
	char buf[16];
	int ctx;
	memset(&ca, 0, sizeof(ca));
	ca.format = FI_CQ_FORMAT_CONTEXT;
	CHECK_OK(res_open(&s));
	CHECK_OK(fi_cq_open(s.r.domain, &ca, &cq, NULL));
	CHECK_OK(fi_ep_bind(s.ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK_OK(res_enable(&s));
	CHECK_OK(fi_recv(s.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, &ctx));
	CHECK_RC(s.ep->ops->rx_size_left(s.ep), s.r.info->rx_attr->size - 1);
	CHECK_OK(fi_cancel(&s.ep->fid, &ctx));
	struct fi_cq_entry e;
	CHECK_RC(fi_cq_read(cq, &e, 1), -FI_EAVAIL);
	struct fi_cq_err_entry err;
	memset(&err, 0, sizeof(err));
	CHECK_RC(fi_cq_readerr(cq, &err, 0), 1);
	CHECK(err.err == FI_ECANCELED);
	CHECK(err.op_context == &ctx);
	CHECK(err.flags & FI_RECV);
	CHECK_RC(s.ep->ops->rx_size_left(s.ep), s.r.info->rx_attr->size);
	CHECK_OK(fi_cancel(&s.ep->fid, &ctx));
	CHECK_RC(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
	CHECK_OK(fi_close(&s.ep->fid));
	s.ep = NULL;
	CHECK_OK(fi_close(&cq->fid));
	return res_close(&s);
}

/* ------------------------------------------------------------------ */
/* Bad input: -FI_EINVAL (or the documented code) and a warning line  */

static int bad_input_logged(void)
{
	struct res s;
	struct fid_ep *none = NULL;
	CHECK_OK(res_open(&s));
	/* NULL or wrong-class objects. */
	CHECK_REFUSED(fi_ep_bind(s.ep, NULL, 0), -FI_EINVAL);
	CHECK_REFUSED(fi_ep_bind(s.ep, &s.r.domain->fid, 0), -FI_EINVAL);
	CHECK_REFUSED(fi_ep_bind(s.ep, &s.r.fabric->fid, 0), -FI_EINVAL);
	CHECK_REFUSED(fi_ep_bind(s.ep, &s.av->fid, FI_RECV), -FI_EBADFLAGS);
	CHECK_REFUSED(fi_endpoint(s.r.domain, NULL, &none, NULL), -FI_EINVAL);
	CHECK_REFUSED(fi_endpoint(s.r.domain, s.r.info, NULL, NULL), -FI_EINVAL);
	CHECK(none == NULL);
	CHECK_REFUSED(fi_enable(s.ep), -FI_ENOAV);
	CHECK_REFUSED(fi_av_insert(s.av, NULL, 1, NULL, 0, NULL), -FI_EINVAL);
	size_t len = 8;
	char buf[8];
	CHECK_REFUSED(fi_av_lookup(s.av, 1234, buf, &len), -FI_EINVAL);
	CHECK_REFUSED(fi_av_lookup(s.av, 0, buf, NULL), -FI_EINVAL);
	fi_addr_t bogus = 77;
	CHECK_REFUSED(fi_av_remove(s.av, &bogus, 1, 0), -FI_EINVAL);
	CHECK_REFUSED(fi_getname(&s.ep->fid, buf, NULL), -FI_EINVAL);
	CHECK_REFUSED(fi_setname(&s.ep->fid, NULL, 10), -FI_EINVAL);
	CHECK_REFUSED(fi_setname(&s.ep->fid, "garbage", 8), -FI_EINVAL);
	/* A bad address among good ones is reported, not silently dropped. */
	const char *addrs[1] = { "fi_oxshm://bad" };
	fi_addr_t fa;
	CHECK_REFUSED(fi_av_insert(s.av, addrs, 1, &fa, 0, NULL), 0);
	CHECK(fa == FI_ADDR_NOTAVAIL);
	CHECK_REFUSED(fi_send(s.ep, buf, 1, NULL, 0, NULL), -FI_EOPBADSTATE);
	return res_close(&s);
}

static const struct test_case cases[] = {
	CASE(av_open_types),
	CASE(av_open_bad_attr),
	CASE(av_insert_names_inline),
	CASE(av_table_insert_lookup_remove),
	CASE(av_map_handles),
	CASE(av_bad_addresses),
	CASE(av_insertsvc_insertsym),
	CASE(service_names),
	CASE(av_straddr),
	CASE(av_unsupported_ops),
	CASE(ep_open_close),
	CASE(ep_info_checked),
	CASE(ep_enable_needs_av),
	CASE(ep_bind_and_close_order),
	CASE(ep_getname_setname),
	CASE(ep_options),
	CASE(ep_ops_flags),
	CASE(ep_data_ops_checked),
	CASE(ep_cancel_receive),
	CASE_ENV(bad_input_logged, WARN),
};

TEST_MAIN(cases)
