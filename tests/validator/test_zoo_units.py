"""The zoo driver's parts without running any model: plan (items, keys, shards), results folder
(atomic records, the run lock), report rows (accuracy words), the baseline gate, the manifest (C++)."""
import csv
import io
import json
import os
import subprocess
import sys

import pytest

from validator_support import BIN, ROOT, VALIDATOR_DIR, base_env

sys.path.insert(0, str(VALIDATOR_DIR))

from graphmend_validator.zoo import baseline as gate  # noqa: E402
from graphmend_validator.zoo import plan as planning  # noqa: E402
from graphmend_validator.zoo import report as reporting  # noqa: E402
from graphmend_validator.zoo.store import ResultsFolder, StoreError  # noqa: E402


def manifest_for(tmp_path, names=("a", "b", "c", "d", "e"), modes=("eval",), timing=False):
    targets = []
    for name in names:
        path = tmp_path / f"{name}.py"
        if not path.exists():
            path.write_text(f"def make():\n    return {name!r}\n")
        targets.append({"name": name, "target": f"{path}::make", "label": f"{name}.py::make", "modes": list(modes),
                        "fixed": "auto", "fixed_module": None, "backend": "eager", "repeats": 1, "timeout_s": 60.0,
                        "threads": None, "timing": timing, "timing_device": "cuda", "timing_repeats": 3})
    return {"source": str(tmp_path / "zoo.toml"), "targets": targets}


ENV = {"graphmend": "x", "torch": "2.13.0"}


def test_items_are_target_mode_need_and_sorted(tmp_path):
    items = planning.expand(manifest_for(tmp_path, names=("b", "a"), modes=("eval", "train"), timing=True), ENV)
    assert [i["id"] for i in items] == ["a.eval.cpu", "a.eval.gpu", "a.train.cpu", "a.train.gpu",
                                        "b.eval.cpu", "b.eval.gpu", "b.train.cpu", "b.train.gpu"]
    gpu = next(i for i in items if i["need"] == "gpu")
    assert gpu["device"] == "cuda" and gpu["repeats"] == 3
    assert all(i["device"] == "cpu" for i in items if i["need"] == "cpu")


def test_key_follows_the_source_the_binary_and_torch(tmp_path):
    m = manifest_for(tmp_path)
    before = {i["id"]: i["key"] for i in planning.expand(m, ENV)}
    (tmp_path / "c.py").write_text("def make():\n    return 'changed'\n")
    after = {i["id"]: i["key"] for i in planning.expand(m, ENV)}
    assert [i for i in before if before[i] != after[i]] == ["c.eval.cpu"]
    other_torch = {i["id"]: i["key"] for i in planning.expand(m, dict(ENV, torch="2.15.0"))}
    assert all(other_torch[i] != after[i] for i in after)


def test_shards_are_disjoint_complete_and_deterministic(tmp_path):
    items = planning.expand(manifest_for(tmp_path, names=tuple("abcdefghij"), modes=("eval", "train")), ENV)
    for count in (1, 2, 3, 7, 25):
        parts = [planning.shard(items, i, count) for i in range(1, count + 1)]
        ids = [i["id"] for part in parts for i in part]
        assert sorted(ids) == sorted(i["id"] for i in items) and len(ids) == len(set(ids))
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
        assert parts == [planning.shard(items, i, count) for i in range(1, count + 1)]


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", ""])
def test_bad_shards_are_refused(text):
    with pytest.raises(planning.PlanError, match="shard"):
        planning.parse_shard(text)


def test_duplicate_names_are_refused(tmp_path):
    m = manifest_for(tmp_path, names=("a", "a"))
    with pytest.raises(planning.PlanError, match="two targets are named 'a'"):
        planning.expand(m, ENV)


def test_records_are_atomic_and_reused_by_key(tmp_path):
    folder = ResultsFolder(tmp_path / "out")
    folder.lock()
    item = {"id": "a.eval.cpu", "key": "k1"}
    folder.save({"id": "a.eval.cpu", "key": "k1", "final": True, "status": "ok"}, {"report.html": "<p>x</p>"})
    (tmp_path / "out" / "items" / "junk.json").write_text("{not json")
    records, problems = folder.records()
    assert folder.reusable(item, records)
    assert not folder.reusable(dict(item, key="k2"), records)
    assert len(problems) == 1 and "junk.json" in problems[0]
    assert (tmp_path / "out" / "runs" / "a.eval.cpu" / "report.html").read_text() == "<p>x</p>"
    assert not [p for p in os.listdir(tmp_path / "out" / "items") if p.startswith(".tmp")]
    folder.save({"id": "b.eval.cpu", "key": "k", "final": False, "status": "lost"})
    assert not folder.reusable({"id": "b.eval.cpu", "key": "k"}, folder.records()[0])
    folder.save({"id": "c", "key": "k", "final": True, "status": "ok"}, {"../../evil": "x"})
    assert not (tmp_path / "evil").exists()
    folder.unlock()


