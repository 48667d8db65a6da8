#!/usr/bin/env bash
# The RMA benchmark, oxfabric against upstream and against the machine.
#
# bench/rma_bench.c is built ONCE, against Debian's libfabric 1.17 headers and
# linked against Debian's libfabric.so.1, so it is an upstream program. Each
# of RUNS rounds then runs, in this order,
#   ceiling    rma_bench -ceiling: memcpy, process_vm_writev/readv into a
#              forked child, and both processes copying half of each
#              transfer at once (writev and readv), and a plain shared-memory
#              pipe of 4 KiB cells between them (no libfabric)
#   upstream   Debian's libfabric 1.17 (system library), provider shm
#   ours       oxfabric: LD_LIBRARY_PATH=$BUILD, provider oxshm
#   staged     the same with FI_OXSHM_CMA=0: bulk copies staged through
#              shared memory, as where cross-memory attach is not permitted
#   upstream-nocma  Debian's shm with FI_SHM_DISABLE_CMA=1, its own copies
#              through shared memory: what `staged` is compared with
# and every figure is the median over the rounds. The table gives write and
# read bandwidth (GB/s, 1e9 bytes/s) per size, ours/upstream and
# ours/ceiling ratios next to their targets, and the 8-byte write latency;
# a MISS is informative and does not fail the run. While oxshm offers no RMA
# (fi_getinfo finds nothing, FI_ENODATA/FI_ENOSYS, or an RMA call answers
# FI_ENOSYS: rma_bench exits 3 with a NO-RMA line) its columns say NOT RUN;
# any other failure (a libfabric call failed, an error completion, wrong
# data, a wrong library loaded, a missing figure) fails the script.
#
# Writes $BUILD/bench/rma.dat (size ours_w ours_r up_w up_r memcpy pvw pvr
# staged_w staged_r pvhalves shmpipe, NaN where not measured) and rma.svg (gnuplot, or bench/plot.py).
# The last lines are machine-readable:
#   result <metric> <size> <ours> <reference> <ratio> <target> <PASS|MISS|->
#
# Usage: bench/rma_run.sh [-q]   (-q: 8 B, 64 KiB, 1 MiB, short runs, one round)
# Environment: BUILD (default build), RUNS (default 3), CC, TIMEOUT (s per run).
set -euo pipefail
trap 'echo "bench/rma_run.sh: stopped at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
LIB=$BUILD/libfabric.so.1
OUT=$BUILD/bench
CC=${CC:-cc}
RUNS=${RUNS:-3}
DEBIAN_LIBDIR=/usr/lib/x86_64-linux-gnu
TIMEOUT=${TIMEOUT:-150}
quick=()
sizes=(8 64 512 4096 16384 65536 262144 1048576 4194304 67108864)
if [ "${1:-}" = -q ]; then
	quick=(-q)
	RUNS=1
	sizes=(8 65536 1048576)
fi

[ -e "$LIB" ] || { echo "bench/rma_run.sh: $LIB is missing (make lib)"; exit 1; }
[ -f /usr/include/rdma/fabric.h ] && [ -e "$DEBIAN_LIBDIR/libfabric.so.1" ] ||
	{ echo "bench/rma_run.sh: Debian's libfabric 1.17 is missing (make deps)"; exit 1; }

# Debian's headers through a directory of their own: with a plain
# /usr/include, an oxfabric installed under /usr/local/include would win.
mkdir -p "$OUT/hdr117"
ln -sfn /usr/include/rdma "$OUT/hdr117/rdma"
bin=$OUT/rma_bench
rm -f "$bin" "$OUT"/rma.*.log "$OUT/rma.dat" "$OUT/rma.svg"
$CC -std=gnu11 -O2 -Wall -Wextra -Werror -I "$OUT/hdr117" \
	-DBENCH_EXPECT_MAJOR=1 -DBENCH_EXPECT_MINOR=17 \
	-o "$bin" bench/rma_bench.c -L "$DEBIAN_LIBDIR" -lfabric

ours_lib=$(realpath "$LIB")
up_lib=$(realpath "$DEBIAN_LIBDIR/libfabric.so.1")
ours_run=1
ours_why=

