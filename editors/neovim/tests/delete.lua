-- :SeriDelete ID asks first (vim.fn.confirm): Cancel keeps the session, Delete deletes it
-- for good; the open session is refused while a task runs; :SeriDelete alone picks from
-- the project's sessions (vim.ui.select), and deleting the open one leaves the chat on a
-- new, empty session (seri/sessionChanged, reason `new`); an unknown id is refused.
-- test_neovim.py made two earlier sessions: SERI_TEST_FIRST (older), SERI_TEST_SECOND.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

---The ids of the project's sessions.
local function listed()
  return vim.tbl_map(function(session)
    return session.id
  end, H.call("seri.session.list").sessions)
end

H.run(function()
  local seri = require("seri")
  local first, second = vim.env.SERI_TEST_FIRST, vim.env.SERI_TEST_SECOND
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd("Seri")
  H.wait_chat({ "session " .. second, "second question" })

  -- The question names the session and what goes with it; Cancel deletes nothing.
  local asked, answer = {}, 2
  vim.fn.confirm = function(message, choices, default, kind)
    table.insert(asked, { message = message, choices = choices, default = default, kind = kind })
    return answer
  end
  vim.cmd("SeriDelete " .. first:sub(1, 8))
  H.wait_note("Not deleted.")
  H.eq(1, #asked, "one question")
  H.truthy(asked[1].message:find("Delete the seri session “first question” (2 messages)?", 1, true),
    "the question: " .. asked[1].message)
  H.truthy(not asked[1].message:find("A new session opens", 1, true), "not the open session")
  H.eq({ "&Delete\n&Cancel", 2, "Question" }, { asked[1].choices, asked[1].default, asked[1].kind },
    "Cancel is the default")
  H.truthy(vim.tbl_contains(listed(), first), "the session is kept")

  -- Delete: gone from the list; the open session stays open.
  answer = 1
  vim.cmd("SeriDelete " .. first)
  H.wait_note("Deleted the session “first question”.")
  H.eq({ second }, listed(), "the sessions left")
  H.truthy(H.chat_has("session " .. second), "the chat still shows the open session")

  -- The open session is refused while a task runs, in the editor's words.
  vim.cmd("SeriPrompt a slow question")
  H.wait(function()
    return H.chat_has("slow")
  end, "the task to stream")
  vim.cmd("SeriDelete " .. second)
  local refusal = H.wait_note("could not delete the session")
  H.truthy(refusal.msg:find("A task is running", 1, true), "the refusal: " .. refusal.msg)
  H.eq(vim.log.levels.ERROR, refusal.level, "an error")
  H.wait_chat("cancel it (:SeriCancel or <C-c>) first")
  H.eq("done", H.wait_turn(1).status, "the task runs to its end")
  H.truthy(vim.tbl_contains(listed(), second), "the open session is kept")

  -- :SeriDelete alone: pick the open session; a new, empty one takes its place.
  local offered
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    for _, item in ipairs(items) do
      if item.id == second then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  local changes = #H.events_named("SeriSessionChanged")
  vim.cmd("SeriDelete")
  H.wait_note("A new session is open.")
  H.eq(1, #offered, "the sessions offered")
  H.truthy(offered[1]:find("· open$"), "the open session is marked: " .. offered[1])
  H.truthy(asked[#asked].message:find("A new session opens in its place.", 1, true),
    "the question says so: " .. asked[#asked].message)
  H.wait(function()
    return #H.events_named("SeriSessionChanged") > changes
  end, "the session change")
  local change = H.events_named("SeriSessionChanged")[changes + 1].data
  H.eq("new", change.reason, "the change's reason")
  H.truthy(change.session.id ~= second, "another session")
  H.wait_chat({ "# seri: new session", "session " .. change.session.id })
  H.truthy(not H.chat_has("Earlier answer to: second question"), "the deleted conversation is gone")
  H.eq({ change.session.id }, listed(), "only the new session is left")

  -- An unknown id is refused with the server's words.
  vim.cmd("SeriDelete no-such-session")
  local unknown = H.wait_note("could not delete no-such-session")
  H.truthy(unknown.msg:find("Unknown session id", 1, true), unknown.msg)
  H.eq(vim.log.levels.ERROR, unknown.level, "an error")

  -- Session ids complete.
  H.eq({ change.session.id }, vim.fn.getcompletion("SeriDelete ", "cmdline"), "completion")
end)
