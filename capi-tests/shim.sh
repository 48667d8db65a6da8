#!/usr/bin/env bash
# liboxfabric-shim.so, preloaded:
#  - shim_misuse.c, one misuse per run, over Debian's libfabric 1.17
#    (tcp;ofi_rxm, loopback in one process) and over oxfabric's own
#    libfabric.so.1 (oxshm), in report and strict mode: the call's return
#    code, and the finding in the JSON report with its count and call site;
#    for the data-path descs also that a refused call reached nothing (no
#    completion, no data moved), a correct run of every kind of transfer
#    with zero findings, and OXSHIM_DATAPATH=0; munmap and
#    madvise(MADV_DONTNEED) of memory under an open MR;
#  - a clean run of each, and one with OXSHIM_MODE=off (nothing patched,
#    no report);
#  - 12 threads registering at once on one domain, over both: every
#    registration counted (over tcp;ofi_rxm libfabric's own too), none lost;
#  - a double close and a clean run on Debian's shm, sockets and udp;ofi_rxd;
#  - 19 of oxfabric's own C suites on oxshm with the shim preloaded;
#  - Debian's fi_pingpong over tcp;ofi_rxm, two processes on 127.0.0.1, run
#    under another name (other people's cleanups kill fi_* processes): zero
#    findings, libfabric's own registrations counted apart;
#  - shim_rma2.c, two processes over tcp;ofi_rxm: 1 MiB written into the
#    peer's registration, read back and checked on both sides, the same
#    results as without the shim, zero findings on both sides;
#  - fi_pingpong and shim_rma2 between two network namespaces joined by a
#    veth pair, where permitted (root);
#  - Open MPI (shim_mpi.c) over its ofi MTL: ping-pong, one-sided and
#    matched probes, the same results as without the shim.
# Usage: capi-tests/shim.sh   (BUILD=build, after `make lib`)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
SHIM=$PWD/$BUILD/liboxfabric-shim.so
OUT=$PWD/$BUILD/shim-tests
mkdir -p "$OUT"
[ -f "$SHIM" ] || { echo "shim.sh: $SHIM missing (make lib)"; exit 1; }
# What the checks use: jq for the reports, Open MPI, iproute2 for the
# namespaces (installed here when missing; CI runs as root).
need=()
command -v jq >/dev/null || need+=(jq)
command -v mpicc >/dev/null && command -v mpirun >/dev/null || need+=(openmpi-bin libopenmpi-dev)
command -v ip >/dev/null || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq "${need[@]}" >/dev/null ||
		{ echo "shim.sh: could not install ${need[*]}"; exit 1; }
fi

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok    $1"; }
bad() { fail=$((fail + 1)); echo "FAIL  $1"; [ -f "${2:-}" ] && sed 's/^/      /' "$2" | tail -15; }

# Exports: exactly the wrapped global API at its version nodes.
expected() {
	for f in fi_getinfo fi_freeinfo fi_dupinfo; do
		for v in 1.0 1.1 1.2 1.3 1.7; do echo "$f@FABRIC_$v"; done
		echo "$f@@FABRIC_1.8"
	done
	echo fi_fabric@FABRIC_1.0
	echo fi_fabric@@FABRIC_1.1
	echo fi_fabric2@@FABRIC_1.8
	for f in munmap mremap madvise brk sbrk; do echo "$f@@GLIBC_2.2.5"; done
}
objdump -T "$SHIM" | awk '$0 !~ /\*UND\*/ && $0 !~ /\*ABS\*/ && NF >= 7 {
	v = $(NF-1); n = $NF
	if (v ~ /^\(/) { gsub(/[()]/, "", v); print n "@" v } else print n "@@" v }' |
	sort >"$OUT/exports.txt"
t="exports: the wrapped API at FABRIC_1.0..1.8, the memory calls at libc's version, nothing else"
if diff <(expected | sort) "$OUT/exports.txt" >"$OUT/exports.diff"; then ok "$t"; else bad "$t" "$OUT/exports.diff"; fi

