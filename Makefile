# SPDX-License-Identifier: Apache-2.0
# Tether. `make help` lists every target with one line (the `##` after each); README.md
# says what the first two are for. A recipe that needs more than a line or two is a script
# of scripts/, grouped by purpose: build/, check/, test/, sanitize/, bench/.
SHELL := /bin/bash
.DEFAULT_GOAL := help
BUILD_DIR ?= build
ARCH ?= x86_64
CROSS_ARCHS := aarch64 armv7
PREFIX ?= /usr/local
export BUILD_DIR
B := $(abspath $(BUILD_DIR))
LIB_DIR = $(BUILD_DIR)/lib/$(ARCH)
VERSION := $(shell sed -nE 's/^\#define TETHER_VERSION_(MAJOR|MINOR|PATCH) ([0-9]+).*/\2/p' Include/tether.h | paste -sd.)
LIB_SOURCES := $(shell find Sources/TetherCore Sources/TetherSodium Sources/Tether Sources/CTetherSystem \
	Sources/CLibev Sources/CSodium -type f) Include/tether.h scripts/build/build-lib.sh \
	scripts/build/lib-module.sh scripts/build/csystem.sh scripts/build/elf-member.py
# The test-only builds of the library (never shipped): their exports are declared in this header.
TEST_LIB_SOURCES := $(LIB_SOURCES) Tests/c/tether_test_crypto.h Tests/c/module.modulemap
# What the end-to-end suites run: the staged tether-edge and the C examples of each architecture.
E2E = TETHER_E2E_REQUIRED=1 TETHER_EDGE_BIN=$(B)/install/bin/tether-edge \
	TETHER_DEVICE_BIN=$(B)/examples/x86_64/device TETHER_MESSAGING_BIN=$(B)/examples/x86_64/messaging \
	TETHER_DEVICE_BIN_AARCH64=$(B)/examples/aarch64/device TETHER_MESSAGING_BIN_AARCH64=$(B)/examples/aarch64/messaging \
	TETHER_DEVICE_BIN_ARMV7=$(B)/examples/armv7/device TETHER_MESSAGING_BIN_ARMV7=$(B)/examples/armv7/messaging
# make test: the parts below, each also a target of its own. A+B runs A and B at once
# (scripts/test/parts.sh): builds beside builds and a test that asserts no timing, never
# beside the suites whose checks are timed (c-test, cross-test, the VMs, swift-test), and
# never two that write the same files (bench-smoke and edge-check both stage tether-edge
# into build/install: edge-check once found it half written).
TESTS := lint header-check libraries abi-check embedded-check+alloc-check+thread-test c-test cross-test \
	test-vm-harness test-vm-aarch64 test-vm-armv7 profile-check swift-test \
	bench-smoke+fuzz-replay+cmake-test+deb-test+deps-test edge-check sim-check

help: ## this list
	@awk -F ':.*## ' '/^## /{print "\n" substr($$0, 4)} /^[a-z0-9% -]+:.*## /{printf "  make %-20s %s\n", $$1, $$2}' Makefile

## Start here
demo: deps examples-x86_64 ## build, start tether-edge on loopback, run the C examples through both timelines
	@swift build -q --product tether-demo
	@swift run --skip-build tether-demo --edge $(B)/install/bin/tether-edge \
		--device $(B)/examples/x86_64/device --messaging $(B)/examples/x86_64/messaging
fleet-demo: deps examples-x86_64 ## three tether-edge processes of one fleet through nats-server, a device on each: who saw what and when
	@swift build -q --product tether-demo
	@swift run --skip-build tether-demo --fleet --edge $(B)/install/bin/tether-edge \
		--device $(B)/examples/x86_64/device --messaging $(B)/examples/x86_64/messaging
test: deps ## everything CI runs: each target of the next section, one after the other (a few at once: TESTS), each timed (and its CPU)
	@scripts/test/parts.sh $(TESTS)

## The parts of make test
lint: ## swift-format, docs cite only what exists, the header's one comment layout, licence lines, v2 vectors
	@python3 scripts/check/check-docs.py && python3 scripts/check/check-header-docs.py && scripts/check/licence.sh
	@python3 scripts/test/v2-vectors.py --check && python3 scripts/test/crypto-vectors.py --check
	@swift-format lint --strict -r Sources Tests Package.swift && echo "lint: swift-format clean"
header-check: ## Include/tether.h compiles as strict C99 and as C++11
	@scripts/check/header-check.sh
