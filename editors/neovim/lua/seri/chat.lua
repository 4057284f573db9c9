-- The chat: a `seri://chat` buffer (filetype `seri`, markdown highlighting) in a split,
-- with a small `seri://input` window under it for typing prompts.
--
-- The buffer holds the open session of one project: its history from `seri.session.get`
-- (newest page first, earlier pages on request), then every `seri/message` as it arrives,
-- with the reply in progress streamed from `seri/delta` at the end. The buffer is
-- [stored lines][tail]; the tail is what is not stored: the streamed reply, what the task
-- waits for, prompts queued behind it, and the questions it asks (cards). A stored
-- message replaces the streamed lines.
--
-- The view follows: a window whose end is in view stays at the end as lines come.

local client = require("seri.client")
local code = require("seri.code")
local config = require("seri.config")
local render = require("seri.render")
local view = require("seri.view")

local M = {}

local tail -- the blocks after the stored part (defined with the drawing functions)

local ns = vim.api.nvim_create_namespace("seri_chat")
-- Marks on tool-call lines, so a result arriving later goes right under its call.
local calls_ns = vim.api.nvim_create_namespace("seri_chat_calls")
-- The frames drawn around fenced code blocks.
local frames_ns = vim.api.nvim_create_namespace("seri_chat_frames")


M.CHAT_NAME = "seri://chat"
M.INPUT_NAME = "seri://input"

---@class seri.ChatState
---@field buf integer?
---@field input integer?
---@field root string? the project shown
---@field session seri.Session?
---@field reason string? why the session was opened
---@field messages seri.Message[] stored messages shown, oldest first
---@field seen table<integer, boolean> ids of `messages`
---@field has_more boolean older messages exist on the server
---@field loaded boolean
---@field load_token table? the `seri.session.get` whose answer is awaited
---@field backlog table[] `seri/message` params that arrived while loading
---@field stream string text of the reply in progress
---@field stored_end integer lines before the streamed part
---@field last_role string? role of the last stored block
---@field load_line integer? 0-based line of "load earlier messages"
---@field call_marks table<string, integer> extmark on each tool call's line, by call id
---@field tail_items {first: integer, last: integer, question?: seri.Question, queued?: integer}[] 0-based lines of cards and queued prompts
---@field highlighted boolean the buffer is highlighted by treesitter
---@field notices {text: string, level: integer?, after: integer?, session: string?}[] the plugin's lines, by the message they follow
local state = {
  call_marks = {},
  notices = {},
  tail_items = {},
  highlighted = false,
  messages = {},
  seen = {},
  has_more = false,
  loaded = false,
  backlog = {},
  stream = "",
  stored_end = 0,
}
M.state = state

---@param buf integer?
---@return boolean
local function valid(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf)
end

---@return integer[] windows of the current tab page showing the chat or its input
local function windows()
  local wins = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if buf == state.buf or buf == state.input then
      table.insert(wins, win)
    end
  end
  return wins
end

---@param buf integer?
---@return integer?
local function window_of(buf)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  return nil
end

---Whether the chat is shown in the current tab page.
---@return boolean
function M.is_open()
  return valid(state.buf) and window_of(state.buf) ~= nil
end

-- Writing the buffer -----------------------------------------------------------------

