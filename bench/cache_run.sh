#!/usr/bin/env bash
# The registration cache benchmark (`make bench`): bench/mr_cache_bench.c on
# oxfabric's oxshm in pinned mode, one process per environment.
#   pinned 64 KiB registration: a miss (FI_MR_CACHE_MAX_COUNT=0) and a hit,
#   fi_mr_reg and fi_close timed apart and together; the targets of the
#   registration cache issue (12): a hit's fi_mr_reg at most 60 ns, and a
#   hit at least 20x cheaper than a miss (registration + close of the
#   buffer, pinned and unpinned each time without the cache); a MISS is
#   informative, as in run.sh
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
vals=$OUT/cache-values.txt
: >"$vals"
run() { env FI_PROVIDER=oxshm "$@" | tee -a "$vals"; }
run FI_OXSHM_PIN=1 FI_MR_CACHE_MAX_COUNT=0 "$bin" reg pinned_64k_reg_miss "$ITERS"
run FI_OXSHM_PIN=1 "$bin" reg pinned_64k_reg_hit "$ITERS"
run FI_OXSHM_PIN=0 "$bin" reg unpinned_64k_reg "$ITERS"
run FI_OXSHM_PIN=0 "$bin" bare churn_unregistered "$ITERS"
run FI_OXSHM_PIN=1 FI_MR_CACHE_MONITOR=userfaultfd "$bin" churn churn_reg_userfaultfd "$ITERS"
run FI_OXSHM_PIN=1 FI_MR_CACHE_MONITOR=memhooks "$bin" churn churn_reg_memhooks "$ITERS"
run FI_OXSHM_PIN=1 FI_MR_CACHE_MAX_COUNT=0 "$bin" churn churn_reg_uncached "$ITERS"

val() { awk -v m="$1" '$1 == "value" && $2 == m { print $3 }' "$vals"; }
hit=$(val pinned_64k_reg_hit_reg)
hit_pair=$(val pinned_64k_reg_hit)
miss_pair=$(val pinned_64k_reg_miss)
[ -n "$hit" ] && [ -n "$hit_pair" ] && [ -n "$miss_pair" ] ||
	{ echo "bench/cache_run.sh: a figure is missing"; exit 1; }
# The hit's fi_mr_reg against the target; the saving as registration +
# close of a buffer without the cache (pin, then unpin, every time) over
# the same with it.
awk -v h="$hit" -v hp="$hit_pair" -v mp="$miss_pair" 'BEGIN {
	printf "result cache_hit_reg_ns %.1f 60 %s\n", h, (h <= 60 ? "PASS" : "MISS")
	printf "result cache_miss_over_hit %.1f 20 %s\n", mp / hp, (mp / hp >= 20 ? "PASS" : "MISS")
}'
