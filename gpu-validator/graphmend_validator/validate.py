"""The `validate` method: runs the arms in fresh, isolated subprocesses and aggregates their numbers.

Every arm is a new process in its own process group (session) with compile caches disabled and a
fresh cache folder, a time limit, a memory limit (RLIMIT_AS on the CPU, a resident-size watchdog on
every device) and its whole process tree killed on time-out, memory excess or cancellation. The arm
and the validator are subreapers (procs.py): what user code detaches (setsid, double forks) stays
below the arm while it lives, comes to the validator when the arm dies, and is killed when the arm
ends, however it ends.
"""

import json
import keyword
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from graphmend_validator import procs

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
VALIDATOR_ROOT = os.path.dirname(PACKAGE_DIR)

DEFAULTS = {
    "fixed_source": None,
    "fixed_module": None,  # dotted module the fixed source replaces (default: the target's own module)
    "device": "auto",
    "backend": "inductor",
    "repeats": 3,
    "timeout_s": 600.0,
    "mode": "eval",
    "seed": 0,
    "warmup": 3,
    "iters": 20,
    "max_steady_s": 5.0,
    "memory_limit_mb": None,  # default: 3/4 of physical memory
    "threads": None,  # torch.set_num_threads in every arm (default: torch's own choice)
    "rtol": 1e-5,
    "atol": 1e-6,
    "compiled_rtol": 1e-3,
    "compiled_atol": 1e-4,
    "deploy": False,  # also export, package with AOTInductor and run each arm in C++ (deploy.py)
}


class ValidateError(Exception):
    """Bad parameters (JSON-RPC -32602) or an unusable environment, raised before any user code runs."""

    def __init__(self, code, kind, message):
        super().__init__(message)
        self.code = code
        self.kind = kind


class Cancelled(Exception):
    pass


def parse_target(target):
    """`path/to/file.py::factory` -> (absolute file, factory). Raises ValidateError(-32602)."""
    if not isinstance(target, str) or "::" not in target:
        raise ValidateError(-32602, "bad_target", f"target must be 'path/to/file.py::factory', got {target!r}")
    path, factory = target.rsplit("::", 1)
    parts = factory.split(".")
    if not factory or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        raise ValidateError(-32602, "bad_target", f"factory {factory!r} in target {target!r} is not a Python name")
    if not path.endswith(".py"):
        raise ValidateError(-32602, "bad_target", f"target file {path!r} is not a .py file")
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise ValidateError(-32602, "bad_target", f"target file {path} does not exist")
    return path, factory


def module_identity(path):
    """(module name, sys.path root) of a file: dotted through enclosing packages (folders with __init__.py)."""
    folder = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    parts = [] if stem == "__init__" else [stem]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parts.insert(0, os.path.basename(folder))
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if not parts or not all(p.isidentifier() for p in parts):
        # Not importable as a dotted name: load it standalone under a safe name from its own folder.
        return "graphmend_target_" + "".join(c if c.isalnum() else "_" for c in stem), os.path.dirname(path)
    return ".".join(parts), folder


def physical_memory_mb():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return 16384


def group_rss_mb(pgid):
    """Resident memory of every process in a process group, in MiB (0 where /proc is missing)."""
    total = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # field 5 (pgrp), after state and ppid
                continue
            total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")  # field 24 (rss, pages)
        except (OSError, IndexError, ValueError):
            continue
    return total // (1024 * 1024)


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except OSError:
        pass


def tail(path, limit=4000):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


