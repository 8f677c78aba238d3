"""Jupyter notebooks through `graphmend server` (LSP 3.17 notebook sync): the Python cells of a notebook
are analysed as one text, so a function defined in one cell and compiled in another is found; diagnostics
go to the cell's own document with cell-relative ranges; hovers, quick fixes and fix-all on a cell's
document answer in that cell's positions and edit the cell documents; cell edits and inserted or removed
cells are followed."""
import os
import pathlib

import pytest

from lsp_client import LspClient, apply_text_edits

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.abspath(os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend")))

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason=f"{BIN} is not built")

MODEL = (
    "%matplotlib inline\n"
    "import torch\n"
    "\n"
    "def step(x):\n"
    "    if x.sum() > 0:\n"
    "        x = x + x\n"
    "    return x + 0"
)
COMPILE = "!nvidia-smi -L\nfast = torch.compile(step)"


def cell_uri(notebook, fragment):
    return "vscode-notebook-cell:" + notebook.as_posix() + "#" + fragment


def edits_for(edit, uri):
    if "documentChanges" in edit:
        return [e for change in edit["documentChanges"] if change["textDocument"]["uri"] == uri for e in change["edits"]]
    return edit.get("changes", {}).get(uri, [])


@pytest.fixture
def session(tmp_path):
    notebook = tmp_path / "nb.ipynb"
    log = tmp_path / "server.log"
    client = LspClient([BIN, "server", "--log-level", "debug", "--log-file", str(log)], cwd=tmp_path)
    init = client.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(),
                                         "capabilities": {"workspace": {"workspaceEdit": {"documentChanges": True}}},
                                         "initializationOptions": {"debounce": 0}})
    client.notify("initialized", {})
    sync = init["capabilities"]["notebookDocumentSync"]
    assert sync["notebookSelector"] == [{"notebook": {"notebookType": "jupyter-notebook"},
                                         "cells": [{"language": "python"}]}]
    uris = {"model": cell_uri(notebook, "W0"), "notes": cell_uri(notebook, "W1"), "compile": cell_uri(notebook, "W2")}
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": notebook.as_uri(), "notebookType": "jupyter-notebook", "version": 1, "cells": [
            {"kind": 2, "document": uris["model"]},
            {"kind": 1, "document": uris["notes"]},
            {"kind": 2, "document": uris["compile"]},
        ]},
        "cellTextDocuments": [
            {"uri": uris["model"], "languageId": "python", "version": 1, "text": MODEL},
            {"uri": uris["notes"], "languageId": "markdown", "version": 1, "text": "# if x.sum() > 0: nothing here"},
            {"uri": uris["compile"], "languageId": "python", "version": 1, "text": COMPILE},
        ],
    })
    yield client, notebook, uris
    assert client.close() == 0
    # Cell edits reach the notebook's tree as edits of its joined text, never out of step with it.
    text = log.read_text()
    assert "out of sync" not in text and "opened notebook" in text


def published(client, uri, predicate=lambda d: True):
    message = client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri and predicate(m["params"]["diagnostics"]))
    return message["params"]


def test_diagnostics_go_to_the_cell_that_holds_the_break(session):
    client, notebook, uris = session
    model = published(client, uris["model"])
    assert model["version"] == 1
    [diagnostic] = model["diagnostics"]
    assert diagnostic["code"] == "GM101"
    # Line 4 of the cell (0-based), `x.sum() > 0`: the cell's own positions, not the notebook's.
    assert diagnostic["range"] == {"start": {"line": 4, "character": 7}, "end": {"line": 4, "character": 18}}
    assert published(client, uris["compile"])["diagnostics"] == []
    # Nothing for the markdown cell, nothing under the notebook's own URI.
    assert not any(m.get("method") == "textDocument/publishDiagnostics"
                   and m["params"]["uri"] in (uris["notes"], notebook.as_uri()) for m in client.backlog)

    hover = client.request("textDocument/hover", {"textDocument": {"uri": uris["model"]},
                                                  "position": {"line": 4, "character": 10}})
    assert "GM101" in hover["contents"]["value"]
    assert hover["range"] == diagnostic["range"]
    # Where `step` is compiled: the other cell's document, in its lines (and named so in the hover).
    [related] = diagnostic["relatedInformation"]
    assert related["location"]["uri"] == uris["compile"]
    assert related["location"]["range"]["start"] == {"line": 1, "character": 21}
    assert "- cell 3, line 2: traced by torch.compile" in hover["contents"]["value"]
    assert client.request("textDocument/hover", {"textDocument": {"uri": uris["compile"]},
                                                 "position": {"line": 1, "character": 3}}) is None


