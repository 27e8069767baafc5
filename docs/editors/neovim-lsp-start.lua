-- Neovim 0.7 and later (init.lua), without plugins: start or reuse the server for each
-- Python buffer. vim.lsp.start (0.8+) reuses a server per root; 0.7 gets vim.lsp.start_client.
local tapelint_client
vim.api.nvim_create_autocmd("FileType", {
  pattern = "python",
  callback = function(args)
    -- The project root (vim.fs.root, 0.10+), else the current directory: either way tapelint
    -- reads each file's own pyproject.toml.
    local root = vim.fs and vim.fs.root and vim.fs.root(args.buf, { "pyproject.toml", ".git" })
    local config = {
      name = "tapelint",
      cmd = { "tapelint", "server" },
      root_dir = root or vim.fn.getcwd(),
      init_options = { ignore = {}, unsafeFixes = false },
    }
    if vim.lsp.start then
      vim.lsp.start(config)
    else
      tapelint_client = tapelint_client or vim.lsp.start_client(config)
      vim.lsp.buf_attach_client(args.buf, tapelint_client)
    end
  end,
})
