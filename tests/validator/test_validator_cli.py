"""`graphmend validate` end to end, with real torch on the CPU (backend eager unless stated)."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from validator_support import BIN, PY, TARGETS, base_env, pid_alive, run_cli, run_json, wait_for_file

pytestmark = pytest.mark.usefixtures("graphmend_bin")

BRANCHY = TARGETS / "branchy.py"


def break_lines(arm):
    return sorted(b["line"] for b in arm["breaks"])


def test_breaks_go_to_zero_with_equal_outputs(tmp_path):
    report = tmp_path / "report"
    rc, out, done = run_json(f"{BRANCHY}::make", "--fixed", TARGETS / "branchy_fixed.py", "--backend", "eager",
                             "--repeats", "2", "--report", report)
    assert rc == 0, done.stderr
    assert out["ok"] is True and out["device"] == "cpu" and out["torch_version"].startswith("2.")
    orig, fixed = out["original"], out["fixed"]
    # tensor `if` (line 14), print (18), .item() (19): three breaks, four graphs.
    assert orig["graph_break_count"] == 3 and orig["graph_count"] == 4
    assert break_lines(orig) == [14, 18, 19]
    assert {b["registry_id"] for b in orig["breaks"]} == {"GB0170", "GB0059", "GB0124"}
    assert all(b["file"] == str(BRANCHY) and b["function"] == "forward" for b in orig["breaks"])
    assert orig["fullgraph"] is False and orig["counting_backend_graphs"] == 4
    assert fixed["graph_break_count"] == 0 and fixed["graph_count"] == 1 and fixed["breaks"] == []
    assert fixed["fullgraph"] is True and fixed["recompiles"] == 0
    assert orig["compiled_matches_eager"] and fixed["compiled_matches_eager"]
    assert out["outputs_match"] is True and out["outputs_max_abs_diff"] == 0.0
    assert out["break_sites"] == {"removed": 3, "remaining": 0, "new": 0}
    assert {b["code"] for b in orig["breaks"]} == {"if h.mean() > 0.1:", 'print("hidden norm computed")',
                                                   "scale = h.abs().max().item()"}
    for arm in (orig, fixed):
        assert arm["runs"] == 2 and len(arm["cold_start_samples_s"]) == 2
        assert 0 < arm["steady_state_s"] < arm["cold_start_s"]
    assert out["cold_start_speedup"] == pytest.approx(orig["cold_start_s"] / fixed["cold_start_s"])
    assert out["steady_state_speedup"] == pytest.approx(orig["steady_state_s"] / fixed["steady_state_s"])
    # The report: the same JSON, and a page that needs nothing from outside.
    saved = json.loads((report / "validation.json").read_text())
    assert saved["original"]["graph_break_count"] == 3 and saved["outputs_match"] is True
    html = (report / "report.html").read_text()
    assert html.count("<svg") == 4 and "graph breaks" in html
    assert "<script src" not in html and "<link" not in html and "https://" not in html


def test_fixed_auto_uses_graphmends_safe_fixes(tmp_path):
    # The default fixed arm: graphmend's own safe fixes of the target file, kept under DIR/fixed/.
    rc, out, done = run_json(f"{BRANCHY}::make", "--backend", "eager", "--repeats", "1", "--report", tmp_path)
    assert rc == 0, done.stderr
    assert out["fixed_mode"] == "auto" and out["fixes_applied"] >= 1
    fixed_file = tmp_path / "fixed" / "branchy.py"
    assert out["fixed_source"] == str(fixed_file) and fixed_file.read_text() != BRANCHY.read_text()
    assert out["outputs_match"] is True
    assert out["fixed"]["graph_break_count"] < out["original"]["graph_break_count"] == 3
    assert all(b["file"] == str(fixed_file) for b in out["fixed"]["breaks"])


def test_text_table(tmp_path):
    done = run_cli(f"{TARGETS / 'fn_target.py'}::make", "--fixed", TARGETS / "fn_target_fixed.py",
                   "--backend", "eager", "--repeats", "1")
    assert done.returncode == 0, done.stderr
    lines = {line.split("  ")[0]: line.split() for line in done.stdout.splitlines() if line.strip()}
    assert lines["graph breaks"][-3:] == ["1", "0", "-1"]
    assert lines["graphs"][-3:] == ["2", "1", "-1"]
    assert "outputs (eager original vs eager fixed): equal" in done.stdout
    assert "fn_target.py:7" in done.stdout  # the print's break site


def test_package_target_relative_imports_and_kwargs():
    rc, out, done = run_json(f"{TARGETS / 'pkg' / 'model.py'}::make", "--fixed", TARGETS / "pkg_fixed" / "model.py",
                             "--backend", "eager", "--repeats", "1")
    assert rc == 0, done.stderr
    assert out["module_name"] == "pkg.model"
    assert out["original"]["graph_break_count"] == 1
    assert [(Path(b["file"]).name, b["line"]) for b in out["original"]["breaks"]] == [("model.py", 15)]
    assert out["fixed"]["graph_break_count"] == 0 and out["fixed"]["fullgraph"] is True
    assert out["outputs_match"] is True


def test_fixed_module_replaces_library_code():
    rc, out, done = run_json(f"{TARGETS / 'libuse.py'}::make", "--fixed", TARGETS / "helperlib_fixed.py",
                             "--fixed-module", "helperlib", "--backend", "eager", "--repeats", "1")
    assert rc == 0, done.stderr
    assert out["fixed_module"] == "helperlib"
    assert [(Path(b["file"]).name, b["line"], b["function"]) for b in out["original"]["breaks"]] == [
        ("helperlib.py", 6, "noisy_gate")]
    assert out["fixed"]["graph_break_count"] == 0 and out["fixed"]["fullgraph"] is True
    assert out["outputs_match"] is True


def test_fix_that_changes_outputs_is_caught():
    rc, out, done = run_json(f"{BRANCHY}::make_low", "--fixed", TARGETS / "branchy_wrong.py",
                             "--backend", "eager", "--repeats", "1")
    assert rc == 1, done.stderr
    assert out["ok"] is True and out["outputs_match"] is False
    assert out["outputs_max_abs_diff"] > 0.01
    assert out["fixed"]["graph_break_count"] == 0  # fewer breaks does not make it right
    assert out["exit_code"] == 1


def test_inductor_small_model():
    rc, out, done = run_json(f"{TARGETS / 'fn_target.py'}::make", "--fixed", TARGETS / "fn_target_fixed.py",
                             "--backend", "inductor", "--repeats", "1", timeout=600)
    assert rc == 0, done.stderr
    assert out["backend"] == "inductor"
    assert out["original"]["graph_break_count"] == 1 and out["original"]["graph_count"] == 2
    assert out["fixed"]["graph_break_count"] == 0 and out["fixed"]["graph_count"] == 1
    assert out["original"]["compiled_matches_eager"] and out["fixed"]["compiled_matches_eager"]
    assert out["outputs_match"] is True
    for arm in (out["original"], out["fixed"]):
        assert arm["cold_start_s"] > 10 * arm["steady_state_s"]  # inductor compiles on the first call
    assert out["cold_start_speedup"] > 0 and out["steady_state_speedup"] > 0


def test_user_code_that_raises():
    rc, out, done = run_json(f"{TARGETS / 'misbehaving.py'}::raises", "--fixed", "none", "--backend", "eager")
    assert rc == 2
    err = out["error"]
    assert err["kind"] == "exception" and err["type"] == "ValueError" and "shape two" in err["message"]
    assert err["arm"] == "prepare" and err["file"] == str(TARGETS / "misbehaving.py") and err["line"] == 21


def test_fixed_arm_that_raises():
    rc, out, done = run_json(f"{BRANCHY}::make", "--fixed", TARGETS / "fixed_misbehaving.py", "--backend", "eager",
                             "--repeats", "1", env=base_env(GRAPHMEND_TEST_MODE="raise"))
    assert rc == 2
    err = out["error"]
    assert err["arm"] == "fixed" and err["kind"] == "exception" and err["type"] == "RuntimeError"
    assert err["file"] == str(TARGETS / "fixed_misbehaving.py")
    assert out["partial"]["original"]["graph_break_count"] == 3  # the original arm ran before it


def test_fixed_arm_that_exits():
    rc, out, done = run_json(f"{BRANCHY}::make", "--fixed", TARGETS / "fixed_misbehaving.py", "--backend", "eager",
                             "--repeats", "1", env=base_env(GRAPHMEND_TEST_MODE="exit"))
    assert rc == 2
    err = out["error"]
    assert err["arm"] == "fixed" and err["kind"] == "exited" and err["exit_code"] == 7


def test_user_code_that_segfaults(tmp_path):
    pidfile = tmp_path / "pid"
    rc, out, done = run_json(f"{TARGETS / 'misbehaving.py'}::segfaults", "--fixed", "none", "--backend", "eager",
                             env=base_env(GRAPHMEND_TEST_PIDFILE=pidfile))
    assert rc == 2
    assert out["error"]["kind"] == "crashed" and out["error"]["signal"] == "SIGSEGV"
    assert not pid_alive(int(pidfile.read_text()))


def test_user_code_that_hangs_is_killed_at_its_limit(tmp_path):
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    rc, out, done = run_json(f"{TARGETS / 'misbehaving.py'}::hangs", "--fixed", "none", "--backend", "eager",
                             "--timeout", "12", env=base_env(GRAPHMEND_TEST_PIDFILE=pidfile))
    elapsed = time.monotonic() - started
    assert rc == 2
    assert out["error"]["kind"] == "timeout" and "12 s limit" in out["error"]["message"]
    assert elapsed < 60
    assert pidfile.exists(), "the hanging forward never ran: the limit hit during import"
    assert not pid_alive(int(pidfile.read_text()))


def test_interrupt_cancels_and_kills_the_arm(tmp_path):
    pidfile = tmp_path / "pid"
    proc = subprocess.Popen([BIN, "validate", f"{TARGETS / 'misbehaving.py'}::hangs", "--fixed", "none",
                             "--backend", "eager", "--timeout", "300", "--python", PY, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=base_env(GRAPHMEND_TEST_PIDFILE=pidfile))
    try:
        assert wait_for_file(pidfile, 120), "the target never started"
        arm_pid = int(pidfile.read_text())
        assert pid_alive(arm_pid)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert time.monotonic() - started < 30
    assert json.loads(stdout)["error"]["kind"] == "cancelled"
    assert not pid_alive(arm_pid)


def test_missing_torch_is_reported(torchless_python):
    done = run_cli(f"{BRANCHY}::make", "--fixed", "none", python=torchless_python)
    assert done.returncode == 3
    assert "torch cannot be imported" in done.stderr and torchless_python in done.stderr
    rc, out, _ = run_json(f"{BRANCHY}::make", "--fixed", "none", python=torchless_python)
    assert rc == 3 and out["error"]["kind"] == "torch_missing"


def test_missing_python_is_reported():
    done = run_cli(f"{BRANCHY}::make", "--fixed", "none", python="/nonexistent/bin/python")
    assert done.returncode == 3 and "/nonexistent/bin/python" in done.stderr


@pytest.mark.parametrize("target, kind, words", [
    ("no-separator", "bad_target", "path/to/file.py::factory"),
    (f"{BRANCHY}::", "bad_target", "names no factory"),
    (f"{TARGETS / 'missing.py'}::make", "bad_target", "does not exist"),
    (f"{TARGETS / 'pkg' / '__init__'}::make", "bad_target", "not a .py file"),
    (f"{BRANCHY}::1bad", "bad_target", "not a Python name"),
    (f"{BRANCHY}::nope", "bad_target", "no attribute 'nope'"),
    (f"{TARGETS / 'misbehaving.py'}::not_a_pair", "bad_factory", "must return (callable, args)"),
])
def test_bad_target(target, kind, words):
    rc, out, done = run_json(target, "--fixed", "none", "--backend", "eager")
    assert rc == 3, done.stderr
    assert out["error"]["kind"] == kind
    assert words in out["error"]["message"]


@pytest.mark.parametrize("args, words", [
    (["--repeats", "0"], "--repeats"),
    (["--timeout", "-1"], "--timeout"),
    (["--device", "tpu"], "--device"),
    (["--mode", "infer"], "--mode"),
    (["--threads", "0"], "--threads"),
    (["--bogus"], "unexpected argument '--bogus'"),
    ([], "missing TARGET"),
])
def test_bad_arguments(args, words):
    target = [] if not args else [f"{BRANCHY}::make"]
    done = subprocess.run([BIN, "validate", *target, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and words in done.stderr


def test_python_discovery_uses_the_targets_venv(tmp_path, torchless_python):
    # A project whose .venv has no torch: discovery must pick that venv (and so report torch missing).
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "m.py").write_text((BRANCHY).read_text())
    venv = Path(torchless_python).parent.parent
    os.symlink(venv, project / ".venv")
    done = subprocess.run([BIN, "validate", f"{project / 'src' / 'm.py'}::make", "--fixed", "none"],
                          capture_output=True, text=True, timeout=120, env=base_env())
    assert done.returncode == 3
    assert str(project / ".venv" / "bin" / "python") in done.stderr
