-- Resume on open shows the earlier conversation; :SeriNew; :SeriResume with an id, with a
-- unique prefix, with completion, and without an id (picked through vim.ui.select).
-- test_neovim.py made two earlier sessions: SERI_TEST_FIRST (older), SERI_TEST_SECOND.
-- Run as Neovim's init file (`nvim -u resume.lua`): setup() happens during start-up, as
-- in a user's config, and the scenario runs after VimEnter.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

-- One message a page: a server that pages history shows the newest message first.
require("seri").setup(vim.tbl_extend("force", H.options(), { chat = { page_size = 1 } }))

---History pages: the server pages, so the chat shows the newest message and a "load
---earlier messages" line, and <CR> on it brings the page before, until the first
---message is shown and the line goes.
local function load_all()
  local chat_win = vim.fn.bufwinid(require("seri.chat").state.buf)
  H.truthy(H.chat_line("load earlier messages"), "the newest page first, then a load line")
  for _ = 1, 5 do
    local line = H.chat_line("load earlier messages")
    if not line then
      break
    end
    vim.api.nvim_set_current_win(chat_win)
    vim.api.nvim_win_set_cursor(chat_win, { line, 0 })
    local before = H.chat()
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
    H.wait(function()
      return H.chat() ~= before
    end, "the earlier page")
  end
  H.truthy(not H.chat_has("load earlier messages"), "every page loaded")
end

H.run(function()
  local seri = require("seri")
  local first, second = vim.env.SERI_TEST_FIRST, vim.env.SERI_TEST_SECOND

  -- The server started when Neovim opened and resumes the latest session; the chat,
  -- opened at once, shows it.
  vim.cmd("Seri")
  H.wait_ready()
  H.eq(1, #H.clients(), "seri clients once Neovim has started")
  H.wait_chat({ "session " .. second, "continued", "Earlier answer to: second question" })
  load_all()
  local you, answer = H.chat_line("## You"), H.chat_line("Earlier answer to: second question")
  H.truthy(you and answer and you < answer, "the prompt above its answer")
  H.truthy(H.chat_line("second question") < you, "the header names the session by its title")
  H.truthy(not H.chat_has("first question"), "only the open session is shown")
  local continued = H.events_named("SeriSessionChanged")
  H.eq("continued", continued[1].data.reason, "the start-up session change")
  H.eq(second, continued[1].data.session.id, "the session resumed on open")
  H.wait(function()
    return H.status():find("%d+%%")
  end, "the status to show the resumed session's context use")

  -- :SeriNew opens an empty session.
  vim.cmd("SeriNew")
  H.wait(function()
    return #H.events_named("SeriSessionChanged") == 2
  end, ":SeriNew's session change")
  local fresh = H.events_named("SeriSessionChanged")[2].data
  H.eq("new", fresh.reason, ":SeriNew reason")
  H.wait_chat({ "# seri: new session", "session " .. fresh.session.id })
  H.truthy(not H.chat_has("second question"), "the new session's chat is empty")
  -- Its first prompt names it; the header follows.
  vim.cmd("SeriPrompt name this session")
  H.eq("done", H.wait_turn(1).status, "the new session's first task")
  H.wait_chat({ "# seri: name this session", "Named." })

  -- :SeriResume ID.
  vim.cmd("SeriResume " .. first)
  H.wait_chat({
    "session " .. first,
    "resumed",
    "first question",
    "Earlier answer to: first question",
  })
  H.truthy(not H.chat_has("second question"), "the resumed chat shows only its session")

  -- :SeriResume with a unique prefix of the id.
  vim.cmd("SeriResume " .. second:sub(1, 8))
  H.wait_chat({ "session " .. second, "second question" })

  -- Session ids complete.
  local completions = vim.fn.getcompletion("SeriResume ", "cmdline")
  table.sort(completions)
  local expected = { first, second, fresh.session.id }
  table.sort(expected)
  H.eq(expected, completions, "completion of :SeriResume")
  local by_prefix = vim.fn.getcompletion("SeriResume " .. first:sub(1, 10), "cmdline")
  H.eq({ first }, by_prefix, "prefix completion")

  -- :SeriResume alone: pick from the project's sessions (title, date, messages).
  local shown
  vim.ui.select = function(items, opts, on_choice)
    shown = vim.tbl_map(opts.format_item, items)
    H.eq("seri_session", opts.kind, "the picker's kind")
    for _, item in ipairs(items) do
      if item.id == first then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  vim.cmd("SeriResume")
  H.wait_chat({ "session " .. first, "first question" })
  H.eq(3, #shown, "sessions offered")
  local first_entry = vim.tbl_filter(function(text)
    return text:find("^first question")
  end, shown)[1]
  H.truthy(first_entry and first_entry:find("· %d%d%d%d%-%d%d%-%d%d %d%d:%d%d · 2 messages$"),
    "the picker entry: " .. tostring(first_entry))
  H.truthy(vim.tbl_filter(function(text)
    return text:find("· open$")
  end, shown)[1], "the open session is marked")
  -- The server's times are UTC; the picker shows them in local time (TZ is IST-5:30 here).
  local late = { id = "x", title = "late", updatedAt = "2025-01-31T23:45:10.123456Z" }
  H.eq("late · 2025-02-01 05:15 · 0 messages", seri.format_session(late), "a time in local time")

  -- An unknown id is refused with the server's words; the chat stays as it was.
  vim.cmd("SeriResume no-such-session")
  H.wait(function()
    return vim.tbl_filter(function(note)
      local refused = note.msg:find("could not resume no%-such%-session")
      return note.level == vim.log.levels.ERROR and refused
    end, H.notes)[1]
  end, "the refusal of an unknown id")
  H.truthy(H.chat_has("session " .. first), "the chat still shows the open session")
end)
