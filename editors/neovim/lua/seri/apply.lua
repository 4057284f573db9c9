-- Apply a code block of the chat to a file (`ga`): the server places the block in the
-- file (`seri.code.merge`: a block that shows one function replaces that function, not
-- the file), a diff in a tab page of its own shows the file as it is and as it would be,
-- and `a` there writes it through the file's buffer (one undo takes it back) and saves.

local M = {}

local APPLY_KEYS = {
  { key = "a", hint = "apply", desc = "seri: apply the code block" },
  { key = "q", hint = "discard", desc = "seri: discard the code block" },
}

---What the user is asked, saying where the block goes.
---@param shown string the file as the user named it
---@param merge {mode: string, range: {startLine: integer, endLine: integer}?}
---@return string
function M.question(shown, merge)
  if merge.mode == "create" then
    return ("create %s with the code block?"):format(shown)
  elseif merge.mode == "whole" then
    return ("replace %s with the code block?"):format(shown)
  elseif merge.mode == "append" then
    return ("add the code block to the end of %s?"):format(shown)
  end
  local range = merge.range
  local lines = ""
  if range then
    lines = range.startLine == range.endLine and (" (line %d)"):format(range.startLine)
      or (" (lines %d-%d)"):format(range.startLine, range.endLine)
  end
  return ("apply the code block to %s%s?"):format(shown, lines)
end

---Replace the lines of `buf` with `lines`, changing only the lines that differ (marks
---and folds elsewhere stay), in one undo step.
---@param buf integer
---@param lines string[]
local function set_changed_lines(buf, lines)
  local old = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local first = 1
  while first <= #old and first <= #lines and old[first] == lines[first] do
    first = first + 1
  end
  local old_last, new_last = #old, #lines
  while old_last >= first and new_last >= first and old[old_last] == lines[new_last] do
    old_last, new_last = old_last - 1, new_last - 1
  end
  local middle = vim.list_slice(lines, first, new_last)
  vim.api.nvim_buf_set_lines(buf, first - 1, old_last, false, middle)
end

---Show `merge` as a diff to approve; on `a`, write it into `path`'s buffer and save.
---@param path string absolute
---@param shown string the file as the user named it
---@param merge {text: string, mode: string, range: {startLine: integer, endLine: integer}?}
---@param code_win integer? the window to show the file in once applied
function M.review(path, shown, merge, code_win)
  local approve = require("seri.approve")
  local buf = vim.fn.bufadd(path)
  local was_loaded = vim.api.nvim_buf_is_loaded(buf)
  vim.fn.bufload(buf)
  local current = merge.mode == "create" and {} or vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local merged = approve.text_lines((merge.text:gsub("\r\n", "\n")))
  local view = approve.diff_tab("apply", shown, { "now", current }, { "applied", merged })
  local tab, left, right = view.tab, view.left, view.right
  local left_buf, right_buf = view.bufs[1], view.bufs[2]
  local question = M.question(shown, merge)
  local hints = vim.tbl_map(function(k)
    return k.key .. " " .. k.hint
  end, APPLY_KEYS)
  local escaped = shown:gsub("%%", "%%%%")
  vim.wo[left].winbar = (" %s: %s"):format(merge.mode == "create" and "new file" or "now", escaped)
  local asked = question:gsub("%%", "%%%%")
  vim.wo[right].winbar = (" seri: %s%%=%s "):format(asked, table.concat(hints, " · "))

  local done = false
  local function finish(apply)
    if done then
      return
    end
    done = true
    if vim.api.nvim_tabpage_is_valid(tab) and #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd.tabclose(vim.api.nvim_tabpage_get_number(tab))
    end
    for _, view in ipairs({ left_buf, right_buf }) do
      if vim.api.nvim_buf_is_valid(view) then
        vim.api.nvim_buf_delete(view, { force = true })
      end
    end
    if not apply then
      if not was_loaded and vim.api.nvim_buf_is_valid(buf) and not vim.bo[buf].modified then
        vim.api.nvim_buf_delete(buf, {})
      end
      vim.api.nvim_echo({ { "seri: the code block was not applied" } }, false, {})
      return
    end
    if merge.mode == "create" then
      vim.fn.mkdir(vim.fs.dirname(path), "p")
    end
    set_changed_lines(buf, merged)
    local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
      vim.cmd("silent update")
    end)
    if not ok then
      local why = ("Applied to %s, but not saved: %s"):format(shown, err)
      require("seri.notice").say(why, vim.log.levels.WARN)
    end
    if code_win and vim.api.nvim_win_is_valid(code_win) then
      vim.api.nvim_win_set_buf(code_win, buf)
      vim.api.nvim_set_current_win(code_win)
      local line = merge.range and merge.range.startLine or 1
      vim.api.nvim_win_set_cursor(code_win, { math.min(line, vim.api.nvim_buf_line_count(buf)), 0 })
    end
    vim.api.nvim_echo({ { ("seri: applied the code block to %s"):format(shown) } }, false, {})
  end
  for _, view in ipairs({ left_buf, right_buf }) do
    for _, k in ipairs(APPLY_KEYS) do
      vim.keymap.set("n", k.key, function()
        finish(k.key == "a")
      end, { buffer = view, nowait = true, desc = k.desc })
    end
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = view,
      once = true,
      callback = function()
        vim.schedule(function()
          finish(false)
        end)
      end,
    })
  end
  local line = merge.range and merge.range.startLine
    or (merge.mode == "append" and #current + 1 or 1)
  vim.api.nvim_win_set_cursor(right, { math.max(1, math.min(line, #merged)), 0 })
end

---Apply the code block `lines` to `file` (asked for when the block names none).
---@param lines string[]
---@param file string? the file its fence names
---@param code_win integer? the code window used last (the default file, and where it shows)
function M.apply(lines, file, code_win)
  local client = require("seri.client")
  local project = client.current()
  if not project then
    require("seri.notice").say("No seri server runs for this project.", vim.log.levels.WARN)
    return
  end
  local function go(named)
    named = named and vim.trim(named) or ""
    if named == "" then
      return
    end
    local path = vim.fs.normalize(named)
    if not vim.startswith(path, "/") and not path:match("^%a:[/\\]") then
      path = vim.fs.joinpath(project.root, path)
    end
    local text = table.concat(lines, "\n") .. "\n"
    client.execute(project, "seri.code.merge", { path = path, text = text }, function(err, result)
      vim.schedule(function()
        if err or type(result) ~= "table" then
          local why = err and err.message
            or "Cannot apply the code block: the server did not answer."
          require("seri.notice").say(why, vim.log.levels.WARN)
          return
        end
        M.review(path, named, result, code_win)
      end)
    end)
  end
  if file then
    go(file)
    return
  end
  local default = ""
  if code_win and vim.api.nvim_win_is_valid(code_win) then
    local name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(code_win))
    local root = project.root:gsub("/+$", "") .. "/"
    default = vim.startswith(name, root) and name:sub(#root + 1) or name
  end
  vim.ui.input({
    prompt = "Apply the code block to (a new file is created): ",
    default = default,
    completion = "file",
  }, go)
end

return M