# Built against Debian's headers and library: a binary made for upstream.
cc -std=c11 -Wall -Wextra -Werror -g -O1 -rdynamic -pthread -o "$OUT/shim_misuse" \
	capi-tests/shim_misuse.c -lfabric

# run STACK MODE CASE EXPECT_RC -> sets LOG and REPORT
run() {
	local stack=$1 mode=$2 case=$3 expect=$4 prov libpath=""
	case $stack in
	tcp) prov="tcp;ofi_rxm" ;;
	oxshm) prov=oxshm; libpath=$PWD/$BUILD ;;
	*) prov=$stack ;;
	esac
	LOG=$OUT/${stack//;/+}-$mode-$case.log
	REPORT=$OUT/${stack//;/+}-$mode-$case.json
	rm -f "$REPORT"
	env ${libpath:+LD_LIBRARY_PATH=$libpath} ${EXTRA:-} LD_PRELOAD="$SHIM" OXSHIM_MODE="$mode" \
		OXSHIM_REPORT="$REPORT" EXPECT_RC="$expect" \
		timeout 60 "$OUT/shim_misuse" "$case" "$prov" >"$LOG" 2>&1
}

# finding REPORT KIND COUNT SITE: exactly COUNT of KIND, at a site naming SITE
finding() {
	jq -e --arg k "$2" --argjson n "$3" --arg s "$4" \
		'[.findings[] | select(.kind == $k)] | length == 1 and .[0].count == $n
		 and (.[0].at | contains("(" + $s + "+"))' "$1" >/dev/null
}

for stack in tcp oxshm; do
	for mode in report strict; do
		t="$stack $mode clean"
		if run $stack $mode clean 0 && jq -e '(.findings | length == 0) and
			([.domains[] | select(.internal == false)] | .[0].registrations == 2 and .[0].closes == 2)' \
			"$REPORT" >/dev/null; then ok "$t"; else bad "$t" "$LOG"; fi

		for c in double_close closed_bind closed_refresh closed_enable closed_control; do
			kind=closed_mr_use
			[ $c = double_close ] && kind=double_close
			t="$stack $mode $c: -FI_EINVAL, 1 $kind at misuse_$c"
			if run $stack $mode $c -22 && finding "$REPORT" $kind 1 misuse_$c; then
				ok "$t"
			else
				bad "$t" "$LOG"
			fi
		done

		# The provider's answer is passed back (-FI_EBUSY on both).
		t="$stack $mode domain_live: provider's -FI_EBUSY, finding at misuse_domain_live, 2 MRs leaked"
		if run $stack $mode domain_live -16 &&
			finding "$REPORT" domain_close_live_mrs 1 misuse_domain_live &&
			finding "$REPORT" leaked_mr 2 reg &&
			grep -q "with 2 live MRs" "$LOG"; then ok "$t"; else bad "$t" "$LOG"; fi

		# Data path: every kind of transfer with the right descs is clean.
		t="$stack $mode data_clean: msg, tagged, rma, atomic with right descs: zero findings, checks on"
		if run $stack $mode data_clean 0 && jq -e '(.findings | length == 0) and
			([.domains[] | select(.internal == false)] | .[0].datapath_checks and .[0].endpoints == 1)' \
			"$REPORT" >/dev/null; then ok "$t"; else bad "$t" "$LOG"; fi

		# One misused desc per case: report mode passes the call on
		# (the provider answers), strict mode refuses it before the
		# provider sees it (no completion, no data moved).
		for c in desc_range:desc_out_of_range desc_closed:desc_closed_mr \
			desc_foreign:desc_foreign_domain desc_access:desc_wrong_access \
			read_access:desc_wrong_access desc_missing:desc_missing; do
			kind=${c#*:} c=${c%%:*}
			if [ $mode = strict ]; then
				t="$stack strict $c: -FI_EINVAL, nothing reached the provider, 1 $kind at misuse_$c"
				if run $stack strict $c -22 && grep -q "rc=-22 moved=0" "$LOG" &&
					finding "$REPORT" $kind 1 misuse_$c; then ok "$t"; else bad "$t" "$LOG"; fi
			else
				t="$stack report $c: passed on, 1 $kind at misuse_$c with the MR"
				if run $stack report $c any && finding "$REPORT" $kind 1 misuse_$c &&
					{ [ $kind = desc_missing ] || jq -e '.findings[0].mr.registered_at | contains("reg_on")' \
						"$REPORT" >/dev/null; }; then ok "$t"; else bad "$t" "$LOG"; fi
			fi
		done

		# Pages under an open MR unmapped or dropped: reported with the
		# MR and the call's site; the call itself succeeds in every mode.
		for c in unmapped dontneed; do
			t="$stack $mode $c: the call succeeds, 1 live_mr_unmapped at misuse_$c, nothing else"
			if run $stack $mode $c 0 && finding "$REPORT" live_mr_unmapped 1 misuse_$c &&
				jq -e '(.findings | length == 1) and (.findings[0].mr.registered_at | contains("reg_on"))' \
					"$REPORT" >/dev/null; then ok "$t"; else bad "$t" "$LOG"; fi
		done

		t="$stack $mode fork: the child's report beside the parent's, neither with a finding"
		if run $stack $mode fork 0 && child=$(sed -n 's/^child=//p' "$LOG") &&
			jq -e --argjson c "$child" '(.findings | length == 0) and .pid != $c and .forked_from == null and
				([.domains[] | select(.internal == false)] | .[0].closes == 2)' "$REPORT" >/dev/null &&
			jq -e --argjson c "$child" '(.findings | length == 0) and .pid == $c and .forked_from != null and
				([.domains[] | select(.internal == false)] | .[0].registrations == 0 and (.[0].leaked | length == 0))' \
				"$REPORT.$child" >/dev/null; then ok "$t"; else bad "$t" "$LOG"; fi

		t="$stack $mode leak: 2 leaked_mr at reg, listed with their site"
		if run $stack $mode leak 0 && finding "$REPORT" leaked_mr 2 reg &&
			jq -e '[.domains[] | select(.internal == false)] | .[0].leaked | length == 2' \
				"$REPORT" >/dev/null; then ok "$t"; else bad "$t" "$LOG"; fi
	done

	t="$stack OXSHIM_DATAPATH=0: a misused desc passes unchecked, the report says why"
	if EXTRA=OXSHIM_DATAPATH=0 run $stack strict desc_range any && grep -q "rc=0" "$LOG" &&
		jq -e '(.findings | length == 0) and ([.domains[] | select(.internal == false)] |
			(.[0].datapath_checks | not) and .[0].datapath_off_reason == "OXSHIM_DATAPATH=0")' \
			"$REPORT" >/dev/null; then ok "$t"; else bad "$t" "$LOG"; fi

	# Registrations from 12 threads at once (more than the shards of the
	# shim's counts): each counted, none lost; over tcp;ofi_rxm each also
	# reaches rxm's own tcp domain, counted apart by that domain's entries.
	t="$stack report threads: 12 threads x 100 reg+close on one domain: 1,202 registrations and closes counted, zero findings"
	internal=true
	[ $stack = tcp ] && internal='([.domains[] | select(.internal) | .internal_registrations] | add) >= 1202'
	if run $stack report threads 0 && jq -e "(.findings | length == 0) and
		([.domains[] | select(.internal == false)] | .[0].registrations == 1202 and .[0].closes == 1202) and
		$internal" "$REPORT" >/dev/null; then ok "$t"; else bad "$t" "$LOG"; fi

	t="$stack off clean: nothing patched, no report"
	if run $stack off clean 0 && [ ! -e "$REPORT" ]; then ok "$t"; else bad "$t" "$LOG"; fi
done

# Debian's other providers: a double close caught, a clean run clean.
for stack in shm sockets "udp;ofi_rxd"; do
	t="$stack report double_close and clean"
	if run "$stack" report double_close -22 && finding "$REPORT" double_close 1 misuse_double_close &&
		run "$stack" report clean 0 && jq -e '.findings | length == 0' "$REPORT" >/dev/null; then
		ok "$t"
	else
		bad "$t" "$LOG"
	fi
done

# Transparency: oxfabric's own C suites (built with its headers, whose
# inline calls are exported functions of libfabric.so.1) pass on oxshm with
# the shim preloaded. Left out: test_badinput (one case expects oxshm's log
# line for an MR entry called with a foreign object, which the shim refuses
# first).
SUITES="test_mr test_mr_async test_mr_attr test_mr_keys test_mr_match test_mr_mode_effects test_mr_modes
	test_mr_ops test_mr_raw test_mr_sub test_mr_close test_rma test_rma_enforce test_atomic
	test_msg test_cq_cntr test_av_ep test_fabric_domain test_compat"
# shellcheck disable=SC2086
BUILDS=ours BUILD=$BUILD bash capi-tests/run.sh $SUITES >"$OUT/suites-build.log" 2>&1 ||
	bad "oxfabric's suites without the shim" "$OUT/suites-build.log"
# The data-path checks are on; only test_rma_enforce, which passes wrong
# local descs on purpose (oxshm refuses them), may draw desc findings.
for s in $SUITES; do
	t="oxshm suite $s under the shim"
	if env LD_LIBRARY_PATH="$PWD/$BUILD" LD_PRELOAD="$SHIM" \
		timeout 300 "$PWD/$BUILD/capi-tests/ours/$s" >"$OUT/suite-$s.log" 2>&1 &&
		{ [ $s = test_rma_enforce ] || ! grep -q "oxshim: desc_" "$OUT/suite-$s.log"; }; then
		ok "$t ($(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$OUT/suite-$s.log" | tail -1))"
	else
		bad "$t" "$OUT/suite-$s.log"
	fi
