"""Rule links in the editor (docs/lsp.md): a diagnostic's codeDescription and the hover's link follow
the project's `docs-url`; a binary with no pages beside it gives neither, never a dead link."""

import os
import pathlib
import shutil

import pytest

from lsp_client import LspClient

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.abspath(os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend")))

MODEL = """import torch
from torch import nn


class Block(nn.Module):
    def forward(self, x):
        if x.mean() > 0:
            x = x * 2
        return x
"""

pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason=f"{BIN} is not built")


def open_and_hover(binary, folder):
    env = {k: v for k, v in os.environ.items() if k != "GRAPHMEND_DOCS_DIR"}
    client = LspClient([str(binary), "server"], cwd=folder, env=env)
    try:
        client.request("initialize", {"processId": os.getpid(), "rootUri": folder.as_uri(), "capabilities": {},
                                      "initializationOptions": {"debounce": 0}})
        client.notify("initialized", {})
        path = folder / "model.py"
        path.write_text(MODEL)
        uri = path.as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": MODEL}})
        diagnostics = client.diagnostics(uri, 1)
        assert [d["code"] for d in diagnostics] == ["GM101"]
        start = diagnostics[0]["range"]["start"]
        hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": start})
        return diagnostics[0], hover["contents"]["value"]
    finally:
        assert client.close() == 0


@pytest.fixture
def copied(tmp_path):
    (tmp_path / "bin").mkdir()
    binary = tmp_path / "bin" / "graphmend"
    shutil.copy2(BIN, binary)
    work = tmp_path / "work"
    work.mkdir()
    return binary, work


def test_no_pages_no_link(copied):
    binary, work = copied
    diagnostic, hover = open_and_hover(binary, work)
    assert "codeDescription" not in diagnostic
    assert "documentation](" not in hover and str(ROOT) not in hover


def test_docs_url_links_diagnostics_and_hovers(copied):
    binary, work = copied
    (work / "pyproject.toml").write_text('[tool.graphmend]\ndocs-url = "https://example.org/graphmend/rules/"\n')
    diagnostic, hover = open_and_hover(binary, work)
    assert diagnostic["codeDescription"]["href"] == "https://example.org/graphmend/rules/GM101.md"
    assert "[GM101 documentation](https://example.org/graphmend/rules/GM101.md)" in hover
