-- The session the chat shows: its history from `seri.session.get` (newest page first,
-- earlier pages on request), then every `seri/message` as it arrives, with the reply in
-- progress streamed from `seri/delta`. A stored message replaces the streamed lines.
--
-- A fork's copied messages end with a line saying where they come from (the origin's
-- title is looked up once); the recap folds under its heading, and a compaction's notice
-- opens it. The plugin's own notices stay after the message they follow; those of
-- messages a compaction took away go with them.

local client = require("seri.client")
local config = require("seri.config")
local render = require("seri.render")
local draw = require("seri.chat.draw")
local S = require("seri.chat.state")

local state, valid = S.state, S.valid

local M = {}

---A stored message arrived (`seri/message`): draw it at the end, or a tool result under
---its call.
---@param params {sessionId: string, message: seri.Message}
function M.on_message(params)
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
  local at = msg.role == "tool" and draw.call_line(msg.tool_call_id)
  if at and at < state.stored_end then
    local b = render.result(msg)
    b.id = msg.id
    draw.insert_after(at, b)
    state.last_role = "tool"
    return
  end
  local b
  b, state.last_role = render.message(msg, state.last_role)
  draw.append({ b })
end

---More of the reply in progress (`seri/delta`).
---@param params {sessionId: string, text: string, reset?: boolean}
function M.on_delta(params)
  if not state.session or params.sessionId ~= state.session.id then
    return
  end
  if params.reset then
    state.stream = "" -- a retry starts the reply again
  end
  state.stream = state.stream .. (type(params.text) == "string" and params.text or "")
  draw.redraw_tail()
end

---Lines of the plugin's own at the end of the stored part; they stay after the message
---they follow when the chat is drawn again, until the session changes.
---@param text string
---@param level integer? vim.log.levels
---@param opts {report?: boolean, action?: string, turn_end?: boolean}? a report's aligned lines; what <CR> on it does; says how a task ended
function M.notice(text, level, opts)
  opts = opts or {}
  local session = state.session
  if not session then
    local project = client.current()
    session = project and project.session
  end
  local last = state.messages[#state.messages]
  ---@type seri.ChatNotice
  local item = {
    text = text,
    level = level,
    after = last and last.id,
    session = session and session.id,
    report = opts.report,
    action = opts.action,
    turn_end = opts.turn_end,
  }
  table.insert(state.notices, item)
  if valid(state.buf) and state.loaded then
    draw.append({ draw.notice_block(item) })
  end
end

---A compaction of session `session_id` took messages away: the notices said until now
---are drawn only after their message, while it is shown. One whose message went (a
---failed or cancelled task that was compacted) is not drawn again at the end.
---@param session_id string
function M.compacted(session_id)
  for _, n in ipairs(state.notices) do
    if n.session == nil or n.session == session_id then
      n.compacted = true
    end
  end
end

---Put the cursor on the pending `state.target` once its session is shown and loaded,
---loading earlier pages until the message is among them.
local function reveal_target()
  local target = state.target
  if not target or not valid(state.buf) or not state.session then
    return
  end
  if state.session.id ~= target.session or not state.loaded or state.load_token then
    return -- `reload` calls again once the session's page is in
  end
  local row = draw.line_of(target.id)
  if not row and state.has_more then
    M.load_earlier(reveal_target)
    return
  end
  state.target = nil
  if not row then
    require("seri.notice").say(
      ("Message %d is no longer in this session (a rewind or a compaction removed it)."):format(
        target.id
      ),
      vim.log.levels.WARN
    )
    return
  end
  local win = S.window_of(state.buf)
  if not win then
    return
  end
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { row + 1, 0 })
  vim.cmd("normal! zvzt")
  local at = target.word and draw.word_in_message(row, target.word)
  if at then
    vim.api.nvim_win_set_cursor(win, { at[1] + 1, at[2] })
    vim.cmd("normal! zv")
  end
end

