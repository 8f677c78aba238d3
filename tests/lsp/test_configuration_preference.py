"""Editor settings and pyproject.toml (docs/lsp.md, "Settings"): ruff's `configurationPreference`.
editorFirst (default): the editor's `select` and `scope` replace the file's; filesystemFirst: the
file's keys win and the editor fills in what it leaves unset; editorOnly: pyproject.toml is not read.
In every mode `ignore` and `extendSelect` add to the file's lists ("on top of")."""

import os
import pathlib

import pytest

from lsp_client import LspClient

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.abspath(os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend")))

# GM101 (a tensor `if`) and GM201 (`print`) in a forward.
MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        print("done")
        return x
"""

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason=f"{BIN} is not built")


def codes(folder, settings):
    client = LspClient([BIN, "server"], cwd=folder)
    try:
        client.request("initialize", {"processId": os.getpid(), "rootUri": folder.as_uri(), "capabilities": {},
                                      "initializationOptions": dict(settings, debounce=0)})
        client.notify("initialized", {})
        path = folder / "model.py"
        path.write_text(MODEL)
        uri = path.as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": MODEL}})
        return sorted(d["code"] for d in client.diagnostics(uri, 1))
    finally:
        assert client.close() == 0


@pytest.mark.parametrize("table, settings, expected", [
    # The file alone.
    ('select = ["GM1"]\n', {}, ["GM101"]),
    ('ignore = ["GM101"]\n', {}, ["GM201"]),
    # editorFirst (the default): the editor's select replaces the file's; ignore adds to the file's.
    ('select = ["GM1"]\n', {"select": ["GM2"]}, ["GM201"]),
    ('select = ["GM1"]\n', {"select": ["GM2"], "configurationPreference": "editorFirst"}, ["GM201"]),
    ('ignore = ["GM101"]\n', {"ignore": ["GM201"]}, []),
    ('select = ["GM1"]\n', {"ignore": ["GM101"]}, []),
    ('select = ["GM1"]\n', {"extendSelect": ["GM2"]}, ["GM101", "GM201"]),
    ('scope = "all"\nselect = ["GM1"]\n', {"select": ["GM2"], "ignore": ["GM101"]}, ["GM201"]),
    # filesystemFirst: a key the file sets wins; one it leaves unset comes from the editor.
    ('select = ["GM1"]\n', {"select": ["GM2"], "configurationPreference": "filesystemFirst"}, ["GM101"]),
    ('ignore = ["GM101"]\n', {"select": ["GM1"], "configurationPreference": "filesystemFirst"}, []),
    ('ignore = ["GM101"]\n', {"ignore": ["GM201"], "configurationPreference": "filesystemFirst"}, []),
    # editorOnly: pyproject.toml is not read (not even an invalid one).
    ('select = ["GM1"]\n', {"configurationPreference": "editorOnly"}, ["GM101", "GM201"]),
    ('select = ["GM1"]\n', {"ignore": ["GM101"], "configurationPreference": "editorOnly"}, ["GM201"]),
    ('selectt = ["GM1"]\n', {"select": ["GM2"], "configurationPreference": "editorOnly"}, ["GM201"]),
])
def test_configuration_preference(tmp_path, table, settings, expected):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n" + table)
    assert codes(tmp_path, settings) == expected


def test_an_unknown_preference_is_reported_and_editor_first_applies(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\nselect = ["GM1"]\n')
    client = LspClient([BIN, "server"], cwd=tmp_path)
    try:
        client.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {},
                                      "initializationOptions": {"debounce": 0, "select": ["GM2"],
                                                                "configurationPreference": "fileFirst"}})
        message = client.wait_for(lambda m: m.get("method") == "window/logMessage")
        assert "configurationPreference must be" in message["params"]["message"]
        client.notify("initialized", {})
        path = tmp_path / "model.py"
        path.write_text(MODEL)
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": MODEL}})
        assert [d["code"] for d in client.diagnostics(path.as_uri(), 1)] == ["GM201"]
    finally:
        assert client.close() == 0
