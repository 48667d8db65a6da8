#!/usr/bin/env bash
# The blocking-wait benchmark (`make bench`): how fast a ping-pong runs when
# the application waits for its completions instead of polling for them.
#
# Upstream fabtests' own programs run on oxfabric (LD_LIBRARY_PATH=$BUILD,
# provider oxshm), server and client on this host, 64-byte messages:
#   spin    fi_rdm_pingpong -c spin   fi_cq_read in a loop (the reference)
#   sread   fi_rdm_pingpong -c sread  fi_cq_sread, FI_WAIT_UNSPEC
#   yield   fi_rdm_pingpong -c yield  fi_cq_sread, FI_WAIT_YIELD
#   fd      fi_rdm_pingpong -c fd     fi_trywait + poll(2) on FI_GETWAIT's fd
#   cntr    fi_rdm_cntr_pingpong      fi_cntr_wait, FI_WAIT_UNSPEC
# next to the machine's ceiling for sleeping in the kernel:
#   eventfd bench/eventfd_pingpong.c, two processes ping-ponging over two
#           eventfds, each asleep in epoll_wait(2) until the other writes.
# Every figure is half a round trip in microseconds (fabtests' usec/xfer).
# Each of RUNS rounds (at least 3 for a verdict) runs every kind once, in
# the order above, so all kinds see the same machine; the table gives the
# median over the rounds. Targets: sread, yield and cntr within 2x of spin;
# fd within 1.5x of eventfd. A MISS is informative and does not fail the
# run; a run that fails (a program exits non-zero, no figure) fails the
# script.
#
# Placement (PIN): where a process sleeps and wakes matters more than
# anything a library does: on a virtual machine, waking a process on an idle
# CPU costs tens of microseconds, on the waker's own CPU a context switch.
# Left to the scheduler, a pair lands in either case from one run to the
# next, so figures of two runs may compare different cases. PIN=split (the
# default) runs the server side (and the ceiling's parent) on CPU 0 and the
# client side (the ceiling's child) on CPU 1, as a job of two processes on
# two cores; PIN=same runs both on CPU 0 (context switches only: the
# software cost of each path); PIN=none leaves placement to the scheduler.
# The processes' own threads (oxshm's progress threads) share their CPU.
#
# Addressing: fabtests' out-of-band exchange (-E=<port>, a TCP socket on
# loopback; ADDRESSING=oob, the default), or the provider's own node/service
# resolution (ADDRESSING=node: the client is given 127.0.0.1).
#
# The last lines are machine-readable:
#   result <kind> <ours_us> <reference_us> <ratio> <target> <PASS|MISS|->
#
# Usage: bench/wait_run.sh [-q]   (-q: 2,000 iterations, one round)
# Environment: BUILD (default build), FABTESTS_BIN (default
#   $BUILD/ft/inst/bin), RUNS (default 3), ITERS (default 10000), CC,
#   TIMEOUT (s per program, default 120), PORT (first OOB port; default
#   random in 20000-39999), ADDRESSING (oob|node), PIN (split|same|none).
set -euo pipefail
trap 'echo "bench/wait_run.sh: stopped at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
LIB=$BUILD/libfabric.so.1
OUT=$BUILD/bench
CC=${CC:-cc}
FABTESTS_BIN=${FABTESTS_BIN:-$BUILD/ft/inst/bin}
RUNS=${RUNS:-3}
ITERS=${ITERS:-10000}
TIMEOUT=${TIMEOUT:-120}
PORT=${PORT:-$((20000 + RANDOM % 20000))}
ADDRESSING=${ADDRESSING:-oob}
PIN=${PIN:-split}
if [ "${1:-}" = -q ]; then
	RUNS=1
	ITERS=2000
fi

[ -e "$LIB" ] || { echo "bench/wait_run.sh: $LIB is missing (make lib)"; exit 1; }
for p in fi_rdm_pingpong fi_rdm_cntr_pingpong; do
	[ -x "$FABTESTS_BIN/$p" ] || {
		echo "bench/wait_run.sh: $FABTESTS_BIN/$p is missing (fabtests built against oxfabric; set FABTESTS_BIN)"
		exit 1
	}
