"""JSON-RPC 2.0 over stdio with LSP framing (`Content-Length: N\\r\\n\\r\\n` + UTF-8 JSON body).

Requests: `initialize` (handshake: torch version, CUDA, device name, python), `validate`, `shutdown`.
Notifications from the client: `$/cancelRequest` {id}, `exit`. To the client: `$/progress`
{token, value: {kind: begin|report|end, message, percentage}} while a validation runs.

Error codes: -32700 parse error, -32600 invalid request, -32601 unknown method, -32602 bad params
(including a bad target string), -32002 not initialized, -32001 environment (torch missing or too
old, CUDA requested but absent), -32800 request cancelled, -32603 internal error.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import traceback

from graphmend_validator import PROTOCOL_VERSION, __version__, procs
from graphmend_validator.validate import VALIDATOR_ROOT, Cancelled, ValidateError, Validation, module_identity

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
ENVIRONMENT_ERROR = -32001
NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800


class FramingError(Exception):
    pass


def read_message(stream):
    """Reads one framed message body (bytes). Returns None at end of input; FramingError on bad headers."""
    length = None
    saw_header = False
    while True:
        line = stream.readline()
        if not line:
            if saw_header:
                raise FramingError("end of input inside a message header")
            return None
        saw_header = True
        stripped = line.rstrip(b"\r\n")
        if not stripped:
            break
        name, sep, value = stripped.partition(b":")
        if not sep:
            raise FramingError(f"malformed header line {stripped[:80]!r}")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise FramingError(f"bad Content-Length {value.strip()[:40]!r}") from None
            if length < 0:
                raise FramingError("negative Content-Length")
    if length is None:
        raise FramingError("message without Content-Length header")
    body = stream.read(length)
    if len(body) < length:
        raise FramingError("end of input inside a message body")
    return body


def _finite(obj):
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def encode_message(obj):
    """Frames one message. JSON has no NaN or infinity: such numbers go out as null."""
    try:
        text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(obj), separators=(",", ":"), allow_nan=False)
    body = text.encode("utf-8")
    return b"Content-Length: " + str(len(body)).encode("ascii") + b"\r\n\r\n" + body


def probe_interpreter(python, timeout=180):
    """Runs graphmend_validator.probe in a fresh interpreter; returns its dict (with "error" on failure)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([VALIDATOR_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    try:
        done = procs.run_owned([python, "-m", "graphmend_validator.probe"], timeout, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        return {"error": {"kind": "probe_timeout", "message": f"importing torch in {python} took more than {timeout} s"}}
    except OSError as exc:
        return {"error": {"kind": "python_missing", "message": f"cannot run {python}: {exc}"}}
    lines = done.stdout.decode("utf-8", errors="replace").strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        stderr = done.stderr.decode("utf-8", errors="replace").strip()
        return {"error": {"kind": "probe_failed", "message": f"probing torch in {python} failed (status {done.returncode}): {stderr[-500:]}"}}


class Server:
    def __init__(self, reader, writer, python=None):
        self.reader = reader
        self.writer = writer
        self.python = python or sys.executable
        self.write_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.probe = None
        self.running = {}  # request id (as JSON text) -> (thread, cancel event)
        self.shutdown_requested = False
        self.validate_lock = threading.Lock()

    # -- output ---------------------------------------------------------------------------------

    def send(self, obj):
        data = encode_message(obj)
        with self.write_lock:
            try:
                self.writer.write(data)
                self.writer.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def respond(self, msg_id, result):
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def error(self, msg_id, code, message, data=None):
        err = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": err})

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # -- input ----------------------------------------------------------------------------------

    def serve(self):
        exit_code = 0
        while True:
            try:
                body = read_message(self.reader)
            except FramingError as exc:
                self.error(None, PARSE_ERROR, f"framing error: {exc}")
                continue
            if body is None:
                exit_code = 0 if self.shutdown_requested else 1
                break
            try:
                msg = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                self.error(None, PARSE_ERROR, f"parse error: {exc}")
                continue
            if self.dispatch(msg) == "exit":
                exit_code = 0 if self.shutdown_requested else 1
                break
        self.cancel_all()
        return exit_code

    def dispatch(self, msg):
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            self.error(msg.get("id") if isinstance(msg, dict) else None, INVALID_REQUEST, "not a JSON-RPC 2.0 message object")
            return None
        method = msg.get("method")
        if method is None:
            return None  # a response to something we never asked: ignore
        has_id = "id" in msg
        msg_id = msg.get("id")
        if not isinstance(method, str) or (has_id and not (msg_id is None or isinstance(msg_id, (int, str)))):
            self.error(msg_id if isinstance(msg_id, (int, str)) else None, INVALID_REQUEST, "invalid request")
            return None
        params = msg.get("params", {})
        if not has_id:
            return self.on_notification(method, params)
        try:
            if method == "initialize":
                self.on_initialize(msg_id, params)
            elif method == "validate":
                self.on_validate(msg_id, params)
            elif method == "locate":
                self.on_locate(msg_id, params)
            elif method == "shutdown":
                self.shutdown_requested = True
                self.respond(msg_id, None)
            else:
                self.error(msg_id, METHOD_NOT_FOUND, f"unknown method {method!r}")
        except Exception as exc:  # a bug here must not kill the server
            self.error(msg_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}", {"traceback": traceback.format_exc()[-4000:]})
        return None

    def on_notification(self, method, params):
        if method == "exit":
            return "exit"
        if method == "$/cancelRequest" and isinstance(params, dict):
            key = json.dumps(params.get("id"))
            with self.state_lock:
                entry = self.running.get(key)
            if entry:
                entry[1].set()
        return None

    def on_initialize(self, msg_id, params):
        python = self.python
        if isinstance(params, dict) and isinstance(params.get("python"), str):
            python = params["python"]
        # Arms run in the target's folder: a relative interpreter path must not depend on our cwd.
        python = os.path.abspath(python) if os.sep in python else (shutil.which(python) or python)
        probe = probe_interpreter(python)
        if probe.get("error"):
            err = probe["error"]
            self.error(msg_id, ENVIRONMENT_ERROR, err["message"], {"kind": err["kind"], "python": python,
                                                                   "python_version": probe.get("python_version"),
                                                                   "torch_version": probe.get("torch_version")})
            return
        self.python = python
        self.probe = probe
        self.respond(msg_id, {
            "torch_version": probe["torch_version"],
            "cuda_available": probe["cuda_available"],
            "device_name": probe["device_name"],
            "cpu_model": probe.get("cpu_model"),
            "cuda_version": probe.get("cuda_version"),
            "python": probe["python"],
            "python_version": probe["python_version"],
            "validator_version": __version__,
            "protocol_version": PROTOCOL_VERSION,
            "methods": ["initialize", "validate", "locate", "shutdown"],
        })

    def on_locate(self, msg_id, params):
        """{module, target?} -> {module, file}: where the user's interpreter imports a module from
        (with the target's package root on sys.path), so a client can fix that file."""
        if self.probe is None:
            self.error(msg_id, NOT_INITIALIZED, "send initialize first (the handshake checks torch)")
            return
        module = params.get("module") if isinstance(params, dict) else None
        if not isinstance(module, str) or not module or not all(p.isidentifier() for p in module.split(".")):
            self.error(msg_id, INVALID_PARAMS, f"module must be a dotted module name, got {module!r}", {"kind": "bad_params"})
            return
        root = ""
        target = params.get("target")
        if isinstance(target, str) and "::" in target:
            root = module_identity(os.path.abspath(target.rsplit("::", 1)[0]))[1]
        code = ("import importlib.util, json, sys\n"
                "sys.path.insert(0, sys.argv[2]) if sys.argv[2] else None\n"
                "try:\n    spec = importlib.util.find_spec(sys.argv[1])\n"
                "except Exception as exc:\n    print(json.dumps({'error': f'{type(exc).__name__}: {exc}'})); sys.exit(0)\n"
                "print(json.dumps({'file': spec.origin if spec else None}))\n")
        try:
            done = procs.run_owned([self.python, "-c", code, module, root], 180, stdin=subprocess.DEVNULL,
                                   cwd=root or None)
            answer = json.loads(done.stdout.decode("utf-8", errors="replace").strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, OSError, ValueError, IndexError) as exc:
            self.error(msg_id, INTERNAL_ERROR, f"cannot locate {module}: {exc}")
            return
        file = answer.get("file")
        if not file or not os.path.isfile(file) or not file.endswith(".py"):
            why = answer.get("error") or ("not found" if not file else f"not a Python source file ({file})")
            self.error(msg_id, INVALID_PARAMS, f"module {module} cannot be located in {self.python}: {why}",
                       {"kind": "bad_module"})
            return
        self.respond(msg_id, {"module": module, "file": file})

    def on_validate(self, msg_id, params):
        if self.probe is None:
            self.error(msg_id, NOT_INITIALIZED, "send initialize first (the handshake checks torch)")
            return
        cancel = threading.Event()
        token = params.get("workDoneToken", msg_id) if isinstance(params, dict) else msg_id

        def progress(message, percentage):
            self.notify("$/progress", {"token": token, "value": {"kind": "report", "message": message, "percentage": percentage}})

        try:
            validation = Validation(params, self.probe, cancel=cancel, progress=progress, python=self.python)
        except ValidateError as exc:
            self.error(msg_id, exc.code, str(exc), {"kind": exc.kind})
            return
        key = json.dumps(msg_id)

        def work():
            self.notify("$/progress", {"token": token, "value": {"kind": "begin", "title": "graphmend validate", "percentage": 0}})
            reply = None
            try:
                # One validation at a time: concurrent arms would skew each other's timings.
                with self.validate_lock:
                    if cancel.is_set():
                        raise Cancelled()
                    reply = {"result": validation.run()}
            except Cancelled:
                reply = {"error": (REQUEST_CANCELLED, "validation cancelled; its processes were killed", None)}
            except Exception as exc:
                reply = {"error": (INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}",
                                   {"traceback": traceback.format_exc()[-4000:]})}
            finally:
                # The progress ends before the answer, as LSP clients expect.
                self.notify("$/progress", {"token": token, "value": {"kind": "end"}})
                with self.state_lock:
                    self.running.pop(key, None)
                if reply is not None and "result" in reply:
                    self.respond(msg_id, reply["result"])
                elif reply is not None:
                    self.error(msg_id, *reply["error"])

        thread = threading.Thread(target=work, name=f"validate-{msg_id}", daemon=True)
        with self.state_lock:
            self.running[key] = (thread, cancel)
        thread.start()

    def cancel_all(self):
        with self.state_lock:
            entries = list(self.running.values())
        for _, cancel in entries:
            cancel.set()
        for thread, _ in entries:
            thread.join(timeout=10)


def main(argv):
    if argv and argv[0] in ("--version", "-V"):
        print(__version__)
        return 0
    writer = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but framed messages may reach the client's pipe
    return Server(sys.stdin.buffer, writer).serve()
