#!/usr/bin/env bash
# What liboxfabric-shim.so adds to a registration, a close and a data-path
# call (`make bench`).
#
# bench/shim_bench.c, built against Debian's headers and library, runs on
# Debian's tcp;ofi_rxm and on oxfabric's oxshm, RUNS times each without and
# with the shim preloaded, interleaved; each figure is the median over the
# runs of each run's median. The targets (issue 13) are <= 60 ns added per
# registration and <= 25 ns per data-path call with the checks on (recv_ns:
# an fi_recv posted with its desc, which the shim looks up and checks); a
# MISS is informative and does not fail the run.
#
# This VM moves between speed levels within minutes, which the medians of
# each side mix when the level changes during a run of the script. The
# paired figures (`reg_ns_paired`, `recv_ns_paired`) take, for each pair
# of runs made one after the other (without, then with), the difference,
# and report the median of those differences: the two runs of a pair
# share a level, so this is the figure least moved by the host.
# Last, fi_pingpong's latency over tcp;ofi_rxm without the shim and with
# OXSHIM_MODE=off.
#   result <stack> <metric> <without> <with> <added> <target> <PASS|MISS|->
# Environment: BUILD (default build), RUNS (default 9), ROUNDS, BATCH.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
SHIM=$PWD/$BUILD/liboxfabric-shim.so
OUT=$PWD/$BUILD/bench
RUNS=${RUNS:-9}
ROUNDS=${ROUNDS:-200}
BATCH=${BATCH:-64}
mkdir -p "$OUT"
cc -std=c11 -Wall -Wextra -Werror -O2 -o "$OUT/shim_bench" bench/shim_bench.c -lfabric

least() { sort -n | head -1; }
tenths() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 10 }'; }
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# paired KEY WITHOUT WITH: the median over the runs of (with - without),
# the runs paired in the order they ran.
paired() {
	paste <(sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" "$2") <(sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" "$3") |
		awk '{ print $2 - $1 }' | med
}

for stack in tcp oxshm; do
	prov="tcp;ofi_rxm"
	libpath=""
	[ $stack = oxshm ] && { prov=oxshm; libpath=$PWD/$BUILD; }
	: >"$OUT/shim-$stack-without.txt"
	: >"$OUT/shim-$stack-with.txt"
	for ((r = 0; r < RUNS; r++)); do
		env ${libpath:+LD_LIBRARY_PATH=$libpath} "$OUT/shim_bench" "$prov" "$ROUNDS" "$BATCH" \
			>>"$OUT/shim-$stack-without.txt"
		env ${libpath:+LD_LIBRARY_PATH=$libpath} LD_PRELOAD="$SHIM" \
			"$OUT/shim_bench" "$prov" "$ROUNDS" "$BATCH" >>"$OUT/shim-$stack-with.txt"
	done
	# Registration and close: the median over the runs, and for the
	# registration also the least over the runs. Whole runs on this VM
	# land on one of two speed levels about 1.5x apart (every function
	# slower alike in perf: the host, not the code), with or without the
	# shim; the least compares the two sides on the faster level.
	for m in reg_ns close_ns pair_ns reg_ns_least; do
		pick=med src=$m
		[ $m = reg_ns_least ] && { pick=least; src=reg_ns; }
		a=$(sed -n "s/.*$src=\([0-9]*\).*/\1/p" "$OUT/shim-$stack-without.txt" | $pick)
		b=$(sed -n "s/.*$src=\([0-9]*\).*/\1/p" "$OUT/shim-$stack-with.txt" | $pick)
		d=$((b - a))
		target=- verdict=-
		if [ $src = reg_ns ]; then
			target=60
			verdict=$([ $d -le 60 ] && echo PASS || echo MISS)
		fi
		echo "result $stack $m $a $b $d $target $verdict"
	done
	# Data path, in tenths of a nanosecond per call: the median over the
	# runs, and the least over the runs (on a shared machine, the run
	# least disturbed by other work; a co-runner moves whole runs between
	# levels 10-30 ns apart, with or without the shim).
	for pick in med least; do
		a=$(sed -n "s/.*recv_dns=\([0-9]*\).*/\1/p" "$OUT/shim-$stack-without.txt" | $pick)
		b=$(sed -n "s/.*recv_dns=\([0-9]*\).*/\1/p" "$OUT/shim-$stack-with.txt" | $pick)
		d=$((b - a))
		verdict=$([ $d -le 250 ] && echo PASS || echo MISS)
		name=recv_ns
		[ $pick = least ] && name=recv_ns_least
		echo "result $stack $name $(tenths $a) $(tenths $b) $(tenths $d) 25 $verdict"
	done
	w=$OUT/shim-$stack-without.txt
	x=$OUT/shim-$stack-with.txt
	d=$(paired reg_ns "$w" "$x")
	echo "result $stack reg_ns_paired $(sed -n 's/.*reg_ns=\([0-9]*\).*/\1/p' "$w" | med)" \
		"$(sed -n 's/.*reg_ns=\([0-9]*\).*/\1/p' "$x" | med) $d 60 $([ "$d" -le 60 ] && echo PASS || echo MISS)"
	d=$(paired recv_dns "$w" "$x")
	echo "result $stack recv_ns_paired $(tenths "$(sed -n 's/.*recv_dns=\([0-9]*\).*/\1/p' "$w" | med)")" \
		"$(tenths "$(sed -n 's/.*recv_dns=\([0-9]*\).*/\1/p' "$x" | med)") $(tenths "$d") 25" \
		"$([ "$d" -le 250 ] && echo PASS || echo MISS)"
done

# OXSHIM_MODE=off: Debian's fi_pingpong over tcp;ofi_rxm (64 bytes, two
# processes), without the shim and with it preloaded but off, interleaved,
# RUNS times each. The target is no measurable change: the difference of
# the medians within the spread (max - min) of the runs without the shim.
PP=$OUT/ppbin
mkdir -p "$PP"
ln -sf /usr/bin/fi_pingpong "$PP/xpingpong"
pp_once() {
	local port=$((30000 + RANDOM % 20000)) pre=$1
	env ${pre:+LD_PRELOAD=$pre OXSHIM_MODE=off} timeout 60 "$PP/xpingpong" -p "tcp;ofi_rxm" -e rdm \
		-B $port -I 2000 -S 64 >/dev/null 2>&1 &
	local s=$!
	sleep 0.3
	env ${pre:+LD_PRELOAD=$pre OXSHIM_MODE=off} timeout 60 "$PP/xpingpong" -p "tcp;ofi_rxm" -e rdm \
		-P $port -I 2000 -S 64 127.0.0.1 2>/dev/null | awk '$1 == "64" { print $6 }'
	wait $s 2>/dev/null || true
}
: >"$OUT/pp-without.txt"
: >"$OUT/pp-off.txt"
for ((r = 0; r < RUNS; r++)); do
	pp_once "" >>"$OUT/pp-without.txt"
	pp_once "$SHIM" >>"$OUT/pp-off.txt"
done
a=$(med <"$OUT/pp-without.txt")
b=$(med <"$OUT/pp-off.txt")
spread=$(sort -n "$OUT/pp-without.txt" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print hi - lo }')
verdict=$(awk -v a="$a" -v b="$b" -v s="$spread" 'BEGIN { d = b - a; if (d < 0) d = -d; print (a != "" && b != "" && d <= s) ? "PASS" : "MISS" }')
echo "result tcp pingpong_us_off $a $b $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b - a }') spread=$spread $verdict"
