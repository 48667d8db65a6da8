# oxfabric's front door. `make` builds libfabric.so.1 and the headers;
# `make run` runs the demo; `make test` builds and runs every test.
# cargo does the Rust work; this file links the shared library and drives
# the C tests.

SHELL := /bin/bash
CARGO ?= cargo
CC ?= cc
PREFIX ?= /usr/local
BUILD := build
UPSTREAM := $(BUILD)/upstream
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
STATICLIB := target/release/liboxfabric.a
LIB := $(BUILD)/libfabric.so.1
CFLAGS_TEST := -Wall -Wextra -Werror -g -O1

.PHONY: all lib shim test-shim headers headers-check install run test test-rust test-c test-exports \
	test-upstream-bin test-fabtests test-install test-layout test-stress-smoke lint deps bench clean \
	fuzz fuzz-smoke stress

all: lib

# ---------------------------------------------------------------- build ----

$(STATICLIB): FORCE
	$(CARGO) build --release --features symver --lib

FORCE:

$(LIB): $(STATICLIB) fabric.map src/capi/variadic.c
	@mkdir -p $(BUILD)
	$(CC) -shared -fPIC -O2 -o $@ src/capi/variadic.c \
		-Wl,--whole-archive $(STATICLIB) -Wl,--no-whole-archive \
		-Wl,--version-script=fabric.map -Wl,-soname,libfabric.so.1 \
		-Wl,--gc-sections -Wl,-z,defs -lpthread -ldl -lm -lgcc_s -lc
	ln -sf libfabric.so.1 $(BUILD)/libfabric.so

# liboxfabric-shim.so: the same crate built with the `shim` feature (src/shim
# in place of capi/ and prov/), in its own target dir, linked under its own
# SONAME and version script.
SHIM_STATICLIB := target/shim/release/liboxfabric.a
SHIM := $(BUILD)/liboxfabric-shim.so

$(SHIM_STATICLIB): FORCE
	$(CARGO) build --release --features shim --lib --target-dir target/shim

$(SHIM): $(SHIM_STATICLIB) shim.map src/shim/entry.c
	@mkdir -p $(BUILD)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -Iinclude -o $@ src/shim/entry.c $(SHIM_STATICLIB) \
		-Wl,--version-script=shim.map -Wl,-soname,liboxfabric-shim.so \
		-Wl,--gc-sections -Wl,-z,defs -lpthread -ldl -lm -lgcc_s -lc

lib: $(LIB) $(SHIM)

shim: $(SHIM)

# The headers are written by build.rs on every cargo build.
headers:
	$(CARGO) build --lib

headers-check: headers
	@if ! git diff --exit-code --stat -- include/ || \
	    [ -n "$$(git ls-files --others --exclude-standard include/)" ]; then \
		echo "headers-check: include/ differs from what src/abi generates; commit the regenerated headers"; \
		exit 1; \
	fi
	@echo "headers-check: include/rdma matches src/abi"

