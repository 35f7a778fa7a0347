# Tether: the commands a C developer expects.
#   make demo    the seed timeline on real processes: tether-edge, two C devices, a relay
#   make sim     the same timeline on the core alone, in virtual time at default thresholds
#   make sim-check  10,000 seeded random scenarios against the invariants (make soak: more)
#   make test    everything: lint, header, Embedded builds, allocations, C ABI tests,
#                Swift tests, end to end against tether-edge
#   make check   the tests under ASan+UBSan, TSan, valgrind memcheck and helgrind
#   make check-ci  the part of make check that CI runs after make test
#   make docs    regenerate the generated part of docs/STATES.md
#   make format  format the Swift sources in place
#   make fuzz    every libFuzzer target for FUZZ_SECONDS each (Fuzz/README.md)
# See README.md.

SHELL := /bin/bash
BUILD_DIR ?= build
CFLAGS_STRICT := -std=c99 -Wall -Wextra -Wpedantic -Werror
SWIFT_FORMAT ?= swift-format

.PHONY: all deps build lib install stage device cross-test sizes bench-binary bench bench-smoke demo sim sim-check sim-replay soak test lint header-check embedded-check alloc-check c-test swift-test docs format clean fuzz fuzz-replay

all: build

# The commands a newcomer needs, as the comment at the top of this file lists them.
.PHONY: help
help:
	@sed -n 's/^#   make /make /p' Makefile

deps:
	@scripts/deps.sh

build: deps
	swift build

# A staged install in $(BUILD_DIR)/install, and the C device example built from it with
# pkg-config and the strict flags, exactly as a C developer would.
STAGE = $(BUILD_DIR)/install
DEVICE = $(BUILD_DIR)/device
MESSAGING = $(BUILD_DIR)/messaging
stage: lib
	@$(MAKE) --no-print-directory install PREFIX=$(STAGE) > /dev/null

device: stage
	@gcc $(CFLAGS_STRICT) examples/device.c -o $(DEVICE) \
		$$(PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig pkg-config --cflags --libs tether) \
		-Wl,-rpath,$(abspath $(STAGE))/lib
	@gcc $(CFLAGS_STRICT) examples/minimal.c -o $(BUILD_DIR)/minimal \
		$$(PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig pkg-config --cflags --libs tether)
	@gcc $(CFLAGS_STRICT) examples/messaging.c -o $(MESSAGING) \
		$$(PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig pkg-config --cflags --libs tether) \
		-Wl,-rpath,$(abspath $(STAGE))/lib
	@echo "device: examples/device.c, minimal.c and messaging.c built with $(CFLAGS_STRICT) and pkg-config"

demo: deps device
	@swift build -q --product tether-demo
	@swift run --skip-build tether-demo --edge $(STAGE)/bin/tether-edge --device $(DEVICE) \
		--messaging $(MESSAGING)

sim: deps
	@swift build -q --product tether-sim
	@swift run --skip-build tether-sim

test: deps lint header-check abi-check embedded-check alloc-check c-test thread-test source-test profile-check swift-test \
	bench-smoke sim-check fuzz-replay edge-check

lint: docs-check
	@$(SWIFT_FORMAT) lint --strict -r Sources Tests Package.swift
	@echo "lint: swift-format clean"

# The public header must compile as strict C99 and as C++.
header-check:
	@mkdir -p $(BUILD_DIR)
	@printf '#include "tether.h"\nint main(void) { return 0; }\n' > $(BUILD_DIR)/header-check.c
	@gcc $(CFLAGS_STRICT) -IInclude -c $(BUILD_DIR)/header-check.c -o $(BUILD_DIR)/header-check-c.o
	@g++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -IInclude -x c++ -c $(BUILD_DIR)/header-check.c \
		-o $(BUILD_DIR)/header-check-cxx.o
	@echo "header: Include/tether.h compiles as C99 ($(CFLAGS_STRICT)) and as C++11"

embedded-check:
	@BUILD_DIR=$(BUILD_DIR) scripts/embedded-check.sh

# The C contract against the code: every function of tether.h is a Swift `@c
# @implementation` whose whole C signature the compiler matched with the header
# (scripts/check-abi-signatures.sh); the return codes are one space, each value one
# macro, and the library names every code a function documents
# (scripts/check-error-codes.py).
.PHONY: abi-check
abi-check: lib
	@scripts/check-abi-signatures.sh
	@python3 scripts/check-error-codes.py $(LIB_DIR)/libtether.so.0

