"""bench/zoo_throughput.py end to end on a two-target zoo: both engines run, the ratio is printed and
the docs section written, with the same results on both."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend"))
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable


def test_zoo_throughput_compares_ray_with_the_local_pool(tmp_path):
    shutil.copy(ROOT / "examples" / "zoo" / "patterns.py", tmp_path / "patterns.py")
    zoo = tmp_path / "zoo.toml"
    zoo.write_text('[defaults]\nbackend = "eager"\n[[target]]\ntarget = "patterns.py::clean_mlp"\n'
                   '[[target]]\ntarget = "patterns.py::clamped_scale"\n')
    report = tmp_path / "benchmarks.md"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([PY, str(ROOT / "bench" / "zoo_throughput.py"), "--graphmend", BIN, "--zoo", str(zoo),
                           "--jobs", "2", "--report", str(report),
                           "--results", str(tmp_path / "results.json")], capture_output=True, text=True, timeout=900,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ray / local pool:" in done.stdout and "same results: True" in done.stdout
    section = report.read_text()
    assert "<!-- zoo_throughput:begin -->" in section and "| local | 2 | 2 |" in section and "| ray | 2 | 2 |" in section
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["same_results"] is True and results["ratio_ray_over_local"] > 0