done

# Upstream's fabtests (2.1.0, built against oxfabric by fabtests.sh) on
# oxshm under the shim, server and client: each exits 0 and each report
# has zero findings, with the application's endpoints hooked and the
# data-path checks on. Run under other names than fi_*, like every
# fabtests program here.
bash capi-tests/fabtests.sh build-only >"$OUT/fabtests-build.log" 2>&1 ||
	bad "fabtests build for the shim runs" "$OUT/fabtests-build.log"
FTBIN=$OUT/ftbin
mkdir -p "$FTBIN"
for p in "$BUILD"/ft/inst/bin/fi_*; do ln -sf "$PWD/$p" "$FTBIN/z${p##*/fi_}"; done
FTCLEAN='(.findings | length == 0) and
	([.domains[] | select(.internal == false) | select(.datapath_checks) | .endpoints] | add > 0)'
ftport=$((40000 + RANDOM % 10000))
while read -r prog args; do
	[ -n "$prog" ] || continue
	ftport=$((ftport + 1))
	name="${prog} ${args}"
	tag=$(echo "$name" | tr -c 'a-zA-Z0-9\n' '_')
	srv=$OUT/ft-$tag-server.json cli=$OUT/ft-$tag-client.json
	rm -f "$srv" "$cli"
	# shellcheck disable=SC2086
	env LD_LIBRARY_PATH="$PWD/$BUILD" LD_PRELOAD="$SHIM" OXSHIM_REPORT="$srv" timeout 120 \
		"$FTBIN/z$prog" -p oxshm $args -B $ftport -s 127.0.0.1 >"$OUT/ft-$tag-server.log" 2>&1 &
	spid=$!
	sleep 0.5
	crc=0 src=0
	# shellcheck disable=SC2086
	env LD_LIBRARY_PATH="$PWD/$BUILD" LD_PRELOAD="$SHIM" OXSHIM_REPORT="$cli" timeout 120 \
		"$FTBIN/z$prog" -p oxshm $args -P $ftport -s 127.0.0.1 127.0.0.1 \
		>"$OUT/ft-$tag-client.log" 2>&1 || crc=$?
	wait $spid || src=$?
	t="fabtests fi_$name on oxshm under the shim: both exit 0, zero findings, checks on"
	if [ $crc = 0 ] && [ $src = 0 ] && jq -e "$FTCLEAN" "$srv" >/dev/null 2>&1 &&
		jq -e "$FTCLEAN" "$cli" >/dev/null 2>&1; then
		ok "$t"
	else
		bad "$t" "$OUT/ft-$tag-client.log"
	fi
