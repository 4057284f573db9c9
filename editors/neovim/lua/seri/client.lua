-- The LSP side of the plugin: one seri-lsp client per project root, the `seri/*`
-- notifications, and asynchronous `seri.*` commands.
--
-- Everything here is asynchronous: a command's callback runs when the server answers, so
-- the editor never waits on a running task.

local config = require("seri.config")

local M = {}

local HAS_011 = vim.fn.has("nvim-0.11") == 1

---@class seri.Session
---@field id string
---@field project string
---@field title string
---@field createdAt string
---@field updatedAt string
---@field maxTurns integer
---@field messageCount integer
---@field parentId string|userdata|nil the session a fork was forked from (vim.NIL: none)
---@field forkedAt integer|userdata|nil in a fork: the parent's last message it copied
---@field spend seri.Spend? what its model calls cost so far
---@field model string|userdata|nil the model its next turn uses (older servers: absent)

---@class seri.Spend a session's spend on model calls (`seri.session.usage` totals)
---@field inputTokens integer billed input, the cached tokens included
---@field cachedInputTokens integer input read from the provider's prompt cache
---@field cacheWriteTokens integer input written to the provider's prompt cache
---@field outputTokens integer
---@field reasoningTokens integer
---@field cost number|userdata USD, vim.NIL when no call reported one
---@field calls integer

---@class seri.Usage
---@field estimateTokens integer
---@field contextWindow integer
---@field compactAt integer? the estimate at which automatic compaction starts

---@class seri.Activity what a running task waits for (`seri/status`)
---@field sessionId string
---@field state "model"|"retrying"|"tool"|"approval"|"compacting"|"checks"
---@field detail string?
---@field attempt integer?
---@field maxAttempts integer?
---@field delay number?

---@class seri.ToolCall
---@field id string
---@field name string
---@field arguments string JSON text

---@class seri.Message
---@field id integer
---@field createdAt string
---@field role "user"|"assistant"|"tool"
---@field content string
---@field thinking? string
---@field tool_calls? seri.ToolCall[]
---@field tool_call_id? string
---@field kind? "recap"|"rule"|"check"
---@field recap? table
---@field isError? boolean
---@field turnEnded? {status: string, error?: string} on a turn's last message: how the turn ended

---@class seri.Pending
---@field run fun(client: vim.lsp.Client)
---@field fail fun(err: lsp.ResponseError)

---@class seri.Project
---@field root string canonical project folder
---@field client_id integer?
---@field ready boolean the server answered `initialize`
---@field pending seri.Pending[] requests waiting for `ready`
---@field session seri.Session? the open session
---@field reason string? why it was opened (new, continued, resumed, cleared, rewound)
---@field usage seri.Usage? context use of the open session
---@field usage_token table? the pending debounced usage refresh
---@field busy integer task requests (prompts, compactions) in flight
---@field progress table<string|integer, boolean> `$/progress` tokens running
---@field sessions seri.Session[]? the project's sessions, as last listed
---@field activity seri.Activity? what the running task of the open session waits for
---@field last_error string? why the last task failed (shown in the chat already)
---@field queue {text: string, context: table[]}[] prompts sent while a task ran
---@field ended boolean? the last task said it ended (`seri/turnEnded`) before its answer came
---@field reports integer? `/cost` and `/context` sent and not answered yet

---@alias seri.Event "session"|"message"|"delta"|"compacted"|"turn_ended"|"status"|"exit"|"tool_output"
---@alias seri.Listener fun(event: seri.Event, project: seri.Project, params: table?)

---@type table<string, seri.Project> projects by root
M.projects = {}

---@type table<integer, seri.Project> projects by client id
local by_client = {}

---@type seri.Listener[]
local listeners = {}

-- Client methods are called with `:` from Neovim 0.11 on and with `.` before.
---@param client vim.lsp.Client
---@param method string
local function call(client, method, ...)
  if HAS_011 then
    return client[method](client, ...)
  end
  return client[method](...)
end

---@param client vim.lsp.Client?
---@return boolean
local function alive(client)
  return client ~= nil and not call(client, "is_stopped")
end

