-- No hit-enter prompt for routine notices: a Neovim with a screen (notices_child.lua in
-- a terminal, 80 columns, 'cmdheight' 1) goes through failed tasks and long and short
-- answers with the chat closed and open; its screen never asks to press Enter, and the
-- notices it showed fit on one line; the failures are in its chat, the one said while
-- the chat was closed too. The provider is scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local marker = vim.fn.tempname()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_set_current_buf(buf)
  local child = H.env.plugin .. "/tests/notices_child.lua"
  local job = vim.fn.jobstart({ vim.v.progpath, "--clean", "-u", child }, {
    term = true,
    env = { SERI_TEST_MARKER = marker },
  })
  vim.wait(40000, function()
    return vim.uv.fs_stat(marker) ~= nil
  end, 100)
  vim.wait(500) -- the last redraw
  local screen = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  vim.fn.jobstop(job)
  H.truthy(not screen:find("Press ENTER", 1, true), "a hit-enter prompt:\n" .. screen)
  H.truthy(vim.uv.fs_stat(marker), "the child did not finish:\n" .. screen)
  H.eq({ "done" }, vim.fn.readfile(marker), "the child's steps")
  H.truthy(screen:find("seri: turn budget 7 for this session", 1, true), "the last notice:\n" .. screen)
end)
