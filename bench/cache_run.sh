#!/usr/bin/env bash
# The registration cache benchmark (`make bench`): bench/mr_cache_bench.c on
# oxfabric's oxshm in pinned mode, one process per environment.
#   pinned 64 KiB registration: a miss (FI_MR_CACHE_MAX_COUNT=0) and a hit
#   munmap + mmap(MAP_FIXED) churn of a buffer registered again after each
#   change, under userfaultfd and memhooks, and unregistered churn (the
#   application's own cost) for the difference
# Usage: bench/cache_run.sh [-q]   (-q: fewer iterations)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=$BUILD/bench
CC=${CC:-cc}
ITERS=2000
[ "${1:-}" = -q ] && ITERS=200
[ -e "$BUILD/libfabric.so.1" ] || { echo "bench/cache_run.sh: $BUILD/libfabric.so.1 is missing (make lib)"; exit 1; }
mkdir -p "$OUT"
bin=$OUT/mr_cache_bench
$CC -std=c11 -O2 -Wall -Wextra -Werror -Iinclude -o "$bin" bench/mr_cache_bench.c \
	-L"$BUILD" -lfabric -Wl,-rpath,"$PWD/$BUILD"
run() { env FI_PROVIDER=oxshm "$@"; }
run FI_OXSHM_PIN=1 FI_MR_CACHE_MAX_COUNT=0 "$bin" reg pinned_64k_reg_miss "$ITERS"
run FI_OXSHM_PIN=1 "$bin" reg pinned_64k_reg_hit "$ITERS"
run FI_OXSHM_PIN=0 "$bin" reg unpinned_64k_reg "$ITERS"
run FI_OXSHM_PIN=0 "$bin" bare churn_unregistered "$ITERS"
run FI_OXSHM_PIN=1 FI_MR_CACHE_MONITOR=userfaultfd "$bin" churn churn_reg_userfaultfd "$ITERS"
run FI_OXSHM_PIN=1 FI_MR_CACHE_MONITOR=memhooks "$bin" churn churn_reg_memhooks "$ITERS"
run FI_OXSHM_PIN=1 FI_MR_CACHE_MAX_COUNT=0 "$bin" churn churn_reg_uncached "$ITERS"