def test_a_second_run_into_the_same_folder_is_refused(tmp_path):
    script = ("import sys, time; sys.path.insert(0, sys.argv[1]);"
              "from graphmend_validator.zoo.store import ResultsFolder;"
              "f = ResultsFolder(sys.argv[2]); f.lock(); print('locked', flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", script, str(VALIDATOR_DIR), str(tmp_path)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreError, match="in use by another"):
            ResultsFolder(tmp_path).lock()
    finally:
        holder.kill()
        holder.wait()
    ResultsFolder(tmp_path).lock()  # released with the process that held it


def record(status="ok", result=None, fixed="auto"):
    item = {"name": "m", "target": "/x/m.py::make", "label": "m.py::make", "mode": "eval", "need": "cpu", "fixed": fixed}
    return {"id": "m.eval.cpu", "item": item, "status": status, "result": result}


def arm(breaks, graphs, fullgraph, compiled=True):
    return {"graph_break_count": breaks, "graph_count": graphs, "break_sites": breaks, "fullgraph": fullgraph,
            "compiled_matches_eager": compiled, "cold_start_s": 0.5, "steady_state_s": 0.001}


def test_rows_separate_one_graph_from_fullgraph():
    result = {"original": arm(2, 3, True), "fixed": arm(0, 1, True), "outputs_match": True, "fixes_applied": 2}
    original, fixed = reporting.rows_of(record(result=result))
    assert (original["graph_breaks"], original["one_graph"], original["fullgraph"]) == (2, False, True)
    assert (fixed["graph_breaks"], fixed["one_graph"], fixed["accuracy"]) == (0, True, "pass")
    assert original["target"] == "m.py::make"  # as written, not this machine's path


@pytest.mark.parametrize("status,result,expected", [
    ("ok", {"original": arm(1, 2, False), "fixed": arm(0, 1, True), "outputs_match": False}, ("pass", "fail_accuracy")),
    ("ok", {"original": arm(1, 2, False, compiled=False), "fixed": arm(0, 1, True), "outputs_match": True},
     ("fail_accuracy", "pass")),
    ("error", {"ok": False, "error": {"kind": "exception", "arm": "prepare"}}, ("eager_fail_to_run",) * 2),
    ("environment", {"ok": False, "error": {"kind": "bad_factory", "arm": "prepare"}}, ("model_fail_to_load",) * 2),
    ("error", {"ok": False, "error": {"kind": "timeout", "arm": "original"}}, ("timeout", "not_run")),
    ("error", {"ok": False, "error": {"kind": "compile_error", "arm": "fixed"}, "partial": {"original": arm(1, 2, 0)}},
     ("pass", "fail_to_run")),
    ("lost", None, ("fail_to_run", "fail_to_run")),
])
def test_accuracy_words(status, result, expected):
    rows = reporting.rows_of(record(status=status, result=result))
    assert tuple(r["accuracy"] for r in rows) == expected


def write_baseline(tmp_path, rows):
    path = tmp_path / "baseline.csv"
    path.write_text(gate.baseline_text(rows))
    return gate.read(path)


def test_baseline_gate_regressions_and_improvements(tmp_path):
    base_rows = reporting.rows_of(record(result={"original": arm(2, 3, True), "fixed": arm(0, 1, True),
                                                 "outputs_match": True}))
    baseline = write_baseline(tmp_path, base_rows)
    assert "cold_start_s" not in (tmp_path / "baseline.csv").read_text().splitlines()[0]
    same = gate.compare(baseline, base_rows, {"m.eval.cpu"})
    assert same == ([], [])
    worse = reporting.rows_of(record(result={"original": arm(2, 3, True), "fixed": arm(1, 2, False),
                                             "outputs_match": False}))
    regressions, _ = gate.compare(baseline, worse, {"m.eval.cpu"})
    text = "\n".join(regressions)
    assert "graph breaks 0 -> 1" in text and "accuracy pass -> fail_accuracy" in text
    assert "one graph in default mode no longer" in text and "fullgraph=True compiles no longer" in text
    better = reporting.rows_of(record(result={"original": arm(1, 2, True), "fixed": arm(0, 1, True),
                                              "outputs_match": True}))
    regressions, improvements = gate.compare(baseline, better, {"m.eval.cpu"})
    assert regressions == [] and any("graph breaks 2 -> 1" in i for i in improvements)
    assert gate.compare(baseline, [], {"m.eval.cpu"})[0] == ["m [eval, cpu, fixed]: no result (the item did not finish)",
                                                           "m [eval, cpu, original]: no result (the item did not finish)"]
    assert gate.compare(baseline, [], set()) == ([], [])  # another shard's rows are not judged