---Put the cursor on message `id` of session `session_id` in the chat (on `word` in it,
---when given and shown), now when that session is shown, else once it is (the caller
---opens it): earlier pages are loaded until the message is among them.
---@param session_id string
---@param id integer
---@param word string?
function M.reveal(session_id, id, word)
  state.target = { session = session_id, id = id, word = word }
  reveal_target()
end

---Show the recap, its fold open, at the top of the chat's windows; earlier pages are read
---first when it is not loaded. False when the session has no recap shown or to load.
---@return boolean
function M.open_recap()
  local recap = state.recap_lines
  if not recap then
    if state.has_more then
      M.load_earlier(M.open_recap)
      return true
    end
    return false
  end
  for _, win in ipairs(vim.fn.win_findbuf(state.buf)) do
    vim.api.nvim_win_call(win, function()
      -- The divider above the recap in view too: it says what the recap replaced.
      vim.fn.winrestview({ lnum = recap.first, col = 0, topline = recap.top or recap.first })
      pcall(vim.cmd, "normal! zO")
    end)
  end
  return true
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
    draw.redraw()
    if opts and opts.recap then
      M.open_recap()
    end
    M.look_up_origin(project)
    local backlog = state.backlog
    state.backlog = {}
    for _, params in ipairs(backlog) do
      M.on_message(params)
    end
    reveal_target()
  end)
end

---A fork names the session it came from: read that session's title for the line after
---the copied messages (once per fork).
---@param project seri.Project
function M.look_up_origin(project)
  local session = state.session
  local parent = session and session.parentId
  if not session or type(parent) ~= "string" or type(session.forkedAt) ~= "number" then
    return
  end
  if state.fork_origin and state.fork_origin.session == session.id then
    return
  end
  state.fork_origin = { session = session.id, id = parent }
  client.execute(
    project,
    "seri.session.get",
    { sessionId = parent, limit = 1 },
    function(err, result)
      local title = not err
        and type(result) == "table"
        and type(result.session) == "table"
        and result.session.title
      if
        type(title) == "string"
        and state.fork_origin
        and state.fork_origin.session == session.id
      then
        state.fork_origin.title = title
        if state.session and state.session.id == session.id and state.loaded then
          draw.redraw()
        end
      end
    end
  )
end

---Fetch the page before the oldest message shown and put it on top; then `done()`.
---@param done fun()?
function M.load_earlier(done)
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
    local win = S.window_of(state.buf)
    local before = vim.api.nvim_buf_line_count(state.buf)
    local cursor = win and vim.api.nvim_win_get_cursor(win)
    draw.redraw()
    if win and cursor then
      local moved = vim.api.nvim_buf_line_count(state.buf) - before
      vim.api.nvim_win_set_cursor(win, { math.max(1, cursor[1] + moved), 0 })
    end
    if done and #earlier > 0 then
      done()
    end
  end)
end

---Start showing `session` afresh: nothing of the previous one stays; its newest page
---is fetched.
---@param project seri.Project
---@param session seri.Session?
---@param reason string?
function M.show_session(project, session, reason)
  if state.target and state.target.session ~= (session and session.id) then
    state.target = nil -- another session was opened since
  end
  state.session = session
  state.reason = reason
  state.stream = ""
  state.messages, state.seen = {}, {}
  -- Notices of this session stay (said while the chat was closed); others go.
  state.notices = vim.tbl_filter(function(n)
    return n.session == (session and session.id)
  end, state.notices)
  state.has_more = false
  draw.redraw()
  M.reload(project)
end

---The text of the newest prompt the chat shows (for a retry when the conversation
---cannot be rewound).
---@return string? text
---@return boolean last whether nothing was stored after it (its task did nothing)
function M.last_prompt()
  for i = #state.messages, 1, -1 do
    local msg = state.messages[i]
    if msg.role == "user" and msg.kind == nil then
      return msg.content, i == #state.messages
    end
  end
  return nil, false
end

return M