libraries: deps ## the Embedded builds the parts below link (the library and its test-only builds, three architectures), two at a time: each is one compile on one core
	@$(MAKE) --no-print-directory -j2 --output-sync=target lib lib-test-crypto lib-null-crypto lib-aarch64 lib-armv7 \
		$(BUILD_DIR)/lib-test-crypto/aarch64/libtether.a $(BUILD_DIR)/lib-test-crypto/armv7/libtether.a
abi-check: lib lib-test-crypto lib-null-crypto ## exports = header functions, same C signatures; one space of return codes; no test hook shipped
	@scripts/check/abi-symbols.sh $(LIB_DIR)/libtether.so.0 && scripts/check/check-abi-signatures.sh
	@python3 scripts/check/check-error-codes.py $(LIB_DIR)/libtether.so.0
	@scripts/check/test-hooks.sh $(LIB_DIR) $(BUILD_DIR)/lib-test-crypto/$(ARCH) $(BUILD_DIR)/lib-null-crypto/$(ARCH)
embedded-check: ## TetherCore builds as Embedded Swift for the host, aarch64 and armv7
	@scripts/check/embedded-check.sh
alloc-check: ## no heap allocation per steady-state round (valgrind counts them)
	@scripts/check/alloc-probe.sh
c-test: lib lib-test-crypto lib-null-crypto ## the C tests of Tests/c against the library, natively and under valgrind
	@scripts/test/c-tests.sh x86_64
thread-test: deps ## every Thread: rule of tether.h from a second thread, under ThreadSanitizer
	@scripts/sanitize/check-c-sanitizers.sh thread test_threads
cross-test: deps ## cross-aarch64 and cross-armv7, at once: under qemu-user the tests mostly wait for their timelines
	@$(MAKE) --no-print-directory -j2 --output-sync=target $(addprefix cross-,$(CROSS_ARCHS))
cross-%: lib-% examples-% $(BUILD_DIR)/lib-test-crypto/%/libtether.a ## the library, examples and C tests for a board, run under qemu-user
	@NM=$(CROSS_$*)nm scripts/check/abi-symbols.sh $(BUILD_DIR)/lib/$*/libtether.so.0
	@NM=$(CROSS_$*)nm scripts/check/test-hooks.sh $(BUILD_DIR)/lib/$* $(BUILD_DIR)/lib-test-crypto/$*
	@scripts/test/c-tests.sh $*
test-vm: test-vm-$(ARCH) ## every C test on a real ARM kernel, in a virtual machine (ARCH=aarch64 or armv7; scripts/test/vm.sh)
test-vm-aarch64 test-vm-armv7: test-vm-%: deps lib-% $(BUILD_DIR)/lib-test-crypto/%/libtether.a ## the same for one architecture (test-vm-armv7)
	@scripts/test/vm.sh $*
test-vm-demo: test-vm-demo-$(ARCH) ## examples/device in an ARM virtual machine against tether-edge here, through a relay: the channel timeline, checked on the guest's clock (ARCH=aarch64 or armv7; scripts/test/vm-demo.sh)
test-vm-demo-%: deps examples-% examples-x86_64 ## the same for one architecture (test-vm-demo-armv7)
	@swift build -q --product tether-demo && scripts/test/vm-demo.sh $*
test-vm-harness: deps ## the VM harness's own check: a guest's failing test, lost marker or hang each fail the run
	@scripts/test/vm.sh aarch64 --harness
profile-check: lib lib-aarch64 lib-armv7 ## a one-profile host links only its profile; both profiles' aarch64 text under the bound, 80 KiB (scripts/check/profile-hosts.sh)
	@for arch in x86_64 $(CROSS_ARCHS); do scripts/check/profile-hosts.sh $$arch --check > /dev/null || exit 1; done
swift-test: examples-x86_64 examples-aarch64 examples-armv7 ## every Swift suite, end to end included (tether-edge, C examples), in 6 processes at once
	swift build --build-tests
	$(E2E) scripts/test/swift-shards.sh $(BUILD_DIR)/swift-test
bench-smoke: examples-x86_64 ## make bench in small: it runs and reports (two architectures at a time: the runs mostly wait)
	@$(MAKE) --no-print-directory -j2 --output-sync=target $(addprefix bench-smoke-,x86_64 $(CROSS_ARCHS))
bench-smoke-%: deps
	@$(MAKE) --no-print-directory bench-binary ARCH=$* > /dev/null && scripts/test/bench-smoke.sh $*
