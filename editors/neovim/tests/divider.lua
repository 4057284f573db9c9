-- What happened before a compaction stays findable: the divider above the recap tells
-- what it replaced (messages, tool calls, tokens, paths), live and after reopening, and
-- <CR> on it opens the record of those turns in a scratch buffer. The provider is
-- scripted by test_neovim_divider.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  require("seri").setup(H.options({ provider = { keepTokens = 1 } }))
  H.wait_ready()
  vim.cmd("Seri")
  vim.cmd.stopinsert()

  vim.cmd("SeriPrompt what is in notes.txt")
  H.eq("done", H.wait_turn(1).status, "the task that reads")
  vim.cmd("SeriPrompt and then")
  H.eq("done", H.wait_turn(2).status, "the second task")
  vim.cmd("SeriCompact")
  H.wait(function()
    return #H.events_named("SeriCompacted") == 1
  end, "the compaction")
  H.wait_chat({ "earlier messages compacted (1 tool call, ", "Read: notes.txt" })
  H.wait_chat("<CR> here opens the record of those turns.")

  -- Drawn again from the recap alone, as when the chat is opened anew.
  chat.close()
  vim.cmd("Seri")
  vim.cmd.stopinsert()
  local text = H.chat()
  local divider = H.truthy(H.chat_line("earlier messages compacted"), "the divider:\n" .. text)
  H.truthy(
    chat.lines()[divider]:match("^── %d+ earlier messages compacted %(1 tool call, [%d,]+ → [%d,]+ tokens%) ──$"),
    "the divider's numbers: " .. chat.lines()[divider]
  )
  H.truthy(divider < H.chat_line("## Recap"), "the divider is above the recap")
  H.eq(1, select(2, text:gsub("earlier messages compacted", "")), "one divider:\n" .. text)

  -- On the screen as written (nothing concealed: paths and numbers are exact).
  local win = vim.fn.win_findbuf(chat.state.buf)[1]
  H.shown_exactly(win, "earlier messages compacted")
  H.shown_exactly(win, "Read: notes.txt")

  -- <CR> on it: the record of the turns it replaced.
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { divider, 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  H.wait(function()
    return vim.b.seri_record == true
  end, "the record's buffer")
  local record = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.truthy(record:find("## Prompt", 1, true), "the prompts:\n" .. record)
  H.truthy(record:find("what is in notes.txt", 1, true), "the first prompt:\n" .. record)
  H.truthy(record:find('→ read_file {"path":"notes.txt"}', 1, true), "the call:\n" .. record)
  H.truthy(record:find("Notes on parsing.", 1, true), "its result:\n" .. record)
  H.truthy(record:find("── compacted here (manual)", 1, true), "the compaction:\n" .. record)
  H.eq(false, vim.bo.modifiable, "read-only")
end)
