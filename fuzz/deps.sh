#!/usr/bin/env bash
# Makes sure clang can build a libFuzzer target with ASan and UBSan
# (Debian: clang plus the compiler-rt runtimes); installs them with apt
# when it cannot.
set -euo pipefail
CC=${1:-clang}
probe() {
	local d
	d=$(mktemp -d)
	printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$d/p.c"
	"$CC" -fsanitize=fuzzer,address,undefined "$d/p.c" -o "$d/p" >/dev/null 2>&1
	local rc=$?
	rm -rf "$d"
	return $rc
}
probe && exit 0
echo "fuzz/deps.sh: $CC cannot build a libFuzzer target; installing clang and its runtimes"
command -v apt-get >/dev/null || { echo "fuzz/deps.sh: no apt-get; install clang with libFuzzer (compiler-rt)"; exit 1; }
apt-get update -qq
pkgs=(clang)
apt-cache show libclang-rt-dev >/dev/null 2>&1 && pkgs+=(libclang-rt-dev)
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
probe || { echo "fuzz/deps.sh: $CC still cannot build with -fsanitize=fuzzer"; exit 1; }
