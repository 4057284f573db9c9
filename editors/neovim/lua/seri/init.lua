-- seri for Neovim: a chat with the seri coding agent, served by seri-lsp.
--
--    require("seri").setup({ cmd = { "seri-lsp" }, settings = { ... } })
--
-- One seri-lsp server runs per project root (found from `.git`, `AGENTS.md` or `.seri`,
-- else the current directory). It starts when Neovim opens, so the server resumes the
-- project's latest session and the chat shows it the first time it is opened. Nothing
-- here waits for the server: prompts run in the background and stream into the chat.

local chat = require("seri.chat")
local client = require("seri.client")
local config = require("seri.config")
local notice = require("seri.notice")
local status = require("seri.status")

local M = {}

local did_setup = false

local HIGHLIGHTS = {
  SeriHeader = "Title",
  SeriYou = "Statement",
  SeriAssistant = "Function",
  SeriTool = "Special",
  SeriToolError = "DiagnosticError",
  SeriResult = "Comment",
  SeriOutput = "Normal",
  SeriRecapTitle = "Title",
  SeriRecap = "String",
  SeriRecapLabel = "Bold",
  SeriRoleLine = "ColorColumn",
  SeriCheck = "DiagnosticWarn",
  SeriNotice = "Comment",
  SeriWarning = "DiagnosticWarn",
  SeriError = "DiagnosticError",
  SeriLoadEarlier = "Underlined",
  SeriActivity = "DiagnosticInfo",
  SeriQueued = "Comment",
  SeriAttached = "Special",
  SeriCodeFrame = "FloatBorder",
  SeriCard = "DiagnosticWarn",
  SeriCardTitle = "Bold",
  SeriCardKeys = "Special",
  SeriDiffAdd = "DiffAdd",
  SeriDiffDelete = "DiffDelete",
  SeriReport = "Normal",
  SeriCompacted = "DiagnosticInfo",
  SeriDivider = "DiagnosticInfo",
  SeriForkMark = "DiagnosticHint",
  -- :SeriContext, a colour per kind of part.
  SeriContextSystem = "Title",
  SeriContextAgents = "Constant",
  SeriContextRule = "Special",
  SeriContextMemory = "Identifier",
  SeriContextRecap = "DiagnosticWarn",
  SeriContextGlobRules = "Type",
  SeriContextChecks = "DiagnosticError",
  SeriContextUser = "DiagnosticInfo",
  SeriContextAssistant = "DiagnosticOk",
  SeriContextToolCalls = "Function",
  SeriContextToolResult = "String",
  SeriContextOther = "Comment",
  SeriContextTotal = "Bold",
  SeriContextMark = "WarningMsg",
}

---Say what went wrong, where the user looks; true when there was an error.
---@param err lsp.ResponseError?
---@param what string
---@return boolean
local function report(err, what)
  if err then
    notice.say(("%s: %s"):format(what, err.message or vim.inspect(err)), vim.log.levels.ERROR)
  end
  return err ~= nil
end

