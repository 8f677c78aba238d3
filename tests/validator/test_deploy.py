"""`graphmend validate --deploy` end to end with real torch on the CPU: torch.export (strict and
non-strict), AOTInductor packaging and the C++ runner built against the wheel's libtorch.

The runner is built once into a cache folder private to this module (the first deploy that gets
that far builds it; the others must find it there)."""
import json
import os
import subprocess

import pytest

from validator_support import BIN, PY, ROOT, TARGETS, VALIDATOR_DIR, base_env, run_cli, run_json

pytestmark = pytest.mark.usefixtures("graphmend_bin")

DEPLOYABLE = ROOT / "examples" / "deployable_block.py"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("graphmend-cache")


@pytest.fixture(scope="module")
def deployed(cache_dir, tmp_path_factory):
    """One --deploy validation of the bundled example (graphmend's safe fixes as the fixed arm)."""
    report = tmp_path_factory.mktemp("deploy-report")
    env = base_env(GRAPHMEND_CACHE_DIR=cache_dir)
    rc, out, done = run_json(f"{DEPLOYABLE}::example", "--deploy", "--repeats", "1", "--backend", "eager",
                             "--threads", "1", "--report", report, env=env, timeout=900)
    return rc, out, done, report


def test_break_blocks_export_and_the_fix_deploys(deployed):
    rc, out, done, _ = deployed
    assert rc == 0, done.stderr
    assert out["ok"] is True and out["outputs_match"] is True
    assert out["original"]["graph_break_count"] >= 1 and out["fixed"]["graph_break_count"] == 0
    original, fixed = out["deploy"]["original"], out["deploy"]["fixed"]
    # The original: both export modes fail at the tensor-valued `if`, with its line in the example.
    line = next(i for i, text in enumerate(DEPLOYABLE.read_text().splitlines(), 1) if "if h.abs().max()" in text)
    assert original["exported"] is False and original["packaged"] is False and original["cpp_ran"] is False
    assert original["export_strict"]["ok"] is False and "Data-dependent branching" in original["export_strict"]["error"]
    assert original["export_strict"]["file"] == str(DEPLOYABLE) and original["export_strict"]["line"] == line
    assert original["export_non_strict"]["ok"] is False and original["export_non_strict"]["line"] == line
    assert f"deployable_block.py:{line}" in original["export_error"]
    # The fixed arm: exported strictly, packaged, run in C++ with eager's outputs.
    assert fixed["exported"] is True and fixed["export_mode"] == "strict" and fixed["export_error"] is None
    assert fixed["packaged"] is True and fixed["cpp_ran"] is True and fixed["cpp_error"] is None
    assert fixed["outputs_match"] is True and fixed["max_abs_diff"] < 1e-4
    assert fixed["cpp_latency_ms"] > 0 and fixed["cpp_calls"] == 20
    assert fixed["cpp_latency_min_ms"] <= fixed["cpp_latency_ms"] <= fixed["cpp_latency_max_ms"]
    assert fixed["python_steady_state_ms"] == pytest.approx(out["fixed"]["steady_state_s"] * 1e3)
    # The first deploy that reached the runner built it.
    assert fixed["runner_cached"] is False and fixed["runner_build_s"] > 0
    assert out["deployable"] is True and out["exit_code"] == 0


def test_deploy_html_report(deployed):
    _, out, _, report = deployed
    html = (report / "report.html").read_text()
    assert "Deploy: torch.export, AOTInductor, C++ runner" in html
    assert 'Deployable without Python: <span class="ok">yes' in html
    assert "<tr><th>torch.export</th><td>no</td><td>yes (strict)</td></tr>" in html
    assert "original: not exported: Unsupported: Data-dependent branching" in html
    assert json.loads((report / "validation.json").read_text())["deploy"] == out["deploy"]


def test_unexportable_model_is_reported_not_crashed(cache_dir):
    env = base_env(GRAPHMEND_CACHE_DIR=cache_dir)
    done = run_cli(f"{TARGETS / 'unexportable.py'}::make", "--fixed", "none", "--deploy", "--repeats", "1",
                   "--backend", "eager", "--threads", "1", env=env, timeout=600)
    assert done.returncode == 4, done.stderr
    assert "torch.export" in done.stdout and "deployable: NO (the original stops at a step above)" in done.stdout
    assert "original: not exported: AssertionError: Encountered unrecognized type" in done.stdout
    rc, out, done = run_json(f"{TARGETS / 'unexportable.py'}::make", "--fixed", "none", "--deploy", "--repeats", "1",
                             "--backend", "eager", "--threads", "1", env=env, timeout=600)
    assert rc == 4 and out["ok"] is True and out["deployable"] is False
    arm = out["deploy"]["original"]
    assert arm["exported"] is False and arm["export_non_strict"]["ok"] is False
    assert "pytree" in arm["export_non_strict"]["error"]
    assert out["deploy"]["fixed"] is None
    # One graph under torch.compile all the same: export's limits are not graph breaks.
    assert out["original"]["graph_break_count"] == 0