---Listen to seri events (the chat and the status line do).
---@param fn seri.Listener
function M.subscribe(fn)
  table.insert(listeners, fn)
end

---@param event seri.Event
---@param project seri.Project
---@param params table?
local function emit(event, project, params)
  for _, fn in ipairs(listeners) do
    local ok, err = pcall(fn, event, project, params)
    if not ok then
      vim.notify(("seri: %s handler failed: %s"):format(event, err), vim.log.levels.ERROR)
    end
  end
end

---Tell the listeners the project's status changed (working, usage, questions, queue).
---@param project seri.Project
function M.emit_status(project)
  emit("status", project)
end

---@param pattern string
---@param data table?
local function user_event(pattern, data)
  vim.api.nvim_exec_autocmds("User", { pattern = pattern, data = data, modeline = false })
end

-- Roots ------------------------------------------------------------------------------

---@param path string
---@return string
local function canonical(path)
  return vim.uv.fs_realpath(path) or vim.fs.normalize(path)
end

---The file a buffer shows, or nil for scratch, help, terminal and `scheme://` buffers.
---@param buf integer
---@return string?
function M.file_of(buf)
  if not vim.api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" or name:match("^%a[%w+.-]*://") then
    return nil
  end
  return vim.fs.normalize(vim.fn.fnamemodify(name, ":p"))
end

---The nearest folder at or above `dir` holding one of the root markers.
---@param dir string
---@return string?
local function marked_root(dir)
  local markers = {}
  for _, marker in ipairs(config.options.root_markers) do
    markers[marker] = true
  end
  -- A function, not the list: the nearest marker wins, whichever it is.
  return vim.fs.root(dir, function(name)
    return markers[name] == true
  end)
end

