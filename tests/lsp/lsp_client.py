"""A small synchronous LSP client over stdio (standard library only), for tests."""

import json
import queue
import subprocess
import threading
import time


def utf16_offset(line_text, character):
    """Index into a Python str line for a UTF-16 `character` column."""
    units = 0
    for index, ch in enumerate(line_text):
        if units >= character:
            return index
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text)


def position_to_index(text, position):
    lines = text.split("\n")
    line = min(position["line"], len(lines) - 1)
    start = sum(len(text_line) + 1 for text_line in lines[:line])
    return start + utf16_offset(lines[line], position["character"])


def apply_text_edits(text, edits):
    """Applies LSP TextEdits (UTF-16 positions) to `text`, last first."""
    spans = []
    for edit in edits:
        start = position_to_index(text, edit["range"]["start"])
        end = position_to_index(text, edit["range"]["end"])
        spans.append((start, end, edit["newText"]))
    for start, end, new_text in sorted(spans, reverse=True):
        text = text[:start] + new_text + text[end:]
    return text


class LspClient:
    def __init__(self, command, cwd=None, env=None):
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd=cwd, env=env)
        self.messages = queue.Queue()
        self.backlog = []
        self.next_id = 0
        self.stderr_lines = []
        self.server_requests = []  # every server-to-client request, in order (answered by answer_server_request)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self):
        for line in self.process.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace"))

    def _read(self):
        stream = self.process.stdout
        try:
            while True:
                header = b""
                while not header.endswith(b"\r\n\r\n"):
                    byte = stream.read(1)
                    if not byte:
                        self.messages.put(None)
                        return
                    header += byte
                assert header.startswith(b"Content-Length: "), header
                length = int(header[16:-4])
                self.messages.put(json.loads(stream.read(length)))
        except Exception as error:  # noqa: BLE001 - surfaces in the test as a protocol failure
            self.messages.put({"protocol-error": repr(error)})

    def send(self, message):
        message = dict(message, jsonrpc="2.0")
        body = json.dumps(message).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method, params):
        self.send({"method": method, "params": params})

    def request_async(self, method, params=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.next_id

    def wait_for(self, predicate, timeout=30.0):
        for index, message in enumerate(self.backlog):
            if predicate(message):
                return self.backlog.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no matching message")
            message = self.messages.get(timeout=remaining)
            if message is None:
                raise EOFError("the server closed stdout")
            if "protocol-error" in message:
                raise AssertionError(message["protocol-error"])
            if "method" in message and "id" in message:
                self.answer_server_request(message)
                continue
            if predicate(message):
                return message
            self.backlog.append(message)

    def answer_server_request(self, message):
        """Server-to-client requests: applyEdit is recorded and accepted, the rest get null."""
        self.server_requests.append(message)
        if message["method"] == "workspace/applyEdit":
            self.backlog.append(message)
            self.send({"id": message["id"], "result": {"applied": True}})
        else:
            self.send({"id": message["id"], "result": None})

    def request(self, method, params=None, timeout=30.0):
        request_id = self.request_async(method, params)
        response = self.wait_for(lambda m: m.get("id") == request_id and "method" not in m,
                                 timeout)
        if "error" in response:
            raise RuntimeError(f"{method} failed: {response['error']}")
        return response["result"]

    def diagnostics(self, uri, version, timeout=30.0):
        message = self.wait_for(
            lambda m: m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri and m["params"].get("version") == version, timeout)
        return message["params"]["diagnostics"]

    def close(self, timeout=10.0):
        if self.process.poll() is None:
            try:
                self.request("shutdown", timeout=timeout)
                self.notify("exit", None)
            except (BrokenPipeError, EOFError, TimeoutError):
                pass
            try:
                return self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                return None
        return self.process.returncode
