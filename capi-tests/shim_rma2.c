/*
 * shim_rma2.c: two processes, possibly on two hosts, one writes 1 MiB into
 * the other's registered buffer with fi_write, reads it back with fi_read
 * into a third buffer, and both sides verify every byte. For
 * capi-tests/shim.sh, which runs it between two network namespaces over
 * Debian's tcp;ofi_rxm with liboxfabric-shim.so preloaded on both sides.
 *
 *   shim_rma2 server <local-ip> <port>
 *   shim_rma2 client <local-ip> <server-ip> <port>
 *
 * The provider is $PROV (default "tcp;ofi_rxm"). Endpoint names, the
 * target's address and key travel over a TCP socket on <port>. The
 * registrations follow the mr_mode the provider answers (FI_MR_LOCAL descs,
 * FI_MR_VIRT_ADDR or offsets, FI_MR_ENDPOINT binds, provider keys).
 * Transfers larger than the endpoint's max_msg_size are split.
 * Exit status 0 only if both sides saw every byte right; each side prints
 * one line, "rma2 <role> ok <checksum>".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LEN (1u << 20)

static void die(const char *what, int rc)
{
	fprintf(stderr, "shim_rma2: %s: %d (%s)\n", what, rc, fi_strerror(rc < 0 ? -rc : rc));
	exit(1);
}

#define CHECK(call)                           \
	do {                                  \
		int rc_ = (call);             \
		if (rc_)                      \
			die(#call, rc_);      \
	} while (0)

static void xfer(int s, void *p, size_t n, int out)
{
	char *c = p;
	while (n) {
		ssize_t r = out ? write(s, c, n) : read(s, c, n);
		if (r <= 0) {
			perror(out ? "oob write" : "oob read");
			exit(1);
		}
		c += r;
		n -= (size_t)r;
	}
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 131 + (i >> 9) + 7);
}

static uint64_t checksum(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

struct peer_info {
	uint64_t addr, key;
	uint32_t namelen;
	char name[256];
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;

static struct fid_mr *reg(void *buf, uint64_t access, uint64_t key)
{
	struct fid_mr *mr;
	CHECK(fi_mr_reg(domain, buf, LEN, access, 0, key, 0, &mr, NULL));
	if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		CHECK(fi_mr_bind(mr, &ep->fid, 0));
		CHECK(fi_mr_enable(mr));
	}
	return mr;
}

static void wait_cq(int n)
{
	struct fi_cq_entry e;
	while (n > 0) {
		ssize_t r = fi_cq_read(cq, &e, 1);
		if (r == 1) {
			n--;
		} else if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};
			fi_cq_readerr(cq, &err, 0);
			die("completion error", -err.err);
		} else if (r != -FI_EAGAIN) {
			die("fi_cq_read", (int)r);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    (!strcmp(argv[1], "client") && argc < 5)) {
		fprintf(stderr, "usage: shim_rma2 server <local-ip> <port> | client <local-ip> <server-ip> <port>\n");
		return 2;
	}
	int server = !strcmp(argv[1], "server");
	const char *prov = getenv("PROV") ? getenv("PROV") : "tcp;ofi_rxm";
	int port = atoi(argv[server ? 3 : 4]);

	struct fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_RMA | FI_MSG;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	CHECK(fi_getinfo(FI_VERSION(1, 17), argv[2], NULL, FI_SOURCE, hints, &info));
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .size = 64};
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_enable(ep));

	/* Out of band: the server listens, the client connects. */
	int s;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (server) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		inet_pton(AF_INET, argv[2], &sa.sin_addr);
		if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1)) {
			perror("oob listen");
			return 1;
		}
		s = accept(l, NULL, NULL);
		close(l);
	} else {
		s = socket(AF_INET, SOCK_STREAM, 0);
		inet_pton(AF_INET, argv[3], &sa.sin_addr);
		int tries = 0;
		while (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
			if (++tries > 100) {
				perror("oob connect");
				return 1;
			}
			usleep(100000);
			close(s);
			s = socket(AF_INET, SOCK_STREAM, 0);
		}
	}
	if (s < 0) {
		perror("oob");
		return 1;
	}

	unsigned char *buf = aligned_alloc(4096, LEN), *back = aligned_alloc(4096, LEN);
	struct peer_info me = {0}, them;
	size_t namelen = sizeof(me.name);
	CHECK(fi_getname(&ep->fid, me.name, &namelen));
	me.namelen = (uint32_t)namelen;
	struct fid_mr *mr, *mr_back = NULL;
	if (server) {
		memset(buf, 0, LEN);
		mr = reg(buf, FI_REMOTE_WRITE | FI_REMOTE_READ, 0x2a);
		me.addr = info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uintptr_t)buf : 0;
		me.key = fi_mr_key(mr);
	} else {
		for (size_t i = 0; i < LEN; i++)
			buf[i] = pattern(i);
		memset(back, 0, LEN);
		mr = reg(buf, FI_WRITE, 0x2b);
		mr_back = reg(back, FI_READ, 0x2c);
	}
	xfer(s, &me, sizeof(me), 1);
	xfer(s, &them, sizeof(them), 0);
	fi_addr_t peer;
	if (fi_av_insert(av, them.name, 1, &peer, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);

	unsigned char verdict = 1, theirs = 1;
	uint64_t sum;
	if (server) {
		/* Progress the endpoint until the client says it is done. */
		struct pollfd p = {.fd = s, .events = POLLIN};
		struct fi_cq_entry e;
		while (poll(&p, 1, 0) == 0)
			(void)fi_cq_read(cq, &e, 1);
		xfer(s, &theirs, 1, 0);
		verdict = 0;
		for (size_t i = 0; i < LEN; i++)
			verdict |= buf[i] != pattern(i);
		xfer(s, &verdict, 1, 1);
		sum = checksum(buf, LEN);
	} else {
		size_t chunk = info->ep_attr->max_msg_size < LEN ? info->ep_attr->max_msg_size : LEN;
		struct fi_context ctx[2];
		for (size_t off = 0; off < LEN; off += chunk) {
			size_t len = LEN - off < chunk ? LEN - off : chunk;
			ssize_t rc;
			while ((rc = fi_write(ep, buf + off, len, fi_mr_desc(mr), peer, them.addr + off,
					      them.key, &ctx[0])) == -FI_EAGAIN)
				(void)fi_cq_read(cq, NULL, 0);
			if (rc)
				die("fi_write", (int)rc);
			wait_cq(1);
		}
		for (size_t off = 0; off < LEN; off += chunk) {
			size_t len = LEN - off < chunk ? LEN - off : chunk;
			ssize_t rc;
			while ((rc = fi_read(ep, back + off, len, fi_mr_desc(mr_back), peer,
					     them.addr + off, them.key, &ctx[1])) == -FI_EAGAIN)
				(void)fi_cq_read(cq, NULL, 0);
			if (rc)
				die("fi_read", (int)rc);
			wait_cq(1);
		}
		verdict = memcmp(buf, back, LEN) != 0;
		xfer(s, &verdict, 1, 1);
		xfer(s, &theirs, 1, 0);
		sum = checksum(back, LEN);
	}
	printf("rma2 %s %s %016llx\n", server ? "server" : "client",
	       verdict || theirs ? "BAD" : "ok", (unsigned long long)sum);

	close(s);
	CHECK(fi_close(&mr->fid));
	if (mr_back)
		CHECK(fi_close(&mr_back->fid));
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&cq->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(buf);
	free(back);
	return verdict || theirs;
}