---@param path string
---@param root string
---@return boolean
local function inside(path, root)
  return path == root or path:sub(1, #root + 1) == root .. "/"
end

---The root of a running server whose project holds `path` (the innermost, should
---servers nest). A subfolder with a marker of its own (`src/AGENTS.md`) belongs to the
---project already open above it rather than starting a second server.
---@param path string canonical
---@return string?
local function running_root(path)
  local found = nil
  for root, project in pairs(M.projects) do
    if M.client(project) and inside(path, root) and (found == nil or #root > #found) then
      found = root
    end
  end
  return found
end

---The project root for a buffer: the chat's own project for the chat's buffers; the
---root of a running server that holds the buffer's file; the nearest marker above the
---file; else the same for the current directory; else the current directory. Scratch
---and help buffers use the current directory.
---@param buf integer?
---@return string
function M.root_for(buf)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  local bound = vim.b[buf].seri_root
  if bound then
    return bound
  end
  local file = M.file_of(buf)
  local root = file and (running_root(canonical(file)) or marked_root(vim.fs.dirname(file)))
  if not root then
    local cwd = vim.fs.normalize(vim.fn.getcwd())
    root = running_root(canonical(cwd)) or marked_root(cwd) or cwd
  end
  return canonical(root)
end

-- Handlers ---------------------------------------------------------------------------

---@param ctx lsp.HandlerContext
---@return seri.Project?
local function project_of(ctx)
  return by_client[ctx.client_id]
end

---@param project seri.Project
function M.refresh_usage(project)
  project.usage_token = nil -- this one answers for a refresh still pending
  local session = project.session
  local args = session and { sessionId = session.id, limit = 1 } or nil
  M.execute(project, "seri.session.get", args, function(err, result)
    if err or type(result) ~= "table" then
      return
    end
    if type(result.session) == "table" then
      if project.session == nil or project.session.id == result.session.id then
        project.session = result.session
      end
    end
    project.usage = result.usage
    emit("status", project)
  end)
end

---@type table<string, lsp.Handler>
local handlers = {}

handlers["seri/sessionChanged"] = function(_, params, ctx)
  local project = project_of(ctx)
  if not project or type(params) ~= "table" then
    return
  end
  local session = type(params.session) == "table" and params.session or nil
  local open = project.session
  local same = session and open and session.id == open.id
  if (params.reason == "renamed" or params.reason == "model") and same then
    -- The same session under a new title or model: what it uses and does stays.
    project.session = session
    emit("session", project, params)
    user_event("SeriSessionChanged", params)
    if params.reason == "model" then
      M.refresh_usage(project) -- the new model's window
    end
    return
  end
  project.session = session
  project.reason = params.reason
  project.usage = nil
  project.activity = nil
  emit("session", project, params)
  user_event("SeriSessionChanged", params)
  M.refresh_usage(project)
end

---A notification passed on as it is: to the chat (`event`), then as a `User` autocmd
---(`pattern`); with `refresh`, the usage is asked for again afterwards.
---@param event seri.Event
---@param pattern string
---@param refresh boolean
---@return lsp.Handler
local function forward(event, pattern, refresh)
  return function(_, params, ctx)
    local project = project_of(ctx)
    if not project or type(params) ~= "table" then
      return
    end
    emit(event, project, params)
    user_event(pattern, params)
    if refresh then
      M.refresh_usage(project)
    end
  end
end

-- Context use grows with every model call, not only when the task ends; a reply that
-- comes as several stored messages in quick succession asks once.
local USAGE_DEBOUNCE_MS = 250

---Ask for the usage again shortly, once for a burst of calls.
---@param project seri.Project
function M.refresh_usage_soon(project)
  local token = {}
  project.usage_token = token
  vim.defer_fn(function()
    if project.usage_token == token then
      project.usage_token = nil
      M.refresh_usage(project)
    end
  end, USAGE_DEBOUNCE_MS)
end

local forward_message = forward("message", "SeriMessage", false)

handlers["seri/message"] = function(err, params, ctx)
  forward_message(err, params, ctx)
  local project = project_of(ctx)
  local message = type(params) == "table" and params.message or nil
  local open = project and project.session
  if open and type(message) == "table" and message.role == "assistant" then
    if params.sessionId == open.id then
      M.refresh_usage_soon(project)
    end
  end
end

---A handler that hands a notification's params to the project's listeners of `event`.
---@param event string
---@return fun(err: any, params: any, ctx: table)
local function to_project(event)
  return function(_, params, ctx)
    local project = project_of(ctx)
    if project and type(params) == "table" then
      emit(event, project, params)
    end
  end
end

handlers["seri/delta"] = to_project("delta")

handlers["seri/compacted"] = forward("compacted", "SeriCompacted", true)

-- A running command's output, as it comes (batched by the server, ~10 a second).
handlers["seri/toolOutput"] = to_project("tool_output")

local forward_turn_ended = forward("turn_ended", "SeriTurnEnded", true)

handlers["seri/turnEnded"] = function(err, params, ctx)
  local project = project_of(ctx)
  if project and type(params) == "table" then
    local open = project.session and project.session.id
    if params.sessionId == open then
      project.activity = nil
      project.last_error = type(params.error) == "string" and params.error or nil
      -- Nothing of the task runs any more, even before its request is answered.
      project.ended = true
      project.progress = {}
    end
    -- Nothing of the task waits any more: a question left open is gone.
    for _, q in ipairs(require("seri.approve").pending(project.root)) do
      if q.params.sessionId == params.sessionId then
        require("seri.approve").withdraw(project, q.id)
      end
    end
  end
  forward_turn_ended(err, params, ctx)
end

-- What the open session's task waits for; a subagent's own (its sessionId) is left out:
-- its parent says `tool` meanwhile.
handlers["seri/status"] = function(_, params, ctx)
  local project = project_of(ctx)
  if project and type(params) == "table" and project.session then
    if params.sessionId == project.session.id then
      project.activity = params
      emit("status", project)
      if params.state == "retrying" then
        -- Once the delay is over, the model is asked again (no status says so).
        local delay = math.max(0, tonumber(params.delay) or 0)
        vim.defer_fn(function()
          if project.activity == params then
            local attempt = (tonumber(params.attempt) or 1) + 1
            project.activity = {
              sessionId = params.sessionId,
              state = "model",
              attempt = attempt,
              maxAttempts = params.maxAttempts,
            }
            emit("status", project)
          end
        end, math.floor(delay * 1000))
      end
    end
  end
end

-- A question the task waits on, shown as a card in the chat (`seri.approve`).
handlers["seri/approve"] = function(_, params, ctx)
  local project = project_of(ctx)
  if not project then
    return vim.NIL
  end
  return require("seri.approve").ask(project, params)
end

-- The server took a question back (its task was cancelled).
handlers["$/cancelRequest"] = function(_, params, ctx)
  local project = project_of(ctx)
  if project and type(params) == "table" then
    require("seri.approve").withdraw(project, params.id)
  end
end

local LEVELS = {
  [1] = vim.log.levels.ERROR,
  [2] = vim.log.levels.WARN,
  [3] = vim.log.levels.INFO,
  [4] = vim.log.levels.DEBUG,
}

-- The server's messages go where the user looks (the chat, or one line), not to a
-- hit-enter prompt; a failed task's reason, already in the chat, is not said twice.
handlers["window/showMessage"] = function(_, params, ctx)
  local project = project_of(ctx)
  if type(params) ~= "table" or type(params.message) ~= "string" then
    return vim.NIL
  end
  if project and project.last_error and params.message == project.last_error then
    return vim.NIL
  end
  -- The report of a `/cost` or `/context` the chat prints from the command's answer.
  local report = params.message:match("^Spend: ") or params.message:match("^Context: ")
  if project and (project.reports or 0) > 0 and report then
    return vim.NIL
  end
  local level = LEVELS[params.type] or vim.log.levels.INFO
  if level ~= vim.log.levels.DEBUG then
    require("seri.notice").say(params.message, level)
  end
  return vim.NIL
end

-- `$/progress` goes through Neovim's own handler (LspProgress, vim.lsp.status(), fidget),
-- and also marks the project as working while a progress is open.
handlers["$/progress"] = function(err, params, ctx, cfg)
  local result = vim.lsp.handlers["$/progress"](err, params, ctx, cfg)
  local project = project_of(ctx)
  local value = type(params) == "table" and params.value or nil
  if project and type(value) == "table" then
    if value.kind == "begin" then
      project.progress[params.token] = true
    elseif value.kind == "end" then
      project.progress[params.token] = nil
    end
    emit("status", project)
  end
  return result
end

---@param edit table lsp.WorkspaceEdit
---@return string[]
local function edited_files(edit)
  local files = {}
  for uri in pairs(edit.changes or {}) do
    table.insert(files, vim.uri_to_fname(uri))
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      table.insert(files, vim.uri_to_fname(change.textDocument.uri))
    end
  end
  return files
end

---@param fname string
---@return integer?
local function buffer_named(fname)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf) == fname then
      return buf
    end
  end
  return nil
end

-- The server edits files the editor does not show through `workspace/applyEdit` and then
-- writes them to disk itself. Neovim would keep such a file loaded and modified (and
-- complain on :quit), so a buffer that was not loaded before the edit is dropped again,
-- and one the server did not know about is marked unmodified.
handlers["workspace/applyEdit"] = function(err, params, ctx, cfg)
  local before = {}
  for _, fname in ipairs(edited_files(params and params.edit or {})) do
    local buf = buffer_named(fname)
    if not (buf and vim.lsp.buf_is_attached(buf, ctx.client_id)) then
      before[fname] = {
        existed = buf ~= nil,
        loaded = buf ~= nil and vim.api.nvim_buf_is_loaded(buf),
        modified = buf ~= nil and vim.bo[buf].modified,
      }
    end
  end
  local result, error = vim.lsp.handlers["workspace/applyEdit"](err, params, ctx, cfg)
  for fname, was in pairs(before) do
    local buf = buffer_named(fname)
    if buf and result and result.applied then
      if not was.existed then
        vim.api.nvim_buf_delete(buf, { force = true })
      elseif not was.loaded then
        vim.api.nvim_buf_delete(buf, { force = true, unload = true })
      elseif not was.modified then
        vim.bo[buf].modified = false
      end
    end
  end
  return result, error
end

---Write each loaded, modified buffer among `uris` (`:write` in the buffer, so the user's
---autocommands run); the uris whose text is now on disk: saved now, open with nothing
---unsaved, or not open at all. A buffer that could not be written is left out.
---@param uris string[]
---@return string[] saved
function M.save_documents(uris)
  local saved = {}
  for _, uri in ipairs(uris) do
    local ok, fname = pcall(vim.uri_to_fname, uri)
    local buf = ok and buffer_named(fname) or nil
    if buf and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified then
      local written, err = true, nil
      vim.api.nvim_buf_call(buf, function()
        written, err = pcall(vim.cmd, "silent write")
      end)
      if not written then
        local why = tostring(err):match("(E%d+:.*)$") or tostring(err)
        vim.notify(("seri: could not save %s: %s"):format(fname, why), vim.log.levels.WARN)
      end
    end
    if ok and not (buf and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified) then
      table.insert(saved, uri)
    end
  end
  return saved
end

-- Before running the checks (commands that read the disk), the server asks to save the
-- documents its task edited through the editor.
handlers["seri/saveDocuments"] = function(_, params)
  local uris = type(params) == "table" and type(params.uris) == "table" and params.uris or {}
  return { saved = M.save_documents(uris) }
end

-- Starting and attaching -------------------------------------------------------------

---@param project seri.Project
---@return vim.lsp.Client?
function M.client(project)
  local client = project.client_id and vim.lsp.get_client_by_id(project.client_id)
  if alive(client) then
    return client
  end
  return nil
end

---Let the server see a file buffer of its project (unsaved text, edits in place): only
---the server of the buffer's own project (`root_for`), never one of a folder above it.
---@param buf integer
function M.attach(buf)
  if not config.options.attach_buffers then
    return
  end
  local file = M.file_of(buf)
  if not file then
    return
  end
  local root = M.root_for(buf)
  local project = M.projects[root]
  local client = project and M.client(project)
  if client and project.ready and inside(canonical(file), root) then
    if not vim.lsp.buf_is_attached(buf, client.id) then
      vim.lsp.buf_attach_client(buf, client.id)
    end
  end
end

---@param project seri.Project
local function flush(project)
  local client = M.client(project)
  local pending = project.pending
  project.pending = {}
  for _, item in ipairs(pending) do
    if client then
      item.run(client)
    else
      item.fail({ code = -32099, message = "the seri-lsp server is not running" })
    end
  end
end

---@param project seri.Project
---@param code integer
---@param signal integer
local function on_exit(project, code, signal)
  local root = project.root
  if M.projects[root] == project then
    M.projects[root] = nil
  end
  if project.client_id then
    by_client[project.client_id] = nil
  end
  project.ready = false
  flush(project)
  require("seri.approve").withdraw_all(root)
  emit("exit", project, { code = code, signal = signal })
  if code ~= 0 then
    vim.notify(
      ("seri: the server for %s exited (code %d); :checkhealth seri may tell why"):format(
        root,
        code
      ),
      vim.log.levels.ERROR
    )
  end
end

---Start the server for a project root (or return the one already running).
---@param root string
---@return seri.Project?
function M.start(root)
  local existing = M.projects[root]
  if existing and M.client(existing) then
    return existing
  end
  local opts = config.options
  local cmd, source = config.server_command()
  if vim.fn.executable(cmd[1]) ~= 1 then
    local fix = source == "cmd" and "Fix `cmd` in require('seri').setup()"
      or "Run :SeriInstall to install it (or set `cmd` in require('seri').setup())"
    vim.notify(
      ("seri: the server command %q was not found. %s; :checkhealth seri tells more."):format(
        cmd[1],
        fix
      ),
      vim.log.levels.ERROR
    )
    return nil
  end
  ---@type seri.Project
  local project = { root = root, ready = false, pending = {}, busy = 0, progress = {}, queue = {} }
  -- Questions come as `seri/approve` and show in the chat, not as a picker.
  local capabilities = vim.tbl_deep_extend("force", vim.lsp.protocol.make_client_capabilities(), {
    experimental = { seri = { approvals = true } },
  })
  local lsp_config = {
    name = "seri",
    cmd = cmd,
    capabilities = capabilities,
    cmd_cwd = root,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    init_options = config.init_options(opts.settings),
    handlers = handlers,
    on_init = function()
      project.ready = true
      vim.schedule(function()
        flush(project)
        for _, buf in ipairs(vim.api.nvim_list_bufs()) do
          if vim.api.nvim_buf_is_loaded(buf) then
            M.attach(buf)
          end
        end
        emit("status", project)
        M.refresh_usage(project)
      end)
    end,
    on_exit = function(code, signal)
      vim.schedule(function()
        on_exit(project, code, signal)
      end)
    end,
  }
  local id
  if HAS_011 then
    id = vim.lsp.start(lsp_config, { attach = false })
  else
    id = vim.lsp.start_client(lsp_config)
  end
  if not id then
    return nil
  end
  project.client_id = id
  M.projects[root] = project
  by_client[id] = project
  return project
end

---Send the settings in force to every running server (`workspace/didChangeConfiguration`,
---`settings` in the shape of the initialization options): `setup()` called again changes
---them, and the provider settings apply from the next prompt (the others at a restart).
function M.send_settings()
  local settings = config.init_options(config.options.settings)
  for _, project in pairs(M.projects) do
    local client = M.client(project)
    if client and project.ready then
      call(client, "notify", "workspace/didChangeConfiguration", { settings = settings })
    end
  end
end

---The project of a buffer (the current one by default), started when `start` is true.
---@param opts {buf?: integer, start?: boolean}?
---@return seri.Project?
function M.current(opts)
  opts = opts or {}
  local root = M.root_for(opts.buf)
  local project = M.projects[root]
  if project and M.client(project) then
    return project
  end
  if opts.start then
    return M.start(root)
  end
  return nil
end

-- Requests ---------------------------------------------------------------------------

---Run `fn` once the project's server has answered `initialize`.
---@param project seri.Project
---@param fn fun(client: vim.lsp.Client)
---@param fail fun(err: lsp.ResponseError)
function M.when_ready(project, fn, fail)
  local client = M.client(project)
  if client and project.ready then
    fn(client)
  elseif client then
    table.insert(project.pending, { run = fn, fail = fail })
  else
    fail({ code = -32099, message = "the seri-lsp server is not running" })
  end
end

---Run a `seri.*` command asynchronously; `callback(err, result)` gets the answer.
---@param project seri.Project
---@param name string e.g. "seri.prompt"
---@param args table? the command's one argument object
---@param callback fun(err: lsp.ResponseError?, result: any)?
function M.execute(project, name, args, callback)
  if args == nil or next(args) == nil then
    args = vim.empty_dict() -- `{}` would go out as `[]`
  end
  callback = callback or function() end
  M.when_ready(project, function(client)
    local params = { command = name, arguments = { args } }
    local ok = call(client, "request", "workspace/executeCommand", params, function(err, result)
      callback(err, result)
    end, 0)
    if not ok then
      callback({ code = -32099, message = "the seri-lsp server is not running" }, nil)
    end
  end, function(err)
    callback(err, nil)
  end)
end

---Run a task-like command (a prompt, a compaction): the project counts as working until
---the server answers.
---@param project seri.Project
---@param name string
---@param args table?
---@param callback fun(err: lsp.ResponseError?, result: any)?
function M.execute_task(project, name, args, callback)
  project.busy = project.busy + 1
  project.ended = false
  emit("status", project)
  M.execute(project, name, args, function(err, result)
    project.busy = math.max(0, project.busy - 1)
    emit("status", project)
    if callback then
      callback(err, result)
    end
  end)
end

---A command's answer, waiting at most `timeout_ms` (for command-line completion only).
---@param project seri.Project
---@param name string
---@param args table?
---@param timeout_ms integer
---@return any
function M.execute_sync(project, name, args, timeout_ms)
  local client = M.client(project)
  if not client or not project.ready then
    return nil
  end
  local params = { command = name, arguments = { args or vim.empty_dict() } }
  local response = call(client, "request_sync", "workspace/executeCommand", params, timeout_ms, 0)
  return response and response.result or nil
end

---Whether a task runs in the project.
---@param project seri.Project
---@return boolean
function M.working(project)
  return (project.busy > 0 and not project.ended) or next(project.progress) ~= nil
end

---Stop every seri client.
function M.stop_all()
  for _, project in pairs(M.projects) do
    local client = M.client(project)
    if client then
      call(client, "stop")
    end
  end
end

return M
