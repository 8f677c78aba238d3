#!/usr/bin/env bash
# The GPU check: one prepared script for a machine with a GPU (and, saying so, without one).
#
#   bash scripts/gpu-check.sh
#
# 1. finds the interpreter with torch ($GPU_CHECK_PYTHON, then .venv/bin/python, then python3) and the
#    device (cuda when torch sees one, else cpu: the same path runs and the section says so);
# 2. builds graphmend ($GRAPHMEND_BIN, else build/graphmend when it has `validate`, else a Release build
#    in build-gpu/); without a binary it falls back to `python -m graphmend_validator validate`
#    (hand-fixed targets only: `--fixed auto` needs the engine);
# 3. validates the targets with backend inductor: every examples/**/*.py defining `example()` (fixed arm:
#    graphmend's safe fixes), hand-fixed controls from tests/validator/targets, and a few Hugging Face
#    models (tiny random configs from bench/hf/recipes.py; the fixed arm replaces the model's
#    transformers modeling module with graphmend's safe fixes of it); or the lines of
#    $GPU_CHECK_TARGETS, each `path/file.py::factory=FIXED[@MODULE]` with FIXED a file, `auto` or `none`
#    and MODULE the dotted module the fixed source stands in for (default: the target file itself);
# 4. rewrites the `gpu` section of docs/benchmarks.md ($GPU_CHECK_DOC; between `<!-- gpu:begin -->` and
#    `<!-- gpu:end -->` like the other benchmarks' sections, heading `## GPU`) with a table, the card's
#    name, torch and CUDA versions and the date. Raw results stay in $GPU_CHECK_OUT (default: a temp folder).
#
# The deploy proof (validate --deploy: torch.export, an AOTInductor package, the C++ runner built
# against this torch's libtorch, on the device) runs for the targets in GPU_CHECK_DEPLOY (default: the
# bundled examples/deployable_block.py and the hand-fixed branchy control); the table gets a deploy column.
# On a GPU it also runs the zoo's GPU items (validate --all --need gpu: timing on the card) for the bundled
# examples, into $GPU_CHECK_OUT/zoo (GPU_CHECK_ZOO=0 skips it).
#
# Knobs: GPU_CHECK_HF ("longformer bart": recipe names; empty for none), GPU_CHECK_REPEATS (2),
# GPU_CHECK_BUDGET_S (600: no new target starts after this many seconds; the rest are listed as not run),
# GPU_CHECK_TIMEOUT (900 s per arm), GPU_CHECK_BACKEND (inductor), GPU_CHECK_THREADS (torch threads per
# arm: 1 on the CPU, where a shared machine makes OpenMP threads wait on each other; torch's own on a GPU),
# GPU_CHECK_NO_BUILD=1 (never build: use $GRAPHMEND_BIN or build/graphmend, else the Python fallback).
# Exit status: 0 all validated with equal outputs, 1 some target failed or changed outputs, 3 no torch.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

repeats="${GPU_CHECK_REPEATS:-2}"
budget_s="${GPU_CHECK_BUDGET_S:-600}"
began=$SECONDS
timeout_s="${GPU_CHECK_TIMEOUT:-900}"
backend="${GPU_CHECK_BACKEND:-inductor}"
doc="${GPU_CHECK_DOC:-$root/docs/benchmarks.md}"
out="${GPU_CHECK_OUT:-$(mktemp -d /tmp/graphmend-gpu-check-XXXXXX)}"
mkdir -p "$out"
log() { echo "gpu-check: $*" >&2; }

# -- 1. interpreter and device -----------------------------------------------------------------------
py="${GPU_CHECK_PYTHON:-}"
if [ -z "$py" ]; then
  if [ -x "$root/.venv/bin/python" ] && "$root/.venv/bin/python" -c "import torch" 2>/dev/null; then
    py="$root/.venv/bin/python"
  else
    py="$(command -v python3 || true)"
  fi
fi
if [ -z "$py" ] || ! "$py" -c "import torch" 2>/dev/null; then
  log "no interpreter with torch (tried ${py:-python3}); set GPU_CHECK_PYTHON"
  exit 3
fi
device="$("$py" -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')")"
log "python $py, device $device"
[ "$device" = cpu ] && log "no GPU visible to torch: running the same path on the CPU"
threads="${GPU_CHECK_THREADS-}"
[ -z "${GPU_CHECK_THREADS+x}" ] && [ "$device" = cpu ] && threads=1
thread_args=()
[ -n "$threads" ] && thread_args=(--threads "$threads")
# The Hugging Face models are built from configs in code: nothing to download.
export HF_HUB_OFFLINE=1

