"""One version: project(graphmend VERSION x.y.z) in CMakeLists.txt is the binary's, the wheel's, the VS Code
extension's and the validator's (docs/install.md)."""
import ast
import json
import os
import pathlib
import re
import subprocess
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend"))


def cmake_version():
    match = re.search(r"project\(graphmend VERSION ([0-9]+\.[0-9]+\.[0-9]+)", (ROOT / "CMakeLists.txt").read_text())
    assert match, "no project(graphmend VERSION x.y.z) in CMakeLists.txt"
    return match.group(1)


def test_binary_version():
    out = subprocess.run([BIN, "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
    first, facts = out.splitlines()
    assert first == f"graphmend {cmake_version()}"
    assert re.fullmatch(r"torch facts: 2\.1[345] \(.+\)", facts), facts


def test_version_names_the_torch_whose_facts_apply(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\ntorch-version = "2.14"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    out = subprocess.run([BIN, "version"], capture_output=True, text=True, timeout=30, check=True, cwd=tmp_path,
                         env=env).stdout
    assert out.splitlines()[1] == f"torch facts: 2.14 (torch-version in {tmp_path / 'pyproject.toml'})"


def test_vscode_extension_version():
    assert json.loads((ROOT / "clients/vscode/package.json").read_text())["version"] == cmake_version()


def test_validator_version():
    tree = ast.parse((ROOT / "gpu-validator/graphmend_validator/__init__.py").read_text())
    versions = [node.value.value for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if getattr(target, "id", None) == "__version__"]
    assert versions == [cmake_version()]


def test_wheel_reads_the_cmake_version():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and 'provider = "scikit_build_core.metadata.regex"' in text
    regex = re.search(r"^regex = '(.*)'$", text, re.MULTILINE).group(1)
    assert re.search(regex, (ROOT / "CMakeLists.txt").read_text()).group("value") == cmake_version()


def test_built_wheel_version():
    wheels = sorted((ROOT / "dist").glob("graphmend-*.whl"))
    if not wheels:
        pytest.skip("no wheel in dist/ (make dist)")
    for wheel in wheels:
        assert wheel.name.startswith(f"graphmend-{cmake_version()}-"), wheel.name
        with zipfile.ZipFile(wheel) as z:
            metadata = z.read(f"graphmend-{cmake_version()}.dist-info/METADATA").decode()
        assert f"\nVersion: {cmake_version()}\n" in metadata
