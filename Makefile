# Neovim-style wrapper around CMake. `make demo` and `make test` set everything up on a fresh machine.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PY := .venv/bin/python

.PHONY: all setup build demo test unit oracle bench fuzz docs registry format clean distclean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD_DIR)/CMakeCache.txt: | setup
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: setup $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)/graphmend

test: build
	@bash scripts/test.sh $(BUILD_DIR)

fuzz: setup
	bash scripts/fuzz.sh 1000000

bench: build
	@bash scripts/bench.sh $(BUILD_DIR)/graphmend

docs: build
	$(BUILD_DIR)/graphmend rule --write-docs docs/rules

registry: setup
	$(PY) scripts/gen_registry.py analysis/generated/dynamo_registry.inc

# Debian ships clang-format versioned (clang-format-14 on Debian 12).
CLANG_FORMAT ?= $(shell command -v clang-format || ls /usr/bin/clang-format-[0-9]* 2>/dev/null | sort -V | tail -n 1)
format:
	find analysis transforms protocol server tests -name '*.cpp' -o -name '*.h' | xargs $(CLANG_FORMAT) -i

clean:
	rm -rf $(BUILD_DIR)

distclean: clean
	rm -rf .venv .cache
