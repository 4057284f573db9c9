-- What a session spent and what fills its context: status() with the spend (an option),
-- :SeriCost and /context printed in the chat once, :SeriContext's float with a bar per
-- part and the compaction point, and a compaction's notice in numbers that opens the
-- folded recap. The provider is scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

---How many times the chat holds `text`.
local function count(text)
  local n = 0
  for _, line in ipairs(require("seri.chat").lines()) do
    if line:find(text, 1, true) then
      n = n + 1
    end
  end
  return n
end

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options({ provider = { contextWindow = 4000, keepTokens = 1 } }))
  H.wait_ready()
  vim.cmd("SeriPrompt read notes.txt")
  H.eq("done", H.wait_turn(1).status, "the task")
  H.wait_chat("The notes are about parsing.")

  -- The spend: in status() on request, or with the option; the chat's bar has it.
  H.wait(function()
    return H.status({ spend = true }):find(" · $0.0083", 1, true)
  end, "the spend in the status: " .. H.status({ spend = true }))
  H.truthy(not H.status():find("$", 1, true), "the default status is short: " .. H.status())
  require("seri.config").options.status.spend = true
  H.truthy(H.status():find("$0.0083", 1, true), "status.spend = true: " .. H.status())
  require("seri.config").options.status.spend = false
  H.truthy(chat.winbar():find("$0.0083", 1, true), "the chat's bar: " .. chat.winbar())
  -- Beside the spend, the share of the input read from the provider's prompt cache.
  H.truthy(
    H.status({ spend = true }):find(" · $0.0083 · cache 40% of input", 1, true),
    "the cache rate in the status: " .. H.status({ spend = true })
  )
  -- (A bar's text has its % doubled, as 'winbar' wants.)
  H.truthy(chat.winbar():find("cache 40%% of input", 1, true), "the chat's bar: " .. chat.winbar())
  H.truthy(not H.status():find("cache", 1, true), "not in the short status")
  -- Nothing when the provider reported no cache read or write.
  local status = require("seri.status")
  local plain = { inputTokens = 200, cachedInputTokens = 0, cacheWriteTokens = 0, calls = 2 }
  H.eq(nil, status.cache({ spend = plain }), "no cache figures, no rate")
  local written = vim.tbl_extend("force", plain, { cacheWriteTokens = 150 })
  H.eq("cache 0% of input", status.cache({ spend = written }), "a write alone: nothing read yet")

  -- :SeriCost prints the report in the chat, once (the server's message is held back).
  vim.cmd("SeriCost")
  H.wait_chat({ "Spend: $0.0083 over 2 model calls.", "turn" })
  H.wait_chat("Input 200 tokens (80 cached, 40%; 80 written to the cache)")
  vim.wait(300)
  H.eq(1, count("Spend: $0.0083"), "the report, once")
  -- /context typed in the input: its text bars, in the chat, at once.
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat.state.input))
  vim.api.nvim_buf_set_lines(chat.state.input, 0, -1, false, { "/context" })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  H.wait_chat("Context: ")
  vim.wait(300)
  H.eq(1, count("Context: "), "the /context report, once")
  H.truthy(H.chat_has("█"), "its bars")

  -- :SeriContext: a float with a bar per part, the compaction point, the total.
  vim.cmd("SeriContext")
  H.wait(function()
    return vim.bo.filetype == "seri_context"
  end, "the context float")
  local float = vim.api.nvim_get_current_win()
  H.truthy(vim.api.nvim_win_get_config(float).relative ~= "", "a float")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local text = table.concat(lines, "\n")
  for _, part in ipairs({
    "System prompt",
    "AGENTS.md",
    "Your prompts",
    "Replies and thinking",
    "Tool calls",
    "read_file results",
    "total",
  }) do
    H.truthy(text:find(" " .. part, 1, true), ("%q in the float:\n%s"):format(part, text))
  end
  H.truthy(
    text:find("compaction starts at 2,000 (50%)", 1, true),
    "the compaction point:\n" .. text
  )
  -- Every bar is drawn to one scale, with the mark in the same column.
  local function row(name)
    for _, line in ipairs(lines) do
      if line:find(" " .. name .. " ", 1, true) then
        return line
      end
    end
  end
  local marks = {}
  for _, name in ipairs({ "System prompt", "read_file results", "total" }) do
    local line = H.truthy(row(name), name .. " row")
    marks[vim.fn.strdisplaywidth(line:sub(1, (line:find("│", 1, true))))] = true
  end
  H.eq(1, vim.tbl_count(marks), "the mark in one column")
  local function cells(name)
    local line = row(name)
    local bar = line:sub(line:find("  ", 3, true) or 1)
    local full = select(2, bar:gsub("█", ""))
    return full
  end
  H.truthy(cells("read_file results") > cells("Your prompts"), "a bigger part, a longer bar")
  H.truthy(cells("total") >= cells("read_file results"), "the total, the longest")
  vim.api.nvim_feedkeys("q", "x", false)
  H.eq(false, vim.api.nvim_win_is_valid(float), "the float, closed with q")

  -- A compaction says what it did in numbers; its notice opens the folded recap.
  vim.cmd("SeriPrompt and then?")
  H.eq("done", H.wait_turn(2).status, "the second task")
  vim.cmd("SeriCompact")
  H.wait(function()
    return #H.events_named("SeriCompacted") == 1
  end, "the compaction")
  H.wait_chat({ "## Recap", "Context compacted: ", " messages, ", " tokens." })
  local notice = H.chat_line("Context compacted: ")
  H.truthy(
    chat
      .lines()[notice]
      :match("^Context compacted: %d+ → %d+ messages, [%d,]+ → [%d,]+ tokens%.$"),
    chat.lines()[notice]
  )
  H.wait_chat("Read: notes.txt")
  local win = vim.fn.bufwinid(chat.state.buf)
  local head = H.chat_line("## Recap")
  -- Asked for, it opens at once.
  vim.api.nvim_win_call(win, function()
    H.eq(-1, vim.fn.foldclosed(head + 1), "the recap open after :SeriCompact")
  end)
  -- Folded, <CR> on the notice opens it, at the top of the chat.
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { head, 0 })
  vim.cmd("normal! zc")
  H.eq(head, vim.fn.foldclosed(head + 1), "the recap folded with zc")
  vim.api.nvim_win_set_cursor(win, { H.chat_line("Context compacted: ") + 1, 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  H.eq(-1, vim.fn.foldclosed(head + 1), "the recap open from its notice")
  local divider = H.chat_line("earlier messages compacted")
  H.eq(head - 4, divider, "the divider (and its Read line) right above the recap")
  H.eq(divider, vim.fn.line("w0"), "the recap at the top, under its divider")
  -- Shown again (resumed), it is folded under its heading.
  local compacted = require("seri.client").current().session.id
  vim.cmd("SeriNew")
  H.wait(function()
    return require("seri.client").current().session.id ~= compacted
  end, "a new session")
  vim.cmd("SeriResume " .. compacted)
  H.wait_chat("## Recap")
  head = H.chat_line("## Recap")
  vim.api.nvim_win_call(win, function()
    H.eq(head, vim.fn.foldclosed(head + 1), "the recap folded")
  end)
end)