# run_one WHO RUN: one run of the binary; its log is $OUT/rma.WHO.RUN.log.
run_one() {
	local who=$1 r=$2 log=$OUT/rma.$1.$2.log want= rc=0
	case $who in
	ceiling)
		timeout "$TIMEOUT" "$bin" "${quick[@]}" -ceiling >"$log" 2>&1 || rc=$?
		;;
	upstream | upstream-nocma)
		want=$up_lib
		local nocma=()
		[ "$who" = upstream-nocma ] && nocma=(FI_SHM_DISABLE_CMA=1)
		env -u LD_LIBRARY_PATH FI_PROVIDER=shm "${nocma[@]}" \
			timeout "$TIMEOUT" "$bin" "${quick[@]}" shm >"$log" 2>&1 || rc=$?
		;;
	ours | staged)
		want=$ours_lib
		local cma=()
		[ "$who" = staged ] && cma=(FI_OXSHM_CMA=0)
		env LD_LIBRARY_PATH="$PWD/$BUILD" FI_PROVIDER=oxshm "${cma[@]}" \
			timeout "$TIMEOUT" "$bin" "${quick[@]}" oxshm >"$log" 2>&1 || rc=$?
		;;
	esac
	if [ "$who" = ours ] && [ "$rc" -eq 3 ] && grep -q '^NO-RMA ' "$log"; then
		ours_run=0
		ours_why=$(grep -m1 '^NO-RMA ' "$log" | cut -d' ' -f3-)
		rm -f "$log"
		return 0
	fi
	if [ "$rc" -ne 0 ]; then
		echo "bench/rma_run.sh: the $who run failed with exit $rc:"
		sed 's/^/    /' "$log"
		exit 1
	fi
	if [ -n "$want" ] && ! grep -qx "lib $want" "$log"; then
		echo "bench/rma_run.sh: the $who run loaded the wrong library (want $want):"
		grep '^lib ' "$log" | sed 's/^/    /'
		exit 1
	fi
}

start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq 1 "$RUNS"); do
	run_one ceiling "$r"
	run_one upstream "$r"
	if [ "$ours_run" = 1 ]; then run_one ours "$r"; fi
	if [ "$ours_run" = 1 ]; then run_one staged "$r"; fi
	run_one upstream-nocma "$r"
done
elapsed=$(($(date +%s) - start))
load1=$(cut -d' ' -f1-3 /proc/loadavg)

echo "== rma_bench: $RUNS round(s), ${elapsed}s; figures are medians over the rounds"
echo "   load average before $load0, after $load1 on $(nproc) CPU(s)" \
	"(other work on the machine skews every figure)"
for who in upstream ours; do
	[ -e "$OUT/rma.$who.1.log" ] || continue
	echo "-- $who"
	grep -E '^(lib|fi_version|negotiated|remote counter|peer inserted) ' "$OUT/rma.$who.1.log" | sed 's/^/   /'
done
if [ "$ours_run" = 0 ]; then
	echo "-- ours"
	echo "   NOT RUN: oxshm has no RMA yet ($ours_why)"
fi

# fig WHO KEY SIZE: the median over the rounds of WHO's figure (KEY is the
# metric of an `rma` line or the kind of a `ceiling` line); empty if none.
fig() {
	local who=$1 key=$2 size=$3 v
	[ -e "$OUT/rma.$who.1.log" ] || return 0
	if [ "$who" = ceiling ]; then
		v=$(cat "$OUT/rma.$who".*.log |
			awk -v k="$key" -v s="$size" '$1 == "ceiling" && $2 == k && $3 == s { print $4 }')
	else
		v=$(cat "$OUT/rma.$who".*.log |
			awk -v k="$key" -v s="$size" '$1 == "rma" && $3 == k && $4 == s { print $5 }')
	fi
	v=$(sort -g <<<"$v" | sed '/^$/d')
	if [ -z "$v" ]; then
		echo "bench/rma_run.sh: no $key figure for $size from the $who runs" >&2
		return 1
	fi
	if [ "$(wc -l <<<"$v")" -ne "$RUNS" ]; then
		echo "bench/rma_run.sh: the $who runs gave $(wc -l <<<"$v") $key figures for $size, want $RUNS" >&2
		return 1
	fi
	awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }' <<<"$v"
}

# ratio A B: A/B, or "-" when either is missing.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}

# verdict RATIO OP TARGET: PASS/MISS for RATIO >= or <= TARGET; "-" without one.
verdict() {
	awk -v r="$1" -v op="$2" -v t="$3" 'BEGIN {
		if (r == "-" || t == "") { print "-"; exit }
		ok = (op == ">=") ? (r + 0 >= t + 0) : (r + 0 <= t + 0)
		print ok ? "PASS" : "MISS" }'
}

# num V: V to 4 significant digits, or "-".
num() {
	awk -v v="$1" 'BEGIN { if (v == "") print "-"; else printf "%.4g", v }'
}

human() {
	awk -v s="$1" 'BEGIN { if (s >= 1048576) printf "%d MiB", s / 1048576;
		else if (s >= 1024) printf "%d KiB", s / 1024; else printf "%d B", s }'
}

