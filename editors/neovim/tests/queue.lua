-- Prompts sent while a task runs are queued: shown in the chat, sent when the task
-- ends, one can be taken back with `x`; a cancelled task gives the queue back to the
-- input. A refusal names the editor's commands, not the protocol's. The provider is
-- scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd("Seri")
  local input_win = vim.fn.bufwinid(chat.state.input)
  local chat_win = vim.fn.bufwinid(chat.state.buf)

  local function send(text)
    vim.api.nvim_set_current_win(input_win)
    vim.api.nvim_buf_set_lines(chat.state.input, 0, -1, false, { text })
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  end

  -- Two prompts while the first answer streams: both wait, shown as queued.
  send("first question")
  H.wait_chat("The first answer")
  send("second question")
  send("third question")
  H.wait_chat({ "## You (queued)\nsecond question", "## You (queued)\nthird question" })
  H.eq("", chat.input_text(), "the input, free for the next prompt")
  -- `x` on the third takes it back into the input.
  vim.api.nvim_set_current_win(chat_win)
  vim.api.nvim_win_set_cursor(chat_win, { H.chat_line("third question"), 0 })
  vim.api.nvim_feedkeys("x", "x", false)
  H.eq("third question", chat.input_text(), "the prompt taken back")
  H.truthy(not H.chat_has("third question"), "no longer queued")
  vim.api.nvim_buf_set_lines(chat.state.input, 0, -1, false, {})
  -- The first task ends, the second prompt goes.
  H.eq("done", H.wait_turn(1).status, "the first task")
  H.eq("done", H.wait_turn(2).status, "the queued prompt's task")
  H.wait_chat("Second answer.")
  H.truthy(not H.chat_has("(queued)"), "nothing queued any more")

  -- While a reply stalls: a session command is refused in the editor's words.
  send("stall please")
  H.wait_chat("Stalling")
  vim.cmd("SeriNew")
  H.wait_chat("could not start a new session: A task is running; wait for it to end or cancel "
    .. "it (:SeriCancel or <C-c>) first.")
  H.truthy(not H.chat_has("seri.cancel"), "no protocol names")
  -- A prompt queued behind it comes back to the input when the task is cancelled.
  send("after the stall")
  H.wait_chat("## You (queued)\nafter the stall")
  vim.cmd("SeriCancel")
  H.eq("cancelled", H.wait_turn(3).status, "the stalled task")
  H.wait(function()
    return chat.input_text() == "after the stall"
  end, "the queued prompt back in the input")
  H.wait_chat("The queued prompts are back in the input.")
  vim.wait(300)
  H.eq(3, #H.turns(), "tasks: the queued prompt was not sent")
end)
