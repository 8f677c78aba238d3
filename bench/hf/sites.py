"""Break sites: where in transformers' source a Dynamo graph break happened, and how sites match.

A break event carries Dynamo's user stack. Its *site* is the innermost frame that lies in the
transformers package (the original install or a fixed copy of it), named by the path relative to the
package root, the enclosing function's qualified name, and the normalized text of the statement that
contains the line. Sites match by (file, function, statement text), never by line number, so a site
found in the original package matches the same site in a fixed copy even when the fix moved lines.

Only the standard library is used here, so the harness logic is testable without torch.
"""
from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass, field

# The package whose frames are sites. bench/libs sets it to the library under test (timm, kornia, ...);
# it only matters for paths outside the `roots` handed to package_relpath.
PACKAGE = "transformers"


def package_relpath(filename: str, roots: tuple[str, ...] = (), package: str | None = None) -> str | None:
    """Path of `filename` relative to a package root (`package`, default PACKAGE: transformers), or None
    when it is not in one.

    `roots` are package directories to try first (the original install, a fixed copy); otherwise the
    last `/<package>/` component of the path is taken as the root.
    """
    if not filename:
        return None
    fn = os.path.abspath(filename)
    for root in roots:
        root = os.path.abspath(root).rstrip(os.sep) + os.sep
        if fn.startswith(root):
            return fn[len(root):].replace(os.sep, "/")
    mark = os.sep + (package or PACKAGE) + os.sep
    i = fn.rfind(mark)
    if i < 0:
        return None
    return fn[i + len(mark):].replace(os.sep, "/")


def normalize_stmt(text: str) -> str:
    """Collapse whitespace and drop comments so reformatting does not split a site."""
    out = []
    for line in text.splitlines():
        # drop a trailing comment (naive about '#' in strings, which is fine for matching keys)
        if "#" in line and not re.search(r"[\"'].*#.*[\"']", line):
            line = line.split("#", 1)[0]
        out.append(line.strip())
    return " ".join(" ".join(out).split())


@dataclass
class _Stmt:
    start: int
    end: int
    text: str
    function: str


