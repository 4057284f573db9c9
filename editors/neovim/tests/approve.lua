-- Questions as cards in the chat (`seri/approve`): a write's card opens the closed chat
-- without taking the cursor, shows the change, and says so in the status; its diff
-- (a tab page in diff mode) allows it; a denial carries a note to the model; a cancelled
-- task takes its card (and diff) away; a memory line has its own card. The provider is
-- scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  local approve = require("seri.approve")
  local workspace = vim.uv.fs_realpath(H.env.workspace)
  vim.cmd.cd(workspace)
  vim.ui.select = function()
    error("a question went to vim.ui.select instead of the chat")
  end
  local notes = {}
  vim.ui.input = function(opts, on_confirm)
    table.insert(notes, opts.prompt)
    on_confirm("keep the spaces")
  end

  seri.setup(H.options({ permissions = { write = "ask" } }))
  require("seri.config").options.chat.open_on_prompt = false
  H.wait_ready()
  vim.cmd.edit(workspace .. "/app.py")
  local file_win = vim.api.nvim_get_current_win()

  ---Press `keys` in window `win`.
  local function press(win, keys)
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_feedkeys(keys, "x", false)
  end
  local function chat_win()
    return vim.fn.bufwinid(chat.state.buf)
  end

  -- A new file, asked while the chat is closed: the chat opens, the cursor stays.
  vim.cmd("SeriPrompt write a.txt")
  H.wait(function()
    return #approve.questions == 1
  end, "the question")
  H.truthy(chat.is_open(), "the chat opened for the question")
  H.eq(file_win, vim.api.nvim_get_current_win(), "the window the cursor was in")
  H.wait_chat({ "seri wants to create a.txt.", "+alpha", "a Allow · A Allow for this session" })
  H.truthy(H.status():find("waiting for your approval", 1, true), "status: " .. H.status())
  vim.o.columns = 200 -- room in the winbar for the keys
  vim.api.nvim_win_set_width(chat_win(), 120)
  vim.g.statusline_winid = chat_win()
  H.truthy(chat.winbar():find("a allow", 1, true), "the winbar's keys: " .. chat.winbar())

  -- Its diff: the file as it is (nothing yet) beside what seri proposes, in diff mode;
  -- `a` there allows the write, and the diff closes.
  press(chat_win(), "D")
  local diff_tab = vim.api.nvim_get_current_tabpage()
  local wins = vim.api.nvim_tabpage_list_wins(diff_tab)
  H.eq(2, #wins, "the diff's windows")
  for _, win in ipairs(wins) do
    H.truthy(vim.wo[win].diff, "diff mode in " .. vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)))
  end
  H.eq({ "" }, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(wins[1]), 0, -1, false),
    "the file now (new)")
  H.eq({ "alpha" }, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(wins[2]), 0, -1, false),
    "the proposed text")
  press(wins[2], "a")
  H.eq("done", H.wait_turn(1).status, "the allowed write")
  H.eq({ "alpha" }, vim.fn.readfile(workspace .. "/a.txt"), "a.txt written")
  H.eq(false, vim.api.nvim_tabpage_is_valid(diff_tab), "the diff tab, closed")
  H.truthy(not H.chat_has("seri wants to create a.txt."), "the card, gone")
  H.truthy(not H.status():find("approval", 1, true), "status after: " .. H.status())

  -- An edit, denied from its card with a note for the model (the provider's next request
  -- holds it: test_neovim.py reads it).
  vim.cmd("SeriPrompt reformat app.py")
  H.wait_chat({ "seri wants to edit app.py.", "-x = 1", "+x=1" })
  press(chat_win(), "d")
  H.eq("done", H.wait_turn(2).status, "the task after the denial")
  H.eq(1, #notes, "the note asked for")
  H.wait_chat("Denied: the user denied this write: keep the spaces.")
  H.eq({ "x = 1" }, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(file_win), 0, -1, false),
    "app.py unchanged")

  -- A task cancelled while it asks: the card and its diff go away.
  vim.cmd("SeriPrompt write b.txt")
  H.wait_chat("seri wants to create b.txt.")
  press(chat_win(), "D")
  local b_tab = vim.api.nvim_get_current_tabpage()
  vim.cmd("SeriCancel")
  H.eq("cancelled", H.wait_turn(3).status, "the cancelled task")
  H.wait(function()
    return #approve.questions == 0 and not H.chat_has("seri wants to create b.txt.")
  end, "the withdrawn card to go")
  H.eq(false, vim.api.nvim_tabpage_is_valid(b_tab), "the withdrawn question's diff tab")

  -- A memory line: its own card and words.
  vim.cmd("SeriPrompt remember how tests run")
  H.wait_chat({ "seri wants to remember", "a Remember · d Don't remember" })
  press(chat_win(), "a")
  H.eq("done", H.wait_turn(4).status, "the remembering task")
  H.wait_chat("Noted.")
end)
