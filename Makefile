# Tether: the commands a C developer expects.
#   make demo    play the seed timeline on the core (virtual time) and print it
#   make test    everything: lint, header, Embedded builds, allocations, Swift tests
#   make docs    regenerate the generated part of docs/STATES.md
#   make format  format the Swift sources in place
# See README.md.

SHELL := /bin/bash
BUILD_DIR ?= build
CFLAGS_STRICT := -std=c99 -Wall -Wextra -Wpedantic -Werror
SWIFT_FORMAT ?= swift-format

.PHONY: all deps build demo test lint header-check embedded-check alloc-check c-test swift-test docs format clean

all: build

deps:
	@scripts/deps.sh

build: deps
	swift build

demo: deps
	@swift build -q --product tether-sim
	@swift run --skip-build tether-sim

test: deps lint header-check embedded-check alloc-check c-test swift-test

lint:
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

# No heap allocation per steady-state round (heartbeat out, ack and presence in): valgrind
# counts the allocations of 1,000 and 11,000 rounds, which must be equal.
alloc-check:
	@scripts/alloc-probe.sh

# The C ABI from C: the test program is built with the strict flags against the header
# and the host library, run, and run again under valgrind (leaks and invalid accesses fail).
HOST_LIB_DIR = $(shell swift build --show-bin-path)
c-test:
	@swift build -q --product tether
	@scripts/abi-symbols.sh $(HOST_LIB_DIR)/libtether.so
	@mkdir -p $(BUILD_DIR)
	@gcc $(CFLAGS_STRICT) -IInclude Tests/c/test_engine.c -o $(BUILD_DIR)/test_engine \
		-L$(HOST_LIB_DIR) -ltether -Wl,-rpath,$(HOST_LIB_DIR) -lev -lpthread
	@$(BUILD_DIR)/test_engine
	@valgrind -q --leak-check=full --show-possibly-lost=no --errors-for-leak-kinds=definite --error-exitcode=9 \
		$(BUILD_DIR)/test_engine > /dev/null
	@echo "c-abi: clean under valgrind"

swift-test:
	swift test

docs:
	TETHER_WRITE_DOCS=1 swift test --filter StatesTableTests
	@git --no-pager diff --stat -- docs/STATES.md || true

format:
	$(SWIFT_FORMAT) format -i -r Sources Tests Package.swift

clean:
	rm -rf .build $(BUILD_DIR)
