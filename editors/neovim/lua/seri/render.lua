-- How the chat shows things: messages, the header, the streamed reply, notices.
-- Pure functions from wire values to lines and highlights; `seri.chat` puts them in the
-- buffer.
--
-- Tool results, thinking, rules and failing checks are folded: a head line (`RESULT` or
-- `THINKING`) opens a fold and `BODY` lines continue it, so the chat's 'foldexpr' needs
-- only the line text.

local M = {}

M.RESULT = "   <- "
M.THINKING = "   ∴ "
M.BODY = "   │ "
M.TOOL = "-> "
M.LOAD_EARLIER = "↑ load earlier messages"

---@class seri.Mark
---@field line integer 0-based, within the block
---@field group string highlight group

---@class seri.Block
---@field lines string[]
---@field marks seri.Mark[]
---@field calls table<string, integer> 0-based line of each tool call, by call id

---@return seri.Block
local function block()
  return { lines = {}, marks = {}, calls = {} }
end

---@param b seri.Block
---@param line string
---@param group string?
local function add(b, line, group)
  table.insert(b.lines, line)
  if group then
    table.insert(b.marks, { line = #b.lines - 1, group = group })
  end
end

---@param text string?
---@return string[]
local function split(text)
  text = (text or ""):gsub("\r\n", "\n"):gsub("\r", "\n")
  return vim.split(text, "\n", { plain = true })
end

---@param text string
---@param width integer
---@return string
local function shorten(text, width)
  text = vim.trim((text:gsub("%s+", " ")))
  if vim.fn.strchars(text) > width then
    return vim.fn.strcharpart(text, 0, width - 1) .. "…"
  end
  return text
end

---A folded block: the head line shows, the rest folds under it.
---@param b seri.Block
---@param prefix string M.RESULT or M.THINKING
---@param text string
---@param group string
local function folded(b, prefix, text, group)
  local lines = split(text)
  while #lines > 1 and vim.trim(lines[#lines]) == "" do
    table.remove(lines)
  end
  add(b, prefix .. (lines[1] ~= "" and lines[1] or "(empty)"), group)
  for i = 2, #lines do
    add(b, M.BODY .. lines[i], "SeriResult")
  end
end

---The chat's first lines: which session this is.
---@param session seri.Session?
---@param reason string?
---@return seri.Block
function M.header(session, reason)
  local b = block()
  if not session then
    add(b, "# seri: no session yet", "SeriHeader")
    add(b, "Type a prompt below (or :SeriPrompt) to start one.", "SeriNotice")
  else
    local title = session.title ~= nil and session.title ~= "" and session.title or "new session"
    add(b, "# seri: " .. shorten(title, 80), "SeriHeader")
    local details = { "session " .. session.id }
    if reason and reason ~= "" then
      table.insert(details, reason)
    end
    add(b, table.concat(details, " · "), "SeriNotice")
  end
  add(b, "")
  return b
end

---The line that loads the previous page of history.
---@param key string? the key that activates it, shown as a hint
---@return seri.Block
function M.load_earlier(key)
  local b = block()
  add(b, M.LOAD_EARLIER .. (key and (" (" .. key .. ")") or ""), "SeriLoadEarlier")
  add(b, "")
  return b
end

---`-> edit src/app.py`: a tool call on one line.
---@param call seri.ToolCall
---@return string
function M.tool_line(call)
  local ok, args = pcall(vim.json.decode, call.arguments or "{}")
  if not ok or type(args) ~= "table" then
    return M.TOOL .. call.name .. " " .. shorten(tostring(call.arguments or ""), 60)
  end
  local function text(key)
    return type(args[key]) == "string" and args[key] or nil
  end
  local summary
  if call.name == "grep" then
    summary = text("pattern") and ("%q"):format(text("pattern")) or ""
    if text("path") then
      summary = summary .. " in " .. text("path")
    end
  elseif call.name == "task" then
    summary = shorten(text("prompt") or "", 60)
  elseif call.name == "remember" then
    summary = shorten(text("text") or "", 60)
  elseif text("path") then
    summary = text("path")
  else
    summary = shorten(vim.json.encode(args), 60)
  end
  return vim.trim(M.TOOL .. call.name .. " " .. summary)
end

---The head line of failing checks handed back to the model: `Checks failed: lint, tests
---(round 1 of 3)`, from the server's message (`<name>: \`<command>\` exited with ...`).
---@param content string
---@return string
function M.check_heading(content)
  local names = {}
  local fence = nil ---@type string? the fence of the check output being skipped
  for _, line in ipairs(split(content)) do
    local opener = line:match("^(```+)")
    if fence then
      if vim.trim(line) == fence then
        fence = nil
      end
    elseif opener then
      fence = opener
    else
      local name = line:match("^([^%s`][^`]-): `")
      if name then
        table.insert(names, name)
      end
    end
  end
  local heading = "Checks failed"
  if #names > 0 then
    heading = heading .. ": " .. table.concat(names, ", ")
  end
  local round = content:match("%((round %d+ of %d+)%)")
  return round and ("%s (%s)"):format(heading, round) or heading
end

---@param recap table the structured recap
---@return string[]
local function recap_lines(recap)
  local lines = {}
  local fields = {
    { "goal", "Goal" },
    { "progress", "Progress" },
    { "blockers", "Blockers" },
    { "nextSteps", "Next steps" },
  }
  for _, field in ipairs(fields) do
    local value = type(recap[field[1]]) == "string" and vim.trim(recap[field[1]]) or ""
    local parts = split(value ~= "" and value or "(none)")
    table.insert(lines, ("**%s:** %s"):format(field[2], parts[1]))
    vim.list_extend(lines, parts, 2)
  end
  for _, field in ipairs({ { "read", "Read" }, { "modified", "Modified" } }) do
    local paths = recap[field[1]]
    if type(paths) == "table" and #paths > 0 then
      table.insert(lines, ("%s: %s"):format(field[2], table.concat(paths, ", ")))
    end
  end
  return lines
end

---@param b seri.Block
---@param msg seri.Message a `tool` message
local function result(b, msg)
  if msg.isError then
    folded(b, M.RESULT, "failed: " .. (msg.content or ""), "SeriToolError")
  else
    folded(b, M.RESULT, msg.content or "", "SeriResult")
  end
end

---A tool result, to go right under its call's line.
---@param msg seri.Message
---@return seri.Block
function M.result(msg)
  local b = block()
  result(b, msg)
  return b
end

---One stored message. `prev` is the role shown just before (nil at the top); assistant
---text after a tool result continues the same reply, so it gets no second heading.
---`results` holds tool results already known, by call id: each goes under its call.
---@param msg seri.Message
---@param prev string?
---@param results table<string, seri.Message>?
---@return seri.Block block
---@return string role what `prev` is for the next message
function M.message(msg, prev, results)
  local b = block()
  if msg.role == "user" and msg.kind == "recap" then
    local evicted = type(msg.recap) == "table" and tonumber(msg.recap.evicted) or nil
    add(b, "## Recap", "SeriRecapTitle")
    if evicted and evicted > 0 then
      add(b, ("_%d earlier messages were compacted into this recap._"):format(evicted), "SeriRecap")
    end
    local lines = type(msg.recap) == "table" and recap_lines(msg.recap) or split(msg.content)
    for _, line in ipairs(lines) do
      add(b, line, "SeriRecap")
    end
    add(b, "")
    return b, "recap"
  end
  if msg.role == "user" and msg.kind == "check" then
    -- Failing checks the server handed back to the model: not the user's words.
    local content = msg.content or ""
    folded(b, M.THINKING, M.check_heading(content) .. "\n" .. content, "SeriCheck")
    add(b, "")
    return b, "check"
  end
  if msg.role == "user" and msg.kind == "rule" then
    folded(b, M.THINKING, "rule: " .. (msg.content or ""), "SeriResult")
    add(b, "")
    return b, "rule"
  end
  if msg.role == "user" then
    add(b, "## You", "SeriYou")
    for _, line in ipairs(split(msg.content)) do
      add(b, line)
    end
    add(b, "")
    return b, "user"
  end
  if msg.role == "tool" then
    result(b, msg) -- a result whose call is not shown (an earlier page)
    add(b, "")
    return b, "tool"
  end
  -- assistant
  if prev ~= "assistant" and prev ~= "tool" then
    add(b, "## seri", "SeriAssistant")
  end
  if type(msg.thinking) == "string" and msg.thinking ~= "" then
    folded(b, M.THINKING, "thinking: " .. msg.thinking, "SeriResult")
  end
  local content = msg.content or ""
  if vim.trim(content) ~= "" then
    for _, line in ipairs(split(content)) do
      add(b, line)
    end
  end
  local calls = type(msg.tool_calls) == "table" and msg.tool_calls or {}
  for _, call in ipairs(calls) do
    add(b, M.tool_line(call), "SeriTool")
    b.calls[call.id] = #b.lines - 1
    if results and results[call.id] then
      result(b, results[call.id])
    end
  end
  add(b, "")
  return b, "assistant"
end

---The reply being streamed (not stored yet).
---@param text string
---@param prev string?
---@return seri.Block
function M.stream(text, prev)
  local b = block()
  if text == "" then
    return b
  end
  if prev ~= "assistant" and prev ~= "tool" then
    add(b, "## seri", "SeriAssistant")
  end
  for _, line in ipairs(split(text)) do
    add(b, line)
  end
  return b
end

---A line of the plugin's own (a task was cancelled, the server stopped...).
---@param text string
---@return seri.Block
function M.notice(text)
  local b = block()
  add(b, "_" .. text .. "_", "SeriNotice")
  add(b, "")
  return b
end

return M
