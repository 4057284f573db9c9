-- Installing the server: a private Python environment under `stdpath("data")/seri`, with
-- seri-lsp installed into it from the plugin's own checkout (the plugin is
-- `editors/neovim` of the seri-lsp repository, so the package is two folders up).
-- `build` in a lazy.nvim spec and `:SeriInstall` run it; running it again upgrades the
-- server to the checkout's version. The dependencies come from the package index, as
-- pip installs them (its cache makes a second run quick).

local M = {}

local WINDOWS = vim.fn.has("win32") == 1
local MIN_PYTHON = { 3, 11 }
-- pip may build and download for a while on a slow network.
local STEP_TIMEOUT_MS = 15 * 60 * 1000

---The folder holding the private environment.
---@return string
function M.dir()
  return vim.fs.joinpath(vim.fn.stdpath("data"), "seri")
end

---@return string
local function venv()
  return vim.fs.joinpath(M.dir(), "venv")
end

---A program of the private environment.
---@param name string
---@return string
local function program(name)
  local folder = WINDOWS and "Scripts" or "bin"
  return vim.fs.joinpath(venv(), folder, name .. (WINDOWS and ".exe" or ""))
end

---The installed server's command, or nil when `:SeriInstall` has not installed it.
---@return string[]?
function M.command()
  local exe = program("seri-lsp")
  if vim.fn.executable(exe) == 1 then
    return { exe }
  end
  return nil
end

---The seri-lsp checkout the plugin lives in (two folders above `editors/neovim`).
---@return string
function M.package_dir()
  local source = debug.getinfo(1, "S").source:sub(2) -- editors/neovim/lua/seri/install.lua
  return vim.fs.normalize(vim.fn.fnamemodify(source, ":p:h:h:h:h:h"))
end

---Pythons to try, in order: `python` given to setup(), else `python3` and `python` (on
---Windows the `py -3` launcher first).
---@param given string|string[]|nil
---@return string[][]
local function candidates(given)
  if given then
    return { type(given) == "table" and given or { given } }
  end
  if WINDOWS then
    return { { "py", "-3" }, { "python" }, { "python3" } }
  end
  return { { "python3" }, { "python" } }
end

local VERSION_CHECK = ("import sys; print('%%d.%%d' %% sys.version_info[:2]); "
  .. "sys.exit(sys.version_info < (%d, %d))"):format(MIN_PYTHON[1], MIN_PYTHON[2])

---The first Python 3.11+ among the candidates, or why there is none.
---@param given string|string[]|nil
---@return string[]? python
---@return string? version or the problem
local function find_python(given)
  local tried = {}
  for _, argv in ipairs(candidates(given)) do
    local shown = table.concat(argv, " ")
    if vim.fn.executable(argv[1]) == 1 then
      local done = vim.system(vim.list_extend(vim.deepcopy(argv), { "-c", VERSION_CHECK }), {
        text = true,
      }):wait(10000)
      local version = vim.trim(done.stdout or "")
      if done.code == 0 then
        return argv, version
      end
      table.insert(tried, ("%s (%s)"):format(shown, version ~= "" and version or "does not run"))
    else
      table.insert(tried, shown .. " (not found)")
    end
  end
  return nil,
    ("seri needs Python %d.%d or later to install its server, and found none: tried %s. "):format(
      MIN_PYTHON[1],
      MIN_PYTHON[2],
      table.concat(tried, ", ")
    ) .. "Install Python 3.11+ (python.org, or your system's packages), or pass "
      .. "`python = '/path/to/python3'` to require('seri').setup()."
end

---@class seri.InstallStep
---@field what string said before it runs
---@field argv string[]

---Run the steps one after the other, off the editor's thread.
---@param steps seri.InstallStep[]
---@param progress fun(msg: string)
---@param done fun(err: string?)
local function run_steps(steps, progress, done)
  local index = 0
  local function next_step()
    index = index + 1
    local step = steps[index]
    if not step then
      return done(nil)
    end
    progress(step.what)
    local command = table.concat(step.argv, " ")
    local options = { text = true, timeout = STEP_TIMEOUT_MS }
    local ok, err = pcall(vim.system, step.argv, options, function(result)
      vim.schedule(function()
        if result.code ~= 0 then
          local said = vim.split(vim.trim((result.stderr or "") .. "\n" .. (result.stdout or "")), "\n")
          local tail = table.concat(vim.list_slice(said, math.max(1, #said - 11)), "\n")
          return done(("`%s` failed (exit %d):\n%s"):format(command, result.code, tail))
        end
        next_step()
      end)
    end)
    if not ok then
      done(("`%s` could not start: %s"):format(command, err))
    end
  end
  next_step()
end

---Install (or upgrade) the server into the private environment.
---@param opts {python?: string|string[], progress?: fun(msg: string), done: fun(err: string?, summary: string?)}
function M.run(opts)
  local progress = opts.progress or function() end
  local package = M.package_dir()
  if not vim.uv.fs_stat(vim.fs.joinpath(package, "pyproject.toml")) then
    return opts.done(
      ("the plugin is not inside a seri-lsp checkout (no pyproject.toml in %s): "):format(package)
        .. "install the plugin from the seri-lsp repository (its editors/neovim folder)"
    )
  end
  local steps = {}
  if vim.fn.executable(program("python")) ~= 1 then
    local python, found = find_python(opts.python)
    if not python then
      return opts.done(found)
    end
    table.insert(steps, {
      what = ("making a Python %s environment in %s"):format(found, venv()),
      argv = vim.list_extend(vim.deepcopy(python), { "-m", "venv", venv() }),
    })
  end
  table.insert(steps, {
    what = ("installing seri-lsp from %s (pip fetches its dependencies)"):format(package),
    argv = {
      program("python"),
      "-m",
      "pip",
      "install",
      "--upgrade",
      "--disable-pip-version-check",
      "--no-input",
      package,
    },
  })
  local started = vim.uv.hrtime()
  run_steps(steps, progress, function(err)
    if err then
      return opts.done(err)
    end
    local version = vim.system({ program("seri-lsp"), "--version" }, { text = true }):wait(15000)
    local seconds = (vim.uv.hrtime() - started) / 1e9
    local name = vim.trim(version.stdout or "")
    opts.done(nil, ("%s installed in %s (%.0f s)"):format(name, venv(), seconds))
  end)
end

---Install and wait: lazy.nvim's `build` (inside its coroutine, reporting progress to
---its window) or any caller that may block. Raises with the reason when it fails.
---@param opts {python?: string|string[]}? `python` as in setup() (default: setup()'s)
---@return string summary
function M.build(opts)
  opts = opts or {}
  local co, main = coroutine.running()
  local in_task = co ~= nil and not main
  local result, last = nil, nil
  M.run({
    python = opts.python or require("seri.config").options.python,
    progress = function(msg)
      if not in_task then
        vim.notify("seri: " .. msg)
      end
      last = msg
    end,
    done = function(err, summary)
      result = { err = err, summary = summary }
    end,
  })
  if in_task then
    while not result do
      coroutine.yield(last)
    end
  else
    vim.wait(STEP_TIMEOUT_MS, function()
      return result ~= nil
    end, 100)
  end
  if not result then
    error("seri: the install did not finish in time")
  elseif result.err then
    error("seri: the install failed: " .. result.err)
  end
  return result.summary
end

return M
