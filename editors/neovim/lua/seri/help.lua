-- The chat's keys in a float (`?` in the chat).

local M = {}

---The chat's keys, for the help float: {key, what it does} (from the chat's key table).
---@return {[1]: string, [2]: string}[]
function M.lines()
  return require("seri.chat.keys").help()
end

---A float listing the chat's keys; `q` or <Esc> closes it.
function M.open()
  local lines = { " seri chat keys", "" }
  for _, item in ipairs(M.lines()) do
    table.insert(lines, (" %-8s %s "):format(item[1], item[2]))
  end
  table.insert(lines, "")
  local completes = vim.tbl_map(function(trigger)
    return trigger.char .. " " .. trigger.help
  end, require("seri.attach").TRIGGERS)
  table.insert(lines, (" In the input: %s "):format(table.concat(completes, ", ")))
  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = math.min(width, vim.o.columns - 4),
    height = math.min(#lines, vim.o.lines - 4),
    row = math.floor((vim.o.lines - #lines) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    style = "minimal",
    border = "rounded",
  })
  vim.api.nvim_buf_set_extmark(buf, vim.api.nvim_create_namespace("seri_help"), 0, 0, {
    end_col = #lines[1],
    hl_group = "Title",
  })
  for _, key in ipairs({ "q", "<Esc>", "?" }) do
    vim.keymap.set("n", key, function()
      if vim.api.nvim_win_is_valid(win) then
        vim.api.nvim_win_close(win, true)
      end
    end, { buffer = buf, nowait = true })
  end
end

return M