---Set the plugin up. Options (all optional):
---  cmd           the server command, default `{ "seri-lsp" }`
---  settings      the server's initialization options (provider, permissions, maxTurns...)
---  root_markers  default `{ ".git", "AGENTS.md", ".seri" }`
---  autostart     start the project's server when Neovim opens (default true)
---  chat          `{ side = "right", size = 0.4, input_height = 4, page_size = 200, ... }`
---  status        `{ spend = false }`: whether `status()` adds the session's spend
---  keymaps       `{ send = "<CR>", send_insert = "<C-s>", cancel = "<C-c>", close = "q" }`
---@param opts table?
function M.setup(opts)
  local options = config.set(opts)
  -- Called again: the running servers get the new settings (provider ones apply at once).
  if did_setup then
    client.send_settings()
  end
  did_setup = true
  for group, link in pairs(HIGHLIGHTS) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
  end
  chat.setup()
  status.setup()
  require("seri.queue").setup()

  local group = vim.api.nvim_create_augroup("seri", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufFilePost" }, {
    group = group,
    desc = "Let the seri server see the project's file buffers",
    callback = function(args)
      client.attach(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufEnter", {
    group = group,
    desc = "Remember the file #buffer and #selection stand for",
    callback = function(args)
      require("seri.attach").track(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd("BufReadCmd", {
    group = group,
    pattern = require("seri.search").PREFIX .. "*",
    desc = "Open a :SeriSearch hit: its session in the chat, at the message",
    callback = function(args)
      require("seri.search").read(args.buf, args.match)
    end,
  })
  require("seri.attach").track(vim.api.nvim_get_current_buf())
  if options.autostart then
    if vim.v.vim_did_enter == 1 then
      M.start()
    else
      vim.api.nvim_create_autocmd("VimEnter", {
        group = group,
        once = true,
        desc = "Start the seri server for the project",
        callback = function()
          M.start()
        end,
      })
    end
  end
end

---@return seri.Project?
local function project()
  if not did_setup then
    M.setup()
  end
  return client.current({ start = true })
end

---Start the server for the current buffer's project (done by `setup` when Neovim opens).
---@return seri.Project?
function M.start()
  return project()
end

---The seri LSP client of the current buffer's project, if it runs.
---@return vim.lsp.Client?
function M.client()
  local current = client.current()
  return current and client.client(current) or nil
end

---Run any `seri.*` command asynchronously against the current project's server.
---@param name string
---@param args table?
---@param callback fun(err: lsp.ResponseError?, result: any)?
function M.execute(name, args, callback)
  local current = project()
  if current then
    client.execute(current, name, args, callback)
  end
end

---Toggle the chat window.
function M.toggle()
  local current = project()
  if current then
    chat.toggle(current)
  end
end

---Open the chat window (and put the cursor in its prompt unless `focus` is false).
---@param opts {focus?: boolean}?
function M.open(opts)
  local current = project()
  if current then
    chat.open(current, opts)
  end
end

---Close the chat window.
function M.close()
  chat.close()
end

---What `/rewind` did, shown as `:SeriRewind` shows it: the removed prompt back in the
---input, the files left alone listed.
---@param current seri.Project
---@param text string the prompt, `/rewind [n] [both|conversation|files] [force]`
---@param result table
local function rewound(current, text, result)
  local rewind = require("seri.rewind")
  local words = vim.split(text, "%s+", { trimempty = true })
  table.remove(words, 1)
  -- The server accepted the words, so they parse; `done` needs what was restored.
  local request = rewind.parse(words) or {}
  request.steps = request.steps or tonumber(result.rewound) or 1
  rewind.done(current, request, result)
end

---`/cost` or `/context`: a slash command that prints a report and runs no task.
---@param text string
---@return boolean
local function is_report(text)
  local name = vim.trim(text):lower()
  return name == "/cost" or name == "/context"
end

---Print the report of `/cost` or `/context` in the chat (opened without the cursor when
---it is closed), its lines as the server wrote them; at once, also while a task runs.
---@param command string "/cost" or "/context"
function M.report(command)
  local current = project()
  if not current then
    return
  end
  if not chat.is_open() then
    chat.open(current, { focus = false })
  else
    chat.bind(current)
  end
  chat.follow()
  -- The server also shows the report as a message: the chat holds it already.
  current.reports = (current.reports or 0) + 1
  client.execute(current, "seri.prompt", { text = command }, function(err, result)
    current.reports = current.reports - 1
    if not report(err, command) and type(result) == "table" and type(result.text) == "string" then
      notice.say(result.text, nil, { report = true })
    end
  end)
end

---What the open session's model calls cost, in the chat (`/cost`).
function M.cost()
  M.report("/cost")
end

---What fills the open session's context window, in a float: a bar per part and where
---compaction starts.
function M.context()
  local current = project()
  if current then
    require("seri.context").open(current)
  end
end

---The project's MCP servers in a scratch buffer, with their status; `r` restarts the
---one under the cursor.
function M.mcp()
  local current = project()
  if current then
    require("seri.mcp").open(current)
  end
end

---Fork the open session: in the chat, at the message under the cursor; elsewhere (or
---with `opts.last`) at its last message. The fork, a new session holding the
---conversation up to there, opens in the chat; the original is left as it was.
---@param opts {last?: boolean}?
function M.fork(opts)
  local current = project()
  if not current then
    return
  end
  local args = nil
  if not (opts and opts.last) and vim.api.nvim_get_current_buf() == chat.state.buf then
    local id = chat.message_under_cursor()
    if not id then
      notice.say(
        "Put the cursor on a message to fork there (:SeriFork outside the chat forks at the last one).",
        vim.log.levels.WARN
      )
      return
    end
    args = { messageId = id }
  end
  client.execute(current, "seri.session.fork", args, function(err, result)
    if report(err, "could not fork") or type(result) ~= "table" then
      return
    end
    if not chat.is_open() and type(result.session) == "table" then
      local parent = result.session.parentId
      notice.say(
        ("Forked: session %s holds the conversation up to there; %s is as it was."):format(
          tostring(result.session.id):sub(1, 8),
          type(parent) == "string" and parent:sub(1, 8) or "the original"
        )
      )
    end
  end)
end

---Send a prompt (slash commands pass through: `/compact tests`). Returns at once; the
---reply streams into the chat. `#buffer` and `#selection` become mentions of what they
---stand for, and what the prompt mentions is attached (`seri.attach`). While a task
---runs, the prompt is queued: shown in the chat and sent when the task ends. `/cost`
---and `/context` are answered at once (`M.report`).
---@param text string
---@param opts {context?: seri.ContextEntry[], on_error?: fun(err: lsp.ResponseError)}|fun(err: lsp.ResponseError)|nil
---  `context`: entries attached besides the mentions; `on_error`: the server refused it
function M.prompt(text, opts)
  if type(opts) == "function" then
    opts = { on_error = opts }
  end
  opts = opts or {}
  text = vim.trim(text or "")
  if text == "" then
    notice.say("the prompt is empty", vim.log.levels.WARN)
    return
  end
  if is_report(text) then
    M.report(text)
    return
  end
  local current = project()
  if not current then
    return
  end
  if config.options.chat.open_on_prompt and not chat.is_open() then
    chat.open(current, { focus = false })
  elseif vim.api.nvim_buf_is_valid(chat.state.buf or -1) then
    chat.bind(current)
  end
  local resolved, context, problems = require("seri.attach").resolve(text, current.root)
  if #problems > 0 then
    notice.say(table.concat(problems, "; "), vim.log.levels.WARN)
    if opts.on_error then
      opts.on_error({ code = -32602, message = problems[1] })
    end
    return
  end
  vim.list_extend(context, opts.context or {})
  local item = { text = resolved, context = context, on_error = opts.on_error }
  chat.follow()
  if client.working(current) or #current.queue > 0 then
    require("seri.queue").add(current, item)
    return
  end
  M.send(current, item)
end

---Send a prompt now (`M.prompt` decides when).
---@param current seri.Project
---@param item seri.QueuedPrompt
function M.send(current, item)
  local args = { text = item.text }
  if #item.context > 0 then
    args.context = item.context
  end
  client.execute_task(current, "seri.prompt", args, function(err, result)
    if report(err, "the prompt was refused") then
      if item.on_error then
        item.on_error(err)
      end
    elseif type(result) == "table" and result.command == "rewind" then
      rewound(current, item.text, result)
    end
  end)
end

---Send the last prompt again (after a failure, or for another answer). When its task
---stored nothing after it (the provider failed at once), the conversation first goes
---back to before it, so it is not there twice; when its task did work (tool calls, a
---partial reply), that stays in the conversation and the prompt follows it, so the model
---knows what was already done. Where the conversation cannot go back (across a
---compaction), it is sent again after what is there.
function M.retry()
  local current = project()
  if not current then
    return
  end
  if client.working(current) then
    notice.say("A task is running; :SeriCancel (or <C-c>) stops it first.", vim.log.levels.WARN)
    return
  end
  local last, alone = chat.last_prompt()
  if not alone then
    if type(last) ~= "string" or vim.trim(last) == "" then
      notice.say("There is no prompt to send again.", vim.log.levels.WARN)
      return
    end
    chat.follow()
    M.send(current, { text = last, context = {} })
    return
  end
  local args = { steps = 1, restore = "conversation" }
  client.execute(current, "seri.rewind", args, function(err, result)
    local text = not err and type(result) == "table" and result.prompt or last
    if type(text) ~= "string" or vim.trim(text) == "" then
      notice.say("There is no prompt to send again.", vim.log.levels.WARN)
      return
    end
    chat.follow()
    M.send(current, { text = text, context = {} })
  end)
end

---Compact the open session now; `focus` words guide the summary.
---@param focus string?
function M.compact(focus)
  local current = project()
  if not current then
    return
  end
  focus = vim.trim(focus or "")
  local args = focus ~= "" and { focus = focus } or nil
  current.activity = { sessionId = "", state = "compacting" }
  -- What it did is said by its `seri/compacted` notice, in numbers.
  client.execute_task(current, "seri.compact", args, function(err)
    current.activity = nil
    report(err, "compaction failed")
  end)
end

---Start a new session.
function M.new()
  local current = project()
  if current then
    client.execute(current, "seri.session.new", nil, function(err)
      report(err, "could not start a new session")
    end)
  end
end

---Clear: a new session (the old one stays in the store).
function M.clear()
  local current = project()
  if current then
    client.execute(current, "seri.clear", nil, function(err)
      report(err, "could not clear")
    end)
  end
end

---@param session seri.Session
---@param open_id string?
---@return string
function M.format_session(session, open_id)
  local title = session.title ~= nil and session.title ~= "" and session.title or "(untitled)"
  local date = require("seri.time").local_minute(session.updatedAt)
  local count = tonumber(session.messageCount) or 0
  local text = ("%s · %s · %d message%s"):format(title, date, count, count == 1 and "" or "s")
  local spend = status.spend(session)
  if spend then
    text = text .. " · " .. spend
  end
  if session.id == open_id then
    text = text .. " · open"
  end
  return text
end

---Pick one of the project's sessions with `vim.ui.select` (titles, ages, spend; the open
---one marked), then call `on_pick` with it.
---@param current seri.Project
---@param prompt string
---@param on_pick fun(session: seri.Session)
local function pick_session(current, prompt, on_pick)
  client.execute(current, "seri.session.list", nil, function(err, result)
    if report(err, "could not list sessions") then
      return
    end
    local sessions = type(result) == "table" and result.sessions or {}
    current.sessions = sessions
    if #sessions == 0 then
      notice.say("this project has no sessions yet")
      return
    end
    local open_id = current.session and current.session.id
    vim.ui.select(sessions, {
      prompt = prompt,
      kind = "seri_session",
      format_item = function(session)
        return M.format_session(session, open_id)
      end,
    }, function(choice)
      if choice then
        on_pick(choice)
      end
    end)
  end)
end

---Resume a session by id (or unique prefix); without one, pick from the project's
---sessions with `vim.ui.select`.
---@param id string?
function M.resume(id)
  local current = project()
  if not current then
    return
  end
  id = id and vim.trim(id) or ""
  if id ~= "" then
    client.execute(current, "seri.session.resume", { sessionId = id }, function(err)
      report(err, "could not resume " .. id)
    end)
    return
  end
  pick_session(current, "Resume seri session", function(choice)
    M.resume(choice.id)
  end)
end

---Ask before deleting `session` (`vim.fn.confirm`), then delete it with everything stored
---for it. The open session is refused while a task runs; once deleted, the chat shows the
---new, empty session the server opens in its place.
---@param current seri.Project
---@param session seri.Session
local function delete_after_confirming(current, session)
  local title = session.title ~= nil and session.title ~= "" and session.title or "(untitled)"
  local count = tonumber(session.messageCount) or 0
  local is_open = current.session ~= nil and current.session.id == session.id
  local question = ("Delete the seri session “%s” (%d message%s)?\n"
    .. "Its checkpoints, recordings and subagents' sessions are deleted for good.%s"):format(
    title,
    count,
    count == 1 and "" or "s",
    is_open and "\nA new session opens in its place." or ""
  )
  if vim.fn.confirm(question, "&Delete\n&Cancel", 2, "Question") ~= 1 then
    notice.say("Not deleted.")
    return
  end
  client.execute(current, "seri.session.delete", { sessionId = session.id }, function(err, result)
    if report(err, "could not delete the session") or type(result) ~= "table" then
      return
    end
    local opened = type(result.session) == "table" and " A new session is open." or ""
    notice.say(("Deleted the session “%s”.%s"):format(title, opened))
  end)
end

---Delete a session (by id or unique prefix) after a confirmation; without an id, pick it
---from the project's sessions with `vim.ui.select` first. Nothing else ever deletes one
---(`:SeriClear` keeps the old session).
---@param id string?
function M.delete(id)
  local current = project()
  if not current then
    return
  end
  id = id and vim.trim(id) or ""
  if id ~= "" then
    client.execute(current, "seri.session.get", { sessionId = id, limit = 1 }, function(err, result)
      if not report(err, "could not delete " .. id) and type(result) == "table" then
        delete_after_confirming(current, result.session)
      end
    end)
    return
  end
  pick_session(current, "Delete seri session", function(choice)
    delete_after_confirming(current, choice)
  end)
end

---Search what the project's sessions hold (every project's with `opts.all`) and put
---the hits in the quickfix list; opening an entry resumes its session with the chat at
---the message.
---@param query string
---@param opts {all?: boolean}?
function M.search(query, opts)
  local current = project()
  if current then
    require("seri.search").run(current, query, opts)
  end
end

---Give the open session a title of the user's (never replaced by the first prompt's);
---without one, ask for it with `vim.ui.input`, the current title filled in.
---@param title string?
function M.rename(title)
  local current = project()
  if not current then
    return
  end
  local function send(text)
    if vim.trim(text) == "" then
      notice.say("The title is empty; the session keeps its title.", vim.log.levels.WARN)
      return
    end
    client.execute(current, "seri.session.rename", { title = text }, function(err, result)
      if not report(err, "could not rename the session") and type(result) == "table" then
        local session = type(result.session) == "table" and result.session or {}
        notice.say(("Session renamed “%s”."):format(session.title or text))
      end
    end)
  end
  if title and vim.trim(title) ~= "" then
    send(title)
    return
  end
  local open = current.session
  local prompt = { prompt = "Rename the seri session: ", default = open and open.title or "" }
  vim.ui.input(prompt, function(input)
    if input ~= nil then
      send(input)
    end
  end)
