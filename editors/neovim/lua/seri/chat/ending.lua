-- How a turn ended, as the server stores it on the turn's last message (`turnEnded`):
-- lines under that message when the turn did not end normally, so that a chat opened
-- again still says why a prompt has no reply (it failed), that a turn was cancelled, or
-- that a reply was cut off when seri stopped.

local render = require("seri.render")

local M = {}

-- What each status says; `%s` is the server's words.
local SAYS = {
  failed = { "Task failed: %s", vim.log.levels.ERROR },
  max_turns = { "Stopped at the turn budget.\n%s", vim.log.levels.WARN },
  cancelled = { "Cancelled.", nil },
  interrupted = { "⋯ %s", vim.log.levels.WARN },
}

-- When the server gave no words.
local FALLBACK = {
  failed = "no reason was given.",
  interrupted = "The reply was cut off: seri stopped before this turn ended.",
}

---A task's end said while the chat had no message to put it after (it was never open)
---belongs to the last message once there is one: placed before drawing, so that the
---stored end of that message is not drawn beside it.
---@param messages seri.Message[]
---@param notices seri.ChatNotice[]
function M.place(messages, notices)
  local last = messages[#messages]
  for _, n in ipairs(notices) do
    if n.turn_end and n.after == nil and last then
      n.after = last.id
    end
  end
end

---The lines after `msg` that say how its turn ended; nil when it is not a turn's last
---message, the turn ended normally, or the chat said it already (a notice of the task's
---end follows the same message).
---@param msg seri.Message
---@param notices seri.ChatNotice[]
---@return seri.Block?
function M.block(msg, notices)
  local ended = msg.turnEnded
  local says = type(ended) == "table" and SAYS[ended.status]
  if not says then
    return nil
  end
  for _, n in ipairs(notices) do
    if n.turn_end and n.after == msg.id then
      return nil
    end
  end
  local words = type(ended.error) == "string" and vim.trim(ended.error) or ""
  if words == "" then
    words = FALLBACK[ended.status] or ""
  end
  local text = says[1]:gsub("%%s", function()
    return words
  end)
  return render.notice(vim.trim(text), says[2])
end

return M