# No heap allocation per steady-state round (heartbeat out, ack and presence in): valgrind
# counts the allocations of 1,000 and 11,000 rounds, which must be equal.
alloc-check:
	@scripts/alloc-probe.sh

# What C hosts link: the Embedded Swift build, as build/lib/$(ARCH)/libtether.{a,so}.
ARCH ?= x86_64
LIB_DIR = $(BUILD_DIR)/lib/$(ARCH)
VERSION = $(shell sed -nE 's/^\#define TETHER_VERSION_(MAJOR|MINOR|PATCH) ([0-9]+).*/\2/p' Include/tether.h | paste -sd.)
LIB_SOURCES := $(shell find Sources/TetherCore Sources/Tether Sources/CTetherSystem Sources/CLibev \
	-type f) Include/tether.h scripts/build-lib.sh scripts/csystem.sh scripts/elf-member.py
lib: deps $(LIB_DIR)/libtether.a
$(BUILD_DIR)/lib/%/libtether.a: $(LIB_SOURCES)
	@BUILD_DIR=$(BUILD_DIR) scripts/build-lib.sh $*

# make install PREFIX=DIR [ARCH=x86_64|aarch64|armv7]: the header, both libraries, a
# pkg-config file and the CMake package files (lib/cmake/Tether, relocatable), and, for the
# host, tether-edge, so that `cc app.c $$(pkg-config --cflags --libs tether)`, or
# find_package(Tether) with target_link_libraries(app PRIVATE Tether::tether), is all a C
# host needs.
PREFIX ?= /usr/local
install: lib
ifeq ($(ARCH),x86_64)
	swift build -q -c release --product tether-edge --static-swift-stdlib
endif
	install -d $(PREFIX)/include $(PREFIX)/lib/pkgconfig
	install -m 644 Include/tether.h $(PREFIX)/include/
	install -m 644 $(LIB_DIR)/libtether.a $(PREFIX)/lib/
	install -m 755 $(LIB_DIR)/libtether.so.0 $(PREFIX)/lib/
	ln -sf libtether.so.0 $(PREFIX)/lib/libtether.so
	sed -e 's|@PREFIX@|$(abspath $(PREFIX))|' -e 's|@LIBDIR@|lib|' -e 's|@VERSION@|$(VERSION)|' \
		tether.pc.in > $(PREFIX)/lib/pkgconfig/tether.pc
	scripts/cmake-config.sh $(PREFIX) lib $(VERSION) $(ARCH)
	install -d $(PREFIX)/share/doc/tether/docs
	install -m 644 README.md $(PREFIX)/share/doc/tether/
	install -m 644 docs/*.md docs/*.png $(PREFIX)/share/doc/tether/docs/
ifeq ($(ARCH),x86_64)
	install -d $(PREFIX)/bin
	install -m 755 -s $$(swift build -c release --show-bin-path)/tether-edge $(PREFIX)/bin/
endif
	@echo "installed in $(PREFIX): PKG_CONFIG_PATH=$(abspath $(PREFIX))/lib/pkgconfig," \
		"CMAKE_PREFIX_PATH=$(abspath $(PREFIX))"

# ARM: the same library and device example cross-built, and run under qemu-user. The C
# tests run there too (scripts/c-tests.sh: but for what qemu-user lacks here: threads,
# arrival stamps, network namespaces).
CROSS_ARCHS = aarch64 armv7
CC_aarch64 = aarch64-linux-gnu-gcc
CC_armv7 = arm-linux-gnueabihf-gcc
QEMU_aarch64 = qemu-aarch64 -L /usr/aarch64-linux-gnu
QEMU_armv7 = qemu-arm -L /usr/arm-linux-gnueabihf
cross-%: deps
	@$(MAKE) --no-print-directory install ARCH=$* PREFIX=$(BUILD_DIR)/install-$* > /dev/null
	@NM=$(subst gcc,nm,$(CC_$*)) scripts/abi-symbols.sh $(BUILD_DIR)/lib/$*/libtether.so.0
	@$(CC_$*) $(CFLAGS_STRICT) examples/device.c -o $(BUILD_DIR)/device-$* \
		$$(PKG_CONFIG_PATH=$(BUILD_DIR)/install-$*/lib/pkgconfig pkg-config --cflags --libs tether) \
		-Wl,-rpath,$(abspath $(BUILD_DIR))/install-$*/lib
	@$(CC_$*) $(CFLAGS_STRICT) examples/messaging.c -o $(BUILD_DIR)/messaging-$* \
		$$(PKG_CONFIG_PATH=$(BUILD_DIR)/install-$*/lib/pkgconfig pkg-config --cflags --libs tether) \
		-Wl,-rpath,$(abspath $(BUILD_DIR))/install-$*/lib
	@BUILD_DIR=$(BUILD_DIR) scripts/c-tests.sh $*

