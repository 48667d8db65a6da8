#!/usr/bin/env bash
# The registration benchmark, oxfabric against upstream (`make bench`).
#
# bench/mr_bench.c is built ONCE, against Debian's libfabric 1.17 headers and
# linked against Debian's libfabric.so.1, so it is an upstream program. The
# same binary then runs on
#   ours       oxfabric: LD_LIBRARY_PATH=$BUILD, provider oxshm
#   up21       upstream 2.1.0 built from its release source (bench/up21.sh,
#              the build fabtests_bench.sh uses), provider shm
#   upstream   Debian's libfabric 1.17 (system library), provider shm
# RUNS times each, interleaved (ours, up21, upstream, ours, ...), and every
# figure is the median over the runs of each run's own median. Two tables
# give ours/reference ratios (the median of the ratios within each run,
# beside the ratio of the two medians): against upstream 2.1.0 with the targets of
# the registration issue (12: reg+close of 4 KiB and regv of 4 iovs at most
# 0.5x, reg and close at 100,000 live MRs at most 0.2x, at most 128 bytes
# per MR), and against Debian's 1.17 with the targets of issue 3. A MISS is
# informative and does not fail the run. A run that fails (a libfabric call
# failed, a wrong library was loaded, a figure is missing) fails the script.
#
# The last lines are machine-readable:
#   result <metric> <ours> <reference> <ratio> <target> <PASS|MISS|-> <reference name>
#
# Usage: bench/run.sh [-q]     (-q: few batches and one run each, a smoke test)
# Environment: BUILD (default build), RUNS (default 5), CC, UP21_PREFIX (an
# install of upstream 2.1.0 to use instead of building one).
set -euo pipefail
trap 'echo "bench/run.sh: stopped at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
LIB=$BUILD/libfabric.so.1
OUT=$BUILD/bench
CC=${CC:-cc}
RUNS=${RUNS:-5}
DEBIAN_LIBDIR=/usr/lib/x86_64-linux-gnu
TIMEOUT=${TIMEOUT:-120}
quick=()
if [ "${1:-}" = -q ]; then
	quick=(-q)
	RUNS=1
fi

[ -e "$LIB" ] || { echo "bench/run.sh: $LIB is missing (make lib)"; exit 1; }
[ -f /usr/include/rdma/fabric.h ] && [ -e "$DEBIAN_LIBDIR/libfabric.so.1" ] ||
	{ echo "bench/run.sh: Debian's libfabric 1.17 is missing (make deps)"; exit 1; }

# Debian's headers through a directory of their own: with a plain
# /usr/include, an oxfabric installed under /usr/local/include would win.
mkdir -p "$OUT/hdr117"
ln -sfn /usr/include/rdma "$OUT/hdr117/rdma"
bin=$OUT/mr_bench
rm -f "$bin"
$CC -std=c11 -O2 -Wall -Wextra -Werror -I "$OUT/hdr117" \
	-DBENCH_EXPECT_MAJOR=1 -DBENCH_EXPECT_MINOR=17 \
	-o "$bin" bench/mr_bench.c -L "$DEBIAN_LIBDIR" -lfabric

ours_lib=$(realpath "$LIB")
up_lib=$(realpath "$DEBIAN_LIBDIR/libfabric.so.1")
UP21_PREFIX=${UP21_PREFIX:-$(BUILD=$BUILD bash bench/up21.sh | tail -1)}
up21_lib=$(realpath "$UP21_PREFIX/lib/libfabric.so.1")

# run_one WHO PROV RUN: one run of the binary; its log is $OUT/WHO.RUN.log.
run_one() {
	local who=$1 p=$2 r=$3 log=$OUT/$1.$3.log want rc=0
	if [ "$who" = ours ]; then
		want=$ours_lib
		env LD_LIBRARY_PATH="$PWD/$BUILD" FI_PROVIDER="$p" \
			timeout "$TIMEOUT" "$bin" "${quick[@]}" "$p" >"$log" 2>&1 || rc=$?
	elif [ "$who" = up21 ]; then
		want=$up21_lib
		env LD_LIBRARY_PATH="$UP21_PREFIX/lib" FI_PROVIDER="$p" \
			timeout "$TIMEOUT" "$bin" "${quick[@]}" "$p" >"$log" 2>&1 || rc=$?
	else
		want=$up_lib
		env -u LD_LIBRARY_PATH FI_PROVIDER="$p" \
			timeout "$TIMEOUT" "$bin" "${quick[@]}" "$p" >"$log" 2>&1 || rc=$?
	fi
	if [ "$rc" -ne 0 ]; then
		echo "bench/run.sh: the $who run ($p) failed with exit $rc:"
		sed 's/^/    /' "$log"
		exit 1
	fi
	if ! grep -qx "lib $want" "$log"; then
		echo "bench/run.sh: the $who run loaded the wrong library (want $want):"
		grep '^lib ' "$log" | sed 's/^/    /'
		exit 1
	fi
}

start=$(date +%s)
for r in $(seq 1 "$RUNS"); do
	run_one ours oxshm "$r"
	run_one up21 shm "$r"
	run_one upstream shm "$r"
done
elapsed=$(($(date +%s) - start))

echo "== mr_bench: $RUNS run(s) per library, ${elapsed}s; figures are medians, ratios are medians of per-run ratios"
for who in ours up21 upstream; do
	echo "-- $who"
	grep -E '^(lib|fi_version|negotiated) ' "$OUT/$who.1.log" | sed 's/^/   /'
done

