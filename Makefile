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

format:
	find analysis transforms protocol server tests -name '*.cpp' -o -name '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)

distclean: clean
	rm -rf .venv .cache
