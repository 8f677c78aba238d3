"""Shared helpers of the validator tests: the CLI binary, the interpreter with torch, an RPC client."""
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TARGETS = HERE / "targets"
VALIDATOR_DIR = ROOT / "gpu-validator"
BIN = os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend"))
_venv_python = ROOT / ".venv" / "bin" / "python"
PY = str(_venv_python) if _venv_python.exists() else sys.executable


def base_env(**extra):
    env = dict(os.environ)
    # Two shared CPUs: keep compilation and kernels single-threaded in tests.
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("PYTHONPATH", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_cli(*args, timeout=300, env=None, python=PY):
    cmd = [BIN, "validate", *map(str, args)]
    if python is not None and "--python" not in args:
        cmd += ["--python", python]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or base_env())


def run_json(*args, **kwargs):
    done = run_cli(*args, "--json", **kwargs)
    try:
        data = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"no JSON on stdout (rc {done.returncode})\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    return done.returncode, data, done


def pid_alive(pid):
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def wait_for_file(path, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return True
        time.sleep(0.1)
    return False


def frame(obj_or_bytes):
    body = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RpcClient:
    """Talks to `python -m graphmend_validator` over pipes; records everything it reads."""

    def __init__(self, python=PY, env=None):
        env = dict(env or base_env())
        env["PYTHONPATH"] = str(VALIDATOR_DIR)
        self.proc = subprocess.Popen([python, "-m", "graphmend_validator"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.messages = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        stream = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers[b"content-length"]))
            self.messages.put(json.loads(body))

    def write(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj):
        self.write(frame(obj))

    def request(self, msg_id, method, params=None, timeout=120):
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_id(msg_id, timeout)

    def next(self, timeout=120):
        msg = self.messages.get(timeout=timeout)
        if msg is not None:
            self.seen.append(msg)
        return msg

    def wait_id(self, msg_id, timeout=120):
        end = time.monotonic() + timeout
        while True:
            msg = self.next(max(0.1, end - time.monotonic()))
            if msg is None:
                raise AssertionError("validator closed its output: " + self.proc.stderr.read().decode(errors="replace"))
            if "method" not in msg and msg.get("id") == msg_id:
                return msg

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
                self.send({"jsonrpc": "2.0", "method": "exit"})
                self.proc.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()
