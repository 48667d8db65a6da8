#!/usr/bin/env bash
# The CPU cost of the small-message path (`make bench`): bench/msg_cpu.c,
# built once against upstream 2.1.0's headers, run on oxfabric's oxshm and
# on upstream 2.1.0's shm (bench/up21.sh), interleaved, RUNS times; each
# figure is the median over the runs. A second opinion beside fabtests'
# benchmarks: it shows where the message path's time goes, not how fast
# two processes talk.
#   result <metric> <oxshm ns> <upstream ns> <ratio>
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
N=${N:-2000000}
OUT=$PWD/$BUILD/bench
mkdir -p "$OUT"
. bench/stale_shm.sh
clean_stale_shm
UP=$(BUILD=$BUILD bash bench/up21.sh | tail -1)
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -I"$UP/include" -o "$OUT/msg_cpu" \
	bench/msg_cpu.c -L"$UP/lib" -lfabric
: >"$OUT/msg_cpu-ours.txt"
: >"$OUT/msg_cpu-up21.txt"
for ((r = 0; r < RUNS; r++)); do
	LD_LIBRARY_PATH=$PWD/$BUILD "$OUT/msg_cpu" oxshm "$N" >>"$OUT/msg_cpu-ours.txt"
	clean_stale_shm
	LD_LIBRARY_PATH=$UP/lib "$OUT/msg_cpu" shm "$N" >>"$OUT/msg_cpu-up21.txt"
done
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for m in empty_read_ns msg_ns; do
	a=$(sed -n "s/.*$m=\([0-9.]*\).*/\1/p" "$OUT/msg_cpu-ours.txt" | med)
	b=$(sed -n "s/.*$m=\([0-9.]*\).*/\1/p" "$OUT/msg_cpu-up21.txt" | med)
	echo "result $m $a $b $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2fx", a / b }')"
done
