-- Neovim 0.11+ (init.lua). The name and settings are what nvim-lspconfig would pass.
vim.lsp.config("tapelint", {
  cmd = { "tapelint", "server" },
  filetypes = { "python" },
  root_markers = { "pyproject.toml", ".git" },
  init_options = { ignore = {}, unsafeFixes = false },
})
vim.lsp.enable("tapelint")
