"""The Neovim module's configuration and setup, on every Neovim found (no server needed)."""
from __future__ import annotations

import pytest

from clients_env import NVIM_PLUGIN, nvim_binaries, nvim_version
from nvim_harness import run_nvim

NVIMS = nvim_binaries()


@pytest.fixture(params=NVIMS)
def nvim(request) -> str:
    nvim_version(request.param)  # fails clearly when it is missing
    return request.param


def test_lsp_config_defaults(nvim):
    r = run_nvim(nvim, r"""
      local c = require('graphmend.config')
      local cfg = c.lsp_config()
      RESULT.cmd = cfg.cmd
      RESULT.filetypes = cfg.filetypes
      RESULT.init = vim.fn.json_encode(cfg.init_options)
      RESULT.same = vim.deep_equal(cfg.init_options, cfg.settings.graphmend)
      local params = {}
      cfg.before_init(params, cfg)
      RESULT.before_init_same = vim.deep_equal(params.initializationOptions, cfg.settings.graphmend)
    """)
    assert r["errors"] == []
    assert r["cmd"] == ["graphmend", "server"]
    assert r["filetypes"] == ["python"]
    # The same JSON as the VS Code extension's defaults (clients/vscode/src/settings.ts serverSettings).
    import json
    assert json.loads(r["init"]) == {"run": "onType", "fixAll": True, "unsafeFixes": False, "validate": {"enable": True},
                                     "validator": {}, "logLevel": "info"}
    assert r["same"] and r["before_init_same"]


def test_lsp_config_options(nvim):
    r = run_nvim(nvim, r"""
      local c = require('graphmend.config')
      local cfg = c.lsp_config({
        path = '/opt/gm/graphmend', args = { 'server', '--log-file', '/tmp/gm.log' },
        settings = { select = { 'gm1' }, ignore = { 'GM105' }, scope = 'all', run = 'onSave', fixAll = false, unsafeFixes = true,
                     validate = { enable = false }, validator = { python = '/venv/bin/python' }, logLevel = 'debug' },
      })
      RESULT.cmd = cfg.cmd
      RESULT.init = cfg.init_options
      local ok, err = c.resolve({ settings = { run = 'always' } })
      RESULT.bad_run = err
      ok, err = c.resolve({ settings = { select = { 'E501' } } })
      RESULT.bad_code = err
      ok, err = c.resolve({ settings = { scope = 'everything' } })
      RESULT.bad_scope = err
      RESULT.cmd_override = c.lsp_config({ cmd = { 'x', 'y' } }).cmd
    """)
    assert r["errors"] == []
    assert r["cmd"] == ["/opt/gm/graphmend", "server", "--log-file", "/tmp/gm.log"]
    assert r["init"] == {"select": ["GM1"], "ignore": ["GM105"], "scope": "all", "run": "onSave", "fixAll": False,
                         "unsafeFixes": True,
                         "validate": {"enable": False}, "validator": {"python": "/venv/bin/python"},
                         "logLevel": "debug"}
    assert "onType" in r["bad_run"]
    assert '"E501"' in r["bad_code"]
    assert "compiled" in r["bad_scope"]
    assert r["cmd_override"] == ["x", "y"]


def test_lspconfig_style_file(nvim):
    r = run_nvim(nvim, r"""
      local cfg = dofile(%s .. '/lsp/graphmend.lua')
      RESULT.cmd = cfg.cmd
      RESULT.root_markers = cfg.root_markers
      RESULT.has_settings = cfg.settings.graphmend.run == 'onType'
      RESULT.name = cfg.name or vim.NIL
    """ % ('"' + str(NVIM_PLUGIN) + '"'))
    assert r["errors"] == []
    assert r["cmd"] == ["graphmend", "server"]
    assert "pyproject.toml" in r["root_markers"]
    assert r["has_settings"]
    assert r["name"] is None


def test_find_root(nvim, tmp_path):
    (tmp_path / "proj" / "pkg").mkdir(parents=True)
    (tmp_path / "proj" / "pyproject.toml").write_text("[tool.graphmend]\n")
    f = tmp_path / "proj" / "pkg" / "m.py"
    f.write_text("x = 1\n")
    r = run_nvim(nvim, r"""
      local c = require('graphmend.config')
      RESULT.root = c.find_root(%s, c.defaults.root_markers)
    """ % ('"' + str(f) + '"'))
    assert r["errors"] == []
    assert r["root"] == str(tmp_path / "proj")


def test_setup_registers_commands_and_fix_on_save(nvim):
    major_minor = nvim_version(nvim)[:2]
    r = run_nvim(nvim, r"""
      require('graphmend').setup({ fix_on_save = true, path = '/nonexistent/graphmend' })
      RESULT.commands = {}
      for _, name in ipairs({ 'GraphmendFixAll', 'GraphmendRestart', 'GraphmendLog' }) do
        RESULT.commands[name] = vim.fn.exists(':' .. name) == 2
      end
      RESULT.prewrite = #vim.api.nvim_get_autocmds({ group = 'graphmend', event = 'BufWritePre' })
      if vim.lsp.config then
        RESULT.modern_cmd = vim.lsp.config.graphmend.cmd
      else
        RESULT.filetype_autocmds = #vim.api.nvim_get_autocmds({ group = 'graphmend', event = 'FileType' })
      end
      local ok, err = require('graphmend').fix_all(0)
      RESULT.fix_all = { ok, err }
    """)
    assert r["errors"] == []
    assert all(r["commands"].values()), r["commands"]
    assert r["prewrite"] == 1
    if major_minor >= (0, 11):
        assert r["modern_cmd"] == ["/nonexistent/graphmend", "server"]
    else:
        assert r["filetype_autocmds"] == 1
    assert r["fix_all"] == [False, "graphmend is not attached to this buffer"]


def test_no_fix_on_save_by_default(nvim):
    r = run_nvim(nvim, r"""
      require('graphmend').setup({})
      RESULT.prewrite = #vim.api.nvim_get_autocmds({ group = 'graphmend', event = 'BufWritePre' })
    """)
    assert r["errors"] == []
    assert r["prewrite"] == 0


def test_capabilities_extend_neovims_own(nvim):
    r = run_nvim(nvim, r"""
      local c = require('graphmend.config')
      local cfg = c.lsp_config({ capabilities = { workspace = { didChangeWatchedFiles = { dynamicRegistration = true } } } })
      RESULT.watch = cfg.capabilities.workspace.didChangeWatchedFiles.dynamicRegistration
      RESULT.keeps_code_action = cfg.capabilities.textDocument.codeAction ~= nil
      RESULT.default_nil = c.lsp_config().capabilities == nil
    """)
    assert r["errors"] == []
    assert r["watch"] is True and r["keeps_code_action"] is True and r["default_nil"] is True