def test_python_validator_deploys_with_the_cached_runner(deployed, cache_dir):
    """The Python CLI (the GPU check's fallback) takes --deploy too, and finds the runner built above."""
    env = base_env(GRAPHMEND_CACHE_DIR=cache_dir, PYTHONPATH=VALIDATOR_DIR)
    done = subprocess.run([PY, "-m", "graphmend_validator", "validate", f"{TARGETS / 'branchy.py'}::make", "--fixed",
                           str(TARGETS / "branchy_fixed.py"), "--deploy", "--repeats", "1", "--backend", "eager",
                           "--threads", "1"], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    fixed = out["deploy"]["fixed"]
    assert fixed["cpp_ran"] is True and fixed["outputs_match"] is True
    assert fixed["runner_cached"] is True and fixed["runner_build_s"] is None
    assert out["deploy"]["original"]["exported"] is False and out["deployable"] is True


def test_runner_cache_key_and_lookup(deployed, cache_dir):
    """A second lookup returns the same runner without building; a changed torch key builds elsewhere."""
    script = (
        "import json, torch\n"
        "from graphmend_validator import deploy\n"
        "path, facts = deploy.runner_binary(torch)\n"
        "print(json.dumps({'path': path, 'facts': facts}))\n"
    )
    env = base_env(GRAPHMEND_CACHE_DIR=cache_dir, PYTHONPATH=VALIDATOR_DIR)
    first = json.loads(subprocess.run([PY, "-c", script], capture_output=True, text=True, env=env, check=True).stdout)
    assert first["facts"]["cached"] is True
    assert first["path"].startswith(str(cache_dir)) and os.access(first["path"], os.X_OK)
    mtime = os.stat(first["path"]).st_mtime_ns
    second = json.loads(subprocess.run([PY, "-c", script], capture_output=True, text=True, env=env, check=True).stdout)
    assert second == first and os.stat(first["path"]).st_mtime_ns == mtime
    # One folder per key, named after the torch version.
    assert os.path.basename(os.path.dirname(first["path"])).startswith("torch-")


def test_runner_rejects_bad_arguments(deployed, cache_dir):
    script = "import torch\nfrom graphmend_validator import deploy\nprint(deploy.runner_binary(torch)[0])\n"
    env = base_env(GRAPHMEND_CACHE_DIR=cache_dir, PYTHONPATH=VALIDATOR_DIR)
    runner = subprocess.run([PY, "-c", script], capture_output=True, text=True, env=env, check=True).stdout.strip()
    done = subprocess.run([runner, "only-one"], capture_output=True, text=True)
    assert done.returncode == 2 and "expected PACKAGE INPUTS OUTPUTS" in done.stderr
    done = subprocess.run([runner, "/nonexistent.pt2", "/nonexistent-inputs.pt", "/tmp/out.pt"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "cannot read inputs /nonexistent-inputs.pt" in done.stderr


@pytest.mark.parametrize("env_extra, words", [
    ({"CXX": "/nonexistent/c++"}, "CXX=/nonexistent/c++ is not an executable"),
    ({"CXX": "", "PATH": "/nonexistent"}, "no C++ compiler found (looked for $CXX, c++, g++, clang++"),
])
def test_no_compiler_is_a_clear_message(tmp_path, env_extra, words):
    script = (
        "import torch\n"
        "from graphmend_validator import deploy\n"
        "try:\n"
        "    deploy.runner_binary(torch)\n"
        "except deploy.DeployError as exc:\n"
        "    print(exc)\n"
    )
    env = base_env(GRAPHMEND_CACHE_DIR=tmp_path, PYTHONPATH=VALIDATOR_DIR, **env_extra)
    done = subprocess.run([PY, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert words in done.stdout
    assert not any(tmp_path.glob("deploy-runner/torch-*/graphmend_deploy_runner"))


def test_deploy_needs_eval_mode():
    done = subprocess.run([BIN, "validate", f"{TARGETS / 'branchy.py'}::make", "--deploy", "--mode", "train"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "--deploy exports the model for inference" in done.stderr


def test_deploy_is_in_the_help():
    done = subprocess.run([BIN, "validate", "--help"], capture_output=True, text=True, timeout=60)
    assert "--deploy" in done.stdout and "4 (--deploy)" in done.stdout



def test_python_operators_of_a_fix_are_named_when_cpp_cannot_run_them(deployed, cache_dir, tmp_path):
    """GM301's raise-in-graph fix exports and packages, but its operator is Python: the C++ run fails, and the
    report says why and what a deployment needs (docs/fix-safety.md, "Runtime effects in the graph")."""
    fixed = tmp_path / "guarded.py"
    fixed.write_text((TARGETS / "guarded.py").read_text())
    done = subprocess.run([str(BIN), "check", "--fix", "--exit-zero", "-q", str(fixed)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "_graphmend_runtime_op" in fixed.read_text(), done.stderr
    env = base_env(GRAPHMEND_CACHE_DIR=cache_dir, PYTHONPATH=VALIDATOR_DIR)
    done = subprocess.run([PY, "-m", "graphmend_validator", "validate", f"{TARGETS / 'guarded.py'}::make", "--fixed",
                           str(fixed), "--deploy", "--repeats", "1", "--backend", "eager", "--threads", "1"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 4, done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["original"]["graph_break_count"] >= 1 and out["fixed"]["graph_break_count"] == 0
    arm = out["deploy"]["fixed"]
    assert arm["exported"] is True and arm["packaged"] is True and arm["cpp_ran"] is False
    assert len(arm["python_operators"]) == 1 and arm["python_operators"][0].startswith("graphmend_")
    assert "operators implemented in Python (graphmend_" in arm["cpp_error"]
    assert "load Python and the module that defines them" in arm["cpp_error"]
    assert out["deploy"]["original"]["python_operators"] == [] and out["deployable"] is False
