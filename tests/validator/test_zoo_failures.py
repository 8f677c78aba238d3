"""Failures in a zoo run, with a stand-in for `graphmend validate` (a script that prints a canned result,
or dies) so each case is exact and fast: a child killed by a signal not ours is retried and then
reported `lost` for that item alone (not final: the next run redoes it); a Ray worker that dies
mid-task is retried by Ray; a user-code failure is final and its accuracy words say where."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from validator_support import VALIDATOR_DIR, base_env

FAKE = textwrap.dedent('''\
    #!{python}
    # Stands in for `graphmend validate TARGET --json --report DIR ...`: the factory name says what to do.
    import json, os, signal, sys
    target, args = sys.argv[2], sys.argv[3:]
    report = args[args.index("--report") + 1]
    factory = target.rsplit("::", 1)[1]
    marker = os.path.join(os.path.dirname(target.rsplit("::", 1)[0]), factory + ".seen")
    first = not os.path.exists(marker)
    open(marker, "a").write("x")
    if factory == "dies_once" and first or factory == "always_dies":
        os.kill(os.getpid(), signal.SIGKILL)
    if factory == "kills_its_worker" and first:
        os.kill(os.getppid(), signal.SIGKILL)  # the Ray worker running this task
        os.kill(os.getpid(), signal.SIGKILL)
    arm = {{"graph_count": 1, "graph_break_count": 0, "break_sites": 0, "fullgraph": True,
           "compiled_matches_eager": True, "cold_start_s": 0.1, "steady_state_s": 0.01}}
    if factory == "raises":
        result = {{"ok": False, "error": {{"kind": "exception", "arm": "fixed", "type": "ValueError",
                                          "message": "bad input"}}, "partial": {{"original": arm}}}}
        code = 2
    else:
        result = {{"ok": True, "original": dict(arm, graph_break_count=1, graph_count=2), "fixed": arm,
                  "outputs_match": True, "fixes_applied": 1}}
        code = 0
    os.makedirs(report, exist_ok=True)
    open(os.path.join(report, "report.html"), "w").write("<p>" + factory + "</p>")
    print(json.dumps(result))
    sys.exit(code)
    ''')


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "fake-graphmend"
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(0o755)
    return path


def manifest(tmp_path, factories):
    (tmp_path / "m.py").write_text("")
    targets = [{"name": f, "target": f"{tmp_path}/m.py::{f}", "label": f"m.py::{f}", "modes": ["eval"],
                "fixed": "auto", "fixed_module": None, "backend": "eager", "repeats": 1, "timeout_s": 30.0,
                "threads": None, "timing": False} for f in factories]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"source": str(tmp_path / "zoo.toml"), "targets": targets}))
    return path


def driver(tmp_path, fake, factories, *args):
    env = base_env(PYTHONPATH=str(VALIDATOR_DIR))
    return subprocess.run([sys.executable, "-m", "graphmend_validator", "zoo", "run", "--manifest",
                           str(manifest(tmp_path, factories)), "--graphmend", str(fake), "--report",
                           str(tmp_path / "out"), "--jobs", "2", "--json", "--quiet", *args],
                          capture_output=True, text=True, timeout=600, env=env)


def by_id(report):
    return {i["id"]: i for i in report["items"]}


def test_lost_children_are_retried_then_reported_alone(tmp_path, fake):
    done = driver(tmp_path, fake, ["fine", "dies_once", "always_dies"], "--retries", "1")
    assert done.returncode == 2, done.stderr
    items = by_id(json.loads(done.stdout))
    assert items["fine.eval.cpu"]["status"] == "ok" and items["fine.eval.cpu"]["attempts"] == 1
    assert items["dies_once.eval.cpu"]["status"] == "ok" and items["dies_once.eval.cpu"]["attempts"] == 2
    lost = items["always_dies.eval.cpu"]
    assert lost["status"] == "lost" and lost["attempts"] == 2 and "signal 9" in lost["message"]
    assert (tmp_path / "out" / "runs" / "fine.eval.cpu" / "report.html").read_text() == "<p>fine</p>"
    # A lost item is not final: the next run runs it (and only it) again.
    again = driver(tmp_path, fake, ["fine", "dies_once", "always_dies"], "--retries", "0")
    assert again.returncode == 2
    assert (tmp_path / "always_dies.seen").read_text() == "xxx"
    assert (tmp_path / "fine.seen").read_text() == "x" and (tmp_path / "dies_once.seen").read_text() == "xx"


def test_user_code_failures_are_final_with_pytorch_words(tmp_path, fake):
    done = driver(tmp_path, fake, ["raises", "fine"])
    assert done.returncode == 2, done.stderr
    report = json.loads(done.stdout)
    rows = {(r["name"], r["arm"]): r["accuracy"] for r in report["rows"]}
    assert rows == {("raises", "original"): "pass", ("raises", "fixed"): "fail_to_run",
                    ("fine", "original"): "pass", ("fine", "fixed"): "pass"}
    again = driver(tmp_path, fake, ["raises", "fine"])
    assert (tmp_path / "raises.seen").read_text() == "x", "a final failure was run again"
    assert json.loads(again.stdout)["summary"]["by_status"] == {"error": 1, "ok": 1}


def test_interrupt_keeps_finished_items(tmp_path, fake):
    env = base_env(PYTHONPATH=str(VALIDATOR_DIR))
    sleeper = tmp_path / "sleeper"
    sleeper.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    sleeper.chmod(0o755)
    proc = subprocess.Popen([sys.executable, "-m", "graphmend_validator", "zoo", "run", "--manifest",
                             str(manifest(tmp_path, ["a", "b"])), "--graphmend", str(sleeper), "--report",
                             str(tmp_path / "out"), "--jobs", "2", "--quiet"], env=env, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    time.sleep(3)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "finished items are kept" in err
    assert not list((tmp_path / "out" / "items").glob("*.json")), "an interrupted item was recorded"


def test_a_ray_worker_that_dies_is_retried(tmp_path, fake):
    done = driver(tmp_path, fake, ["kills_its_worker", "fine"], "--ray", "local", "--retries", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    items = by_id(json.loads(done.stdout))
    assert items["kills_its_worker.eval.cpu"]["status"] == "ok"
    assert (tmp_path / "kills_its_worker.seen").read_text() == "xx"  # run twice: Ray retried the task