end

---The model list's row for `entry`: its id, its context window, whether it is in use.
---@param entry {id: string, contextWindow?: integer}
---@param current string
---@return string
local function model_row(entry, current)
  local row = entry.id
  if tonumber(entry.contextWindow) then
    row = row .. ("  %s context"):format(require("seri.status").tokens(entry.contextWindow))
  end
  return entry.id == current and row .. "  (in use)" or row
end

---Choose the open session's model from its next prompt: `name` as given, else picked
---with vim.ui.select from the provider's models (with their context windows), or typed
---with vim.ui.input when the provider's list cannot be read.
---@param name string?
function M.model(name)
  local current = project()
  if not current then
    return
  end
  local function send(model)
    model = vim.trim(model)
    if model == "" then
      return
    end
    client.execute(current, "seri.session.model", { model = model }, function(err, result)
      if report(err, "could not change the model") or type(result) ~= "table" then
        return
      end
      if type(result.session) == "table" then
        current.session = result.session
      end
      if result.warning then
        notice.say(result.warning, vim.log.levels.WARN)
      end
      local window = tonumber(result.contextWindow)
      local size = window and (", %s context"):format(require("seri.status").tokens(window)) or ""
      notice.say(("model %s from the next prompt%s"):format(result.model, size))
      client.refresh_usage(current)
    end)
  end
  if name and vim.trim(name) ~= "" then
    send(name)
    return
  end
  client.execute(current, "seri.models", nil, function(err, result)
    if report(err, "could not list the models") or type(result) ~= "table" then
      return
    end
    local models = type(result.models) == "table" and result.models or {}
    if #models == 0 then
      local why = result.error or "The provider lists no models"
      vim.ui.input(
        { prompt = why .. ". Model id: ", default = result.current or "" },
        function(input)
          if input ~= nil then
            send(input)
          end
        end
      )
      return
    end
    vim.ui.select(models, {
      prompt = "Model for this session's next prompts:",
      format_item = function(entry)
        return model_row(entry, result.current)
      end,
    }, function(entry)
      if entry then
        send(entry.id)
      end
    end)
  end)
