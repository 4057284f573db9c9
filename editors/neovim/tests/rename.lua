-- :SeriRename TITLE names the open session: the chat's header follows seri/sessionChanged
-- (reason `renamed`) and the rest of the chat stays as it was (earlier pages loaded, the
-- cursor where it was); without a title,
-- vim.ui.input offers the current one to edit; an empty answer keeps the title; `/rename`
-- typed as a prompt does the same, and completes among the slash commands.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

---The reasons of the session changes so far.
local function reasons()
  return vim.tbl_map(function(e)
    return e.data.reason
  end, H.events_named("SeriSessionChanged"))
end

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  -- One message a page, so that a reload would show less than the chat shows.
  seri.setup(vim.tbl_deep_extend("force", H.options(), { chat = { page_size = 1 } }))
  H.wait_ready()
  vim.cmd("SeriPrompt first question")
  H.eq("done", H.wait_turn(1).status, "the first task")
  H.wait_chat({ "# seri: first question", "First answer." })
  local id = require("seri.client").current().session.id
  vim.cmd("SeriResume " .. id) -- read again: the newest page
  local win = vim.fn.bufwinid(chat.state.buf)
  vim.api.nvim_set_current_win(win)
  H.wait(function()
    return H.chat_line("load earlier messages")
  end, "the newest page only")
  vim.api.nvim_win_set_cursor(win, { H.chat_line("load earlier messages"), 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  H.wait(function()
    return not H.chat_has("load earlier messages") and H.chat_line("## You")
  end, "the earlier page")
  vim.api.nvim_win_set_cursor(win, { H.chat_line("First answer."), 2 })
  local changes = #reasons()

  vim.cmd("SeriRename Parser work")
  H.wait_chat("# seri: Parser work")
  H.eq("renamed", reasons()[#reasons()], "the session change says why")
  H.eq(changes + 1, #reasons(), "one session change")
  H.eq(id, chat.state.session.id, "the same session")
  H.truthy(H.chat_line("## You"), "the earlier page stays")
  H.eq({ H.chat_line("First answer."), 2 }, vim.api.nvim_win_get_cursor(win), "the cursor stays")
  H.eq("Parser work", require("seri.client").current().session.title, "the client's session")

  -- No title: edit the current one.
  local offered
  vim.ui.input = function(opts, on_confirm)
    offered = opts.default
    on_confirm("Parser work, part two")
  end
  vim.cmd("SeriRename")
  H.wait_chat("# seri: Parser work, part two")
  H.eq("Parser work", offered, "the current title offered")

  -- An empty answer keeps the title.
  vim.ui.input = function(_, on_confirm)
    on_confirm("  ")
  end
  vim.cmd("SeriRename")
  H.wait(function()
    return H.chat_has("The title is empty; the session keeps its title.")
  end, "the empty title refused")
  H.truthy(H.chat_has("# seri: Parser work, part two"), "the title stays")

  -- /rename as a prompt, completed among the slash commands.
  H.truthy(
    vim.tbl_contains(vim.fn.getcompletion("SeriPrompt /ren", "cmdline"), "/rename "),
    "/rename completes"
  )
  local _, items =
    require("seri.attach").complete("/ren", require("seri.client").current().root, true)
  local slash = vim.tbl_map(function(item)
    return item.word
  end, items)
  H.truthy(vim.tbl_contains(slash, "/rename"), "the chat input completes /rename")
  vim.cmd("SeriPrompt /rename Named by slash")
  H.wait_chat("# seri: Named by slash")
  H.truthy(H.chat_has("First answer."), "the conversation stays")
end)
