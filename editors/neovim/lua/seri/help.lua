-- The chat's keys in a float (`?` in the chat).

local config = require("seri.config")

local M = {}

---The chat's keys, for the help float: {key, what it does}.
---@return {[1]: string, [2]: string}[]
function M.lines()
  local keys = config.options.keymaps
  local list = {
    { keys.allow, "allow what seri asks (Allow, Remember)" },
    { keys.allow_session, "allow it for the rest of the session" },
    { keys.deny, "deny it (a write asks for a note for the model)" },
    { keys.diff, "show the change seri asks to make, in a diff" },
    { keys.retry, "send the last prompt again (:SeriRetry)" },
    { keys.fork, "fork the session at the message under the cursor (:SeriFork)" },
    { keys.yank_code, "yank the code block under the cursor" },
    { keys.next_turn, "next prompt, reply or recap" },
    { keys.prev_turn, "previous prompt, reply or recap" },
    { keys.drop_queued, "take a queued prompt back into the input" },
    {
      keys.load_earlier,
      "load earlier messages / open the recap (on their line), else the prompt",
    },
    { "i", "type a prompt" },
    { keys.cancel, "stop the running task (:SeriCancel)" },
    { keys.close, "close the chat" },
    { "zo / zc", "open / close a folded result, thinking, attachment or the recap" },
    { keys.help, "this help" },
  }
  return vim.tbl_filter(function(item)
    return item[1] ~= false and item[1] ~= nil
  end, list)
end

---A float listing the chat's keys; `q` or <Esc> closes it.
function M.open()
  local lines = { " seri chat keys", "" }
  for _, item in ipairs(M.lines()) do
    table.insert(lines, (" %-8s %s "):format(item[1], item[2]))
  end
  table.insert(lines, "")
  table.insert(lines, " In the input: @ a file, # #buffer / #selection, / a command ")
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
