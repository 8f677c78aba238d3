"""A scripted editor session against `graphmend server`: open, type, hover, fix all, save.

Standard library only (plus pytest to run it). The server is $GRAPHMEND_BIN (default
build/graphmend), started as `graphmend server`.
"""

import os
import pathlib
import shutil
import subprocess

import pytest

from lsp_client import LspClient, apply_text_edits

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.abspath(os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend")))

MODEL = '''import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.mean() > 0:
            y = y * 2
        else:
            y = y - 1
        return y
'''

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason=f"{BIN} is not built")


def codes(diagnostics):
    return [d["code"] for d in diagnostics]


@pytest.fixture
def session(tmp_path):
    client = LspClient([BIN, "server"], cwd=tmp_path)
    result = client.request("initialize", {
        "processId": os.getpid(),
        "rootUri": tmp_path.as_uri(),
        "capabilities": {"textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}}},
        "initializationOptions": {"debounce": 0},
    })
    assert result["capabilities"]["positionEncoding"] == "utf-16"
    client.notify("initialized", {})
    yield client
    assert client.close() == 0
    assert not any("[critical]" in line for line in client.stderr_lines)


def test_open_type_hover_fix_save(session, tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    uri = path.as_uri()
    text = MODEL
    session.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}})
    assert codes(session.diagnostics(uri, 1)) == ["GM101"]

    # Type a debug print before the return, one character per didChange, like an editor.
    line = MODEL.splitlines().index("        return y")
    version = 1
    for column, ch in enumerate('        print("y", y)\n'):
        version += 1
        position = {"line": line if ch != "\n" else line, "character": column}
        edit = {"range": {"start": position, "end": position}, "text": ch}
        text = apply_text_edits(text, [{"range": edit["range"], "newText": ch}])
        session.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [edit]})
    assert text == MODEL.replace("        return y", '        print("y", y)\n        return y')
    diagnostics = session.diagnostics(uri, version)
    assert codes(diagnostics) == ["GM101", "GM201"]
    assert diagnostics[1]["range"]["start"] == {"line": line, "character": 8}

    # Hover on the condition explains the break and previews the predicated rewrite.
    hover = session.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": {"line": 11, "character": 12}})
    value = hover["contents"]["value"]
    assert "GM101" in value and "Dynamo graph break" in value
    assert "torch.where" in value

    # Fix all: offered once, resolved on demand, applied by the client.
    actions = session.request("textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    assert [a["kind"] for a in actions] == ["source.fixAll.graphmend"]
    assert "edit" not in actions[0]
    resolved = session.request("codeAction/resolve", actions[0])
    edits = resolved["edit"]["changes"][uri]
    fixed = apply_text_edits(text, edits)
    assert "torch.where" in fixed
    version += 1
    session.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [{"range": e["range"], "text": e["newText"]} for e in edits]})
    assert "GM101" not in codes(session.diagnostics(uri, version))

    # Save: the file on disk is what the editor holds; `graphmend check --fix` agrees.
    path.write_text(fixed)
    session.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    original = tmp_path / "original.py"
    original.write_text(text)
    subprocess.run([BIN, "check", "--fix", str(original)], capture_output=True, timeout=60)
    assert original.read_text() == fixed

    # A quick fix via executeCommand: nothing left that fix-all would change.
    assert session.request("workspace/executeCommand", {
        "command": "graphmend.applyAutofix", "arguments": [{"uri": uri, "version": version}]}) is None

    session.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def test_pull_client_and_cancellation(tmp_path):
    client = LspClient([BIN, "server"], cwd=tmp_path)
    result = client.request("initialize", {
        "capabilities": {"textDocument": {"diagnostic": {}},
                         "general": {"positionEncodings": ["utf-8"]}}})
    assert result["capabilities"]["positionEncoding"] == "utf-8"
    assert result["capabilities"]["diagnosticProvider"]["identifier"] == "graphmend"
    client.notify("initialized", {})
    uri = (tmp_path / "m.py").as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": MODEL}})
    report = client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
    assert report["kind"] == "full" and codes(report["items"]) == ["GM101"]
    again = client.request("textDocument/diagnostic", {
        "textDocument": {"uri": uri}, "previousResultId": report["resultId"]})
    assert again == {"kind": "unchanged", "resultId": report["resultId"]}
    # A long-polling workspace/diagnostic with nothing new stays open until cancelled.
    request_id = client.request_async("workspace/diagnostic", {
        "previousResultIds": [{"uri": uri, "value": report["resultId"]}]})
    client.notify("$/cancelRequest", {"id": request_id})
    response = client.wait_for(lambda m: m.get("id") == request_id)
    assert response["error"]["code"] == -32800
    assert client.close() == 0


@pytest.mark.skipif(shutil.which("true") is None, reason="needs a POSIX userland")
def test_server_survives_garbage_and_exits_on_eof(tmp_path):
    process = subprocess.Popen([BIN, "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=tmp_path)
    out, err = process.communicate(b"garbage\r\n\r\nContent-Length: 5\r\n\r\n{bad}" * 3, timeout=30)
    assert process.returncode == 1
    # Only protocol on stdout: three ParseErrors with null ids.
    assert out.count(b"Content-Length: ") == 3
    assert out.count(b'"code":-32700') == 3
    assert b"input closed" in err