cross-test: $(addprefix cross-,$(CROSS_ARCHS))

# tether-bench: the timer benchmark as one program that needs only libc and libev (Tether
# linked in statically), for this host or a board: make bench-binary ARCH=aarch64.
CC_x86_64 = gcc
BENCH_BIN = $(BUILD_DIR)/bench/$(ARCH)/tether-bench
BENCH_WRAP = -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc
bench-binary: lib
	@command -v $(CC_$(ARCH)) >/dev/null || { echo "bench-binary: unknown ARCH '$(ARCH)'" >&2; exit 2; }
	@mkdir -p $(dir $(BENCH_BIN))
	@$(CC_$(ARCH)) $(CFLAGS_STRICT) -O2 -IInclude $(wildcard Benchmarks/tether-bench/*.c) \
		-o $(BENCH_BIN) $(LIB_DIR)/libtether.a -lev -lm $(BENCH_WRAP)
	@echo "bench-binary: $(BENCH_BIN) ($(ARCH); needs libc and libev)"

# make bench: the core's costs, tether-bench against tether-edge (1, 1,000 and 10,000
# sessions; idle and loaded; steady and burst; beside the kernel and two libev designs),
# the targets, and docs/BENCHMARKS.md and docs/bench-lateness.png rewritten from the run.
BENCH_OUT = $(BUILD_DIR)/bench/results
bench: deps stage bench-binary
	@scripts/deps.sh bench
	@mkdir -p $(BENCH_OUT)
	@$(MAKE) --no-print-directory sizes > $(BUILD_DIR)/bench/sizes.md
	@swift build -q -c release --product tether-benchmarks
	@$$(swift build -c release --show-bin-path)/tether-benchmarks --bench $(BENCH_BIN) \
		--edge $(STAGE)/bin/tether-edge --out $(BENCH_OUT) --docs docs/BENCHMARKS.md \
		--sizes $(BUILD_DIR)/bench/sizes.md --plot bench-lateness.png
	@python3 scripts/bench-plot.py $(BENCH_OUT) docs/bench-lateness.png

# In make test: seconds-long runs of the benchmark that assert no timing: tether-bench with
# its own peer, the whole of make bench against tether-edge in small, and the board binary
# under qemu for each ARM target (timing under qemu means nothing: it runs and prints; and
# qemu-user cannot run its child processes here, so the peer runs on its own loop).
bench-smoke: stage bench-binary $(addprefix bench-smoke-,$(CROSS_ARCHS))
	@mkdir -p $(BUILD_DIR)/bench
	@$(BENCH_BIN) --quick --sessions 1,20 --loads idle --designs tether > $(BUILD_DIR)/bench/smoke.txt
	@test "$$(grep -c ' tether ' $(BUILD_DIR)/bench/smoke.txt)" = 4 || \
		{ cat $(BUILD_DIR)/bench/smoke.txt; echo "bench-smoke: tether-bench did not report" >&2; exit 1; }
	@echo "bench-smoke: tether-bench ($(ARCH), own peer): 4 scenario rows"
	@swift build -q --product tether-benchmarks
	@$$(swift build --show-bin-path)/tether-benchmarks --smoke --bench $(BENCH_BIN) \
		--edge $(STAGE)/bin/tether-edge --out $(BUILD_DIR)/bench/smoke > $(BUILD_DIR)/bench/smoke-edge.txt \
		|| { cat $(BUILD_DIR)/bench/smoke-edge.txt; exit 1; }
	@tail -1 $(BUILD_DIR)/bench/smoke-edge.txt
bench-smoke-%: cross-%
	@$(MAKE) --no-print-directory bench-binary ARCH=$* > /dev/null
	@$(QEMU_$*) $(BUILD_DIR)/bench/$*/tether-bench --quick --inline-peer --sessions 1 \
		--patterns steady --designs tether,previous > $(BUILD_DIR)/bench/smoke-$*.txt
	@test "$$(grep -cE ' (tether|previous) ' $(BUILD_DIR)/bench/smoke-$*.txt)" = 2 || \
		{ cat $(BUILD_DIR)/bench/smoke-$*.txt; echo "bench-smoke: $* did not report" >&2; exit 1; }
	@echo "bench-smoke: tether-bench for $* under qemu: ran and reported"

# The size table of docs/BENCHMARKS.md.
sizes: deps
	@for arch in x86_64 $(CROSS_ARCHS); do BUILD_DIR=$(BUILD_DIR) scripts/build-lib.sh $$arch > /dev/null; done
	@BUILD_DIR=$(BUILD_DIR) scripts/size-report.sh

# The C ABI from C: the tests of Tests/c built with the strict flags against the header and
# the Embedded library users link, run, and run under valgrind (leaks and invalid accesses
# fail), each as scripts/c-tests.sh's table says.
c-test: lib
	@scripts/abi-symbols.sh $(LIB_DIR)/libtether.so.0
	@BUILD_DIR=$(BUILD_DIR) scripts/c-tests.sh $(ARCH) engine reentry rtm threads cycles netns alloc

# Every Swift suite, the end-to-end ones included: they run the staged tether-edge and the
# C device built above (TETHER_E2E_REQUIRED makes a missing binary a failure, not a skip).
swift-test: device cross-test
	TETHER_E2E_REQUIRED=1 TETHER_EDGE_BIN=$(abspath $(STAGE))/bin/tether-edge \
		TETHER_DEVICE_BIN=$(abspath $(DEVICE)) \
		TETHER_DEVICE_BIN_AARCH64=$(abspath $(BUILD_DIR))/device-aarch64 \
		TETHER_DEVICE_BIN_ARMV7=$(abspath $(BUILD_DIR))/device-armv7 swift test

docs:
	TETHER_WRITE_DOCS=1 swift test --filter 'StatesTableTests|LoginStatesTableTests'
	@git --no-pager diff --stat -- docs/STATES.md || true
	@$(MAKE) --no-print-directory docs-check

# No tracked file cites a file that is not in the repository: paths, markdown links and
# document names must resolve (scripts/check-docs.py says exactly what it checks). The
# docs installed to share/doc/tether (README.md, docs/*.md) and the header stand alone.
# And every function of the header is documented in its one layout (check-header-docs.py).
.PHONY: docs-check
docs-check:
	@python3 scripts/check-docs.py
	@python3 scripts/check-header-docs.py

format:
	$(SWIFT_FORMAT) format -i -r Sources Tests Package.swift

clean:
	rm -rf .build $(BUILD_DIR)

# A datagram from another source than the server never reaches a session: the engine's
# socket is connected (Tests/c/test_source.c, docs/PROTOCOL.md "Security").
.PHONY: source-test edge-flood
source-test: lib
	@BUILD_DIR=$(BUILD_DIR) scripts/c-tests.sh $(ARCH) source

# tether-edge under a flood of garbage from many source ports: datagrams/s, its memory, its
# members' answers (a measurement, not a test; make test runs a small one, EdgeFloodTests).
FLOOD_SECONDS ?= 10
edge-flood: stage
	@python3 scripts/edge-flood.py --edge $(STAGE)/bin/tether-edge --seconds $(FLOOD_SECONDS)

# The end-to-end fault suite alone (it also runs in make test): the C device and
# tether-edge through the lab's fault proxy. Each run draws new seeds; SEED=N replays one.
.PHONY: faults
faults: device
	TETHER_E2E_REQUIRED=1 TETHER_FAULT_SEED=$(SEED) TETHER_EDGE_BIN=$(abspath $(STAGE))/bin/tether-edge \
		TETHER_DEVICE_BIN=$(abspath $(DEVICE)) swift test --filter 'FaultEndToEndTests|AddressChangeFaultTests'

# make check: the Swift tests under AddressSanitizer (UndefinedBehaviorSanitizer on the C
# they compile) and under ThreadSanitizer, each in its own scratch path (.build-asan,
# .build-tsan), the end-to-end suites included; the C tests (1,000 create/join/leave/destroy
# cycles and engines on two loops in two threads among them) and the device example against
# tether-edge under valgrind memcheck: no error, no definitely or indirectly lost byte; the
# two threads under helgrind too; and the C tests against the Embedded library built with
# ASan (+UBSan) and with TSan. See scripts/check-swift.sh, check-valgrind.sh and
# check-c-sanitizers.sh.
.PHONY: check check-valgrind check-c-sanitizers check-asan check-tsan
# The end-to-end suites run the sanitized build's own tether-edge and the C devices.
CHECK_E2E = TETHER_E2E_REQUIRED=1 TETHER_DEVICE_BIN=$(abspath $(DEVICE)) \
	TETHER_DEVICE_BIN_AARCH64=$(abspath $(BUILD_DIR))/device-aarch64 \
	TETHER_DEVICE_BIN_ARMV7=$(abspath $(BUILD_DIR))/device-armv7
check: check-valgrind check-c-sanitizers check-asan check-tsan
check-valgrind: device
	@BUILD_DIR=$(BUILD_DIR) scripts/check-valgrind.sh $(LIB_DIR) $(STAGE)/bin/tether-edge $(DEVICE) \
		$(MESSAGING)
check-c-sanitizers: deps
	@BUILD_DIR=$(BUILD_DIR) scripts/check-c-sanitizers.sh

# In make test: every Thread: rule of tether.h from a second thread (Tests/c/test_threads.c)
# under ThreadSanitizer, against the Embedded library built with -sanitize=thread.
.PHONY: thread-test
thread-test: deps
	@BUILD_DIR=$(BUILD_DIR) scripts/check-c-sanitizers.sh thread test_threads
check-asan: device cross-test
	@$(CHECK_E2E) BUILD_DIR=$(BUILD_DIR) scripts/check-swift.sh asan
check-tsan: device cross-test
	@$(CHECK_E2E) BUILD_DIR=$(BUILD_DIR) scripts/check-swift.sh tsan

# The part of make check that CI runs after make test (.ci/run; docs/RELIABILITY.md §6 has
# the costs): the C tests against the ASan and TSan builds of the library, valgrind and
# helgrind, and the edge under ASan: its own suites, the driver's, and its end-to-end
# suites (the C devices and the messaging host against the ASan tether-edge).
.PHONY: check-ci
CHECK_CI_ASAN = TetherEdgeTests\.|TetherDriverTests\.|EdgeSignalTests|EdgeFloodTests|LoginEdgeEndToEndTests|ChannelEndToEndTests|LoginEndToEndTests
check-ci: check-c-sanitizers check-valgrind device
	@$(CHECK_E2E) BUILD_DIR=$(BUILD_DIR) scripts/check-swift.sh asan '$(CHECK_CI_ASAN)'

# Seeded random scenarios on the real edge server and real sessions in virtual time
# (Sources/TetherSim/ScenarioRun.swift and each profile's checks list the invariants),
# checked after every step: SIM_SCENARIOS of the channel profile, then SIM_LOGIN_SCENARIOS
# of the login profile. A failure prints its seed and the line that replays it: make
# sim-replay [LOGIN=1] SEED=N. make soak [LOGIN=1] runs SOAK_SCENARIOS more (from
# SOAK_SEED), or as many as fit in SOAK_SECONDS.
SIM_SCENARIOS ?= 10000
SIM_LOGIN_SCENARIOS ?= 15000
SIM_JOBS ?= 2
SOAK_SCENARIOS ?= 1000000
SOAK_SEED ?= 10001
SOAK_SECONDS ?=
SIM_BIN = $$(swift build -c release --show-bin-path)/tether-sim
sim-check: deps
	@swift build -q -c release --product tether-sim
	@$(SIM_BIN) --scenarios $(SIM_SCENARIOS) --jobs $(SIM_JOBS)
	@$(SIM_BIN) --login --scenarios $(SIM_LOGIN_SCENARIOS) --jobs $(SIM_JOBS)

sim-replay: deps
	@test -n "$(SEED)" || { echo "usage: make sim-replay SEED=N" >&2; exit 2; }
	@swift build -q -c release --product tether-sim
	@$(SIM_BIN) $(if $(LOGIN),--login) --replay $(SEED)

soak: deps
	@swift build -q -c release --product tether-sim
	@$(SIM_BIN) $(if $(LOGIN),--login) --scenarios $(if $(SOAK_SECONDS),0,$(SOAK_SCENARIOS)) --seed $(SOAK_SEED) \
		--jobs $(SIM_JOBS) $(if $(SOAK_SECONDS),--seconds $(SOAK_SECONDS))

# make fuzz [FUZZ_SECONDS=60]: the libFuzzer targets of Fuzz/ (the client's decoder, its
# channel and login sessions, the edge server's datagram handler, the C API on a libev
# loop), built with coverage and AddressSanitizer, each run FUZZ_SECONDS from the
# committed corpus; prints executions, exec/s, coverage and crashes per target. Fails if
# any input crashed.
FUZZ_SECONDS ?= 60
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) BUILD_DIR=$(BUILD_DIR) scripts/fuzz.sh run

