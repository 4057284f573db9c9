-- :SeriFork with the cursor on a message of the chat forks there: the fork opens in the
-- chat with the conversation up to that message (the provider's next request holds only
-- that), a line after the copy says where it comes from; the fork key does the same on a
-- prompt; outside the chat, :SeriFork forks at the last message. The provider is scripted
-- by test_neovim.py, which reads the requests it was sent.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd("SeriPrompt first question")
  H.eq("done", H.wait_turn(1).status, "the first task")
  vim.cmd("SeriPrompt second question")
  H.eq("done", H.wait_turn(2).status, "the second task")
  H.wait_chat({ "First answer.", "Second answer." })
  local source = require("seri.client").current().session.id

  -- The cursor on the first answer, in the chat.
  local win = vim.fn.bufwinid(chat.state.buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { H.chat_line("First answer."), 3 })
  vim.cmd("SeriFork")
  H.wait(function()
    local changed = H.events_named("SeriSessionChanged")
    return changed[#changed].data.reason == "forked"
  end, "the fork to open")
  local fork = require("seri.client").current().session
  H.truthy(fork.id ~= source, "a new session")
  H.eq(source, fork.parentId, "the fork names its source")
  H.wait_chat({ "first question", "First answer.", "── forked here from “first question”" })
  H.truthy(not H.chat_has("second question"), "the later messages are not in the fork")
  H.truthy(H.chat_has("fork of " .. source:sub(1, 8)), "the header says it is a fork")
  H.eq(
    H.chat_line("First answer.") + 2,
    H.chat_line("── forked here from"),
    "the mark right after the message forked at"
  )

  -- The next prompt goes to the fork: the provider sees the copy and the prompt only.
  vim.cmd("SeriPrompt third question")
  H.eq("done", H.wait_turn(1).status, "the fork's first task")
  H.wait_chat("Third answer.")
  H.truthy(
    H.chat_line("── forked here from") < H.chat_line("third question"),
    "the new prompt after the mark"
  )

  -- The fork key on a prompt: the copy ends with that prompt.
  local fork_id = require("seri.client").current().session.id
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { H.chat_line("third question"), 0 })
  vim.api.nvim_feedkeys("gb", "x", false)
  H.wait(function()
    local session = require("seri.client").current().session
    return session.id ~= fork_id
      and session.parentId == fork_id
      and H.chat_has("── forked here from")
  end, "the fork of the fork")
  H.wait_chat("third question")
  H.truthy(not H.chat_has("Third answer."), "the copy ends with the prompt")

  -- Above the first message there is nothing to fork at.
  local here = require("seri.client").current().session.id
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  vim.cmd("SeriFork")
  H.wait(function()
    return H.chat_has("Put the cursor on a message")
  end, "why it did not fork")
  H.eq(here, require("seri.client").current().session.id, "no fork from the header")

  -- Outside the chat: at the last message.
  vim.cmd("wincmd p")
  vim.cmd("enew")
  vim.cmd("SeriFork")
  H.wait(function()
    local session = require("seri.client").current().session
    return session.id ~= here and session.parentId == here
  end, "the fork at the last message")
  H.wait_chat({ "third question", "── forked here from" })
end)
