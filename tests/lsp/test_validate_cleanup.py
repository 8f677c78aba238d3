"""`graphmend.validate` from the language server leaves nothing running: what user code detaches
from the arm (`setsid sleep 300`, a daemon made by a double fork) is gone once the server answers
a cancelled run, once it answers a run whose child died, and once it exits during a run. Real torch
(.venv); the factory records every pid and hangs in the prepare arm.
"""

import os
import pathlib
import signal
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

ESCAPING = '''import os
import subprocess
import sys
import time

import torch

DAEMON = """
import os, sys, time
if os.fork():
    os._exit(0)
os.setsid()
with open(sys.argv[1], "a") as handle:
    handle.write(f"daemon {os.getpid()}\\\\n")
time.sleep(300)
"""


def example():
    pidfile = os.environ["GRAPHMEND_TEST_PIDFILE"]
    subprocess.Popen(["setsid", "sh", "-c", f"echo setsid $$ >> '{pidfile}'; exec sleep 300"])
    subprocess.Popen([sys.executable, "-c", DAEMON, pidfile], start_new_session=True).wait()
    with open(pidfile, "a") as handle:
        handle.write(f"arm {os.getpid()}\\n")
    time.sleep(600)
    return torch.nn.Identity(), (torch.ones(1),)
'''


def start(tmp_path):
    env = dict(os.environ)
    env.update(TORCHINDUCTOR_COMPILE_THREADS="1", OMP_NUM_THREADS="1", GRAPHMEND_TEST_PIDFILE=str(tmp_path / "pids"))
    env.pop("PYTHONPATH", None)
    client = LspClient([BIN, "server", "--log-level", "debug"], cwd=tmp_path, env=env)
    client.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {},
                                  "initializationOptions": {"debounce": 0, "validator": {"python": str(PYTHON)}}})
    client.notify("initialized", {})
    path = tmp_path / "escaping.py"
    path.write_text(ESCAPING)
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": ESCAPING}})
    return client, f"{path}::example"


def validate(client, target):
    return client.request_async("workspace/executeCommand", {
        "command": "graphmend.validate", "arguments": [{"target": target, "backend": "eager", "repeats": 1}]})


def recorded(tmp_path, timeout=120.0):
    """Waits until the factory detached both processes; returns {role: pid}."""
    pidfile = tmp_path / "pids"
    deadline = time.monotonic() + timeout
    while True:
        roles = {}
        if pidfile.exists():
            roles = dict(line.split()[::-1] for line in pidfile.read_text().splitlines() if line.strip())
            roles = {role: int(pid) for pid, role in roles.items()}
        if {"arm", "setsid", "daemon"} <= set(roles):
            return roles
        assert time.monotonic() < deadline, f"the factory never detached its processes: {roles}"
        time.sleep(0.1)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def still_running(roles):
    running = {role: pid for role, pid in roles.items() if alive(pid)}
    for pid in running.values():  # a failing test leaves nothing behind either
        os.kill(pid, signal.SIGKILL)
    return running


def validate_child(client):
    """The server's `graphmend validate` child."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == client.process.pid and argv[1:2] == [b"validate"]:
            return int(entry)
    raise AssertionError("no graphmend validate child")


def answer(client, request, timeout=90):
    return client.wait_for(lambda m: m.get("id") == request and "method" not in m, timeout)


def test_cancel_kills_what_user_code_detached(tmp_path):
    client, target = start(tmp_path)
    request = validate(client, target)
    roles = recorded(tmp_path)
    client.notify("$/cancelRequest", {"id": request})
    assert answer(client, request)["error"]["code"] == -32800
    assert still_running(roles) == {}
    assert client.close() == 0


def test_a_child_deaf_to_the_cancellation_is_killed_with_its_whole_tree(tmp_path):
    # Stopped, the child cannot act on SIGTERM: past the grace period the server kills its tree.
    client, target = start(tmp_path)
    request = validate(client, target)
    roles = recorded(tmp_path)
    os.kill(validate_child(client), signal.SIGSTOP)
    client.notify("$/cancelRequest", {"id": request})
    assert answer(client, request, 60)["error"]["code"] == -32800
    assert still_running(roles) == {}
    assert client.close() == 0


def test_a_child_that_dies_leaves_nothing_running(tmp_path):
    # What a child killed outright leaves behind is re-parented to the server and swept.
    client, target = start(tmp_path)
    request = validate(client, target)
    roles = recorded(tmp_path)
    os.kill(validate_child(client), signal.SIGKILL)
    assert answer(client, request)["error"]["code"] == -32803
    assert still_running(roles) == {}
    assert client.close() == 0


def test_exit_during_a_run_leaves_nothing_running(tmp_path):
    client, target = start(tmp_path)
    validate(client, target)
    roles = recorded(tmp_path)
    client.send({"id": "bye", "method": "shutdown"})
    client.notify("exit", None)
    assert client.process.wait(timeout=30) == 0
    assert still_running(roles) == {}