# In make test: each fuzzer once over its committed corpus and the inputs that crashed it
# (Fuzz/regressions/), and the C regression tests of what fuzzing found, under valgrind.
fuzz-replay: deps lib
	@BUILD_DIR=$(BUILD_DIR) scripts/fuzz.sh replay
	@BUILD_DIR=$(BUILD_DIR) scripts/c-tests.sh $(ARCH) destroy_other destroy_log logout_refused

# One profile per host (issue 9): for each architecture, a static host of one profile
# holds no symbol of the other profile's member of libtether.a, and on aarch64 the text of
# both profiles together stays under 64 KiB (scripts/profile-hosts.sh; make sizes prints
# the figures).
.PHONY: profile-check
profile-check: lib $(BUILD_DIR)/lib/aarch64/libtether.a $(BUILD_DIR)/lib/armv7/libtether.a
	@for arch in x86_64 $(CROSS_ARCHS); do \
		BUILD_DIR=$(BUILD_DIR) scripts/profile-hosts.sh $$arch --check > /dev/null || exit 1; done

# The CMake route (scripts/cmake-test.sh): examples/cmake built with find_package(Tether)
# against a make install, static and shared, natively and for aarch64 with
# cmake/toolchains/aarch64-linux-gnu.cmake, and run (under qemu for aarch64); and which
# versions and architectures the installed TetherConfigVersion.cmake answers.
.PHONY: cmake-test
CMAKE_TEST = $(BUILD_DIR)/cmake-test
cmake-test: lib $(BUILD_DIR)/lib/aarch64/libtether.a
	@rm -rf $(CMAKE_TEST)
	@$(MAKE) --no-print-directory install PREFIX=$(CMAKE_TEST)/x86_64/installed > /dev/null
	@$(MAKE) --no-print-directory install ARCH=aarch64 PREFIX=$(CMAKE_TEST)/aarch64/installed > /dev/null
	@BUILD_DIR=$(BUILD_DIR) scripts/cmake-test.sh x86_64 aarch64