bench-smoke-x86_64: lib examples-x86_64
	@$(MAKE) --no-print-directory bench-binary > /dev/null && scripts/test/bench-smoke.sh x86_64
sim-check: deps ## seeded scenarios on the real edge in virtual time (SIM_SCENARIOS, SIM_LOGIN_SCENARIOS)
	@swift build -q -c release --product tether-sim $(RELEASE_SWIFT_FLAGS)
	@$(SIM) --scenarios $(SIM_SCENARIOS) --jobs $(SIM_JOBS) --attack-edge && \
		$(SIM) --login --scenarios $(SIM_LOGIN_SCENARIOS) --jobs $(SIM_JOBS) --attack-edge
fuzz-replay: deps lib ## each fuzzer once over its committed corpus and crash inputs
	@scripts/test/fuzz.sh replay
edge-check: stage-x86_64 ## the installed tether-edge: under 16 MB, self-contained, its systemd unit valid
	@scripts/check/edge-check.sh $(BUILD_DIR)/install/bin/tether-edge
cmake-test: lib lib-aarch64 ## examples/cmake with find_package(Tether), static and shared, x86_64 and aarch64
	@rm -rf $(BUILD_DIR)/cmake-test && for arch in x86_64 aarch64; do \
		scripts/build/install.sh $(BUILD_DIR)/cmake-test/$$arch/installed $$arch $(VERSION) > /dev/null || exit 1; done
	@scripts/test/cmake-test.sh x86_64 aarch64
deb-test: lib lib-aarch64 ## the Debian packages as a user meets them, x86_64 and aarch64
	@$(MAKE) --no-print-directory deb > /dev/null && $(MAKE) --no-print-directory deb ARCH=aarch64 > /dev/null
	@scripts/test/deb-test.sh $(VERSION) x86_64 aarch64
deps-test: deps ## scripts/deps.sh's failure paths, against a fake apt-get
	@scripts/test/test-deps.sh

## Build and install
deps: ## install what is missing (apt, as root), or print the one command to run
	@scripts/deps.sh
build: deps ## swift build: every module, for development and the Swift tests
	swift build
lib: deps $(LIB_DIR)/libtether.a ## the Embedded library C hosts link, for ARCH (x86_64, aarch64, armv7)
lib-%: deps $(BUILD_DIR)/lib/%/libtether.a ## the same for one architecture (lib-aarch64)
	@:
# Every file a rule makes is kept (make would delete a library built on the way to lib-%).
.SECONDARY:
$(BUILD_DIR)/lib/%/libtether.a: $(LIB_SOURCES)
	@scripts/build/build-lib.sh $*
lib-test-crypto: deps $(BUILD_DIR)/lib-test-crypto/$(ARCH)/libtether.a ## the test-only library with a seeded random stream, for ARCH (never shipped)
lib-null-crypto: deps $(BUILD_DIR)/lib-null-crypto/$(ARCH)/libtether.a ## the test-only library with null AEAD and X25519 (never shipped)
$(BUILD_DIR)/lib-test-crypto/%/libtether.a: $(TEST_LIB_SOURCES)
	@scripts/build/build-lib.sh $* test-crypto
$(BUILD_DIR)/lib-null-crypto/%/libtether.a: $(TEST_LIB_SOURCES)
	@scripts/build/build-lib.sh $* null-crypto
install: lib ## header, libraries, pkg-config and CMake files (and tether-edge) in PREFIX, for ARCH
	@scripts/build/install.sh $(PREFIX) $(ARCH) $(VERSION)
stage-%: lib-% ## make install into build/install (x86_64) or build/install-ARCH
	@scripts/build/install.sh $(BUILD_DIR)/install$(if $(filter x86_64,$*),,-$*) $* $(VERSION) > /dev/null
examples-%: stage-% ## the C examples from that install, with pkg-config: build/examples/ARCH
	@scripts/build/examples.sh $*
deb: lib ## Debian packages for ARCH in build/deb (libtether0, libtether-dev, tether-edge)
	@rm -rf $(BUILD_DIR)/deb/$(ARCH)/installed
	@scripts/build/install.sh $(BUILD_DIR)/deb/$(ARCH)/installed $(ARCH) $(VERSION) > /dev/null
	@scripts/build/deb.sh $(ARCH) $(VERSION)
