#!/usr/bin/env bash
# Upstream libfabric 2.1.0 (shm provider only), built once from its release
# source into $BUILD/up21/inst: the yardstick of fabtests_bench.sh and of
# run.sh's registration figures. Idempotent (inst/.done); prints the
# install prefix on its last line.
# Usage: bench/up21.sh        (BUILD, default build)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
UP=$PWD/$BUILD/up21

if [ ! -f "$UP/inst/.done" ]; then
	for t in autoconf automake libtoolize; do
		command -v $t >/dev/null || { apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq autoconf automake libtool >/dev/null; break; }
	done
	src=$(bash ../shared/tools/upstream-libfabric.sh --source "$BUILD/upstream" | tail -1)
	echo "bench/up21.sh: building upstream 2.1.0 (shm only) into $UP/inst" >&2
	rm -rf "$UP/src" "$UP/inst"
	mkdir -p "$UP"
	cp -r "$src" "$UP/src"
	(cd "$UP/src" && ./autogen.sh && ./configure --prefix="$UP/inst" --enable-only \
		--enable-shm=yes --disable-static && make -j"$(nproc)" && make install) \
		>"$UP/build.log" 2>&1 || { tail -20 "$UP/build.log" >&2; exit 1; }
	touch "$UP/inst/.done"
fi
echo "$UP/inst"