done <<'EOF_FT'
rdm_tagged_pingpong -S all -I 100 -v
rdm_pingpong -S all -I 100 -v
rdm_tagged_bw -S all -I 100 -v
rma_bw -e rdm -o write -S all -I 100 -v
rma_bw -e rdm -o read -S all -I 100 -v
rma_bw -e rdm -o writedata -S all -I 100 -v
rma_pingpong -e rdm -o write -S all -I 100 -v
rdm_atomic -o all -I 10
rdm_tagged_peek
unexpected_msg -e rdm -i 10
inject_test -A inject -v
EOF_FT

# Debian's fi_pingpong, two processes, tcp;ofi_rxm: zero findings,
# libfabric's own registrations counted, the application's endpoint
# hooked with the data-path checks on.
CLEAN='(.findings | length == 0) and ([.domains[].internal_registrations] | add > 0) and
	([.domains[] | select(.internal == false) | select(.datapath_checks) | .endpoints] | add > 0)'
BIN=$OUT/bin
mkdir -p "$BIN"
ln -sf /usr/bin/fi_pingpong "$BIN/xpingpong"
port=$((20000 + RANDOM % 20000))
srv=$OUT/pingpong-server.json
cli=$OUT/pingpong-client.json
rm -f "$srv" "$cli"
LD_PRELOAD="$SHIM" OXSHIM_REPORT="$srv" timeout 60 "$BIN/xpingpong" -p "tcp;ofi_rxm" -e rdm \
	-B $port -I 100 -S 65536 >"$OUT/pingpong-server.log" 2>&1 &
