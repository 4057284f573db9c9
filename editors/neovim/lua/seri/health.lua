-- `:checkhealth seri`: Neovim, the server command and its version, and what the server
-- itself knows of its set-up (`seri.info`: the profile root and its database, the
-- provider, whether a key is set (never the key), the model's context window, the MCP servers: failed ones errors, ones awaiting consent warnings). The
-- project's running server answers; when none runs, a short-lived one is started for
-- the question, with no session opened.

local config = require("seri.config")

local M = {}

local health = vim.health
-- How long the server may take to start and answer (it may ask the provider for the
-- model's context window).
local INFO_TIMEOUT_MS = 20000

---@param cmd string[]
---@param args string[]
---@return vim.SystemCompleted
local function run(cmd, args)
  local argv = vim.list_extend(vim.deepcopy(cmd), args)
  local ok, proc = pcall(vim.system, argv, { text = true })
  if not ok then
    return { code = -1, signal = 0, stdout = "", stderr = tostring(proc) }
  end
  return proc:wait(15000)
end

---`cmd` without the options that open a session in the editor (`--continue`,
---`--resume ID`, `--resume=ID`): the health check's own server must not take a session
---the editor is about to open.
---@param cmd string[]
---@return string[]
function M.without_session_options(cmd)
  local kept, skip = {}, false
  for _, arg in ipairs(cmd) do
    if skip then
      skip = false
    elseif arg == "--resume" then
      skip = true
    elseif arg ~= "--continue" and not vim.startswith(arg, "--resume=") then
      table.insert(kept, arg)
    end
  end
  return kept
end

local function check_neovim()
  local v = vim.version()
  local version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. version)
  else
    health.error("Neovim " .. version .. ": seri needs 0.10 or later")
  end
end

local SOURCES = {
  cmd = "`cmd` in setup()",
  installed = "installed by :SeriInstall",
  PATH = "on PATH",
}

---@return string[]? cmd the server command, when it runs
local function check_server()
  local cmd, source = config.server_command()
  if vim.fn.executable(cmd[1]) ~= 1 then
    local advice = source == "cmd" and { "Fix `cmd` in require('seri').setup()" }
      or {
        ("Run :SeriInstall: it installs the server from the plugin's checkout into %s"):format(
          require("seri.install").dir()
        ),
        "or point `cmd` in require('seri').setup() at a seri-lsp, e.g. { '/path/to/seri-lsp' }",
      }
    health.error(("server command not found: %q (%s)"):format(cmd[1], SOURCES[source]), advice)
    return nil
  end
  local result = run(cmd, { "--version" })
  local said = (result.stdout or "") .. (result.code == 0 and "" or (result.stderr or ""))
  local version = vim.trim(said)
  if result.code ~= 0 or version == "" then
    local advice = { "Run it by hand: " .. table.concat(cmd, " ") .. " --version" }
    if source == "installed" then
      table.insert(advice, "Run :SeriInstall again to repair it")
    end
    health.error(("server command %q did not report its version: %s"):format(cmd[1], version), advice)
    return nil
  end
  health.ok(("server: %s (%s, %s)"):format(version, table.concat(cmd, " "), SOURCES[source]))
  return cmd
end

---Wait for `start(callback)` to call back; (nil, "timed out") when it does not in time.
---@param start fun(callback: fun(err: any, result: any))
---@return any result
---@return string? problem
local function wait_for(start)
  local done, err, result = false, nil, nil
  start(function(e, r)
    done, err, result = true, e, r
  end)
  if not vim.wait(INFO_TIMEOUT_MS, function()
    return done
  end, 20) then
    return nil, ("no answer within %d s"):format(INFO_TIMEOUT_MS / 1000)
  end
  if err then
    return nil, type(err) == "table" and (err.message or vim.inspect(err)) or tostring(err)
  end
  return result, nil
end

---True while one of `info`'s MCP servers is still starting.
---@param info table?
---@return boolean
local function mcp_starting(info)
  for _, server in ipairs(type(info) == "table" and info.mcpServers or {}) do
    if server.status == "starting" then
      return true
    end
  end
  return false
end

---`seri.info` asked by `ask`, again while an MCP server is still starting (a new
---server starts them in the background), until INFO_TIMEOUT_MS.
---@param ask fun(callback: fun(err: any, result: any))
---@return any info
---@return string? problem
local function settled(ask)
  local deadline = vim.uv.now() + INFO_TIMEOUT_MS
  local info, problem = wait_for(ask)
  while not problem and mcp_starting(info) and vim.uv.now() < deadline do
    vim.wait(200)
    info, problem = wait_for(ask)
  end
  return info, problem
end

---`seri.info` from a short-lived server for `root` that opens no session.
---@param cmd string[]
---@param root string
---@return table? info
---@return string? problem
local function ask_new_server(cmd, root)
  local stderr = {}
  local ok, rpc = pcall(vim.lsp.rpc.start, M.without_session_options(cmd), {
    server_request = function()
      return vim.NIL
    end,
    on_error = function(code)
      table.insert(stderr, "rpc error " .. tostring(code))
    end,
  }, { cwd = root })
  if not ok then
    return nil, tostring(rpc)
  end
  local settings = vim.tbl_extend("force", config.init_options(config.options.settings), {
    resumeOnOpen = false,
  })
  local uri = vim.uri_from_fname(root)
  local _, problem = wait_for(function(callback)
    rpc.request("initialize", {
      processId = vim.fn.getpid(),
      rootUri = uri,
      workspaceFolders = { { uri = uri, name = vim.fs.basename(root) } },
      capabilities = vim.empty_dict(),
      initializationOptions = settings,
    }, callback)
  end)
  local info
  if not problem then
    rpc.notify("initialized", vim.empty_dict())
    info, problem = settled(function(callback)
      rpc.request(
        "workspace/executeCommand",
        { command = "seri.info", arguments = { vim.empty_dict() } },
        callback
      )
    end)
  end
  wait_for(function(callback)
    rpc.request("shutdown", nil, callback)
  end)
  rpc.notify("exit", nil)
  return info, problem
end

---`seri.info` from the project's running server, else from one started for the question.
---@param cmd string[]
---@return table? info
---@return string? problem
---@return string root
local function ask_server(cmd)
  local client = require("seri.client")
  local root = client.root_for(0)
  local project = client.projects[root]
  if project and client.client(project) then
    local info, problem = settled(function(callback)
      client.execute(project, "seri.info", {}, callback)
    end)
    return info, problem, root
  end
  local info, problem = ask_new_server(cmd, root)
  return info, problem, root
end

---@param info table
local function report_profile(info)
  health.ok("profile root: " .. info.profileRoot)
  if vim.uv.fs_stat(info.databasePath) then
    health.ok("database: " .. info.databasePath)
  else
    health.info(("database: %s does not exist yet; the server creates it"):format(info.databasePath))
  end
end

---@param info table
local function report_provider(info)
  local provider = info.provider
  health.ok("provider: " .. provider.baseUrl)
  health.ok("model: " .. provider.model)
  -- Settings that would send prompts elsewhere: the server refuses every prompt meanwhile.
  for _, problem in ipairs(type(provider.problems) == "table" and provider.problems or {}) do
    health.error(problem, {
      "Correct it where the message says (setup()'s `settings`, config.json or the variable)",
    })
  end
  if provider.apiKeySet then
    health.ok(("API key: set (%s)"):format(provider.apiKeySource or "settings"))
  else
    health.warn("API key: not set", {
      "Set provider.apiKey in settings, or $SERI_API_KEY / $OPENROUTER_API_KEY",
      "(a local OpenAI-compatible server may not need one)",
    })
  end
  local window = info.contextWindow
  local where = {
    setting = "the provider.contextWindow setting",
    provider = "the provider's model list",
    default = "the default: the provider's model list did not give one",
  }
  health.ok(
    ("context window: %d tokens (%s)"):format(window.tokens, where[window.source] or window.source)
  )
end

---The MCP servers: failed ones are errors, ones awaiting consent warnings.
---@param info table
local function report_mcp(info)
  local servers = type(info.mcpServers) == "table" and info.mcpServers or {}
  if #servers == 0 then
    health.info("MCP servers: none configured")
    return
  end
  for _, server in ipairs(servers) do
    local what = ("MCP server %s (%s, %s, %s): %s"):format(
      server.name,
      server.origin,
      server.configuredIn,
      server.transport,
      server.status
    )
    if server.status == "failed" then
      health.error(what .. ": " .. (server.reason or "no reason given"), {
        "Fix its entry in " .. server.configuredIn .. ", then restart it from :SeriMcp (r)",
      })
    elseif server.status == "awaiting consent" then
      health.warn(what .. (server.reason and (": " .. server.reason) or ""), {
        "A workspace's .mcp.json servers start only once you agree to them",
      })
    elseif server.status == "ready" then
      health.ok(("%s, %d tool%s"):format(what, server.tools, server.tools == 1 and "" or "s"))
    else
      health.info(what .. (server.reason and (": " .. server.reason) or ""))
    end
  end
end

local function check_running()
  local client = require("seri.client")
  local count = 0
  for root, project in pairs(client.projects) do
    if client.client(project) then
      count = count + 1
      local session = project.session and ("session " .. project.session.id) or "no session open"
      health.info(("server running for %s (%s)"):format(root, session))
    end
  end
  if count == 0 then
    health.info("no seri server is running in this Neovim")
  end
end

function M.check()
  health.start("seri: Neovim")
  check_neovim()
  health.start("seri: server")
  local cmd = check_server()
  check_running()
  if not cmd then
    return
  end
  local info, problem, root = ask_server(cmd)
  health.start("seri: set-up (as the server for " .. root .. " sees it)")
  if not info then
    health.error("the server did not answer seri.info: " .. (problem or "no answer"), {
      "Run it by hand: " .. table.concat(cmd, " ") .. " --version",
      "See the server's log: :LspLog",
    })
    return
  end
  health.ok(("server version: %s, project: %s"):format(info.version, info.project))
  report_profile(info)
  report_provider(info)
  report_mcp(info)
  -- Notes on the set-up the server makes (a provider.keepTokens the window cuts).
  for _, note in ipairs(info.notes or {}) do
    health.warn(note)
  end
end

return M