# -- 2. graphmend ---------------------------------------------------------------------------------------
bin="${GRAPHMEND_BIN:-}"
if [ -z "$bin" ]; then
  if [ -x build/graphmend ] && build/graphmend validate --help >/dev/null 2>&1; then
    bin="$root/build/graphmend"
  elif [ "${GPU_CHECK_NO_BUILD:-0}" != 1 ] && command -v cmake >/dev/null; then
    log "building graphmend in build-gpu/ (log: $out/build.log)"
    if cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
       cmake --build build-gpu -j "$(nproc)" --target graphmend >>"$out/build.log" 2>&1 &&
       build-gpu/graphmend validate --help >/dev/null 2>&1; then
      bin="$root/build-gpu/graphmend"
    else
      log "build failed (tail of $out/build.log follows); falling back to python -m graphmend_validator"
      tail -n 15 "$out/build.log" >&2
    fi
  fi
fi
[ -n "$bin" ] && log "graphmend: $bin"

# -- 3. targets -------------------------------------------------------------------------------------------
targets=()
if [ -n "${GPU_CHECK_TARGETS:-}" ]; then
  while IFS= read -r line; do
    line="${line#"${line%%[![:space:]]*}"}"
    [ -n "$line" ] && targets+=("$line")
  done <<<"$GPU_CHECK_TARGETS"
else
  if [ -d examples ]; then
    while IFS= read -r file; do
      targets+=("$file::example=auto")
    done < <(grep -rlE --include='*.py' '^def example\(' examples | sort)
  fi
  t=tests/validator/targets
  targets+=("$t/branchy.py::make=$t/branchy_fixed.py")
  hf="${GPU_CHECK_HF-longformer bart}"
  if [ -n "$hf" ] && [ -n "$bin" ] && [ -f bench/hf/recipes.py ]; then
    # One factory per recipe in a generated file; each line names the module the fix replaces.
    if hf_lines="$("$py" - "$root" "$out/hf_targets.py" $hf <<'PY'
import sys
root, path, names = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, root + "/bench/hf")
import recipes  # needs transformers
by_name = {r.name: r for r in recipes.RECIPES}
lines = ["# Generated by scripts/gpu-check.sh: tiny random Hugging Face models from bench/hf/recipes.py.",
         "import sys", f"sys.path.insert(0, {root + '/bench/hf'!r})", "import recipes", "",
         "def _make(name):",
         "    r = next(x for x in recipes.RECIPES if x.name == name)",
         "    model, cfg = recipes.build(r)",
         "    return model, (), recipes.make_inputs(r, cfg, False)", ""]
for name in names:
    if name not in by_name:
        print(f"gpu-check: no recipe {name!r} in bench/hf/recipes.py", file=sys.stderr)
        continue
    lines += [f"def make_{name}():", f"    return _make({name!r})", ""]
    print(f"{path}::make_{name}=auto@{recipes.recipe_modules(by_name[name])[0]}")
open(path, "w").write("\n".join(lines))
PY
    )"; then
      while IFS= read -r line; do [ -n "$line" ] && targets+=("$line"); done <<<"$hf_lines"
    else
      log "Hugging Face models skipped (transformers or bench/hf/recipes.py unusable)"
    fi
  fi
fi

deploy_targets=" ${GPU_CHECK_DEPLOY-examples/deployable_block.py::example tests/validator/targets/branchy.py::make} "