spid=$!
sleep 1
crc=0
LD_PRELOAD="$SHIM" OXSHIM_REPORT="$cli" timeout 60 "$BIN/xpingpong" -p "tcp;ofi_rxm" -e rdm \
	-P $port -I 100 -S 65536 127.0.0.1 >"$OUT/pingpong-client.log" 2>&1 || crc=$?
src=0
wait $spid || src=$?
t="fi_pingpong tcp;ofi_rxm under the shim: both exit 0, zero findings (data-path checks on), internal registrations counted"
if [ $crc = 0 ] && [ $src = 0 ] &&
	jq -e "$CLEAN" "$srv" >/dev/null && jq -e "$CLEAN" "$cli" >/dev/null; then
	ok "$t"
else
	bad "$t" "$OUT/pingpong-client.log"
fi

# shim_rma2: a two-process RMA test over tcp;ofi_rxm (1 MiB fi_write into
# the peer's registration, fi_read back, every byte checked on both sides).
# rma2_pair NAME SERVER_PREFIX CLIENT_PREFIX SERVER_IP CLIENT_IP [PRELOAD]:
# runs the pair (each side's command prefixed, e.g. with `ip netns exec`),
# with the shim preloaded and a report per side when PRELOAD is "shim";
# leaves each side's output in $OUT/rma2-NAME-{server,client}.log.
cc -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -O1 -o "$OUT/shim_rma2" capi-tests/shim_rma2.c -lfabric
RMACLEAN='(.findings | length == 0) and
	([.domains[] | select(.internal == false) | select(.datapath_checks) | .registrations] | add > 0)'
