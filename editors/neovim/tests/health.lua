-- :checkhealth seri, with a working server (SERI_TEST_HEALTH=working: asked through
-- seri.info, by a server started for the question and by the running one) and with a
-- server command that does not exist (SERI_TEST_HEALTH=missing).
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

---@return string the health report's text
local function checkhealth()
  vim.cmd("checkhealth seri")
  return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
end

---@param report string
---@param text string
local function has(report, text)
  H.truthy(report:find(text, 1, true), ("the report lacks %q:\n%s"):format(text, report))
end

H.run(function()
  vim.cmd.cd(H.env.workspace)
  if vim.env.SERI_TEST_HEALTH == "working" then
    -- `--continue` in cmd opens the latest session in the editor; the health check's own
    -- server goes without it (it must not take the session the editor opens).
    local options = H.options()
    table.insert(options.cmd, "--continue")
    options.autostart = false
    require("seri").setup(options)
    local strip = require("seri.health").without_session_options
    H.eq({ "seri-lsp", "--profile-root", "p" },
      strip({ "seri-lsp", "--resume", "abc123", "--profile-root", "p", "--continue" }),
      "--resume and its value, and --continue, left out")
    H.eq({ "seri-lsp" }, strip({ "seri-lsp", "--resume=abc123" }), "--resume=ID left out")
    local profile = vim.uv.fs_realpath(H.env.profile) or H.env.profile
    local workspace = vim.uv.fs_realpath(H.env.workspace)
    ---@param report string
    local function says_what_the_server_knows(report)
      local v = vim.version()
      has(report, ("OK Neovim %d.%d.%d"):format(v.major, v.minor, v.patch))
      has(report, "OK server: seri-lsp ")
      has(report, ", `cmd` in setup())")
      has(report, "set-up (as the server for " .. workspace .. " sees it)")
      has(report, "OK profile root: " .. profile)
      has(report, "OK provider: " .. H.env.base_url)
      has(report, "OK model: " .. H.env.model)
      has(report, "OK API key: set (provider.apiKey)")
      has(report, "OK context window: 128000 tokens (the provider's model list)")
      H.truthy(not report:find("test-key-not-a-secret", 1, true), "the report shows the key")
      H.truthy(not report:find("ERROR", 1, true), "the report has errors:\n" .. report)
    end

    -- No server runs: one is started for the question, and gone after it.
    local report = checkhealth()
    says_what_the_server_knows(report)
    has(report, "no seri server is running in this Neovim")
    H.eq(0, #H.clients(), "seri clients after the health check")
    H.truthy(not vim.uv.fs_stat(H.env.profile .. "/locks")
      or #vim.fn.glob(H.env.profile .. "/locks/*.holder", false, true) == 0,
      "the health check's server opened no session")

    -- The project's server runs: it answers.
    require("seri").start()
    H.wait_ready()
    report = checkhealth()
    says_what_the_server_knows(report)
    has(report, "OK database: " .. profile .. "/seri.db")
    has(report, "server running for " .. workspace)

    -- A provider setting that would send prompts elsewhere is an error, in the server's words.
    for _, client in ipairs(H.clients()) do
      vim.lsp.stop_client(client.id)
    end
    H.wait(function()
      return #H.clients() == 0
    end, "the project's server to stop")
    local wrong = H.options({ provider = { baseUrl = "127.0.0.1:47150/v1" } })
    wrong.autostart = false
    require("seri").setup(wrong)
    report = checkhealth()
    has(report, "ERROR Setting provider.baseUrl (in the initialization options) is "
      .. "'127.0.0.1:47150/v1'")
    has(report, "No prompt is sent until it is fixed")
  else
    require("seri").setup({ cmd = { H.env.workspace .. "/no-such-seri-lsp" } })
    vim.wait(300)
    H.eq(0, #H.clients(), "seri clients without a server")
    H.truthy(vim.tbl_filter(function(note)
      return note.level == vim.log.levels.ERROR and note.msg:find("was not found", 1, true)
    end, H.notes)[1], "a notification that the server is missing")
    local report = checkhealth()
    has(report, "ERROR server command not found")
    has(report, "no-such-seri-lsp")
    has(report, "Fix `cmd` in require('seri').setup()")
    -- Without `cmd` and with nothing installed, the way to install it.
    require("seri.config").set({})
    report = checkhealth()
    has(report, "ERROR server command not found: \"seri-lsp\" (on PATH)")
    has(report, "Run :SeriInstall: it installs the server from the plugin's checkout into ")
    -- The manual is there without a server.
    local topics = { "seri", ":SeriResume", "seri-lazy", "seri.status()", "SeriTurnEnded" }
    for _, topic in ipairs(topics) do
      vim.cmd.help(topic)
      H.eq("seri.txt", vim.fs.basename(vim.api.nvim_buf_get_name(0)), ":help " .. topic)
      vim.cmd.helpclose()
    end
    -- The commands say what is wrong (an error message, no Lua traceback).
    for _, command in ipairs({ "SeriPrompt hello", "Seri" }) do
      local ok, err = pcall(vim.cmd, command)
      H.eq(false, ok, command .. " without a server")
      H.truthy(tostring(err):find("was not found", 1, true), command .. ": " .. tostring(err))
    end
  end
end)