bench-binary: lib ## tether-bench for ARCH, needing only libc, libev and libsodium: build/bench/ARCH
	@mkdir -p $(BUILD_DIR)/bench/$(ARCH)
	@$(CROSS_$(ARCH))gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -O2 -IInclude Benchmarks/tether-bench/*.c Tests/c/edge_v2.c Tests/c/wire_v2.c \
		-o $(BUILD_DIR)/bench/$(ARCH)/tether-bench $(LIB_DIR)/libtether.a -lsodium -lev -lm \
		-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc && echo "bench-binary: $(BUILD_DIR)/bench/$(ARCH)/tether-bench"
	@$(CROSS_$(ARCH))gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -O2 -IInclude Benchmarks/edge-load/edge-load.c \
		Benchmarks/tether-bench/client_v2.c Tests/c/wire_v2.c -o $(BUILD_DIR)/bench/$(ARCH)/edge-load -lsodium \
		&& echo "bench-binary: $(BUILD_DIR)/bench/$(ARCH)/edge-load"
CROSS_aarch64 := aarch64-linux-gnu-
CROSS_armv7 := arm-linux-gnueabihf-

## Beyond make test
check: check-valgrind check-c-sanitizers check-asan check-tsan ## every sanitizer suite (docs/RELIABILITY.md §6)
v2-size: ## what protocol v2 costs the device: a probe of both sessions, v1 vs v2, aarch64 text
	@scripts/check/v2-device-size.sh aarch64
check-ci: check-c-sanitizers examples-x86_64 ## the part of make check that CI runs after make test (whose c-test memchecked the C tests)
	@TETHER_C_TESTS_MEMCHECKED=1 $(MAKE) --no-print-directory check-valgrind
	@$(E2E) scripts/sanitize/check-swift.sh asan '$(CHECK_CI_ASAN)'
check-valgrind: examples-x86_64 ## C tests, cycles, two threads (helgrind) and the examples under valgrind
	@scripts/sanitize/check-valgrind.sh $(LIB_DIR) $(B)/install/bin/tether-edge $(B)/examples/x86_64/device \
		$(B)/examples/x86_64/messaging
check-c-sanitizers: deps ## the C tests against the library built with ASan+UBSan and with TSan
	@scripts/sanitize/check-c-sanitizers.sh
check-asan: examples-x86_64 examples-aarch64 examples-armv7 ## every Swift suite under AddressSanitizer
	@$(E2E) scripts/sanitize/check-swift.sh asan
check-tsan: examples-x86_64 examples-aarch64 examples-armv7 ## every Swift suite under ThreadSanitizer
	@$(E2E) scripts/sanitize/check-swift.sh tsan
CHECK_CI_ASAN = TetherEdgeTests\.|TetherDriverTests\.|EdgeSignalTests|EdgeFloodTests|LoginEdgeEndToEndTests|ChannelEndToEndTests|LoginEndToEndTests
sim: deps ## the seed timeline at default thresholds, on the core and the edge in virtual time
	@swift build -q --product tether-sim && swift run --skip-build tether-sim
sim-replay: deps ## one scenario again: SEED=N [LOGIN=1]
	@test -n "$(SEED)" || { echo "usage: make sim-replay SEED=N [LOGIN=1]" >&2; exit 2; }
	@swift build -q -c release --product tether-sim $(RELEASE_SWIFT_FLAGS) && $(SIM) $(if $(LOGIN),--login) --replay $(SEED)
soak: deps ## more scenarios: SOAK_SCENARIOS from SOAK_SEED, or SOAK_SECONDS [LOGIN=1]
	@swift build -q -c release --product tether-sim $(RELEASE_SWIFT_FLAGS)
	@$(SIM) $(if $(LOGIN),--login) --scenarios $(if $(SOAK_SECONDS),0,$(SOAK_SCENARIOS)) --seed $(SOAK_SEED) \
		--jobs $(SIM_JOBS) $(if $(SOAK_SECONDS),--seconds $(SOAK_SECONDS))
SIM = $$(swift build -c release --show-bin-path)/tether-sim
# tether-edge is staged with --static-swift-stdlib: every release build here (tether-sim,
# tether-benchmarks; scripts/check/alloc-probe.sh too) is made the same way, so they share
# its release products, where a build without it made the next one rebuild them (a minute).
RELEASE_SWIFT_FLAGS := --static-swift-stdlib
SIM_SCENARIOS ?= 10000
SIM_LOGIN_SCENARIOS ?= 15000
SIM_JOBS ?= 2
SOAK_SCENARIOS ?= 1000000
SOAK_SEED ?= 10001
fuzz: deps ## every libFuzzer target for FUZZ_SECONDS (60) from the corpus (Fuzz/README.md)
	@FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60) scripts/test/fuzz.sh run
faults: examples-x86_64 ## the end-to-end fault suite alone; SEED=N replays one
	$(E2E) TETHER_FAULT_SEED=$(SEED) swift test --filter 'FaultEndToEndTests|AddressChangeFaultTests'
edge-flood: examples-x86_64 ## tether-edge under a garbage flood, measured (FLOOD_SECONDS, 10)
	@python3 scripts/bench/edge-flood.py --edge $(BUILD_DIR)/install/bin/tether-edge --seconds $(or $(FLOOD_SECONDS),10)
bench: deps examples-x86_64 bench-binary lib-aarch64 lib-armv7 bench-vm-rt ## timers (default and SCHED_FIFO, 3 runs), CPU, 100k sessions, a fleet, costs, sizes, the RT kernel's VM; rewrites docs/BENCHMARKS.md and README's real-time block
	@scripts/deps.sh bench && mkdir -p $(BUILD_DIR)/bench/results && scripts/check/size-report.sh > $(BUILD_DIR)/bench/sizes.md
	@swift build -q -c release --product tether-benchmarks $(RELEASE_SWIFT_FLAGS)
	@$$(swift build -c release --show-bin-path)/tether-benchmarks --bench $(BUILD_DIR)/bench/$(ARCH)/tether-bench \
		--edge-load $(BUILD_DIR)/bench/$(ARCH)/edge-load --device $(BUILD_DIR)/examples/x86_64/device \
		--edge $(BUILD_DIR)/install/bin/tether-edge --out $(BUILD_DIR)/bench/results --docs docs/BENCHMARKS.md \
		--sizes $(BUILD_DIR)/bench/sizes.md --vm-rt $(BUILD_DIR)/bench/vm-rt.md --plot bench-lateness.png --readme README.md
	@python3 scripts/bench/bench-plot.py $(BUILD_DIR)/bench/results docs/bench-lateness.png
bench-vm-rt: deps ## tether-bench --quick at default and SCHED_FIFO on Debian's PREEMPT_RT arm64 kernel in a VM (emulated figures; scripts/bench/vm-rt.sh): build/bench/vm-rt.md, for make bench
	@$(MAKE) --no-print-directory bench-binary ARCH=aarch64 > /dev/null && scripts/bench/vm-rt.sh
bench-quick: deps examples-x86_64 bench-binary ## make bench in small, under 2 minutes: build/bench/quick (docs untouched)
	@scripts/deps.sh bench && swift build -q -c release --product tether-benchmarks $(RELEASE_SWIFT_FLAGS)
	@$$(swift build -c release --show-bin-path)/tether-benchmarks --quick --bench $(BUILD_DIR)/bench/$(ARCH)/tether-bench \
		--edge-load $(BUILD_DIR)/bench/$(ARCH)/edge-load --device $(BUILD_DIR)/examples/x86_64/device \
		--edge $(BUILD_DIR)/install/bin/tether-edge --out $(BUILD_DIR)/bench/quick \
		--docs $(BUILD_DIR)/bench/quick/BENCHMARKS.md --plot bench-lateness.png
	@python3 scripts/bench/bench-plot.py $(BUILD_DIR)/bench/quick $(BUILD_DIR)/bench/quick/bench-lateness.png
sizes: lib lib-aarch64 lib-armv7 ## the size tables of docs/BENCHMARKS.md, per architecture and profile
	@scripts/check/size-report.sh
docs: ## regenerate the tables of docs/STATES.md from the code, then lint
	TETHER_WRITE_DOCS=1 swift test --filter 'StatesTableTests|LoginStatesTableTests'
	@git --no-pager diff --stat -- docs/STATES.md; $(MAKE) --no-print-directory lint
format: ## swift-format the sources in place
	swift-format format -i -r Sources Tests Package.swift
clean: ## remove .build and build
	rm -rf .build $(BUILD_DIR)

.PHONY: help demo fleet-demo test $(TESTS) bench-smoke-x86_64 deps build lib lib-test-crypto lib-null-crypto install deb \
	bench-binary check check-ci v2-size \
	check-valgrind check-c-sanitizers check-asan check-tsan sim sim-replay soak fuzz faults edge-flood bench bench-vm-rt bench-quick \
	sizes docs format clean
