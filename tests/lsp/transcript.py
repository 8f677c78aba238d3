#!/usr/bin/env python3
"""Runs one LSP transcript against `graphmend server` (standard library only).

A transcript is a list of steps, executed in order:

    # comment
    %args --max-message-bytes 4096     extra arguments for the server
    %text NAME ... %end                a text variable; a JSON string "$NAME" becomes its value
    %let NAME = <python expression>    a computed text variable ("x = 1\\n" * 1000)
    %file REL/PATH ... %end            writes a file under the workspace folder (at this point)
    >>> {json}                         a message to send (may span lines; framed automatically)
    >>>raw b"..."                      raw bytes to send, unframed (a Python bytes literal)
    <<< {json pattern}                 an expected message; consecutive ones form a group that
                                       may arrive in any order
    %close                             close the server's stdin
    %exit N                            the server must exit with code N
    %stderr REGEX                      the server's stderr must match (checked at the end)
    %nostderr REGEX                    the server's stderr must not match

`${ROOT}` and `${ROOT_URI}` in messages are the workspace folder and its file URI.

Patterns: "*" matches any present value; a string "re:X" matches strings that X fully matches;
objects match when every expected key matches (extra keys are allowed, "$absent" requires a key
to be missing); arrays match element-wise with equal lengths unless the last expected element is
"...". Every message the server sends must be expected: anything else fails the test, and so does
any output on stdout that is not a framed JSON-RPC message.
"""

import argparse
import ast
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT = float(os.environ.get("GRAPHMEND_TRANSCRIPT_TIMEOUT", "20"))


class Failure(Exception):
    pass


def parse_transcript(text):
    steps = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("%text ") or stripped.startswith("%file "):
            kind, name = stripped.split(None, 1)
            body = []
            while i < len(lines) and lines[i].rstrip("\r\n") != "%end":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise Failure(f"{kind} {name}: missing %end")
            i += 1
            steps.append((kind[1:], name, "".join(body)))
        elif stripped.startswith("%let "):
            name, expr = stripped[5:].split("=", 1)
            steps.append(("let", name.strip(), expr.strip()))
        elif stripped.startswith("%args "):
            steps.append(("args", stripped[6:].split(), None))
        elif stripped == "%close":
            steps.append(("close", None, None))
        elif stripped.startswith("%exit "):
            steps.append(("exit", int(stripped[6:]), None))
        elif stripped.startswith("%stderr "):
            steps.append(("stderr", stripped[8:], None))
        elif stripped.startswith("%nostderr "):
            steps.append(("nostderr", stripped[10:], None))
        elif stripped.startswith(">>>raw "):
            steps.append(("raw", ast.literal_eval(stripped[7:]), None))
        elif stripped.startswith(">>>") or stripped.startswith("<<<"):
            body = [line.strip()[3:]]
            while i < len(lines):
                nxt = lines[i].strip()
                if nxt.startswith((">>>", "<<<", "%")) or nxt.startswith("#") or not nxt:
                    break
                body.append(lines[i])
                i += 1
            steps.append(("send" if stripped.startswith(">>>") else "expect", "".join(body), None))
        else:
            raise Failure(f"unrecognised transcript line: {line!r}")
    return steps


def substitute(value, variables):
    if isinstance(value, str) and value.startswith("$") and value[1:] in variables:
        return variables[value[1:]]
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


