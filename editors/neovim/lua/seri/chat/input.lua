-- The prompt input (`seri://input` under the chat): what it holds, putting text in it,
-- sending it, and starting completion as `@`, `#` or a leading `/` is typed.

local history = require("seri.chat.history")
local S = require("seri.chat.state")

local state, valid = S.state, S.valid

local M = {}

---Put the cursor in the prompt input.
---@param insert boolean?
function M.focus_input(insert)
  local win = S.window_of(state.input)
  if win then
    vim.api.nvim_set_current_win(win)
    if insert then
      vim.cmd("startinsert!")
    end
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

---Replace what the input holds with `text`, with the cursor at its end when the input
---is shown.
---@param text string
function M.set_input(text)
  require("seri.chat.window").ensure_buffers()
  local lines = vim.split(text, "\n", { plain = true })
  vim.api.nvim_buf_set_lines(state.input, 0, -1, false, lines)
  local win = S.window_of(state.input)
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
  require("seri.chat.window").ensure_buffers()
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
    history.notice("The prompt is back in the input, under your draft.")
  end
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

---Start completion in the input as `@`, `#` or a leading `/` is typed, unless a
---completion plugin does that (an 'InsertCharPre' callback).
function M.complete_on_trigger()
  local char = vim.v.char
  local attach = require("seri.attach")
  if not vim.tbl_contains(attach.trigger_characters(), char) then
    return
  end
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

return M