failed=0
index=0
for spec in "${targets[@]}"; do
  target="${spec%%=*}"
  fixed="auto"
  module=""
  [ "$spec" != "$target" ] && fixed="${spec#*=}"
  if [ "${fixed#*@}" != "$fixed" ]; then
    module="${fixed#*@}"
    fixed="${fixed%%@*}"
  fi
  module_args=()
  [ -n "$module" ] && module_args=(--fixed-module "$module")
  deploy_args=()
  [ "${deploy_targets#* "$target" }" != "$deploy_targets" ] && deploy_args=(--deploy)
  index=$((index + 1))
  name="$(printf '%02d' "$index")-$(printf '%s' "$target" | tr -c 'A-Za-z0-9_.-' '_' | tail -c 60)"
  if (( SECONDS - began > budget_s )); then
    log "[$index/${#targets[@]}] $target: not run (past the ${budget_s} s budget)"
    mode=file; [ "$fixed" = auto ] && mode=auto; [ "$fixed" = none ] && mode=none
    printf '{"ok": false, "target": "%s", "fixed_mode": "%s", "error": {"kind": "not_run", "message": "time budget spent"}}\n' \
      "$target" "$mode" >"$out/$name.json"
    failed=1
    continue
  fi
  log "[$index/${#targets[@]}] $target (fixed: $fixed${module:+ as $module}${deploy_args[@]+, deploy})"
  if [ -n "$bin" ]; then
    "$bin" validate "$target" --fixed "$fixed" ${module_args[@]+"${module_args[@]}"} --python "$py" --device "$device" --backend "$backend" \
      ${thread_args[@]+"${thread_args[@]}"} ${deploy_args[@]+"${deploy_args[@]}"} --repeats "$repeats" --timeout "$timeout_s" --json --quiet \
      --report "$out/$name" >"$out/$name.json"
    rc=$?
  elif [ "$fixed" = auto ]; then
    log "  skipped: --fixed auto needs the graphmend binary"
    printf '{"ok": false, "target": "%s", "error": {"kind": "skipped", "message": "no graphmend binary for --fixed auto"}}\n' \
      "$target" >"$out/$name.json"
    rc=3
  else
    PYTHONPATH="$root/gpu-validator${PYTHONPATH:+:$PYTHONPATH}" "$py" -m graphmend_validator validate "$target" \
      --fixed "$fixed" ${module_args[@]+"${module_args[@]}"} --device "$device" --backend "$backend" ${thread_args[@]+"${thread_args[@]}"} \
      ${deploy_args[@]+"${deploy_args[@]}"} --repeats "$repeats" --timeout "$timeout_s" \
      >"$out/$name.json" 2>"$out/$name.stderr"
    rc=$?
  fi
  [ "$rc" -ne 0 ] && failed=1 && log "  exit status $rc"
done

# -- 3b. the zoo's GPU items ------------------------------------------------------------------------------
# `validate --all` with timing items (need gpu: one GPU per item, cold start and steady state on the card),
# on the bundled examples; GPU_CHECK_ZOO=0 skips it. Its report stays in $out/zoo (zoo.json, zoo.csv).
if [ "$device" = cuda ] && [ -n "$bin" ] && [ "${GPU_CHECK_ZOO:-1}" != 0 ] && (( SECONDS - began <= budget_s )); then
  {
    echo '[defaults]'
    echo "backend = \"$backend\""
    echo 'timing = true'
    echo "timing-repeats = $repeats"
    for t in gated_mlp.py::example moe_router.py::example layerdrop_encoder.py::example deployable_block.py::example; do
      printf '[[target]]\ntarget = "%s/examples/%s"\n' "$root" "$t"
    done
  } >"$out/zoo.toml"
  log "zoo: the GPU items of $out/zoo.toml (validate --all --need gpu)"
  "$bin" validate --all --targets "$out/zoo.toml" --need gpu --jobs 1 --python "$py" --report "$out/zoo" >&2
  rc=$?
  [ "$rc" -ne 0 ] && failed=1 && log "  zoo exit status $rc"
fi

# -- 4. the table -----------------------------------------------------------------------------------------
"$py" - "$out" "$doc" "$device" "$backend" "$repeats" "${bin:-python -m graphmend_validator}" "$root" "$threads" <<'PY'
import datetime, glob, json, os, platform, re, sys

out, doc, device, backend, repeats, driver, root, threads = sys.argv[1:9]
import torch

results = []
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    try:
        with open(path) as handle:
            results.append(json.load(handle))
    except (OSError, ValueError) as exc:
        results.append({"ok": False, "target": os.path.basename(path), "error": {"kind": "no_result", "message": str(exc)}})

def seconds(s):
    if s is None:
        return "-"
    return f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"

def ratio(x):
    return "-" if x is None else f"{x:.2f}x"

def yn(v):
    return "-" if v is None else ("yes" if v else "no")

def deployed(arm):
    """One arm of the deploy proof: where it stopped, or its C++ latency and output check."""
    if not arm:
        return "-"
    if not arm.get("exported"):
        return "not exported"
    if not arm.get("packaged"):
        return "not packaged"
    if not arm.get("cpp_ran"):
        return "C++ failed"
    latency = arm.get("cpp_latency_ms")
    shown = seconds(latency / 1e3) if latency is not None else "?"
    return f"C++ {shown}" + ("" if arm.get("outputs_match") else " **DIFFER**")