---Replace lines [first, last) with `blocks`, keeping windows that were at the end there.
---@param first integer
---@param last integer
---@param blocks seri.Block[]
local function write(first, last, blocks)
  local buf = state.buf
  if not valid(buf) then
    return
  end
  local lines, marks, calls, frames = {}, {}, {}, {}
  for _, b in ipairs(blocks) do
    local at = first + #lines
    for _, mark in ipairs(b.marks) do
      table.insert(marks, { line = at + mark.line, group = mark.group, end_col = mark.end_col })
    end
    for id, line in pairs(b.calls or {}) do
      calls[id] = at + line
    end
    for _, frame in ipairs(b.frames or {}) do
      table.insert(frames, {
        frame = { first = at + frame.first, last = frame.last and at + frame.last, lang = frame.lang },
        stop = at + #b.lines - 1,
      })
    end
    vim.list_extend(lines, b.lines)
  end
  local count = vim.api.nvim_buf_line_count(buf)
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if view.at_end(win, count) then
      table.insert(following, win)
    end
  end
  vim.bo[buf].modifiable = true
  if last < 0 then
    last = count
  end
  vim.api.nvim_buf_clear_namespace(buf, ns, first, last)
  vim.api.nvim_buf_clear_namespace(buf, frames_ns, first, last)
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  for id, line in pairs(calls) do
    state.call_marks[id] = vim.api.nvim_buf_set_extmark(buf, calls_ns, line, 0, {})
  end
  for _, mark in ipairs(marks) do
    local text = vim.api.nvim_buf_get_lines(buf, mark.line, mark.line + 1, false)[1] or ""
    vim.api.nvim_buf_set_extmark(buf, ns, mark.line, 0, {
      end_row = mark.line,
      end_col = math.min(mark.end_col or #text, #text),
      hl_group = mark.group,
      priority = mark.end_col and 160 or 150,
    })
  end
  for _, item in ipairs(frames) do
    code.draw_frame(buf, frames_ns, item.frame, item.stop, state.highlighted)
  end
  for _, win in ipairs(following) do
    view.to_end(win)
  end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    view.keep_in_view(win)
  end
end

---@return seri.Project?
local function shown_project()
  return state.root and client.projects[state.root] or nil
end

---The blocks after the stored part, starting at 0-based line `at`: the streamed reply,
---what the task waits for (while it runs), queued prompts and questions. Notes where
---the cards and queued prompts are, for the keys that act on them.
---@param at integer
---@return seri.Block[]
function tail(at)
  local blocks = { render.stream(state.stream, state.last_role) }
  local project = shown_project()
  local items = {}
  local function place(b, item)
    item.first = at
    for _, other in ipairs(blocks) do
      item.first = item.first + #other.lines
    end
    item.last = item.first + #b.lines - 1
    table.insert(blocks, b)
    table.insert(items, item)
  end
  local questions = require("seri.approve").pending(state.root)
  if project and #questions == 0 and client.working(project) then
    local activity = require("seri.status").activity(project)
    -- While the reply streams in, its text is the sign of life.
    local streaming = state.stream ~= "" and project.activity and project.activity.state == "model"
    if activity and not streaming then
      local retry = project.activity
      if retry and retry.state == "retrying" and retry.detail then
        local delay = tonumber(retry.delay)
        local when = delay and delay >= 1 and (" in %ds"):format(math.floor(delay + 0.5)) or ""
        activity = ("%s%s: %s"):format(activity, when, retry.detail)
      end
      table.insert(blocks, render.activity(activity))
    end
  end
  for i, item in ipairs(project and project.queue or {}) do
    place(render.queued(item.text, config.options.keymaps.drop_queued or nil), { queued = i })
  end
  for _, q in ipairs(questions) do
    place(render.card(q.params, require("seri.approve").card_keys(q)), { question = q })
  end
  state.tail_items = items
  return blocks
end

-- render.header() is always this many lines.
local HEADER_LINES = 3

---Draw everything again from the state.
local function redraw()
  if not valid(state.buf) then
    return
  end
  local blocks = { render.header(state.session, state.reason) }
  local count = #blocks[1].lines
  state.load_line = nil
  if state.has_more then
    local key = config.options.keymaps.load_earlier
    table.insert(blocks, render.load_earlier(key or nil))
    state.load_line = count
    count = count + #blocks[#blocks].lines
  end
  -- Each tool result is drawn under its call, when the call is shown.
  local results, placed = {}, {}
  for _, msg in ipairs(state.messages) do
    if msg.role == "tool" and msg.tool_call_id then
      results[msg.tool_call_id] = msg
    end
  end
  -- The plugin's notices go after the message they followed; one whose message is not
  -- shown (any more) goes at the end, and follows the last message from then on.
  local shown_ids, unplaced = {}, {}
  for _, msg in ipairs(state.messages) do
    if msg.id ~= nil then
      shown_ids[msg.id] = true
    end
  end
  for _, n in ipairs(state.notices) do
    if n.after == nil or not shown_ids[n.after] then
      table.insert(unplaced, n)
    end
  end
  local function add_notices(after)
    for _, n in ipairs(state.notices) do
      if after ~= nil and n.after == after then
        local b = render.notice(n.text, n.level)
        table.insert(blocks, b)
        count = count + #b.lines
      end
    end
  end
  local prev = nil
  for _, msg in ipairs(state.messages) do
    if not (msg.role == "tool" and placed[msg.tool_call_id]) then
      local b
      b, prev = render.message(msg, prev, results)
      for id in pairs(b.calls) do
        placed[id] = results[id] ~= nil
      end
      table.insert(blocks, b)
      count = count + #b.lines
    end
    add_notices(msg.id)
  end
  local last = state.messages[#state.messages]
  for _, n in ipairs(unplaced) do
    n.after = last and last.id
    local b = render.notice(n.text, n.level)
    table.insert(blocks, b)
    count = count + #b.lines
  end
  state.last_role = prev
  state.stored_end = count
  state.call_marks = {}
  vim.api.nvim_buf_clear_namespace(state.buf, calls_ns, 0, -1)
  vim.list_extend(blocks, tail(count))
  write(0, -1, blocks)
end

---Show stored blocks after the stored part, then the tail again.
---@param blocks seri.Block[]
local function append(blocks)
  local count = 0
  for _, b in ipairs(blocks) do
    count = count + #b.lines
  end
  local all = vim.list_extend({}, blocks)
  vim.list_extend(all, tail(state.stored_end + count))
  write(state.stored_end, -1, all)
  state.stored_end = state.stored_end + count
end

---Draw the tail again (the streamed reply, the activity, queued prompts, questions).
local function redraw_tail()
  write(state.stored_end, -1, tail(state.stored_end))
end

-- Applying what the server says ------------------------------------------------------

---@param params {sessionId: string, message: seri.Message}
local function on_message(params)
  local msg = params.message
  if not state.session or params.sessionId ~= state.session.id or type(msg) ~= "table" then
    return -- a subagent's session, or another session
  end
  if msg.id ~= nil and state.seen[msg.id] then
    return
  end
  if msg.kind == "recap" then
    return -- `seri/compacted` follows and the history is fetched again
  end
  if msg.id ~= nil then
    state.seen[msg.id] = true
  end
  table.insert(state.messages, msg)
  if msg.role == "assistant" then
    state.stream = "" -- the stored reply replaces what was streamed
  end
  local mark = msg.role == "tool" and state.call_marks[msg.tool_call_id]
  local at = mark and vim.api.nvim_buf_get_extmark_by_id(state.buf, calls_ns, mark, {})[1]
  if at and at < state.stored_end then
    local b = render.result(msg)
    write(at + 1, at + 1, { b })
    state.stored_end = state.stored_end + #b.lines
    state.last_role = "tool"
    return
  end
  local b
  b, state.last_role = render.message(msg, state.last_role)
  append({ b })
end

---@param params {sessionId: string, text: string, reset?: boolean}
local function on_delta(params)
  if not state.session or params.sessionId ~= state.session.id then
    return
  end
  if params.reset then
    state.stream = "" -- a retry starts the reply again
  end
  state.stream = state.stream .. (type(params.text) == "string" and params.text or "")
  redraw_tail()
end

---Lines of the plugin's own at the end of the stored part; they stay after the message
---they follow when the chat is drawn again, until the session changes.
---@param text string
---@param level integer? vim.log.levels
function M.notice(text, level)
  local session = state.session
  if not session then
    local project = client.current()
    session = project and project.session
  end
  local last = state.messages[#state.messages]
  local item = { text = text, level = level, after = last and last.id, session = session and session.id }
  table.insert(state.notices, item)
  if valid(state.buf) and state.loaded then
    append({ render.notice(text, level) })
  end
end

---Fetch the newest page of the open session and draw it; `recap` puts the recap in view
---(after a compaction the user asked for).
---@param project seri.Project
---@param opts {recap?: boolean}?
function M.reload(project, opts)
  local token = {}
  state.load_token = token
  state.backlog = {}
  local args = { limit = config.options.chat.page_size }
  client.execute(project, "seri.session.get", args, function(err, result)
    if state.load_token ~= token then
      return -- a newer load replaced this one
    end
    state.load_token = nil
    if err or type(result) ~= "table" then
      M.notice("Could not load the session: " .. (err and err.message or "no answer"))
      return
    end
    state.session = type(result.session) == "table" and result.session or nil
    state.messages, state.seen = {}, {}
    for _, msg in ipairs(type(result.messages) == "table" and result.messages or {}) do
      table.insert(state.messages, msg)
      if msg.id ~= nil then
        state.seen[msg.id] = true
      end
    end
    state.has_more = result.hasMore == true
    state.loaded = true
    redraw()
    if opts and opts.recap then
      view.show_line(state.buf, "## Recap")
    end
    local backlog = state.backlog
    state.backlog = {}
    for _, params in ipairs(backlog) do
      on_message(params)
    end
  end)
end

---Fetch the page before the oldest message shown and put it on top.
function M.load_earlier()
  local project = state.root and client.projects[state.root]
  local oldest = state.messages[1]
  if not (project and state.has_more and state.session and oldest) then
    return
  end
  local args = {
    sessionId = state.session.id,
    limit = config.options.chat.page_size,
    before = oldest.id,
  }
  local session_id = state.session.id
  client.execute(project, "seri.session.get", args, function(err, result)
    if err or type(result) ~= "table" then
      local why = err and err.message or "no answer"
      require("seri.notice").say("could not load earlier messages: " .. why, vim.log.levels.ERROR)
      return
    end
    if not state.session or state.session.id ~= session_id then
      return
    end
    local earlier = {}
    for _, msg in ipairs(type(result.messages) == "table" and result.messages or {}) do
      if msg.id == nil or not state.seen[msg.id] then
        table.insert(earlier, msg)
        if msg.id ~= nil then
          state.seen[msg.id] = true
        end
      end
    end
    state.messages = vim.list_extend(earlier, state.messages)
    -- A page with nothing new (a server that ignores `before`) ends the paging.
    state.has_more = result.hasMore == true and #earlier > 0
    local win = window_of(state.buf)
    local before = vim.api.nvim_buf_line_count(state.buf)
    local cursor = win and vim.api.nvim_win_get_cursor(win)
    redraw()
    if win and cursor then
      local moved = vim.api.nvim_buf_line_count(state.buf) - before
      vim.api.nvim_win_set_cursor(win, { math.max(1, cursor[1] + moved), 0 })
    end
  end)
end

---Start showing `session` afresh: nothing of the previous one stays; its newest page
---is fetched.
---@param project seri.Project
---@param session seri.Session?
---@param reason string?
local function show_session(project, session, reason)
  state.session = session
  state.reason = reason
  state.stream = ""
  state.messages, state.seen = {}, {}
  -- Notices of this session stay (said while the chat was closed); others go.
  state.notices = vim.tbl_filter(function(n)
    return n.session == (session and session.id)
  end, state.notices)
  state.has_more = false
  redraw()
  M.reload(project)
end

---Say how a task ended, when not as asked: cancelled, out of turns (and how to go on),
---failed (why, and how to retry). In the chat, and on one line when it is closed.
---@param params {status: string, turns?: integer, error?: string}
local function task_ended(params)
  local say = require("seri.notice").say
  local error = type(params.error) == "string" and vim.trim(params.error) or ""
  if params.status == "cancelled" then
    say("Task cancelled.")
  elseif params.status == "max_turns" then
    local text = ("Stopped at the turn budget (%s turns)."):format(params.turns or "?")
    say(error ~= "" and (text .. "\n" .. error) or text, vim.log.levels.WARN)
  elseif params.status == "failed" then
    local text = "Task failed: " .. (error ~= "" and error or "no reason was given.")
    local key = config.options.keymaps.retry
    local how = key and (key .. " or :SeriRetry") or ":SeriRetry"
    say(text .. "\n" .. how .. " sends the prompt again.", vim.log.levels.ERROR)
  end
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
  if not valid(state.buf) or project.root ~= state.root then
    return
  end
  if event == "status" then
    -- The first prompt names the session: show the new title once the client has it.
    local fresh = project.session
    local shown = state.session
    if fresh and shown and fresh.id == shown.id and fresh.title ~= shown.title then
      state.session = fresh
      write(0, HEADER_LINES, { render.header(fresh, state.reason) })
    end
    if state.loaded then
      redraw_tail() -- what the task waits for, the queue
    end
    return
  end
  params = params or {}
  if event == "session" then
    show_session(project, params.session, params.reason)
  elseif event == "message" then
    if state.load_token then
      table.insert(state.backlog, params)
    else
      on_message(params)
    end
  elseif event == "delta" then
    on_delta(params)
  elseif event == "compacted" then
    if state.session and params.sessionId == state.session.id then
      M.reload(project, { recap = params.trigger == "manual" })
    end
  elseif event == "turn_ended" then
    if state.session and params.sessionId == state.session.id then
      state.stream = ""
      redraw_tail()
    end
  elseif event == "exit" then
    M.notice("The seri server stopped; :Seri starts it again.", vim.log.levels.WARN)
    state.root = nil
    state.loaded = false
  end
end

-- Buffers and windows ----------------------------------------------------------------

---@param name string
---@return integer
local function scratch(name)
  local existing = vim.fn.bufnr("^" .. name .. "$")
  local buf = existing ~= -1 and existing or vim.api.nvim_create_buf(false, true)
  if existing == -1 then
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  return buf
end

---@param buf integer
---@param lhs string|false
---@param modes string|string[]
---@param fn function
---@param desc string
local function map(buf, modes, lhs, fn, desc)
  if lhs then
    vim.keymap.set(modes, lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
  end
end

---The card under the cursor in the chat, else the oldest question of the chat's project.
---@return seri.Question?
local function question_here()
  local win = window_of(state.buf)
  local row = win and vim.api.nvim_win_get_cursor(win)[1] - 1
  for _, item in ipairs(state.tail_items) do
    if item.question and row and row >= item.first and row <= item.last then
      return item.question
    end
  end
  return require("seri.approve").pending(state.root)[1]
end

---An answer key in the chat: answer the question under the cursor (or the oldest);
---`a` and `A` go to the prompt when nothing is asked.
---@param name string
---@return fun()
local function answer_key(name)
  return function()
    local q = question_here()
    if q and require("seri.approve").answer_by_name(q, name) then
      return
    end
    if name ~= "deny" and not q then
      M.focus_input(true)
    end
  end
end

---Yank the code block under the cursor into the register the key was given (`"+gy`).
local function yank_code()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local lines, lang = code.block_at(M.lines(), row)
  if not lines then
    require("seri.notice").say("No code block under the cursor.")
    return
  end
  vim.fn.setreg(vim.v.register, lines, "l")
  local what = (lang and lang ~= "") and (lang .. " ") or ""
  vim.api.nvim_echo({ { ("seri: yanked %d lines of %scode"):format(#lines, what) } }, false, {})
end

---Go to the next (`1`) or previous (`-1`) heading: a prompt, a reply, a recap.
---@param direction integer
local function jump_turn(direction)
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local lines = M.lines()
  local i = row + direction
  while i >= 1 and i <= #lines do
    if vim.startswith(lines[i], "## ") then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
      return
    end
    i = i + direction
  end
end

---Take the queued prompt under the cursor (or the last one) back into the input.
local function drop_queued()
  local project = shown_project()
  if not project or #project.queue == 0 then
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local index = #project.queue
  for _, item in ipairs(state.tail_items) do
    if item.queued and row >= item.first and row <= item.last then
      index = item.queued
    end
  end
  local item = table.remove(project.queue, index)
  M.add_to_input(item.text)
  client.emit_status(project)
end

---Start completion in the input as `@`, `#` or a leading `/` is typed, unless a
---completion plugin does that.
local function complete_on_trigger()
  local char = vim.v.char
  if char ~= "@" and char ~= "#" and char ~= "/" then
    return
  end
  local attach = require("seri.attach")
  if attach.engine_present() then
    return
  end
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local before = vim.api.nvim_get_current_line():sub(1, col)
  local starts = before == "" or before:match("[%s(]$")
  if char == "/" then
    starts = row == 1 and vim.trim(before) == ""
  end
  if starts then
    vim.schedule(function()
      if vim.fn.mode() == "i" and vim.fn.pumvisible() == 0 then
        vim.api.nvim_feedkeys(vim.keycode("<C-x><C-o>"), "n", false)
      end
    end)
  end
end

local function ensure_buffers()
  local keys = config.options.keymaps
  if not valid(state.buf) then
    state.buf = scratch(M.CHAT_NAME)
    vim.bo[state.buf].modifiable = false
    vim.bo[state.buf].filetype = "seri"
    state.highlighted = pcall(vim.treesitter.start, state.buf, "markdown")
    if not state.highlighted then
      vim.bo[state.buf].syntax = "markdown"
    end
    state.loaded = false
    state.root = nil
    local buf = state.buf
    map(buf, "n", keys.close, M.close, "Close the seri chat")
    map(buf, { "n", "i" }, keys.cancel, function()
      require("seri").cancel()
    end, "Cancel the seri task")
    map(buf, "n", keys.load_earlier, function()
      local line = vim.api.nvim_win_get_cursor(0)[1] - 1
      if state.load_line and line == state.load_line then
        M.load_earlier()
      else
        M.focus_input()
      end
    end, "Load earlier messages, or go to the prompt")
    map(buf, "n", "i", function()
      M.focus_input(true)
    end, "Type a prompt")
    map(buf, "n", keys.allow, answer_key("allow"), "seri: allow what is asked")
    map(buf, "n", keys.allow_session, answer_key("allow_session"), "seri: allow for the session")
    map(buf, "n", keys.deny, answer_key("deny"), "seri: deny what is asked")
    map(buf, "n", keys.diff, function()
      local q = question_here()
      if q then
        require("seri.approve").show_diff(q)
      end
    end, "seri: show the change asked for in a diff")
    map(buf, "n", keys.retry, function()
      require("seri").retry()
    end, "seri: send the last prompt again")
    map(buf, "n", keys.yank_code, yank_code, "seri: yank the code block under the cursor")
    map(buf, "n", keys.next_turn, function()
      jump_turn(1)
    end, "seri: next prompt or reply")
    map(buf, "n", keys.prev_turn, function()
      jump_turn(-1)
    end, "seri: previous prompt or reply")
    map(buf, "n", keys.drop_queued, drop_queued, "seri: take a queued prompt back")
    map(buf, "n", keys.help, require("seri.help").open, "seri: the chat's keys")
    redraw()
  end
  if not valid(state.input) then
    state.input = scratch(M.INPUT_NAME)
    local input = state.input
    vim.bo[input].filetype = "seri_input"
    vim.bo[input].syntax = "markdown"
    vim.bo[input].omnifunc = "v:lua.require'seri.attach'.omnifunc"
    -- Offer without inserting the first match (a buffer-local option from Neovim 0.11).
    pcall(function()
      vim.bo[input].completeopt = "menu,menuone,noselect"
    end)
    map(input, "n", keys.send, M.send, "Send the prompt to seri")
    map(input, "i", keys.send_insert, M.send, "Send the prompt to seri")
    map(input, { "n", "i" }, keys.cancel, function()
      require("seri").cancel()
    end, "Cancel the seri task")
    map(input, "n", keys.close, M.close, "Close the seri chat")
    vim.api.nvim_create_autocmd("InsertCharPre", {
      buffer = input,
      desc = "seri: complete files, #buffer, #selection and slash commands",
      callback = complete_on_trigger,
    })
    require("seri.attach").register_sources()
  end
end

---Show `project` in the chat (fetching its session when it is not the one shown).
---@param project seri.Project
function M.bind(project)
  ensure_buffers()
  vim.b[state.buf].seri_root = project.root
  vim.b[state.input].seri_root = project.root
  if state.root ~= project.root or not (state.loaded or state.load_token) then
    state.root = project.root
    show_session(project, project.session, project.reason)
  end
end

---@param win integer
---@param options table<string, any>
local function set_options(win, options)
  for name, value in pairs(options) do
    vim.api.nvim_set_option_value(name, value, { win = win, scope = "local" })
  end
end

---`left`, then as many of `hints` as fit in the window whose bar is drawn, on the right.
---@param left string
---@param hints string[] by importance
---@return string a 'winbar' value
local function bar(left, hints)
  local width = vim.api.nvim_win_get_width(tonumber(vim.g.statusline_winid) or 0)
  local room = width - vim.fn.strdisplaywidth(left) - 3
  local shown = {}
  for _, hint in ipairs(hints) do
    local extra = vim.fn.strdisplaywidth(hint) + (#shown > 0 and 3 or 0)
    if extra > room then
      break
    end
    room = room - extra
    table.insert(shown, hint)
  end
  local right = table.concat(shown, " · ")
  return (" %s%%=%s "):format(left:gsub("%%", "%%%%"), right:gsub("%%", "%%%%"))
end

---@param pairs {[1]: string|false, [2]: string}[] keys (false: turned off) and what they do
---@return string[]
local function key_hints(pairs)
  local hints = {}
  for _, pair in ipairs(pairs) do
    if pair[1] then
      table.insert(hints, pair[1] .. " " .. pair[2])
    end
  end
  return hints
end

---The input window's bar: the keys that send and cancel, and what completes.
---@return string
function M.input_winbar()
  local keys = config.options.keymaps
  local hints = key_hints({ { keys.send, "send" }, { keys.cancel, "cancel" } })
  vim.list_extend(hints, { "@ file", "# buffer", "/ command" })
  return bar("prompt", hints)
end

---The chat window's bar: the status (context use, what the task waits for), and on the
---right the keys that matter now (a question's, else the chat's main keys), as many as
---fit.
---@return string
function M.winbar()
  local project = shown_project()
  local text = project and require("seri.status").text(project) or "seri"
  local keys = config.options.keymaps
  local q = require("seri.approve").pending(state.root)[1]
  local hints
  if q then
    hints = vim.tbl_map(function(k)
      return k.key .. " " .. k.label:lower():gsub("…$", "")
    end, require("seri.approve").card_keys(q))
  else
    hints = key_hints({ { keys.help, "help" }, { keys.yank_code, "yank code" } })
    if keys.prev_turn and keys.next_turn then
      table.insert(hints, keys.prev_turn .. " " .. keys.next_turn .. " turns")
    end
  end
  return bar(text, hints)
end

---Close windows of the current tab page that show the input without the chat above it
---(left behind when the chat window was closed with `:q`), so opening the chat again
---makes no second input window.
local function close_stray_inputs()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == state.input then
      if #vim.api.nvim_tabpage_list_wins(0) > 1 then
        vim.api.nvim_win_close(win, true)
      else
        vim.api.nvim_win_call(win, function()
          vim.cmd("enew")
        end)
      end
    end
  end
end

---Split a window for the chat at the configured side; it becomes the current window.
---@return integer
local function open_chat_window()
  local chat = config.options.chat
  local vertical = chat.side == "right" or chat.side == "left"
  local split = ({
    right = "botright vsplit",
    left = "topleft vsplit",
    bottom = "botright split",
    top = "topleft split",
  })[chat.side]
  vim.cmd(split)
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, state.buf)
  local total = vertical and vim.o.columns or vim.o.lines
  local size = chat.size <= 1 and math.floor(total * chat.size) or math.floor(chat.size)
  if vertical then
    vim.api.nvim_win_set_width(win, math.max(20, size))
  else
    vim.api.nvim_win_set_height(win, math.max(5, size))
  end
  set_options(win, {
    wrap = true,
    linebreak = true,
    number = false,
    relativenumber = false,
    signcolumn = "no",
    foldcolumn = "0",
    spell = false,
    list = false,
    conceallevel = 2,
    winfixwidth = vertical,
    winfixheight = not vertical,
    foldenable = true,
    foldmethod = "expr",
    foldexpr = "v:lua.require'seri.chat'.foldexpr(v:lnum)",
    foldtext = "v:lua.require'seri.chat'.foldtext()",
    foldlevel = 0,
    fillchars = "fold: ,eob: ",
    winbar = "%{%v:lua.require'seri.chat'.winbar()%}",
  })
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(state.buf), 0 })
  return win
end

---Split the input window under the chat window; it becomes the current window.
---@param chat_win integer
local function open_input_window(chat_win)
  vim.api.nvim_set_current_win(chat_win)
  vim.cmd("belowright " .. math.max(1, config.options.chat.input_height) .. "split")
  local input = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(input, state.input)
  set_options(input, {
    wrap = true,
    linebreak = true,
    number = false,
    relativenumber = false,
    signcolumn = "no",
    foldenable = false,
    foldcolumn = "0",
    winfixheight = true,
    fillchars = "eob: ",
    winbar = "%{%v:lua.require'seri.chat'.input_winbar()%}",
  })
end

---Open the chat for `project`. A chat window whose input was closed gets its input
---back; an input left without its chat is closed first.
---@param project seri.Project
---@param opts {focus?: boolean}?
function M.open(project, opts)
  opts = opts or {}
  local focus = opts.focus ~= false
  M.bind(project)
  local chat_win = window_of(state.buf)
  if chat_win and window_of(state.input) then
    if focus then
      M.focus_input()
    end
    return
  end
  local previous = vim.api.nvim_get_current_win()
  if not chat_win then
    close_stray_inputs()
    chat_win = open_chat_window()
  end
  open_input_window(chat_win)
  if focus then
    if config.options.chat.start_insert then
      vim.cmd("startinsert!")
    end
  elseif vim.api.nvim_win_is_valid(previous) then
    vim.api.nvim_set_current_win(previous)
  end
end

---Close the chat's windows (the buffers and the session stay).
function M.close()
  for _, win in ipairs(windows()) do
    if #vim.api.nvim_tabpage_list_wins(0) > 1 then
      vim.api.nvim_win_close(win, true)
    else
      vim.cmd("enew")
    end
  end
end

---Open the chat when it is closed, close it when it is open.
---@param project seri.Project
function M.toggle(project)
  if M.is_open() and state.root == project.root then
    M.close()
  else
    if M.is_open() then
      M.close()
    end
    M.open(project)
  end
end

---Put the cursor in the prompt input.
---@param insert boolean?
function M.focus_input(insert)
  local win = window_of(state.input)
  if win then
    vim.api.nvim_set_current_win(win)
    if insert then
      vim.cmd("startinsert!")
    end
  end
end

---Replace what the input holds with `text`, with the cursor at its end when the input
---is shown.
---@param text string
function M.set_input(text)
  ensure_buffers()
  local lines = vim.split(text, "\n", { plain = true })
  vim.api.nvim_buf_set_lines(state.input, 0, -1, false, lines)
  local win = window_of(state.input)
  if win then
    vim.api.nvim_win_set_cursor(win, { #lines, #lines[#lines] })
  end
end

---Add `text` to what the input holds: on its last line when that line is the start of
---a prompt being written (an attachment's mention), else after a blank line (a prompt
---given back: the draft stays above it).
---@param text string
---@param opts {inline?: boolean}?
function M.add_to_input(text, opts)
  ensure_buffers()
  local draft = M.input_text()
  if vim.trim(draft) == "" then
    M.set_input(text)
  elseif opts and opts.inline then
    local sep = draft:match("%s$") and "" or " "
    M.set_input(draft .. sep .. text)
  else
    M.set_input(draft:gsub("%s+$", "") .. "\n\n" .. text)
  end
end

---Put a prompt given back (by a rewind) into the input: it replaces nothing the user
---was writing; a draft stays above it, and the chat says so.
---@param text string
function M.offer_input(text)
  local had_draft = vim.trim(M.input_text()) ~= ""
  M.add_to_input(text)
  if had_draft then
    M.notice("The prompt is back in the input, under your draft.")
  end
end

---What the input holds.
---@return string
function M.input_text()
  if not valid(state.input) then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(state.input, 0, -1, false), "\n")
end

---Send what the input holds; it comes back if the server refuses it. While a task runs
---the prompt is queued (shown in the chat, sent when the task ends).
function M.send()
  if not valid(state.input) then
    return
  end
  local lines = vim.api.nvim_buf_get_lines(state.input, 0, -1, false)
  local text = vim.trim(table.concat(lines, "\n"))
  if text == "" then
    return
  end
  vim.api.nvim_buf_set_lines(state.input, 0, -1, false, {})
  vim.cmd("stopinsert")
  require("seri").prompt(text, {
    on_error = function()
      if not valid(state.input) then
        return
      end
      if table.concat(vim.api.nvim_buf_get_lines(state.input, 0, -1, false)) == "" then
        vim.api.nvim_buf_set_lines(state.input, 0, -1, false, lines)
      end
    end,
  })
end

---Move every window of the chat to its end (a prompt was sent: its reply comes there).
function M.follow()
  if valid(state.buf) then
    for _, win in ipairs(vim.fn.win_findbuf(state.buf)) do
      view.to_end(win)
    end
  end
end

---The questions of a project changed: draw its cards again; a question that arrives
---while the chat is closed opens it (the cursor stays where it is).
---@param root string
function M.on_questions(root)
  local project = client.projects[root]
  if project and #require("seri.approve").pending(root) > 0 and not M.is_open() then
    M.open(project, { focus = false })
  end
  if valid(state.buf) and state.root == root and state.loaded then
    redraw_tail()
  end
  pcall(vim.cmd, "redrawstatus!")
end

---The text of the newest prompt the chat shows (for a retry when the conversation
---cannot be rewound).
---@return string?
function M.last_prompt()
  for i = #state.messages, 1, -1 do
    local msg = state.messages[i]
    if msg.role == "user" and msg.kind == nil then
      return msg.content
    end
  end
  return nil
end

---The chat's text (for tests and for users' own tools).
---@return string[]
function M.lines()
  if not valid(state.buf) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(state.buf, 0, -1, false)
end

---'foldexpr' of the chat: tool results, thinking and attachments fold under their head.
---@param lnum integer
---@return string
function M.foldexpr(lnum)
  local line = vim.fn.getline(lnum)
  if
    vim.startswith(line, render.RESULT)
    or vim.startswith(line, render.THINKING)
    or vim.startswith(line, render.CONTEXT)
  then
    return ">1"
  elseif vim.startswith(line, render.BODY) then
    return "1"
  end
  return "0"
end

---'foldtext' of the chat: the head line and how much is folded.
---@return string
function M.foldtext()
  local head = vim.fn.getline(vim.v.foldstart)
  local hidden = vim.v.foldend - vim.v.foldstart
  return ("%s  [+%d line%s]"):format(head, hidden, hidden == 1 and "" or "s")
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