done
case $ADDRESSING in oob | node) ;; *)
	echo "bench/wait_run.sh: ADDRESSING is oob or node, not $ADDRESSING"
	exit 1
	;;
esac
# The CPUs of the server side and of the client side.
case $PIN in
split) cpus=(0 1) ;;
same) cpus=(0 0) ;;
none) cpus=() ;;
*)
	echo "bench/wait_run.sh: PIN is split, same or none, not $PIN"
	exit 1
	;;
esac
if [ "${#cpus[@]}" -gt 0 ] && [ "$(nproc)" -lt $((cpus[1] + 1)) ]; then
	echo "bench/wait_run.sh: PIN=$PIN needs CPUs ${cpus[*]}; this machine has $(nproc)"
	exit 1
fi
# on SIDE: the command prefix that places a process of SIDE (0 server, 1 client).
on() {
	if [ "${#cpus[@]}" -gt 0 ]; then echo taskset -c "${cpus[$1]}"; fi
}

mkdir -p "$OUT"
ceiling=$OUT/eventfd_pingpong
rm -f "$ceiling" "$OUT"/wait.*.log
$CC -std=gnu11 -O2 -Wall -Wextra -Werror -o "$ceiling" bench/eventfd_pingpong.c

ours_lib=$(realpath "$LIB")
libdir=$(dirname "$ours_lib")
got=$(LD_LIBRARY_PATH=$libdir ldd "$FABTESTS_BIN/fi_rdm_pingpong" | awk '$1 == "libfabric.so.1" { print $3 }')
if [ "$(realpath "$got")" != "$ours_lib" ]; then
	echo "bench/wait_run.sh: fabtests load $got, not $ours_lib"
	exit 1
fi

# listening PORT: whether a TCP socket listens on PORT.
listening() {
	ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

# figure LOG: the usec/xfer column of fabtests' result line.
figure() {
	awk '$1 == "64" && NF >= 7 { v = $6 } END { if (v != "") print v }' "$1"
}

# run_pair KIND ROUND PROGRAM ARGS...: one server/client run; appends the
# client's figure to $OUT/wait.KIND.fig.
run_pair() {
	local kind=$1 r=$2 prog=$FABTESTS_BIN/$3
	shift 3
	local slog=$OUT/wait.$kind.$r.server.log clog=$OUT/wait.$kind.$r.client.log
	local addr=() src=() rc=0 src_rc=0 spid i v
	if [ "$ADDRESSING" = oob ]; then
		PORT=$((PORT + 1))
		while listening "$PORT"; do PORT=$((PORT + 1)); done
		addr=("-E=$PORT")
	fi
	$(on 0) env LD_LIBRARY_PATH="$libdir" timeout "$TIMEOUT" \
		"$prog" -p oxshm "${addr[@]}" -I "$ITERS" "$@" >"$slog" 2>&1 &
	spid=$!
	for i in $(seq 1 100); do
		if [ "$ADDRESSING" = oob ]; then
			listening "$PORT" && break
		elif [ "$i" -ge 5 ]; then
			break
		fi
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	$(on 1) env LD_LIBRARY_PATH="$libdir" timeout "$TIMEOUT" \
		"$prog" -p oxshm "${addr[@]}" -I "$ITERS" "$@" 127.0.0.1 >"$clog" 2>&1 || rc=$?
	wait "$spid" || src_rc=$?
	if [ "$rc" -ne 0 ] || [ "$src_rc" -ne 0 ]; then
		echo "bench/wait_run.sh: $kind (round $r) failed: client exit $rc, server exit $src_rc"
		sed 's/^/    client: /' "$clog"
		sed 's/^/    server: /' "$slog"
		exit 1
	fi
	v=$(figure "$clog")
	[ -n "$v" ] || { echo "bench/wait_run.sh: no figure in $clog"; cat "$clog"; exit 1; }
	echo "$v" >>"$OUT/wait.$kind.fig"
}

run_ceiling() {
	local log=$OUT/wait.eventfd.$1.log v
	timeout "$TIMEOUT" "$ceiling" "$ITERS" 100 "${cpus[@]}" >"$log" 2>&1 ||
		{ echo "bench/wait_run.sh: eventfd_pingpong failed:"; cat "$log"; exit 1; }
	v=$(awk '$1 == "eventfd_pingpong" { print $5 }' "$log")
	[ -n "$v" ] || { echo "bench/wait_run.sh: no figure in $log"; exit 1; }
	echo "$v" >>"$OUT/wait.eventfd.fig"
}

kinds=(eventfd spin sread yield fd cntr)
rm -f "$OUT"/wait.*.fig
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq 1 "$RUNS"); do
	run_ceiling "$r"
	run_pair spin "$r" fi_rdm_pingpong -S 64
	run_pair sread "$r" fi_rdm_pingpong -S 64 -c sread
	run_pair yield "$r" fi_rdm_pingpong -S 64 -c yield
	run_pair fd "$r" fi_rdm_pingpong -S 64 -c fd
	run_pair cntr "$r" fi_rdm_cntr_pingpong -S 64