end

---Write the open session to `file`: `.md` a transcript to read, `.json` a bundle to
---import; secrets are redacted and workspace paths made relative by the server. An
---existing file is replaced only with `opts.force`.
---@param file string
---@param opts {force?: boolean}?
function M.export(file, opts)
  local current = project()
  if current then
    require("seri.export").export(current, file, opts)
  end
end

---Import the JSON bundle in `file` as a new session of the project and open it in the
---chat.
---@param file string
function M.import(file)
  local current = project()
  if current then
    require("seri.export").import(current, file)
  end
end

---Set the turn budget (model calls per prompt) for the rest of the session.
---@param n integer|string
function M.max_turns(n)
  local value = tonumber(n)
  if not value or value < 1 or value % 1 ~= 0 then
    local message = "the turn budget must be a positive whole number, got %q"
    notice.say(message:format(tostring(n)), vim.log.levels.ERROR)
    return
  end
  local current = project()
  if current then
    client.execute(current, "seri.maxTurns", { n = value }, function(err, result)
      if not report(err, "could not set the turn budget") then
        local budget = result and result.maxTurns or value
        notice.say(("turn budget %d for this session"):format(budget))
      end
    end)
  end
end

---Stop the running task.
function M.cancel()
  local current = client.current()
  if not current then
    notice.say("nothing is running")
    return
  end
  client.execute(current, "seri.cancel", nil, function(err, result)
    if report(err, "could not cancel") then
      return
    end
    if type(result) == "table" and result.cancelled == false then
      notice.say("nothing is running")
    end
  end)