def matches(pattern, actual, path="$"):
    """Returns None when `actual` matches `pattern`, else a description of the first mismatch."""
    if pattern == "*":
        return None
    if isinstance(pattern, str) and pattern.startswith("re:"):
        if isinstance(actual, str) and re.fullmatch(pattern[3:], actual, re.DOTALL):
            return None
        return f"{path}: {actual!r} does not match /{pattern[3:]}/"
    if isinstance(pattern, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {actual!r}"
        for key, sub in pattern.items():
            if sub == "$absent":
                if key in actual:
                    return f"{path}.{key}: expected absent, got {actual[key]!r}"
                continue
            if key not in actual:
                return f"{path}.{key}: missing"
            problem = matches(sub, actual[key], f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(pattern, list):
        if not isinstance(actual, list):
            return f"{path}: expected an array, got {actual!r}"
        prefix = bool(pattern) and pattern[-1] == "..."
        items = pattern[:-1] if prefix else pattern
        if (len(actual) < len(items)) if prefix else (len(actual) != len(items)):
            return f"{path}: expected {len(items)} elements, got {len(actual)}: {actual!r}"
        for index, sub in enumerate(items):
            problem = matches(sub, actual[index], f"{path}[{index}]")
            if problem:
                return problem
        return None
    if type(pattern) is not type(actual) and not (
        isinstance(pattern, (int, float)) and isinstance(actual, (int, float))
        and not isinstance(pattern, bool) and not isinstance(actual, bool)
    ):
        return f"{path}: expected {pattern!r}, got {actual!r}"
    if pattern != actual:
        return f"{path}: expected {pattern!r}, got {actual!r}"
    return None


class Reader(threading.Thread):
    """Parses the server's stdout strictly into messages."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.messages = queue.Queue()
        self.error = None

    def run(self):
        try:
            while True:
                header = b""
                while not header.endswith(b"\r\n\r\n"):
                    byte = self.stream.read(1)
                    if not byte:
                        if header:
                            self.error = f"stdout ended inside a header: {header!r}"
                        self.messages.put(None)
                        return
                    header += byte
                    if len(header) > 1024:
                        raise ValueError(f"not a message header: {header[:200]!r}")
                match = re.fullmatch(rb"Content-Length: (\d+)\r\n\r\n", header)
                if not match:
                    raise ValueError(f"bad header on stdout: {header!r}")
                length = int(match.group(1))
                body = self.stream.read(length)
                if len(body) != length:
                    raise ValueError("stdout ended inside a message body")
                message = json.loads(body.decode("utf-8"))
                if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                    raise ValueError(f"not a JSON-RPC message: {body[:200]!r}")
                self.messages.put(message)
        except Exception as error:  # noqa: BLE001 - reported as the test failure
            self.error = f"non-protocol output on stdout: {error}"
            self.messages.put(None)


def frame(message):
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def run(server_cmd, transcript_path, verbose=False):
    with open(transcript_path, encoding="utf-8") as f:
        steps = parse_transcript(f.read())
    workspace = tempfile.mkdtemp(prefix="gm-transcript-")
    root_uri = "file://" + workspace
    variables = {}
    args = []
    for kind, a, _ in steps:
        if kind == "args":
            args += a
    stderr_file = tempfile.TemporaryFile()
    process = subprocess.Popen(server_cmd + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=stderr_file, cwd=workspace)
    reader = Reader(process.stdout)
    reader.start()
    outbox = bytearray()
    expected_exit = None
    stderr_patterns = []
    stderr_forbidden = []
    closed = False

    def flush():
        nonlocal outbox
        if outbox and not closed:
            try:
                process.stdin.write(bytes(outbox))
                process.stdin.flush()
            except BrokenPipeError:
                raise Failure("the server closed its stdin (crashed?)")
        outbox = bytearray()

    def next_message(deadline, waiting_for):
        remaining = deadline - time.monotonic()
        try:
            message = reader.messages.get(timeout=max(0.0, remaining))
        except queue.Empty:
            raise Failure(f"timed out waiting for {waiting_for}")
        if message is None:
            reader.messages.put(None)
            raise Failure(reader.error or f"the server exited (code {process.poll()}) while "
                          f"waiting for {waiting_for}")
        if verbose:
            print("<<<", json.dumps(message)[:500])
        return message

    def expand(text):
        return text.replace("${ROOT_URI}", root_uri).replace("${ROOT}", workspace)

    try:
        index = 0
        while index < len(steps):
            kind, a, b = steps[index]
            if kind == "text":
                variables[a] = b
            elif kind == "let":
                variables[a] = eval(b, {"__builtins__": {}}, dict(variables))  # noqa: S307
            elif kind == "file":
                path = os.path.join(workspace, a)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(expand(b))
            elif kind == "send":
                message = substitute(json.loads(expand(a)), variables)
                if verbose:
                    print(">>>", json.dumps(message)[:500])
                outbox += frame(message)
            elif kind == "raw":
                outbox += a
            elif kind == "expect":
                group = []
                while index < len(steps) and steps[index][0] == "expect":
                    group.append(substitute(json.loads(expand(steps[index][1])), variables))
                    index += 1
                index -= 1
                flush()
                deadline = time.monotonic() + TIMEOUT
                while group:
                    message = next_message(deadline, f"{len(group)} expected message(s): "
                                                     f"{json.dumps(group)[:800]}")
                    problems = [matches(p, message) for p in group]
                    hit = next((k for k, problem in enumerate(problems) if problem is None), None)
                    if hit is None:
                        raise Failure("unexpected message:\n  " + json.dumps(message)[:2000] +
                                      "\nclosest mismatch: " + min(problems, key=len))
                    group.pop(hit)
            elif kind == "close":
                flush()
                process.stdin.close()
                closed = True
            elif kind == "exit":
                expected_exit = a
            elif kind == "stderr":
                stderr_patterns.append(a)
            elif kind == "nostderr":
                stderr_forbidden.append(a)
            index += 1
        flush()
        if expected_exit is not None:
            if not closed:
                process.stdin.close()
                closed = True
            try:
                code = process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                raise Failure(f"the server did not exit (expected code {expected_exit})")
            if code != expected_exit:
                raise Failure(f"exit code {code}, expected {expected_exit}")
            reader.join(timeout=TIMEOUT)
            extra = []
            while True:
                message = reader.messages.get(timeout=TIMEOUT)
                if message is None:
                    break
                extra.append(message)
            if reader.error:
                raise Failure(reader.error)
            if extra:
                raise Failure("unexpected messages at the end:\n  " +
                              "\n  ".join(json.dumps(m)[:500] for m in extra))
        else:
            # Nothing more may arrive in a short while after the last expectation.
            time.sleep(0.2)
            if not reader.messages.empty():
                message = reader.messages.get()
                if message is not None:
                    raise Failure("unexpected message at the end: " + json.dumps(message)[:2000])
                raise Failure(reader.error or f"the server exited early (code {process.poll()})")
        if process.poll() is not None and expected_exit is None:
            raise Failure(f"the server exited with {process.returncode} unexpectedly")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        stderr_file.seek(0)
        stderr_text = stderr_file.read().decode("utf-8", "replace")
        if verbose:
            sys.stderr.write(stderr_text)
    for pattern in stderr_patterns:
        if not re.search(pattern, stderr_text):
            raise Failure(f"stderr does not match /{pattern}/:\n{stderr_text[-3000:]}")
    for pattern in stderr_forbidden:
        if re.search(pattern, stderr_text):
            raise Failure(f"stderr matches /{pattern}/:\n{stderr_text[-3000:]}")
    if re.search(r"\] \[critical\]|terminate called|Segmentation fault|AddressSanitizer", stderr_text):
        raise Failure(f"the server logged a crash:\n{stderr_text[-3000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("GRAPHMEND_BIN", "build/graphmend"),
                        help="the graphmend executable (default $GRAPHMEND_BIN or build/graphmend)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("transcripts", nargs="+")
    options = parser.parse_args()
    failed = 0
    for path in options.transcripts:
        try:
            server = options.server
            if os.sep in server:  # the server runs in a temporary folder
                server = os.path.abspath(server)
            run([server, "server"], path, options.verbose)
            print(f"PASS {path}")
        except Failure as failure:
            failed += 1
            print(f"FAIL {path}\n{failure}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
