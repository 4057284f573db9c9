-- :checkhealth seri, with a working server (SERI_TEST_HEALTH=working) and with a server
-- command that does not exist (SERI_TEST_HEALTH=missing).
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
    -- `sessions` run goes without it (the server refuses it there).
    local options = H.options()
    table.insert(options.cmd, "--continue")
    require("seri").setup(options)
    H.wait_ready()
    local strip = require("seri.health").without_session_options
    H.eq({ "seri-lsp", "--profile-root", "p" },
      strip({ "seri-lsp", "--resume", "abc123", "--profile-root", "p", "--continue" }),
      "--resume and its value, and --continue, left out")
    H.eq({ "seri-lsp" }, strip({ "seri-lsp", "--resume=abc123" }), "--resume=ID left out")
    local report = checkhealth()
    local v = vim.version()
    has(report, ("OK Neovim %d.%d.%d"):format(v.major, v.minor, v.patch))
    has(report, "OK server: seri-lsp ")
    local profile = vim.uv.fs_realpath(H.env.profile)
    has(report, "OK profile root: " .. profile .. " (--profile-root in cmd)")
    has(report, "OK database opens: ")
    has(report, "OK provider: " .. H.env.base_url .. " (settings)")
    has(report, "OK model: " .. H.env.model .. " (settings)")
    has(report, "OK API key: set (settings)")
    has(report, "server running for " .. vim.uv.fs_realpath(H.env.workspace))
    H.truthy(not report:find("test-key-not-a-secret", 1, true), "the report shows the key")
    H.truthy(not report:find("ERROR", 1, true), "the report has errors:\n" .. report)
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
    has(report, "from a clone of seri-lsp: `pipx install /path/to/seri-lsp`, or `pip install .`")
    H.truthy(not report:find("pip install seri-lsp", 1, true), "advice to install from PyPI")
    has(report, "WARNING API key: not set")
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
