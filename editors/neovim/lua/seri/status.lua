-- The short status for statuslines: context use of the open session, where automatic
-- compaction starts, what its model calls cost (on request), and what a running task
-- waits for. Refreshed after every model call, turn and compaction (the client fetches
-- the usage and the session) and at each `seri/status`.

local client = require("seri.client")
local config = require("seri.config")

local M = {}

---A token count in a few characters: `740`, `9.1k`, `128k`.
---@param n number
---@return string
function M.tokens(n)
  if n < 1000 then
    return tostring(math.floor(n))
  elseif n < 10000 then
    return (("%.1fk"):format(n / 1000):gsub("%.0k$", "k"))
  end
  return ("%dk"):format(math.floor(n / 1000 + 0.5))
end

---A cost in USD as the server's `/cost` writes it: `$0.0123`, `$1.50`.
---@param cost number
---@return string
function M.money(cost)
  if cost >= 1 then
    return ("$%.2f"):format(cost)
  end
  return ("$%.4f"):format(cost)
end

---What a session's model calls cost: `$0.0213`, else its tokens (`50k tok`) when the
---provider reports no cost; nil before any call (or when it reports neither).
---@param session seri.Session?
---@return string?
function M.spend(session)
  local spend = session and session.spend
  if type(spend) ~= "table" or (tonumber(spend.calls) or 0) <= 0 then
    return nil
  end
  if type(spend.cost) == "number" then
    return M.money(spend.cost)
  end
  local used = (tonumber(spend.inputTokens) or 0) + (tonumber(spend.outputTokens) or 0)
  return used > 0 and (M.tokens(used) .. " tok") or nil
end

---The share of a session's input the provider read from its prompt cache: `cache 83% of
---input`; nil before any input, and for a provider that reported no cache read or write.
---@param session seri.Session?
---@return string?
function M.cache(session)
  local spend = session and session.spend
  if type(spend) ~= "table" then
    return nil
  end
  local input = tonumber(spend.inputTokens) or 0
  local read = tonumber(spend.cachedInputTokens) or 0
  local written = tonumber(spend.cacheWriteTokens) or 0
  if input <= 0 or (read <= 0 and written <= 0) then
    return nil
  end
  return ("cache %d%% of input"):format(math.floor(read * 100 / input + 0.5))
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

---`seri 34% (44k/128k) ▏compacts at 64k`: the open session's context use (`model`: after
---`seri ·`, the session's model), where
---automatic compaction starts, `· $0.0213 · cache 83% of input` (its spend and the
---cache's share of its input, `M.cache`) with `spend` (default: the `status.spend`
---option), and `· <activity>` while a task runs (`M.activity`); "" when
---no server runs.
---@param project seri.Project?
---@param opts {spend?: boolean, model?: boolean}?
---@return string
function M.text(project, opts)
  if not project then
    return ""
  end
  local parts = { "seri" }
  local session = project.session
  if opts and opts.model and type(session) == "table" and type(session.model) == "string" then
    parts[1] = "seri · " .. session.model .. " ·"
  end
  local usage = project.usage
  if type(usage) == "table" and tonumber(usage.contextWindow) and usage.contextWindow > 0 then
    local used = tonumber(usage.estimateTokens) or 0
    table.insert(parts, ("%d%%"):format(math.floor(used * 100 / usage.contextWindow + 0.5)))
    table.insert(parts, ("(%s/%s)"):format(M.tokens(used), M.tokens(usage.contextWindow)))
    if tonumber(usage.compactAt) then
      table.insert(parts, "▏compacts at " .. M.tokens(usage.compactAt))
    end
  end
  local text = table.concat(parts, " ")
  local with_spend = opts and opts.spend
  if with_spend == nil then
    with_spend = config.options.status.spend
  end
  local spend = with_spend and M.spend(project.session)
  if spend then
    text = text .. " · " .. spend
    local cache = M.cache(project.session)
    if cache then
      text = text .. " · " .. cache
    end
  end
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
