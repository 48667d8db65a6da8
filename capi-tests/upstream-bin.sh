#!/usr/bin/env bash
# Upstream's own binaries on our library: Debian's unmodified fi_info and
# fi_strerror (built against libfabric 1.17) run with LD_LIBRARY_PATH=BUILD.
# Each run must print the right things, must bind to BUILD/libfabric.so.1
# (not the system's), and the loader must not warn about symbol versions.
# Usage: capi-tests/upstream-bin.sh build
set -euo pipefail
trap 'echo "upstream-bin.sh: stopped at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."

BUILD=$(cd "${1:?usage: upstream-bin.sh BUILD}" && pwd)
OURS=$BUILD/libfabric.so.1
SYSTEM_LIB=/usr/lib/x86_64-linux-gnu/libfabric.so.1
for b in /usr/bin/fi_info /usr/bin/fi_strerror; do
	[ -x "$b" ] || { echo "upstream-bin: $b is missing (make deps)"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0 failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }

# ours [ENV=value ...] CMD ARGS: runs on our library; stdout in $tmp/out,
# stderr in $tmp/err, exit code in $rc; fails on any loader warning.
ours() {
	rc=0
	env LD_LIBRARY_PATH="$BUILD" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if grep -E 'no version information available|version .* not found|symbol lookup error' "$tmp/err"; then
		fail "loader warning from: $*"
	else
		pass
	fi
}

# expect DESCRIPTION REGEX: $tmp/out has a line matching REGEX.
expect() {
	if grep -qE -- "$2" "$tmp/out"; then pass; else
		fail "$1: no line matching /$2/ in:"; sed 's/^/    /' "$tmp/out" | head -n 80
	fi
}

# The loader binds the binary's libfabric symbols to our file, at the
# versions Debian's 1.17 build asked for, and never opens the system's.
check_bindings() {
	local bin=$1 sym=$2 ver=$3
	LD_DEBUG=bindings,files LD_LIBRARY_PATH="$BUILD" "$bin" "${@:4}" >/dev/null 2>"$tmp/ld" || true
	if grep -qE "binding file $bin \[0\] to $OURS \[0\]: normal symbol \`$sym' \[$ver\]" "$tmp/ld"; then
		pass
	else
		fail "$bin: $sym not bound to $OURS at $ver:"; grep -E "symbol \`$sym'" "$tmp/ld" | head -n 5
	fi
	if grep -q "$SYSTEM_LIB\|libfabric.so.1.20" "$tmp/ld"; then
		fail "$bin loaded the system libfabric:"; grep -m 3 "$SYSTEM_LIB\|libfabric.so.1.20" "$tmp/ld"
	else
		pass
	fi
	# Not `grep -q`: under pipefail, grep leaving early makes ldd's SIGPIPE
	# fail the pipeline now and then.
	if LD_LIBRARY_PATH="$BUILD" ldd "$bin" | grep "libfabric.so.1 => $OURS " >/dev/null; then pass; else
		fail "ldd $bin does not resolve libfabric.so.1 to $OURS"
	fi
}

check_bindings /usr/bin/fi_info fi_getinfo FABRIC_1.3 -l
check_bindings /usr/bin/fi_strerror fi_strerror FABRIC_1.0 266

ours fi_info -l
[ "$rc" -eq 0 ] && pass || fail "fi_info -l exited $rc"
expect "fi_info -l" '^oxshm:$'
expect "fi_info -l" '^ +version: [0-9]+\.[0-9]+'

ours fi_info -p oxshm
[ "$rc" -eq 0 ] && pass || fail "fi_info -p oxshm exited $rc"
expect "fi_info -p oxshm" '^provider: oxshm$'
expect "fi_info -p oxshm" '^ +fabric: oxshm$'
expect "fi_info -p oxshm" '^ +domain: oxshm$'
expect "fi_info -p oxshm" '^ +type: FI_EP_RDM$'
expect "fi_info -p oxshm" '^ +protocol: FI_PROTO_SHM$'

ours fi_info -p oxshm -v
[ "$rc" -eq 0 ] && pass || fail "fi_info -p oxshm -v exited $rc"
for re in '^fi_info:$' '^ +caps: \[ .*FI_LOCAL_COMM.* \]$' '^ +fi_tx_attr:$' '^ +fi_rx_attr:$' \
	'^ +fi_ep_attr:$' '^ +type: FI_EP_RDM$' '^ +fi_domain_attr:$' '^ +name: oxshm$' \
	'^ +threading: FI_THREAD_SAFE$' '^ +mr_mode: \[ .* \]$' '^ +mr_key_size: [1-9][0-9]*$' \
	'^ +mr_iov_limit: [1-9][0-9]*$' '^ +mr_cnt: [1-9][0-9]*$' '^ +fi_fabric_attr:$' \
	'^ +prov_name: oxshm$' '^ +prov_version: [0-9]+\.[0-9]+$' '^ +api_version: 1\.17$'; do
	expect "fi_info -p oxshm -v" "$re"
done

# The provider variable reaches getinfo through an unmodified binary.
ours env FI_OXSHM_MR_MODE=FI_MR_PROV_KEY fi_info -p oxshm -v
expect "FI_OXSHM_MR_MODE=FI_MR_PROV_KEY fi_info -v" '^ +mr_mode: \[ .*FI_MR_PROV_KEY.* \]$'

