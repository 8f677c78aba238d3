"""Neovim without require('graphmend').setup(): `vim.lsp.enable('graphmend')` on 0.11+ (clients/nvim on
'runtimepath' as lazy.nvim's `dir = ".../clients/nvim"` puts it, and as a subdirectory of a checkout),
and nvim-lspconfig's `configs` table on every Neovim. The real server; diagnostics compared with
`graphmend check`.

nvim-lspconfig itself is not fetched: a stand-in `lspconfig.configs` (its documented contract for a
custom server: `configs.NAME = { default_config = {...} }`, then `require('lspconfig').NAME.setup{}`,
which starts the server for the filetypes in the folder root_dir(fname) returns) is put on
'runtimepath' instead."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from clients_env import NVIM_PLUGIN, REPO, nvim_binaries, nvim_version
from nvim_harness import lua_string, run_nvim
from test_nvim_e2e import WAIT_FOR_DIAGNOSTICS, project  # noqa: F401  (project is a fixture)

NVIMS = nvim_binaries()


@pytest.fixture(params=NVIMS)
def nvim(request) -> str:
    nvim_version(request.param)
    return request.param


@pytest.fixture
def modern_nvim(nvim) -> str:
    if nvim_version(nvim) < (0, 11, 0):
        pytest.skip(f"{nvim} is older than 0.11: no vim.lsp.config / vim.lsp.enable")
    return nvim



def assert_attached_and_fixed(r, project):
    """The server attached with the project's root, published `graphmend check`'s findings, and the
    buffer-local :GraphmendFixAll (on_attach; no setup(), so no global command) fixed the file."""
    assert r["attached"] and r["got_diagnostics"], r
    assert r["diagnostics"] == project["findings"]
    assert r["root"] == str(project["root"])
    assert r["buffer_fix_all"] and not r["global_fix_all"]
    assert r["fix_all"] == [True, None]
    assert project["file"].read_text() == project["fixed"]

def test_a_modern_neovim_is_tested():
    """scripts/setup.sh unpacks a Neovim 0.11+ under .cache/; without it the tests above skip silently."""
    if os.environ.get("GRAPHMEND_NVIM"):
        pytest.skip("GRAPHMEND_NVIM chooses the Neovims")
    versions = [nvim_version(n) for n in NVIMS]
    assert any(v >= (0, 11, 0) for v in versions), f"no Neovim 0.11+ among {NVIMS}: run scripts/setup.sh"


# After the buffer is attached: where the server runs, and what a plugin-less config gives the buffer.
AFTER_ATTACH = r"""
RESULT.root = client.config.root_dir or (client.workspace_folders and vim.uri_to_fname(client.workspace_folders[1].uri))
RESULT.buffer_fix_all = vim.api.nvim_buf_get_commands(buf, {}).GraphmendFixAll ~= nil
RESULT.global_fix_all = vim.api.nvim_get_commands({}).GraphmendFixAll ~= nil
local ok, err = require('graphmend').fix_all(buf)
RESULT.fix_all = { ok, err or vim.NIL }
vim.cmd('write')
"""


def test_vim_lsp_enable_with_the_plugin_folder_on_runtimepath(modern_nvim, graphmend, project):
    # lazy.nvim's { dir = '/path/to/graphmend/clients/nvim' } adds the folder to 'runtimepath', as
    # the harness does before the script runs; lsp/graphmend.lua is then found by name.
    r = run_nvim(modern_nvim, r"""
      vim.lsp.config('graphmend', { cmd = { %s, 'server' } })
      vim.lsp.enable('graphmend')
      RESULT.enabled = vim.lsp.is_enabled == nil or vim.lsp.is_enabled('graphmend')
      vim.cmd('edit ' .. vim.fn.fnameescape(%s))
    """ % (lua_string(graphmend), lua_string(project["file"])) + WAIT_FOR_DIAGNOSTICS + AFTER_ATTACH,
        cwd=project["root"])
    assert r["errors"] == [], r["errors"]
    assert r["enabled"]
    assert_attached_and_fixed(r, project)


def test_vim_lsp_enable_from_a_subdirectory_of_a_checkout(modern_nvim, graphmend, project):
    # A plugin manager's checkout of the whole repository, with clients/nvim added to 'runtimepath'
    # (lazy.nvim: config = function(plugin) vim.opt.rtp:append(plugin.dir .. '/clients/nvim') end).
    codes = sorted({f.split("@")[0] for f in project["findings"]})
    r = run_nvim(modern_nvim, r"""
      local checkout = %s
      RESULT.before = #vim.api.nvim_get_runtime_file('lsp/graphmend.lua', true)
      vim.opt.runtimepath:append(checkout .. '/clients/nvim')
      vim.lsp.config('graphmend', { cmd = { %s, 'server' }, settings = { graphmend = { select = { %s } } } })
      vim.lsp.enable('graphmend')
      vim.cmd('edit ' .. vim.fn.fnameescape(%s))
    """ % (lua_string(REPO), lua_string(graphmend), lua_string(codes[0]), lua_string(project["file"]))
        + WAIT_FOR_DIAGNOSTICS, cwd=project["root"], plugin=None)
    assert r["errors"] == [], r["errors"]
    assert r["before"] == 0, "the plugin was on 'runtimepath' before the script put it there"
    assert r["attached"] and r["got_diagnostics"], r
    # settings.graphmend reached the server (as initializationOptions, through before_init).
    assert r["diagnostics"] == [f for f in project["findings"] if f.startswith(codes[0] + "@")]


LSPCONFIG_STANDIN = {
    "lua/lspconfig/configs.lua": r"""
