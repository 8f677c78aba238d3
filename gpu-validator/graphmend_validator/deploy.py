"""The deploy proof: torch.export (strict, then non-strict), an AOTInductor package, and a C++ run.

`run_deploy` is the `deploy` arm (a fresh process, like the measured arms): it exports the factory's
model on the saved weights and inputs, packages the exported program with
`torch._inductor.aoti_compile_and_package`, and runs the package with `graphmend_deploy_runner`, a
small C++ program that loads it with libtorch's `AOTIModelPackageLoader` (no Python interpreter),
on the flat input tensors this side saved. The runner's outputs come back for comparison with the
arm's eager outputs, with its latency per call.

The runner is built with CMake against the libtorch inside the user's torch wheel
(`torch.utils.cmake_prefix_path`) once per torch installation and runner source, and cached under
$GRAPHMEND_CACHE_DIR (default: $XDG_CACHE_HOME/graphmend, else ~/.cache/graphmend).
"""

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

RUNNER_SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deploy_runner")
RUNNER_NAME = "graphmend_deploy_runner"


class DeployError(Exception):
    """A step of the deploy proof that could not run, with a message for the report."""


# ----------------------------------------------------------------------------------------------
# The runner: found in the cache, or built there

def cache_root():
    explicit = os.environ.get("GRAPHMEND_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "graphmend")


def find_cxx():
    """The C++ compiler CMake will use: $CXX when set (it must exist), else c++, g++, clang++ on PATH."""
    explicit = os.environ.get("CXX")
    if explicit:
        found = shutil.which(explicit)
        if not found:
            raise DeployError(f"no C++ compiler: CXX={explicit} is not an executable; the deploy runner is built "
                              "with CMake against this torch's libtorch (install g++ or set CXX)")
        return found
    for name in ("c++", "g++", "clang++"):
        found = shutil.which(name)
        if found:
            return found
    raise DeployError("no C++ compiler found (looked for $CXX, c++, g++, clang++ on PATH): the deploy runner "
                      "and AOTInductor both need one (Debian/Ubuntu: apt-get install g++)")


def find_cmake():
    # The interpreter's own bin folder first: `pip install cmake` puts one there.
    local = os.path.join(os.path.dirname(sys.executable), "cmake")
    if os.access(local, os.X_OK):
        return local
    found = shutil.which("cmake")
    if not found:
        raise DeployError("cmake not found: the deploy runner is built with CMake (pip install cmake, or "
                          "apt-get install cmake)")
    return found


def runner_key(torch, cxx):
    """One build per torch installation (version, CUDA, where its libraries lie), compiler and runner source."""
    digest = hashlib.sha256()
    for part in (torch.__version__, str(torch.version.cuda), os.path.dirname(torch.__file__), cxx):
        digest.update(part.encode() + b"\0")
    for name in sorted(os.listdir(RUNNER_SOURCE_DIR)):
        with open(os.path.join(RUNNER_SOURCE_DIR, name), "rb") as handle:
            digest.update(name.encode() + b"\0" + handle.read())
    safe_version = re.sub(r"[^A-Za-z0-9.]+", "_", torch.__version__)
    return f"torch-{safe_version}-{digest.hexdigest()[:16]}"


def runner_binary(torch, log=None):
    """Path of a runner built for this torch, and facts about it: {"cached": bool, "build_s": float|None}.

    Built under a lock (parallel validations wait for one build), in a temporary folder renamed into
    place, so a killed build never leaves a half-written runner in the cache."""
    cxx = find_cxx()
    cmake = find_cmake()
    root = os.path.join(cache_root(), "deploy-runner")
    os.makedirs(root, exist_ok=True)
    key = runner_key(torch, cxx)
    final = os.path.join(root, key)
    binary = os.path.join(final, RUNNER_NAME)
    with open(os.path.join(root, key + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(binary, os.X_OK):
            return binary, {"cached": True, "build_s": None, "key": key}
        started = time.perf_counter()
        work = tempfile.mkdtemp(prefix=key + ".build-", dir=root)
        try:
            build = os.path.join(work, "build")
            configure = [cmake, "-S", RUNNER_SOURCE_DIR, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                         f"-DCMAKE_CXX_COMPILER={cxx}", f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}"]
            for step in (configure, [cmake, "--build", build, "-j", str(max(1, min(4, os.cpu_count() or 1)))]):
                proc = subprocess.run(step, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                if log is not None:
                    log.write(proc.stdout.decode("utf-8", errors="replace"))
                if proc.returncode != 0:
                    text = proc.stdout.decode("utf-8", errors="replace").strip().splitlines()
                    raise DeployError(f"building the deploy runner failed ({os.path.basename(step[0])} "
                                      f"{'configure' if step is configure else 'build'}, status {proc.returncode}): "
                                      + " / ".join(text[-6:]))
            staged = os.path.join(work, "staged")
            os.makedirs(staged)
            shutil.copy2(os.path.join(build, RUNNER_NAME), os.path.join(staged, RUNNER_NAME))
            if os.path.exists(final):
                shutil.rmtree(final)
            os.replace(staged, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return binary, {"cached": False, "build_s": time.perf_counter() - started, "key": key}


def run_runner(binary, package, inputs_path, outputs_path, device, warmup, iters):
    """Runs the C++ runner; returns its `key value` lines as a dict. Raises DeployError with its stderr."""
    command = [binary, package, inputs_path, outputs_path, "--device", device, "--warmup", str(warmup),
               "--iters", str(iters)]
    proc = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
        how = f"status {proc.returncode}" if proc.returncode > 0 else f"signal {-proc.returncode}"
        raise DeployError(f"the C++ runner failed ({how}): " + (" / ".join(detail[-4:]) or "no message"))
    facts = {}
    for line in proc.stdout.decode("utf-8", errors="replace").splitlines():
        key, _, value = line.partition(" ")
        try:
            facts[key] = float(value)
        except ValueError:
            continue
    if "median_ms" not in facts:
        raise DeployError("the C++ runner printed no latency")
    return facts


# ----------------------------------------------------------------------------------------------
# Export errors: the first line, and where in the user's code

_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def error_location(exc, user_files):
    """Innermost user-code frame of an export failure: Dynamo names it in the message ("from user
    code: File ..., line N"), non-strict export in the traceback."""
    found = None
    for match in _FILE_LINE.finditer(str(exc)):
        if match.group(1) in user_files:
            found = (match.group(1), int(match.group(2)))
    if found:
        return found
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename in user_files:
            found = (frame.filename, frame.lineno)
    return found or (None, None)


def describe_error(exc):
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:400]


# ----------------------------------------------------------------------------------------------
# The deploy arm

def _as_module(torch, fn):
    if isinstance(fn, torch.nn.Module):
        return fn

    class Wrapped(torch.nn.Module):
        def forward(self, *args, **kwargs):
            return fn(*args, **kwargs)

    return Wrapped()


def _flat_tensors(torch, tree):
    from torch.utils import _pytree as pytree

    return [leaf for leaf in pytree.tree_leaves(tree) if isinstance(leaf, torch.Tensor)]


def python_operators(torch, program):
    """Operators of the exported graph whose kernel is Python (`torch.library.custom_op`, the operators of
    graphmend's runtime-effect fixes): an AOTInductor package calls them back through its proxy executor,
    which needs a Python interpreter that imported the module defining them; the C++ runner has none."""
    try:
        from torch._library.custom_ops import OPDEFS
    except ImportError:  # a torch without the registry: graphmend's own namespaces are still recognised
        OPDEFS = {}
    found = set()
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if getattr(target, "__name__", "") == "with_effects" and len(node.args) > 1:  # an ordered-effect call
            target = node.args[1]
        if not isinstance(target, torch._ops.OpOverload):
            continue
        qualname = target._schema.name
        if qualname in OPDEFS or qualname.split("::")[0].startswith("graphmend_"):
            found.add(qualname)
    return sorted(found)


def run_deploy(spec, result, prepare_model, compare):
    """`prepare_model(spec)` returns (fn, args, kwargs) on the device with the saved weights and inputs,
    in eval mode; `compare(a, b, rtol, atol)` is the validator's comparison."""
    import torch
    from torch.export._tree_utils import reorder_kwargs
    from torch.utils import _pytree as pytree

    fn, args, kwargs = prepare_model(spec)
    user_files = {spec["source_file"]} | ({spec["replace_source"]} if spec.get("replace_source") else set())
    path_map = {spec["source_file"]: spec["report_file"]}
    with torch.no_grad():
        eager_out = fn(*args, **kwargs)
    module = _as_module(torch, fn)

    deploy = {"exported": False, "export_mode": None, "export_error": None, "packaged": False,
              "package_error": None, "cpp_ran": False, "cpp_error": None, "outputs_match": None,
              "max_abs_diff": None, "cpp_latency_ms": None, "python_operators": []}
    result["deploy"] = deploy
    program = None
    for strict in (True, False):
        name = "strict" if strict else "non_strict"
        torch._dynamo.reset()
        started = time.perf_counter()
        try:
            with torch.no_grad():
                exported = torch.export.export(module, args, kwargs, strict=strict)
            deploy[f"export_{name}"] = {"ok": True, "error": None, "file": None, "line": None,
                                        "seconds": time.perf_counter() - started}
            if program is None:
                program, deploy["export_mode"] = exported, name.replace("_", "-")
        except Exception as exc:  # every way an export fails is a finding of the report, not a crash
            file, line = error_location(exc, user_files)
            deploy[f"export_{name}"] = {"ok": False, "error": describe_error(exc),
                                        "file": path_map.get(file, file), "line": line,
                                        "seconds": time.perf_counter() - started}
    torch._dynamo.reset()
    deploy["exported"] = program is not None
    if program is None:
        first = deploy["export_strict"]
        deploy["export_error"] = first["error"] + (f" (at {first['file']}:{first['line']})" if first["file"] else "")
        return

    deploy["python_operators"] = python_operators(torch, program)
    folder = os.path.dirname(spec["result_path"])
    package = os.path.join(folder, "model.pt2")
    started = time.perf_counter()
    try:
        torch._inductor.aoti_compile_and_package(program, package_path=package)
        deploy["packaged"] = True
    except Exception as exc:
        deploy["package_error"] = describe_error(exc)
        return
    finally:
        deploy["package_s"] = time.perf_counter() - started

    # The runner's inputs, flattened exactly as the package's own Python loader does.
    in_spec = program.call_spec.in_spec
    flat_inputs = [x for x in pytree.tree_flatten((args, reorder_kwargs(kwargs, in_spec) if in_spec else kwargs))[0]
                   if isinstance(x, torch.Tensor)]
    inputs_path = os.path.join(folder, "runner-inputs.pt")
    outputs_path = os.path.join(folder, "runner-outputs.pt")
    torch.save([t.detach().to("cpu") for t in flat_inputs], inputs_path)
    try:
        with open(os.path.join(folder, "runner-build.log"), "w", encoding="utf-8") as log:
            binary, facts = runner_binary(torch, log)
        deploy["runner_cached"] = facts["cached"]
        deploy["runner_build_s"] = facts["build_s"]
        timing = run_runner(binary, package, inputs_path, outputs_path, spec["device"], spec["warmup"],
                            max(1, spec["iters"]))
    except DeployError as exc:
        deploy["cpp_error"] = str(exc)
        if deploy["python_operators"]:
            deploy["cpp_error"] = (
                "the graph calls operators implemented in Python (" + ", ".join(deploy["python_operators"]) +
                "), which a process without Python cannot run: load Python and the module that defines them "
                "before the package, or deploy the unfixed code; the runner said: " + deploy["cpp_error"])
        return
    deploy["cpp_ran"] = True
    deploy["cpp_latency_ms"] = timing["median_ms"]
    deploy["cpp_latency_min_ms"] = timing.get("min_ms")
    deploy["cpp_latency_max_ms"] = timing.get("max_ms")
    deploy["cpp_calls"] = int(timing.get("calls", 0))
    cpp_outputs = list(torch.load(outputs_path, weights_only=True))
    expected = [t.detach().to("cpu") for t in _flat_tensors(torch, eager_out)]
    ok, diff, where = compare(expected, cpp_outputs, spec["compiled_rtol"], spec["compiled_atol"])
    deploy["outputs_match"] = ok
    deploy["max_abs_diff"] = diff
    deploy["outputs_difference"] = where
