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
# Each of RUNS rounds (at least 3 for a verdict) runs every kind once per
# placement (below), in the order above, so all kinds see the same machine;
# a table per placement gives the median over the rounds. Targets: sread, yield and cntr within 2x of spin;
# fd within 1.5x of eventfd. A MISS is informative and does not fail the
# run; a run that fails (a program exits non-zero, no figure) fails the
# script.
#
# Placement (PIN, a list): where a process sleeps and wakes matters more
# than anything a library does: on a virtual machine, waking a process on
# an idle CPU costs tens of microseconds, on the waker's own CPU a context
# switch. Left to the scheduler, a pair lands in either case from one run
# to the next, so figures of two runs may compare different cases. Each
# round runs every kind under each placement of the list:
#   split  the server side (and the ceiling's parent) on CPU 0, the client
#          side (the ceiling's child) on CPU 1: a job of two processes on
#          two cores
#   same   both on CPU 0: context switches only, the software cost of each
#          path (spin is not run: two spinners on one CPU take turns by
#          time slice, so sread, yield and cntr get figures, no verdict)
#   none   placement left to the scheduler
# The processes' own threads (oxshm's progress threads) share their CPU.
# Default: "split same".
#
# Addressing: fabtests' out-of-band exchange (-E=<port>, a TCP socket on
# loopback; ADDRESSING=oob, the default), or the provider's own node/service
# resolution (ADDRESSING=node: the client is given 127.0.0.1).
#
# The last lines are machine-readable:
#   result <placement> <kind> <ours_us> <reference_us> <ratio> <target> <PASS|MISS|->
#
# Usage: bench/wait_run.sh [-q]   (-q: 2,000 iterations, one round)
# Environment: BUILD (default build), FABTESTS_BIN (default
#   $BUILD/ft/inst/bin), RUNS (default 3), ITERS (default 10000), CC,
#   TIMEOUT (s per program, default 120), PORT (first OOB port; default
#   random in 20000-39999), ADDRESSING (oob|node), PIN (placements, of
#   split, same and none; default "split same").
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
PIN=${PIN:-split same}
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
read -r -a placements <<<"$PIN"
[ "${#placements[@]}" -gt 0 ] || { echo "bench/wait_run.sh: PIN is empty"; exit 1; }
# place PLACEMENT: sets cpus to the CPUs of the server and client sides.
place() {
	case $1 in
	split) cpus=(0 1) ;;
	same) cpus=(0 0) ;;
	none) cpus=() ;;
	*)
		echo "bench/wait_run.sh: a placement is split, same or none, not $1"
		exit 1
		;;
	esac
	if [ "${#cpus[@]}" -gt 0 ] && [ "$(nproc)" -lt $((cpus[1] + 1)) ]; then
		echo "bench/wait_run.sh: placement $1 needs CPUs ${cpus[*]}; this machine has $(nproc)"
		exit 1
	fi
}
for pl in "${placements[@]}"; do place "$pl"; done
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
	ss -Hltn "sport = :$1" 2>/dev/null | grep . >/dev/null
}

# figure LOG: the usec/xfer column of fabtests' result line.
figure() {
	awk '$1 == "64" && NF >= 7 { v = $6 } END { if (v != "") print v }' "$1"
}

# run_pair KIND ROUND PROGRAM ARGS...: one server/client run under the
# current placement ($pl, $cpus); appends the client's figure to
# $OUT/wait.$pl.KIND.fig.
run_pair() {
	local kind=$1 r=$2 prog=$FABTESTS_BIN/$3
	shift 3
	local slog=$OUT/wait.$pl.$kind.$r.server.log clog=$OUT/wait.$pl.$kind.$r.client.log
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
	echo "$v" >>"$OUT/wait.$pl.$kind.fig"
}

run_ceiling() {
	local log=$OUT/wait.$pl.eventfd.$1.log v
	timeout "$TIMEOUT" "$ceiling" "$ITERS" 100 "${cpus[@]}" >"$log" 2>&1 ||
		{ echo "bench/wait_run.sh: eventfd_pingpong failed:"; cat "$log"; exit 1; }
	v=$(awk '$1 == "eventfd_pingpong" { print $5 }' "$log")
	[ -n "$v" ] || { echo "bench/wait_run.sh: no figure in $log"; exit 1; }
	echo "$v" >>"$OUT/wait.$pl.eventfd.fig"
}

kinds=(eventfd spin sread yield fd cntr)
rm -f "$OUT"/wait.*.fig
start=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq 1 "$RUNS"); do
	for pl in "${placements[@]}"; do
		place "$pl"
		run_ceiling "$r"
		if [ "$pl" != same ]; then
			run_pair spin "$r" fi_rdm_pingpong -S 64
		fi
		run_pair sread "$r" fi_rdm_pingpong -S 64 -c sread
		run_pair yield "$r" fi_rdm_pingpong -S 64 -c yield
		run_pair fd "$r" fi_rdm_pingpong -S 64 -c fd
		run_pair cntr "$r" fi_rdm_cntr_pingpong -S 64
	done
done
elapsed=$(($(date +%s) - start))

# med FILE: the median of the figures in FILE.
med() {
	sort -g "$1" |
		awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

echo "== wait_run: $RUNS round(s) of $ITERS iterations, ${elapsed}s; load ${load0} -> $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   library $ours_lib; fabtests $FABTESTS_BIN; addressing $ADDRESSING"
echo "   figures: half round trip, 64 bytes, median over the rounds (us) [each round's]"

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
for pl in "${placements[@]}"; do
	place "$pl"
	declare -A m=()
	for k in "${kinds[@]}"; do
		f=$OUT/wait.$pl.$k.fig
		if [ -s "$f" ]; then m[$k]=$(med "$f"); else m[$k]=-; fi
	done
	printf '\n-- placement %s%s\n' "$pl" "${cpus[*]:+ (server side on CPU ${cpus[0]}, client side on CPU ${cpus[1]})}"
	printf '%-44s %9s %-8s %9s %7s  %-15s %s\n' kind us "vs" "ref us" ratio target verdict
	printf '%s\n' "$(printf '%.0s-' {1..102})"
	for row in "${rows[@]}"; do
		IFS='|' read -r k label ref max <<<"$row"
		o=${m[$k]}
		[ "$o" != - ] || continue
		all=$(sort -g "$OUT/wait.$pl.$k.fig" | paste -sd' ')
		u=-
		[ "$ref" = - ] || u=${m[$ref]}
		if [ "$u" = - ]; then
			why=-
			[ "$ref" = - ] || why="(no $ref here)"
			printf '%-44s %9.2f %-8s %9s %7s  %-15s %s   [%s]\n' "$label" "$o" - - - - "$why" "$all"
			results+=("result $pl $k $o - - - -")
			continue
		fi
		ratio=$(awk -v o="$o" -v u="$u" 'BEGIN { if (u > 0) printf "%.2f", o / u; else print "n/a" }')
		if [ "$RUNS" -lt 3 ]; then
			verdict="- (needs RUNS>=3)"
		else
			verdict=$(awk -v r="$ratio" -v t="$max" 'BEGIN { print (r != "n/a" && r + 0 <= t + 0) ? "PASS" : "MISS" }')
		fi
		printf '%-44s %9.2f %-8s %9.2f %7s  %-15s %s   [%s]\n' "$label" "$o" "$ref" "$u" "$ratio" "<=${max}x $ref" "$verdict" "$all"
		results+=("result $pl $k $o $u $ratio <=${max}x_$ref ${verdict%% *}")
	done
	unset m
done
echo
printf '%s\n' "${results[@]}"
