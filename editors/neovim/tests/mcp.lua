-- :SeriMcp and :checkhealth seri's MCP section: a working MCP server (our test server,
-- `probe`), one whose command does not exist (`broken`), both from the settings, and the
-- workspace's .mcp.json server (`cloned`), which waits for consent.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

---@param text string
---@param pattern string
local function has(text, pattern)
  H.truthy(text:find(pattern), ("%q lacks %q"):format(text, pattern))
end

---The servers' rows by name, once none is starting.
---@return table<string, table>
local function settled()
  local rows
  H.wait(function()
    local info = H.call("seri.info")
    rows = {}
    for _, row in ipairs(info.mcpServers or {}) do
      if row.status == "starting" then
        return false
      end
      rows[row.name] = row
    end
    return next(rows) ~= nil
  end, "the MCP servers to be started or failed", 30000)
  return rows
end

H.run(function()
  vim.cmd.cd(H.env.workspace)
  require("seri").setup(H.options({
    mcpServers = {
      probe = { command = H.env.python, args = { vim.env.SERI_TEST_MCP_SERVER } },
      broken = { command = "/nonexistent/seri-mcp-server" },
    },
  }))
  require("seri").start()
  H.wait_ready()
  local rows = settled()
  H.eq("ready", rows.probe.status, "probe's status")
  H.eq("failed", rows.broken.status, "broken's status")
  H.eq("awaiting consent", rows.cloned.status, "cloned's status")

  -- :SeriMcp lists them in a scratch buffer.
  vim.cmd("SeriMcp")
  H.wait(function()
    return vim.bo.filetype == "seri_mcp"
  end, "the MCP servers' buffer")
  local buf = vim.api.nvim_get_current_buf()
  H.eq("nofile", vim.bo[buf].buftype, "a scratch buffer")
  H.eq(false, vim.bo[buf].modifiable, "a read-only list")
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, "\n")
  has(text, "r restarts the one under the cursor")
  local line_of = {}
  for i, line in ipairs(lines) do
    local name = line:match("^(%S+)  ")
    if name then
      line_of[name] = i
    end
  end
  has(lines[line_of.probe], "^probe  ready  settings %(.+%)  stdio  6 tools$")
  has(lines[line_of.broken], "^broken  failed  settings %(.+%)  stdio  0 tools  %S")
  has(lines[line_of.broken], "seri%-mcp%-server")
  has(lines[line_of.cloned], "^cloned  awaiting consent  workspace %(.*%.mcp%.json%)  stdio  0 tools")

  -- r restarts the server under the cursor; the list is read again.
  vim.api.nvim_win_set_cursor(0, { line_of.probe, 0 })
  vim.cmd("normal r")
  H.wait(function()
    return vim.tbl_filter(function(note)
      return note.msg:find("MCP server probe is starting again", 1, true)
    end, H.notes)[1]
  end, "the restart's notice")
  H.eq("ready", settled().probe.status, "probe after its restart")
  vim.cmd("normal R")
  H.wait(function()
    return vim.api.nvim_buf_get_lines(buf, line_of.probe - 1, line_of.probe, false)[1]:find("  ready  ")
  end, "the list read again to show probe ready")
  -- r on the header says where to put the cursor.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd("normal r")
  H.truthy(vim.tbl_filter(function(note)
    return note.msg:find("put the cursor on a server's line", 1, true)
  end, H.notes)[1], "a warning for r off a server's line")
  vim.cmd("normal q")
  H.truthy(not vim.api.nvim_buf_is_valid(buf), "q closes (and wipes) the list")

  -- :checkhealth seri: the failed server is an error, the one awaiting consent a warning.
  vim.cmd("checkhealth seri")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  has(report, "ERROR MCP server broken %(settings, [^)]*, stdio%): failed: ")
  has(report, "WARNING MCP server cloned %(workspace, [^)]*, stdio%): awaiting consent")
  has(report, "OK MCP server probe %(settings, [^)]*, stdio%): ready, 6 tools")
  has(report, "restart it from :SeriMcp")
end)
