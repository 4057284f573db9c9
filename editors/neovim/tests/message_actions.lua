-- Per-message actions in the chat: `gp` on a code block puts it below the cursor of the
-- last code window; `gR` on a prompt asks, then rewinds to before it (the conversation
-- and the file its task wrote go back) and puts the prompt back in the input. The
-- provider is scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, opts.prompt)
    on_choice(items[1])
  end
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  vim.cmd.edit("app.txt")
  local code_win = vim.api.nvim_get_current_win()
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd("SeriPrompt first question")
  H.eq("done", H.wait_turn(1).status, "the first task")
  vim.cmd("SeriPrompt second question")
  H.eq("done", H.wait_turn(2).status, "the second task")
  H.wait_chat({ "first question", "second question", "inserted_line = 1" })

  -- gp on the code block: into app.txt, below its cursor (line 1), and the focus goes there.
  local win = vim.fn.bufwinid(chat.state.buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { H.chat_line("inserted_line = 1"), 0 })
  vim.api.nvim_feedkeys("gp", "x", false)
  H.eq(code_win, vim.api.nvim_get_current_win(), "the focus in the code window")
  H.eq(
    { "app: v1", "inserted_line = 1", "inserted_line = 2" },
    vim.api.nvim_buf_get_lines(0, 0, -1, false),
    "the block below the cursor"
  )

  -- gR on the second prompt: asked first, then it and its reply leave, notes.txt goes.
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { H.chat_line("second question"), 0 })
  vim.api.nvim_feedkeys("gR", "x", false)
  H.wait(function()
    return chat.input_text() == "second question"
  end, "the prompt back in the input (" .. chat.input_text() .. ")")
  H.truthy(asked[1] and asked[1]:find("Rewind to before this prompt", 1, true), "asked first")
  H.wait(function()
    return not H.chat_has("second question") and not H.chat_has("Wrote notes.")
  end, "the prompt and its reply to leave the chat")
  H.truthy(H.chat_has("first question"), "the first prompt stays")
  H.eq(0, vim.fn.filereadable("notes.txt"), "the file the task wrote is gone")

  -- Not on a prompt: nothing is rewound.
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  vim.api.nvim_feedkeys("gR", "x", false)
  H.wait(function()
    return H.chat_has("Put the cursor on one of your prompts")
  end, "why it did not rewind")
end)
