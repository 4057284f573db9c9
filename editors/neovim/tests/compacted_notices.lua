-- How earlier tasks ended stays with them: after a compaction took a failed and a
-- cancelled task's messages away, their notices ("Task failed", "Task cancelled.") are
-- not drawn again under the next reply. The provider is scripted by
-- test_neovim_display.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  require("seri").setup(H.options({ provider = { keepTokens = 1 } }))
  H.wait_ready()
  vim.cmd("Seri")
  vim.cmd.stopinsert()

  vim.cmd("SeriPrompt a question")
  H.eq("done", H.wait_turn(1).status, "the first task")
  vim.cmd("SeriPrompt first question")
  H.eq("failed", H.wait_turn(2).status, "the failing task")
  H.wait_chat({ "Task failed: ", "HTTP 500" })
  vim.cmd("SeriPrompt second question")
  H.wait_chat("The answer")
  vim.cmd("SeriCancel")
  H.eq("cancelled", H.wait_turn(3).status, "the cancelled task")
  H.wait_chat("Task cancelled.")

  vim.cmd("SeriCompact")
  H.wait(function()
    return #H.events_named("SeriCompacted") == 1
  end, "the compaction")
  H.wait_chat("Context compacted")
  vim.cmd("SeriPrompt third question")
  H.eq("done", H.wait_turn(4).status, "the task after the compaction")
  H.wait_chat("All good now.")
  -- Drawn again from the state, as when the chat is opened anew.
  chat.close()
  vim.cmd("Seri")

  -- The cancelled task's reply was kept, its notice with it; the failed task went.
  local text = H.chat()
  local notice = H.truthy(H.chat_line("Context compacted"), "the compaction's notice")
  H.truthy(not H.chat_has("Task failed: "), "the failure went with its task:\n" .. text)
  local cancelled = H.truthy(H.chat_line("Task cancelled."), "the kept task's notice")
  H.eq("The answer", chat.lines()[cancelled - 2], "the notice under its kept reply")
  H.truthy(cancelled < notice, "not drawn again after the compaction:\n" .. text)
  H.eq(1, select(2, text:gsub("Context compacted", "")), "one compaction notice:\n" .. text)
end)
