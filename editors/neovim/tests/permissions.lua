-- Write permissions answered on their card in the chat, edits of open and unopened
-- files, :SeriCancel during a stalled reply, and a subagent whose messages (another
-- sessionId) stay out of the chat.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local workspace = vim.uv.fs_realpath(H.env.workspace)
  vim.cmd.cd(workspace)

  vim.ui.select = function()
    error("a question went to vim.ui.select instead of the chat")
  end
  local asked = 0
  ---Wait for the card `text`, then press `key` in the chat.
  local function answer(text, key)
    H.wait_chat(text)
    asked = asked + 1
    vim.api.nvim_set_current_win(vim.fn.bufwinid(require("seri.chat").state.buf))
    vim.api.nvim_feedkeys(key, "x", false)
  end

  seri.setup(H.options({ permissions = { write = "ask" } }))
  H.wait_ready()
  vim.cmd.edit(workspace .. "/open.txt")
  local open_buf = vim.api.nvim_get_current_buf()
  local project = require("seri.client").current()
  H.wait(function()
    return vim.lsp.buf_is_attached(open_buf, project.client_id)
  end, "open.txt to be attached")

  -- A new file: the server asks, the user allows it on the card.
  vim.cmd("SeriPrompt write hello.txt")
  H.wait_chat("a Allow · A Allow for this session · d Deny… · D Diff")
  answer("seri wants to create hello.txt.", "a")
  H.eq("done", H.wait_turn(1).status, "the write task")
  H.truthy(not H.chat_has("seri wants to create"), "the card went away once answered")
  H.eq({ "hi" }, vim.fn.readfile(workspace .. "/hello.txt"), "hello.txt on disk")
  H.wait_chat({ "-> write_file hello.txt", "Created hello.txt", "Wrote the file." })

  -- Edits: one file open in Neovim (its buffer changes), one not open (the disk changes
  -- and no stray modified buffer stays behind).
  vim.cmd("SeriPrompt edit both files")
  answer("seri wants to edit open.txt.", "A")
  H.eq("done", H.wait_turn(2).status, "the edit task")
  H.eq(2, asked, "one question, then allowed for the session")
  H.eq({ "open: after" }, vim.api.nvim_buf_get_lines(open_buf, 0, -1, false), "the open buffer")
  H.eq({ "open: before" }, vim.fn.readfile(workspace .. "/open.txt"), "open.txt on disk (unsaved)")
  H.eq({ "closed: after" }, vim.fn.readfile(workspace .. "/closed.txt"), "closed.txt on disk")
  -- Each result sits under its call; a failed one is marked.
  H.wait_chat({ "-> read_file missing.txt", "   <- failed: " })
  local lines = require("seri.chat").lines()
  local expected = {
    ["-> edit open.txt"] = "   <- Edited open.txt at line 1.",
    ["-> edit closed.txt"] = "   <- Edited closed.txt at line 1.",
    ["-> read_file missing.txt"] = "   <- failed: ",
  }
  local function results_under_calls(when)
    for call, result in pairs(expected) do
      local at = H.truthy(H.chat_line(call), "the line " .. call)
      H.eq(result, lines[at + 1]:sub(1, #result), ("the result under %s (%s)"):format(call, when))
    end
  end
  results_under_calls("as they arrived")
  -- Drawn again from the stored history (resuming the open session), the same.
  vim.cmd("SeriResume " .. project.session.id)
  H.wait_chat({ "resumed", "-> read_file missing.txt" })
  lines = require("seri.chat").lines()
  results_under_calls("from the history")
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf) == workspace .. "/closed.txt" then
      local stray = vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified
      H.eq(false, stray, "closed.txt left modified")
    end
  end

  -- :SeriCancel while the reply is stalled mid-stream: the streamed part shows, the task
  -- stops, and what was said is kept.
  vim.cmd("SeriPrompt long answer please")
  H.wait_chat("The first words arri")
  H.truthy(H.status():find(" · waiting for the model", 1, true),
    "status while streaming: " .. H.status())
  vim.cmd("SeriCancel")
  H.eq("cancelled", H.wait_turn(3).status, "the cancelled task")
  H.wait_chat("Task cancelled.")
  H.wait(function()
    return not H.status():find(" · ", 1, true)
  end, "the status to stop saying what the task waits for")
  local got
  seri.execute("seri.session.get", nil, function(_, result)
    got = result
  end)
  H.wait(function()
    return got
  end, "the session")
  H.eq("The first words arri", got.messages[#got.messages].content, "the stored partial reply")

  -- <C-c> in the chat's input cancels too.
  vim.cmd("SeriPrompt stall once more")
  H.wait_chat("Stalls")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(require("seri.chat").state.input))
  vim.api.nvim_feedkeys(vim.keycode("<C-c>"), "x", false)
  H.eq("cancelled", H.wait_turn(4).status, "the task cancelled with <C-c>")

  -- A subagent: its messages carry its own sessionId and stay out of the chat.
  vim.cmd("SeriPrompt delegate the look-around")
  H.eq("done", H.wait_turn(5).status, "the delegating task")
  H.wait_chat({ "-> task look around the folder", "The subagent is done." })
  local open = project.session.id
  local other = vim.tbl_filter(function(e)
    return e.data.sessionId ~= open
  end, H.events_named("SeriMessage"))
  H.truthy(#other >= 3, "the subagent's messages were announced")
  H.truthy(not H.chat_has("-> list_dir"), "the subagent's tool call stayed out of the chat")
  H.truthy(not H.chat_has("## You\nlook around the folder"), "the subagent's prompt stayed out")
end)
