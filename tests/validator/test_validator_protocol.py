"""Transcript tests of the validator process itself: framing, handshake, errors, cancellation."""
import io
import json
import subprocess
import time

import pytest

from validator_support import PY, TARGETS, VALIDATOR_DIR, RpcClient, base_env, frame, pid_alive, wait_for_file

import sys

sys.path.insert(0, str(VALIDATOR_DIR))
from graphmend_validator import server as rpc_server  # noqa: E402


@pytest.fixture(scope="module")
def client():
    c = RpcClient()
    reply = c.request(1, "initialize", {})
    assert "result" in reply, reply
    yield c
    c.close()


# -- framing, in process -------------------------------------------------------------------------


def test_read_message_handles_headers_and_end_of_input():
    stream = io.BytesIO(b"Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
                        b"content-length:7\r\n\r\n[1,2,3]")
    assert rpc_server.read_message(stream) == b"{}"
    assert rpc_server.read_message(stream) == b"[1,2,3]"
    assert rpc_server.read_message(stream) is None
    with pytest.raises(rpc_server.FramingError):
        rpc_server.read_message(io.BytesIO(b"Content-Type: x\r\n\r\n{}"))
    with pytest.raises(rpc_server.FramingError):
        rpc_server.read_message(io.BytesIO(b"Content-Length: 10\r\n\r\n{}"))


def test_encode_message_counts_bytes_and_drops_non_finite_numbers():
    data = rpc_server.encode_message({"s": "é", "x": float("inf")})
    header, body = data.split(b"\r\n\r\n", 1)
    assert header == b"Content-Length: %d" % len(body)
    assert json.loads(body) == {"s": "é", "x": None}


def test_outputs_compare_structurally_including_plain_objects():
    import torch
    from graphmend_validator import arm

    class Cache:
        def __init__(self, k):
            self.layers = [{"k": k}]
            self.seen = 3

    a = arm.normalise({"logits": torch.ones(2), "cache": Cache(torch.zeros(3)), "n": 1.0})
    b = arm.normalise({"logits": torch.ones(2), "cache": Cache(torch.zeros(3)), "n": 1.0})
    assert arm.compare(a, b, 1e-5, 1e-6) == (True, 0.0, None)
    c = arm.normalise({"logits": torch.ones(2), "cache": Cache(torch.tensor([0.0, 0.5, 0.0])), "n": 1.0})
    ok, diff, where = arm.compare(a, c, 1e-5, 1e-6)
    assert not ok and diff == 0.5 and "cache" in where and "layers" in where
    assert not arm.compare(a["logits"], torch.ones(3), 1e-5, 1e-6)[0]
    assert not arm.compare(torch.ones(2), torch.ones(2, dtype=torch.float64), 1e-5, 1e-6)[0]
    nan = torch.tensor([float("nan"), 1.0])
    assert arm.compare(nan, nan.clone(), 1e-5, 1e-6)[0]
    assert arm.compare(torch.tensor([1, 2]), torch.tensor([1, 3]), 1e-5, 1e-6)[:2] == (False, 1.0)


def test_break_log_parsing_picks_the_user_frame():
    from graphmend_validator.arm import BreakRecorder

    rec = BreakRecorder("/site/torch/")
    message = (
        "Graph break in user code at /site/torch/nn/functional.py:100\n"
        "Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call:\n\n"
        "Data-dependent branching\n  Explanation: Detected data-dependent branching.\n"
        "  For more details, visit: https://x/gb/gb0170.html\n"
        "User code traceback:\n"
        '  File "/proj/model.py", line 12, in torch_dynamo_resume_in_forward_at_9\n    y = f(x)\n'
        '  File "/site/torch/nn/functional.py", line 100, in f\n    if x:\n')
    brk = rec.parse(message)
    assert (brk["file"], brk["line"], brk["function"]) == ("/proj/model.py", 12, "forward")
    assert brk["type"] == "Data-dependent branching" and brk["registry_id"] == "GB0170"
    assert brk["explanation"] == "Detected data-dependent branching."