# The .pc file is written at install time: it names PREFIX, which differs
# from one install to the next.
install: lib
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/rdma
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libfabric.so.1
	install -m 0755 $(SHIM) $(DESTDIR)$(PREFIX)/lib/liboxfabric-shim.so
	ln -sf libfabric.so.1 $(DESTDIR)$(PREFIX)/lib/libfabric.so
	install -m 0644 include/rdma/*.h $(DESTDIR)$(PREFIX)/include/rdma/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' pkgconfig/libfabric.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/libfabric.pc

# ------------------------------------------------------------------ run ----

$(BUILD)/demo: examples/demo.c $(LIB)
	$(CC) $(CFLAGS_TEST) -Iinclude -o $@ $< -L$(BUILD) -lfabric -Wl,-rpath,$(abspath $(BUILD))

run: $(BUILD)/demo
	$(BUILD)/demo

# ----------------------------------------------------------------- test ----

# System packages the tests use, and upstream libfabric (1.17 runtime,
# headers and binaries; 2.1 headers) for the ABI comparisons.
deps: $(UPSTREAM)/.done

$(UPSTREAM)/.done:
	@missing=""; for p in pkg-config valgrind; do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
	bash ../shared/tools/upstream-libfabric.sh $(UPSTREAM) | tail -2
	@touch $@

test: deps headers-check lint test-rust test-layout test-c test-stress-smoke test-exports test-shim test-upstream-bin test-fabtests test-install fuzz-smoke
	@echo "make test: all suites passed"

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy --release --features shim --lib --target-dir target/shim -- -D warnings

test-rust: deps
	OXFABRIC_LAYOUT_2_1=$(abspath $(UPSTREAM))/2.1/include OXFABRIC_LAYOUT_1_17=/usr/include \
		$(CARGO) test --workspace
	$(CARGO) test --release --features shim --lib --target-dir target/shim shim::

test-layout: deps
	OXFABRIC_LAYOUT_2_1=$(abspath $(UPSTREAM))/2.1/include OXFABRIC_LAYOUT_1_17=/usr/include \
		$(CARGO) test -p oxfabric-layout -- --nocapture

test-c: deps lib
	BUILD=$(BUILD) bash capi-tests/run.sh

test-exports: lib
	bash capi-tests/exports.sh $(LIB)

# liboxfabric-shim.so over Debian's libfabric (tcp;ofi_rxm) and over
# oxfabric's (oxshm): misuse programs in report and strict mode, a clean
# fi_pingpong, the export list.
test-shim: deps lib
	BUILD=$(BUILD) bash capi-tests/shim.sh

test-upstream-bin: deps lib
	bash capi-tests/upstream-bin.sh $(BUILD)

# Upstream's conformance suite (fabtests 2.1.0, its runner) on oxshm; the
# build is cached under build/ft.
test-fabtests: deps lib
	BUILD=$(BUILD) bash capi-tests/fabtests.sh

test-install: lib
	bash capi-tests/install.sh

# ----------------------------------------------------------------- fuzz ----

# fuzz/fuzz_mr.c, a libFuzzer target (clang, ASan, UBSan) driving fi_mr(3)
# on oxshm domains, linked to its own copy of libfabric.so.1: the same
# sources built into target/fuzz with SanitizerCoverage (stable rustc's
# sancov-module pass), so that coverage inside the Rust code guides the
# fuzzer. FUZZ_INSTRUMENT=0 builds that copy without coverage.
# `make fuzz-smoke`: ~25 s, fixed seed and -runs bound, every mode.
# `make fuzz`: FUZZ_SECONDS in all across the modes (fuzz/run.sh).
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 300
FUZZ_INSTRUMENT ?= 1
FUZZ_BUILD := $(BUILD)/fuzz
FUZZ_TRIPLE := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
FUZZ_TARGET_DIR := target/fuzz$(if $(filter 1,$(FUZZ_INSTRUMENT)),,-plain)
FUZZ_STATICLIB := $(FUZZ_TARGET_DIR)/$(FUZZ_TRIPLE)/release/liboxfabric.a
# Which of the two copies build/fuzz holds: switching relinks.
FUZZ_STAMP := $(FUZZ_BUILD)/.instrument-$(FUZZ_INSTRUMENT)
FUZZ_LIB := $(FUZZ_BUILD)/libfabric.so.1
FUZZ_BIN := $(FUZZ_BUILD)/fuzz_mr
FUZZ_RUSTFLAGS := -C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=3 \
	-C llvm-args=-sanitizer-coverage-inline-8bit-counters \
	-C llvm-args=-sanitizer-coverage-pc-table \
	-C llvm-args=-sanitizer-coverage-trace-compares

# --target keeps RUSTFLAGS off build scripts and proc macros (they would
# not link without the fuzzer runtime).
$(FUZZ_STATICLIB): FORCE
	RUSTFLAGS="$(if $(filter 1,$(FUZZ_INSTRUMENT)),$(FUZZ_RUSTFLAGS))" \
		$(CARGO) build --release --features symver --lib \
		--target $(FUZZ_TRIPLE) --target-dir $(FUZZ_TARGET_DIR)

$(FUZZ_STAMP):
	@mkdir -p $(FUZZ_BUILD)
	@rm -f $(FUZZ_BUILD)/.instrument-*
	@touch $@

# As $(LIB), less -z defs: the coverage hooks (__sanitizer_cov_*) are
# undefined here and resolved from the fuzzer executable at load time.
$(FUZZ_LIB): $(FUZZ_STATICLIB) $(FUZZ_STAMP) fabric.map src/capi/variadic.c
	@mkdir -p $(FUZZ_BUILD)
	$(CC) -shared -fPIC -O2 -o $@ src/capi/variadic.c \
		-Wl,--whole-archive $(FUZZ_STATICLIB) -Wl,--no-whole-archive \
		-Wl,--version-script=fabric.map -Wl,-soname,libfabric.so.1 \
		-Wl,--gc-sections -lpthread -ldl -lm -lgcc_s -lc

$(FUZZ_BIN): fuzz/fuzz_mr.c $(FUZZ_LIB)
	@bash fuzz/deps.sh $(FUZZ_CC)
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-std=c11 -Wall -Wextra -Werror -g -O1 -Iinclude -o $@ $< \
		-L$(FUZZ_BUILD) -l:libfabric.so.1 -Wl,-rpath,$(abspath $(FUZZ_BUILD)) -rdynamic

fuzz-smoke: $(FUZZ_BIN)
	bash fuzz/run.sh smoke

fuzz: $(FUZZ_BIN)
	bash fuzz/run.sh long $(FUZZ_SECONDS)

# Concurrency (src/mr/stress.rs): writers registering and closing while
# verifiers check keys, with OX_STRESS_N registrations per test.
STRESS_N ?= 5000000
stress: deps lib
	OX_STRESS_N=$(STRESS_N) $(CARGO) test --release --lib mr::stress -- --nocapture
	BUILD=$(BUILD) bash capi-tests/stress.sh 60

# The data-path stress (4 processes x 2 endpoints, mixed RMA, atomics and
# messages while MRs are registered, rotated and closed), 5 s in each of
# capi-tests/stress.sh's seven variants.
test-stress-smoke: deps lib
	BUILD=$(BUILD) bash capi-tests/stress.sh 5

# fabtests' benchmark programs on oxshm and on upstream 2.1.0's shm (built
# from its release source under build/up21; UPSTREAM_PREFIX adds a newer
# install), then registration against Debian's libfabric shm in the same
# run (C), RMA with the machine's ceilings, and the engine's verification
# path (criterion).
bench: lib deps
	BUILD=$(BUILD) bash bench/fabtests_bench.sh
	BUILD=$(BUILD) bash bench/msg_cpu_run.sh
	BUILD=$(BUILD) bash bench/run.sh
	BUILD=$(BUILD) bash bench/rma_run.sh
	BUILD=$(BUILD) bash bench/wait_run.sh
	BUILD=$(BUILD) bash bench/cache_run.sh
	BUILD=$(BUILD) bash bench/shim_run.sh
	$(CARGO) bench --bench verify

clean:
	$(CARGO) clean
	rm -rf $(BUILD)