done
elapsed=$(($(date +%s) - start))

# med KIND: the median of KIND's figures.
med() {
	sort -g "$OUT/wait.$1.fig" |
		awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

echo "== wait_run: $RUNS round(s) of $ITERS iterations, ${elapsed}s; load ${load0} -> $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   library $ours_lib; fabtests $FABTESTS_BIN; addressing $ADDRESSING; placement $PIN${cpus[*]:+ (CPUs ${cpus[*]})}"
echo "   figures: half round trip, 64 bytes, median over the rounds (us)"
declare -A m
for k in "${kinds[@]}"; do m[$k]=$(med "$k"); done

# kind|label|reference kind|max ratio
rows=(
	"eventfd|eventfd + epoll, 2 processes (ceiling)|-|-"
	"spin|fi_rdm_pingpong -c spin (fi_cq_read)|-|-"
	"sread|fi_rdm_pingpong -c sread (FI_WAIT_UNSPEC)|spin|2"
	"yield|fi_rdm_pingpong -c yield (FI_WAIT_YIELD)|spin|2"
	"fd|fi_rdm_pingpong -c fd (fi_trywait+poll)|eventfd|1.5"
	"cntr|fi_rdm_cntr_pingpong (fi_cntr_wait)|spin|2"
)
results=()
printf '\n%-44s %9s %-8s %9s %7s  %-12s %s\n' kind us "vs" "ref us" ratio target verdict
printf '%s\n' "$(printf '%.0s-' {1..102})"
for row in "${rows[@]}"; do
	IFS='|' read -r k label ref max <<<"$row"
	o=${m[$k]}
	all=$(sort -g "$OUT/wait.$k.fig" | paste -sd' ')
	if [ "$ref" = - ]; then
		printf '%-44s %9.2f %-8s %9s %7s  %-12s %s   [%s]\n' "$label" "$o" - - - - - "$all"
		results+=("result $k $o - - - -")
		continue
	fi
	u=${m[$ref]}
	ratio=$(awk -v o="$o" -v u="$u" 'BEGIN { if (u > 0) printf "%.2f", o / u; else print "n/a" }')
	if [ "$RUNS" -lt 3 ]; then
		verdict="- (needs RUNS>=3)"
	elif [ "$ref" = spin ] && [ "$PIN" = same ]; then
		# Two spinning processes on one CPU take turns by time slice.
		verdict="- (spin shares one CPU)"
	else
		verdict=$(awk -v r="$ratio" -v t="$max" 'BEGIN { print (r != "n/a" && r + 0 <= t + 0) ? "PASS" : "MISS" }')
	fi
	printf '%-44s %9.2f %-8s %9.2f %7s  %-12s %s   [%s]\n' "$label" "$o" "$ref" "$u" "$ratio" "<=${max}x $ref" "$verdict" "$all"
	results+=("result $k $o $u $ratio <=${max}x_$ref ${verdict%% *}")
done
echo
printf '%s\n' "${results[@]}"