def test_locate_finds_a_module_from_the_targets_root(client):
    reply = client.request(50, "locate", {"module": "helperlib", "target": f"{TARGETS / 'libuse.py'}::make"})
    assert reply["result"]["file"] == str(TARGETS / "helperlib.py")
    reply = client.request(51, "locate", {"module": "no_such_module_here"})
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["kind"] == "bad_module"


# -- the process ---------------------------------------------------------------------------------


def test_handshake_reports_torch_and_device(client):
    reply = client.request(2, "initialize", {})
    result = reply["result"]
    import torch  # the test interpreter is the same .venv

    assert result["torch_version"] == torch.__version__
    assert result["cuda_available"] is torch.cuda.is_available()
    assert isinstance(result["device_name"], str) and result["device_name"]
    assert result["python"].endswith("python") and result["protocol_version"] == 1


def test_bad_json_is_a_parse_error_and_the_server_goes_on(client):
    client.write(frame(b'{"jsonrpc": "2.0", "id": 5, "method": '))
    reply = client.next(30)
    assert reply["error"]["code"] == -32700 and reply["id"] is None
    assert client.request(6, "no/such/method")["error"]["code"] == -32601


def test_bad_header_is_a_parse_error_and_the_server_goes_on(client):
    client.write(b"Content-Length: abc\r\n\r\n")
    reply = client.next(30)
    assert reply["error"]["code"] == -32700
    assert client.request(7, "no/such/method")["error"]["code"] == -32601


def test_two_messages_in_one_write_and_one_split_in_two(client):
    a = frame({"jsonrpc": "2.0", "id": 8, "method": "nope"})
    b = frame({"jsonrpc": "2.0", "id": 9, "method": "nope"})
    client.write(a + b[:10])
    time.sleep(0.2)
    client.write(b[10:])
    assert client.wait_id(8)["error"]["code"] == -32601
    assert client.wait_id(9)["error"]["code"] == -32601


def test_invalid_requests(client):
    client.send([{"jsonrpc": "2.0", "id": 10, "method": "initialize"}])
    assert client.next(30)["error"]["code"] == -32600
    client.send({"id": 11, "method": "initialize"})
    reply = client.next(30)
    assert reply["error"]["code"] == -32600 and reply["id"] == 11


@pytest.mark.parametrize("params, words", [
    ({"target": "nosep"}, "path/to/file.py::factory"),
    ({"target": f"{TARGETS / 'branchy.py'}::make", "repeats": 0}, "repeats"),
    ({"target": f"{TARGETS / 'branchy.py'}::make", "mode": "infer"}, "mode"),
    ({"target": f"{TARGETS / 'branchy.py'}::make", "colour": "red"}, "unknown parameters"),
    ({"target": f"{TARGETS / 'branchy.py'}::make", "fixed_source": "/nope.py"}, "does not exist"),
    ({"target": f"{TARGETS / 'branchy.py'}::make", "device": "cuda"}, "no CUDA"),
])
def test_validate_bad_params(client, params, words):
    reply = client.request(20, "validate", params)
    code = -32001 if params.get("device") == "cuda" else -32602
    assert reply["error"]["code"] == code and words in reply["error"]["message"]


def test_validate_before_initialize_is_refused():
    c = RpcClient()
    try:
        reply = c.request(1, "validate", {"target": f"{TARGETS / 'branchy.py'}::make"})
        assert reply["error"]["code"] == -32002
    finally:
        assert c.close() == 0


def test_initialize_without_torch(torchless_python):
    c = RpcClient(python=PY)
    try:
        reply = c.request(1, "initialize", {"python": torchless_python})
        assert reply["error"]["code"] == -32001
        assert reply["error"]["data"]["kind"] == "torch_missing"
        assert "torch cannot be imported" in reply["error"]["message"]
    finally:
        c.close()


def test_the_validator_itself_runs_without_torch(torchless_python):
    c = RpcClient(python=torchless_python)
    try:
        reply = c.request(1, "initialize", {})
        assert reply["error"]["data"]["kind"] == "torch_missing"
    finally:
        assert c.close() == 0


