-- A running command's output (`seri/toolOutput`), shown live under its tool row in the
-- chat while the `run` call runs: virtual lines under the row, the text as printed (tabs
-- expanded, other control characters shown as `^X`, nothing concealed), the last
-- `LIVE_LINES` lines with a count of those above. The stored result (folded under the
-- row) replaces them when the command ends. A last line says which key stops it: that key
-- (or `:SeriStop`) sends `seri.tool.stop` for just that command; the task goes on.

local client = require("seri.client")
local config = require("seri.config")
local render = require("seri.render")
local S = require("seri.chat.state")

local state, valid = S.state, S.valid

local M = {}

-- The lines shown while a command runs (the last ones).
M.LIVE_LINES = 10
-- The text kept per command: enough for the last lines (the whole output is in the
-- result and the trajectory).
local KEEP = 32768

-- A stop sent before the command started is sent again, this often, this many times.
local STOP_RETRY_MS = 100
local STOP_TRIES = 30

local ns = vim.api.nvim_create_namespace("seri_chat_output")

---@class seri.LiveOutput
---@field root string the project
---@field session string the session whose task runs it
---@field call string the tool call's id
---@field text string the last `KEEP` bytes of what it printed
---@field dropped integer lines dropped from `text` (printed before it)
---@field stopping boolean? the user asked to stop it

---@type seri.LiveOutput[] running commands, oldest first
M.live = {}

---@param call string
---@return seri.LiveOutput?, integer?
local function find(call)
  for i, item in ipairs(M.live) do
    if item.call == call then
      return item, i
    end
  end
  return nil, nil
end

---A line as the screen should show it: a carriage return starts the line again (what a
---terminal shows of a progress bar), tabs are expanded to 8 columns, other control
---characters are written `^X`.
---@param line string
---@return string
function M.visible(line)
  line = line:gsub("\r$", "")
  line = line:match("[^\r]*$") or line
  local out, col = {}, 0
  for ch in line:gmatch("[%z\1-\127\194-\244][\128-\191]*") do
    if ch == "\t" then
      local n = 8 - col % 8
      table.insert(out, (" "):rep(n))
      col = col + n
    elseif #ch == 1 and (ch:byte() < 32 or ch:byte() == 127) then
      local caret = ch:byte() == 127 and "^?" or "^" .. string.char(ch:byte() + 64)
      table.insert(out, caret)
      col = col + 2
    else
      table.insert(out, ch)
      col = col + 1
    end
  end
  return table.concat(out)
end

