-- Drives headless Neovim through the README's snippet; writes what it saw as JSON to $FXLENS_OUT.
local out = os.getenv("FXLENS_OUT")
local results = { errors = {} }

local function finish()
  vim.fn.writefile({ vim.fn.json_encode(results) }, out)
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  local fxlens = dofile(os.getenv("FXLENS_SNIPPET"))
  fxlens.setup({ cmd = vim.fn.json_decode(os.getenv("FXLENS_CMD")) })
  vim.cmd("edit " .. os.getenv("FXLENS_FILE"))
  local buf = vim.api.nvim_get_current_buf()
  results.attached = vim.wait(60000, function() return next(vim.lsp.buf_get_clients(buf)) ~= nil end, 20)
  results.hover_key = vim.fn.maparg("K", "n", false, true).buffer == 1

  -- a trace has finished once its diagnostics arrive (the file has a not-executed hint)
  results.traced = vim.wait(150000, function() return #vim.diagnostic.get(buf) > 0 end, 20)
  results.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(results.diagnostics, { lnum = d.lnum, severity = d.severity, message = d.message })
  end

  local line = 12 -- 0-based: `y = self.fc(x) + self.shift` in Residual.forward
  local col = string.find(vim.api.nvim_buf_get_lines(buf, line, line + 1, false)[1], "self.fc", 1, true) - 1
  local hover = vim.lsp.buf_request_sync(buf, "textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = line, character = col },
  }, 60000)
  for _, response in pairs(hover or {}) do
    if response.result then results.hover = response.result.contents.value end
  end

  vim.lsp.codelens.refresh()
  vim.wait(60000, function() return #vim.lsp.codelens.get(buf) > 0 end, 20)
  results.lenses = {}
  for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
    table.insert(results.lenses, { line = lens.range.start.line, title = lens.command and lens.command.title })
  end

  vim.cmd("FxlensGraph ResidualMLP")
  vim.wait(60000, function() return string.find(vim.api.nvim_buf_get_name(0), "ResidualMLP.fx.txt", 1, true) end, 20)
  results.graph_buffer = vim.api.nvim_buf_get_name(0)
  results.graph_text = table.concat(vim.api.nvim_buf_get_lines(0, 0, 12, false), "\n")
end)
if not ok then table.insert(results.errors, tostring(err)) end
finish()
