-- nvim-lspconfig style configuration of graphmend's language server, for Neovim 0.11+:
-- with clients/nvim on 'runtimepath', `vim.lsp.enable('graphmend')` is all it takes, and
-- `vim.lsp.config('graphmend', { settings = { graphmend = { run = 'onSave' } } })` changes settings.
-- Attached buffers get :GraphmendFixAll (require('graphmend').on_attach). Fix-all on save needs
-- require('graphmend').setup({ fix_on_save = true }) (or require('graphmend').fix_all() in your own
-- BufWritePre autocmd).
local config = require('graphmend.config').lsp_config()
config.name = nil -- the file name names the config
config.on_attach = function(client, bufnr) require('graphmend').on_attach(client, bufnr) end
config.capabilities = nil
return config
