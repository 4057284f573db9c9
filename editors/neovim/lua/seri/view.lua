-- The chat window's view: it follows the end as lines come while its end is in view,
-- and a window is never left showing nothing past the end of a buffer that shrank.

local M = {}

---Whether a window of the chat shows its end, so it should go on showing it: its cursor
---is on the last line, or (a window the user is not in) the last line is in view.
---@param win integer
---@param count integer the buffer's line count
---@return boolean
function M.at_end(win, count)
  if vim.api.nvim_win_get_cursor(win)[1] >= count then
    return true
  end
  if win == vim.api.nvim_get_current_win() then
    return false
  end
  return vim.fn.line("w$", win) >= count
end

---Move a window's view to the buffer's end: the cursor on the last line, and as many
---lines above it as fill the window (computed, so a window not drawn yet is right too).
---@param win integer
function M.to_end(win)
  local count = vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(win))
  local height = vim.api.nvim_win_get_height(win)
  local function rows(line)
    return vim.api.nvim_win_text_height(win, { start_row = line - 1, end_row = line - 1 }).all
  end
  local top, used = count, rows(count)
  while top > 1 do
    local more = rows(top - 1)
    if used + more > height then
      break
    end
    top, used = top - 1, used + more
  end
  vim.api.nvim_win_call(win, function()
    vim.fn.winrestview({ lnum = count, col = 0, topline = top })
  end)
end

---A window whose view starts past the buffer's end (the buffer shrank) shows its last
---lines instead of nothing.
---@param win integer
function M.keep_in_view(win)
  local count = vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(win))
  if vim.fn.line("w0", win) > count or vim.fn.getwininfo(win)[1].topline > count then
    M.to_end(win)
  end
end

return M
