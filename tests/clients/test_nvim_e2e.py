"""Neovim end to end: the real server, the plugin's setup(), diagnostics, fix-all on save.

For each Neovim found (Debian's 0.7 and, when present, a 0.11+), open a copy of an example in headless
Neovim, wait for graphmend's diagnostics, write the file (fix-all runs in BufWritePre), quit, and
compare the file with what `graphmend check --fix` makes of the same input."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from clients_env import FIXTURES, nvim_binaries, nvim_version
from nvim_harness import lua_string, run_nvim

NVIMS = nvim_binaries()
EXAMPLE = FIXTURES / "model.py"


@pytest.fixture(params=NVIMS)
def nvim(request) -> str:
    nvim_version(request.param)
    return request.param


def check(graphmend: Path, source: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(graphmend), "check", *args, str(source)], capture_output=True, text=True,
                          timeout=120, cwd=source.parent)
    assert proc.returncode in (0, 1), f"graphmend check {args} exited {proc.returncode}: {proc.stderr}"
    return proc


@pytest.fixture
def project(tmp_path: Path, graphmend: Path):
    """A project with the example, and what the command line makes of it."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    target = root / "model.py"
    shutil.copyfile(EXAMPLE, target)
    ref = tmp_path / "ref"
    ref.mkdir()
    shutil.copyfile(EXAMPLE, ref / "model.py")
    findings = json.loads(check(graphmend, ref / "model.py", "--output-format", "json").stdout)
    check(graphmend, ref / "model.py", "--fix")
    fixed = (ref / "model.py").read_text()
    assert fixed != EXAMPLE.read_text(), "graphmend check --fix should change the example"
    expected = sorted(f"{f['code']}@{f['location']['row']}" for f in findings if f.get("code"))
    assert expected, "the example should have graph breaks"
    return {"root": root, "file": target, "fixed": fixed, "findings": expected}


WAIT_FOR_DIAGNOSTICS = r"""
local gm = require('graphmend')
local buf = vim.api.nvim_get_current_buf()
RESULT.filetype = vim.bo[buf].filetype
RESULT.attached = vim.wait(15000, function() return #gm.clients(buf) > 0 end, 20)
if not RESULT.attached then error('graphmend did not attach to ' .. vim.api.nvim_buf_get_name(buf)) end
local client = gm.clients(buf)[1]
RESULT.server_name = client.server_capabilities and client.server_capabilities.codeActionProvider ~= nil
RESULT.server_version = client.server_info and client.server_info.version or vim.NIL
RESULT.offset_encoding = client.offset_encoding
local function graphmend_diagnostics()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == 'graphmend' then table.insert(out, d) end
  end
  return out
end
RESULT.got_diagnostics = vim.wait(20000, function() return #graphmend_diagnostics() > 0 end, 20)
RESULT.diagnostics = {}
for _, d in ipairs(graphmend_diagnostics()) do
  table.insert(RESULT.diagnostics, string.format('%s@%d', d.code, d.lnum + 1))
end
table.sort(RESULT.diagnostics)
"""


def test_fix_on_save(nvim, graphmend, project):
    r = run_nvim(nvim, r"""
      require('graphmend').setup({ path = %s, fix_on_save = true })
    """ % lua_string(graphmend) + WAIT_FOR_DIAGNOSTICS + r"""
      vim.cmd('write')
      RESULT.modified_after_write = vim.bo.modified
    """, files=[project["file"]], cwd=project["root"])
    assert r["errors"] == [], r["errors"]
    assert r["filetype"] == "python"
    assert r["attached"] and r["got_diagnostics"], r
    assert r["diagnostics"] == project["findings"]
    # Neovim 0.10+ offers UTF-8 first and the server takes it; 0.7 speaks UTF-16 only. The example has
    # non-ASCII text on a fixed line, so a wrong count of columns would show in the written file.
    want = "utf-8" if nvim_version(nvim) >= (0, 10, 0) else "utf-16"
    assert r["offset_encoding"] == want
    assert r["modified_after_write"] is False or r["modified_after_write"] == 0
    assert project["file"].read_text() == project["fixed"]


def test_fix_all_command_then_write_without_fix_on_save(nvim, graphmend, project):
    original = project["file"].read_text()
    r = run_nvim(nvim, r"""
      require('graphmend').setup({ path = %s })
    """ % lua_string(graphmend) + WAIT_FOR_DIAGNOSTICS + r"""
      -- fix_on_save is off: writing keeps the text as it is.
      vim.cmd('write')
      RESULT.after_plain_write = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
      vim.cmd('GraphmendFixAll')
      RESULT.modified_after_fix = vim.bo.modified
      vim.cmd('write')
    """, files=[project["file"]], cwd=project["root"])
    assert r["errors"] == [], r["errors"]
    assert r["after_plain_write"] + "\n" == original
    assert r["modified_after_fix"] in (True, 1)
    assert project["file"].read_text() == project["fixed"]


def test_settings_reach_the_server(nvim, graphmend, project):
    codes = sorted({f.split("@")[0] for f in project["findings"]})
    assert len(codes) >= 2, f"the example has breaks of two rules at least: {codes}"
    r = run_nvim(nvim, r"""
      require('graphmend').setup({ path = %s, settings = { select = { %s } } })
    """ % (lua_string(graphmend), lua_string(codes[0])) + WAIT_FOR_DIAGNOSTICS,
        files=[project["file"]], cwd=project["root"])
    assert r["errors"] == [], r["errors"]
    assert r["diagnostics"] == [f for f in project["findings"] if f.startswith(codes[0] + "@")]


def test_restart(nvim, graphmend, project):
    r = run_nvim(nvim, r"""
      require('graphmend').setup({ path = %s })
    """ % lua_string(graphmend) + WAIT_FOR_DIAGNOSTICS + r"""
      RESULT.first_id = client.id
      vim.cmd('GraphmendRestart')
      RESULT.reattached = vim.wait(15000, function()
        local c = gm.clients(buf)[1]
        return c ~= nil and c.id ~= RESULT.first_id and c.initialized ~= false
      end, 20)
      RESULT.old_gone = vim.lsp.get_client_by_id(RESULT.first_id) == nil
      local again = gm.clients(buf)
      RESULT.count = #again
      -- The new server has the buffer: fix-all works through it.
      RESULT.fix = { gm.fix_all(buf) }
      RESULT.text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
    """, files=[project["file"]], cwd=project["root"])
    assert r["errors"] == [], r["errors"]
    assert r["reattached"] and r["old_gone"], r
    assert r["count"] == 1
    assert r["fix"][0] is True, r["fix"]
    assert r["text"] == project["fixed"]