results=()
dat=$OUT/rma.dat
echo "# size ours_w ours_r up_w up_r memcpy pvw pvr staged_w staged_r pvhalves shmpipe (GB/s, 1e9 bytes/s; medians of $RUNS)" >"$dat"

echo
echo "bandwidth, GB/s (ours = oxshm on oxfabric, up = shm on Debian's libfabric 1.17;"
echo "w/pvw = ours write / process_vm_writev, r/pvr = ours read / process_vm_readv;"
echo "halves = both processes copying half of each transfer at once, writev and readv,"
echo "the most any design on two CPUs gets from cross-memory attach: w/h, r/h = ours / it)"
printf '%-8s | %9s %9s %6s %-5s | %9s %9s %6s %-5s | %9s %9s %9s %9s | %5s %-5s %5s %-5s | %5s %5s\n' \
	size "ours w" "up w" ratio "" "ours r" "up r" ratio "" memcpy pvwritev pvreadv halves \
	w/pvw "" r/pvr "" w/h r/h
printf '%s\n' "$(printf '%.0s-' {1..164})"
for s in "${sizes[@]}"; do
	ow=$(fig ours write_gbps "$s")
	orr=$(fig ours read_gbps "$s")
	uw=$(fig upstream write_gbps "$s")
	ur=$(fig upstream read_gbps "$s")
	mc=$(fig ceiling memcpy "$s")
	pw=$(fig ceiling pvwritev "$s")
	pr=$(fig ceiling pvreadv "$s")
	ph=$(fig ceiling pvhalves "$s")
	# targets: 64 KiB >= 1.5x upstream; >= 1 MiB >= 1.8x upstream and >= 0.85x the ceiling
	ut= ct=
	if [ "$s" -ge 1048576 ]; then
		ut=1.8 ct=0.85
	elif [ "$s" -eq 65536 ]; then
		ut=1.5
	fi
	rw=$(ratio "$ow" "$uw") rr=$(ratio "$orr" "$ur")
	cw=$(ratio "$ow" "$pw") cr=$(ratio "$orr" "$pr")
	vw=$(verdict "$rw" ">=" "$ut") vr=$(verdict "$rr" ">=" "$ut")
	vcw=$(verdict "$cw" ">=" "$ct") vcr=$(verdict "$cr" ">=" "$ct")
	[ "$ours_run" = 1 ] || vw=n/r vr=n/r vcw=n/r vcr=n/r
	printf '%-8s | %9s %9s %6s %-5s | %9s %9s %6s %-5s | %9s %9s %9s %9s | %5s %-5s %5s %-5s | %5s %5s\n' \
		"$(human "$s")" "$(num "$ow")" "$(num "$uw")" "$rw" "$vw" "$(num "$orr")" "$(num "$ur")" \
		"$rr" "$vr" "$(num "$mc")" "$(num "$pw")" "$(num "$pr")" "$(num "$ph")" "$cw" "$vcw" \
		"$cr" "$vcr" "$(ratio "$ow" "$ph")" "$(ratio "$orr" "$ph")"
	sw=$(fig staged write_gbps "$s")
	sr=$(fig staged read_gbps "$s")
	sp=$(fig ceiling shmpipe "$s")
	echo "$s ${ow:-NaN} ${orr:-NaN} ${uw:-NaN} ${ur:-NaN} ${mc:-NaN} ${pw:-NaN} ${pr:-NaN} ${sw:-NaN} ${sr:-NaN} ${ph:-NaN} ${sp:-NaN}" >>"$dat"
	t=${ut:+">=${ut}x"}
	results+=("result write_gbps $s ${ow:--} ${uw:--} $rw ${t:--} ${vw/n\/r/NOT_RUN}")
	results+=("result read_gbps $s ${orr:--} ${ur:--} $rr ${t:--} ${vr/n\/r/NOT_RUN}")
	t=${ct:+">=${ct}x"}
	results+=("result write_vs_pvwritev $s ${ow:--} ${pw:--} $cw ${t:--} ${vcw/n\/r/NOT_RUN}")
	results+=("result read_vs_pvreadv $s ${orr:--} ${pr:--} $cr ${t:--} ${vcr/n\/r/NOT_RUN}")
	results+=("result write_vs_halves $s ${ow:--} ${ph:--} $(ratio "$ow" "$ph") - -")
	results+=("result read_vs_halves $s ${orr:--} ${ph:--} $(ratio "$orr" "$ph") - -")
done
if [ "$ours_run" = 1 ]; then
	echo "targets: 64 KiB >= 1.5x upstream; >= 1 MiB >= 1.8x upstream and >= 0.85x the ceiling"
else
	echo "n/r: NOT RUN: oxshm has no RMA yet ($ours_why)"
