-- The chat's buffers and windows: the `seri://chat` buffer (filetype `seri`, its prose
-- rendered as markdown) in a split at the configured side, the `seri://input` window under it,
-- and the bars over both (status and key hints).

local config = require("seri.config")
local view = require("seri.view")
local draw = require("seri.chat.draw")
local history = require("seri.chat.history")
local input = require("seri.chat.input")
local keys = require("seri.chat.keys")
local S = require("seri.chat.state")

local state, valid, window_of = S.state, S.valid, S.window_of

local M = {}

---Whether the chat is shown in the current tab page.
---@return boolean
function M.is_open()
  return valid(state.buf) and window_of(state.buf) ~= nil
end

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

---Make the chat's buffer and the input's, with their keys, when they are not there.
function M.ensure_buffers()
  if not valid(state.buf) then
    state.buf = scratch(S.CHAT_NAME)
    vim.bo[state.buf].modifiable = false
    vim.bo[state.buf].filetype = "seri"
    -- Not highlighted as one markdown document: only its prose is (`seri.markdown`).
    state.highlighted = require("seri.markdown").available()
    state.loaded = false
    state.root = nil
    keys.apply(state.buf, "chat")
    draw.redraw()
  end
  if not valid(state.input) then
    state.input = scratch(S.INPUT_NAME)
    local buf = state.input
    vim.bo[buf].filetype = "seri_input"
    vim.bo[buf].syntax = "markdown"
    vim.bo[buf].omnifunc = "v:lua.require'seri.attach'.omnifunc"
    -- Offer without inserting the first match (a buffer-local option from Neovim 0.11).
    pcall(function()
      vim.bo[buf].completeopt = "menu,menuone,noselect"
    end)
    keys.apply(buf, "input")
    vim.api.nvim_create_autocmd("InsertCharPre", {
      buffer = buf,
      desc = "seri: complete files, #buffer, #selection and slash commands",
      callback = input.complete_on_trigger,
    })
    require("seri.attach").register_sources()
  end
end

---Show `project` in the chat (fetching its session when it is not the one shown).
---@param project seri.Project
function M.bind(project)
  M.ensure_buffers()
  vim.b[state.buf].seri_root = project.root
  vim.b[state.input].seri_root = project.root
  if state.root ~= project.root or not (state.loaded or state.load_token) then
    state.root = project.root
    history.show_session(project, project.session, project.reason)
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

---The input window's bar: the keys that send and cancel, and what completes.
---@return string
function M.input_winbar()
  local hints = keys.hints("input")
  vim.list_extend(hints, require("seri.attach").trigger_hints())
  return bar("prompt", hints)
end

---The chat window's bar: the status (context use, spend, what the task waits for), and on the
---right the keys that matter now (a question's, else the chat's main keys), as many as
---fit.
---@return string
function M.winbar()
  local project = S.shown_project()
  local q = require("seri.approve").pending(state.root)[1]
  -- The chat's bar has the room for the session's spend and model too; while a question
  -- waits, its keys matter more than the model's name.
  local text = project
      and require("seri.status").text(project, { spend = true, model = q == nil })
    or "seri"
  local hints
  if q then
    hints = vim.tbl_map(function(k)
      return k.key .. " " .. k.label:lower():gsub("…$", "")
    end, require("seri.approve").card_keys(q))
  else
    hints = keys.hints("chat")
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
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, state.input)
  set_options(win, {
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
      input.focus_input()
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
  for _, win in ipairs(S.windows()) do
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

---Move every window of the chat to its end (a prompt was sent: its reply comes there).
function M.follow()
  if valid(state.buf) then
    for _, win in ipairs(vim.fn.win_findbuf(state.buf)) do
      view.to_end(win)
    end
  end
end

return M
