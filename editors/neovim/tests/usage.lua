-- The context use is asked for again after each model call, not only when the task
-- ends: while the task's second call stalls, the status already counts the first call's
-- 3000 input tokens. The provider is scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options())
  H.wait_ready()
  H.wait(function()
    return H.status() == "seri 0% (0/128k) ▏compacts at 64k"
  end, "the status before the first prompt")

  vim.cmd("SeriPrompt read notes.txt")
  H.wait(function()
    local used = H.status():match("%((%d[%d.]*)k/128k%)")
    return used and tonumber(used) >= 3
  end, "the status to count the first call's 3000 tokens")
  H.eq(0, #H.turns(), "tasks ended while the second call stalls")

  vim.cmd("SeriCancel")
  H.eq("cancelled", H.wait_turn(1).status, "the stalled task")
end)