test: cmake-test

# make deb ARCH=x86_64|aarch64|armv7: libtether0, libtether-dev (and, for x86_64,
# tether-edge) as Debian packages in $(BUILD_DIR)/deb (scripts/deb.sh), from a make install.
# On a board: sudo apt install ./libtether0_*_arm64.deb ./libtether-dev_*_arm64.deb
.PHONY: deb
deb: lib
	@rm -rf $(BUILD_DIR)/deb/$(ARCH)/installed
	@$(MAKE) --no-print-directory install ARCH=$(ARCH) PREFIX=$(BUILD_DIR)/deb/$(ARCH)/installed > /dev/null
	@BUILD_DIR=$(BUILD_DIR) scripts/deb.sh $(ARCH) $(VERSION)

# The Debian packages as a user meets them (scripts/deb-test.sh): for x86_64 and aarch64,
# dpkg-deb --info and --contents (architecture, Depends, file lists), the SONAME, and a
# program built against libtether0 + libtether-dev unpacked with dpkg-deb -x, with
# pkg-config and with CMake, and run (aarch64 under qemu); tether-edge's package runs.
.PHONY: deb-test
deb-test: lib $(BUILD_DIR)/lib/aarch64/libtether.a
	@$(MAKE) --no-print-directory deb ARCH=x86_64 > /dev/null
	@$(MAKE) --no-print-directory deb ARCH=aarch64 > /dev/null
	@BUILD_DIR=$(BUILD_DIR) scripts/deb-test.sh $(VERSION) x86_64 aarch64
test: deb-test

# scripts/deps.sh's failure paths against a fake apt-get (scripts/test-deps.sh): a failing
# apt-get update goes on to the install; a failed or ineffective install, or a user who is
# not root, gets one line naming what is missing and the command to run, and a non-zero exit.
.PHONY: deps-test
deps-test: deps
	@BUILD_DIR=$(BUILD_DIR) scripts/test-deps.sh
test: deps-test

# The installed tether-edge: under 16 MB, self-contained, and its systemd unit
# (contrib/tether-edge.service) verified and its ExecStart= flags accepted.
.PHONY: edge-check
edge-check: stage
	@scripts/edge-check.sh $(STAGE)/bin/tether-edge
