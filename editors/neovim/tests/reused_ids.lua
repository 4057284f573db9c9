-- Tool calls whose ids repeat across replies (some providers number calls per reply:
-- `c1` in every turn): each result is drawn under its own call, the newest call of that
-- id before it. The provider is scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  vim.cmd.cd(H.env.workspace)
  require("seri").setup(H.options())
  H.wait_ready()
  vim.cmd("SeriPrompt read a")
  H.wait_turn(1)
  vim.cmd("SeriPrompt read b")
  H.wait_turn(2)
  H.wait_chat({ "-> read_file a", "<- alpha", "-> read_file b", "<- bravo" })
  local lines = require("seri.chat").lines()
  local function row(text)
    for i, line in ipairs(lines) do
      if line:find(text, 1, true) then
        return i
      end
    end
    error(("no line holds %q"):format(text))
  end
  -- Each result right under its call.
  H.eq(row("-> read_file a") + 1, row("<- alpha"), "a's result under a's call")
  H.eq(row("-> read_file b") + 1, row("<- bravo"), "b's result under b's call")
  -- Drawn again from the store (a reopen), the same.
  require("seri.chat.draw").redraw()
  lines = require("seri.chat").lines()
  H.eq(row("-> read_file b") + 1, row("<- bravo"), "after a redraw")
  H.eq(1, #vim.tbl_filter(function(line)
    return line:find("<- bravo", 1, true) ~= nil
  end, lines), "bravo shown once")
end)
