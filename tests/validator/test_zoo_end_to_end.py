"""The example zoo (examples/zoo.toml, 20 targets) end to end, three ways with identical merged
results: on the local pool (killed halfway with SIGKILL, then resumed), as 3 shards merged, and on a
local Ray cluster of 2 CPUs that the test starts (`ray start --head`, joined with `--ray auto`); and the
baseline gate on a planted regression."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from validator_support import BIN, PY, ROOT, base_env

ZOO = ROOT / "examples" / "zoo.toml"
TIMING = ("cold_start_s", "steady_state_s", "cold_start_speedup", "steady_state_speedup")


def zoo_command(*args, targets=ZOO):
    return [BIN, "validate", "--all", "--targets", str(targets), "--python", PY, "--jobs", "2", *map(str, args)]


def run(cmd, timeout=1200):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=base_env())


def behaviour(folder):
    """The merged report without what varies run to run (times, hosts, dates)."""
    report = json.loads((folder / "zoo.json").read_text())
    rows = [{k: v for k, v in row.items() if k not in TIMING} for row in report["rows"]]
    return {"rows": rows, "summary": report["summary"], "missing": report["missing"],
            "items_planned": report["items_planned"], "plan_digest": report["plan_digest"]}


def records(folder):
    return {p.name: p.read_bytes() for p in sorted((folder / "items").glob("*.json"))}


def zoo_children():
    """pids of `graphmend validate` children of a zoo run (their --report is a graphmend-zoo-* folder)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = open(f"/proc/{entry}/cmdline", "rb").read().decode(errors="replace")
            except OSError:
                continue
            if "validate" in cmdline and "/graphmend-zoo-" in cmdline:
                found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    out = tmp_path_factory.mktemp("zoo") / "local"
    driver = subprocess.Popen(zoo_command("--report", out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=base_env(), start_new_session=True)
    deadline = time.monotonic() + 600
    while len(list((out / "items").glob("*.json"))) < 6:
        assert driver.poll() is None, "the zoo ended before it could be killed"
        assert time.monotonic() < deadline, "no 6 items within 10 minutes"
        time.sleep(0.2)
    os.kill(driver.pid, signal.SIGKILL)  # preemption: no cleanup code of the driver runs
    driver.wait()
    before = records(out)
    deadline = time.monotonic() + 60
    while zoo_children() and time.monotonic() < deadline:  # they get SIGTERM when the driver dies
        time.sleep(0.5)
    assert not zoo_children(), "graphmend validate children outlived the killed zoo run"
    done = run(zoo_command("--report", out))
    assert done.returncode == 0, done.stdout + done.stderr
    return out, before, done


def test_killed_run_resumes_without_redoing_finished_items(local):
    out, before, done = local
    after = records(out)
    assert all(after[name] == content for name, content in before.items()), "a finished item was redone"
    planned = json.loads((out / "zoo.json").read_text())["items_planned"]
    match = re.search(r"\((\d+) run, (\d+) reused\)", done.stdout)
    assert match and int(match.group(2)) == len(before) and int(match.group(1)) == planned - len(before), done.stdout
    assert len(after) == planned >= 20


def test_local_report(local):
    out, _, done = local
    report = json.loads((out / "zoo.json").read_text())
    assert report["missing"] == [] and report["summary"]["by_status"] == {"ok": report["items_planned"]}
    names = {row["name"] for row in report["rows"]}
    assert len(names) >= 20
    rows = {(r["name"], r["mode"], r["arm"]): r for r in report["rows"]}
    # The control has no break; gated_mlp's safe fixes remove some; "one graph" and "fullgraph" are apart.
    assert rows[("patterns::clean_mlp", "eval", "original")]["one_graph"] is True
    gated = rows[("gated_mlp::example", "eval", "original")], rows[("gated_mlp::example", "eval", "fixed")]
    assert gated[1]["graph_breaks"] < gated[0]["graph_breaks"] and gated[1]["outputs_match"] is True
    assert any(r["fullgraph"] and not r["one_graph"] for r in report["rows"])
    csv_lines = (out / "zoo.csv").read_text().splitlines()
    assert csv_lines[0].startswith("name,accuracy,graph_breaks,") and len(csv_lines) == len(report["rows"]) + 1
    html = (out / "report.html").read_text()
    assert "one graph in default mode" in html and "runs/gated_mlp_example.eval.cpu/report.html" in html
    assert (out / "runs" / "gated_mlp_example.eval.cpu" / "validation.json").is_file()
    assert "accuracy pass" in done.stdout and "report:" in done.stdout


def test_three_shards_merge_to_the_same_results(local, tmp_path):
    out, _, _ = local
    shards = []
    for index in (1, 2, 3):
        folder = tmp_path / f"shard{index}"
        done = run(zoo_command("--report", folder, "--shard", f"{index}/3", "--quiet"))
        assert done.returncode == 0, done.stdout + done.stderr
        shards.append(folder)
    sizes = [len(records(folder)) for folder in shards]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == len(records(out))
    partial = run([BIN, "validate", "merge", *map(str, shards[:2]), "--report", str(tmp_path / "partial"), "--python", PY])
    assert partial.returncode == 2 and "missing (" in partial.stdout, partial.stdout + partial.stderr
    merged = run([BIN, "validate", "merge", *map(str, shards), "--report", str(tmp_path / "merged"), "--python", PY])
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert behaviour(tmp_path / "merged") == behaviour(out)
    again = run([BIN, "validate", "merge", str(out), str(shards[0]), "--report", str(tmp_path / "twice"), "--python",
                 PY, "--json"])
    report = json.loads(again.stdout)
    assert len(report["items"]) == len(records(out)), "an item in two folders was counted twice"
    assert any("counted once" in p for p in report["problems"])


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def ray_cluster():
    """A local Ray cluster of 2 CPUs, started the way a user starts one (`ray start --head`)."""
    ray = str(Path(PY).parent / "ray")
    started = subprocess.run([ray, "start", "--head", "--port", str(free_port()), "--num-cpus", "2",
                              "--include-dashboard=false", "--disable-usage-stats"], capture_output=True, text=True,
                             timeout=180, env=base_env())
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield
    finally:
        subprocess.run([ray, "stop"], capture_output=True, timeout=180, env=base_env())


def test_ray_cluster_with_two_workers_gives_the_same_results(local, ray_cluster, tmp_path):
    out, _, _ = local
    done = run(zoo_command("--report", tmp_path / "ray", "--ray", "auto"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "on the Ray cluster at auto" in done.stdout and "Ray cluster: 2 CPUs" in done.stderr
    assert behaviour(tmp_path / "ray") == behaviour(out)
    engines = {json.loads(p)["engine"] for p in records(tmp_path / "ray").values()}
    assert engines == {"ray"}


def test_baseline_gate_fails_on_a_planted_regression(tmp_path):
    for name in ("steady", "edited"):
        shutil.copy(ROOT / "examples" / "zoo" / "patterns.py", tmp_path / f"{name}.py")
    zoo = tmp_path / "zoo.toml"
    zoo.write_text('[defaults]\nbackend = "eager"\n'
                   '[[target]]\ntarget = "steady.py::clamped_scale"\n'
                   '[[target]]\ntarget = "edited.py::clean_mlp"\n')
    baseline = tmp_path / "baseline.csv"
    first = run(zoo_command("--report", tmp_path / "out", "--baseline", baseline, "--update-baseline", targets=zoo))
    assert first.returncode == 0 and baseline.is_file(), first.stdout + first.stderr
    assert "edited::clean_mlp,pass,0,eval,cpu,original" in baseline.read_text()
    clean = run(zoo_command("--report", tmp_path / "out", "--baseline", baseline, targets=zoo))
    assert clean.returncode == 0 and "baseline: 0 regressions" in clean.stdout, clean.stdout + clean.stderr
    edited = tmp_path / "edited.py"
    edited.write_text(edited.read_text().replace("        return self.net(x) + x",
                                                 "        print('planted')\n        return self.net(x) + x"))
    gated = run(zoo_command("--report", tmp_path / "out", "--baseline", baseline, targets=zoo))
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "regression: edited::clean_mlp [eval, cpu, original]: graph breaks 0 -> 1" in gated.stdout
    assert "(1 run, 1 reused)" in gated.stdout  # only the edited target's item ran again
