-- Neovim 0.10 (init.lua), without plugins: start or reuse the server for each Python buffer.
vim.api.nvim_create_autocmd("FileType", {
  pattern = "python",
  callback = function(args)
    vim.lsp.start({
      name = "tapelint",
      cmd = { "tapelint", "server" },
      root_dir = vim.fs.root(args.buf, { "pyproject.toml", ".git" }),
      init_options = { ignore = {}, unsafeFixes = false },
    })
  end,
})
