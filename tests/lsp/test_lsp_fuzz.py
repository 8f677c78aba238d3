"""Randomised editor sessions with corrupted bytes: the server never crashes, never writes anything
but framed JSON-RPC to stdout, and exits with 0 or 1. Deterministic seeds; standard library only.
"""

import json
import os
import pathlib
import random
import subprocess
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.abspath(os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend")))
MODEL = (ROOT / "tests" / "fixtures" / "rules" / "GM101_tensor_if.py").read_text()
URI = "file:///fuzz/m.py"
TEXTS = ["", "x", "\n", "if x.sum() > 0:\n    y = 1\n", "é🙂", ")", "print(x)", "\r\n", "\t"]

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason=f"{BIN} is not built")


def frame(message):
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def session(rng):
    capabilities = {}
    if rng.random() < 0.3:
        capabilities["textDocument"] = {"diagnostic": {}}
    if rng.random() < 0.5:
        capabilities["general"] = {"positionEncodings": ["utf-8"]}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"capabilities": capabilities, "initializationOptions": {"debounce": 0}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": URI, "languageId": "python", "version": 1, "text": MODEL}}},
    ]
    version = 1
    for i in range(40):
        line, ch = rng.randint(-2, 60), rng.randint(-2, 90)
        pos = {"line": line, "character": ch}
        request_id = 100 + i
        r = rng.random()
        if r < 0.5:
            version += rng.choice([1, 1, 1, 0, -1])
            end = {"line": line + rng.randint(-1, 2), "character": rng.randint(0, 40)}
            messages.append({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": URI, "version": version},
                "contentChanges": [{"range": {"start": pos, "end": end}, "text": rng.choice(TEXTS)}]}})
        elif r < 0.62:
            messages.append({"jsonrpc": "2.0", "id": request_id, "method": "textDocument/hover",
                             "params": {"textDocument": {"uri": URI}, "position": pos}})
        elif r < 0.75:
            messages.append({"jsonrpc": "2.0", "id": request_id, "method": "textDocument/codeAction",
                             "params": {"textDocument": {"uri": URI}, "range": {"start": pos, "end": pos},
                                        "context": {"diagnostics": [],
                                                    "only": rng.choice([["source.fixAll"], ["quickfix"], []])}}})
        elif r < 0.8:
            messages.append({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": request_id - 1}})
        elif r < 0.85:
            messages.append({"jsonrpc": "2.0", "id": request_id, "method": "textDocument/diagnostic",
                             "params": {"textDocument": {"uri": URI}}})
        elif r < 0.9:
            messages.append({"jsonrpc": "2.0", "id": request_id, "method": "workspace/executeCommand",
                             "params": {"command": "graphmend.applyAutofix", "arguments": [{"uri": URI}]}})
        elif r < 0.95:
            messages.append({"jsonrpc": "2.0", "method": "textDocument/didSave",
                             "params": {"textDocument": {"uri": URI}}})
        else:
            messages.append({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
                             "params": {"settings": {"graphmend": {"run": rng.choice(["onType", "onSave", 3]),
                                                                  "debounce": 0}}}})
    # Sent in a few bursts, so that analyses run and finish between them.
    chunks = [bytearray(b"".join(frame(m) for m in messages[i:i + 6]))
              for i in range(0, len(messages), 6)]
    for _ in range(rng.randint(0, 4)):  # corrupt a few bytes
        data = rng.choice(chunks)
        k = rng.randrange(len(data))
        op = rng.random()
        if op < 0.4:
            data[k] = rng.randrange(256)
        elif op < 0.7:
            del data[k:k + rng.randint(1, 30)]
        else:
            data[k:k] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 10)))
    chunks.append(frame({"jsonrpc": "2.0", "id": 999, "method": "shutdown"}) +
                  frame({"jsonrpc": "2.0", "method": "exit"}))
    return [bytes(chunk) for chunk in chunks]


def parse_stdout(out):
    messages, i = [], 0
    while i < len(out):
        assert out.startswith(b"Content-Length: ", i), f"non-protocol output at byte {i}: {out[i:i + 80]!r}"
        j = out.index(b"\r\n\r\n", i)
        n = int(out[i + 16:j])
        message = json.loads(out[j + 4:j + 4 + n])
        assert message.get("jsonrpc") == "2.0"
        messages.append(message)
        i = j + 4 + n
    return messages


@pytest.mark.parametrize("seed", range(40))
def test_random_session_with_corruption(seed, tmp_path):
    rng = random.Random(seed)
    process = subprocess.Popen([BIN, "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=tmp_path)
    output = {}
    readers = [threading.Thread(target=lambda name=name: output.__setitem__(
        name, getattr(process, name).read())) for name in ("stdout", "stderr")]
    for reader in readers:
        reader.start()
    try:
        for chunk in session(rng):
            process.stdin.write(chunk)
            process.stdin.flush()
            time.sleep(0.02)
        process.stdin.close()
    except BrokenPipeError:
        pass  # it may have exited on a corrupted `exit`; the checks below still apply
    returncode = process.wait(timeout=120)
    for reader in readers:
        reader.join(timeout=60)
    stderr = output["stderr"].decode("utf-8", "replace")
    assert returncode in (0, 1), stderr[-2000:]
    for sign in ("terminate called", "internal error", "[critical]", "Sanitizer"):
        assert sign not in stderr, stderr[-2000:]
    messages = parse_stdout(output["stdout"])
    ids = [m["id"] for m in messages if "id" in m and "method" not in m and m["id"] is not None]
    assert len(ids) == len(set(ids)), "a request was answered twice"
