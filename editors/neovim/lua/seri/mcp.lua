-- `:SeriMcp`: the project's MCP servers (`seri.info`'s `mcpServers`) in a scratch
-- buffer, a line each: name, status, origin (and where it was configured), transport,
-- tool count, and why it failed or waits. `r` restarts the server under the cursor
-- (`seri.mcp.restart`); `a` asks again whether the workspace's own servers may start
-- (the question shows in the chat) and `x` revokes that consent (`seri.mcp.consent`);
-- `R` reads the list again, `q` closes.

local client = require("seri.client")
local notice = require("seri.notice")

local M = {}

---@class seri.McpServer
---@field name string
---@field configuredIn string
---@field origin "workspace"|"profile"|"settings"
---@field transport "stdio"|"http"
---@field status "starting"|"ready"|"failed"|"stopped"|"awaiting consent"
---@field tools integer
---@field reason string?

-- The buffer's header lines, before the first server's.
local HEADER = 3

---The buffer's lines for `servers`; the line of the i-th server is HEADER + i.
---@param servers seri.McpServer[]
---@return string[]
function M.lines(servers)
  local lines = {
    "MCP servers: r restarts the one under the cursor, R reads again, q closes",
    "The workspace's own servers: a asks to start them, x revokes consent",
    "",
  }
  if #servers == 0 then
    table.insert(
      lines,
      "No MCP servers are configured (settings.mcpServers, the workspace's .mcp.json, the profile's mcp.json)."
    )
    return lines
  end
  for _, server in ipairs(servers) do
    local parts = {
      server.name,
      server.status,
      ("%s (%s)"):format(server.origin, server.configuredIn),
      server.transport,
      ("%d tool%s"):format(server.tools, server.tools == 1 and "" or "s"),
    }
    local line = table.concat(parts, "  ")
    if server.reason and server.reason ~= "" then
      -- A reason may hold stderr lines: one line in the buffer.
      line = line .. "  " .. (server.reason:gsub("%s*\n%s*", " | "))
    end
    table.insert(lines, line)
  end
  return lines
end

---@type table<integer, {project: seri.Project, servers: seri.McpServer[]}>
local shown = {}

---The server on the cursor's line of a `:SeriMcp` buffer.
---@param buf integer
---@return seri.McpServer?
function M.under_cursor(buf)
  local state = shown[buf]
  if not state then
    return nil
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  return state.servers[row - HEADER]
end

---@param buf integer
---@param servers seri.McpServer[]
local function fill(buf, servers)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.lines(servers))
  vim.bo[buf].modifiable = false
end

---Read the list again into `buf`.
---@param buf integer
---@param done fun()?
function M.refresh(buf, done)
  local state = shown[buf]
  if not state then
    return
  end
  client.execute(state.project, "seri.info", nil, function(err, result)
    if err or type(result) ~= "table" then
      notice.say("MCP servers: " .. (err and err.message or "no answer"), vim.log.levels.ERROR)
    elseif vim.api.nvim_buf_is_valid(buf) then
      state.servers = result.mcpServers or {}
      fill(buf, state.servers)
    end
    if done then
      done()
    end
  end)
end

---Restart the server under the cursor of `buf`.
---@param buf integer
---@param done fun()?
function M.restart(buf, done)
  local state, server = shown[buf], M.under_cursor(buf)
  if not state or not server then
    notice.say("MCP servers: put the cursor on a server's line", vim.log.levels.WARN)
    return
  end
  client.execute(state.project, "seri.mcp.restart", { name = server.name }, function(err)
    if err then
      notice.say(("MCP server %s: %s"):format(server.name, err.message), vim.log.levels.ERROR)
    else
      notice.say(("MCP server %s is starting again"):format(server.name))
    end
    M.refresh(buf, done)
  end)
end

---Ask again whether the workspace's servers may start (the question is a card in the
---chat, which opens for it), or revoke the consent kept (`revoke`); the list is read again.
---@param buf integer
---@param revoke boolean
---@param done fun()?
function M.consent(buf, revoke, done)
  local state = shown[buf]
  if not state then
    return
  end
  local args = revoke and { revoke = true } or vim.empty_dict()
  client.execute(state.project, "seri.mcp.consent", args, function(err, result)
    if err or type(result) ~= "table" then
      notice.say("MCP servers: " .. (err and err.message or "no answer"), vim.log.levels.ERROR)
    elseif revoke then
      notice.say(
        result.revoked and "MCP servers: consent revoked; the workspace's servers are stopped"
          or "MCP servers: no consent was kept for this workspace"
      )
    elseif result.answer == vim.NIL or result.answer == nil then
      notice.say("MCP servers: none of the workspace's servers waits for consent")
    else
      notice.say(("MCP servers: %s"):format(result.answer))
    end
    M.refresh(buf, done)
  end)
end

---Open the list of `project`'s MCP servers in a scratch buffer (in a split).
---@param project seri.Project
---@param done fun(buf: integer?)? called once shown (nil: it failed)
function M.open(project, done)
  client.execute(project, "seri.info", nil, function(err, result)
    if err or type(result) ~= "table" then
      notice.say("MCP servers: " .. (err and err.message or "no answer"), vim.log.levels.ERROR)
      if done then
        done(nil)
      end
      return
    end
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].filetype = "seri_mcp"
    pcall(vim.api.nvim_buf_set_name, buf, "seri://mcp/" .. buf)
    shown[buf] = { project = project, servers = result.mcpServers or {} }
    fill(buf, shown[buf].servers)
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = buf,
      once = true,
      callback = function()
        shown[buf] = nil
      end,
    })
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.api.nvim_win_set_cursor(0, { math.min(HEADER + 1, vim.api.nvim_buf_line_count(buf)), 0 })
    local keys = {
      r = { M.restart, "Restart the MCP server under the cursor" },
      R = { M.refresh, "Read the MCP servers again" },
      a = {
        function(b)
          M.consent(b, false)
        end,
        "Ask whether the workspace's MCP servers may start",
      },
      x = {
        function(b)
          M.consent(b, true)
        end,
        "Revoke consent for the workspace's MCP servers",
      },
      q = {
        function()
          vim.cmd("close")
        end,
        "Close",
      },
    }
    for key, entry in pairs(keys) do
      vim.keymap.set("n", key, function()
        entry[1](buf)
      end, { buffer = buf, nowait = true, desc = entry[2] })
    end
    if done then
      done(buf)
    end
  end)
end

return M
