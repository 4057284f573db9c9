-- The short status for statuslines: context use of the open session and whether a
-- task runs. Refreshed after every model call, turn and compaction (the client fetches
-- the usage).

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

---`seri 3% (3.8k/128k)`, with `working` while a task runs and `starting` before the
---server is ready; "" when no server runs.
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
  end
  if not project.ready then
    table.insert(parts, "starting")
  elseif client.working(project) then
    table.insert(parts, "working")
  end
  return table.concat(parts, " ")
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
