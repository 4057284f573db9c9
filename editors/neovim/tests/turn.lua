-- Setup and start, a prompt with a tool call, status, User events, progress, the input
-- window, :SeriCompact with focus words, slash commands, :SeriMaxTurns, :SeriClear.
-- The provider is scripted by test_neovim.py (see there for the replies).
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local workspace = vim.uv.fs_realpath(H.env.workspace)
  -- Neovim opens in a subfolder of the project; the `.seri` marker names the root.
  vim.cmd.cd(workspace .. "/src")

  local progress = {}
  vim.api.nvim_create_autocmd("LspProgress", {
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == "seri" then
        table.insert(progress, args.data.params.value)
      end
    end,
  })
  local status_when_prompted
  vim.api.nvim_create_autocmd("User", {
    pattern = "SeriMessage",
    callback = function(args)
      if args.data.message.role == "user" and not status_when_prompted then
        status_when_prompted = H.status()
      end
    end,
  })

  -- setup() starts one server, named seri, for the project root.
  seri.setup(H.options({ provider = { keepTokens = 1 } }))
  H.wait_ready()
  local clients = H.clients()
  H.eq(1, #clients, "seri clients after setup")
  local lsp = clients[1]
  H.eq(workspace, lsp.config.root_dir, "the client's root")

  -- Scratch and help buffers start no second server and are not attached.
  vim.cmd("enew")
  vim.bo.buftype = "nofile"
  local scratch = vim.api.nvim_get_current_buf()
  vim.cmd("help lua")
  local help = vim.api.nvim_get_current_buf()
  vim.wait(300)
  H.eq(1, #H.clients(), "seri clients after a scratch and a help buffer")
  H.eq(false, vim.lsp.buf_is_attached(scratch, lsp.id), "scratch buffer attached")
  H.eq(false, vim.lsp.buf_is_attached(help, lsp.id), "help buffer attached")
  vim.cmd("helpclose")

  -- A file of the project is attached to the project's server.
  vim.cmd.edit(workspace .. "/notes.txt")
  local notes = vim.api.nvim_get_current_buf()
  H.wait(function()
    return vim.lsp.buf_is_attached(notes, lsp.id)
  end, "notes.txt to be attached")
  H.eq(1, #H.clients(), "seri clients after opening a project file")

  -- :Seri opens the chat: seri://chat, filetype seri, a split on the right.
  -- Before any session, the status shows the model's window and nothing used.
  H.wait(function()
    return H.status() == "seri 0% (0/128k) ▏compacts at 64k"
  end, "the status before the first prompt (" .. H.status() .. ")")
  local status_before = H.status()
  vim.cmd("Seri")
  local chat = require("seri.chat").state
  H.eq("seri://chat", vim.api.nvim_buf_get_name(chat.buf), "chat buffer name")
  H.eq("seri", vim.bo[chat.buf].filetype, "chat filetype")
  local chat_win = vim.fn.bufwinid(chat.buf)
  H.truthy(chat_win ~= -1, "the chat is shown")
  H.eq(vim.o.columns, vim.fn.win_screenpos(chat_win)[2] + vim.api.nvim_win_get_width(chat_win) - 1,
    "the chat's right edge")
  H.wait_chat("no session yet")

  -- A prompt returns at once; its reply streams into the chat with the tool line.
  local started = vim.uv.hrtime()
  vim.cmd("SeriPrompt read notes.txt please")
  H.truthy((vim.uv.hrtime() - started) / 1e9 < 0.5, ":SeriPrompt blocked the editor")
  local ended = H.wait_turn(1)
  H.eq("done", ended.status, "first turn status")
  H.wait_chat({
    "## You",
    "read notes.txt please",
    "## seri",
    "Let me look at the file.",
    "-> read_file notes.txt",
    "The notes say hello.",
  })
  local running = status_when_prompted
    and (status_when_prompted:find(" · working", 1, true)
      or status_when_prompted:find(" · waiting for the model", 1, true))
  H.truthy(running, "status while the task ran: " .. tostring(status_when_prompted))

  -- The tool result is folded under its head line.
  local head = H.truthy(H.chat_line("   <- hello from notes"), "the tool result line")
  H.eq(H.chat_line("-> read_file notes.txt") + 1, head, "the result's place, under its call")
  vim.api.nvim_win_call(chat_win, function()
    H.eq(head, vim.fn.foldclosed(head), "the result fold starts at its head")
    H.eq(head, vim.fn.foldclosed(head + 1), "the result's second line is folded")
  end)

  -- status() changes after the turn (the provider billed 5000 input tokens).
  H.wait(function()
    return H.status() == "seri 4% (5k/128k) ▏compacts at 64k"
  end, "status to show the billed 5000 tokens after the turn")
  H.truthy(H.status() ~= status_before, "status changed")

  -- User autocommands carry the payloads; $/progress reached LspProgress.
  local changed = H.events_named("SeriSessionChanged")
  H.eq("new", changed[1].data.reason, "session change reason")
  local session_id = changed[1].data.session.id
  local roles = vim.tbl_map(function(e)
    return e.data.message.role
  end, H.events_named("SeriMessage"))
  H.eq({ "user", "assistant", "tool", "assistant" }, roles, "SeriMessage roles")
  H.eq(session_id, H.events_named("SeriMessage")[1].data.sessionId, "SeriMessage sessionId")
  H.truthy(#vim.tbl_filter(function(v)
    return v.kind == "begin"
  end, progress) > 0, "LspProgress begin for seri")
  H.truthy(H.chat_has("session " .. session_id), "the header names the session")

  -- A prompt typed in the input window, sent with <CR> in normal mode.
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat.input))
  vim.api.nvim_buf_set_lines(chat.input, 0, -1, false, { "and now", "a second question" })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  H.eq({ "" }, vim.api.nvim_buf_get_lines(chat.input, 0, -1, false), "the input after sending")
  H.eq("done", H.wait_turn(2).status, "second turn status")
  H.wait_chat({ "and now\na second question", "Second answer." })

  -- A slash command passes through :SeriPrompt.
  vim.cmd("SeriPrompt /max-turns 9")
  H.wait(function()
    return H.call("seri.session.get").session.maxTurns == 9
  end, "/max-turns 9 to set the budget")

  -- :SeriCompact with focus words: the chat shows the recap block.
  vim.cmd("SeriCompact focus on tests")
  H.wait(function()
    return #H.events_named("SeriCompacted") == 1
  end, "the compaction")
  H.eq("manual", H.events_named("SeriCompacted")[1].data.trigger, "compaction trigger")
  H.wait_chat({ "## Recap", "Goal: rename foo to bar", "Next steps: update README.md" })
  H.wait(function()
    return not H.chat_has("Let me look at the file.")
  end, "the evicted prompt to leave the chat")
  H.truthy(H.chat_has("Second answer."), "the kept reply stays")
  H.wait(function()
    return H.status():find("%d+%%") and not H.status():find("5k/128k", 1, true)
  end, "status to change after the compaction: " .. H.status())

  -- :SeriMaxTurns sets the budget.
  vim.cmd("SeriMaxTurns 7")
  H.wait(function()
    return H.call("seri.session.get").session.maxTurns == 7
  end, ":SeriMaxTurns 7 to set the budget")

  -- :SeriClear: a new session, the chat redrawn with its header.
  vim.cmd("SeriClear")
  H.wait(function()
    local last = H.events_named("SeriSessionChanged")
    return #last == 2 and last[2].data.reason == "cleared"
  end, "the session to be cleared")
  local cleared = H.events_named("SeriSessionChanged")[2].data.session
  H.truthy(cleared.id ~= session_id, "clear opens another session")
  H.wait_chat("session " .. cleared.id)
  H.truthy(H.chat_has("cleared"), "the header says why")
  H.truthy(not H.chat_has("Second answer."), "the old conversation left the chat")

  -- :Seri toggles the chat closed again.
  vim.cmd("Seri")
  H.eq(-1, vim.fn.bufwinid(chat.buf), "the chat window after :Seri again")

  -- :q in the chat window leaves its input behind; :Seri shows one chat, one input.
  vim.cmd("Seri")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat.buf))
  vim.cmd("quit")
  H.eq({}, vim.fn.win_findbuf(chat.buf), "chat windows after :q")
  H.eq(1, #vim.fn.win_findbuf(chat.input), "the input left behind")
  vim.cmd("Seri")
  H.eq(1, #vim.fn.win_findbuf(chat.buf), "chat windows after :Seri")
  H.eq(1, #vim.fn.win_findbuf(chat.input), "input windows after :Seri")
  local below = vim.fn.win_screenpos(vim.fn.bufwinid(chat.buf))[1]
    + vim.api.nvim_win_get_height(vim.fn.bufwinid(chat.buf))
  H.eq(below + 1, vim.fn.win_screenpos(vim.fn.bufwinid(chat.input))[1], "the input's place")
  -- :q in the input instead: opening the chat gives it its input back.
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat.input))
  vim.cmd("quit")
  seri.open()
  H.eq(1, #vim.fn.win_findbuf(chat.buf), "chat windows after :q in the input")
  H.eq(1, #vim.fn.win_findbuf(chat.input), "the input, back under the chat")
end)
