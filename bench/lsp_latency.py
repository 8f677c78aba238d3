#!/usr/bin/env python
"""Language server latency and memory: `graphmend server` against `ruff server`, same session.

    .venv/bin/python bench/lsp_latency.py [--graphmend build/graphmend] [--ruff .venv/bin/ruff]
                                          [--quick] [--no-report]

Scenarios, each replayed on both servers in the same run:
  * typing: hundreds of single-character edits (type a statement into a method, then delete it, at
    several places) on the largest transformers modeling file and on a 20,000-line file; for each
    edit, the time from sending didChange to receiving publishDiagnostics for that version. The
    client waits for each edit's diagnostics before the next (closed loop), and graphmend's
    debounce is set to 0 (initializationOptions) so only the work itself is measured.
  * memory: peak RSS (VmHWM) of the server with 200 modeling files open and diagnosed.

Prints p50/p99 per server and the graphmend/ruff ratios; writes bench/results/lsp_latency.json and
the `lsp-latency` section of docs/benchmarks.md (unless --no-report). Standard library only.
"""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import common  # noqa: E402

TYPED = "print(hidden_states.mean())"


class Server:
    """A language server process and a minimal client for it."""

    def __init__(self, name: str, command: list[str], init_options: dict):
        self.name = name
        # Server logs go to $LSP_BENCH_STDERR when set (for debugging the benchmark; both servers append;
        # $LSP_BENCH_LOG_LEVEL=debug shows which analyses were incremental), else nowhere.
        self.stderr = open(os.environ.get("LSP_BENCH_STDERR", os.devnull), "a")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr, cwd=tempfile.gettempdir())
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {
            "processId": os.getpid(),
            "rootUri": None,
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "textDocument": {"publishDiagnostics": {"versionSupport": True},
                                 "synchronization": {"didSave": True}},
            },
            "initializationOptions": init_options,
        })
        self.notify("initialized", {})

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = stream.read(1)
                if not byte:
                    self.inbox.put(None)
                    return
                header += byte
            length = int(re.search(rb"Content-Length: *(\d+)", header, re.I).group(1))
            message = json.loads(stream.read(length))
            message["_received"] = time.perf_counter()
            self.inbox.put(message)

    def send(self, message: dict) -> None:
        body = json.dumps(dict(message, jsonrpc="2.0")).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params) -> None:
        self.send({"method": method, "params": params})

    def next_message(self, timeout: float) -> dict:
        message = self.inbox.get(timeout=timeout)
        if message is None:
            raise RuntimeError(f"{self.name} server exited")
        if "method" in message and "id" in message:  # server-to-client request: accept it
            self.send({"id": message["id"], "result": None})
        return message

    def request(self, method: str, params=None, timeout: float = 120.0):
        self.next_id += 1
        request_id = self.next_id
        self.send({"id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self.next_message(max(0.01, deadline - time.monotonic()))
            if message.get("id") == request_id and "method" not in message:
                return message.get("result")

    def wait_diagnostics(self, uri: str, version: int | None, timeout: float = 120.0) -> dict:
        """The first publishDiagnostics for `uri` at `version` (or later); servers that omit the
        version are matched by order (the client waits for each edit before the next)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.next_message(max(0.01, deadline - time.monotonic()))
            if message.get("method") != "textDocument/publishDiagnostics":
                continue
            params = message["params"]
            if params["uri"] != uri:
                continue
            got = params.get("version")
            if version is None or got is None or got >= version:
                return message

    def peak_rss_mb(self) -> float:
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        try:
            self.request("shutdown", timeout=30)
            self.notify("exit", None)
            self.process.wait(timeout=30)
        except Exception:  # noqa: BLE001 - a benchmark must not hang on a bad shutdown
            self.process.kill()
            self.process.wait()
        self.stderr.close()


def modeling_files() -> list[str]:
    pattern = os.path.join(ROOT, ".venv/lib/python3*/site-packages/transformers/models/*/modeling_*.py")
    files = sorted(glob.glob(pattern))
    if not files:
        sys.exit(f"no transformers modeling files under {pattern}")
    return files


def make_big_file(files: list[str], lines_wanted: int, directory: str) -> str:
    """About `lines_wanted` lines of real model code: whole modeling files, concatenated."""
    out: list[str] = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        if len(out) + len(lines) > lines_wanted:
            # Cut at the last top-level statement that fits, so the file stays valid Python.
            room = lines_wanted - len(out)
            cut = max((i for i in range(1, room) if lines[i].startswith(("class ", "def ", "@"))),
                      default=0)
            out.extend(lines[:cut])
            break
        out.extend(lines)
    while len(out) < lines_wanted:
        out.append("")
    path = os.path.join(directory, "big_model_20k.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return path


def typing_script(text: str, anchors: int) -> list[tuple[dict, str]]:
    """Single-character edits: at each anchor (an assignment in a method), open a new line, type
    TYPED one character at a time, delete it one character at a time, and remove the line."""
    lines = text.split("\n")
    candidates = [i for i, line in enumerate(lines)
                  if re.match(r"^        (hidden_states|x|y|out|output|logits|attn_output)\w* = ", line)
                  and line.isascii()]
    if not candidates:
        candidates = [i for i, line in enumerate(lines) if line.startswith("        ") and line.isascii()]
    step = max(1, len(candidates) // anchors)
    chosen = candidates[::step][:anchors]
    edits: list[tuple[dict, str]] = []
    for line in reversed(chosen):  # bottom-up: earlier anchors keep their line numbers
        end = len(lines[line])
        indent = " " * (len(lines[line]) - len(lines[line].lstrip()))
        edits.append(({"start": {"line": line, "character": end}, "end": {"line": line, "character": end}},
                      "\n" + indent))
        row, col = line + 1, len(indent)
        for i, ch in enumerate(TYPED):
            pos = {"line": row, "character": col + i}
            edits.append(({"start": pos, "end": pos}, ch))
        for i in reversed(range(len(TYPED))):
            edits.append(({"start": {"line": row, "character": col + i},
                           "end": {"line": row, "character": col + i + 1}}, ""))
        edits.append(({"start": {"line": line, "character": end}, "end": {"line": row, "character": col}}, ""))
    return edits


KINDS = {"(the edited function)": "incremental", "(held:": "held", "(provisional:": "provisional",
         "(whole file)": "whole file"}


def answer_kinds(log_path: str) -> dict[int, str]:
    """How graphmend first answered each version, from its debug log: the edited function only, held
    (the edit broke the syntax: the last findings moved through it), provisional (the reparse was past
    its budget: the same, the real analysis once the user pauses), or the whole file."""
    first: dict[int, str] = {}
    if not os.path.exists(log_path):
        return first
    with open(log_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            match = re.search(r"\] analysed .* v(\d+): ", line)
            if not match:
                continue
            kind = next((k for marker, k in KINDS.items() if marker in line), "other")
            first.setdefault(int(match.group(1)), kind)
    return first


def split_by_kind(session: dict, kinds: dict[int, str]) -> dict:
    """Counts of each kind of first answer, and the latency of the real analyses (incremental, whole
    file) apart from the stand-ins (held, provisional)."""
    counts = {kind: 0 for kind in KINDS.values()}
    real = []
    for version, ms in session["latency_by_version"].items():
        kind = kinds.get(version, "other")
        counts[kind] = counts.get(kind, 0) + 1
        if kind in ("incremental", "whole file"):
            real.append(ms)
    out = {"answers": counts, "real_edits": len(real)}
    if real:
        out["real_p50_ms"] = percentile(real, 0.5)
        out["real_p99_ms"] = percentile(real, 0.99)
    return out


def format_answers(split: dict) -> str:
    text = ", ".join(f"{count} {kind}" for kind, count in split.get("answers", {}).items() if count)
    if split.get("real_edits"):
        text += f"; real analyses alone p50 / p99 {split['real_p50_ms']:.2f} / {split['real_p99_ms']:.2f} ms"
    return text


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def typing_session(server: Server, path: str, anchors: int) -> dict:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    uri = "file://" + path
    t0 = time.perf_counter()
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                            "version": 1, "text": text}})
    first = server.wait_diagnostics(uri, 1)
    open_ms = (first["_received"] - t0) * 1000
    latencies = []
    version = 1
    for rng, new_text in typing_script(text, anchors):
        version += 1
        sent = time.perf_counter()
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                 "contentChanges": [{"range": rng, "text": new_text}]})
        message = server.wait_diagnostics(uri, version)
        latencies.append((message["_received"] - sent) * 1000)
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return {"edits": len(latencies), "open_ms": open_ms, "p50_ms": percentile(latencies, 0.5),
            "p99_ms": percentile(latencies, 0.99), "max_ms": max(latencies),
            "mean_ms": statistics.fmean(latencies),
            "latency_by_version": {v + 2: ms for v, ms in enumerate(latencies)}}


def memory_session(server: Server, files: list[str]) -> dict:
    t0 = time.perf_counter()
    pending = set()
    for i, path in enumerate(files):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        uri = "file://" + path
        pending.add(uri)
        server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                                "version": 1, "text": text}})
    deadline = time.monotonic() + 600
    while pending:
        message = server.next_message(max(0.01, deadline - time.monotonic()))
        if message.get("method") == "textDocument/publishDiagnostics":
            pending.discard(message["params"]["uri"])
    elapsed = time.perf_counter() - t0
    return {"files": len(files), "all_diagnosed_s": elapsed, "peak_rss_mb": server.peak_rss_mb()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphmend", default=os.environ.get("GRAPHMEND_BIN", os.path.join(ROOT, "build/graphmend")))
    parser.add_argument("--ruff", default=os.path.join(ROOT, ".venv/bin/ruff"))
    parser.add_argument("--anchors", type=int, default=6, help="places typed at (56 edits each)")
    parser.add_argument("--files", type=int, default=200, help="files open for the memory scenario")
    parser.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK") == "1")
    parser.add_argument("--no-report", action="store_true", help="do not write docs/benchmarks.md")
    parser.add_argument("--only", choices=["typing", "memory"], help="run one scenario (no report)")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "lsp_latency.json"))
    args = parser.parse_args()
    if args.quick:
        args.anchors, args.files = 2, 40

    files = modeling_files()
    # Copies outside the virtual environment: ruff excludes site-packages and .venv by default.
    workdir = tempfile.mkdtemp(prefix="gm-lsp-bench-")
    by_size = sorted(files, key=os.path.getsize, reverse=True)
    copies = []
    for path in by_size[:max(args.files, 1)]:
        copy = os.path.join(workdir, os.path.basename(os.path.dirname(path)) + "_" + os.path.basename(path))
        shutil.copyfile(path, copy)
        copies.append(copy)
    largest = copies[0]
    big = make_big_file(files, 20000, workdir)
    biggest_200 = copies[:args.files]

    # graphmend logs at debug level to a file: each analysis says which path it took (see answer_kinds).
    server_log = os.path.join(workdir, "graphmend-server.log")
    servers = {
        "graphmend": ([args.graphmend, "server", "--log-level", "debug", "--log-file", server_log], {"debounce": 0}),
        "ruff": ([args.ruff, "server"], {}),
    }
    results: dict = {"machine": common.machine(), "date": dt.datetime.now(dt.timezone.utc).isoformat(),
                     "versions": {"graphmend": common.tool_version([args.graphmend, "version"]),
                                  "ruff": common.tool_version([args.ruff, "--version"])},
                     "scenarios": {}}
    scenarios = [("typing: largest modeling file (" + os.path.relpath(by_size[0], ROOT).split("models/")[-1] + ")",
                  largest), ("typing: 20,000-line file", big)]
    for label, path in scenarios if args.only != "memory" else []:
        with open(path, encoding="utf-8") as f:
            line_count = f.read().count("\n")
        entry = {"file": path, "lines": line_count, "bytes": os.path.getsize(path)}
        for name, (command, options) in servers.items():
            if os.path.exists(server_log):
                os.remove(server_log)
            server = Server(name, command, options)
            try:
                entry[name] = typing_session(server, path, args.anchors)
            finally:
                server.close()
            r = entry[name]
            if name == "graphmend":
                r.update(split_by_kind(r, answer_kinds(server_log)))
                print(f"  graphmend answers: {format_answers(r)}", flush=True)
            print(f"{label} ({line_count} lines) {name:9s}: {r['edits']} edits, p50 {r['p50_ms']:.2f} ms, "
                  f"p99 {r['p99_ms']:.2f} ms, max {r['max_ms']:.2f} ms, open {r['open_ms']:.1f} ms", flush=True)
        entry["p50_ratio"] = entry["graphmend"]["p50_ms"] / entry["ruff"]["p50_ms"]
        entry["p99_ratio"] = entry["graphmend"]["p99_ms"] / entry["ruff"]["p99_ms"]
        print(f"  graphmend/ruff: p50 x{entry['p50_ratio']:.2f}, p99 x{entry['p99_ratio']:.2f}", flush=True)
        results["scenarios"][label] = entry

    memory: dict = {}
    for name, (command, options) in servers.items() if args.only != "typing" else []:
        server = Server(name, command, options)
        try:
            memory[name] = memory_session(server, biggest_200)
        finally:
            server.close()
        print(f"memory, {args.files} files open, {name:9s}: peak RSS {memory[name]['peak_rss_mb']:.1f} MB "
              f"(all diagnosed after {memory[name]['all_diagnosed_s']:.2f} s)", flush=True)
    if memory:
        memory["rss_ratio"] = memory["graphmend"]["peak_rss_mb"] / memory["ruff"]["peak_rss_mb"]
        print(f"  graphmend/ruff: peak RSS x{memory['rss_ratio']:.2f}", flush=True)
    results["memory"] = memory
    if args.only:
        return 0

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    if not args.no_report:
        rows = ["| scenario | lines | edits | graphmend p50 / p99 (ms) | ruff p50 / p99 (ms) | ratio p50 / p99 "
                "| graphmend's analyses |",
                "|---|---:|---:|---:|---:|---:|---|"]
        for label, e in results["scenarios"].items():
            g, r = e["graphmend"], e["ruff"]
            rows.append(f"| {label} | {e['lines']} | {g['edits']} | {g['p50_ms']:.2f} / {g['p99_ms']:.2f} | "
                        f"{r['p50_ms']:.2f} / {r['p99_ms']:.2f} | {e['p50_ratio']:.2f} / {e['p99_ratio']:.2f} "
                        f"| {format_answers(g)} |")
        body = "\n".join([
            "## Language server latency and memory (`bench/lsp_latency.py`)", "",
            f"Machine: {common.machine_line(results['machine'])}; {results['versions']['graphmend']}, "
            f"{results['versions']['ruff']}. Edit to diagnostics, closed loop, graphmend debounce 0.", "",
            *rows, "",
            "graphmend's first answer to each edit: *incremental* re-read only the edited function (equal to "
            "a whole-file analysis: tests/unit/incremental_test.cpp); *held* and *provisional* are stand-ins, "
            "the last findings moved through the edit, while the edit broke the syntax (an unclosed bracket) "
            "or its reparse was past its budget (four times the document's median reparse, at least 2 ms); "
            "the real analysis follows once the user pauses for "
            "10 ms, which a closed loop never does (docs/lsp.md, Performance). The latency of the real "
            "analyses alone is given after the counts.", "",
            f"Peak RSS with {args.files} modeling files open: graphmend "
            f"{memory['graphmend']['peak_rss_mb']:.1f} MB, ruff {memory['ruff']['peak_rss_mb']:.1f} MB "
            f"(ratio {memory['rss_ratio']:.2f}).",
        ])
        common.replace_section(os.path.join(ROOT, "docs", "benchmarks.md"), "lsp-latency", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
