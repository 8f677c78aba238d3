# Neovim-style wrapper around CMake. `make demo` and `make test` set everything up on a fresh machine.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PY := .venv/bin/python

.PHONY: all setup build demo test unit oracle bench fuzz docs registry format dist test-wheel clean distclean

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
	python3 scripts/generate-rule-table.py --graphmend $(BUILD_DIR)/graphmend

# The union of the supported releases' registries: the installed torch's, plus each other release's
# graph_break_registry.json as VERSION=PATH in REGISTRIES (e.g. "2.14.1=/venv214/.../graph_break_registry.json").
REGISTRIES ?=
registry: setup
	$(PY) scripts/gen_registry.py analysis/generated/dynamo_registry.inc $(REGISTRIES)

# The pip wheel (pyproject.toml: scikit-build-core, GRAPHMEND_PORTABLE) in dist/, tagged manylinux_2_X for the
# glibc it is built against, then checked by auditwheel (docs/install.md). DIST_FLAGS: extra pip options.
DIST_PLAT = $(shell $(PY) -c 'import platform; v = platform.libc_ver()[1].split("."); \
                               print(f"manylinux_{v[0]}_{v[1]}_{platform.machine()}")')
DIST_FLAGS ?=
AUDITWHEEL := .cache/auditwheel/bin/auditwheel
dist: setup $(AUDITWHEEL)
	rm -rf build-wheel/out
	_PYTHON_HOST_PLATFORM=$(DIST_PLAT) CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) \
	  $(PY) -m pip wheel . -w build-wheel/out --no-deps --disable-pip-version-check $(DIST_FLAGS)
	mkdir -p dist && rm -f dist/graphmend-*.whl && mv build-wheel/out/graphmend-*.whl dist/
	$(AUDITWHEEL) show dist/graphmend-*.whl

$(AUDITWHEEL):
	python3 -m venv .cache/auditwheel
	.cache/auditwheel/bin/pip install -q --disable-pip-version-check auditwheel==6.8.2

# Installs dist/'s wheel (building it first when stale) into a fresh venv and runs it from outside the checkout.
test-wheel: setup
	@bash scripts/test-wheel.sh

# clang-format 14 (Debian 12's), the version `make test` checks with (scripts/check-format.sh).
format:
	bash scripts/check-format.sh --fix

clean:
	rm -rf $(BUILD_DIR)

distclean: clean
	rm -rf .venv .cache build-wheel dist

# The VS Code extension for linux-x64 (clients/vscode/graphmend-linux-x64.vsix), with the server
# ($GRAPHMEND_VSIX_BINARY, else the portable executable `make dist` builds in build-wheel/, which needs
# only glibc; a stripped copy), the validator and the rule pages.
.PHONY: vsix
vsix: VSIX_BINARY = $(abspath $(or $(GRAPHMEND_VSIX_BINARY),build-wheel/graphmend))
vsix: $(if $(GRAPHMEND_VSIX_BINARY),,dist)
	@test -x "$(VSIX_BINARY)" || { echo "vsix: no server at $(VSIX_BINARY): run make build, or set GRAPHMEND_VSIX_BINARY" >&2; exit 1; }
	cd clients/vscode && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && \
	  GRAPHMEND_BUNDLE="$(VSIX_BINARY)" npm run -s package:linux-x64
