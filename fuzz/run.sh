#!/usr/bin/env bash
# Runs the fi_mr libFuzzer target once per oxshm registration mode
# (FI_OXSHM_MR_MODE), one after the other.
#
#   fuzz/run.sh smoke           deterministic: fixed seed, a fresh work dir
#                               seeded from fuzz/corpus, bounded by -runs
#                               (and a time cap); for `make test`
#   fuzz/run.sh long [SECONDS]  SECONDS in all (default 300) shared among the
#                               modes; the work corpus under build/fuzz/corpus
#                               is kept between runs
#
# Environment: FUZZ_BIN (default build/fuzz/fuzz_mr), FUZZ_MODES (a
# space-separated subset of the mode names below), FUZZ_SMOKE_RUNS
# (executions per mode in smoke runs), FUZZ_SEEDS (seed directory, default
# fuzz/corpus), FUZZ_ARGS (more libFuzzer flags).
#
# A crash, leak, timeout, out-of-memory or broken invariant stops the run:
# the script names the reproducer (build/fuzz/artifacts/MODE/...), prints
# the command that replays it, and exits non-zero.
set -uo pipefail
cd "$(dirname "$0")/.."

kind=${1:-smoke}
total=${2:-300}
BIN=${FUZZ_BIN:-build/fuzz/fuzz_mr}
OUT=build/fuzz
SMOKE_RUNS=${FUZZ_SMOKE_RUNS:-45000}
SEEDS=${FUZZ_SEEDS:-fuzz/corpus}

# name=FI_OXSHM_MR_MODE value ("-" leaves the variable unset: oxshm keeps
# FI_MR_PROV_KEY when offered, and nothing is required).
MODES=(
	"default=-"
	"none=0"
	"raw_alloc=FI_MR_RAW|FI_MR_ALLOCATED|FI_MR_VIRT_ADDR|FI_MR_PROV_KEY|FI_MR_LOCAL"
	"ep_event=FI_MR_ENDPOINT|FI_MR_RMA_EVENT|FI_MR_MMU_NOTIFY|FI_MR_HMEM|FI_MR_COLLECTIVE|FI_MR_XPU_DESC"
)
if [ -n "${FUZZ_MODES:-}" ]; then
	sel=()
	for m in "${MODES[@]}"; do
		for want in $FUZZ_MODES; do
			[ "${m%%=*}" = "$want" ] && sel+=("$m")
		done
	done
	MODES=("${sel[@]}")
fi
[ ${#MODES[@]} -gt 0 ] || { echo "fuzz/run.sh: no mode selected"; exit 2; }
[ -x "$BIN" ] || { echo "fuzz/run.sh: $BIN is missing (make fuzz-smoke builds it)"; exit 2; }

# Library log off (the default) keeps libFuzzer's output readable. Leaks
# fail the run; so does any UBSan report in the harness.
unset FI_LOG_LEVEL
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
SYMBOLIZER=$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer 2>/dev/null | tail -1 || true)
[ -n "$SYMBOLIZER" ] && export ASAN_SYMBOLIZER_PATH=$SYMBOLIZER

per=$(( total / ${#MODES[@]} ))
[ $per -ge 5 ] || per=5
status=0
for m in "${MODES[@]}"; do
	name=${m%%=*}
	value=${m#*=}
	art=$OUT/artifacts/$name
	mkdir -p "$art"
	if [ "$kind" = smoke ]; then
		work=$(mktemp -d "$OUT/smoke-$name.XXXXXX")
		args=(-seed=1 -runs="$SMOKE_RUNS" -max_total_time=10 "$work" "$SEEDS")
	else
		work=$OUT/corpus/$name
		mkdir -p "$work"
		args=(-max_total_time="$per" -len_control=0 "$work" "$SEEDS")
	fi
	if [ "$value" = - ]; then
		envset=(env -u FI_OXSHM_MR_MODE)
		shown="(FI_OXSHM_MR_MODE unset)"
	else
		envset=(env "FI_OXSHM_MR_MODE=$value")
		shown="FI_OXSHM_MR_MODE='$value'"
	fi
	echo "fuzz: mode $name: $shown, $kind"
	log=$OUT/fuzz-$name.log
	# libFuzzer writes the new inputs into the first directory only, so
	# the seed directory stays as committed.
	before=$(ls "$art" | wc -l)
	"${envset[@]}" "$BIN" -timeout=10 -rss_limit_mb=4096 -max_len=4096 \
		-print_final_stats=1 -artifact_prefix="$art/" ${FUZZ_ARGS:-} \
		"${args[@]}" >"$log" 2>&1
	rc=$?
	[ "$kind" = smoke ] && rm -rf "$work"
	grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" | sed 's/^/  /'
	grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" | sed 's/^/  /'
	if [ $rc -ne 0 ]; then
		status=1
		echo "fuzz: mode $name FAILED (exit $rc); log: $log"
		grep -E 'invariant broken|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$log" | head -5 | sed 's/^/  /'
		repro=$(sed -n "s|.*Test unit written to \(.*\)$|\1|p" "$log" | tail -1)
		if [ -z "$repro" ] && [ "$(ls "$art" | wc -l)" -gt "$before" ]; then
			repro=$art/$(ls -t "$art" | head -1)
		fi
		if [ -n "$repro" ]; then
			echo "fuzz: reproducer: $repro"
			printf 'fuzz: replay:     %s FUZZ_MR_TRACE=1 %s %s\n' \
				"$(printf '%q ' "${envset[@]}")" "$BIN" "$repro"
		fi
		tail -40 "$log" | sed 's/^/  | /'
		break
	fi
done
if [ $status -eq 0 ]; then
	echo "fuzz: $kind run passed in ${#MODES[@]} modes"
fi
exit $status
