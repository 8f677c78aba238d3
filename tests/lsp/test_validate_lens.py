"""The validation code lens end to end: `graphmend server` runs `graphmend.validate` in a child
process against real torch (.venv), with `$/progress`, cancellation and a code lens refresh.

Runs stay small: backend eager, one repeat per arm, a four-unit linear layer. The hanging target's
factory sleeps in the prepare arm (after writing its pid), so cancelling it must kill the arm too.
"""

import os
import pathlib
import queue
import subprocess
import time

import pytest

from lsp_client import LspClient

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.abspath(os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend")))
PYTHON = ROOT / ".venv" / "bin" / "python"


def _has_torch():
    if not PYTHON.exists():
        return False
    return subprocess.run([str(PYTHON), "-c", "import torch"], capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.skipif(not os.path.exists(BIN), reason=f"{BIN} is not built"),
    pytest.mark.skipif(not _has_torch(), reason=f"{PYTHON} with torch is needed"),
]

MODEL = '''import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.mean() > 0:
            y = y * 2
        else:
            y = y - 1
        return y


def example():
    return Block(), (torch.randn(2, 4),)
'''

HANGING = '''import os
import time

import torch


def example():
    with open(os.environ["GRAPHMEND_TEST_PIDFILE"], "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(600)
    return torch.nn.Identity(), (torch.ones(1),)
'''

RUN_TIMEOUT = 180.0


def start(tmp_path, capabilities):
    env = dict(os.environ)
    env.update(TORCHINDUCTOR_COMPILE_THREADS="1", OMP_NUM_THREADS="1",
               GRAPHMEND_TEST_PIDFILE=str(tmp_path / "arm.pid"), GRAPHMEND_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("PYTHONPATH", None)
    client = LspClient([BIN, "server", "--log-level", "debug"], cwd=tmp_path, env=env)
    client.request("initialize", {
        "processId": os.getpid(),
        "rootUri": tmp_path.as_uri(),
        "capabilities": capabilities,
        "initializationOptions": {"debounce": 0, "validator": {"python": str(PYTHON)}},
    })
    client.notify("initialized", {})
    return client


def open_file(client, path, text):
    path.write_text(text)
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}})
    return uri


def validate_params(target, **extra):
    return dict({"command": "graphmend.validate",
                 "arguments": [{"target": target, "backend": "eager", "repeats": 1}]}, **extra)


def progress(client, until_id):
    """Collects $/progress values until the response to `until_id`; returns (values, response)."""
    values = []
    while True:
        message = client.wait_for(lambda m: m.get("method") == "$/progress"
                                  or (m.get("id") == until_id and "method" not in m), RUN_TIMEOUT)
        if "method" not in message:
            return values, message
        values.append(message["params"])