def test_validate_progress_and_result(client):
    params = {"target": f"{TARGETS / 'fn_target.py'}::make", "fixed_source": str(TARGETS / "fn_target_fixed.py"),
              "backend": "eager", "repeats": 1, "workDoneToken": "tok"}
    before = len(client.seen)
    reply = client.request(30, "validate", params, timeout=300)
    result = reply["result"]
    assert result["ok"] is True and result["outputs_match"] is True
    assert result["original"]["graph_break_count"] == 1 and result["fixed"]["graph_break_count"] == 0
    progress = [m["params"] for m in client.seen[before:] if m.get("method") == "$/progress"]
    assert all(p["token"] == "tok" for p in progress)
    kinds = [p["value"]["kind"] for p in progress]
    assert kinds[0] == "begin" and "report" in kinds
    assert [p["value"]["percentage"] for p in progress if p["value"]["kind"] == "report"][-1] == 100


def test_structured_inputs_keep_their_types(client):
    params = {"target": f"{TARGETS / 'structured.py'}::make", "fixed_source": str(TARGETS / "structured.py"),
              "backend": "eager", "repeats": 1}
    result = client.request(44, "validate", params, timeout=300)["result"]
    assert result["ok"] is True, result.get("error")
    assert result["outputs_match"] is True and result["original"]["graph_break_count"] == 0


def test_recompiles_are_counted(client):
    params = {"target": f"{TARGETS / 'recompiles.py'}::make", "backend": "eager", "repeats": 1, "iters": 5}
    result = client.request(45, "validate", params, timeout=300)["result"]
    assert result["ok"] is True
    arm = result["original"]
    assert arm["graph_count"] == 1 and arm["graph_break_count"] == 0
    assert arm["recompiles"] >= 3 and arm["graphs_after_first_call"] >= 3
    # Eager calls mutate the counter too: compiled and eager outputs differ by construction.
    assert arm["compiled_matches_eager"] is False


def test_memory_limit(client):
    params = {"target": f"{TARGETS / 'misbehaving.py'}::hungry", "backend": "eager", "repeats": 1,
              "memory_limit_mb": 1536}
    result = client.request(40, "validate", params, timeout=300)["result"]
    assert result["ok"] is False and result["error"]["kind"] == "memory"


def test_cancel_request_kills_the_arm(tmp_path):
    pidfile = tmp_path / "pid"
    c = RpcClient(env=base_env(GRAPHMEND_TEST_PIDFILE=pidfile))
    try:
        assert "result" in c.request(1, "initialize", {})
        c.send({"jsonrpc": "2.0", "id": "v", "method": "validate",
                "params": {"target": f"{TARGETS / 'misbehaving.py'}::hangs", "backend": "eager", "timeout_s": 300}})
        assert wait_for_file(pidfile, 120)
        arm_pid = int(pidfile.read_text())
        assert pid_alive(arm_pid)
        c.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "v"}})
        reply = c.wait_id("v", 30)
        assert reply["error"]["code"] == -32800
        assert not pid_alive(arm_pid)
        # The server is still usable after a cancellation.
        assert c.request(2, "nope")["error"]["code"] == -32601
    finally:
        assert c.close() == 0


def test_end_of_input_without_shutdown_exits_nonzero():
    env = base_env(PYTHONPATH=str(VALIDATOR_DIR))
    done = subprocess.run([PY, "-m", "graphmend_validator"], input=b"", capture_output=True, env=env, timeout=60)
    assert done.returncode == 1 and done.stdout == b""
    msgs = frame({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}) + frame({"jsonrpc": "2.0", "method": "exit"})
    done = subprocess.run([PY, "-m", "graphmend_validator"], input=msgs, capture_output=True, env=env, timeout=60)
    assert done.returncode == 0
    assert json.loads(done.stdout.split(b"\r\n\r\n", 1)[1]) == {"jsonrpc": "2.0", "id": 1, "result": None}