class _Index(ast.NodeVisitor):
    """Every statement of a module with its line span, header text and enclosing function."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.stmts: list[_Stmt] = []
        self.scope: list[str] = []

    def _header(self, node: ast.stmt) -> tuple[int, int, str]:
        start = node.lineno
        end = getattr(node, "end_lineno", start) or start
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            # compound statement: its own text is the header, up to the first body statement
            first = body[0].lineno
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
                start = node.decorator_list[0].lineno
            hdr_end = max(start, first - 1) if first > start else start
            text = "\n".join(self.lines[start - 1:hdr_end])
            if first == start:  # `if x: y` on one line: keep up to the colon
                seg = self.lines[start - 1]
                text = seg[: seg.find(":", node.col_offset) + 1] if ":" in seg else seg
            return start, hdr_end, text
        return start, end, "\n".join(self.lines[start - 1:end])

    def generic_visit(self, node):
        if isinstance(node, ast.stmt):
            s, e, t = self._header(node)
            self.stmts.append(_Stmt(s, e, normalize_stmt(t), ".".join(self.scope) or "<module>"))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.scope.append(node.name)
            super().generic_visit(node)
            self.scope.pop()
        else:
            super().generic_visit(node)


@functools.lru_cache(maxsize=512)
def _index(filename: str) -> tuple[_Stmt, ...]:
    try:
        with open(filename, encoding="utf-8") as f:
            src = f.read()
        tree = ast.parse(src)
    except (OSError, SyntaxError, ValueError):
        return ()
    idx = _Index(src.splitlines())
    idx.visit(tree)
    return tuple(idx.stmts)


def statement_at(filename: str, lineno: int) -> tuple[int, int, str, str] | None:
    """(start, end, normalized text, enclosing function) of the innermost statement at `lineno`.

    For a compound statement whose header holds the line (`if cond:`, `for x in y:`), the header is
    the statement; a line inside a body resolves to the body statement. On a one-line compound
    statement (`if c: raise E`), the header wins: Dynamo names lines, not columns.
    """
    best = None
    for st in _index(filename):
        if st.start <= lineno <= st.end:
            if best is None or (st.end - st.start, -st.start) < (best.end - best.start, -best.start):
                best = st
    if best is None:
        return None
    return best.start, best.end, best.text, best.function


@dataclass
class Frame:
    file: str  # relative to the transformers package root
    line: int
    function: str  # qualified name from the source (Class.method), or the code name
    stmt: str
    stmt_start: int
    stmt_end: int


def frame_of(filename: str, lineno: int, code_name: str, roots: tuple[str, ...] = ()) -> Frame | None:
    rel = package_relpath(filename, roots)
    if rel is None:
        return None
    st = statement_at(filename, lineno)
    if st is None:
        return Frame(rel, lineno, code_name, "", lineno, lineno)
    start, end, text, func = st
    return Frame(rel, lineno, func if func != "<module>" else code_name, text, start, end)


@dataclass
class Site:
    kind: str  # Dynamo's graph-break type of the root cause, e.g. "Data-dependent branching"
    gb_id: str  # GBxxxx of the root cause where Dynamo names one
    file: str
    function: str
    line: int
    stmt: str
    in_loop: bool = False  # the break made Dynamo skip a frame because it sat in a loop
    chain: list[dict] = field(default_factory=list)  # all transformers frames, outermost first

    def key(self) -> tuple[str, str, str]:
        return site_key(self.file, self.function, self.stmt)


def site_key(file: str, function: str, stmt: str) -> tuple[str, str, str]:
    return (file, function, normalize_stmt(stmt))


def _key_of(d: dict) -> tuple[str, str, str]:
    return site_key(d["file"], d["function"], d["stmt"])


COMPREHENSION_FRAMES = {"<dictcomp>", "<listcomp>", "<setcomp>", "<genexpr>"}


def distinct_sites(events: list[dict]) -> list[dict]:
    """Merge break events into distinct sites (by key), counting events and modes per site."""
    by: dict[tuple, dict] = {}
    for ev in events:
        if ev.get("file") is None:
            continue
        k = _key_of(ev)
        s = by.get(k)
        if s is None:
            s = {kk: ev[kk] for kk in ("kind", "gb_id", "file", "function", "line", "stmt", "stmt_start",
                                       "stmt_end") if kk in ev}
            s["events"] = 0
            s["modes"] = []
            s["in_loop"] = False
            s["chain"] = ev.get("chain", [])
            by[k] = s
        s["events"] += 1
        s["in_loop"] = s["in_loop"] or bool(ev.get("in_loop"))
        inner = (ev.get("innermost") or {}).get("function", "")
        if inner in COMPREHENSION_FRAMES and "Failed to handle graph break gracefully" in ev.get("reason", ""):
            # Python 3.11 runs a comprehension as its own frame; when its caller already fell back to
            # eager, Dynamo meets that frame alone, with an iterator argument it cannot trace
            s["comprehension_frame"] = True
        m = ev.get("mode")
        if m and m not in s["modes"]:
            s["modes"].append(m)
        # a loop-skip event names the same site as its cause; keep the cause's kind
        if s.get("kind") == "graph break in loop" and ev.get("kind") != "graph break in loop":
            s["kind"], s["gb_id"] = ev["kind"], ev.get("gb_id", "")
    return sorted(by.values(), key=lambda s: (s["file"], s.get("stmt_start", 0), s["function"], s["stmt"]))


def compare_sites(before: list[dict], after: list[dict]) -> dict:
    """Which sites of `before` are gone in `after`, which remain, which are new (by key)."""
    bk = {_key_of(s): s for s in before}
    ak = {_key_of(s): s for s in after}
    fixed = [bk[k] for k in bk if k not in ak]
    left = [bk[k] for k in bk if k in ak]
    new = [ak[k] for k in ak if k not in bk]
    return {"fixed": fixed, "left": left, "new": new}


# ------------------------------------------------------------------------------------------------
# detection: matching graphmend findings (ruff's JSON shape) against real break sites


def finding_hits_frame(finding: dict, frame: dict) -> bool:
    """A finding hits a frame when it is in the same file and its start row lies in the statement."""
    row = finding["location"]["row"]
    end = finding.get("end_location", {}).get("row", row)
    lo, hi = frame.get("stmt_start", frame["line"]), frame.get("stmt_end", frame["line"])
    return finding["_rel"] == frame["file"] and row <= hi and end >= lo


def finding_was_traced(finding: dict, lines: set[int], positions: set[tuple[int, int]] | None) -> bool:
    """Did Dynamo step an instruction inside the finding's range?

    With instruction positions (line, 0-based character column) the test is exact: a finding on the
    tensor operand of `dtype == float16 and isinf(h).any()` was not reached in a float32 run even
    though its line was. Without them (older results) any traced line of the range counts.
    """
    row = finding["location"]["row"]
    end = finding.get("end_location", {}).get("row", row)
    if positions is None:
        return any(r in lines for r in range(row, end + 1))
    lo = (row, finding["location"].get("column", 1) - 1)
    hi = (end, finding.get("end_location", {}).get("column", 10**9) - 1)
    return any(lo <= p < hi for p in positions if row <= p[0] <= end)


def score_detection(findings: list[dict], sites: list[dict], executed: dict[str, set[int]],
                    positions: dict[str, set[tuple[int, int]]] | None = None) -> dict:
    """Recall and precision of findings against the real break sites of one model.

    - A real site is *found* when some finding hits its innermost frame or any transformers frame
      on its stack (a finding at the call site of a helper that breaks counts: that is where a fix
      or a suppression would go).
    - A *secondary* site is a comprehension that Dynamo compiled as a frame of its own because the
      function around it had already fallen back to eager (`comprehension_frame`). It has no finding
      of its own to hit; it counts as found *by its cause* when a found site's stack passes through
      that enclosing function (the break that made the function fall back). Reported apart.
    - Precision is over findings whose range Dynamo actually traced (an instruction inside it, see
      `finding_was_traced`; lines when positions are missing): only there can Dynamo have confirmed
      or refuted them. Such a finding is *true* when it hits a frame of some real site, *false*
      otherwise. Findings in code Dynamo never traced are unverified, not counted either way.
    `findings` carry `_rel` (package-relative path); `executed` maps relative path to line numbers,
    `positions` to (line, column) pairs.
    """
    found, missed = [], []
    hit_findings: set[int] = set()
    secondary = []
    for s in sites:
        frames = [s] + [f for f in s.get("chain", []) if f.get("file")]
        hit = False
        for i, f in enumerate(findings):
            if any(finding_hits_frame(f, fr) for fr in frames):
                hit = True
                hit_findings.add(i)
        if hit:
            found.append(s)
        elif s.get("comprehension_frame"):
            secondary.append(s)
        else:
            missed.append(s)
    through = {(fr.get("file"), fr.get("function")) for s in found for fr in [s] + s.get("chain", [])}
    found_by_cause = [s for s in secondary if (s["file"], s["function"]) in through]
    missed += [s for s in secondary if (s["file"], s["function"]) not in through]
    tp, fp, unverified = [], [], []
    for i, f in enumerate(findings):
        pos = positions.get(f["_rel"], set()) if positions is not None else None
        ran = finding_was_traced(f, executed.get(f["_rel"], set()), pos)
        if i in hit_findings:
            tp.append(f)
        elif ran:
            fp.append(f)
        else:
            unverified.append(f)
    return {"found": found + found_by_cause, "found_by_cause": found_by_cause, "missed": missed,
            "true_findings": tp, "false_findings": fp, "unverified_findings": unverified}