end

---Go back to before a prompt. `args` is what `:SeriRewind` takes: `[n]
---[both|conversation|files] [force]` (a string, or a list of words). With a count it
---rewinds at once; without, pick a checkpoint, then what to restore, with
---`vim.ui.select`. The removed prompt goes back into the chat's input.
---@param args string|string[]|integer|nil
function M.rewind(args)
  local rewind = require("seri.rewind")
  local words = args
  if type(words) ~= "table" then
    words = vim.split(vim.trim(tostring(words or "")), "%s+", { trimempty = true })
  end
  local request, problem = rewind.parse(words)
  if not request then
    notice.say(":SeriRewind: " .. problem, vim.log.levels.ERROR)
    return
  end
  local current = project()
  if not current then
    return
  end
  if request.steps then
    rewind.run(current, request)
  elseif request.restore or request.force then
    notice.say(":SeriRewind: give the number of prompts with those words", vim.log.levels.ERROR)
  else
    rewind.pick(current)
  end
end

---Completion of `:SeriRewind`.
---@param lead string
---@return string[]
function M.complete_rewind(lead)
  return require("seri.rewind").complete(client.current(), lead)
end

local TRAJECTORY_SOURCES = {
  env = "set by $SERI_TRAJECTORY_ENABLED in the server's environment",
  profile = "stored in the profile's config.json",
  default = "the default",
}

