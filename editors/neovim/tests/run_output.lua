-- The `run` tool in the chat: its approval card shows the command line and its cwd as
-- written, with its choices; its output shows under its tool row while it runs (the
-- last lines, as printed), and goes when the result comes; `gs` on the row of a silent
-- `sleep` stops just that command, and the task goes on. The provider is scripted by
-- test_neovim.py; what is checked on screen is read with screenstring().
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  local approve = require("seri.approve")
  local output = require("seri.chat.output")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  vim.o.columns, vim.o.lines = 200, 60
  vim.ui.input = function(_, on_confirm)
    on_confirm("")
  end
  seri.setup(H.options({ permissions = { run = "ask" } }))
  H.wait_ready()

  local function chat_win()
    return vim.fn.bufwinid(chat.state.buf)
  end
  local function press(keys)
    vim.api.nvim_set_current_win(chat_win())
    vim.api.nvim_feedkeys(keys, "x", false)
  end
  local function screen()
    return H.window_screen(chat_win())
  end
  local function wait_screen(text, ms)
    H.wait(function()
      return screen():find(text, 1, true)
    end, ("the screen to show %q"):format(text), ms)
  end

  -- The card: the command line exactly, its cwd, and the keys of its choices.
  local slow = "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done; printf 'a\\tb\\n'"
  vim.cmd("SeriPrompt print some lines")
  H.wait(function()
    return #approve.questions == 1
  end, "the command's question")
  vim.api.nvim_win_set_width(chat_win(), 150)
  H.wait_chat({ "$ " .. slow, "  in .", "a Allow once · ", "d Deny…" })
  H.shown_exactly(chat_win(), "$ " .. slow)
  H.eq(nil, screen():find("running ·", 1, true), "no 'running' hint while it is asked")
  press("a")

  -- Its lines show under its row before it ends; the row says how to stop it.
  wait_screen("│ line2")
  H.truthy(screen():find("running · gs stops it", 1, true), "the row's hint:\n" .. screen())
  H.eq(nil, H.chat():find("exit code", 1, true), "the result came before the live lines")
  local lnum = H.chat_line("-> run $ for i in")
  H.truthy(lnum, "the run row")
  -- The tab of its last line is expanded, as a terminal shows it.
  wait_screen("│ a       b")
  H.wait_chat("exit code 0", 10000)
  H.wait_turn(1)
  H.eq(nil, screen():find("running ·", 1, true), "the live view went with the result:\n" .. screen())
  H.eq(0, #output.live, "no command runs")

  -- Only the last lines while it runs, with a count of those above.
  local shown = output.lines({ text = ("x\n"):rep(25), dropped = 3 })
  H.eq(output.LIVE_LINES + 1, #shown, "lines shown")
  H.eq("… 18 lines above", shown[1], "the count above")

  -- A silent long command, stopped from its row: just it ends, the task goes on.
  vim.cmd("SeriPrompt wait")
  H.wait(function()
    return #approve.questions == 1
  end, "the sleep's question")
  press("a")
  wait_screen("running · gs stops it")
  local row = H.chat_line("-> run $ sleep 100")
  H.truthy(row, "the sleep's row")
  vim.api.nvim_set_current_win(chat_win())
  vim.api.nvim_win_set_cursor(chat_win(), { row, 0 })
  press("gs")
  H.wait_chat("stopped by the user", 10000)
  H.wait_turn(2)
  H.wait_chat("The sleep was stopped.")
  H.eq(0, #output.live, "no command runs")

  -- A compound line's card (the command rules' details): the parts no rule allows and
  -- why, and the session's pattern choice on `A`.
  local params = {
    kind = "command",
    message = "seri wants to run `npm test && git push` in web.",
    choices = { "Allow once", "Allow `git push *` for this session", "Deny" },
    command = "npm test && git push",
    cwd = "web",
    parts = { "npm test", "git push" },
    unmatched = { "git push" },
    patterns = { "git push *" },
    reason = "no allow rule matches `git push`",
  }
  local q = { root = "x", params = params, resolve = function() end }
  local card = require("seri.render").card(params, approve.card_keys(q)).lines
  H.eq({
    "▌ seri wants to run `npm test && git push` in web.",
    "▌   $ npm test && git push",
    "▌   in web",
    "▌   not allowed by a rule: git push",
    "▌   asked because no allow rule matches `git push`",
    "▌ a Allow once · A Allow `git push *` for this session · d Deny…",
    "",
  }, card, "the card")

  -- :SeriStop with nothing running says so.
  vim.cmd("SeriStop")
  H.truthy(H.notes[#H.notes].msg:find("no command is running", 1, true), "the notice")
end)
