-- A subfolder with a root marker of its own (`src/AGENTS.md`) inside a project whose
-- server runs (`.git` at the top): its files belong to that project, so opening one and
-- running a command from it starts no second server. test_neovim.py makes the folders.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local client = require("seri.client")
  local workspace = vim.uv.fs_realpath(H.env.workspace)
  vim.cmd.cd(workspace)
  require("seri").setup(H.options())
  H.wait_ready()
  local project = H.truthy(client.current(), "the project's server")
  H.eq(workspace, project.root, "the project's root")

  vim.cmd.edit(workspace .. "/src/app.py")
  local app = vim.api.nvim_get_current_buf()
  H.eq(workspace, client.root_for(app), "the root of src/app.py")
  H.wait(function()
    return vim.lsp.buf_is_attached(app, project.client_id)
  end, "src/app.py to be attached to the project's server")

  -- A command run from the subfolder's file uses the running server.
  vim.cmd("Seri")
  vim.wait(300)
  H.eq(1, #H.clients(), "seri clients after :Seri from src/app.py")
  H.eq(1, #vim.lsp.get_clients({ bufnr = app, name = "seri" }), "servers attached to app.py")
end)
