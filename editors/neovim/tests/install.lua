-- The install a user does: with no seri-lsp on PATH, the build step of the lazy.nvim spec
-- (`require("seri.install").build()`) makes the private environment under
-- stdpath("data")/seri and installs the server into it from the plugin's own checkout;
-- setup() without `cmd` then starts that server, and a prompt gets its reply in the chat.
-- pip fetches the dependencies from the package index (its cache makes it quick).
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local install = require("seri.install")
  H.eq(0, vim.fn.executable("seri-lsp"), "seri-lsp on PATH")
  H.eq(nil, install.command(), "a server installed before the build")

  local summary = install.build()
  local venv = vim.fn.stdpath("data") .. "/seri/venv"
  H.truthy(summary:find("seri-lsp 0.1.0 installed in " .. venv, 1, true), summary)
  H.eq({ venv .. "/bin/seri-lsp" }, install.command(), "the installed server")

  local options = H.options()
  options.cmd = nil
  options.settings.profileRoot = H.env.profile
  require("seri").setup(options)
  H.wait_ready()
  H.eq(venv .. "/bin/seri-lsp", H.clients()[1].config.cmd[1], "the server started")

  vim.cmd("SeriPrompt Are you installed?")
  H.wait_chat({ "Are you installed?", "Installed and answering." }, 30000)
end)
