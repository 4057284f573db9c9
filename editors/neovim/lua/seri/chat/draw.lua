-- Drawing the chat buffer from the state, and reading back what is drawn where.
--
-- The buffer is [stored lines][tail]; the tail is what is not stored: the streamed reply,
-- what the task waits for, prompts queued behind it, and the questions it asks (cards).
-- Each stored message's first line carries a mark naming it; a notice that acts on <CR>
-- carries a mark over its lines. A window whose end is in view stays at the end as lines
-- come.

local client = require("seri.client")
local code = require("seri.code")
local config = require("seri.config")
local markdown = require("seri.markdown")
local render = require("seri.render")
local view = require("seri.view")
local S = require("seri.chat.state")

local state, ns, valid = S.state, S.ns, S.valid

local M = {}

-- render.header() is always this many lines.
local HEADER_LINES = 3

---Replace lines [first, last) with `blocks`, keeping windows that were at the end there.
---@param first integer
---@param last integer
---@param blocks seri.Block[]
function M.write(first, last, blocks)
  local buf = state.buf
  if not valid(buf) then
    return
  end
  local lines, marks, calls, frames, ids, actions, prose = {}, {}, {}, {}, {}, {}, {}
  for _, b in ipairs(blocks) do
    local at = first + #lines
    if b.id ~= nil then
      table.insert(ids, { line = at, id = b.id })
    end
    if b.action and #b.lines > 0 then
      table.insert(actions, { first = at, last = at + #b.lines - 1, action = b.action })
    end
    for _, mark in ipairs(b.marks) do
      table.insert(marks, vim.tbl_extend("force", mark, { line = at + mark.line }))
    end
    for _, part in ipairs(b.prose or {}) do
      table.insert(prose, { first = at + part.first, last = at + part.last })
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
  for _, space in ipairs({ ns.text, ns.frames, ns.ids, ns.actions }) do
    vim.api.nvim_buf_clear_namespace(buf, space, first, last)
  end
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  for id, line in pairs(calls) do
    state.call_marks[id] = vim.api.nvim_buf_set_extmark(buf, ns.calls, line, 0, {})
  end
  for _, item in ipairs(ids) do
    state.mark_ids[vim.api.nvim_buf_set_extmark(buf, ns.ids, item.line, 0, {})] = item.id
  end
  for _, item in ipairs(actions) do
    local mark =
      vim.api.nvim_buf_set_extmark(buf, ns.actions, item.first, 0, { end_row = item.last })
    state.actions[mark] = item.action
  end
  for _, mark in ipairs(marks) do
    local text = vim.api.nvim_buf_get_lines(buf, mark.line, mark.line + 1, false)[1] or ""
    vim.api.nvim_buf_set_extmark(buf, ns.text, mark.line, 0, {
      end_row = mark.line,
      end_col = math.min(mark.end_col or #text, #text),
      hl_group = mark.group,
      priority = mark.end_col and 160 or 150,
      conceal = mark.conceal,
      line_hl_group = mark.line_group,
    })
  end
  if state.highlighted then
    for _, part in ipairs(prose) do
      local text = vim.api.nvim_buf_get_lines(buf, part.first, part.last + 1, false)
      markdown.render(buf, ns.text, part.first, text)
    end
  end
  for _, item in ipairs(frames) do
    code.draw_frame(buf, ns.frames, item.frame, item.stop, state.highlighted)
  end
  for _, win in ipairs(following) do
    view.to_end(win)
  end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    view.keep_in_view(win)
  end
end

---Draw the header again for `session` (its title changed); the rest stays.
---@param session seri.Session
function M.header(session)
  M.write(0, HEADER_LINES, { render.header(session, state.reason) })
end

---The blocks after the stored part, starting at 0-based line `at`: the streamed reply,
---what the task waits for (while it runs), queued prompts and questions. Notes where
---the cards and queued prompts are, for the keys that act on them.
---@param at integer
---@return seri.Block[]
local function tail(at)
  local blocks = { render.stream(state.stream, state.last_role) }
  local project = S.shown_project()
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

---A notice's lines.
---@param n seri.ChatNotice
---@return seri.Block
function M.notice_block(n)
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
function M.redraw()
  if not valid(state.buf) then
    return
  end
  require("seri.chat.ending").place(state.messages, state.notices)
  local blocks = { render.header(state.session, state.reason) }
  local count = #blocks[1].lines
  state.load_line = nil
  if state.has_more then
    local key = config.options.keymaps.load_earlier
    table.insert(blocks, render.load_earlier(key or nil))
    state.load_line = count
    count = count + #blocks[#blocks].lines
  end
  -- Each tool result is drawn under its call, when the call is shown: the newest call
  -- of its id before it (some providers number calls per reply, so ids repeat).
  local results, placed = {}, {} ---@type table<table, table<string, table>>, table<table, boolean>
  local latest = {} ---@type table<string, table> call id -> the message that made it last
  for _, msg in ipairs(state.messages) do
    if msg.role == "assistant" and type(msg.tool_calls) == "table" then
      for _, call in ipairs(msg.tool_calls) do
        latest[call.id] = msg
      end
    elseif msg.role == "tool" and msg.tool_call_id and latest[msg.tool_call_id] then
      local owner = latest[msg.tool_call_id]
      results[owner] = results[owner] or {}
      results[owner][msg.tool_call_id] = msg
    end
  end
  -- The plugin's notices go after the message they followed; one whose message is not
  -- shown (any more) goes at the end, and follows the last message from then on, unless
  -- it was said before a compaction (its message went with the compacted ones).
  local shown_ids, unplaced = {}, {}
  for _, msg in ipairs(state.messages) do
    if msg.id ~= nil then
      shown_ids[msg.id] = true
    end
  end
  for _, n in ipairs(state.notices) do
    if (n.after == nil or not shown_ids[n.after]) and not n.compacted then
      table.insert(unplaced, n)
    end
  end
  local function add_notices(after)
    for _, n in ipairs(state.notices) do
      if after ~= nil and n.after == after then
        local b = M.notice_block(n)
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
    if not (msg.role == "tool" and placed[msg]) then
      local divider_top = nil
      if msg.kind == "recap" and type(msg.recap) == "table" then
        -- Above the recap: what it replaced, and (on <CR>) the record of those turns.
        local divider = render.compaction_divider(msg.recap, config.options.keymaps.load_earlier)
        table.insert(blocks, divider)
        divider_top = count + 1
        count = count + #divider.lines
      end
      local b
      local own = results[msg] or {}
      b, prev = render.message(msg, prev, own)
      for id in pairs(b.calls) do
        if own[id] then
          placed[own[id]] = true
        end
      end
      if msg.kind == "recap" then
        -- The heading stays; what follows it, up to its blank line, folds.
        state.recap_lines = { first = count + 1, last = count + #b.lines - 1, top = divider_top }
      end
      table.insert(blocks, b)
      count = count + #b.lines
    end
    local ended = require("seri.chat.ending").block(msg, state.notices)
    if ended then
      table.insert(blocks, ended)
      count = count + #ended.lines
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
    local b = M.notice_block(n)
    table.insert(blocks, b)
    count = count + #b.lines
  end
  state.last_role = prev
  state.stored_end = count
  state.call_marks = {}
  state.mark_ids, state.actions = {}, {}
  vim.api.nvim_buf_clear_namespace(state.buf, ns.calls, 0, -1)
  vim.list_extend(blocks, tail(count))
  M.write(0, -1, blocks)
  require("seri.chat.output").place()
end

---Show stored blocks after the stored part, then the tail again.
---@param blocks seri.Block[]
function M.append(blocks)
  local count = 0
  for _, b in ipairs(blocks) do
    count = count + #b.lines
  end
  local all = vim.list_extend({}, blocks)
  vim.list_extend(all, tail(state.stored_end + count))
  M.write(state.stored_end, -1, all)
  state.stored_end = state.stored_end + count
end

---Show a stored block right after 0-based line `at` of the stored part (a tool result
---under its call).
---@param at integer
---@param b seri.Block
function M.insert_after(at, b)
  M.write(at + 1, at + 1, { b })
  state.stored_end = state.stored_end + #b.lines
end

---Draw the tail again (the streamed reply, the activity, queued prompts, questions).
function M.redraw_tail()
  M.write(state.stored_end, -1, tail(state.stored_end))
end

-- Reading back what is drawn ---------------------------------------------------------

---The 0-based line of the tool call `call_id`, when it is drawn.
---@param call_id string?
---@return integer?
function M.call_line(call_id)
  local mark = call_id and state.call_marks[call_id]
  return mark and vim.api.nvim_buf_get_extmark_by_id(state.buf, ns.calls, mark, {})[1] or nil
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
    ns.ids,
    { row, 0 },
    { 0, 0 },
    { limit = 1 }
  )
  return found[1] and state.mark_ids[found[1][1]]
end

---The id of the message under the cursor of the chat's window (nil without one).
---@return integer?
function M.message_under_cursor()
  local win = S.window_of(state.buf)
  return win and M.message_at(vim.api.nvim_win_get_cursor(win)[1] - 1) or nil
end

---The 0-based line where the stored message `id` is shown: its first line; for a tool
---result drawn under its call, the result's line; for a message not drawn on its own,
---the nearest shown message before it. Nil when it is not among the loaded messages.
---@param id integer
---@return integer?
function M.line_of(id)
  if not state.seen[id] then
    return nil
  end
  for _, msg in ipairs(state.messages) do
    local at = msg.id == id and msg.role == "tool" and M.call_line(msg.tool_call_id)
    if at then
      return at + 1
    end
  end
  local best, best_id = nil, nil
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(state.buf, ns.ids, 0, -1, {})) do
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
function M.word_in_message(row, word)
  local next_mark = vim.api.nvim_buf_get_extmarks(state.buf, ns.ids, { row + 1, 0 }, -1, {
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

---What <CR> does on 0-based line `row` (a compaction's notice: "recap"; the divider above
---a recap: "compacted"), if anything.
---@param row integer
---@return string?
function M.action_at(row)
  local found = vim.api.nvim_buf_get_extmarks(state.buf, ns.actions, { row, 0 }, { row, -1 }, {
    overlap = true,
  })
  for _, mark in ipairs(found) do
    if state.actions[mark[1]] then
      return state.actions[mark[1]]
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

return M
