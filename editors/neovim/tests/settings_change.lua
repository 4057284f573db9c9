-- setup() called again with other settings: the running server gets them
-- (workspace/didChangeConfiguration) and the next prompt goes to the new model, with no
-- restart.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local client = require("seri.client")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options())
  H.wait_ready()
  local id = client.current().client_id
  vim.cmd("SeriPrompt first question")
  H.eq("done", H.wait_turn(1).status, "the first task")
  H.wait_chat("First answer.")

  seri.setup(H.options({ provider = { model = "other/model" } }))
  vim.cmd("SeriPrompt second question")
  H.eq("done", H.wait_turn(2).status, "the second task, on the model the settings name now")
  H.wait_chat("Second answer.")
  H.eq(id, client.current().client_id, "the same server, not restarted")
end)
