-- graphmend's language-server configuration for Neovim: defaults, and the client config built from
-- the options given to require('graphmend').setup(). No side effects; shared by lsp/graphmend.lua.
local M = {}

M.name = 'graphmend'
M.fix_all_kind = 'source.fixAll.graphmend'

-- Options of setup(), with their defaults.
M.defaults = {
  -- The executable and extra arguments: the server runs as `<path> server <args...>`.
  path = 'graphmend',
  args = {},
  -- Or the whole command line (overrides path/args).
  cmd = nil,
  filetypes = { 'python' },
  root_markers = { 'pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt', '.git' },
  -- What the server receives as initializationOptions and as the "graphmend" section of
  -- workspace/configuration: the same keys as VS Code's graphmend.* settings.
  settings = {
    select = nil, -- { 'GM1', 'GM201' }; nil: pyproject.toml's [tool.graphmend], else every rule
    ignore = nil,
    scope = nil, -- 'compiled' or 'all'; nil: pyproject.toml's, else 'compiled'
    run = 'onType', -- or 'onSave'
    fixAll = true,
    unsafeFixes = false,
    validate = { enable = true },
    validator = { python = nil },
    logLevel = 'info',
  },
  -- Apply source.fixAll.graphmend in BufWritePre, synchronously, before the file is written.
  fix_on_save = false,
  fix_on_save_timeout_ms = 3000,
  -- Passed through to the client config.
  on_attach = nil,
  capabilities = nil,
}

local function is_list(t)
  if type(t) ~= 'table' then return false end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  for i = 1, n do
    if t[i] == nil then return false end
  end
  return true
end

-- Deep merge of `over` onto a copy of `base`; lists are replaced, not merged.
function M.merge(base, over)
  if type(base) ~= 'table' or type(over) ~= 'table' or is_list(over) and next(over) ~= nil then
    if over == nil then return base end
    return vim.deepcopy(over)
  end
  local out = vim.deepcopy(base)
  for k, v in pairs(over) do
    if type(v) == 'table' and type(out[k]) == 'table' and not is_list(v) then
      out[k] = M.merge(out[k], v)
    else
      out[k] = vim.deepcopy(v)
    end
  end
  return out
end

local run_modes = { onType = true, onSave = true }
local log_levels = { error = true, warn = true, info = true, debug = true, trace = true }

-- Checks options; returns the merged options, or nil and a message.
function M.resolve(opts)
  local o = M.merge(M.defaults, opts or {})
  local s = o.settings
  if not run_modes[s.run] then return nil, 'graphmend: settings.run must be "onType" or "onSave"' end
  if s.scope ~= nil and s.scope ~= 'compiled' and s.scope ~= 'all' then
    return nil, 'graphmend: settings.scope must be "compiled" or "all"'
  end
  if not log_levels[s.logLevel] then
    return nil, 'graphmend: settings.logLevel must be one of error, warn, info, debug, trace'
  end
  for _, key in ipairs({ 'select', 'ignore' }) do
    if s[key] ~= nil then
      if type(s[key]) ~= 'table' then return nil, 'graphmend: settings.' .. key .. ' must be a list of codes' end
      for _, code in ipairs(s[key]) do
        if type(code) ~= 'string' or not code:upper():match('^GM%d?%d?%d?$') then
          return nil, 'graphmend: settings.' .. key .. ': "' .. tostring(code) .. '" is not a rule code or prefix'
        end
      end
    end
  end
  if type(o.args) ~= 'table' then return nil, 'graphmend: args must be a list of strings' end
  return o
end

-- The server command line.
function M.cmd(o)
  if o.cmd then return vim.deepcopy(o.cmd) end
  local cmd = { vim.fn.expand(o.path), 'server' }
  for i, a in ipairs(o.args) do
    if not (i == 1 and a == 'server') then table.insert(cmd, a) end
  end
  return cmd
end

-- What the server receives (initializationOptions == workspace/configuration "graphmend").
function M.server_settings(o)
  local s = o.settings
  local out = {
    run = s.run,
    fixAll = s.fixAll,
    unsafeFixes = s.unsafeFixes == true,
    validate = { enable = s.validate.enable ~= false },
    validator = vim.empty_dict(),
    logLevel = s.logLevel,
  }
  if s.select and #s.select > 0 then out.select = vim.tbl_map(string.upper, s.select) end
  if s.ignore and #s.ignore > 0 then out.ignore = vim.tbl_map(string.upper, s.ignore) end
  if s.scope then out.scope = s.scope end
  if s.validator and s.validator.python then out.validator = { python = vim.fn.expand(s.validator.python) } end
  return out
end

-- Upward search for a root marker from `path` (a file or folder); the folder itself when none.
function M.find_root(path, markers)
  local uv = vim.uv or vim.loop
  local dir = path
  local stat = uv.fs_stat(dir)
  if not stat or stat.type ~= 'directory' then dir = vim.fn.fnamemodify(path, ':p:h') end
  local start = dir
  while dir and dir ~= '' do
    for _, marker in ipairs(markers) do
      if uv.fs_stat(dir .. '/' .. marker) then return dir end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then break end
    dir = parent
  end
  return start
end

-- A config for vim.lsp.config (0.11+: root_markers) or vim.lsp.start_client (0.7: root_dir added
-- by the caller).
function M.lsp_config(opts)
  local o, err = M.resolve(opts)
  if not o then error(err) end
  local settings = M.server_settings(o)
  local config = {
    name = M.name,
    cmd = M.cmd(o),
    filetypes = vim.deepcopy(o.filetypes),
    root_markers = vim.deepcopy(o.root_markers),
    init_options = settings,
    settings = { graphmend = settings },
    -- initializationOptions follow settings.graphmend, also when a user changed only `settings`
    -- through vim.lsp.config(): one source for both, as in the VS Code extension.
    before_init = function(params, cfg)
      if cfg.settings and type(cfg.settings.graphmend) == 'table' then
        params.initializationOptions = cfg.settings.graphmend
      end
    end,
    on_attach = o.on_attach,
    -- Neovim's own capabilities, with the user's additions (a partial table would replace them).
    capabilities = o.capabilities
      and vim.tbl_deep_extend('force', vim.lsp.protocol.make_client_capabilities(), o.capabilities) or nil,
  }
  return config, o
end

return M
