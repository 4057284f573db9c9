-- `:checkhealth seri`: Neovim, the server command and its version, the profile
-- root and its database, the provider (whether a key is set, never the key).

local config = require("seri.config")

local M = {}

local health = vim.health

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

---@param cmd string[]
---@return string?
local function flag_value(cmd, flag)
  for i, arg in ipairs(cmd) do
    if arg == flag then
      return cmd[i + 1]
    end
    local value = arg:match("^" .. vim.pesc(flag) .. "=(.*)$")
    if value then
      return value
    end
  end
  return nil
end

---`cmd` without the options that open a session in the editor (`--continue`,
---`--resume ID`, `--resume=ID`): the server refuses them with its other commands, such
---as `sessions`.
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

---@param value any
---@return boolean
local function text(value)
  return type(value) == "string" and vim.trim(value) ~= ""
end

---The profile root the server will use, and where that comes from (the server's order:
---`--profile-root`, the `profileRoot` setting, `$SERI_PROFILE_ROOT`, the user data folder).
---@param options seri.Options
---@return string root
---@return string source
function M.profile_root(options)
  local candidates = {
    { flag_value(options.cmd, "--profile-root"), "--profile-root in cmd" },
    { options.settings.profileRoot, "settings.profileRoot" },
    { vim.env.SERI_PROFILE_ROOT, "$SERI_PROFILE_ROOT" },
  }
  for _, candidate in ipairs(candidates) do
    if text(candidate[1]) then
      local path = vim.fs.normalize(vim.fn.fnamemodify(vim.fn.expand(candidate[1]), ":p"))
      return (path:gsub("(.)/$", "%1")), candidate[2]
    end
  end
  local sysname = vim.uv.os_uname().sysname
  local home = vim.uv.os_homedir() or "~"
  if sysname == "Darwin" then
    return home .. "/Library/Application Support/seri", "default"
  elseif sysname:match("Windows") then
    return vim.fs.normalize((vim.env.LOCALAPPDATA or home) .. "/seri/seri"), "default"
  end
  local data = text(vim.env.XDG_DATA_HOME) and vim.env.XDG_DATA_HOME or home .. "/.local/share"
  return data .. "/seri", "default"
end

---@param root string
---@return table? settings from config.json
---@return string? problem
local function read_profile_config(root)
  local path = root .. "/config.json"
  if not vim.uv.fs_stat(path) then
    return nil, nil
  end
  local ok, lines = pcall(vim.fn.readfile, path)
  if not ok then
    return nil, ("cannot read %s"):format(path)
  end
  local json = table.concat(lines, "\n")
  local decoded_ok, decoded = pcall(vim.json.decode, json, { luanil = { object = true } })
  if not decoded_ok or type(decoded) ~= "table" then
    return nil, ("%s is not a JSON object; the server ignores it"):format(path)
  end
  return decoded, nil
end

---The first value set, with where it came from.
---@param sources {[1]: any, [2]: string}[]
---@return any value
---@return string? source
local function first(sources)
  for _, source in ipairs(sources) do
    if text(source[1]) then
      return source[1], source[2]
    end
  end
  return nil, nil
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

---@param options seri.Options
---@return boolean found
local function check_server(options)
  local cmd = options.cmd
  local exe = vim.fn.exepath(cmd[1])
  if vim.fn.executable(cmd[1]) ~= 1 then
    health.error(("server command not found: %q"):format(cmd[1]), {
      "Install the server from a clone of seri-lsp: `pipx install /path/to/seri-lsp`, "
        .. "or `pip install .` in the clone",
      "or point `cmd` in require('seri').setup() at it, e.g. { '/path/to/.venv/bin/seri-lsp' }",
    })
    return false
  end
  local result = run(cmd, { "--version" })
  local said = (result.stdout or "") .. (result.code == 0 and "" or (result.stderr or ""))
  local version = vim.trim(said)
  if result.code == 0 and version ~= "" then
    health.ok(("server: %s (%s)"):format(version, table.concat(cmd, " ")))
  else
    health.error(("server command %q did not report its version: %s"):format(exe, version), {
      "Run it by hand: " .. table.concat(cmd, " ") .. " --version",
    })
    return false
  end
  return true
end

---@param options seri.Options
---@param found boolean
local function check_profile(options, found)
  local root, source = M.profile_root(options)
  local stat = vim.uv.fs_stat(root)
  if stat and stat.type ~= "directory" then
    health.error(("profile root %s (%s) is not a folder"):format(root, source))
    return
  end
  health.ok(("profile root: %s (%s)"):format(root, source))
  local db = root .. "/seri.db"
  if not vim.uv.fs_stat(db) then
    health.info(("database: %s does not exist yet; the server creates it"):format(db))
    return
  end
  if not found then
    return
  end
  local cmd = M.without_session_options(options.cmd)
  local result = run(cmd, { "sessions", "--all", "--json", "--profile-root", root })
  local ok, sessions = pcall(vim.json.decode, result.stdout or "")
  if result.code == 0 and ok and type(sessions) == "table" then
    health.ok(("database opens: %s (%d sessions)"):format(db, #sessions))
  else
    health.error(("database %s does not open: %s"):format(db, vim.trim(result.stderr or "")))
  end
end

---@param options seri.Options
local function check_provider(options)
  local root = M.profile_root(options)
  local profile, problem = read_profile_config(root)
  if problem then
    health.warn(problem)
  end
  local set = type(options.settings.provider) == "table" and options.settings.provider or {}
  local file = profile and type(profile.provider) == "table" and profile.provider or {}
  local base_url, url_source = first({
    { set.baseUrl, "settings" },
    { file.baseUrl, "config.json" },
    { vim.env.SERI_BASE_URL, "$SERI_BASE_URL" },
    { "https://openrouter.ai/api/v1", "default" },
  })
  local model, model_source = first({
    { set.model, "settings" },
    { file.model, "config.json" },
    { vim.env.SERI_MODEL, "$SERI_MODEL" },
    { "anthropic/claude-sonnet-4.5", "default" },
  })
  health.ok(("provider: %s (%s)"):format(base_url, url_source))
  health.ok(("model: %s (%s)"):format(model, model_source))
  local _, key_source = first({
    { set.apiKey, "settings" },
    { file.apiKey, "config.json" },
    { vim.env.SERI_API_KEY, "$SERI_API_KEY" },
    { vim.env.OPENROUTER_API_KEY, "$OPENROUTER_API_KEY" },
  })
  if key_source then
    health.ok(("API key: set (%s)"):format(key_source))
  else
    health.warn("API key: not set", {
      "Set provider.apiKey in settings, or $SERI_API_KEY / $OPENROUTER_API_KEY",
      "(a local OpenAI-compatible server may not need one)",
    })
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
  local options = config.options
  health.start("seri: Neovim")
  check_neovim()
  health.start("seri: server")
  local found = check_server(options)
  check_running()
  health.start("seri: profile")
  check_profile(options, found)
  health.start("seri: provider")
  check_provider(options)
end

return M
