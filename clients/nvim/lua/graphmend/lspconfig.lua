-- graphmend for nvim-lspconfig's `configs` table (its framework before Neovim 0.11's vim.lsp.config):
--
--   require('lspconfig.configs').graphmend = {
--     default_config = require('graphmend.lspconfig').default_config(),
--   }
--   require('lspconfig').graphmend.setup({ settings = { graphmend = { run = 'onSave' } } })
--
-- or, the same in one call: require('graphmend.lspconfig').register(). default_config() takes the
-- options of require('graphmend').setup() (path, args, cmd, settings, root_markers, ...).
local config = require('graphmend.config')

local M = {}

M.description = [[
graphmend: where torch.compile (TorchDynamo) breaks its graph in PyTorch code, why, and fixes.
Runs `graphmend server`; settings are the `graphmend` section (docs/editors.md).
]]

-- The `default_config` of an lspconfig server definition.
function M.default_config(opts)
  local cfg = config.lsp_config(opts)
  local markers = cfg.root_markers
  cfg.name = nil
  cfg.root_markers = nil
  -- lspconfig calls root_dir(fname, bufnr): the nearest folder with a root marker, else the file's.
  cfg.root_dir = function(fname)
    if fname == nil or fname == '' then return vim.fn.getcwd() end
    return config.find_root(fname, markers)
  end
  cfg.single_file_support = true
  local user_on_attach = cfg.on_attach
  cfg.on_attach = function(client, bufnr)
    require('graphmend').on_attach(client, bufnr)
    if user_on_attach then user_on_attach(client, bufnr) end
  end
  return cfg
end

-- Registers `graphmend` in lspconfig's configs table (once) and returns its entry, whose setup()
-- starts the server.
function M.register(opts)
  local configs = require('lspconfig.configs')
  if not configs[config.name] then
    configs[config.name] = {
      default_config = M.default_config(opts),
      docs = { description = M.description },
    }
  end
  return configs[config.name]
end

return M
