#!/usr/bin/env bash
# Install test: `make install` into a temporary prefix lays out lib/,
# include/rdma/ and lib/pkgconfig/libfabric.pc like upstream, and a consumer
# built purely from `pkg-config --cflags --libs libfabric` runs on it.
set -euo pipefail
trap 'echo "install.sh: stopped at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."

MAKE=${MAKE:-make}
CC=${CC:-cc}
CXX=${CXX:-c++}
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

passed=0 failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then pass; else fail "$what"; fi; }

$MAKE -s install PREFIX="$prefix" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; exit 1; }

check "lib/libfabric.so.1 installed" test -f "$prefix/lib/libfabric.so.1"
check "lib/liboxfabric-shim.so installed" test -f "$prefix/lib/liboxfabric-shim.so"
check "lib/libfabric.so -> libfabric.so.1" \
	test "$(readlink "$prefix/lib/libfabric.so")" = libfabric.so.1
check "lib/pkgconfig/libfabric.pc installed" test -f "$prefix/lib/pkgconfig/libfabric.pc"
for h in include/rdma/*.h; do
	check "$h installed unchanged" cmp -s "$h" "$prefix/$h"
done

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# Nothing from the host's own libfabric.pc may leak in.
export PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig
check "pkg-config finds libfabric" pkg-config --exists libfabric
check "pkg-config version is $VERSION" test "$(pkg-config --modversion libfabric)" = "$VERSION"
cflags=$(pkg-config --cflags libfabric | xargs) libs=$(pkg-config --libs libfabric | xargs)
check "--cflags names the prefix ($cflags)" test "$cflags" = "-I$prefix/include"
check "--libs names the prefix ($libs)" test "$libs" = "-L$prefix/lib -lfabric"

cat >"$tmp/consumer.c" <<'EOF'
/* A libfabric program that knows nothing of oxfabric. */
#include <stdio.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#define TRY(call) do { int rc_ = (call); if (rc_) { \
	fprintf(stderr, "%s: %s\n", #call, fi_strerror(-rc_)); return 1; } } while (0)

int main(void)
{
	static char buf[4096];
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_mr *mr;

	if (!hints)
		return 1;
	hints->fabric_attr->prov_name = strdup("oxshm");
	TRY(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &info));
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
	TRY(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_READ, 0, 1, 0, &mr, NULL));
	printf("headers %d.%d provider %s\n", FI_MAJOR_VERSION, FI_MINOR_VERSION,
	       info->fabric_attr->prov_name);
	TRY(fi_close(&mr->fid));
	TRY(fi_close(&domain->fid));
	TRY(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}
EOF
# The headers' FI_MAJOR/MINOR_VERSION come from Cargo.toml's version.
want="headers ${VERSION%.*} provider oxshm"

# consumer LANG COMPILER SRC: build from pkg-config alone, run, check output.
consumer() {
	local lang=$1 cc=$2 src=$3 bin=$tmp/consumer-$1
	# shellcheck disable=SC2086 # pkg-config output is a word list
	if ! $cc -Wall -Wextra -Werror -o "$bin" "$src" $cflags $libs 2>"$tmp/cc.log"; then
		fail "$lang consumer does not build from pkg-config:"; cat "$tmp/cc.log"; return
	fi
	pass
	local out
	out=$(LD_LIBRARY_PATH=$prefix/lib "$bin" 2>&1) || true
	check "$lang consumer runs and finds oxshm (got: $out)" test "$out" = "$want"
	check "$lang consumer loads the installed library" \
		sh -c "LD_LIBRARY_PATH='$prefix/lib' ldd '$bin' | grep -q 'libfabric.so.1 => $prefix/lib/libfabric.so.1 '"
}

consumer c "$CC" "$tmp/consumer.c"
if command -v "$CXX" >/dev/null; then
	cp "$tmp/consumer.c" "$tmp/consumer.cc"
	consumer c++ "$CXX" "$tmp/consumer.cc"
fi

# A second prefix: the .pc must follow PREFIX, not an earlier install's.
prefix2=$tmp/second
$MAKE -s install PREFIX="$prefix2" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; exit 1; }
check "a second install's libfabric.pc names its own prefix" \
	grep -qx "prefix=$prefix2" "$prefix2/lib/pkgconfig/libfabric.pc"

# DESTDIR stages the same layout under a root.
$MAKE -s install DESTDIR="$tmp/stage" PREFIX=/opt/oxf >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; exit 1; }
check "DESTDIR install stages lib/ and include/" \
	test -f "$tmp/stage/opt/oxf/lib/libfabric.so.1" -a -f "$tmp/stage/opt/oxf/include/rdma/fabric.h"
check "DESTDIR install's .pc names PREFIX, not the stage" \
	grep -qx "prefix=/opt/oxf" "$tmp/stage/opt/oxf/lib/pkgconfig/libfabric.pc"

echo "install: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
