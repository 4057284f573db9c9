-- Context attached to prompts: `@` completes workspace files and `/` slash commands in
-- the input; `#buffer` sends the unsaved text of the file last edited, `#selection` the
-- lines last selected; `:'<,'>SeriSend` sends lines with a prompt, or puts their mention
-- into the input; what was attached shows folded in the transcript. The provider is
-- scripted by test_neovim.py, which reads the prompts it was sent.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  local workspace = vim.uv.fs_realpath(H.env.workspace)
  vim.cmd.cd(workspace)
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd.edit(workspace .. "/src/app.py")
  local app_win = vim.api.nvim_get_current_win()
  local app = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(app, 0, 1, false, { "a = 100" }) -- unsaved
  vim.cmd("Seri")
  local input_win = vim.fn.bufwinid(chat.state.input)

  ---What completion offers after `typed` in the input (through its 'omnifunc').
  local function offered(typed)
    vim.api.nvim_set_current_win(input_win)
    vim.api.nvim_buf_set_lines(chat.state.input, 0, -1, false, {})
    _G.seri_offered = nil
    local keys = "i" .. typed .. "<C-x><C-o><Cmd>lua _G.seri_offered = vim.fn.complete_info()<CR><C-e><Esc>"
    vim.api.nvim_feedkeys(vim.keycode(keys), "xt", false)
    vim.api.nvim_buf_set_lines(chat.state.input, 0, -1, false, {})
    return vim.tbl_map(function(item)
      return item.word
    end, _G.seri_offered.items)
  end
  H.truthy(vim.tbl_contains(offered("look at @ap"), "@src/app.py"), "@ offers src/app.py")
  H.truthy(vim.tbl_contains(offered("look at @READ"), "@README.md"), "@ offers README.md")
  H.truthy(vim.tbl_contains(offered("/comp"), "/compact"), "/ offers /compact")
  -- The slash commands are the server's (`initialize`'s `experimental.seri.slashCommands`),
  -- each with its summary beside it; a project whose server is not running offers none.
  local compact = vim.tbl_filter(function(item)
    return item.word == "/compact"
  end, _G.seri_offered.items)[1]
  H.truthy(
    compact.menu:find("Compact the conversation now into a recap", 1, true),
    "/compact's summary, from the server: " .. vim.inspect(compact)
  )
  local names = vim.tbl_map(function(command)
    return command.name
  end, require("seri.slash").commands(require("seri.client").current()))
  H.truthy(vim.tbl_contains(names, "rename"), "the server's list: " .. vim.inspect(names))
  local _, none = require("seri.attach").complete("/", workspace .. "/no-server-here", true)
  H.eq({}, none, "no slash commands without a running server")
  H.eq({ "#buffer", "#selection" }, offered("see #"), "# offers what it can stand for")

  ---Send `text` from the input, as a user does.
  local function send(text)
    vim.api.nvim_set_current_win(input_win)
    vim.api.nvim_buf_set_lines(chat.state.input, 0, -1, false, { text })
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  end

  -- #buffer: the file last edited, with its unsaved text.
  send("explain #buffer")
  H.eq("done", H.wait_turn(1).status, "the #buffer prompt")
  H.wait_chat({ "explain @src/app.py", "   @ src/app.py" })

  -- #selection: the lines last selected there.
  vim.api.nvim_set_current_win(app_win)
  vim.api.nvim_feedkeys("2GVj\27", "x", false)
  send("what is #selection")
  H.eq("done", H.wait_turn(2).status, "the #selection prompt")
  H.wait_chat({ "what is @src/app.py:2-3", "   @ src/app.py (lines 2-3)" })
  -- The attached text is folded under its line.
  local head = H.chat_line("   @ src/app.py (lines 2-3)")
  vim.api.nvim_win_call(vim.fn.bufwinid(chat.state.buf), function()
    H.eq(head, vim.fn.foldclosed(head + 1), "the attached lines, folded")
  end)

  -- :'<,'>SeriSend with a prompt: sent at once with the lines.
  vim.api.nvim_set_current_win(app_win)
  vim.cmd("4,5SeriSend explain these lines")
  H.eq("done", H.wait_turn(3).status, "the :SeriSend prompt")
  H.wait_chat("   @ src/app.py (lines 4-5)")

  -- Without a prompt: the lines' mention goes into the input, to write around.
  vim.api.nvim_set_current_win(app_win)
  vim.cmd("6SeriSend")
  vim.cmd("stopinsert")
  H.eq("@src/app.py:6 ", chat.input_text(), "the mention in the input")
  H.eq(input_win, vim.api.nvim_get_current_win(), "the cursor, in the input")
  send(chat.input_text() .. "why?")
  H.eq("done", H.wait_turn(4).status, "the prompt written around the mention")

  -- A token that stands for nothing keeps the prompt in the input, and says why.
  require("seri.attach").last_buf = nil -- no file was edited yet
  send("explain #buffer")
  H.wait(function()
    return chat.input_text() == "explain #buffer"
  end, "the prompt back in the input")
  H.truthy(vim.iter(H.notes):any(function(note)
    return note.msg:find("#buffer: open a file first", 1, true)
  end), "why it was not sent")
  H.eq(4, #H.turns(), "tasks")
end)
