-- Searching what the sessions hold (`:SeriSearch`): the hits of `seri.session.search` in
-- the quickfix list, one entry per matching message, best first.
--
-- Each entry names a `seri://session/<session id>/<message id>` buffer, so everything
-- that opens a quickfix entry opens a hit (<CR> in the quickfix window, `:cc`, `:cnext`,
-- `]q`, pickers that list the quickfix): reading that buffer resumes the session, shows
-- the chat with the cursor on the message (earlier pages loaded as needed), and puts the
-- window that was to show it back to what it showed. The buffer is a stand-in that
-- unloads once hidden, so the next jump to the same entry reads it, and opens it, again.

local chat = require("seri.chat")
local client = require("seri.client")
local notice = require("seri.notice")
local time = require("seri.time")

local M = {}

M.PREFIX = "seri://session/"

-- The most hits asked for (the server's limit): the quickfix list holds them all.
local LIMIT = 200

---@class seri.Hit a `seri.session.search` hit
---@field sessionId string
---@field title string
---@field messageId integer
---@field role "user"|"assistant"|"tool"
---@field kind? "recap"|"check"
---@field snippet string the matching part, each matched word between « and »
---@field createdAt string
---@field projectPath string
---@field messagesAfter integer?

-- The hits of the searches made, by stand-in buffer name: where each opens (its
-- project) and what to put the cursor on (its first matched word).
---@type table<string, seri.Hit>
local known = {}

local ROLES = { user = "you", assistant = "seri", tool = "tool" }
local KINDS = { recap = "recap", check = "checks" }

---The stand-in buffer name of a hit.
---@param session_id string
---@param message_id integer
---@return string
function M.name(session_id, message_id)
  return ("%s%s/%d"):format(M.PREFIX, session_id, message_id)
end

---The session and message a stand-in buffer name stands for.
---@param name string
---@return string? session_id
---@return integer? message_id
function M.parse(name)
  local session_id, message_id = name:match("^seri://session/([^/]+)/(%d+)$")
  return session_id, tonumber(message_id)
end

---A hit as a quickfix item: the session's time and short id (and project, for a search
---of every project) in place of a file name; the text is the title, then who wrote the
---message and its snippet with the matched words between « and ».
---@param hit seri.Hit
---@param all_projects boolean
---@return table
function M.item(hit, all_projects)
  local title = hit.title ~= nil and hit.title ~= "" and hit.title or "(untitled)"
  local who = KINDS[hit.kind] or ROLES[hit.role] or tostring(hit.role)
  local where = ("%s %s"):format(time.local_minute(hit.createdAt), hit.sessionId:sub(1, 8))
  if all_projects then
    where = vim.fs.basename(hit.projectPath) .. " " .. where
  end
  return {
    filename = M.name(hit.sessionId, hit.messageId),
    module = where,
    text = ("%s │ %s: %s"):format(title, who, hit.snippet),
    user_data = hit,
  }
end

---Search the sessions of `project` (of every project with `opts.all`) for `query` and
---put the hits in the quickfix list, its window opened; no hits leave the list as it was
---and say so.
---@param project seri.Project
---@param query string
---@param opts {all?: boolean}?
function M.run(project, query, opts)
  local all = opts and opts.all == true or false
  query = vim.trim(query or "")
  if query == "" then
    notice.say(":SeriSearch needs words to search for", vim.log.levels.ERROR)
    return
  end
  local args = { query = query, limit = LIMIT, allProjects = all or nil }
  client.execute(project, "seri.session.search", args, function(err, result)
    if err then
      notice.say("search failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local hits = type(result) == "table" and type(result.hits) == "table" and result.hits or {}
    local scope = all and "any project's sessions" or "this project's sessions"
    if #hits == 0 then
      notice.say(("Nothing in %s matches %q."):format(scope, query))
      return
    end
    local items = {}
    for _, hit in ipairs(hits) do
      local item = M.item(hit, all)
      known[item.filename] = hit
      table.insert(items, item)
    end
    local count = result.hasMore and ("the best %d hits"):format(#hits)
      or ("%d hit%s"):format(#hits, #hits == 1 and "" or "s")
    local title = ("seri search %q%s: %s"):format(query, all and " (all projects)" or "", count)
    vim.fn.setqflist({}, " ", { title = title, items = items })
    vim.cmd("botright copen")
  end)
end

---The project a hit belongs to: its server, started when none runs for it (a hit of
---another project opens there, where its tools belong); the current one for a hit not
---known from a search here.
---@param hit seri.Hit?
---@return seri.Project?
---@return string? problem
local function project_of(hit)
  local folder = hit and hit.projectPath
  if type(folder) ~= "string" or folder == "" then
    return client.current({ start = true })
  end
  local root = vim.uv.fs_realpath(folder)
  if not root or vim.fn.isdirectory(root) == 0 then
    return nil, ("the session's project folder %s is not there any more"):format(folder)
  end
  return client.start(root) -- the running server, if there is one
end

---Resume a session (unless it is open) and show the chat with the cursor on a message
---(on the hit's first matched word when it is known).
---@param session_id string
---@param message_id integer
function M.open(session_id, message_id)
  local hit = known[M.name(session_id, message_id)]
  local project, problem = project_of(hit)
  if not project then
    notice.say("could not open the hit: " .. (problem or "no server runs"), vim.log.levels.ERROR)
    return
  end
  local function show()
    chat.open(project, { focus = false })
    chat.reveal(session_id, message_id, hit and hit.snippet:match("«([^»]+)»"))
  end
  if project.session and project.session.id == session_id then
    show()
    return
  end
  client.execute(project, "seri.session.resume", { sessionId = session_id }, function(err)
    if err then
      local why = err.message or vim.inspect(err)
      notice.say("could not open the hit's session: " .. why, vim.log.levels.ERROR)
      return
    end
    show()
  end)
end

---Put the window that shows the stand-in `buf` back to the buffer it showed before (an
---empty one when there was none), keeping its alternate file.
---@param buf integer
local function step_back(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_call(win, function()
      local previous = vim.fn.bufnr("#")
      if previous > 0 and previous ~= buf and vim.api.nvim_buf_is_valid(previous) then
        vim.cmd("keepalt buffer " .. previous)
      else
        vim.cmd("keepalt enew")
      end
    end)
  end
end

---`BufReadCmd` of `seri://session/*`: a quickfix entry of a search was opened.
---@param buf integer
---@param name string
function M.read(buf, name)
  local session_id, message_id = M.parse(name)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].swapfile = false
  vim.bo[buf].bufhidden = "unload"
  vim.bo[buf].modifiable = true
  local text = session_id
      and ("seri: opening session %s at message %d"):format(session_id, message_id)
    or ("seri: %s names no session and message (seri://session/ID/MESSAGE)"):format(name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { text })
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if not session_id or not message_id then
    return
  end
  vim.schedule(function()
    if vim.api.nvim_buf_is_valid(buf) then
      step_back(buf)
    end
    M.open(session_id, message_id)
  end)
end

return M
