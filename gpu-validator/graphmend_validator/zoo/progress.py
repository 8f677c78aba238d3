"""Progress on stderr: a bar redrawn in place on a terminal, one line per finished item otherwise."""

import sys
import time


class ProgressBar:
    def __init__(self, total, reused, quiet=False, stream=None):
        self.total = total
        self.done = reused
        self.failed = 0
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.began = time.monotonic()
        self.ran = 0

    def _bar(self):
        width = 30
        filled = int(width * self.done / self.total) if self.total else width
        rate = self.ran / (time.monotonic() - self.began) if self.ran else 0.0
        left = self.total - self.done
        eta = f", about {left / rate / 60:.1f} min left" if rate > 0 and left else ""
        failed = f", {self.failed} not ok" if self.failed else ""
        return f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} items{failed}{eta}"

    def start(self, message):
        if self.quiet:
            return
        print(f"graphmend validate: {message}", file=self.stream, flush=True)
        if self.tty:
            print(self._bar(), end="\r", file=self.stream, flush=True)

    def item_done(self, record):
        self.done += 1
        self.ran += 1
        if record["status"] != "ok":
            self.failed += 1
        if self.quiet:
            return
        line = f"[{self.done}/{self.total}] {record['id']}: {describe(record)} ({record['wall_s']:.1f} s)"
        if self.tty:
            print("\x1b[2K" + line, file=self.stream)
            print(self._bar(), end="\r", file=self.stream, flush=True)
        else:
            print(f"graphmend validate: {line}", file=self.stream, flush=True)

    def close(self):
        if self.tty and not self.quiet:
            print("\x1b[2K", end="", file=self.stream, flush=True)


def describe(record):
    result = record.get("result") or {}
    status = record["status"]
    if status in ("ok", "outputs_differ", "not_deployable") and result.get("original"):
        original = result["original"]["graph_break_count"]
        fixed = result["fixed"]["graph_break_count"] if result.get("fixed") else None
        breaks = f"breaks {original}" + (f" -> {fixed}" if fixed is not None else "")
        return f"{status}, {breaks}"
    error = result.get("error") if isinstance(result, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return f"{status}: {error.get('kind')}: {str(error['message']).splitlines()[0][:120]}"
    return f"{status}: {record.get('message') or ''}".rstrip(": ")