---The lines shown for `item`: the last `LIVE_LINES`, after a line counting those above.
---@param item seri.LiveOutput
---@return string[]
function M.lines(item)
  local lines = vim.split(item.text, "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines) -- the text ends a line
  end
  local above = item.dropped + math.max(0, #lines - M.LIVE_LINES)
  local shown = {}
  if above > 0 then
    table.insert(shown, ("… %s above"):format(render.count(above, "line")))
  end
  for i = math.max(1, #lines - M.LIVE_LINES + 1), #lines do
    table.insert(shown, M.visible(lines[i]))
  end
  return shown
end

---The hint under the output: it runs, and how to stop it.
---@param item seri.LiveOutput
---@return string
local function row_hint(item)
  if item.stopping then
    return "stopping…"
  end
  if #require("seri.approve").pending(item.root) > 0 then
    return "" -- it waits for an answer, maybe its own
  end
  local key = config.options.keymaps.stop_command
  return key and ("running · %s stops it"):format(key) or "running · :SeriStop stops it"
end

---Draw every live output of the session shown (again): after a redraw, or new output.
function M.place()
  if not valid(state.buf) then
    return
  end
  vim.api.nvim_buf_clear_namespace(state.buf, ns, 0, -1)
  local draw = require("seri.chat.draw")
  for _, item in ipairs(M.live) do
    local row = item.root == state.root
      and state.session
      and item.session == state.session.id
      and draw.call_line(item.call)
    if row then
      local hint, virt_lines = row_hint(item), {}
      for _, line in ipairs(M.lines(item)) do
        table.insert(virt_lines, { { render.BODY, "SeriResult" }, { line, "SeriOutput" } })
      end
      if hint ~= "" then
        table.insert(virt_lines, { { render.BODY, "SeriResult" }, { hint, "SeriActivity" } })
      end
      if #virt_lines > 0 then
        vim.api.nvim_buf_set_extmark(state.buf, ns, row, 0, { virt_lines = virt_lines })
      end
    end
  end
end

---A `run` call was stored (the assistant's message that makes it): it runs soon, maybe
---without printing anything, and can be stopped from its row.
---@param project seri.Project
---@param session string
---@param call string
function M.started(project, session, call)
  if not find(call) then
    table.insert(M.live, { root = project.root, session = session, call = call, text = "", dropped = 0 })
    M.place()
  end
end

---More output of a running command (`seri/toolOutput`).
---@param project seri.Project
---@param params {sessionId: string, toolCallId: string, text: string}
function M.on_output(project, params)
  if type(params.toolCallId) ~= "string" or type(params.text) ~= "string" then
    return
  end
  local item = find(params.toolCallId)
  if not item then
    item = {
      root = project.root,
      session = tostring(params.sessionId),
      call = params.toolCallId,
      text = "",
      dropped = 0,
    }
    table.insert(M.live, item)
  end
  item.text = item.text .. params.text
  if #item.text > KEEP then
    -- Keep whole lines: cut after a newline near the limit.
    local cut = item.text:find("\n", #item.text - KEEP, true) or (#item.text - KEEP)
    local gone = item.text:sub(1, cut)
    local _, newlines = gone:gsub("\n", "")
    item.dropped = item.dropped + newlines
    item.text = item.text:sub(cut + 1)
  end
  M.place()
end

---The command of call `call` ended (its result came): its live output goes.
---@param call string?
function M.finish(call)
  local _, i = find(call or "")
  if i then
    table.remove(M.live, i)
    M.place()
  end
end

---Every live output of `root` (of `session` only, when given) goes: the task ended, or
---the server stopped.
---@param root string
---@param session string?
function M.clear(root, session)
  M.live = vim.tbl_filter(function(item)
    return item.root ~= root or (session ~= nil and item.session ~= session)
  end, M.live)
  M.place()
end

---The command to stop: the one whose row the chat's cursor is on, else the one running
---last in the session shown.
---@return seri.LiveOutput?
function M.target()
  local shown = state.session and state.session.id
  local draw = require("seri.chat.draw")
  local win = S.window_of(state.buf)
  local cursor = win and vim.api.nvim_win_get_cursor(win)[1] - 1
  local last = nil
  for _, item in ipairs(M.live) do
    if item.root == state.root and item.session == shown then
      if cursor and draw.call_line(item.call) == cursor then
        return item
      end
      last = item
    end
  end
  return last
end

---Stop the command under the cursor, or the one running (`seri.tool.stop`): just that
---command ends, the task goes on.
function M.stop()
  local item = M.target()
  local project = item and client.projects[item.root]
  if not item or not project then
    require("seri.notice").say("no command is running")
    return
  end
  item.stopping = true
  M.place()
  local args = { sessionId = item.session, toolCallId = item.call }
  local tries = 0
  local function send()
    client.execute(project, "seri.tool.stop", args, function(err)
      if not err or not find(item.call) then
        return -- stopped, or it ended meanwhile
      end
      -- Answered a moment ago, it may not have started yet: ask again shortly.
      tries = tries + 1
      if tries < STOP_TRIES then
        vim.defer_fn(send, STOP_RETRY_MS)
        return
      end
      item.stopping = false
      M.place()
      local text = "could not stop the command: " .. tostring(err.message or err)
      require("seri.notice").say(text, vim.log.levels.WARN)
    end)
  end
  send()
end

return M
