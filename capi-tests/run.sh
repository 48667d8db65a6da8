#!/usr/bin/env bash
# The C API suites: every capi-tests/test_*.c, from one source, built against
# each header set and run on build/libfabric.so.1:
#   ours       -I include (oxfabric's generated headers)
#   deb117     Debian's libfabric 1.17 headers (/usr/include/rdma)
#   up21       upstream 2.1 headers (build/upstream/2.1/include)
#   deb117-bin 1.17 headers linked against Debian's libfabric.so, i.e. a
#              binary built for upstream 1.17 (bound to its FABRIC_1.3
#              symbols), then run on ours through LD_LIBRARY_PATH
#   asan       ours, under -fsanitize=address,undefined with leak checking
#   valgrind   ours, under valgrind --leak-check=full
#   staged     ours, with FI_OXSHM_CMA=0: every bulk transfer between
#              processes goes through shared memory, as where the kernel
#              does not permit cross-memory attach; and with
#              FI_OXSHM_MEMBARRIER=0: every message is published with a
#              full fence, as where membarrier(2) is missing
#   staged-asan  asan, with FI_OXSHM_CMA=0 FI_OXSHM_MEMBARRIER=0
# Usage: [BUILDS="ours asan ..."] capi-tests/run.sh [test_name ...]
#        (default: every build, every test)
set -euo pipefail
trap 'echo "run.sh: stopped at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
LIB=$BUILD/libfabric.so.1
OUT=$BUILD/capi-tests
CC=${CC:-cc}
UP21=$BUILD/upstream/2.1/include
DEBIAN_LIBDIR=/usr/lib/x86_64-linux-gnu
CFLAGS=(-std=c11 -Wall -Wextra -Werror -g -O1)
# Upstream's headers need no warning exemptions under these flags (checked
# for 1.17 and 2.1); were one needed, it would go here, never into ours.
UPSTREAM_CFLAGS=()
LIBS=(-pthread -ldl)
export LD_LIBRARY_PATH=$PWD/$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Leaks fail the asan run; UBSan findings stop it instead of scrolling past.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=23
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
VALGRIND=(valgrind -q --error-exitcode=1 --leak-check=full
	--errors-for-leak-kinds=definite,possible --trace-children=yes
	--child-silent-after-fork=yes)
TIMEOUT=${TIMEOUT:-300}

[ -e "$LIB" ] || { echo "run.sh: $LIB is missing (make lib)"; exit 1; }
[ -d "$UP21/rdma" ] && [ -f /usr/include/rdma/fabric.h ] ||
	{ echo "run.sh: upstream headers are missing (make deps)"; exit 1; }
command -v valgrind >/dev/null ||
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null; }

if [ $# -gt 0 ]; then
	srcs=(); for t in "$@"; do srcs+=("capi-tests/${t%.c}.c"); done
else
	srcs=(capi-tests/test_*.c)
fi
read -r -a builds <<<"${BUILDS:-ours deb117 up21 deb117-bin asan valgrind staged staged-asan}"

passed=0 failed=0 failures=()

# Debian's headers through a directory of their own: with a plain
# /usr/include, an oxfabric installed under /usr/local/include would win.
mkdir -p "$OUT/hdr117"
ln -sfn /usr/include/rdma "$OUT/hdr117/rdma"
hdr_ours=(-I include -DTEST_EXPECT_MAJOR=2 -DTEST_EXPECT_MINOR=7)
hdr_117=(-I "$OUT/hdr117" -DTEST_EXPECT_MAJOR=1 -DTEST_EXPECT_MINOR=17 "${UPSTREAM_CFLAGS[@]}")
hdr_21=(-I "$UP21" -DTEST_EXPECT_MAJOR=2 -DTEST_EXPECT_MINOR=1 "${UPSTREAM_CFLAGS[@]}")

# compile BUILD SRC BIN: the compile and link line of one build.
compile() {
	local b=$1 src=$2 bin=$3 ours=(-L "$BUILD" -lfabric "${LIBS[@]}")
	case $b in
	ours) $CC "${CFLAGS[@]}" "${hdr_ours[@]}" -o "$bin" "$src" "${ours[@]}" ;;
	asan) $CC "${CFLAGS[@]}" -fsanitize=address,undefined -fno-omit-frame-pointer \
		-fno-sanitize-recover=undefined "${hdr_ours[@]}" -o "$bin" "$src" "${ours[@]}" ;;
	deb117) $CC "${CFLAGS[@]}" "${hdr_117[@]}" -o "$bin" "$src" "${ours[@]}" ;;
	up21) $CC "${CFLAGS[@]}" "${hdr_21[@]}" -o "$bin" "$src" "${ours[@]}" ;;
	# No -L build: the link resolves against Debian's libfabric.so.
	deb117-bin) $CC "${CFLAGS[@]}" "${hdr_117[@]}" -o "$bin" "$src" \
		-L "$DEBIAN_LIBDIR" -lfabric "${LIBS[@]}" ;;
	esac
}

