-- Neovim 0.11+ (init.lua). The name and settings are what nvim-lspconfig would pass.
-- Older versions (0.7 to 0.10) have no vim.lsp.config: use the set-up that follows instead.
if vim.fn.has("nvim-0.11") == 1 then
  vim.lsp.config("tapelint", {
    cmd = { "tapelint", "server" },
    filetypes = { "python" },
    root_markers = { "pyproject.toml", ".git" },
    init_options = { ignore = {}, unsafeFixes = false },
  })
  vim.lsp.enable("tapelint")
else
  vim.notify("tapelint: vim.lsp.config needs Neovim 0.11; use the vim.lsp.start_client set-up")
end
