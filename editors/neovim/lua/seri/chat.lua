-- The chat: a `seri://chat` buffer (filetype `seri`, markdown highlighting) in a split,
-- with a small `seri://input` window under it for typing prompts.
--
-- The buffer holds the open session of one project: its history from `seri.session.get`
-- (newest page first, earlier pages on request), then every `seri/message` as it arrives,
-- with the reply in progress streamed from `seri/delta` at the end. The buffer is
-- [stored lines][streamed lines]; a stored message replaces the streamed lines.

local client = require("seri.client")
local config = require("seri.config")
local render = require("seri.render")

local M = {}

local ns = vim.api.nvim_create_namespace("seri_chat")
-- Marks on tool-call lines, so a result arriving later goes right under its call.
local calls_ns = vim.api.nvim_create_namespace("seri_chat_calls")

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
local state = {
  call_marks = {},
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
  local lines, marks, calls = {}, {}, {}
  for _, b in ipairs(blocks) do
    for _, mark in ipairs(b.marks) do
      table.insert(marks, { line = first + #lines + mark.line, group = mark.group })
    end
    for id, line in pairs(b.calls or {}) do
      calls[id] = first + #lines + line
    end
    vim.list_extend(lines, b.lines)
  end
  local count = vim.api.nvim_buf_line_count(buf)
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= count then
      table.insert(following, win)
    end
  end
  vim.bo[buf].modifiable = true
  if last < 0 then
    last = count
  end
  vim.api.nvim_buf_clear_namespace(buf, ns, first, last)
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
      end_col = #text,
      hl_group = mark.group,
      priority = 150,
    })
  end
  local new_count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(following) do
    vim.api.nvim_win_set_cursor(win, { new_count, 0 })
  end
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
  end
  state.last_role = prev
  state.stored_end = count
  table.insert(blocks, render.stream(state.stream, prev))
  state.call_marks = {}
  vim.api.nvim_buf_clear_namespace(state.buf, calls_ns, 0, -1)
  write(0, -1, blocks)
end

---Show stored blocks after the stored part, then the streamed reply again.
---@param blocks seri.Block[]
local function append(blocks)
  local count = 0
  for _, b in ipairs(blocks) do
    count = count + #b.lines
  end
  local all = vim.list_extend({}, blocks)
  table.insert(all, render.stream(state.stream, state.last_role))
  write(state.stored_end, -1, all)
  state.stored_end = state.stored_end + count
end

local function redraw_stream()
  write(state.stored_end, -1, { render.stream(state.stream, state.last_role) })
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
  redraw_stream()
end

---A line of the plugin's own at the end of the stored part.
---@param text string
function M.notice(text)
  if valid(state.buf) then
    append({ render.notice(text) })
  end
end

---Fetch the newest page of the open session and draw it.
---@param project seri.Project
function M.reload(project)
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
      vim.notify("seri: could not load earlier messages: " .. why, vim.log.levels.ERROR)
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
  state.has_more = false
  redraw()
  M.reload(project)
end

---@param event seri.Event
---@param project seri.Project
---@param params table?
local function on_event(event, project, params)
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
      M.reload(project)
    end
  elseif event == "turn_ended" then
    if state.session and params.sessionId == state.session.id then
      state.stream = ""
      redraw_stream()
      local notices = {
        cancelled = "Task cancelled.",
        max_turns = ("Stopped at the turn budget (%s turns)."):format(params.turns or "?"),
        failed = "Task failed (see :messages).",
      }
      if notices[params.status] then
        M.notice(notices[params.status])
      end
    end
  elseif event == "exit" then
    M.notice("The seri server stopped; :Seri starts it again.")
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

local function ensure_buffers()
  local keys = config.options.keymaps
  if not valid(state.buf) then
    state.buf = scratch(M.CHAT_NAME)
    vim.bo[state.buf].modifiable = false
    vim.bo[state.buf].filetype = "seri"
    if not pcall(vim.treesitter.start, state.buf, "markdown") then
      vim.bo[state.buf].syntax = "markdown"
    end
    state.loaded = false
    state.root = nil
    map(state.buf, "n", keys.close, M.close, "Close the seri chat")
    map(state.buf, { "n", "i" }, keys.cancel, function()
      require("seri").cancel()
    end, "Cancel the seri task")
    map(state.buf, "n", keys.load_earlier, function()
      local line = vim.api.nvim_win_get_cursor(0)[1] - 1
      if state.load_line and line == state.load_line then
        M.load_earlier()
      else
        M.focus_input()
      end
    end, "Load earlier messages, or go to the prompt")
    map(state.buf, "n", "i", function()
      M.focus_input(true)
    end, "Type a prompt")
    redraw()
  end
  if not valid(state.input) then
    state.input = scratch(M.INPUT_NAME)
    vim.bo[state.input].filetype = "seri_input"
    vim.bo[state.input].syntax = "markdown"
    map(state.input, "n", keys.send, M.send, "Send the prompt to seri")
    map(state.input, "i", keys.send_insert, M.send, "Send the prompt to seri")
    map(state.input, { "n", "i" }, keys.cancel, function()
      require("seri").cancel()
    end, "Cancel the seri task")
    map(state.input, "n", keys.close, M.close, "Close the seri chat")
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

local function winbar_keys()
  local keys = config.options.keymaps
  local hints = {}
  if keys.send then
    table.insert(hints, keys.send .. " send")
  end
  if keys.cancel then
    table.insert(hints, keys.cancel .. " cancel")
  end
  return table.concat(hints, " · ")
end

---The chat window's bar: the status (context use, working).
---@return string
function M.winbar()
  local project = state.root and client.projects[state.root]
  local text = project and require("seri.status").text(project) or "seri"
  return " " .. text:gsub("%%", "%%%%")
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
    winbar = " prompt · " .. winbar_keys(),
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

---Replace what the input holds with `text` (a rewound prompt, to edit and send again),
---with the cursor at its end when the input is shown.
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

---What the input holds.
---@return string
function M.input_text()
  if not valid(state.input) then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(state.input, 0, -1, false), "\n")
end

---Send what the input holds; it comes back if the server refuses it.
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
  require("seri").prompt(text, function()
    if not valid(state.input) then
      return
    end
    if table.concat(vim.api.nvim_buf_get_lines(state.input, 0, -1, false)) == "" then
      vim.api.nvim_buf_set_lines(state.input, 0, -1, false, lines)
    end
  end)
end

---The chat's text (for tests and for users' own tools).
---@return string[]
function M.lines()
  if not valid(state.buf) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(state.buf, 0, -1, false)
end

---'foldexpr' of the chat: tool results and thinking fold under their head line.
---@param lnum integer
---@return string
function M.foldexpr(lnum)
  local line = vim.fn.getline(lnum)
  if vim.startswith(line, render.RESULT) or vim.startswith(line, render.THINKING) then
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
