-- Write permissions answered through vim.ui.select (Neovim's own showMessageRequest
-- handler), edits of open and unopened files, :SeriCancel during a stalled reply, and a
-- subagent whose messages (another sessionId) stay out of the chat.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local workspace = vim.uv.fs_realpath(H.env.workspace)
  vim.cmd.cd(workspace)

  local asked = {}
  local answers = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, { prompt = opts.prompt, titles = vim.tbl_map(opts.format_item, items) })
    local answer = table.remove(answers, 1)
    for _, item in ipairs(items) do
      if item.title == answer then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end

  seri.setup(H.options({ permissions = { write = "ask" } }))
  H.wait_ready()
  vim.cmd.edit(workspace .. "/open.txt")
  local open_buf = vim.api.nvim_get_current_buf()
  local project = require("seri.client").current()
  H.wait(function()
    return vim.lsp.buf_is_attached(open_buf, project.client_id)
  end, "open.txt to be attached")

  -- A new file: the server asks, the user picks "Allow" from vim.ui.select.
  answers = { "Allow" }
  vim.cmd("SeriPrompt write hello.txt")
  H.eq("done", H.wait_turn(1).status, "the write task")
  H.eq(1, #asked, "permission questions")
  H.truthy(asked[1].prompt:find("create hello.txt", 1, true), "the question: " .. asked[1].prompt)
  H.eq({ "Allow", "Allow for this session", "Deny" }, asked[1].titles, "the choices")
  H.eq({ "hi" }, vim.fn.readfile(workspace .. "/hello.txt"), "hello.txt on disk")
  H.wait_chat({ "-> write_file hello.txt", "Created hello.txt", "Wrote the file." })

  -- Edits: one file open in Neovim (its buffer changes), one not open (the disk changes
  -- and no stray modified buffer stays behind).
  answers = { "Allow for this session" }
  vim.cmd("SeriPrompt edit both files")
  H.eq("done", H.wait_turn(2).status, "the edit task")
  H.eq(2, #asked, "one question, then allowed for the session")
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
  H.truthy(seri.status():find("working"), "status while streaming: " .. seri.status())
  vim.cmd("SeriCancel")
  H.eq("cancelled", H.wait_turn(3).status, "the cancelled task")
  H.wait_chat("Task cancelled.")
  H.wait(function()
    return not seri.status():find("working")
  end, "the status to stop saying working")
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
