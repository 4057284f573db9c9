-- The chat's keys, each declared once: where it is mapped, what it does, its line in the
-- help float (`?`) and its word in a window bar. The buffer mappings, the help and the
-- bars' key hints are all built from `M.list`, so a key cannot be mapped without its
-- hint or hinted without its mapping.

local code = require("seri.code")
local config = require("seri.config")
local draw = require("seri.chat.draw")
local history = require("seri.chat.history")
local input = require("seri.chat.input")
local S = require("seri.chat.state")

local state = S.state

local M = {}

---@alias seri.ChatBuffer "chat"|"input"

---@class seri.ChatKeyHint
---@field bar seri.ChatBuffer the window whose bar shows it
---@field word string what the bar says after the key
---@field rank integer place among the bar's hints (lower first; shown while they fit)
---@field place integer? place of the key among the keys sharing the hint (`[[ ]]`)

---@class seri.ChatKey
---@field option string? the `keymaps` option that sets the key (false there: no key)
---@field lhs string? the key, when no option sets it
---@field modes string|string[]? the modes it is mapped in
---@field buffers seri.ChatBuffer[] the buffers it is mapped in (none: Neovim's own key, for the help)
---@field run fun()? what it does
---@field desc string? the mapping's description
---@field help string? its line in the help float
---@field hint seri.ChatKeyHint? its word in a window bar; keys sharing a word show together (`[[ ]] turns`), only when each has a key

---The card under the cursor in the chat, else the oldest question of the chat's project.
---@return seri.Question?
local function question_here()
  local win = S.window_of(state.buf)
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
    if (name == "allow" or name == "allow_session") and not q then
      input.focus_input(true)
    end
  end
end

---Show the change the question under the cursor asks to make, in a diff.
local function show_diff()
  local q = question_here()
  if q then
    require("seri.approve").show_diff(q)
  end
end

---Yank the code block under the cursor into the register the key was given (`"+gy`).
local function yank_code()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local lines, lang = code.block_at(draw.lines(), row)
  if not lines then
    require("seri.notice").say("No code block under the cursor.")
    return
  end
  vim.fn.setreg(vim.v.register, lines, "l")
  local what = (lang and lang ~= "") and (lang .. " ") or ""
  local yanked = require("seri.render").count(#lines, "line")
  vim.api.nvim_echo({ { ("seri: yanked %s of %scode"):format(yanked, what) } }, false, {})
end

-- The window of a file (no chat, no float) the user was in last: where `gp` puts code
-- and `ga` shows the file it applied code to.
local last_code_win = nil ---@type integer?
vim.api.nvim_create_autocmd("WinLeave", {
  group = vim.api.nvim_create_augroup("seri_last_code_window", { clear = true }),
  callback = function()
    local win = vim.api.nvim_get_current_win()
    if vim.bo.buftype == "" and vim.api.nvim_win_get_config(win).relative == "" then
      last_code_win = win
    end
  end,
})

---Put the code block under the cursor below the cursor of the last code window, and go
---there (as `p` would put a yanked block).
local function insert_code()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local lines = code.block_at(draw.lines(), row)
  if not lines then
    require("seri.notice").say("No code block under the cursor.")
    return
  end
  local win = last_code_win
  if not (win and vim.api.nvim_win_is_valid(win)) then
    require("seri.notice").say("No code window to insert into: open a file first.")
    return
  end
  local buf = vim.api.nvim_win_get_buf(win)
  if not vim.bo[buf].modifiable then
    require("seri.notice").say("The last code window's buffer cannot be changed.")
    return
  end
  local at = vim.api.nvim_win_get_cursor(win)[1]
  vim.api.nvim_buf_set_lines(buf, at, at, false, lines)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { at + 1, 0 })
end

---Apply the code block under the cursor to the file its fence names (else one asked
---for, the last code window's by default): a diff to approve, then written.
local function apply_code()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local lines, _, file = code.block_at(draw.lines(), row)
  if not lines then
    require("seri.notice").say("No code block under the cursor.")
    return
  end
  local win = last_code_win
  require("seri.apply").apply(lines, file, win and vim.api.nvim_win_is_valid(win) and win or nil)
end

---Rewind to before the prompt under the cursor, once confirmed: the conversation and
---the files go back, and the prompt returns to the input to edit and send again.
local function rewind_here()
  local id = draw.message_under_cursor()
  local prompt = nil
  for _, msg in ipairs(state.messages) do
    if msg.id == id and msg.role == "user" and not msg.kind then
      prompt = msg
    end
  end
  local project = require("seri.client").current()
  if not prompt or not project then
    require("seri.notice").say(
      "Put the cursor on one of your prompts to rewind to before it.",
      vim.log.levels.WARN
    )
    return
  end
  vim.ui.select({ "Rewind", "Cancel" }, {
    prompt = "Rewind to before this prompt? It and what follows leave the conversation; "
      .. "the files its tasks changed go back.",
    kind = "seri_rewind_here",
  }, function(choice)
    if choice == "Rewind" then
      require("seri.rewind").rewind_here(project, prompt.id)
    end
  end)
end

---Go to the next (`1`) or previous (`-1`) heading: a prompt, a reply, a recap.
---@param direction integer
local function jump_turn(direction)
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local lines = draw.lines()
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
  local project = S.shown_project()
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
  input.add_to_input(item.text)
  require("seri.client").emit_status(project)
end

---<CR> in the chat: load earlier messages on their line, open the recap on a
---compaction's notice, the record of the compacted turns on the divider above a recap,
---else go to the prompt.
local function enter()
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  if state.load_line and line == state.load_line then
    history.load_earlier()
  elseif draw.action_at(line) == "recap" then
    history.open_recap()
  elseif draw.action_at(line) == "compacted" then
    require("seri.record").open_compacted(state.session and state.session.id)
  else
    input.focus_input()
  end
end

local function cancel()
  require("seri").cancel()
end

local function close()
  require("seri.chat.window").close()
end

---Every key of the chat and its input, in the help's order.
---@type seri.ChatKey[]
M.list = {
  {
    option = "allow",
    modes = "n",
    buffers = { "chat" },
    run = answer_key("allow"),
    desc = "seri: allow what is asked",
    help = "allow what seri asks (Allow, Remember)",
  },
  {
    option = "allow_session",
    modes = "n",
    buffers = { "chat" },
    run = answer_key("allow_session"),
    desc = "seri: allow for the session",
    help = "allow it for the rest of the session",
  },
  {
    option = "deny",
    modes = "n",
    buffers = { "chat" },
    run = answer_key("deny"),
    desc = "seri: deny what is asked",
    help = "deny it (a write asks for a note for the model; Not now for MCP servers)",
  },
  {
    option = "never",
    modes = "n",
    buffers = { "chat" },
    run = answer_key("never"),
    desc = "seri: never for this project",
    help = "never ask again for this project (a workspace's MCP servers)",
  },
  {
    option = "diff",
    modes = "n",
    buffers = { "chat" },
    run = show_diff,
    desc = "seri: show the change asked for in a diff",
    help = "show the change seri asks to make, in a diff",
  },
  {
    option = "retry",
    modes = "n",
    buffers = { "chat" },
    run = function()
      require("seri").retry()
    end,
    desc = "seri: send the last prompt again",
    help = "send the last prompt again (:SeriRetry)",
  },
  {
    option = "fork",
    modes = "n",
    buffers = { "chat" },
    run = function()
      require("seri").fork()
    end,
    desc = "seri: fork the session at the message under the cursor",
    help = "fork the session at the message under the cursor (:SeriFork)",
  },
  {
    option = "yank_code",
    modes = "n",
    buffers = { "chat" },
    run = yank_code,
    desc = "seri: yank the code block under the cursor",
    help = "yank the code block under the cursor",
    hint = { bar = "chat", word = "yank code", rank = 2 },
  },
  {
    option = "insert_code",
    modes = "n",
    buffers = { "chat" },
    run = insert_code,
    desc = "seri: put the code block under the cursor into the last code window",
    help = "put the code block under the cursor into the last code window",
  },
  {
    option = "apply_code",
    modes = "n",
    buffers = { "chat" },
    run = apply_code,
    desc = "seri: apply the code block under the cursor to its file (a diff first)",
    help = "apply the code block under the cursor to its file: a diff, then `a` writes it",
  },
  {
    option = "rewind_here",
    modes = "n",
    buffers = { "chat" },
    run = rewind_here,
    desc = "seri: rewind to before the prompt under the cursor",
    help = "rewind to before the prompt under the cursor (it returns to the input)",
  },
  {
    option = "next_turn",
    modes = "n",
    buffers = { "chat" },
    run = function()
      jump_turn(1)
    end,
    desc = "seri: next prompt or reply",
    help = "next prompt, reply or recap",
    hint = { bar = "chat", word = "turns", rank = 3, place = 2 },
  },
  {
    option = "prev_turn",
    modes = "n",
    buffers = { "chat" },
    run = function()
      jump_turn(-1)
    end,
    desc = "seri: previous prompt or reply",
    help = "previous prompt, reply or recap",
    hint = { bar = "chat", word = "turns", rank = 3, place = 1 },
  },
  {
    option = "drop_queued",
    modes = "n",
    buffers = { "chat" },
    run = drop_queued,
    desc = "seri: take a queued prompt back",
    help = "take a queued prompt back into the input",
  },
  {
    option = "load_earlier",
    modes = "n",
    buffers = { "chat" },
    run = enter,
    desc = "Load earlier messages, open the recap from its notice, or go to the prompt",
    help = "load earlier messages / open the recap (on their line), else the prompt",
  },
  {
    lhs = "i",
    modes = "n",
    buffers = { "chat" },
    run = function()
      input.focus_input(true)
    end,
    desc = "Type a prompt",
    help = "type a prompt",
  },
  {
    option = "stop_command",
    modes = "n",
    buffers = { "chat" },
    run = function()
      require("seri.chat.output").stop()
    end,
    desc = "seri: stop the command under the cursor, or the one running",
    help = "stop the command under the cursor, or the one running (:SeriStop)",
  },
  {
    option = "cancel",
    modes = { "n", "i" },
    buffers = { "chat", "input" },
    run = cancel,
    desc = "Cancel the seri task",
    help = "stop the running task (:SeriCancel)",
    hint = { bar = "input", word = "cancel", rank = 2 },
  },
  {
    option = "close",
    modes = "n",
    buffers = { "chat", "input" },
    run = close,
    desc = "Close the seri chat",
    help = "close the chat",
  },
  {
    lhs = "zo / zc",
    buffers = {},
    help = "open / close a folded result, thinking, attachment or the recap",
  },
  {
    option = "help",
    modes = "n",
    buffers = { "chat" },
    run = function()
      require("seri.help").open()
    end,
    desc = "seri: the chat's keys",
    help = "this help",
    hint = { bar = "chat", word = "help", rank = 1 },
  },
  {
    option = "send",
    modes = "n",
    buffers = { "input" },
    run = input.send,
    desc = "Send the prompt to seri",
    hint = { bar = "input", word = "send", rank = 1 },
  },
  {
    option = "send_insert",
    modes = "i",
    buffers = { "input" },
    run = input.send,
    desc = "Send the prompt to seri",
  },
}

---The key of `key` as configured now (nil: turned off).
---@param key seri.ChatKey
---@return string?
function M.lhs(key)
  if key.option then
    return config.options.keymaps[key.option] or nil
  end
  return key.lhs
end

---Map the keys of `which` in `buf`.
---@param buf integer
---@param which seri.ChatBuffer
function M.apply(buf, which)
  for _, key in ipairs(M.list) do
    local lhs = M.lhs(key)
    if lhs and key.run and vim.tbl_contains(key.buffers, which) then
      vim.keymap.set(key.modes, lhs, key.run, {
        buffer = buf,
        nowait = true,
        silent = true,
        desc = key.desc,
      })
    end
  end
end

---The help's lines: {key, what it does}, for each key that is set.
---@return {[1]: string, [2]: string}[]
function M.help()
  local lines = {}
  for _, key in ipairs(M.list) do
    local lhs = M.lhs(key)
    if lhs and key.help then
      table.insert(lines, { lhs, key.help })
    end
  end
  return lines
end

---The key hints of the bar of `which`, by importance: `? help`, `[[ ]] turns`. A hint
---shared by several keys shows only when each of them is set.
---@param which seri.ChatBuffer
---@return string[]
function M.hints(which)
  local groups, order = {}, {}
  for _, key in ipairs(M.list) do
    local hint = key.hint
    if hint and hint.bar == which then
      local group = groups[hint.word]
      if not group then
        group = { hint = hint, keys = {}, complete = true }
        groups[hint.word] = group
        table.insert(order, group)
      end
      local lhs = M.lhs(key)
      if lhs then
        table.insert(group.keys, { lhs = lhs, place = hint.place or 0 })
      else
        group.complete = false
      end
    end
  end
  table.sort(order, function(a, b)
    return a.hint.rank < b.hint.rank
  end)
  local hints = {}
  for _, group in ipairs(order) do
    if group.complete then
      table.sort(group.keys, function(a, b)
        return a.place < b.place
      end)
      local lhs = vim.tbl_map(function(key)
        return key.lhs
      end, group.keys)
      table.insert(hints, table.concat(lhs, " ") .. " " .. group.hint.word)
    end
  end
  return hints
end

return M
