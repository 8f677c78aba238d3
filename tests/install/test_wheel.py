"""The installed wheel, outside the checkout (scripts/test-wheel.sh sets GRAPHMEND_INSTALLED_VENV to a fresh venv
holding the wheel and torch): the commands work from a temporary folder with no GRAPHMEND_* variables and no
checkout on PATH, find the validator and the docs installed beside the executable, and print no path of the
checkout they were built from."""
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV = os.environ.get("GRAPHMEND_INSTALLED_VENV")
pytestmark = pytest.mark.skipif(not VENV, reason="run by scripts/test-wheel.sh (make test-wheel)")
GLIBC_LIBS = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"}


def cmake_version():
    return re.search(r"project\(graphmend VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)


@pytest.fixture(scope="module")
def venv():
    return pathlib.Path(VENV)


@pytest.fixture(scope="module")
def exe(venv):
    return venv / "bin" / "graphmend"


@pytest.fixture()
def work(tmp_path):
    """A temporary working folder with a copy of examples/."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "home").mkdir()
    return tmp_path


def clean_env(venv, work):
    return {"PATH": f"{venv}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": str(work / "home"), "LANG": "C.UTF-8",
            "HF_HUB_OFFLINE": "1"}


def run(cmd, venv, work, timeout=300, stdin=None):
    proc = subprocess.run([str(c) for c in cmd], cwd=work, env=clean_env(venv, work), input=stdin,
                          capture_output=True, text=True, timeout=timeout)
    for stream in (proc.stdout, proc.stderr):
        assert str(ROOT) not in stream, f"the checkout's path in the output of {cmd}:\n{stream}"
    return proc


def test_layout(venv, exe):
    assert os.access(exe, os.X_OK)
    share = venv / "share" / "graphmend"
    validator = share / "gpu-validator" / "graphmend_validator"
    for path in [validator / "__main__.py", validator / "deploy_runner" / "CMakeLists.txt",
                 validator / "deploy_runner" / "runner.cpp", share / "docs" / "check.md",
                 share / "docs" / "rules" / "GM101.md"]:
        assert path.is_file(), path


def test_executable_is_portable(exe):
    assert str(ROOT).encode() not in exe.read_bytes()
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, check=True).stdout
    libs = {pathlib.Path(line.split()[0]).name for line in ldd.splitlines() if line.strip()}
    assert libs <= GLIBC_LIBS, ldd


def test_version(venv, work, exe):
    want = f"graphmend {cmake_version()}"  # then the torch whose facts apply (tests/cli/test_version.py)
    assert run([exe, "--version"], venv, work).stdout.splitlines()[0] == want
    assert run(["graphmend", "--version"], venv, work).stdout.splitlines()[0] == want
    assert run([venv / "bin/python", "-m", "graphmend", "--version"], venv, work).stdout.splitlines()[0] == want
    meta = run([venv / "bin/python", "-c", "import importlib.metadata as m, graphmend_validator as v; "
                "print(m.version('graphmend'), v.__version__, v.__file__)"], venv, work)
    version, validator_version, validator_file = meta.stdout.split()
    assert version == validator_version == cmake_version()
    assert "site-packages" in validator_file


def test_check_examples(venv, work):
    proc = run(["graphmend", "check", "examples"], venv, work)
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"GM\d{3}", proc.stdout), proc.stdout
    proc = run(["graphmend", "check", "--output-format", "json", "--exit-zero", "examples"], venv, work)
    assert proc.returncode == 0 and json.loads(proc.stdout), proc.stderr


def test_rule(venv, work):
    proc = run(["graphmend", "rule", "GM101"], venv, work)
    assert proc.returncode == 0 and "GM101" in proc.stdout, proc.stderr


def test_validate(venv, work):
    proc = run(["graphmend", "validate", "examples/deployable_block.py::example", "--backend", "eager",
                "--repeats", "1", "--json"], venv, work, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)


def test_validate_without_activating_the_venv(venv, work, exe):
    # As pre-commit, an editor or a script runs it: <venv>/bin/graphmend by its path, with neither the venv
    # on PATH nor VIRTUAL_ENV set, and PATH's python3 without torch: the venv graphmend is installed in is
    # the interpreter, and the run says so.
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work / "home"), "LANG": "C.UTF-8",
           "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([str(exe), "validate", "examples/deployable_block.py::example", "--backend", "eager",
                           "--repeats", "1", "--json"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{venv}/bin/python" in proc.stderr and "the environment graphmend is installed in" in proc.stderr
    assert json.loads(proc.stdout)["validator"]["python_source"] == "the environment graphmend is installed in"


def test_lsp_transcripts(venv, work, exe):
    # The runner and the transcripts copied out of the checkout, so that no output names it.
    shutil.copytree(ROOT / "tests/lsp/transcripts", work / "transcripts")
    shutil.copy(ROOT / "tests/lsp/transcript.py", work / "transcript.py")
    transcripts = sorted(p.name for p in (work / "transcripts").glob("*.txt"))
    assert "lifecycle.txt" in transcripts
    proc = run([venv / "bin/python", "transcript.py", "--server", exe, *(f"transcripts/{t}" for t in transcripts)],
               venv, work, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_validate_all(venv, work):
    # A slice of the bundled zoo from the installed wheel: the zoo driver is found beside the executable.
    proc = run(["graphmend", "validate", "--all", "--targets", "examples/zoo.toml", "--shard", "1/12", "--report",
                "zoo", "--json"], venv, work, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["items_done"] == 2 and report["summary"]["by_status"] == {"ok": 2}
    assert (work / "zoo" / "zoo.csv").read_text().startswith("name,accuracy,graph_breaks,")


def test_ray_is_an_optional_pinned_extra(venv):
    (metadata,) = venv.glob("lib/python*/site-packages/graphmend-*.dist-info/METADATA")
    text = metadata.read_text()
    assert "Provides-Extra: ray" in text
    assert re.search(r'^Requires-Dist: ray==2\.60\.0; extra == "ray"$', text, re.M), text
    assert not re.search(r"^Requires-Dist: (?!.*extra ==)", text, re.M), "the core package must need nothing"