rows = []
for r in results:
    target = r.get("target") or "?"
    path, _, factory = target.rpartition("::")
    shown = (os.path.relpath(path, root) if os.path.isabs(path) else path) + "::" + factory
    if r.get("fixed_module"):
        shown = f"{factory.removeprefix('make_')} (HF, fixes in {r['fixed_module'].rsplit('.', 1)[-1]})"
    fixed = r.get("fixed_mode") or "?"
    if fixed == "auto":
        n = r.get("fixes_applied")
        fixed = "auto" if n is None else f"auto ({n} fix{'' if n == 1 else 'es'})"
    elif fixed == "file":
        fixed = "by hand"
    if not r.get("ok"):
        err = r.get("error") or {}
        what = "not run (time budget)" if err.get("kind") == "not_run" else f"failed: {err.get('kind')} ({err.get('arm', '-')})"
        rows.append(f"| `{shown}` | {fixed} | {what} | | | | | | |")
        continue
    o, f = r["original"], r.get("fixed") or {}
    outputs = "-" if r.get("outputs_match") is None else ("equal" if r["outputs_match"] else "**DIFFER**")
    rows.append(
        f"| `{shown}` | {fixed} | {o['graph_break_count']} → {f.get('graph_break_count', '-')} "
        f"| {o['graph_count']} → {f.get('graph_count', '-')} | {yn(o.get('fullgraph'))} → {yn(f.get('fullgraph'))} "
        f"| {outputs} | {seconds(o['cold_start_s'])} → {seconds(f.get('cold_start_s'))} ({ratio(r.get('cold_start_speedup'))}) "
        f"| {seconds(o['steady_state_s'])} → {seconds(f.get('steady_state_s'))} ({ratio(r.get('steady_state_speedup'))}) "
        f"| {deployed((r.get('deploy') or {}).get('original')) + ' → ' + deployed((r.get('deploy') or {}).get('fixed')) if r.get('deploy') else '-'} |")

now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
thread_text = "" if not threads else f" · {threads} torch thread{'' if threads == '1' else 's'} per arm"
if device == "cuda":
    card = torch.cuda.get_device_name(0)
    where = f"Card: **{card}** · CUDA {torch.version.cuda} · torch {torch.__version__}"
else:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next((l.split(":", 1)[1].strip() for l in handle if l.startswith("model name")), cpu)
    except OSError:
        pass
    where = (f"**No GPU on this machine: the same path ran on the CPU** ({cpu}, {os.cpu_count()} cores) · "
             f"torch {torch.__version__}")
lines = [
    "## GPU",
    "",
    "<!-- written by scripts/gpu-check.sh: rerun it rather than editing by hand -->",
    f"{where} · backend {backend} · {repeats} repeat{'' if repeats == '1' else 's'} per arm, alternated, each a fresh "
    f"process with compile caches off{thread_text} · {now} · driver `{os.path.basename(driver.split()[0])}`",
    "",
    "Breaks and graphs are original → fixed; times are medians of the first compiled call (cold start, compile "
    "included) and of one call after warm-up (steady state), original → fixed (original / fixed). Outputs: eager "
    "original vs eager fixed on the same weights and inputs. Deploy (targets in GPU_CHECK_DEPLOY): where "
    "`validate --deploy` stopped, or the C++ runner's median latency per call on the device.",
    "",
    "| target | fixed | graph breaks | graphs | fullgraph | outputs | cold start | steady state | deploy (export, AOTInductor, C++) |",
    "|---|---|---|---|---|---|---|---|---|",
    *rows,
    "",
]
section = "\n".join(lines).rstrip("\n")
# The section sits between markers, like every benchmark's section (bench/common.py replace_section),
# so that rewriting it never touches a neighbour; an unmarked `## GPU` section from an older run is
# replaced up to the next heading or marker.
begin, end = "<!-- gpu:begin -->", "<!-- gpu:end -->"
block = f"{begin}\n{section}\n{end}"
try:
    with open(doc, encoding="utf-8") as handle:
        text = handle.read()
except FileNotFoundError:
    text = "# Benchmarks\n"
marked = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
legacy = re.compile(r"^## GPU[ \t]*\n.*?(?=^## |^<!-- [\w-]+:(?:begin|end) -->|\Z)", re.S | re.M)
if marked.search(text):
    text = marked.sub(lambda _m: block, text, count=1)
elif legacy.search(text):
    text = legacy.sub(lambda _m: block + "\n\n", text, count=1)
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
text = text.rstrip("\n") + "\n"
with open(doc + ".tmp", "w", encoding="utf-8") as handle:
    handle.write(text)
os.replace(doc + ".tmp", doc)
print(section)
PY
log "results in $out; section written to $doc"
exit "$failed"
