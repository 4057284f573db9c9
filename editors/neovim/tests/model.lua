-- :SeriModel: without a name, vim.ui.select offers the provider's models with their
-- context windows (the one in use marked); the pick is the session's model from its next
-- prompt, shown in the chat's winbar with the window read again; with a name it is set
-- at once, and a name the provider does not list is refused, saying so.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  vim.o.columns = 160
  seri.setup(H.options())
  H.wait_ready()
  vim.cmd("SeriPrompt first question")
  H.eq("done", H.wait_turn(1).status, "the first task")
  H.wait_chat("First answer.")
  H.wait(function()
    return chat.winbar():find("seri · test/model · ", 1, true)
      and chat.winbar():find("/128k)", 1, true)
  end, "the setting's model in the chat's bar: " .. chat.winbar())

  local offered, rows
  vim.ui.select = function(items, opts, on_choice)
    offered = items
    rows = vim.tbl_map(opts.format_item, items)
    on_choice(items[2], 2)
  end
  vim.cmd("SeriModel")
  H.wait(function()
    return chat.winbar():find("seri · other/model · ", 1, true)
      and chat.winbar():find("/4.1k)", 1, true)
  end, "the picked model and its window in the chat's bar: " .. chat.winbar())
  H.eq(
    { "test/model  128k context  (in use)", "other/model  4.1k context" },
    rows,
    "the provider's models with their windows"
  )
  H.eq("other/model", offered[2].id, "the entries are the server's")
  H.eq("other/model", require("seri.client").current().session.model, "the client's session")
  H.truthy(H.status({ model = true }):find("seri · other/model · ", 1, true), "status{model}")
  H.truthy(not H.status():find("other/model", 1, true), "the short status leaves it out")

  vim.cmd("SeriPrompt second question")
  H.eq("done", H.wait_turn(2).status, "the second task, on the other model")
  H.wait_chat("Second answer.")

  -- A name the provider does not list: refused, the model stays.
  vim.cmd("SeriModel no/such-model")
  H.wait(function()
    for _, note in ipairs(H.notes) do
      if note.msg:find("does not list the model 'no/such-model'", 1, true) then
        return true
      end
    end
  end, "the refusal")
  H.eq("other/model", require("seri.client").current().session.model, "the model stays")

  -- By name, back to the setting's.
  vim.cmd("SeriModel test/model")
  H.wait(function()
    return chat.winbar():find("seri · test/model · ", 1, true)
  end, "the setting's model again: " .. chat.winbar())
end)