# A binary built for upstream 1.17 must carry 1.17's default versions of
# the info calls, and must load our library, not Debian's.
check_deb117_bin() {
	local bin=$1 bad
	bad=$(objdump -T "$bin" | awk '/ fi_(getinfo|freeinfo|dupinfo)$/ && $(NF-1) != "(FABRIC_1.3)"')
	if [ -n "$bad" ]; then
		echo "expected FABRIC_1.3 bindings, got:"; echo "$bad"; return 1
	fi
	# Not `grep -q`: under pipefail, an early grep exit makes ldd's SIGPIPE
	# look like a failure.
	if ! ldd "$bin" | grep "libfabric.so.1 => $PWD/$BUILD/libfabric.so.1" >/dev/null; then
		echo "does not load $LIB:"; ldd "$bin" | grep libfabric; return 1
	fi
}

# Every build must print the `result:` lines the ours build printed: the
# same program gives the same results whichever headers it was built with.
same_results() {
	local b=$1 name=$2
	[ "$b" = ours ] && return 0
	if ! diff <(grep -o 'result: .*' "$OUT/ours/$name.log") <(grep -o 'result: .*' "$OUT/$b/$name.log") \
		>"$OUT/$b/$name.diff"; then
		echo "results differ from the ours build:"; cat "$OUT/$b/$name.diff"; return 1
	fi
}

. capi-tests/kernel_log.sh

run_one() {
	local b=$1 bin=$2
	case $b in
	# OX_TEST_SCALE (percent) shrinks the big loops of some tests under valgrind.
	valgrind) OX_TEST_SCALE=${OX_TEST_SCALE:-1} timeout "$TIMEOUT" "${VALGRIND[@]}" "$bin" ;;
	deb117-bin) check_deb117_bin "$bin" && timeout "$TIMEOUT" "$bin" ;;
	staged | staged-asan) FI_OXSHM_CMA=0 FI_OXSHM_MEMBARRIER=0 timeout "$TIMEOUT" "$bin" ;;
	*) timeout "$TIMEOUT" "$bin" ;;
	esac
}

for b in "${builds[@]}"; do
	mkdir -p "$OUT/$b"
	for src in "${srcs[@]}"; do
		name=$(basename "$src" .c)
		bin=$OUT/$b/$name log=$OUT/$b/$name.log
		: >"$log"
		if [ "$b" = valgrind ] || [ "$b" = staged ] || [ "$b" = staged-asan ]; then
			# These run the binaries of the ours and asan builds.
			base=ours; [ "$b" = staged-asan ] && base=asan
			bin=$OUT/$base/$name
			built=$([ -x "$bin" ] && echo yes || echo no)
		else
			rm -f "$bin"
			built=$(compile "$b" "$src" "$bin" >>"$log" 2>&1 && echo yes || echo no)
		fi
		mark=$(kernel_mark)
		if [ "$built" = no ]; then
			why="build failed"
		elif run_one "$b" "$bin" >>"$log" 2>&1 && same_results "$b" "$name" >>"$log" 2>&1; then
			passed=$((passed + 1))
			echo "PASS $b $name: $(tail -n 1 "$log" | sed 's/.*: //')"
			continue
		else
			why="run failed (exit $?)"
		fi
		failed=$((failed + 1))
		failures+=("$b/$name")
		echo "FAIL $b $name: $why; $log:"
		{ grep -E 'FAIL|error|ERROR|check failed|returned|Summary|definitely|signal|expected|missing|differ|^[<>]' "$log" || true; } |
			head -n 30 | sed 's/^/    /'
		kernel_since "$mark" | sed 's/^/    /'
	done
done

[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
echo "capi-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
