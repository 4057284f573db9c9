-- Apply a code block of the chat to a file (`ga`): the block that shows one function of
-- slug.py goes in that function's place (the server's `seri.code.merge`), shown first in
-- a diff; `a` there writes it through the buffer (one undo takes it back) and saves. A
-- block naming a file outside the workspace is refused with the reason; one naming a new
-- file creates it. The provider is scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  vim.cmd.edit("slug.py")
  local code_win = vim.api.nvim_get_current_win()
  local file_buf = vim.api.nvim_get_current_buf()
  local before = vim.api.nvim_buf_get_lines(file_buf, 0, -1, false)
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd("SeriPrompt fix slugify")
  H.eq("done", H.wait_turn(1).status, "the task")
  H.wait_chat({ 'def slugify(text, sep="-"):', "outside = True", "def helper():" })

  -- ga on the block: a diff tab, the file now on the left, with the block in place on the right.
  local win = vim.fn.bufwinid(chat.state.buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { H.chat_line('def slugify(text, sep="-"):'), 0 })
  vim.api.nvim_feedkeys("ga", "x", false)
  H.wait(function()
    return #vim.api.nvim_list_tabpages() == 2
  end, "the diff's tab page")
  local right = vim.api.nvim_get_current_win()
  local bar = vim.wo[right].winbar
  local asked = bar:find("apply the code block to slug.py (lines 8-10)?", 1, true)
  H.truthy(asked, "the question: " .. bar)
  H.truthy(bar:find("a apply · q discard", 1, true), "the keys: " .. bar)
  local expected = vim.list_extend(vim.list_slice(before, 1, 7), {
    'def slugify(text, sep="-"):',
    "    text = text.lower().strip()",
    '    return re.sub(r"[^a-z0-9]+", sep, text).strip(sep)',
  })
  vim.list_extend(expected, vim.list_slice(before, 11, #before))
  H.eq(expected, vim.api.nvim_buf_get_lines(0, 0, -1, false), "the merged file on the right")
  H.truthy(vim.wo[right].diff, "in diff mode")
  H.eq(8, vim.api.nvim_win_get_cursor(right)[1], "the cursor where the block goes")
  if vim.env.SERI_TEST_PAUSE then
    vim.cmd("redraw")
    vim.wait(tonumber(vim.env.SERI_TEST_PAUSE))
  end

  -- a: written into the buffer and saved; the file's window shows it; one undo goes back.
  vim.api.nvim_feedkeys("a", "x", false)
  H.wait(function()
    return #vim.api.nvim_list_tabpages() == 1
  end, "the diff to close")
  H.eq(expected, vim.api.nvim_buf_get_lines(file_buf, 0, -1, false), "the buffer")
  H.eq(expected, vim.fn.readfile("slug.py"), "the file on disk")
  H.eq(code_win, vim.api.nvim_get_current_win(), "the focus in the file's window")
  H.eq(8, vim.api.nvim_win_get_cursor(code_win)[1], "at the applied function")
  vim.cmd("silent undo")
  H.eq(before, vim.api.nvim_buf_get_lines(file_buf, 0, -1, false), "one undo takes it back")
  vim.cmd("silent redo")

  -- q discards: nothing changes.
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { H.chat_line('def slugify(text, sep="-"):'), 0 })
  vim.api.nvim_feedkeys("ga", "x", false)
  H.wait(function()
    return #vim.api.nvim_list_tabpages() == 2
  end, "the diff's tab page again")
  vim.api.nvim_feedkeys("q", "x", false)
  H.wait(function()
    return #vim.api.nvim_list_tabpages() == 1
  end, "the diff to close on q")
  H.eq(expected, vim.fn.readfile("slug.py"), "nothing more written")

  -- A block naming a file outside the workspace: refused, saying why.
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { H.chat_line("outside = True"), 0 })
  vim.api.nvim_feedkeys("ga", "x", false)
  H.wait(function()
    for _, note in ipairs(H.notes) do
      if note.msg:find("outside the workspace", 1, true) then
        return true
      end
    end
  end, "the refusal")
  H.eq(1, #vim.api.nvim_list_tabpages(), "no diff for a refused block")

  -- A block naming a file not there yet: created, its folder too.
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { H.chat_line("def helper():"), 0 })
  vim.api.nvim_feedkeys("ga", "x", false)
  H.wait(function()
    return #vim.api.nvim_list_tabpages() == 2
  end, "the new file's diff")
  local created = vim.wo[vim.api.nvim_get_current_win()].winbar
  H.truthy(created:find("create lib/helper.py with the code block?", 1, true), created)
  vim.api.nvim_feedkeys("a", "x", false)
  H.wait(function()
    return vim.fn.filereadable("lib/helper.py") == 1
  end, "lib/helper.py to be written")
  H.eq({ "def helper():", "    return 1" }, vim.fn.readfile("lib/helper.py"), "the new file")
end)