ours env FI_PROVIDER=^oxshm fi_info
[ "$rc" -ne 0 ] && pass || fail "FI_PROVIDER=^oxshm fi_info succeeded"
cat "$tmp/err" >>"$tmp/out" # fi_info reports the failure on stderr
expect "FI_PROVIDER=^oxshm fi_info" 'fi_getinfo: -61'

ours fi_info -e
[ "$rc" -eq 0 ] && pass || fail "fi_info -e exited $rc"
for v in FI_PROVIDER FI_LOG_LEVEL FI_OXSHM_MR_MODE; do
	expect "fi_info -e" "^# $v: "
done

# Debian's fi_pingpong (messages on an RDM endpoint, addresses swapped
# over a TCP socket) between two processes on oxshm, data checked (-c).
port=$((20000 + $$ % 20000))
LD_LIBRARY_PATH="$BUILD" timeout 60 fi_pingpong -p oxshm -e rdm -I 500 -S 65536 -c \
	-B "$port" >"$tmp/pp_server" 2>&1 &
server=$!
sleep 1
ours timeout 60 fi_pingpong -p oxshm -e rdm -I 500 -S 65536 -c -P "$port" 127.0.0.1
[ "$rc" -eq 0 ] && pass || fail "fi_pingpong client on oxshm exited $rc: $(tail -3 "$tmp/err")"
wait "$server" && pass || fail "fi_pingpong server on oxshm failed: $(tail -3 "$tmp/pp_server")"
expect "fi_pingpong on oxshm" '^64k +500 +=500 '

ours fi_strerror 266
[ "$(cat "$tmp/out")" = "Required key not available" ] && pass ||
	fail "fi_strerror 266 printed '$(cat "$tmp/out")'"

# Every errno text, ours against the system library's, through the same binary.
for n in $(seq 1 133) $(seq 256 269); do
	want=$(fi_strerror "$n" 2>/dev/null)
	got=$(LD_LIBRARY_PATH="$BUILD" fi_strerror "$n" 2>/dev/null)
	[ "$got" = "$want" ] && pass || fail "fi_strerror $n: '$got', upstream '$want'"
done

# Open MPI (Debian's, unmodified) on our library: two ranks whose btl ofi
# runs over oxshm for the one-sided part (osc rdma: MPI_Put/MPI_Get/
# MPI_Accumulate into a registered window) beside vader for the rest, with
# capi-tests/shim_mpi.c (ping-pong, one-sided, matched probes, each part's
# bytes checked). The same lines as a run without ofi, both ranks' oxshm
# domains registered the windows (FI_OXSHM_STATS), and MPI_Finalize
# returns: it closes the memory monitor Open MPI imported into the
# registration cache (fi_import "mr_cache", then fi_close on the
# monitor's fid). Open MPI's mtl ofi is not run: it asks for
# FI_REMOTE_COMM, which oxshm, like upstream's shm, does not offer.
if ! { command -v mpicc && command -v mpirun; } >/dev/null; then
	apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null ||
		{ echo "upstream-bin: could not install Open MPI"; exit 1; }
fi
mpicc -O1 -Wall -Wextra -Werror -o "$tmp/mpi" capi-tests/shim_mpi.c
mpi() {
	timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1 "$@" "$tmp/mpi"
}
rc=0
mpi --mca btl vader,self --mca osc pt2pt >"$tmp/mpi-ref" 2>&1 || rc=$?
[ "$rc" = 0 ] && [ "$(grep -cE '^(pingpong|onesided|mprobe) ok ' "$tmp/mpi-ref")" = 3 ] && pass ||
	{ fail "Open MPI reference run (btl vader,self): exit $rc"; tail -n 20 "$tmp/mpi-ref"; }
rc=0
mpi --mca btl ofi,vader,self --mca osc rdma --mca btl_ofi_provider_include oxshm \
	-x LD_LIBRARY_PATH="$BUILD" -x FI_LOG_LEVEL=info -x FI_OXSHM_STATS=1 >"$tmp/mpi-ofi" 2>&1 || rc=$?
if [ "$rc" = 0 ] && diff <(grep -E '^(pingpong|onesided|mprobe) ' "$tmp/mpi-ref") \
	<(grep -E '^(pingpong|onesided|mprobe) ' "$tmp/mpi-ofi") >/dev/null; then
	pass
else
	fail "Open MPI with btl ofi over oxshm: exit $rc, or not the reference's lines:"
	grep -vE '^libfabric:' "$tmp/mpi-ofi" | tail -n 20
fi
# Both ranks' oxshm domains took registrations, and closed them all.
if [ "$(grep -cE 'oxshm:domain:.*domain statistics: 0 live MRs \(0 bytes\), [1-9][0-9]* registrations' "$tmp/mpi-ofi")" -ge 2 ]; then
	pass
else
	fail "Open MPI with btl ofi over oxshm: no oxshm domain with registrations in each rank:"
	grep -E 'domain statistics' "$tmp/mpi-ofi" | head -n 5
fi

echo "upstream-bin: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
