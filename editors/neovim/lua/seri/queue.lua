-- Prompts sent while a task runs, as Claude Code keeps them: shown in the chat as
-- queued, sent one at a time once the project is idle; a task that was cancelled or
-- failed gives them back to the input instead (the user meant to redirect it).

local client = require("seri.client")

local M = {}

---@class seri.QueuedPrompt
---@field text string the prompt, its `#buffer` and `#selection` already resolved
---@field context seri.ContextEntry[]
---@field on_error fun(err: lsp.ResponseError)?

---Keep `item` until the running task ends.
---@param project seri.Project
---@param item seri.QueuedPrompt
function M.add(project, item)
  table.insert(project.queue, item)
  client.emit_status(project)
end

---Give every queued prompt back to the input.
---@param project seri.Project
local function give_back(project)
  if #project.queue == 0 then
    return
  end
  local chat = require("seri.chat")
  for _, item in ipairs(project.queue) do
    chat.add_to_input(item.text)
  end
  project.queue = {}
  chat.notice("The queued prompts are back in the input.")
  client.emit_status(project)
end

---Send the next queued prompt when nothing runs and nothing is asked.
---@param project seri.Project
local function next_one(project)
  if #project.queue == 0 or not project.ready or client.working(project) then
    return
  end
  if #require("seri.approve").pending(project.root) > 0 then
    return
  end
  require("seri").send(project, table.remove(project.queue, 1))
end

local subscribed = false

---Follow the tasks of every project (once).
function M.setup()
  if subscribed then
    return
  end
  subscribed = true
  client.subscribe(function(event, project, params)
    if event == "turn_ended" and type(params) == "table" then
      local open = project.session and project.session.id
      if params.sessionId == open and (params.status == "cancelled" or params.status == "failed") then
        give_back(project)
      end
      vim.schedule(function()
        next_one(project)
      end)
    elseif event == "status" then
      vim.schedule(function()
        next_one(project)
      end)
    elseif event == "exit" then
      give_back(project)
    end
  end)
end

return M
