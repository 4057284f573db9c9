-- `gr` after a task that did some work before it failed: the work stays in the
-- conversation and the prompt is sent again after it (the model sees what was done).
-- The provider is scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd("Seri")

  vim.cmd("SeriPrompt look at app.py")
  H.eq("failed", H.wait_turn(1).status, "the task that read a file, then failed")
  H.wait_chat("Task failed: ")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat.state.buf))
  vim.api.nvim_feedkeys("gr", "x", false)
  H.eq("done", H.wait_turn(2).status, "the prompt sent again")
  H.wait_chat("Done after the retry.")
  H.eq(2, #vim.tbl_filter(function(line)
    return line == "look at app.py"
  end, chat.lines()), "the prompt twice: before the work and after it")
end)