# fig WHO METRIC: the median over the runs of WHO's figure for METRIC.
fig() {
	local v
	v=$(cat "$OUT/$1".*.log | awk -v m="$2" '$1 == "value" && $2 == m { print $3 }' | sort -g)
	[ -n "$v" ] || { echo "bench/run.sh: no $2 figure from the $1 runs" >&2; return 1; }
	awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }' <<<"$v"
}

# metric|label|unit|target: ratio:X (ours/reference <= X), ours:X (ours <= X), -
# Against upstream 2.1.0: the targets of the registration issue (12).
metrics_up21=(
	"pair_4k|fi_mr_reg+fi_close, 4 KiB|ns/pair|ratio:0.5"
	"regv4_pair|fi_mr_regv 4 iovs+fi_close|ns/pair|ratio:0.5"
	"reg_live100k|fi_mr_reg at 100,000 live|ns/reg|ratio:0.2"
	"close_live100k|fi_close at 100,000 live|ns/close|ratio:0.2"
	"bytes_per_mr|memory per live MR (RSS/100,000)|bytes|ours:128"
	"pair_64k|fi_mr_reg+fi_close, 64 KiB|ns/pair|-"
	"fill_100k|fi_mr_reg, filling 0->100,000 live|ns/reg|-"
	"close_all_100k|fi_close of the 100,000|ns/close|-"
)
# Against Debian's 1.17: the targets of issue 3.
metrics_deb=(
	"memcpy_4k|memcpy 4 KiB (machine reference)|ns|-"
	"memcpy_64k|memcpy 64 KiB (machine reference)|ns|-"
	"pair_4k|fi_mr_reg+fi_close, 4 KiB|ns/pair|ratio:0.4"
	"pair_64k|fi_mr_reg+fi_close, 64 KiB|ns/pair|ratio:0.4"
	"pair_1m|fi_mr_reg+fi_close, 1 MiB|ns/pair|ratio:0.4"
	"pair_64m|fi_mr_reg+fi_close, 64 MiB|ns/pair|ratio:0.4"
	"regv4_pair|fi_mr_regv 4 iovs+fi_close|ns/pair|ratio:0.4"
	"fill_100k|fi_mr_reg, filling 0->100,000 live|ns/reg|-"
	"reg_live100k|fi_mr_reg at 100,000 live|ns/reg|ratio:0.15"
	"close_live100k|fi_close at 100,000 live|ns/close|ratio:0.15"
	"close_all_100k|fi_close of the 100,000|ns/close|-"
	"bytes_per_mr|memory per live MR (RSS/100,000)|bytes|ours:128"
	"rss_domain|RSS growth of fi_domain|bytes|-"
)

# paired REF METRIC: the median over the runs of ours/REF within each run
# (run r of ours and run r of REF ran back to back). Whole runs on this VM
# land on one of two speed levels about 1.5x apart, for every library
# alike; a ratio of two medians can pair one side's fast level with the
# other's slow one, a ratio within a run rarely does.
paired() {
	local r o u v=""
	for r in $(seq 1 "$RUNS"); do
		o=$(awk -v m="$2" '$1 == "value" && $2 == m { print $3 }' "$OUT/ours.$r.log")
		u=$(awk -v m="$2" '$1 == "value" && $2 == m { print $3 }' "$OUT/$1.$r.log")
		[ -n "$o" ] && [ -n "$u" ] || continue
		v+=$(awk -v o="$o" -v u="$u" 'BEGIN { if (u > 0) printf "%.4f\n", o / u }')$'\n'
	done
	v=$(grep . <<<"$v" | sort -g) || { echo n/a; return; }
	awk '{ a[NR] = $1 } END { printf "%.3f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }' <<<"$v"
}

results=()
# table REF TITLE METRIC...: ours against the runs of REF. `ratio` is the
# median of the per-run ratios (paired), the verdict's basis; `med/med`
# divides the two medians.
table() {
	local ref=$1 title=$2 m name label unit target o u ratio mm t tdesc verdict
	shift 2
	printf '\n-- ours against %s\n' "$title"
	printf '%-36s %-9s %11s %11s %7s %7s  %-14s %s\n' metric unit ours "$ref" ratio med/med target verdict
	printf '%s\n' "$(printf '%.0s-' {1..100})"
	for m in "$@"; do
		IFS='|' read -r name label unit target <<<"$m"
		o=$(fig ours "$name")
		u=$(fig "$ref" "$name")
		mm=$(awk -v o="$o" -v u="$u" 'BEGIN { if (u > 0) printf "%.3f", o / u; else print "n/a" }')
		ratio=$(paired "$ref" "$name")
		case $target in
		ratio:*)
			t=${target#ratio:}
			tdesc="<=${t}x"
			verdict=$(awk -v r="$ratio" -v t="$t" 'BEGIN { print (r != "n/a" && r + 0 <= t + 0) ? "PASS" : "MISS" }')
			;;
		ours:*)
			t=${target#ours:}
			tdesc="ours<=${t}"
			verdict=$(awk -v o="$o" -v t="$t" 'BEGIN { print (o + 0 <= t + 0) ? "PASS" : "MISS" }')
			;;
		*) tdesc=- verdict=- ;;
		esac
		printf '%-36s %-9s %11.1f %11.1f %7s %7s  %-14s %s\n' "$label" "$unit" "$o" "$u" "$ratio" "$mm" "$tdesc" "$verdict"
		results+=("result $name $o $u $ratio $tdesc $verdict $ref")
	done
}
table up21 "upstream 2.1.0 shm ($up21_lib)" "${metrics_up21[@]}"
table upstream "Debian's libfabric 1.17 shm" "${metrics_deb[@]}"
echo
printf '%s\n' "${results[@]}"