def test_baseline_in_pytorchs_three_columns(tmp_path):
    path = tmp_path / "expected.csv"
    path.write_text("name,accuracy,graph_breaks\nm,pass,0\n")
    worse = reporting.rows_of(record(result={"original": arm(2, 3, True), "fixed": arm(1, 2, True),
                                             "outputs_match": True}))
    regressions, _ = gate.compare(gate.read(path), worse, {"m.eval.cpu"})
    assert regressions == ["m [eval, cpu, fixed]: graph breaks 0 -> 1"]


def test_bad_baselines_name_file_and_line(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("name,graph_breaks\nm,0\n")
    with pytest.raises(gate.BaselineError, match=r"b\.csv:1: .*missing: accuracy"):
        gate.read(path)
    path.write_text("name,accuracy,graph_breaks\nm,pass,0\nm,pass,1\n")
    with pytest.raises(gate.BaselineError, match=r"b\.csv:3: a second row"):
        gate.read(path)
    with pytest.raises(gate.BaselineError, match="cannot read"):
        gate.read(tmp_path / "absent.csv")


def test_csv_has_pytorchs_columns_first():
    rows = reporting.rows_of(record(result={"original": arm(2, 3, True), "fixed": arm(0, 1, True),
                                            "outputs_match": True}))
    parsed = list(csv.DictReader(io.StringIO(reporting.csv_text(rows))))
    assert list(parsed[0])[:3] == ["name", "accuracy", "graph_breaks"]
    assert [(r["arm"], r["graph_breaks"], r["one_graph"]) for r in parsed] == [("original", "2", "false"),
                                                                                ("fixed", "0", "true")]


# The manifest, read by the C++ side: errors name the file, line and column, and nothing runs.
def zoo(tmp_path, text, *args):
    path = tmp_path / "zoo.toml"
    path.write_text(text)
    (tmp_path / "m.py").write_text("def make():\n    pass\n")
    return subprocess.run([BIN, "validate", "--all", "--targets", str(path), "--report", str(tmp_path / "out"), *args],
                          capture_output=True, text=True, timeout=60, env=base_env(), cwd=tmp_path)


@pytest.mark.parametrize("text,message", [
    ('[[target]]\ntarget = "m.py::make"\nmodez = ["eval"]\n', r"zoo\.toml:3:9: unknown key `modez` in \[\[target\]\] "
                                                              r"\(did you mean `modes`\?\)"),
    ('[[target]]\ntarget = "absent.py::make"\n', r"zoo\.toml:2:10: `target` names `.*absent\.py`, which does not exist"),
    ('[[target]]\ntarget = "m.py"\n', r"zoo\.toml:2:10: `target` must be path/to/file\.py::factory"),
    ('[[target]]\ntarget = "m.py::make"\nmodes = ["eval", "infer"]\n', r"zoo\.toml:3:18: `modes` may hold only"),
    ('[defaults]\nrepeats = 0\n[[target]]\ntarget = "m.py::make"\n', r"zoo\.toml:2:11: `repeats` must be a whole"),
    ('[defaults]\ntarget = "m.py::make"\n', r"zoo\.toml:2:10: `target` belongs in a \[\[target\]\]"),
    ('[[target]]\ntarget = "m.py::make"\n[[target]]\ntarget = "m.py::make"\n', r"two targets are named `m::make`"),
    ('[zoo]\n', r"zoo\.toml:1:1: unknown table `zoo`"),
    ('[defaults]\n', r"has no \[\[target\]\] tables"),
    ('[[target]\n', r"zoo\.toml:1:"),
])
def test_manifest_errors(tmp_path, text, message):
    done = zoo(tmp_path, text)
    assert done.returncode == 3, done.stderr
    assert __import__("re").search(message, done.stderr), done.stderr
    assert not (tmp_path / "out" / "plan.json").exists()


def test_usage_errors(tmp_path):
    done = zoo(tmp_path, '[[target]]\ntarget = "m.py::make"\n', "--update-baseline")
    assert done.returncode == 3 and "--update-baseline needs --baseline FILE" in done.stderr
    done = zoo(tmp_path, '[[target]]\ntarget = "m.py::make"\n', "--baseline", "b.csv", "--update-baseline",
               "--shard", "1/2")
    assert done.returncode == 3 and "this shard's rows alone" in done.stderr
    done = zoo(tmp_path, '[[target]]\ntarget = "m.py::make"\n', "--shard", "4/3", "--python", sys.executable)
    assert done.returncode == 3 and "--shard 4/3" in done.stderr
    done = subprocess.run([BIN, "validate", "--all"], capture_output=True, text=True, cwd="/", env=base_env())
    assert done.returncode == 3 and "no pyproject.toml" in done.stderr
    done = subprocess.run([BIN, "validate", "merge", str(tmp_path), "--report", str(tmp_path / "m")],
                          capture_output=True, text=True, env=base_env())
    assert done.returncode == 3 and "is not a graphmend zoo results folder" in done.stderr


def test_pyproject_targets_are_the_manifest(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.py").write_text("def make():\n    pass\n")
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\nvalidate = ["models/m.py::make"]\n')
    done = subprocess.run([BIN, "validate", "--all", "--report", "out", "--mode", "eval,train", "--shard", "9/1",
                           "--python", sys.executable], capture_output=True, text=True, cwd=tmp_path, env=base_env())
    assert done.returncode == 3 and "--shard 9/1" in done.stderr  # refused by the driver, after the manifest was read
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    (target,) = manifest["targets"]
    assert target["name"] == "m::make" and target["label"] == "models/m.py::make"
    assert target["target"] == f"{tmp_path}/models/m.py::make" and target["modes"] == ["eval", "train"]


def test_example_zoo_has_twenty_targets(tmp_path):
    done = subprocess.run([BIN, "validate", "--all", "--targets", str(ROOT / "examples" / "zoo.toml"), "--shard", "0/1",
                           "--report", str(tmp_path), "--python", sys.executable],
                          capture_output=True, text=True, env=base_env())
    assert done.returncode == 3 and "--shard 0/1" in done.stderr, done.stderr
    targets = json.loads((tmp_path / "manifest.json").read_text())["targets"]
    assert len(targets) >= 20 and len({t["name"] for t in targets}) == len(targets)
    assert all(os.path.isfile(t["target"].rsplit("::", 1)[0]) for t in targets)


def test_a_ray_head_that_does_not_answer_is_a_usage_error(tmp_path):
    done = zoo(tmp_path, '[[target]]\ntarget = "m.py::make"\n', "--ray", "127.0.0.1:1", "--python", sys.executable)
    assert done.returncode == 3 and "no Ray head answers at 127.0.0.1:1" in done.stderr, done.stderr


def test_ray_is_optional(tmp_path, torchless_python):
    done = zoo(tmp_path, '[[target]]\ntarget = "m.py::make"\n', "--ray", "--python", torchless_python)
    assert done.returncode == 3 and "pip install 'graphmend[ray]'" in done.stderr, done.stderr


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_a_bar_on_a_terminal_and_lines_otherwise():
    from graphmend_validator.zoo.progress import ProgressBar

    done = {"id": "m.eval.cpu", "status": "ok", "wall_s": 1.5,
            "result": {"original": {"graph_break_count": 3}, "fixed": {"graph_break_count": 1}}}
    terminal = Terminal()
    bar = ProgressBar(4, 1, stream=terminal)
    bar.start("4 items")
    bar.item_done(done)
    bar.close()
    text = terminal.getvalue()
    assert "[###############...............] 2/4 items" in text and "\r" in text
    assert "[2/4] m.eval.cpu: ok, breaks 3 -> 1 (1.5 s)" in text
    plain = io.StringIO()
    bar = ProgressBar(4, 1, stream=plain)
    bar.item_done(dict(done, status="error", result={"error": {"kind": "exception", "message": "boom\nmore"}}))
    assert plain.getvalue() == "graphmend validate: [2/4] m.eval.cpu: error: exception: boom (1.5 s)\n"