-- Stand-in for nvim-lspconfig's configs table: assigning configs.NAME = { default_config = ... }
-- checks the definition and makes require('lspconfig').NAME.setup(user_config), which starts the
-- server from a FileType autocommand in root_dir(fname, bufnr).
local configs = {}
local function check(value, kind, what)
  if value ~= nil and type(value) ~= kind then error('lspconfig: ' .. what .. ' must be a ' .. kind) end
end
return setmetatable(configs, {
  __newindex = function(self, name, def)
    local d = def.default_config
    if type(d) ~= 'table' then error('lspconfig: default_config must be a table') end
    if type(d.cmd) ~= 'table' and type(d.cmd) ~= 'function' then error('lspconfig: cmd must be a table or function') end
    check(d.filetypes, 'table', 'filetypes')
    check(d.root_dir, 'function', 'root_dir')
    check(d.on_attach, 'function', 'on_attach')
    check(d.on_new_config, 'function', 'on_new_config')
    check(d.commands, 'table', 'commands')
    local entry = { name = name, document_config = def }
    function entry.setup(user)
      local cfg = vim.tbl_deep_extend('keep', user or {}, d)
      STANDIN_SETUP_CONFIG = cfg
      vim.api.nvim_create_autocmd('FileType', {
        pattern = cfg.filetypes,
        callback = function(args)
          local root = cfg.root_dir(vim.api.nvim_buf_get_name(args.buf), args.buf)
          local c = vim.deepcopy(cfg)
          c.name, c.root_dir = name, root
          c.workspace_folders = { { uri = vim.uri_from_fname(root), name = root } }
          c.filetypes, c.single_file_support, c.commands = nil, nil, nil
          if vim.lsp.start then
            vim.lsp.start(c, { bufnr = args.buf })
          else
            vim.lsp.buf_attach_client(args.buf, vim.lsp.start_client(c))
          end
        end,
      })
    end
    rawset(self, name, entry)
  end,
})
""",
    "lua/lspconfig.lua": r"""
return setmetatable({}, { __index = function(_, name) return require('lspconfig.configs')[name] end })
""",
}


def test_lspconfig_configs_table(nvim, graphmend, project, tmp_path):
    standin = tmp_path / "lspconfig-standin"
    for rel, text in LSPCONFIG_STANDIN.items():
        (standin / rel).parent.mkdir(parents=True, exist_ok=True)
        (standin / rel).write_text(text)
    r = run_nvim(nvim, r"""
      vim.opt.runtimepath:append(%s)
      local configs = require('lspconfig.configs')
      configs.graphmend = { default_config = require('graphmend.lspconfig').default_config({ path = %s }) }
      require('lspconfig').graphmend.setup({ settings = { graphmend = { run = 'onSave' } } })
      RESULT.run = STANDIN_SETUP_CONFIG.settings.graphmend.run
      RESULT.register_again = require('graphmend.lspconfig').register() == configs.graphmend
      vim.cmd('edit ' .. vim.fn.fnameescape(%s))
    """ % (lua_string(standin), lua_string(graphmend), lua_string(project["file"]))
        + WAIT_FOR_DIAGNOSTICS + AFTER_ATTACH, cwd=project["root"])
    assert r["errors"] == [], r["errors"]
    assert r["run"] == "onSave" and r["register_again"]
    assert_attached_and_fixed(r, project)


def test_lspconfig_default_config_shape(nvim, tmp_path):
    (tmp_path / "proj" / "pkg").mkdir(parents=True)
    (tmp_path / "proj" / "pyproject.toml").write_text("")
    r = run_nvim(nvim, r"""
      local d = require('graphmend.lspconfig').default_config()
      RESULT.cmd = d.cmd
      RESULT.filetypes = d.filetypes
      RESULT.root = d.root_dir(%s)
      RESULT.keys = vim.tbl_keys(d)
      table.sort(RESULT.keys)
      RESULT.same = vim.deep_equal(d.init_options, d.settings.graphmend)
    """ % lua_string(tmp_path / "proj" / "pkg" / "m.py"))
    assert r["errors"] == [], r["errors"]
    assert r["cmd"] == ["graphmend", "server"]
    assert r["filetypes"] == ["python"]
    assert r["root"] == str(tmp_path / "proj")
    assert "name" not in r["keys"] and "root_markers" not in r["keys"]
    assert r["same"]


def test_plugin_folder_is_clients_nvim():
    assert (NVIM_PLUGIN / "lsp" / "graphmend.lua").is_file()
    assert (NVIM_PLUGIN / "lua" / "graphmend" / "lspconfig.lua").is_file()
    assert Path(NVIM_PLUGIN).parent.name == "clients"
