-- What the server says, applied to the chat: sessions opened and renamed, messages and
-- deltas, compactions, how a task ended, questions asked, the server stopping.

local client = require("seri.client")
local config = require("seri.config")
local render = require("seri.render")
local draw = require("seri.chat.draw")
local history = require("seri.chat.history")
local S = require("seri.chat.state")

local state, valid = S.state, S.valid

local M = {}

---Say how a task ended, when not as asked: cancelled, out of turns (and how to go on),
---failed (why, and how to retry). In the chat, and on one line when it is closed.
---@param params {status: string, turns?: integer, error?: string}
local function task_ended(params)
  local notice = require("seri.notice")
  local function say(text, level)
    notice.say(text, level, { turn_end = true })
  end
  local error = type(params.error) == "string" and vim.trim(params.error) or ""
  if params.status == "cancelled" then
    say("Task cancelled.")
  elseif params.status == "max_turns" then
    local turns = tonumber(params.turns)
    local budget = turns and render.count(turns, "turn") or "? turns"
    local text = ("Stopped at the turn budget (%s)."):format(budget)
    say(error ~= "" and (text .. "\n" .. error) or text, vim.log.levels.WARN)
  elseif params.status == "failed" then
    local text = "Task failed: " .. (error ~= "" and error or "no reason was given.")
    local key = config.options.keymaps.retry
    local how = key and (key .. " or :SeriRetry") or ":SeriRetry"
    say(text .. "\n" .. how .. " sends the prompt again.", vim.log.levels.ERROR)
  end
end

---What a compaction did, in numbers, with the recap's lists; <CR> on it opens the recap.
---@param params table `seri/compacted`
local function compacted(params)
  require("seri.notice").say(render.compaction_text(params), nil, { action = "recap" })
end

---@param event seri.Event
---@param project seri.Project
---@param params table?
local function on_event(event, project, params)
  if event == "turn_ended" and params and project.session then
    if params.sessionId == project.session.id then
      task_ended(params) -- said even while the chat is closed
    end
  end
  if event == "compacted" and params and project.session then
    if params.sessionId == project.session.id then
      history.compacted(params.sessionId)
      compacted(params) -- said even while the chat is closed
    end
  end
  local output = require("seri.chat.output")
  if event == "tool_output" and params then
    output.on_output(project, params) -- kept while the chat is closed
  elseif event == "turn_ended" and params then
    output.clear(project.root, params.sessionId)
  elseif event == "exit" then
    output.clear(project.root)
  elseif event == "message" and params and type(params.message) == "table" then
    local msg = params.message
    if msg.role == "tool" then
      output.finish(msg.tool_call_id)
    elseif msg.role == "assistant" and type(msg.tool_calls) == "table" then
      for _, call in ipairs(msg.tool_calls) do
        if type(call) == "table" and call.name == "run" and type(call.id) == "string" then
          output.started(project, params.sessionId, call.id)
        end
      end
    end
  end
  if not valid(state.buf) or project.root ~= state.root then
    return
  end
  if event == "status" then
    -- The first prompt names the session: show the new title once the client has it.
    local fresh = project.session
    local shown = state.session
    if fresh and shown and fresh.id == shown.id and fresh.title ~= shown.title then
      state.session = fresh
      draw.header(fresh)
    end
    if state.loaded then
      draw.redraw_tail() -- what the task waits for, the queue
    end
    return
  end
  params = params or {}
  local renamed = (params.reason == "renamed" or params.reason == "model")
    and type(params.session) == "table"
    and state.session
    and params.session.id == state.session.id
  if event == "session" and renamed then
    -- A new title (or model) for the session shown: the header changes, the rest stays.
    state.session = params.session
    draw.header(params.session)
  elseif event == "session" then
    history.show_session(project, params.session, params.reason)
  elseif event == "message" then
    if state.load_token then
      table.insert(state.backlog, params)
    else
      history.on_message(params)
    end
  elseif event == "delta" then
    history.on_delta(params)
  elseif event == "compacted" then
    if state.session and params.sessionId == state.session.id then
      history.reload(project, { recap = params.trigger == "manual" })
    end
  elseif event == "turn_ended" then
    if state.session and params.sessionId == state.session.id then
      state.stream = ""
      draw.redraw_tail()
    end
  elseif event == "exit" then
    history.notice("The seri server stopped; :Seri starts it again.", vim.log.levels.WARN)
    state.root = nil
    state.loaded = false
  end
end

---The questions of a project changed: draw its cards again; a question that arrives
---while the chat is closed opens it (the cursor stays where it is).
---@param root string
function M.on_questions(root)
  local project = client.projects[root]
  local window = require("seri.chat.window")
  if project and #require("seri.approve").pending(root) > 0 and not window.is_open() then
    window.open(project, { focus = false })
  end
  if valid(state.buf) and state.root == root and state.loaded then
    draw.redraw_tail()
    require("seri.chat.output").place() -- a command's row says it runs once answered
  end
  pcall(vim.cmd, "redrawstatus!")
end

local subscribed = false

---Listen to the server's notifications (once).
function M.setup()
  if not subscribed then
    subscribed = true
    client.subscribe(on_event)
  end
end

return M
