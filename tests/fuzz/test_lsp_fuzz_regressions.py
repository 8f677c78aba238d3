"""Inputs the LSP framing fuzzer (tests/fuzz/fuzz_lsp_framing.cpp, tests/fuzz/fuzz_lsp.sh) once failed
on, kept fixed, replayed through a real `graphmend server` the way the target feeds them: after
`initialize`, the input's first byte picks the size of each write (0: one write), the rest is the
stream, then a sentinel request. The server must answer the sentinel (unless the input made it exit),
write nothing but framed JSON-RPC 2.0, never answer InternalError, and exit with 0 or 1 after
`shutdown` and `exit`.
Binary: $GRAPHMEND_BIN, default build/graphmend.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REGRESSIONS = REPO / "tests" / "fuzz" / "lsp_regressions"
BIN = os.environ.get("GRAPHMEND_BIN", str(REPO / "build" / "graphmend"))
FILES = sorted(REGRESSIONS.glob("*.input")) if REGRESSIONS.is_dir() else []
SENTINEL = "graphmend-fuzz-sentinel"


def frame(message):
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_messages(stream, messages, problems):
    while True:
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            byte = stream.read(1)
            if not byte:
                if header:
                    problems.append(f"stdout ended inside a header: {header!r}")
                return
            header += byte
        match = re.fullmatch(rb"Content-Length: (\d+)\r\n\r\n", header)
        if not match:
            problems.append(f"not a message header on stdout: {header[:200]!r}")
            return
        message = json.loads(stream.read(int(match.group(1))))
        if message.get("jsonrpc") != "2.0":
            problems.append(f"not JSON-RPC 2.0: {message!r}")
        messages.append(message)


@pytest.mark.skipif(not FILES, reason="no LSP fuzz regressions recorded")
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_server_answers_after_the_input(path):
    data = path.read_bytes()
    chunk, stream = (data[0], data[1:]) if data else (0, b"")
    # The fuzz target's limit, so that its oversized inputs are oversized here too. Default settings
    # otherwise (code lenses on): a recorded input must not run graphmend.validate on a real target.
    proc = subprocess.Popen([BIN, "server", "--max-message-bytes", "512"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    messages, problems = [], []
    reader = threading.Thread(target=read_messages, args=(proc.stdout, messages, problems), daemon=True)
    reader.start()
    try:
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": "graphmend-fuzz-init", "method": "initialize", "params": {
            "capabilities": {}, "initializationOptions": {"debounce": 0}}}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        step = chunk or max(1, len(stream))
        for at in range(0, len(stream), step):
            proc.stdin.write(stream[at:at + step])
            proc.stdin.flush()
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": SENTINEL, "method": "graphmend/fuzzPing"}))
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while not any(m.get("id") == SENTINEL and "method" not in m for m in messages):
            assert proc.poll() is None or proc.returncode in (0, 1), f"the server died ({proc.returncode})"
            if proc.poll() is not None:
                break  # the input itself sent exit
            assert time.monotonic() < deadline, "the sentinel request was never answered"
            time.sleep(0.02)
        if proc.poll() is None:
            proc.stdin.write(frame({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}))
            proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
            proc.stdin.close()
        assert proc.wait(timeout=30) in (0, 1)
    except BrokenPipeError:
        assert proc.wait(timeout=30) in (0, 1), "the server closed its input (crashed?)"
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=10)
    assert problems == []
    # A handler that threw is a bug, however bad the input: no InternalError, no "internal error" log.
    internal = [m for m in messages if m.get("error", {}).get("code") == -32603
                or (m.get("method") == "window/logMessage" and "internal error" in m["params"].get("message", ""))]
    assert internal == []