rma2_pair() {
	local name=$1 sp=$2 cp=$3 sip=$4 cip=$5 pre=${6:-} port=$((20000 + RANDOM % 20000)) rc=0
	local env_s=() env_c=()
	if [ "$pre" = shim ]; then
		rm -f "$OUT/rma2-$name-server.json" "$OUT/rma2-$name-client.json"
		env_s=(LD_PRELOAD="$SHIM" OXSHIM_REPORT="$OUT/rma2-$name-server.json")
		env_c=(LD_PRELOAD="$SHIM" OXSHIM_REPORT="$OUT/rma2-$name-client.json")
	fi
	$sp env "${env_s[@]}" timeout 60 "$OUT/shim_rma2" server "$sip" $port \
		>"$OUT/rma2-$name-server.log" 2>&1 &
	local spid=$!
	$cp env "${env_c[@]}" timeout 60 "$OUT/shim_rma2" client "$cip" "$sip" $port \
		>"$OUT/rma2-$name-client.log" 2>&1 || rc=1
	wait $spid || rc=1
	return $rc
}
# rma2_check NAME: both sides printed ok, the same lines as the reference
# run without the shim, and each side's report has zero findings.
rma2_check() {
	local name=$1
	grep -q "^rma2 server ok " "$OUT/rma2-$name-server.log" &&
		grep -q "^rma2 client ok " "$OUT/rma2-$name-client.log" &&
		cmp -s <(cat "$OUT/rma2-$name-server.log" "$OUT/rma2-$name-client.log") \
			<(cat "$OUT/rma2-ref-server.log" "$OUT/rma2-ref-client.log") &&
		jq -e "$RMACLEAN" "$OUT/rma2-$name-server.json" >/dev/null &&
		jq -e "$RMACLEAN" "$OUT/rma2-$name-client.json" >/dev/null
}
t="two-process RMA (1 MiB write, read back, verified) over tcp;ofi_rxm on one host under the shim: same results as without it, zero findings on both sides"
if rma2_pair ref "" "" 127.0.0.1 127.0.0.1 && rma2_pair lo "" "" 127.0.0.1 127.0.0.1 shim &&
	rma2_check lo; then
	ok "$t"
else
	cat "$OUT/rma2-ref-server.log" "$OUT/rma2-ref-client.log"
	bad "$t" "$OUT/rma2-lo-client.log"
fi