---Trajectory recording: show whether it is on and where that comes from (no argument),
---or turn it on or off (stored in the profile). The server warns when
---$SERI_TRAJECTORY_ENABLED overrides the stored value; that warning is shown as one.
---@param value string|boolean|nil "on", "off", true, false or nil
function M.trajectory(value)
  local enabled
  if value == true or value == "on" then
    enabled = true
  elseif value == false or value == "off" then
    enabled = false
  elseif value ~= nil and vim.trim(value) ~= "" then
    notice.say((":SeriTrajectory takes on or off, got %q"):format(value), vim.log.levels.ERROR)
    return
  end
  local current = project()
  if not current then
    return
  end
  local args = enabled ~= nil and { enabled = enabled } or nil
  client.execute(current, "seri.trajectory", args, function(err, result)
    if report(err, "trajectory recording") or type(result) ~= "table" then
      return
    end
    local message = result.message
    if type(message) ~= "string" or message == "" then
      local source = TRAJECTORY_SOURCES[result.source] or tostring(result.source)
      message = ("Trajectory recording is %s (%s)."):format(result.enabled and "on" or "off", source)
    end
    notice.say(message)
    if type(result.warning) == "string" and result.warning ~= "" then
      notice.say(result.warning, vim.log.levels.WARN)
    end
  end)
end

---Session ids of the current project for command-line completion.
---@param lead string
---@return string[]
function M.complete_sessions(lead)
  local current = client.current()
  if not current then
    return {}
  end
  local result = client.execute_sync(current, "seri.session.list", nil, 500)
  if type(result) == "table" and type(result.sessions) == "table" then
    current.sessions = result.sessions
  end
  local ids = {}
  for _, session in ipairs(current.sessions or {}) do
    if vim.startswith(session.id, lead) then
      table.insert(ids, session.id)
    end
  end
  return ids
end

---Install or upgrade the server (`:SeriInstall`) into a private environment under
---`stdpath("data")/seri`, from the plugin's own checkout; then start it for the project
---when no server runs for it yet.
function M.install()
  local install = require("seri.install")
  install.run({
    python = config.options.python,
    progress = function(msg)
      notice.say(msg)
    end,
    done = function(err, summary)
      if err then
        notice.say("the install failed: " .. err, vim.log.levels.ERROR)
        return
      end
      notice.say(summary)
      if did_setup and not client.current() then
        M.start()
      end
    end,
  })
end

---A short string for statuslines: `seri 34% (44k/128k) ▏compacts at 64k`, plus the
---session's spend (`· $0.0213`, then `· cache 83% of input` once the provider reported
---a cache read or write) with `opts.spend` or the `status.spend` option, and what
---a running task waits for (`· waiting for your approval`); "" when no server runs.
---Written for a 'statusline' (each `%` as `%%`), so a share or a name with `%` in it
---breaks no statusline it is put in.
---With `opts.model`, the session's model follows `seri ·` (`seri · test/model · 34% ...`).
---@param opts {spend?: boolean, model?: boolean}?
---@return string
function M.status(opts)
  return (status.text(status.project(), opts):gsub("%%", "%%%%"))
end

return M