class Validation:
    """One `validate` request. `cancel` is a threading.Event; `progress(message, percentage)` reports."""

    def __init__(self, params, probe_info, cancel=None, progress=None, python=None):
        if not isinstance(params, dict):
            raise ValidateError(-32602, "bad_params", "params must be an object")
        unknown = set(params) - set(DEFAULTS) - {"target", "workDoneToken"}
        if unknown:
            raise ValidateError(-32602, "bad_params", f"unknown parameters: {sorted(unknown)}")
        self.p = dict(DEFAULTS)
        self.p.update({k: v for k, v in params.items() if v is not None or k == "fixed_source"})
        self.target = params.get("target")
        self.file, self.factory = parse_target(self.target)
        fixed = self.p["fixed_source"]
        if fixed is not None:
            if not isinstance(fixed, str) or not os.path.isfile(fixed):
                raise ValidateError(-32602, "bad_fixed", f"fixed source {fixed!r} does not exist")
            self.p["fixed_source"] = os.path.abspath(fixed)
        module = self.p["fixed_module"]
        if module is not None:
            if not isinstance(module, str) or not all(p.isidentifier() for p in module.split(".")):
                raise ValidateError(-32602, "bad_params", f"fixed_module must be a dotted module name, got {module!r}")
            if self.p["fixed_source"] is None:
                raise ValidateError(-32602, "bad_params", "fixed_module needs a fixed_source")
        for key in ("repeats", "warmup", "iters"):
            if not isinstance(self.p[key], int) or isinstance(self.p[key], bool) or self.p[key] < (1 if key != "warmup" else 0):
                raise ValidateError(-32602, "bad_params", f"{key} must be a positive integer")
        for key in ("timeout_s", "max_steady_s", "rtol", "atol", "compiled_rtol", "compiled_atol"):
            if not isinstance(self.p[key], (int, float)) or isinstance(self.p[key], bool) or self.p[key] < 0:
                raise ValidateError(-32602, "bad_params", f"{key} must be a non-negative number")
        threads = self.p["threads"]
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValidateError(-32602, "bad_params", "threads must be a positive integer")
        if self.p["timeout_s"] <= 0:
            raise ValidateError(-32602, "bad_params", "timeout_s must be positive")
        if self.p["mode"] not in ("eval", "train"):
            raise ValidateError(-32602, "bad_params", "mode must be 'eval' or 'train'")
        if not isinstance(self.p["deploy"], bool):
            raise ValidateError(-32602, "bad_params", "deploy must be true or false")
        if self.p["deploy"] and self.p["mode"] != "eval":
            raise ValidateError(-32602, "bad_params", "deploy exports the model for inference: use mode eval")
        if not isinstance(self.p["backend"], str) or not self.p["backend"]:
            raise ValidateError(-32602, "bad_params", "backend must be a backend name")
        self.probe = probe_info
        device = self.p["device"]
        if device == "auto":
            device = "cuda" if probe_info.get("cuda_available") else "cpu"
        elif not isinstance(device, str) or not (device == "cpu" or device.startswith("cuda")):
            raise ValidateError(-32602, "bad_params", f"device must be auto, cpu or cuda[:N], got {device!r}")
        elif device.startswith("cuda") and not probe_info.get("cuda_available"):
            raise ValidateError(-32001, "cuda_unavailable", f"device {device} requested but torch {probe_info.get('torch_version')} sees no CUDA device")
        self.device = device
        self.memory_limit_mb = self.p["memory_limit_mb"] or physical_memory_mb() * 3 // 4
        self.cancel = cancel or threading.Event()
        self.progress = progress or (lambda message, percentage: None)
        self.python = python or sys.executable
        self.module_name, self.search_root = module_identity(self.file)
        self.workdir = None

    # -- one subprocess -------------------------------------------------------------------------

    def run_arm(self, name, role, arm, source_file, extra):
        folder = os.path.join(self.workdir, name)
        os.makedirs(folder)
        spec = {
            "role": role,
            "arm": arm,
            "module_name": self.module_name,
            "search_root": self.search_root,
            "original_file": self.file,
            "source_file": source_file,
            "report_file": source_file,
            "factory": self.factory,
            "seed": self.p["seed"],
            "device": self.device,
            "backend": self.p["backend"],
            "mode": self.p["mode"],
            "warmup": self.p["warmup"],
            "iters": self.p["iters"],
            "max_steady_s": self.p["max_steady_s"],
            "rtol": self.p["rtol"],
            "atol": self.p["atol"],
            "compiled_rtol": self.p["compiled_rtol"],
            "compiled_atol": self.p["compiled_atol"],
            "threads": self.p["threads"],
            "state_path": os.path.join(self.workdir, "state.pt"),
            "inputs_path": os.path.join(self.workdir, "inputs.pt"),
            "reference_path": os.path.join(self.workdir, "reference.pt"),
            "result_path": os.path.join(folder, "result.json"),
            # Virtual-memory limits break CUDA's address-space reservations: there the watchdog alone.
            "rlimit_as_mb": self.memory_limit_mb * 2 if self.device == "cpu" else None,
        }
        spec.update(extra)
        spec_path = os.path.join(folder, "spec.json")
        with open(spec_path, "w", encoding="utf-8") as handle:
            json.dump(spec, handle)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([VALIDATOR_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "inductor-cache")
        env["TRITON_CACHE_DIR"] = os.path.join(folder, "triton-cache")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("TORCH_LOGS", None)
        stdout_path = os.path.join(folder, "stdout.txt")
        stderr_path = os.path.join(folder, "stderr.txt")
        started = time.monotonic()
        try:
            with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
                proc = subprocess.Popen(
                    [self.python, "-m", "graphmend_validator.arm", spec_path],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    env=env,
                    cwd=os.path.dirname(self.file),
                    start_new_session=True,  # its own process group: killed as a whole
                )
                procs.own(proc.pid)
        except OSError as exc:
            return {"ok": False, "wall_s": 0.0,
                    "error": {"kind": "spawn_failed", "arm": arm or role, "message": f"cannot start {self.python}: {exc}"}}
        killed = None
        peak_rss = 0
        next_rss_check = 0.0
        while True:
            try:
                proc.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if self.cancel.is_set():
                killed = "cancelled"
            elif now - started > self.p["timeout_s"]:
                killed = "timeout"
            elif now >= next_rss_check:
                next_rss_check = now + 0.5
                rss = group_rss_mb(proc.pid)
                peak_rss = max(peak_rss, rss)
                if rss > self.memory_limit_mb:
                    killed = "memory"
            if killed:
                procs.kill_tree(proc.pid)  # the arm first stopped: what user code detached is still below it
                proc.wait()
                break
        # Whatever the arm left behind goes too: in its group (compile workers), and what was
        # re-parented to us when it died (a crashed arm's detached processes).
        kill_group(proc)
        procs.disown(proc.pid)
        procs.sweep_orphans()
        elapsed = time.monotonic() - started
        result = None
        if os.path.exists(spec["result_path"]):
            with open(spec["result_path"], encoding="utf-8") as handle:
                result = json.load(handle)
        if killed == "cancelled":
            raise Cancelled()
        if result is None or killed:
            error = {"kind": killed or "crashed", "message": None}
            code = proc.returncode
            if killed == "timeout":
                error["message"] = f"{arm or role} arm ran past its {self.p['timeout_s']:g} s limit and was killed"
            elif killed == "memory":
                error["message"] = f"{arm or role} arm exceeded the {self.memory_limit_mb} MiB memory limit and was killed"
            elif code is not None and code < 0:
                try:
                    signame = signal.Signals(-code).name
                except ValueError:
                    signame = f"signal {-code}"
                error["signal"] = signame
                error["message"] = f"{arm or role} arm was killed by {signame}"
            else:
                error["kind"] = "exited"
                error["exit_code"] = code
                error["message"] = f"{arm or role} arm's interpreter exited with status {code} before reporting"
            result = {"ok": False, "error": error}
        result["wall_s"] = elapsed
        result["peak_rss_mb"] = peak_rss or None
        if not result.get("ok"):
            result["error"]["arm"] = arm or role
            result["error"]["stderr_tail"] = tail(stderr_path)
            result["error"]["stdout_tail"] = tail(stdout_path, 2000)
        return result

    # -- the whole validation -------------------------------------------------------------------

    def run(self):
        began = time.monotonic()
        procs.become_subreaper()
        self.workdir = tempfile.mkdtemp(prefix="graphmend-validate-")
        try:
            return self._run(began)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _run(self, began):
        arms = ["original"] + (["fixed"] if self.p["fixed_source"] else [])
        repeats = self.p["repeats"]
        total_steps = 1 + repeats * len(arms) + (len(arms) if self.p["deploy"] else 0)
        step = 0
        base = {
            "target": self.target,
            "fixed_source": self.p["fixed_source"],
            "fixed_module": self.p["fixed_module"],
            "device": self.device,
            "device_name": self.probe.get("device_name") if self.device.startswith("cuda") else (self.probe.get("cpu_model") or "cpu"),
            "backend": self.p["backend"],
            "mode": self.p["mode"],
            "repeats": repeats,
            "threads": self.p["threads"],
            "torch_version": self.probe.get("torch_version"),
            "python": self.python,
            "module_name": self.module_name,
        }
        self.progress("prepare: original weights, inputs, eager reference", 0)
        prep = self.run_arm("prepare", "prepare", None, self.file, {})
        step += 1
        if not prep.get("ok"):
            return dict(base, ok=False, error=prep["error"], wall_s=time.monotonic() - began)
        runs = {arm: [] for arm in arms}
        for r in range(repeats):
            order = arms if r % 2 == 0 else list(reversed(arms))  # alternate: A B, B A, A B, ...
            for arm in order:
                self.progress(f"{arm} arm, run {r + 1}/{repeats}", int(100 * step / total_steps))
                extra = {"analyze": r == 0}
                source, replacement = self.arm_source(arm)
                extra.update(replacement)
                res = self.run_arm(f"{arm}-{r}", "measure", arm, source, extra)
                step += 1
                if not res.get("ok"):
                    partial = {a: self.aggregate(v) for a, v in runs.items() if v}
                    return dict(base, ok=False, error=res["error"], partial=partial, wall_s=time.monotonic() - began)
                runs[arm].append(res)
        deploys = {}
        if self.p["deploy"]:
            for arm in arms:
                self.progress(f"deploy: {arm} arm (torch.export, AOTInductor, C++ runner)", int(100 * step / total_steps))
                source, replacement = self.arm_source(arm)
                res = self.run_arm(f"deploy-{arm}", "deploy", arm, source, dict(replacement))
                step += 1
                deploys[arm] = deploy_section(res)
        self.progress("done", 100)
        out = dict(base, ok=True)
        out["original"] = self.aggregate(runs["original"])
        out["fixed"] = self.aggregate(runs["fixed"]) if "fixed" in runs else None
        out["reference_deterministic"] = all(r["matches_reference"] for r in runs["original"])
        if out["fixed"] is not None:
            fixed_runs = runs["fixed"]
            out["outputs_match"] = all(r["matches_reference"] for r in fixed_runs)
            diffs = [r.get("reference_max_abs_diff") for r in fixed_runs]
            out["outputs_max_abs_diff"] = None if any(d is None for d in diffs) else max(diffs)
            out["outputs_difference"] = next((r["reference_difference"] for r in fixed_runs if r["reference_difference"]), None)
            o, f = out["original"], out["fixed"]
            out["cold_start_speedup"] = o["cold_start_s"] / f["cold_start_s"] if f["cold_start_s"] else None
            out["steady_state_speedup"] = o["steady_state_s"] / f["steady_state_s"] if f["steady_state_s"] else None
            out["graph_breaks_removed"] = o["graph_break_count"] - f["graph_break_count"]
            out["break_sites"] = match_sites(o["breaks"], f["breaks"])
        else:
            out["outputs_match"] = None
            out["cold_start_speedup"] = None
            out["steady_state_speedup"] = None
        if self.p["deploy"]:
            for arm, section in deploys.items():
                steady = out[arm]["steady_state_s"] if out.get(arm) else None
                section["python_steady_state_ms"] = steady * 1e3 if steady is not None else None
            out["deploy"] = {"original": deploys.get("original"), "fixed": deploys.get("fixed")}
            proven = deploys["fixed" if "fixed" in deploys else "original"]
            out["deployable"] = bool(proven["exported"] and proven["packaged"] and proven["cpp_ran"]
                                     and proven["outputs_match"])
        out["wall_s"] = time.monotonic() - began
        return out

    def arm_source(self, arm):
        """(source file, extra spec) of an arm: with fixed_module the target file stays and the fixed
        source stands in for another module (library code)."""
        if arm == "original":
            return self.file, {}
        if self.p["fixed_module"]:
            return self.file, {"replace_module": self.p["fixed_module"], "replace_source": self.p["fixed_source"]}
        return self.p["fixed_source"], {}

    @staticmethod
    def aggregate(runs):
        first = runs[0]
        cold = [r["cold_start_s"] for r in runs]
        steady = [r["steady_state_s"] for r in runs]
        agg = {
            "graph_count": first["graph_count"],
            "graph_break_count": first["graph_break_count"],
            "breaks": first["breaks"],
            "break_sites": len(first["breaks"]),
            "fullgraph": first.get("fullgraph"),
            "fullgraph_error": first.get("fullgraph_error"),
            "recompiles": max(r["recompiles"] for r in runs),
            "graphs_after_first_call": max((r.get("graphs_after_first_call") or 0) for r in runs),
            "counting_backend_graphs": first.get("counting_backend_graphs"),
            "ops_per_graph": first.get("ops_per_graph"),
            "dynamo_counters": first.get("dynamo_counters"),
            "compiled_matches_eager": all(r["compiled_matches_eager"] for r in runs),
            "compiled_max_abs_diff": _max_or_none([r["compiled_max_abs_diff"] for r in runs]),
            "cold_start_s": statistics.median(cold),
            "cold_start_min_s": min(cold),
            "cold_start_max_s": max(cold),
            "cold_start_samples_s": cold,
            "steady_state_s": statistics.median(steady),
            "steady_state_min_s": min(r["steady_state_min_s"] for r in runs),
            "steady_state_max_s": max(r["steady_state_max_s"] for r in runs),
            "steady_state_samples_s": steady,
            "eager_steady_state_s": statistics.median(r["eager_steady_state_s"] for r in runs),
            "import_s": statistics.median(r["import_s"] for r in runs),
            "peak_rss_mb": max((r.get("peak_rss_mb") or 0) for r in runs) or None,
            "runs": len(runs),
            "consistent_counts": len({(r["graph_count"], r["graph_break_count"]) for r in runs}) == 1,
        }
        missing = first.get("state_dict_missing") or []
        unexpected = first.get("state_dict_unexpected") or []
        if missing or unexpected:
            agg["state_dict_missing"] = missing
            agg["state_dict_unexpected"] = unexpected
        return agg


DEPLOY_FIELDS = ("exported", "export_mode", "export_error", "export_strict", "export_non_strict", "packaged",
                 "package_error", "package_s", "cpp_ran", "cpp_error", "runner_cached", "runner_build_s",
                 "outputs_match", "max_abs_diff", "outputs_difference", "cpp_latency_ms", "cpp_latency_min_ms",
                 "cpp_latency_max_ms", "cpp_calls")


def deploy_section(res):
    """A deploy arm's result as its report section. An arm that itself failed (time limit, crash, an
    exception before the export) is a deploy that did not happen: every step false, with the error."""
    section = {key: None for key in DEPLOY_FIELDS}
    section.update(exported=False, packaged=False, cpp_ran=False)
    if res.get("ok"):
        section.update(res.get("deploy") or {})
        section["error"] = None
    else:
        error = res.get("error") or {}
        section["error"] = {k: error.get(k) for k in ("kind", "type", "message", "file", "line")}
        section["export_error"] = f"the deploy arm failed before finishing: {error.get('message')}"
    return section


def match_sites(original, fixed):
    """Original vs fixed break sites matched by function, statement text and type (line numbers move
    when a fix adds or removes lines): how many went away, stayed, or are new."""
    def key(site):
        return (site.get("function"), site.get("code"), site.get("type"))

    before = {key(s) for s in original}
    after = {key(s) for s in fixed}
    return {"removed": len(before - after), "remaining": len(before & after), "new": len(after - before)}


def _max_or_none(values):
    return None if any(v is None for v in values) else max(values)
