#!/usr/bin/env bash
# One fabtests benchmark on several builds of the same source whose code
# the linker places differently, and on upstream 2.1.0.
#
# Where the code lies moves small-message latency on the Intel host more
# than most changes do: on 2026-12-06 `fi_rdm_pingpong -S 8` took 0.28 us
# with one build of a commit and 0.33-0.37 us with the same source built
# with functions or loops aligned otherwise, or after an unrelated change
# to a cold function (the CPU's own prefetchers and predictors key on code
# addresses). A latency figure from one build is a draw; a change is
# judged by what it does in every layout.
#
# Each layout is the library built with one RUSTFLAGS setting (none, and
# LLVM's -align-all-functions / -align-loops) into build/layouts/<name>
# (cargo works in target/layouts, leaving the main build alone). Each
# round runs the benchmark once on every layout and on upstream, in turn;
# the last line gives every column's median.
# Usage: bench/layouts.sh "rdm_pingpong -S 8" [column]
#   ROUNDS=5; column 6 is usec/xfer (the default), 5 MB/sec;
#   LAYOUTS="default f5 f6 f7 l32 l64" picks the layouts.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-5}
LAYOUTS=${LAYOUTS:-default f5 f6 f7 l32 l64}
ARGS=${1:?usage: bench/layouts.sh \"rdm_pingpong -S 8\" [column]}
COL=${2:-6}
UP=$PWD/$BUILD/up21
OUT=$PWD/$BUILD/layouts

flags_of() {
	case $1 in
	default) echo "" ;;
	f[0-9]) echo "-C llvm-args=-align-all-functions=${1#f}" ;;
	l[0-9]*) echo "-C llvm-args=-align-loops=${1#l}" ;;
	*) echo "bench/layouts.sh: unknown layout $1" >&2; exit 2 ;;
	esac
}

BUILD=$BUILD bash bench/up21.sh >/dev/null
[ -x "$UP/ft/bin/fi_rdm_pingpong" ] || {
	echo "bench/layouts.sh: no fabtests under $UP/ft: run bench/fabtests_bench.sh once" >&2
	exit 1
}
for l in $LAYOUTS; do
	mkdir -p "$OUT/$l"
	# The Makefile's own link, from a static library built in target/layouts.
	RUSTFLAGS="$(flags_of "$l")" CARGO_TARGET_DIR=target/layouts make -s \
		STATICLIB=target/layouts/release/liboxfabric.a LIB="$OUT/$l/libfabric.so.1" \
		"$OUT/$l/libfabric.so.1" >/dev/null
done

. bench/stale_shm.sh
read -r -a c <<<"$ARGS"
prog=$UP/ft/bin/fi_${c[0]}
args=("${c[@]:1}")
port=$((9900 + RANDOM % 300))
# one LIBDIR PROV: the benchmark's value on that library ("FAIL" if none).
one() {
	port=$((port + 1))
	clean_stale_shm
	LD_LIBRARY_PATH=$1 timeout 120 "$prog" -p "$2" "${args[@]}" -B $port -s 127.0.0.1 \
		>/dev/null 2>&1 &
	local s=$! v
	sleep 0.3
	v=$(LD_LIBRARY_PATH=$1 timeout 120 "$prog" -p "$2" "${args[@]}" -P $port \
		-s 127.0.0.1 127.0.0.1 2>/dev/null | awk -v c="$COL" '/^[0-9]/ { print $c; exit }')
	wait $s || true
	echo "${v:-FAIL}"
}
echo "round $LAYOUTS upstream-2.1.0"
for ((r = 1; r <= ROUNDS; r++)); do
	line="$r"
	for l in $LAYOUTS; do line="$line $(one "$OUT/$l" oxshm)"; done
	line="$line $(one "$UP/inst/lib" shm)"
	echo "$line"
done | tee "$OUT/last.txt"
python3 - "$OUT/last.txt" <<'EOF'
import statistics, sys
rows = [l.split()[1:] for l in open(sys.argv[1]) if l[:1].isdigit()]
cols = list(zip(*rows))
med = [statistics.median([float(x) for x in c if x != "FAIL"] or [float("nan")]) for c in cols]
print("median " + " ".join("%.2f" % m for m in med))
EOF
