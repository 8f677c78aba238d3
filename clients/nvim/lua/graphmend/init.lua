-- graphmend for Neovim 0.7 through 0.11+: starts `graphmend server` for Python buffers, and applies
-- source.fixAll.graphmend synchronously before a write.
--
--   require('graphmend').setup({
--     settings = { run = 'onType', select = { 'GM' } },
--     fix_on_save = true,
--   })
local config = require('graphmend.config')

local M = {}

M.options = nil

local has_011 = vim.fn.has('nvim-0.11') == 1 and vim.lsp.config ~= nil and vim.lsp.enable ~= nil

local function notify(msg, level)
  vim.notify(msg, level or vim.log.levels.INFO, { title = 'graphmend' })
end

-- The graphmend clients attached to `bufnr`, on every Neovim version.
function M.clients(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local out = {}
  if vim.lsp.get_clients then
    out = vim.lsp.get_clients({ bufnr = bufnr, name = config.name })
  else
    for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if client.name == config.name then table.insert(out, client) end
    end
  end
  return out
end

local function request_sync(bufnr, client, method, params, timeout_ms)
  local responses, err = vim.lsp.buf_request_sync(bufnr, method, params, timeout_ms)
  if not responses then return nil, err or 'timeout' end
  local response = responses[client.id]
  if not response then return nil, 'no answer from graphmend' end
  if response.err or response.error then
    local e = response.err or response.error
    return nil, type(e) == 'table' and (e.message or vim.inspect(e)) or tostring(e)
  end
  return response.result
end

local function whole_buffer_range(bufnr)
  local last = vim.api.nvim_buf_line_count(bufnr)
  return { start = { line = 0, character = 0 }, ['end'] = { line = last, character = 0 } }
end

local function pick_fix_all(actions)
  for _, action in ipairs(actions or {}) do
    local kind = action.kind
    if type(action.command) ~= 'string' and kind
      and (kind == config.fix_all_kind or kind:sub(1, #config.fix_all_kind + 1) == config.fix_all_kind .. '.') then
      return action
    end
  end
  return nil
end

local function apply_edit(client, edit)
  vim.lsp.util.apply_workspace_edit(edit, client.offset_encoding or 'utf-16')
end

-- Applies source.fixAll.graphmend to `bufnr` and returns when the buffer holds the fixed text.
-- Returns true when the request succeeded (whether or not anything changed), or false and why not.
function M.fix_all(bufnr, timeout_ms)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  timeout_ms = timeout_ms or (M.options and M.options.fix_on_save_timeout_ms) or config.defaults.fix_on_save_timeout_ms
  local client = M.clients(bufnr)[1]
  if not client then return false, 'graphmend is not attached to this buffer' end
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = whole_buffer_range(bufnr),
    context = { diagnostics = {}, only = { config.fix_all_kind }, triggerKind = 1 },
  }
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local actions, err = request_sync(bufnr, client, 'textDocument/codeAction', params, timeout_ms)
  if err then return false, 'codeAction: ' .. err end
  local action = pick_fix_all(actions)
  if not action then return true end
  if not action.edit and not action.command then
    local resolved, rerr = request_sync(bufnr, client, 'codeAction/resolve', action, timeout_ms)
    if rerr then return false, 'codeAction/resolve: ' .. rerr end
    action = resolved or action
  end
  if vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
    return false, 'the buffer changed while fixing'
  end
  if action.edit then apply_edit(client, action.edit) end
  if action.command then
    -- The server answers by sending workspace/applyEdit, which buf_request_sync's wait lets through.
    local _, cerr = request_sync(bufnr, client, 'workspace/executeCommand', action.command, timeout_ms)
    if cerr then return false, 'executeCommand: ' .. cerr end
  end
  return true
end

local function on_write(args)
  local ok, err = M.fix_all(args.buf)
  if not ok and err ~= 'graphmend is not attached to this buffer' then
    notify('fix on save: ' .. err, vim.log.levels.WARN)
  end
end

local function start_legacy(lsp_config, o, bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if vim.bo[bufnr].buftype ~= '' then return end
  local root = config.find_root(name ~= '' and name or vim.fn.getcwd(), o.root_markers)
  local cfg = vim.deepcopy(lsp_config)
  cfg.root_dir = root
  cfg.workspace_folders = { { uri = vim.uri_from_fname(root), name = root } }
  cfg.root_markers = nil
  cfg.filetypes = nil
  if vim.lsp.start then
    -- 0.8 to 0.10: reuses a client with the same name and root.
    vim.lsp.start(cfg, { bufnr = bufnr })
    return
  end
  -- 0.7: one client per root, attached by hand.
  M._legacy_clients = M._legacy_clients or {}
  local id = M._legacy_clients[root]
  if id and not vim.lsp.get_client_by_id(id) then id = nil end
  if not id then
    id = vim.lsp.start_client(cfg)
    if not id then
      notify('could not start ' .. table.concat(cfg.cmd, ' '), vim.log.levels.ERROR)
      return
    end
    M._legacy_clients[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
end

-- Buffer-local :GraphmendFixAll for a buffer graphmend attached to; the on_attach of
-- lsp/graphmend.lua and of require('graphmend.lspconfig'), for configurations made without setup().
-- Call it from your own on_attach if you replace theirs: on_attach = function(client, bufnr)
-- require('graphmend').on_attach(client, bufnr) ... end.
function M.on_attach(_, bufnr)
  vim.api.nvim_buf_create_user_command(bufnr, 'GraphmendFixAll', function()
    local ok, err = M.fix_all(bufnr)
    if not ok then notify(err, vim.log.levels.ERROR) end
  end, { desc = 'graphmend: apply every safe fix to this buffer' })
end

local function create_commands()
  vim.api.nvim_create_user_command('GraphmendFixAll', function()
    local ok, err = M.fix_all(0)
    if not ok then notify(err, vim.log.levels.ERROR) end
  end, { desc = 'graphmend: apply every safe fix to this buffer' })
  vim.api.nvim_create_user_command('GraphmendRestart', function() M.restart() end,
    { desc = 'graphmend: restart the server' })
  vim.api.nvim_create_user_command('GraphmendLog', function() vim.cmd('edit ' .. vim.fn.fnameescape(vim.lsp.get_log_path())) end,
    { desc = 'graphmend: open the LSP log' })
end

function M.restart()
  local bufs = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if #M.clients(bufnr) > 0 then table.insert(bufs, bufnr) end
  end
  local stopped = {}
  for _, bufnr in ipairs(bufs) do
    for _, client in ipairs(M.clients(bufnr)) do
      if not stopped[client.id] then
        stopped[client.id] = true
        vim.lsp.stop_client(client.id)
      end
    end
  end
  M._legacy_clients = {}
  vim.wait(2000, function()
    for id in pairs(stopped) do
      if vim.lsp.get_client_by_id(id) then return false end
    end
    return true
  end, 20)
  for _, bufnr in ipairs(bufs) do
    if vim.api.nvim_buf_is_loaded(bufnr) then M._attach(bufnr) end
  end
end

function M.setup(opts)
  local lsp_config, o = config.lsp_config(opts)
  M.options = o
  M._lsp_config = lsp_config
  local group = vim.api.nvim_create_augroup('graphmend', { clear = true })

  if has_011 then
    local cfg = vim.deepcopy(lsp_config)
    cfg.name = nil
    vim.lsp.config(config.name, cfg)
    vim.lsp.enable(config.name)
    M._attach = function(bufnr)
      -- vim.lsp.enable attaches on FileType; re-trigger it for buffers already open.
      pcall(vim.api.nvim_exec_autocmds, 'FileType', { group = 'nvim.lsp.enable', buffer = bufnr })
    end
    -- Buffers opened before setup() (vim.lsp.enable attaches them itself only after VimEnter).
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(o.filetypes, vim.bo[bufnr].filetype)
        and #M.clients(bufnr) == 0 then
        M._attach(bufnr)
      end
    end
  else
    M._attach = function(bufnr) start_legacy(lsp_config, o, bufnr) end
    vim.api.nvim_create_autocmd('FileType', {
      group = group,
      pattern = o.filetypes,
      callback = function(args) M._attach(args.buf) end,
    })
    -- Buffers opened before setup().
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(o.filetypes, vim.bo[bufnr].filetype) then
        M._attach(bufnr)
      end
    end
  end

  if o.fix_on_save then
    vim.api.nvim_create_autocmd('BufWritePre', {
      group = group,
      pattern = '*',
      callback = function(args)
        if vim.tbl_contains(o.filetypes, vim.bo[args.buf].filetype) then on_write(args) end
      end,
    })
  end
  create_commands()
  return M
end

return M
