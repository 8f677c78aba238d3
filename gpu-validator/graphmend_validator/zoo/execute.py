"""One item: a `graphmend validate` run in a fresh process, its JSON and report files collected.

Shared by the local pool and the Ray tasks, so an item means the same thing on every engine. The
report folder is a private temporary one; its files come back as text, so a Ray worker on another
node needs no shared results folder (only the target files and graphmend itself).
"""

import ctypes
import json
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time

# `graphmend validate` exit codes (docs/validator.md) -> item status; all are final.
STATUS_BY_EXIT = {0: "ok", 1: "outputs_differ", 2: "error", 3: "environment", 4: "not_deployable"}
_PR_SET_PDEATHSIG = 1
_REPORT_FILES_MAX_BYTES = 4 << 20
try:  # resolved here, in the parent: the child only calls it (no loading between fork and exec)
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _PRCTL = None


def _die_with_parent():
    """In the child: SIGTERM when the thread that started it (the pool's) dies, so a run killed with
    SIGKILL leaves no `graphmend validate` behind (it cleans up its own tree on SIGTERM)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def command_for(item, graphmend, python, report_dir, threads=None):
    cmd = [graphmend, "validate", item["target"], "--json", "--quiet", "--report", report_dir,
           "--mode", item["mode"], "--device", item["device"], "--backend", item["backend"],
           "--repeats", str(item["repeats"]), "--timeout", str(item["timeout_s"]), "--fixed", item["fixed"]]
    if item.get("fixed_module"):
        cmd += ["--fixed-module", item["fixed_module"]]
    threads = item.get("threads") or threads
    if threads:
        cmd += ["--threads", str(threads)]
    if python:
        cmd += ["--python", python]
    return cmd


def item_deadline(item):
    """Past this the whole item is killed: every arm has its own limit inside `graphmend validate`
    (timeout_s), so this only catches a run that hangs outside them."""
    arms = 2 * item["repeats"] + 1
    return (item["timeout_s"] + 120.0) * arms + 300.0


def _collect(report_dir):
    files = {}
    total = 0
    for folder, _, names in os.walk(report_dir):
        for name in sorted(names):
            path = os.path.join(folder, name)
            try:
                size = os.path.getsize(path)
                if total + size > _REPORT_FILES_MAX_BYTES:
                    continue
                with open(path, encoding="utf-8") as handle:
                    files[os.path.relpath(path, report_dir)] = handle.read()
                total += size
            except (OSError, UnicodeDecodeError):
                continue
    return files


def run_item(item, graphmend, python=None, engine="local", cancel=None, threads=None):
    """Run one item; returns (record, files). `cancel` (a threading.Event) stops it early: the child
    gets SIGTERM (it kills its arms) and the item comes back with status `interrupted`, not final."""
    started = time.time()
    report_dir = tempfile.mkdtemp(prefix="graphmend-zoo-")
    record = {"id": item["id"], "key": item["key"], "item": item, "engine": engine, "host": platform.node(),
              "started": started}
    try:
        cmd = command_for(item, graphmend, python, report_dir, threads)
        record["threads"] = item.get("threads") or threads
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True, env=env, preexec_fn=_die_with_parent)
        except OSError as exc:
            return _finish(record, "environment", None, None, f"cannot start {graphmend}: {exc}", True), {}
        deadline = time.monotonic() + item_deadline(item)
        stdout = stderr = b""
        killed_for = None
        while True:
            try:
                stdout, stderr = child.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    killed_for = "interrupted"
                elif time.monotonic() > deadline:
                    killed_for = "timeout"
                else:
                    continue
                _stop(child)
                stdout, stderr = child.communicate()
                break
        tail = stderr.decode("utf-8", "replace")[-4000:]
        if killed_for == "interrupted":
            return _finish(record, "interrupted", None, None, "the run was interrupted", False), {}
        if killed_for == "timeout":
            return _finish(record, "lost", None, None, f"no result within {item_deadline(item):.0f} s", False,
                           tail), {}
        code = child.returncode
        try:
            result = json.loads(stdout.decode("utf-8", "replace"))
        except ValueError:
            result = None
        if code in STATUS_BY_EXIT and isinstance(result, dict):
            return _finish(record, STATUS_BY_EXIT[code], code, result, None, True, tail), _collect(report_dir)
        # Killed by a signal we did not send (OOM killer, preemption), or no JSON: not the item's fault.
        how = f"signal {-code}" if code < 0 else f"exit status {code}"
        return _finish(record, "lost", code, result, f"graphmend validate ended with {how} and no result", False,
                       tail), {}
    finally:
        shutil.rmtree(report_dir, ignore_errors=True)


def _stop(child):
    for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _finish(record, status, code, result, message, final, stderr_tail=""):
    record.update(status=status, exit_code=code, result=result, final=final, message=message,
                  finished=time.time(), wall_s=time.time() - record["started"])
    if stderr_tail and status not in ("ok", "outputs_differ"):
        record["stderr_tail"] = stderr_tail
    return record
