"""Documents that once killed or misled `graphmend server`: a 20,000-term `and` (deeper than any recursion
could follow), indentation CPython rejects, old Mac line ends. The server answers each with diagnostics and
keeps serving.
"""

import os
import pathlib

import pytest

from lsp_client import LspClient

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.abspath(os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend")))

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason=f"{BIN} is not built")

HEAD = "import torch\nfrom torch import nn\n\n\nclass Deep(nn.Module):\n    def forward(self, x):\n"
OTHER = "\n\nclass Other(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n"


@pytest.fixture
def client(tmp_path):
    session = LspClient([BIN, "server"], cwd=tmp_path)
    session.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {},
                                   "initializationOptions": {"debounce": 0}})
    session.notify("initialized", {})
    yield session
    assert session.close() == 0


def open_document(client, uri, text, version=1):
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version,
                                                            "text": text}})
    return client.diagnostics(uri, version, timeout=30)


def test_a_20000_term_chain_is_reported_and_the_server_keeps_serving(client, tmp_path):
    uri = (tmp_path / "deep.py").as_uri()
    text = HEAD + "        return " + " and ".join(["x"] * 20000) + "\n" + OTHER
    diagnostics = open_document(client, uri, text)
    skipped = [d for d in diagnostics if "code" not in d]
    assert len(skipped) == 1, diagnostics
    assert skipped[0]["message"].startswith("too deeply nested to analyse: ")
    assert skipped[0]["message"].endswith("graphmend skips this function")
    assert skipped[0]["severity"] == 2 and skipped[0]["range"]["start"]["line"] == 5
    assert [d["code"] for d in diagnostics if "code" in d] == ["GM201"]
    # An edit elsewhere, a hover, and the deep function made shallow again.
    lines = text.split("\n")
    print_line = lines.index("        print(x)")
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": print_line, "character": 14},
                                      "end": {"line": print_line, "character": 15}}, "text": "x.sum()"}]})
    diagnostics = client.diagnostics(uri, 2)
    assert [d["code"] for d in diagnostics if "code" in d] == ["GM201"]
    assert len([d for d in diagnostics if "code" not in d]) == 1
    assert client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": 6, "character": 20}}) is None
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                             "contentChanges": [{"text": HEAD + "        return x and x\n" + OTHER}]})
    assert sorted(d.get("code") for d in client.diagnostics(uri, 3)) == ["GM104", "GM201"]


def test_indentation_cpython_rejects_is_an_error_diagnostic(client, tmp_path):
    uri = (tmp_path / "tabs.py").as_uri()
    text = HEAD + "        y = x\n\ty = y + 1\n        return y\n" + OTHER
    diagnostics = open_document(client, uri, text)
    errors = [d for d in diagnostics if d["severity"] == 1]
    assert [(d["message"], d["range"]["start"]["line"]) for d in errors] == [
        ("TabError: inconsistent use of tabs and spaces in indentation", 7)]
    assert "code" not in errors[0]


def test_old_mac_line_ends_are_line_breaks(client, tmp_path):
    uri = (tmp_path / "mac.py").as_uri()
    text = (HEAD + "        if x.sum() > 0:\n            x = x + 1\n        return x\n" + OTHER).replace("\n", "\r")
    diagnostics = open_document(client, uri, text)
    assert [(d.get("code"), d["range"]["start"]["line"]) for d in diagnostics] == [("GM101", 6), ("GM201", 13)]


def test_a_slow_document_does_not_hold_the_diagnostics_of_another(client, tmp_path):
    """One large document (seconds of analysis) is opened first; a small one opened right after gets its
    diagnostics before the large one's: analyses run on at least two workers, even on a 2-core machine."""
    block = ("\n\nclass M{i}(nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            x = x * 2\n"
             "        print(x)\n        return x\n")
    large = "import torch\nfrom torch import nn\n" + "".join(block.format(i=i) for i in range(12000))
    large_uri, small_uri = (tmp_path / "large.py").as_uri(), (tmp_path / "small.py").as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": large_uri, "languageId": "python", "version": 1,
                                                            "text": large}})
    client.notify("textDocument/didOpen", {"textDocument": {"uri": small_uri, "languageId": "python", "version": 1,
                                                            "text": HEAD + "        print(x)\n        return x\n"}})
    assert [d["code"] for d in client.diagnostics(small_uri, 1, timeout=60)] == ["GM201"]
    early = [m for m in client.backlog if m.get("method") == "textDocument/publishDiagnostics"
             and m["params"]["uri"] == large_uri]
    assert not early, "the large document's diagnostics came first: the small one waited for it"
    assert len(client.diagnostics(large_uri, 1, timeout=120)) == 24000