def test_quick_fix_and_fix_all_edit_the_cell_documents(session):
    client, notebook, uris = session
    [diagnostic] = published(client, uris["model"])["diagnostics"]
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uris["model"]}, "range": diagnostic["range"],
        "context": {"diagnostics": [diagnostic], "only": ["quickfix"]}})
    fix = next(a for a in actions if a["kind"] == "quickfix" and a.get("isPreferred"))
    assert fix["diagnostics"][0]["range"] == diagnostic["range"]
    [change] = fix["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": uris["model"], "version": 1}
    fixed = apply_text_edits(MODEL, change["edits"])
    assert fixed == MODEL.replace("    if x.sum() > 0:\n        x = x + x\n", "    x = torch.where(x.sum() > 0, x + x, x)\n")
    suppress = next(a for a in actions if "noqa" in a["title"])
    assert apply_text_edits(MODEL, edits_for(suppress["edit"], uris["model"])).splitlines()[4].endswith("# noqa: GM101")

    # Fix all, asked on the compiling cell the way VS Code's notebook.codeActionsOnSave asks: every cell.
    [fix_all] = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uris["compile"]}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["notebook.source.fixAll"]}})
    assert fix_all["kind"] == "notebook.source.fixAll.graphmend"
    if "edit" not in fix_all:
        fix_all = client.request("codeAction/resolve", fix_all)
    assert apply_text_edits(MODEL, edits_for(fix_all["edit"], uris["model"])) == fixed
    assert edits_for(fix_all["edit"], uris["compile"]) == []


def test_cell_edits_and_new_cells_are_followed(session):
    client, notebook, uris = session
    published(client, uris["model"], lambda d: len(d) == 1)
    nb = notebook.as_uri()

    # Edit the compiling cell: `step` is no longer compiled, so the model cell is clean.
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb, "version": 2},
        "change": {"cells": {"textContent": [{
            "document": {"uri": uris["compile"], "version": 2},
            "changes": [{"range": {"start": {"line": 1, "character": 7}, "end": {"line": 1, "character": 26}},
                         "text": "step"}]}]}}})
    assert published(client, uris["model"], lambda d: d == [])["version"] == 1

    # A new cell that compiles it again, inserted before the markdown cell; and two lines typed at the top
    # of the model cell: the break is found again, two lines further down its cell.
    new = cell_uri(notebook, "W3")
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb, "version": 3},
        "change": {"cells": {
            "structure": {"array": {"start": 1, "deleteCount": 0, "cells": [{"kind": 2, "document": new}]},
                          "didOpen": [{"uri": new, "languageId": "python", "version": 1,
                                       "text": "again = torch.compile(step)"}]},
            "textContent": [{"document": {"uri": uris["model"], "version": 2},
                             "changes": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                          "text": "# setup\n# more\n"}]}]}}})
    model = published(client, uris["model"], lambda d: len(d) == 1)
    assert model["version"] == 2
    assert model["diagnostics"][0]["range"]["start"] == {"line": 6, "character": 7}
    assert published(client, new)["diagnostics"] == []

    # The new cell removed: `step` is not compiled any more; the removed cell's diagnostics are cleared.
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb, "version": 4},
        "change": {"cells": {"structure": {"array": {"start": 1, "deleteCount": 1},
                                           "didClose": [{"uri": new}]}}}})
    assert published(client, uris["model"], lambda d: d == [])["version"] == 2

    client.notify("notebookDocument/didClose", {"notebookDocument": {"uri": nb},
                                                "cellTextDocuments": [{"uri": u} for u in uris.values()]})
    published(client, uris["compile"], lambda d: d == [])
    with pytest.raises(RuntimeError, match="not open"):
        client.request("textDocument/hover", {"textDocument": {"uri": uris["model"]},
                                              "position": {"line": 0, "character": 0}})


def test_pull_diagnostics_per_cell(tmp_path):
    notebook = tmp_path / "nb.ipynb"
    client = LspClient([BIN, "server"], cwd=tmp_path)
    client.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(),
                                  "capabilities": {"textDocument": {"diagnostic": {}}},
                                  "initializationOptions": {"debounce": 0}})
    client.notify("initialized", {})
    model, compiled = cell_uri(notebook, "W0"), cell_uri(notebook, "W1")
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": notebook.as_uri(), "notebookType": "jupyter-notebook", "version": 1,
                             "cells": [{"kind": 2, "document": model}, {"kind": 2, "document": compiled}]},
        "cellTextDocuments": [{"uri": model, "languageId": "python", "version": 1, "text": MODEL},
                              {"uri": compiled, "languageId": "python", "version": 1, "text": COMPILE}]})
    report = client.request("textDocument/diagnostic", {"textDocument": {"uri": model}})
    assert [(d["code"], d["range"]["start"]["line"]) for d in report["items"]] == [("GM101", 4)]
    assert client.request("textDocument/diagnostic", {"textDocument": {"uri": compiled}})["items"] == []
    again = client.request("textDocument/diagnostic", {"textDocument": {"uri": model},
                                                       "previousResultId": report["resultId"]})
    assert again["kind"] == "unchanged"
    workspace = client.request("workspace/diagnostic", {"previousResultIds": []})
    by_uri = {item["uri"]: item for item in workspace["items"]}
    assert set(by_uri) == {model, compiled}
    assert [d["code"] for d in by_uri[model]["items"]] == ["GM101"] and by_uri[model]["version"] == 1
    assert client.close() == 0
