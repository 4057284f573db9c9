-- :SeriSearch fills the quickfix list with one entry per matching message (title, who
-- wrote it, the snippet with its «» marks), titled with the query; <CR> on an entry in
-- the quickfix window resumes its session and puts the chat's cursor on the message,
-- loading earlier pages when it is not in the newest; :cnext opens the next hit the
-- same way. :SeriSearch! searches every project (the hit of another project opens in a
-- server of that project); a search with no hits says so and leaves the list alone.
-- test_neovim.py seeded a session in another project (SERI_TEST_OTHER) and scripts the
-- provider's replies.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

---The quickfix window of the current tab page.
local function qf_window()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.fn.getwininfo(win)[1].quickfix == 1 then
      return win
    end
  end
  return nil
end

---The index (1-based) of the first quickfix entry whose text holds `text`.
local function entry(text)
  for i, item in ipairs(vim.fn.getqflist()) do
    if item.text:find(text, 1, true) then
      return i, item
    end
  end
  error("no quickfix entry holds " .. text, 2)
end

---Whether the chat's cursor is on the stored message `id`.
local function cursor_on(id)
  local chat = require("seri.chat")
  local win = vim.fn.bufwinid(chat.state.buf)
  return win ~= -1 and vim.api.nvim_get_current_win() == win and chat.message_under_cursor() == id
end

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  -- Two messages a page: the first answer of a session of six is on an earlier page.
  seri.setup(vim.tbl_deep_extend("force", H.options(), { chat = { page_size = 2 } }))
  H.wait_ready()
  vim.cmd("edit notes.txt")
  local editing = vim.api.nvim_get_current_win()
  local file_buf = vim.api.nvim_get_current_buf()
  for n, prompt in ipairs({ "where is the parser", "second question", "third question" }) do
    vim.cmd("SeriPrompt " .. prompt)
    H.eq("done", H.wait_turn(n).status, "task " .. n)
  end
  local first = require("seri.client").current().session.id
  vim.cmd("SeriNew")
  H.wait(function()
    return require("seri.client").current().session == nil
      or require("seri.client").current().session.id ~= first
  end, "the new session")
  vim.cmd("SeriPrompt tell me about the parser again")
  H.wait(function()
    return H.chat_has("Still in src/parse.py")
  end, "the second session's answer")
  local second = require("seri.client").current().session.id
  H.truthy(second ~= first, "two sessions")
  H.eq(editing, vim.api.nvim_get_current_win(), "the cursor stays in the file's window")

  -- This project's sessions only: four hits, best first, titled with the query.
  vim.cmd("SeriSearch parser")
  H.wait(qf_window, "the quickfix window")
  local list = vim.fn.getqflist({ title = 0, items = 0 })
  H.eq(4, #list.items, "hits of this project: " .. vim.inspect(list.items))
  H.truthy(list.title:find('"parser"', 1, true), "the title names the query: " .. list.title)
  local i_answer, answer = entry("The «parser» lives in src/parse.py.")
  H.eq("where is the parser │ seri: The «parser» lives in src/parse.py.", answer.text, "its text")
  H.truthy(answer.module:find(first:sub(1, 8), 1, true), "the session's id in place of a file")
  H.eq(first, answer.user_data.sessionId, "the hit rides along")
  local _, prompt = entry("│ you: where is the «parser»")
  H.eq(first, prompt.user_data.sessionId, "the prompt's hit")
  H.truthy(not H.chat_has("The parser lives in"), "not shown before the hit is opened")

  -- <CR> in the quickfix window: the first session, the cursor on the answer (two pages
  -- back), the window it jumped into showing its file again.
  local qf = qf_window()
  vim.api.nvim_set_current_win(qf)
  vim.api.nvim_win_set_cursor(qf, { i_answer, 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  H.wait(function()
    return cursor_on(answer.user_data.messageId)
  end, "the chat's cursor on the answer")
  H.eq(first, chat.state.session.id, "the hit's session is open")
  local line, col = vim.api.nvim_get_current_line(), vim.api.nvim_win_get_cursor(0)[2]
  H.eq("parser lives in", line:sub(col + 1, col + 15), "the cursor on the matched word")
  H.eq(file_buf, vim.api.nvim_win_get_buf(editing), "the window it jumped into is as it was")
  local stand_in = vim.fn.bufnr(require("seri.search").name(first, answer.user_data.messageId))
  H.truthy(not vim.api.nvim_buf_is_loaded(stand_in), "the stand-in buffer is unloaded")

  -- :cnext (and the rest of quickfix) opens hits the same way: here the second session's.
  local i_again, again = entry("tell me about the parser again │ seri:")
  vim.cmd("cc " .. i_again)
  H.wait(function()
    return cursor_on(again.user_data.messageId)
  end, "the chat's cursor on the second session's answer")
  H.eq(second, chat.state.session.id, "the second session is open")
  H.eq(1, #H.clients(), "one server so far")

  -- Every project's sessions: the other project's hit opens in a server of its own.
  vim.cmd("SeriSearch! parser")
  H.wait(function()
    return vim.fn.getqflist({ title = 0 }).title:find("all projects", 1, true)
  end, "the hits of every project")
  H.eq(6, #vim.fn.getqflist(), "hits of every project")
  local other_title = vim.fn.getqflist({ title = 0 }).title
  H.truthy(other_title:find("all projects", 1, true), "the title says so: " .. other_title)
  local other = vim.uv.fs_realpath(vim.env.SERI_TEST_OTHER)
  local i_other, other_hit = entry("│ seri: Earlier answer to: «parser» in the other project")
  H.truthy(other_hit.module:find(vim.fs.basename(other), 1, true), "the project's folder named")
  vim.cmd("cc " .. i_other)
  H.wait(function()
    return cursor_on(other_hit.user_data.messageId)
  end, "the chat's cursor on the other project's answer")
  H.eq(other, chat.state.root, "the chat shows the other project")
  H.eq(2, #H.clients(), "a server for the other project")
  H.truthy(H.chat_has("Earlier answer to: parser in the other project"), "its answer")

  -- No hits: said, and the list stays as it was.
  vim.cmd("SeriSearch xyzzy plugh")
  H.wait_note("Nothing in this project's sessions matches \"xyzzy plugh\"")
  H.eq(other_title, vim.fn.getqflist({ title = 0 }).title, "the quickfix list is unchanged")
end)