fi

if [ -e "$OUT/rma.staged.1.log" ]; then
	echo
	echo "staged (FI_OXSHM_CMA=0: bulk copies through shared memory, as where the kernel"
	echo "does not permit cross-memory attach), GB/s, against upstream doing the same"
	echo "(nocma: FI_SHM_DISABLE_CMA=1), against ours with cross-memory attach, and against"
	echo "a plain two-process pipe of 4 KiB cells (pipe: memcpy in, memcpy out, no libfabric)"
	printf '%-8s | %9s %9s %7s %7s %7s | %9s %9s %7s %7s %7s | %9s\n' size "staged w" "nocma w" \
		"ratio" "/ours" "/pipe" "staged r" "nocma r" "ratio" "/ours" "/pipe" "pipe"
	for s in "${sizes[@]}"; do
		sw=$(fig staged write_gbps "$s") sr=$(fig staged read_gbps "$s")
		ow=$(fig ours write_gbps "$s") orr=$(fig ours read_gbps "$s")
		nw=$(fig upstream-nocma write_gbps "$s") nr=$(fig upstream-nocma read_gbps "$s")
		sp=$(fig ceiling shmpipe "$s")
		printf '%-8s | %9s %9s %7s %7s %7s | %9s %9s %7s %7s %7s | %9s\n' "$(human "$s")" \
			"$(num "$sw")" "$(num "$nw")" "$(ratio "$sw" "$nw")" "$(ratio "$sw" "$ow")" \
			"$(ratio "$sw" "$sp")" "$(num "$sr")" "$(num "$nr")" "$(ratio "$sr" "$nr")" \
			"$(ratio "$sr" "$orr")" "$(ratio "$sr" "$sp")" "$(num "$sp")"
		results+=("result staged_write_gbps $s ${sw:--} ${nw:--} $(ratio "$sw" "$nw") - -")
		results+=("result staged_read_gbps $s ${sr:--} ${nr:--} $(ratio "$sr" "$nr") - -")
	done
	sl=$(fig staged lat_us 8) nl=$(fig upstream-nocma lat_us 8)
	echo "8-byte fi_write latency: staged $(num "$sl") us (the same path as ours: 8 bytes travel"
	echo "inline), upstream nocma $(num "$nl") us"
fi

ol=$(fig ours lat_us 8)
ul=$(fig upstream lat_us 8)
rl=$(ratio "$ol" "$ul")
vl=$(verdict "$rl" "<=" 1)
[ "$ours_run" = 1 ] || vl="NOT RUN (oxshm has no RMA yet)"
echo
printf '8-byte fi_write latency (half round trip): ours %s us, upstream %s us, ratio %s  target <=1x  %s\n' \
	"$(num "$ol")" "$(num "$ul")" "$rl" "$vl"
[ "$ours_run" = 1 ] && vlr=$vl || vlr=NOT_RUN
results+=("result lat_us 8 ${ol:--} ${ul:--} $rl <=1x $vlr")

echo
echo "data: $dat"
if command -v gnuplot >/dev/null 2>&1; then
	if gnuplot <<-EOF; then
		set terminal svg size 900,560 dynamic
		set output '$OUT/rma.svg'
		set title 'RMA bandwidth, oxshm vs upstream shm vs the machine ($RUNS round(s))'
		set logscale x 2
		set xlabel 'transfer size (bytes)'
		set ylabel 'GB/s (1e9 bytes/s)'
		set key top left
		set grid
		set datafile missing 'NaN'
		plot '$dat' using 1:2 with linespoints title 'oxshm write', \
		     '' using 1:3 with linespoints title 'oxshm read', \
		     '' using 1:4 with linespoints title 'shm write', \
		     '' using 1:5 with linespoints title 'shm read', \
		     '' using 1:6 with lines dashtype 2 title 'memcpy', \
		     '' using 1:7 with lines dashtype 3 title 'process_vm_writev', \
		     '' using 1:8 with lines dashtype 4 title 'process_vm_readv', \
		     '' using 1:9 with linespoints title 'oxshm staged write', \
		     '' using 1:10 with linespoints title 'oxshm staged read', \
		     '' using 1:11 with lines dashtype 5 title 'two processes, halves'
	EOF
		echo "plot: $OUT/rma.svg"
	else
		echo "bench/rma_run.sh: gnuplot failed; no plot"
	fi
elif command -v python3 >/dev/null 2>&1 && python3 bench/plot.py "$dat" "$OUT/rma.svg"; then
	echo "plot: $OUT/rma.svg (bench/plot.py)"
else
	echo "plot: not made (neither gnuplot nor python3)"
fi
echo
printf '%s\n' "${results[@]}"
