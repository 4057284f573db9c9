-- :SeriMcp and :checkhealth seri's MCP section: a working MCP server (our test server,
-- `probe`), one whose command does not exist (`broken`), both from the settings, and the
-- workspace's .mcp.json server (`cloned`), which waits for consent: asked as a card in
-- the chat (`a` Allow, `d` Not now, `gN` Never for this project), asked again from
-- :SeriMcp (`a`) and revoked there (`x`).
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
  has(text, "a asks to start them, x revokes consent")
  local line_of = {}
  for i, line in ipairs(lines) do
    local name = line:match("^(%S+)  ")
    if name then
      line_of[name] = i
    end
  end
  has(lines[line_of.probe], "^probe  ready  settings %(.+%)  stdio  7 tools$")
  has(lines[line_of.broken], "^broken  failed  settings %(.+%)  stdio  0 tools  %S")
  has(lines[line_of.broken], "seri%-mcp%-server")
  has(lines[line_of.cloned], "^cloned  awaiting consent  workspace %(.*%.mcp%.json%)  stdio  0 tools")

  -- r restarts the server under the cursor; the list is read again.
  vim.api.nvim_win_set_cursor(0, { line_of.probe, 0 })
  vim.cmd("normal r")
  H.wait_note("MCP server probe is starting again")
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
  has(report, "OK MCP server probe %(settings, [^)]*, stdio%): ready, 7 tools")
  has(report, "restart it from :SeriMcp")

  -- The consent question asked at start-up is a card in the chat, which opened for it:
  -- the server with its command line, and a key for each answer.
  vim.cmd("tabclose") -- (the health report's)
  local approve = require("seri.approve")
  local root = vim.uv.fs_realpath(H.env.workspace)
  H.wait(function()
    return approve.pending(root)[1]
  end, "the consent question")
  H.wait_chat({ "MCP servers configured in this workspace's .mcp.json: cloned (`true`)" })
  H.wait_chat({ "a Allow · d Not now · gN Never for this project" })
  local chat_win = vim.fn.bufwinid(require("seri.chat").state.buf)
  H.truthy(chat_win ~= -1, "the chat opened for the question")
  vim.api.nvim_set_current_win(chat_win)
  vim.cmd("normal d")
  H.wait(function()
    return approve.pending(root)[1] == nil
  end, "Not now to answer the question")
  H.eq("awaiting consent", settled().cloned.status, "cloned after Not now")

  -- :SeriMcp's `a` asks again; `gN` in the chat answers Never for this project.
  vim.cmd("SeriMcp")
  H.wait(function()
    return vim.bo.filetype == "seri_mcp"
  end, "the MCP servers' buffer again")
  local list = vim.api.nvim_get_current_buf()
  vim.cmd("normal a")
  H.wait(function()
    return approve.pending(root)[1]
  end, "the question asked again")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(require("seri.chat").state.buf))
  vim.cmd("normal gN")
  H.wait_note("MCP servers: Never for this project")
  local kept = vim.json.decode(table.concat(vim.fn.readfile(H.env.profile .. "/mcp-consent.json"), "\n"))
  H.eq({ "never" }, kept[root], "Never is kept for the project")
  -- `x` revokes what was kept.
  vim.api.nvim_set_current_win(vim.fn.bufwinid(list))
  vim.cmd("normal x")
  H.wait_note("consent revoked")
  local after = vim.json.decode(table.concat(vim.fn.readfile(H.env.profile .. "/mcp-consent.json"), "\n"))
  H.eq(nil, after[root], "nothing kept for the project after x")

  -- A call to one of probe's tools is asked about (permissions.mcp: ask) on a card with
  -- the tool, its server and its arguments exactly, brackets and quotes included.
  vim.cmd("SeriPrompt use the probe")
  H.wait(function()
    return approve.pending(root)[1]
  end, "the call's question")
  H.wait_chat({
    "seri wants to call the MCP tool echo of server probe",
    "  count: 2",
    [[  text: "say [^a-z]+ and post[\"tags\"][0]"]],
    "a Allow · A Allow this tool for the session · d Deny",
  })
  vim.o.columns = 200 -- (the whole line on one screen row)
  vim.api.nvim_win_set_width(vim.fn.bufwinid(require("seri.chat").state.buf), 120)
  vim.cmd("redraw")
  H.shown_exactly(vim.fn.bufwinid(require("seri.chat").state.buf), [[text: "say [^a-z]+ and post[\"tags\"][0]"]])
  vim.api.nvim_set_current_win(vim.fn.bufwinid(require("seri.chat").state.buf))
  vim.cmd("normal a")
  H.eq("done", H.wait_turn(1).status, "the allowed call")
  H.wait_chat({ "It said it twice." })

  -- /context names each server's tool definitions (sent with every request).
  local context = H.call("seri.session.context")
  local parts = vim.tbl_filter(function(part)
    return part.kind == "mcpTools"
  end, context.parts)
  H.eq("probe", parts[1] and parts[1].name, "probe's tool definitions among the parts")
  H.eq("MCP tools of probe", require("seri.context").label(parts[1], root), "their label")
end)
