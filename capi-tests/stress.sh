#!/usr/bin/env bash
# The data-path soak: capi-tests/stress_data.c (several processes, several
# endpoints each, a random mix of writes, reads, atomics and messages while
# MRs are registered, rotated and closed; every byte and every counter
# checked at the end), built against our headers and build/libfabric.so.1
# and run seven times for SECONDS each:
#   ours     -I include, like run.sh's `ours` build
#   asan     the same under -fsanitize=address,undefined with leak checking
#   staged   the ours binary with FI_OXSHM_CMA=0 (bulk transfers through
#            shared memory, as where cross-memory attach is not permitted)
#   staged-asan  the asan binary with FI_OXSHM_CMA=0
#   alone    the ours binary with FI_OXSHM_SHARE=0 (targets copy every bulk
#            transfer themselves)
#   shared   the ours binary with FI_OXSHM_SHARE=1 (targets always share
#            bulk copies with their initiators; by default they measure
#            which is faster and may switch between the two mid-run)
#   direct   the ours binary with -D: no remote counters, so initiators
#            copy RMA of 8 KiB and more themselves after checking the
#            target's shared registration slots (direct RMA); the other
#            variants bind remote counters, which keep RMA on the
#            request path
# Usage: [VARIANTS="ours asan ..."] capi-tests/stress.sh [SECONDS]   (default 5;
#        every variant)
# STRESS_ARGS adds options (e.g. STRESS_ARGS="-p 6 -e 3 -s 0x1234").
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${1:-5}
[[ $SECS =~ ^[0-9]+([.][0-9]+)?$ ]] && [ "${SECS%.*}" -lt 3600 ] ||
	{ echo "usage: capi-tests/stress.sh [SECONDS]" >&2; exit 2; }
BUILD=${BUILD:-build}
LIB=$BUILD/libfabric.so.1
OUT=$BUILD/capi-tests/stress
CC=${CC:-cc}
SRC=capi-tests/stress_data.c
CFLAGS=(-std=c11 -Wall -Wextra -Werror -g -O1)
HDR=(-I include -DTEST_EXPECT_MAJOR=2 -DTEST_EXPECT_MINOR=7)
LIBS=(-L "$BUILD" -lfabric -pthread -ldl)
read -r -a EXTRA <<<"${STRESS_ARGS:-}"
export LD_LIBRARY_PATH=$PWD/$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=23
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# The program times itself out (alarm at SECONDS + 105, after its own
# timeouts, which say what each endpoint waits for; later by the time the
# kernel held a process in a memory-management call, up to 240 s more);
# this is the backstop.
LIMIT=$(( ${SECS%.*} + 390 ))

[ -e "$LIB" ] || { echo "stress.sh: $LIB is missing (make lib)"; exit 1; }
mkdir -p "$OUT"

compile() {
	case $1 in
	ours) $CC "${CFLAGS[@]}" "${HDR[@]}" -o "$2" "$SRC" "${LIBS[@]}" ;;
	asan) $CC "${CFLAGS[@]}" -fsanitize=address,undefined -fno-omit-frame-pointer \
		-fno-sanitize-recover=undefined "${HDR[@]}" -o "$2" "$SRC" "${LIBS[@]}" ;;
	esac
}

. capi-tests/kernel_log.sh
failed=()
read -r -a variants <<<"${VARIANTS:-ours asan staged staged-asan alone shared direct}"
for b in "${variants[@]}"; do
	log=$OUT/$b.log
	: >"$log"
	case $b in
	staged) bin=$OUT/stress_data-ours env=(FI_OXSHM_CMA=0) args=() ;;
	staged-asan) bin=$OUT/stress_data-asan env=(FI_OXSHM_CMA=0) args=() ;;
	alone) bin=$OUT/stress_data-ours env=(FI_OXSHM_SHARE=0) args=() ;;
	shared) bin=$OUT/stress_data-ours env=(FI_OXSHM_SHARE=1) args=() ;;
	direct) bin=$OUT/stress_data-ours env=() args=(-D) ;;
	*) bin=$OUT/stress_data-$b env=() args=() ;;
	esac
	if [ ${#env[@]} -eq 0 ] && [ ${#args[@]} -eq 0 ]; then
		rm -f "$bin"
		compile "$b" "$bin" >>"$log" 2>&1 || true
	fi
	mark=$(kernel_mark)
	if [ ! -x "$bin" ]; then
		why="build failed"
	elif env "${env[@]}" timeout "$LIMIT" "$bin" -t "$SECS" "${args[@]}" "${EXTRA[@]}" >>"$log" 2>&1; then
		echo "PASS stress $b: $(grep -o '[0-9]* operations in .*' "$log" | tail -n 1)"
		grep -E '^stress_data: (writes|expected|the kernel held)' "$log" | sed 's/^stress_data: /    /'
		continue
	else
		why="run failed (exit $?)"
	fi
	failed+=("$b")
	echo "FAIL stress $b: $why; $log:"
	{ grep -E 'FAIL|error|ERROR|SUMMARY|seed|leaked|signal|runtime|stress_data: pid|^    |^#|^Thread' "$log" ||
		tail -n 20 "$log"; } | head -n 120 | sed 's/^/    /'
	kernel_since "$mark" | sed 's/^/    /'
done

if [ ${#failed[@]} -gt 0 ]; then
	echo "stress: FAIL (${failed[*]})"
	exit 1
fi
echo "stress: PASS"
