-- fxlens for Neovim (0.7 or newer, no plugins needed).
--
-- In init.lua:
--   dofile("/path/to/fxlens/editors/neovim/fxlens.lua").setup({
--     -- cmd = { "fxlens", "serve", "--stdio" },           -- default
--     -- settings = { python = "/path/to/venv/bin/python", -- the interpreter that has torch
--     --              levels = { "fx", "aten" }, inlayHints = false },
--     -- keymaps = false,                                  -- K (hover), <leader>fl (run lens), <leader>fa (code action)
--   })
--
-- Then open a Python file: code lenses show node counts per class, K (hover) on a
-- forward line shows its nodes, diagnostics show where tracing breaks, and :FxlensGraph [Class]
-- opens the graph of the class under the cursor as a read-only text file.

local M = { client_id = nil }

local function refresh_lenses()
  local client = M.client_id and vim.lsp.get_client_by_id(M.client_id)
  -- only once the server has said it has lenses: Neovim 0.7 stops refreshing a buffer for good
  -- after a refresh that no server could answer
  if client and client.server_capabilities and client.server_capabilities.codeLensProvider
      and vim.lsp.buf_is_attached(0, M.client_id) then
    vim.lsp.codelens.refresh()
  end
end

local function start(opts)
  local settings = opts.settings or {}
  return vim.lsp.start_client({
    name = "fxlens",
    cmd = opts.cmd or { "fxlens", "serve", "--stdio" },
    root_dir = opts.root_dir or vim.fn.getcwd(),
    init_options = { fxlens = settings },
    settings = { fxlens = settings },
    handlers = {
      -- the report of a buffer changed: lenses are pulled by the client, so pull them again
      ["fxlens/reportChanged"] = function() refresh_lenses() end,
      -- for a statusline: %{get(g:, 'fxlens_status', '')}
      ["fxlens/status"] = function(_, params)
        vim.g.fxlens_status = "fxlens: " .. params.state
      end,
    },
  })
end

function M.attach(bufnr, opts)
  opts = opts or {}
  M.client_id = M.client_id or start(opts)
  vim.lsp.buf_attach_client(bufnr, M.client_id)
  if opts.keymaps ~= false then
    -- Neovim 0.7 maps nothing to LSP by default; skip with `keymaps = false`
    vim.keymap.set("n", "K", vim.lsp.buf.hover, { buffer = bufnr, desc = "fxlens: nodes of this line" })
    vim.keymap.set("n", "<leader>fl", vim.lsp.codelens.run, { buffer = bufnr, desc = "fxlens: run the lens" })
    vim.keymap.set("n", "<leader>fa", vim.lsp.buf.code_action,
      { buffer = bufnr, desc = "fxlens: code actions (pin guessed arguments as a directive)" })
  end
end

function M.setup(opts)
  opts = opts or {}
  local group = vim.api.nvim_create_augroup("fxlens", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "python",
    callback = function(args) M.attach(args.buf, opts) end,
  })
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave" }, {
    group = group,
    pattern = "*.py",
    callback = refresh_lenses,
  })
  vim.api.nvim_create_user_command("FxlensGraph", function(cmd)
    local class = cmd.args ~= "" and cmd.args or vim.NIL
    -- `true` as 4th argument: the server writes the graph to a read-only file and names it
    vim.lsp.buf_request(0, "workspace/executeCommand", {
      command = "fxlens.showGraph",
      arguments = { vim.uri_from_bufnr(0), class, "fx", true },
    }, function(err, result)
      if err or not result or not result.document then
        vim.notify("fxlens: " .. ((result and result.message) or (err and err.message) or "no graph"), vim.log.levels.WARN)
        return
      end
      vim.cmd("split " .. vim.fn.fnameescape(vim.uri_to_fname(result.document)))
    end)
  end, { nargs = "?" })
end

return M
