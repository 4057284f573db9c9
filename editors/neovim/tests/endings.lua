-- A chat opened again says how each earlier turn ended: the error under a prompt that
-- failed, "Cancelled." under a cancelled reply, and a mark under a turn that seri was
-- killed in the middle of. test_neovim.py made that session with a server of its own
-- (one prompt failed, one cancelled, one killed mid-stream) and scripts the provider.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd("Seri")
  H.wait_chat({ "Task failed: ", "Cancelled.", "The reply was cut off" })

  -- Each under its own turn, in order.
  local order = {
    "first: this one fails",
    "Task failed: The provider answered HTTP 400: model not found: gpt-9",
    "second: this one is cancelled",
    "The first words arri",
    "Cancelled.",
    "third: this one is cut off",
    "Half of a sentence and then",
    "⋯ The reply was cut off",
  }
  local previous = 0
  for _, text in ipairs(order) do
    local at = H.chat_line(text)
    H.truthy(at and at > previous, ("%q after the line before it (%s > %s)"):format(text, at, previous))
    previous = at
  end

  -- A task that fails now says so once, live, and again after the chat reads the session
  -- again (the stored end of the turn is not drawn beside the live notice).
  vim.cmd("SeriPrompt fourth: fails live")
  H.eq("failed", H.wait_turn(1).status, "the live task")
  H.wait_chat("fourth is refused")
  chat.reload(require("seri.client").current())
  H.wait(function()
    return chat.state.loaded and chat.state.load_token == nil
  end, "the session read again")
  local failed = vim.tbl_filter(function(line)
    return line:find("Task failed: ", 1, true) ~= nil
  end, chat.lines())
  H.eq(2, #failed, "one failure line per failed turn")
end)
