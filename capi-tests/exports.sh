#!/usr/bin/env bash
# Export test: the dynamic symbol table of LIB, with versions, is exactly
# libfabric 2.7's global API on upstream's version nodes plus, on
# FABRIC_OX_1.0, the exported forms of every fi_* function that
# include/rdma/*.h declares; nothing else (no Rust internals).
# Usage: capi-tests/exports.sh build/libfabric.so.1
set -euo pipefail
trap 'echo "exports.sh: stopped at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."

LIB=${1:?usage: exports.sh LIB}
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# libfabric's global API: name, then every version node; the last is the default.
core() {
	local v
	for f in fi_getinfo fi_freeinfo fi_dupinfo; do
		for v in 1.0 1.1 1.2 1.3 1.7 1.8 1.9; do echo "$f@FABRIC_$v"; done
		echo "$f@@FABRIC_1.10"
	done
	echo fi_fabric@FABRIC_1.0
	echo fi_fabric@@FABRIC_1.1
	echo fi_fabric2@@FABRIC_1.8
	echo fi_tostr_r@@FABRIC_1.4
	echo fi_open@@FABRIC_1.5
	echo fi_log_ready@@FABRIC_1.6
	for f in fi_version fi_strerror fi_tostr fi_log_enabled fi_log fi_param_define \
		fi_param_get fi_getparams fi_freeparams; do
		echo "$f@@FABRIC_1.0"
	done
}

# fi_* functions at file scope of our headers, from the preprocessed text:
# strings dropped, bodies turned into statement ends, then each statement
# that is not a typedef or function pointer yields its first `fi_name(`,
# tagged D (declared) or I (static inline, defined in the header).
functions() {
	{ for h in include/rdma/*.h; do echo "#include <rdma/${h#include/rdma/}>"; done; } |
		$CC -E -P -I include -x c - |
		perl -0777 -ne '
			s/"(?:\\.|[^"\\])*"//g;
			1 while s/\{[^{}]*\}/;/g;
			for (split /;/) {
				next if /\btypedef\b/ || (/\(\s*\*/ && !/\bfi_\w+\s*\(/);
				next unless /^[^(]*\b(fi_\w+)\s*\(/;
				my $name = $1;
				print /\bstatic\b/ ? "I" : "D", " $name\n";
			}' | sort -u
}

core | sort >"$tmp/core"
functions >"$tmp/functions"
sed -n 's/^D //p' "$tmp/functions" >"$tmp/declared"
sed 's/@.*//' "$tmp/core" | sort -u >"$tmp/core-names"
comm -23 "$tmp/declared" "$tmp/core-names" | sed 's/$/@@FABRIC_OX_1.0/' >"$tmp/ox"
sort "$tmp/core" "$tmp/ox" >"$tmp/expected"

# Defined dynamic symbols as name@VER / name@@VER; version-node definitions
# (ABS objects named after their node) are listed apart.
readelf --dyn-syms -W "$LIB" | awk 'NR > 3 && $7 != "UND" && NF >= 8' >"$tmp/dynsyms"
awk '$7 == "ABS" && $4 == "OBJECT" && $8 ~ /^FABRIC_/ { print $8 }' "$tmp/dynsyms" | sort -u >"$tmp/nodes"
awk '!($7 == "ABS" && $4 == "OBJECT" && $8 ~ /^FABRIC_/) {
	print $8 ($4 == "FUNC" && ($5 == "GLOBAL" || $5 == "WEAK") ? "" : "  [" $4 " " $5 "]")
}' "$tmp/dynsyms" | sort >"$tmp/actual"

passed=0 failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }

soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libfabric.so.1 ] && pass || fail "SONAME is '$soname', want libfabric.so.1"

for n in 1.0 1.1 1.2 1.3 1.4 1.5 1.6 1.7 1.8 1.9 1.10 OX_1.0; do
	grep -qx "FABRIC_$n" "$tmp/nodes" && pass || fail "version node FABRIC_$n not defined"
done
extra_nodes=$(grep -vxE 'FABRIC_1\.([0-9]|10)|FABRIC_OX_1\.0' "$tmp/nodes" || true)
[ -z "$extra_nodes" ] && pass || fail "unexpected version nodes: $extra_nodes"

while read -r s; do
	grep -qxF "$s" "$tmp/actual" && pass || fail "missing export: $s"
done <"$tmp/expected"
while read -r s; do
	grep -qxF "$s" "$tmp/expected" || fail "unexpected export: $s"
done <"$tmp/actual"

# Every declared function is exported under some version.
while read -r f; do
	grep -qE "^$f@" "$tmp/actual" && pass || fail "declared in include/rdma but not exported: $f"
done <"$tmp/declared"
# Static inline helpers (fi_allocinfo, fi_tag_mpi, fi_tc_dscp_set: inline
# upstream too, touching no object) are listed, not failed.
inl=$(sed -n 's/^I //p' "$tmp/functions" | tr '\n' ' ')
[ -z "$inl" ] || echo "note: static inline in include/rdma (not exported): $inl"

echo "exports: $(wc -l <"$tmp/expected") expected symbols," \
	"$(wc -l <"$tmp/declared") functions declared in include/rdma"
echo "exports: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
