-- Failing checks handed back to the model are no prompt of the user's: the chat shows
-- them folded under a `Checks failed: ...` line, as they arrive and drawn again from the
-- stored history. The provider is scripted by test_neovim.py: a.txt written broken, a
-- final answer, the check fails, a.txt fixed, the check passes.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

local HEAD = "   ∴ Checks failed: lint (round 1 of 3)"

H.run(function()
  local seri = require("seri")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options({
    checks = { { name = "lint", command = "cat a.txt; grep -q fixed a.txt" } },
    permissions = { run = "allow" },
  }))
  H.wait_ready()
  vim.cmd("Seri")
  vim.cmd("SeriPrompt write a.txt")
  H.eq("done", H.wait_turn(1).status, "the task, once the check passes")

  local function shows_the_check(when)
    H.wait_chat({ HEAD, "fixed now" })
    local lines = require("seri.chat").lines()
    local head = H.chat_line(HEAD)
    H.truthy(vim.startswith(lines[head + 1], "   │ The checks failed after your changes"),
      ("the message folded under the head (%s): %s"):format(when, lines[head + 1]))
    H.truthy(H.chat_has("   │ lint: `cat a.txt; grep -q fixed a.txt` exited with 1"),
      "the failing check's line, " .. when)
    H.eq(1, #vim.tbl_filter(function(line)
      return line == "## You"
    end, lines), "`## You` headings (the prompt only), " .. when)
    vim.api.nvim_win_call(vim.fn.bufwinid(require("seri.chat").state.buf), function()
      H.eq(head, vim.fn.foldclosed(head + 1), "the check's body folded, " .. when)
    end)
  end
  shows_the_check("as it arrived")
  vim.cmd("SeriResume " .. require("seri.client").current().session.id)
  H.wait_chat("resumed")
  shows_the_check("drawn from the history")
end)