# Two "hosts": network namespaces joined by a veth pair, fi_pingpong over
# tcp;ofi_rxm from one to the other, data checked (-c), and shim_rma2.
# Skipped where namespaces cannot be made (not root).
S=$$
NA=oxsa$S NB=oxsb$S VA=oxva$S VB=oxvb$S
cleanup_ns() { ip netns del "$NA" 2>/dev/null || true; ip netns del "$NB" 2>/dev/null || true; }
if ip netns add "$NA" 2>/dev/null; then
	trap cleanup_ns EXIT
	ip netns add "$NB"
	ip link add "$VA" type veth peer name "$VB"
	ip link set "$VA" netns "$NA"
	ip link set "$VB" netns "$NB"
	ip -n "$NA" addr add 10.77.0.1/24 dev "$VA"
	ip -n "$NB" addr add 10.77.0.2/24 dev "$VB"
	for x in "$NA $VA" "$NB $VB"; do
		set -- $x
		ip -n "$1" link set "$2" up
		ip -n "$1" link set lo up
	done
	srv=$OUT/netns-server.json
	cli=$OUT/netns-client.json
	rm -f "$srv" "$cli"
	ip netns exec "$NA" env LD_PRELOAD="$SHIM" OXSHIM_REPORT="$srv" timeout 60 "$BIN/xpingpong" \
		-p "tcp;ofi_rxm" -e rdm -d "$VA" -B 29999 -I 100 -S 65536 -c >"$OUT/netns-server.log" 2>&1 &
	spid=$!
	sleep 1
	crc=0
	ip netns exec "$NB" env LD_PRELOAD="$SHIM" OXSHIM_REPORT="$cli" timeout 60 "$BIN/xpingpong" \
		-p "tcp;ofi_rxm" -e rdm -d "$VB" -P 29999 -I 100 -S 65536 -c 10.77.0.1 \
		>"$OUT/netns-client.log" 2>&1 || crc=$?
	src=0
	wait $spid || src=$?
	t="fi_pingpong between two network namespaces (veth) under the shim: zero findings"
	if [ $crc = 0 ] && [ $src = 0 ] &&
		jq -e "$CLEAN" "$srv" >/dev/null && jq -e "$CLEAN" "$cli" >/dev/null; then
		ok "$t"
	else
		bad "$t" "$OUT/netns-client.log"
	fi
	t="two-process RMA (1 MiB write, read back, verified) between two network namespaces under the shim: same results as without it, zero findings on both sides"
	if rma2_pair netns "ip netns exec $NA" "ip netns exec $NB" 10.77.0.1 10.77.0.2 shim &&
		rma2_check netns; then
		ok "$t"
	else
		bad "$t" "$OUT/rma2-netns-client.log"
		sed 's/^/      /' "$OUT/rma2-netns-server.log" | tail -5
	fi
	cleanup_ns
else
	echo "skip  two network namespaces: ip netns add not permitted here"
fi

# Open MPI (Debian's, ofi MTL over tcp;ofi_rxm), two ranks: a ping-pong,
# one-sided Put/Get/Accumulate (osc pt2pt, which runs over the same MTL)
# and matched probes (MPI_Mprobe/MPI_Improbe: the MTL's FI_PEEK|FI_CLAIM
# receives). Run once without the shim, for reference, then with it
# preloaded into both ranks: the same lines, each part ok, and a report per
# rank with zero findings and the MTL's endpoint hooked.
if true; then
	mpicc -O1 -Wall -Wextra -Werror -o "$OUT/shim_mpi" capi-tests/shim_mpi.c
	rm -f "$OUT"/mpi-*.json
	mpi_run() {
		timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml cm --mca mtl ofi \
			--mca osc pt2pt --mca mtl_ofi_provider_include "tcp;ofi_rxm" "$@" "$OUT/shim_mpi"
	}
	t="Open MPI 2 ranks, mtl ofi over tcp;ofi_rxm, ping-pong, one-sided and mprobe under the shim: same results as without it, zero findings in each rank"
	if mpi_run >"$OUT/mpi-ref.log" 2>&1 &&
		mpi_run -x LD_PRELOAD="$SHIM" -x OXSHIM_REPORT="$OUT/mpi-%p.json" >"$OUT/mpi.log" 2>&1 &&
		[ "$(grep -cE '^(pingpong|onesided|mprobe) ok ' "$OUT/mpi-ref.log")" = 3 ] &&
		diff <(grep -E '^(pingpong|onesided|mprobe) ' "$OUT/mpi-ref.log") <(grep -E '^(pingpong|onesided|mprobe) ' "$OUT/mpi.log") >"$OUT/mpi.diff" &&
		[ "$(ls "$OUT"/mpi-*.json | wc -l)" = 2 ] &&
		jq -s -e 'all(.[]; (.findings | length == 0) and (.domains | length > 0) and
			([.domains[] | select(.internal == false) | select(.datapath_checks) | .endpoints] | add > 0))' \
			"$OUT"/mpi-*.json >/dev/null; then
		ok "$t"
	else
		cat "$OUT/mpi-ref.log" "$OUT/mpi.diff" 2>/dev/null
		bad "$t" "$OUT/mpi.log"
	fi
fi

echo "shim.sh: $pass passed, $fail failed"
[ $fail = 0 ]
