-- `gR` on a prompt whose file was changed since seri wrote it: after "Rewind", the user is
-- asked whether to overwrite it; Cancel rewinds nothing, Overwrite puts it back too.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  local asked, answers = {}, { "Rewind", "Cancel", "Rewind", "Overwrite" }
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, opts.prompt)
    local answer = table.remove(answers, 1)
    on_choice(answer, vim.fn.index(items, answer) + 1)
  end
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd("SeriPrompt write the notes")
  H.eq("done", H.wait_turn(1).status, "the task")
  H.wait_chat("Wrote notes.")
  vim.fn.writefile({ "changed by hand" }, "notes.txt")

  local win = vim.fn.bufwinid(chat.state.buf)
  local function rewind_here()
    vim.api.nvim_set_current_win(win)
    -- The prompt's own line (the chat's title may name it too): the last that holds it.
    local lnum
    for i, line in ipairs(chat.lines()) do
      if line == "write the notes" then
        lnum = i
      end
    end
    vim.api.nvim_win_set_cursor(win, { assert(lnum, "the prompt's line"), 0 })
    vim.api.nvim_feedkeys("gR", "x", false)
  end
  rewind_here()
  H.wait(function()
    return #asked == 2
  end, "asked to overwrite")
  H.truthy(asked[2]:find("Overwrite 1 file(s) changed since seri wrote them (notes.txt)?", 1, true), asked[2])
  vim.wait(300)
  H.truthy(H.chat_has("write the notes"), "Cancel rewinds nothing")
  H.eq({ "changed by hand" }, vim.fn.readfile("notes.txt"), "the file as the user left it")

  rewind_here()
  H.wait(function()
    return chat.input_text() == "write the notes"
  end, "the prompt back in the input")
  H.wait(function()
    return vim.fn.filereadable("notes.txt") == 0
  end, "the overwritten file gone (the task created it)")
end)
