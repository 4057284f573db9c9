-- The short status for statuslines: context use of the open session, where automatic
-- compaction starts, and what a running task waits for. Refreshed after every model
-- call, turn and compaction (the client fetches the usage) and at each `seri/status`.

local client = require("seri.client")

local M = {}

---@param n number
---@return string
local function tokens(n)
  if n < 1000 then
    return tostring(math.floor(n))
  elseif n < 10000 then
    return (("%.1fk"):format(n / 1000):gsub("%.0k$", "k"))
  end
  return ("%dk"):format(math.floor(n / 1000 + 0.5))
end

---The project a statusline talks about: the only one running, else the current buffer's.
---@return seri.Project?
function M.project()
  local only, count = nil, 0
  for _, project in pairs(client.projects) do
    only, count = project, count + 1
  end
  if count <= 1 then
    return only
  end
  return client.projects[client.root_for(0)]
end

---What the project's running task waits for, in a few words (`waiting for the model`,
---`retrying 1/2`, `running edit app.py`, `waiting for your approval`, `compacting`,
---`running the checks: lint`, else `working`); `starting` before the server is ready;
---nil when nothing runs.
---@param project seri.Project
---@return string?
function M.activity(project)
  if not project.ready then
    return "starting"
  end
  if #require("seri.approve").pending(project.root) > 0 then
    return "waiting for your approval"
  end
  if not client.working(project) then
    return nil
  end
  local activity = project.activity or {}
  local state, detail = activity.state, activity.detail
  if state == "model" then
    local attempt, most = tonumber(activity.attempt), tonumber(activity.maxAttempts)
    if attempt and attempt > 1 then
      local of = most and ("/" .. (most + 1)) or ""
      return ("waiting for the model (try %d%s)"):format(attempt, of)
    end
    return "waiting for the model"
  elseif state == "retrying" then
    local attempt, most = tonumber(activity.attempt), tonumber(activity.maxAttempts)
    return attempt and most and ("retrying %d/%d"):format(attempt, most) or "retrying"
  elseif state == "tool" then
    return detail and ("running " .. detail) or "running a tool"
  elseif state == "approval" then
    return "waiting for your approval"
  elseif state == "compacting" then
    return "compacting"
  elseif state == "checks" then
    return detail and ("running the checks: " .. detail) or "running the checks"
  end
  return "working"
end

---`seri 34% (44k/128k) ▏compacts at 64k`: the open session's context use, where
---automatic compaction starts, and `· <activity>` while a task runs (`M.activity`);
---"" when no server runs.
---@param project seri.Project?
---@return string
function M.text(project)
  if not project then
    return ""
  end
  local parts = { "seri" }
  local usage = project.usage
  if type(usage) == "table" and tonumber(usage.contextWindow) and usage.contextWindow > 0 then
    local used = tonumber(usage.estimateTokens) or 0
    table.insert(parts, ("%d%%"):format(math.floor(used * 100 / usage.contextWindow + 0.5)))
    table.insert(parts, ("(%s/%s)"):format(tokens(used), tokens(usage.contextWindow)))
    if tonumber(usage.compactAt) then
      table.insert(parts, "▏compacts at " .. tokens(usage.compactAt))
    end
  end
  local text = table.concat(parts, " ")
  local activity = M.activity(project)
  if activity then
    text = text .. " · " .. activity
  end
  return text
end

local subscribed = false

---Redraw statuslines and winbars when the status changes (once).
function M.setup()
  if subscribed then
    return
  end
  subscribed = true
  client.subscribe(function(event)
    if event == "status" or event == "session" or event == "turn_ended" or event == "exit" then
      vim.schedule(function()
        pcall(vim.cmd, "redrawstatus!")
      end)
    end
  end)
end

return M
