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
--
-- Each stored message's first line carries a mark naming it, so the message under the
-- cursor is known wherever later lines went (`:SeriFork` forks there). A fork's copied
-- messages end with a line saying where they come from; the recap folds under its
-- heading, and a compaction's notice opens it.

local client = require("seri.client")
local code = require("seri.code")
local config = require("seri.config")
local render = require("seri.render")
local view = require("seri.view")

local M = {}

local tail -- the blocks after the stored part (defined with the drawing functions)
local action_at -- what <CR> does on a line (defined with the chat's keys)

local ns = vim.api.nvim_create_namespace("seri_chat")
-- Marks on tool-call lines, so a result arriving later goes right under its call.
local calls_ns = vim.api.nvim_create_namespace("seri_chat_calls")
-- The frames drawn around fenced code blocks.
local frames_ns = vim.api.nvim_create_namespace("seri_chat_frames")
-- Marks on the first line of each stored message (their ids in `state.mark_ids`).
local ids_ns = vim.api.nvim_create_namespace("seri_chat_ids")
-- Marks over the lines of a notice that acts on <CR> (`state.actions`).
local actions_ns = vim.api.nvim_create_namespace("seri_chat_actions")

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
---@field notices seri.ChatNotice[] the plugin's lines, by the message they follow
---@field mark_ids table<integer, integer> message id of each mark in `ids_ns`
---@field actions table<integer, string> what <CR> does on the lines of each mark in `actions_ns`
---@field recap_lines {first: integer, last: integer}? 1-based lines of the recap's fold
---@field fork_origin {session: string, id: string, title: string?}? the session the open fork came from
---@field target {session: string, id: integer, word: string?}? a message to put the cursor on once its session is shown (`reveal`)
local state = {
  mark_ids = {},
  actions = {},
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
  local lines, marks, calls, frames, ids, actions = {}, {}, {}, {}, {}, {}
  for _, b in ipairs(blocks) do
    local at = first + #lines
    if b.id ~= nil then
      table.insert(ids, { line = at, id = b.id })
    end
    if b.action and #b.lines > 0 then
      table.insert(actions, { first = at, last = at + #b.lines - 1, action = b.action })
    end
    for _, mark in ipairs(b.marks) do
      table.insert(marks, { line = at + mark.line, group = mark.group, end_col = mark.end_col })
    end
    for id, line in pairs(b.calls or {}) do
      calls[id] = at + line
    end
    for _, frame in ipairs(b.frames or {}) do
      table.insert(frames, {
        frame = {
          first = at + frame.first,
          last = frame.last and at + frame.last,
          lang = frame.lang,
        },
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
  for _, space in ipairs({ ns, frames_ns, ids_ns, actions_ns }) do
    vim.api.nvim_buf_clear_namespace(buf, space, first, last)
  end
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  for id, line in pairs(calls) do
    state.call_marks[id] = vim.api.nvim_buf_set_extmark(buf, calls_ns, line, 0, {})
  end
  for _, item in ipairs(ids) do
    state.mark_ids[vim.api.nvim_buf_set_extmark(buf, ids_ns, item.line, 0, {})] = item.id
  end
  for _, item in ipairs(actions) do
    local mark =
      vim.api.nvim_buf_set_extmark(buf, actions_ns, item.first, 0, { end_row = item.last })
    state.actions[mark] = item.action
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

---@class seri.ChatNotice
---@field text string
---@field level integer? vim.log.levels
---@field after integer? the id of the message it follows
---@field session string? the session it was said in
---@field report boolean? a report (`/cost`, `/context`): aligned lines, shown as they are
---@field action string? what <CR> on it does: "recap" opens the recap

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

---A notice's lines.
---@param n seri.ChatNotice
---@return seri.Block
local function notice_block(n)
  local text, kind = n.text, n.report and "report" or nil
  if n.action == "recap" then
    -- In the chat only: on the command line there is no line to press it on.
    local key = config.options.keymaps.load_earlier
    text = key and ("%s\n%s here opens the recap."):format(text, key) or text
    kind = "compaction"
  end
  local b = render.notice(text, n.level, kind)
  b.action = n.action
  return b
end

---The id of the last message of `state.messages` that the open fork copied (copies keep
---their times and the fork was made after them; what it stores later is newer), nil
---when the session is no fork.
---@return integer?
local function last_copied()
  local session = state.session
  if not session or type(session.forkedAt) ~= "number" or type(session.createdAt) ~= "string" then
    return nil
  end
  local last = nil
  for _, msg in ipairs(state.messages) do
    -- Both are UTC times of the same form: as text, they sort as times do.
    if type(msg.createdAt) == "string" and msg.createdAt <= session.createdAt then
      last = msg.id
    end
  end
  return last
end

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
        local b = notice_block(n)
        table.insert(blocks, b)
        count = count + #b.lines
      end
    end
  end
  local copied = last_copied()
  local origin = state.fork_origin
  local prev = nil
  state.recap_lines = nil
  for _, msg in ipairs(state.messages) do
    if not (msg.role == "tool" and placed[msg.tool_call_id]) then
      local b
      b, prev = render.message(msg, prev, results)
      for id in pairs(b.calls) do
        placed[id] = results[id] ~= nil
      end
      if msg.kind == "recap" then
        -- The heading stays; what follows it, up to its blank line, folds.
        state.recap_lines = { first = count + 1, last = count + #b.lines - 1 }
      end
      table.insert(blocks, b)
      count = count + #b.lines
    end
    if copied ~= nil and msg.id == copied then
      local parent = state.session.parentId
      local title = origin and origin.session == state.session.id and origin.title or nil
      local b = render.fork_mark(type(parent) == "string" and parent or "", title)
      table.insert(blocks, b)
      count = count + #b.lines
      -- Later lines of this reply get a heading of their own after the mark.
      prev = nil
    end
    add_notices(msg.id)
  end
  local last = state.messages[#state.messages]
  for _, n in ipairs(unplaced) do
    n.after = last and last.id
    local b = notice_block(n)
    table.insert(blocks, b)
    count = count + #b.lines
  end
  state.last_role = prev
  state.stored_end = count
  state.call_marks = {}
  state.mark_ids, state.actions = {}, {}
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
    b.id = msg.id
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
---@param opts {report?: boolean, action?: string}? a report's aligned lines; what <CR> on it does
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
  }
  table.insert(state.notices, item)
  if valid(state.buf) and state.loaded then
    append({ notice_block(item) })
  end
end

---The id of the stored message shown at 0-based line `row` of the chat (a line of the
---streamed reply or of what waits after it: the last message); nil above the first.
---@param row integer
---@return integer?
function M.message_at(row)
  if not valid(state.buf) then
    return nil
  end
  if row >= state.stored_end then
    local last = state.messages[#state.messages]
    return last and last.id
  end
  local found = vim.api.nvim_buf_get_extmarks(
    state.buf,
    ids_ns,
    { row, 0 },
    { 0, 0 },
    { limit = 1 }
  )
  return found[1] and state.mark_ids[found[1][1]]
end

---The id of the message under the cursor of the chat's window (nil without one).
---@return integer?
function M.message_under_cursor()
  local win = window_of(state.buf)
  return win and M.message_at(vim.api.nvim_win_get_cursor(win)[1] - 1) or nil
end

---The 0-based line where the stored message `id` is shown: its first line; for a tool
---result drawn under its call, the result's line; for a message not drawn on its own,
---the nearest shown message before it. Nil when it is not among the loaded messages.
---@param id integer
---@return integer?
local function line_of(id)
  if not state.seen[id] then
    return nil
  end
  for _, msg in ipairs(state.messages) do
    local mark = msg.id == id and msg.role == "tool" and state.call_marks[msg.tool_call_id]
    if mark then
      local at = vim.api.nvim_buf_get_extmark_by_id(state.buf, calls_ns, mark, {})[1]
      if at then
        return at + 1
      end
    end
  end
  local best, best_id = nil, nil
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(state.buf, ids_ns, 0, -1, {})) do
    local shown = state.mark_ids[mark[1]]
    if shown == id then
      return mark[2]
    end
    if shown and shown < id and (best_id == nil or shown > best_id) then
      best, best_id = mark[2], shown
    end
  end
  return best
end

---Where `word` first shows (case ignored) in the message whose first line is 0-based
---`row`: {row, col}, or nil.
---@param row integer
---@param word string
---@return integer[]?
local function word_in_message(row, word)
  local next_mark = vim.api.nvim_buf_get_extmarks(state.buf, ids_ns, { row + 1, 0 }, -1, {
    limit = 1,
  })[1]
  local last = next_mark and next_mark[2] or state.stored_end
  local lines = vim.api.nvim_buf_get_lines(state.buf, row, math.max(row + 1, last), false)
  local needle = word:lower()
  for i, line in ipairs(lines) do
    local col = line:lower():find(needle, 1, true)
    if col then
      return { row + i - 1, col - 1 }
    end
  end
  return nil
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
  local row = line_of(target.id)
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
  local win = window_of(state.buf)
  if not win then
    return
  end
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { row + 1, 0 })
  vim.cmd("normal! zvzt")
  local at = target.word and word_in_message(row, target.word)
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
      vim.fn.winrestview({ lnum = recap.first, col = 0, topline = recap.first })
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
    redraw()
    if opts and opts.recap then
      M.open_recap()
    end
    M.look_up_origin(project)
    local backlog = state.backlog
    state.backlog = {}
    for _, params in ipairs(backlog) do
      on_message(params)
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
          redraw()
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
    local win = window_of(state.buf)
    local before = vim.api.nvim_buf_line_count(state.buf)
    local cursor = win and vim.api.nvim_win_get_cursor(win)
    redraw()
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
local function show_session(project, session, reason)
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
      compacted(params) -- said even while the chat is closed
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
  local renamed = params.reason == "renamed"
    and type(params.session) == "table"
    and state.session
    and params.session.id == state.session.id
  if event == "session" and renamed then
    -- A new title for the session shown: the header changes, the rest stays.
    state.session = params.session
    write(0, HEADER_LINES, { render.header(params.session, state.reason) })
  elseif event == "session" then
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

---What <CR> does on 0-based line `row` (a compaction's notice: "recap"), if anything.
---@param row integer
---@return string?
function action_at(row)
  local found = vim.api.nvim_buf_get_extmarks(state.buf, actions_ns, { row, 0 }, { row, -1 }, {
    overlap = true,
  })
  for _, mark in ipairs(found) do
    if state.actions[mark[1]] then
      return state.actions[mark[1]]
    end
  end
  return nil
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
      elseif action_at(line) == "recap" then
        M.open_recap()
      else
        M.focus_input()
      end
    end, "Load earlier messages, open the recap from its notice, or go to the prompt")
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
    map(buf, "n", keys.fork, function()
      require("seri").fork()
    end, "seri: fork the session at the message under the cursor")
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

---The chat window's bar: the status (context use, spend, what the task waits for), and on the
---right the keys that matter now (a question's, else the chat's main keys), as many as
---fit.
---@return string
function M.winbar()
  local project = shown_project()
  -- The chat's bar has the room for the session's spend too.
  local text = project and require("seri.status").text(project, { spend = true }) or "seri"
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

---The chat's text (for tests and for users' own tools).
---@return string[]
function M.lines()
  if not valid(state.buf) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(state.buf, 0, -1, false)
end

---'foldexpr' of the chat: tool results, thinking and attachments fold under their head;
---the recap under its heading.
---@param lnum integer
---@return string
function M.foldexpr(lnum)
  local recap = state.recap_lines
  if recap and recap.last > recap.first and lnum >= recap.first and lnum <= recap.last then
    return lnum == recap.first and ">1" or "1"
  end
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