def descendants(pid):
    """Every live process below `pid` (by parent links in /proc), with its command line."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def wait_for_arm(tmp_path, client, timeout=120.0):
    """Waits until the hanging factory runs; returns the processes then below the server."""
    pidfile = tmp_path / "arm.pid"
    deadline = time.monotonic() + timeout
    while not (pidfile.exists() and pidfile.read_text()):
        assert time.monotonic() < deadline, "the hanging factory never started"
        time.sleep(0.1)
    arm = int(pidfile.read_text())
    tree = descendants(client.process.pid)
    assert arm in tree, (arm, tree)
    # graphmend validate (the child), the validator, the arm at least.
    assert len(tree) >= 3, tree
    return tree


def test_validate_with_created_progress_token_and_lens_refresh(tmp_path):
    client = start(tmp_path, {"window": {"workDoneProgress": True},
                              "workspace": {"codeLens": {"refreshSupport": True}}})
    path = tmp_path / "m.py"
    uri = open_file(client, path, MODEL)
    lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
    assert [lens["command"]["arguments"] for lens in lenses] == [
        [f"{path}::example"], [{"target": f"{path}::example", "deploy": True}]]
    request = client.request_async("workspace/executeCommand", validate_params(f"{path}::example"))
    values, response = progress(client, request)
    assert "error" not in response, response
    result = response["result"]
    assert result["ok"] is True
    assert result["summary"].startswith("breaks 1 → 0 · cold ") and result["summary"].endswith("outputs equal")

    creates = [m for m in client.server_requests if m["method"] == "window/workDoneProgress/create"]
    assert len(creates) == 1
    token = creates[0]["params"]["token"]
    assert all(v["token"] == token for v in values)
    kinds = [v["value"]["kind"] for v in values]
    assert kinds[0] == "begin" and kinds[-1] == "end" and set(kinds[1:-1]) == {"report"}, kinds
    begin = values[0]["value"]
    assert begin["title"] == "graphmend: validate example" and begin["cancellable"] is True
    # The stages come from the run itself, in order.
    messages = [v["value"].get("message") for v in values[:-1]]
    for stage in ("prepare: original weights, inputs, eager reference", "original arm, run 1/1", "fixed arm, run 1/1"):
        assert stage in messages, messages
    assert messages.index("original arm, run 1/1") < messages.index("fixed arm, run 1/1")
    assert values[-1]["value"]["message"] == result["summary"]

    # The lens is refreshed and then shows the result; the log has it too.
    deadline = time.monotonic() + 10
    while not any(m["method"] == "workspace/codeLens/refresh" for m in client.server_requests):
        assert time.monotonic() < deadline, "no workspace/codeLens/refresh"
        try:
            client.wait_for(lambda m: False, timeout=0.2)
        except (TimeoutError, queue.Empty):
            pass
    lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
    assert lenses[0]["command"]["title"] == "graphmend: " + result["summary"]
    # The deploy lens keeps its own title until a deploy run.
    assert lenses[1]["command"]["title"] == "graphmend: prove deployable (torch.export, AOTInductor, C++)"
    log = client.wait_for(lambda m: m.get("method") == "window/logMessage"
                          and "validate example" in m["params"]["message"], 10)
    assert log["params"]["message"] == "graphmend: validate example: " + result["summary"]
    assert client.close() == 0


def test_cancel_request_kills_the_run_and_no_progress_without_the_capability(tmp_path):
    client = start(tmp_path, {})
    path = tmp_path / "slow.py"
    open_file(client, path, HANGING)
    request = client.request_async("workspace/executeCommand", validate_params(f"{path}::example"))
    tree = wait_for_arm(tmp_path, client)
    client.notify("$/cancelRequest", {"id": request})
    response = client.wait_for(lambda m: m.get("id") == request and "method" not in m, 60)
    assert response["error"]["code"] == -32800
    # Answered once the processes are gone: the child's group, the validator and the arm.
    assert [pid for pid in tree if alive(pid)] == []
    assert descendants(client.process.pid) == set()

    # The same client runs a target to the end: still no $/progress, and no create request.
    model = tmp_path / "m.py"
    open_file(client, model, MODEL)
    request = client.request_async("workspace/executeCommand", validate_params(f"{model}::example"))
    values, response = progress(client, request)
    assert response["result"]["ok"] is True
    assert values == []
    assert not any(m.get("method") == "$/progress" for m in client.backlog)
    assert [m["method"] for m in client.server_requests
            if m["method"] in ("window/workDoneProgress/create", "workspace/codeLens/refresh")] == []
    assert client.close() == 0


def test_progress_cancel_by_token_and_exit_stops_running_validations(tmp_path):
    client = start(tmp_path, {"window": {"workDoneProgress": True}})
    path = tmp_path / "slow.py"
    open_file(client, path, HANGING)
    request = client.request_async("workspace/executeCommand",
                                   validate_params(f"{path}::example", workDoneToken="tok-slow"))
    begin = client.wait_for(lambda m: m.get("method") == "$/progress", 60)["params"]
    assert begin["token"] == "tok-slow" and begin["value"]["kind"] == "begin"
    tree = wait_for_arm(tmp_path, client)
    client.notify("window/workDoneProgress/cancel", {"token": "tok-slow"})
    values, response = progress(client, request)
    assert response["error"]["code"] == -32800
    assert values[-1]["value"]["kind"] == "end"
    assert [pid for pid in tree if alive(pid)] == []

    # Exit with a validation running: the server takes it down before it goes.
    (tmp_path / "arm.pid").unlink()
    request = client.request_async("workspace/executeCommand", validate_params(f"{path}::example"))
    tree = wait_for_arm(tmp_path, client)
    client.send({"id": "bye", "method": "shutdown"})
    client.notify("exit", None)
    assert client.process.wait(timeout=30) == 0
    deadline = time.monotonic() + 5
    while [pid for pid in tree if alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in tree if alive(pid)] == []


def test_deploy_lens_runs_the_deploy_proof(tmp_path):
    """{"deploy": true} runs `validate --deploy`: the stages say so, the result has the deploy section,
    and the deploy lens (not the plain one) shows its summary."""
    client = start(tmp_path, {"window": {"workDoneProgress": True}})
    path = tmp_path / "m.py"
    uri = open_file(client, path, MODEL)
    params = validate_params(f"{path}::example")
    params["arguments"][0]["deploy"] = True
    request = client.request_async("workspace/executeCommand", params)
    values, response = progress(client, request)
    assert "error" not in response, response
    result = response["result"]
    assert result["ok"] is True and result["deployable"] is True, result.get("deploy")
    assert result["deploy"]["original"]["exported"] is False and result["deploy"]["fixed"]["cpp_ran"] is True
    assert result["summary"].endswith("outputs equal · deployable (export, AOTInductor, C++)")
    messages = [v["value"].get("message") for v in values]
    assert "deploy: fixed arm (torch.export, AOTInductor, C++ runner)" in messages, messages
    lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
    assert lenses[0]["command"]["title"] == "graphmend: validate under torch.compile"
    assert lenses[1]["command"]["title"] == "graphmend: " + result["summary"]
    assert client.close() == 0
