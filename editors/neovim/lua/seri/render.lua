-- How the chat shows things: messages, the header, the streamed reply, notices.
-- Pure functions from wire values to lines and highlights; `seri.chat` puts them in the
-- buffer.
--
-- Tool results, thinking, rules, failing checks and attached context are folded: a head
-- line (`RESULT`, `THINKING` or `CONTEXT`) opens a fold and `BODY` lines continue it, so
-- the chat's 'foldexpr' needs only the line text. Fenced code blocks are found here
-- (`frames`), so the chat can draw a frame with the language around each.
--
-- Only prose (the words of prompts and replies: `prose`) is rendered as markdown; every
-- other line (tool rows, results, cards, notices, the recap) is shown as it is written.
-- Role headings (`## You`, `## seri`) are drawn as a band, so that headings inside a
-- reply, rendered as markdown, are not taken for them.

local M = {}

M.RESULT = "   <- "
M.THINKING = "   ∴ "
M.BODY = "   │ "
M.CONTEXT = "   @ "
M.CARD = "▌ "
M.TOOL = "-> "
M.LOAD_EARLIER = "↑ load earlier messages"

---@class seri.Mark
---@field line integer 0-based, within the block
---@field group string highlight group
---@field end_col integer? the byte where it ends (default: the line's end)
---@field conceal string? shown instead of the marked text (one character, or "" for none)
---@field line_group string? a highlight group for the whole screen line

---@class seri.Frame
---@field first integer 0-based line of the opening fence, within the block
---@field last integer? 0-based line of the closing fence (nil while it streams)
---@field lang string the fence's language ("" when it names none)

---@class seri.Block
---@field lines string[]
---@field marks seri.Mark[]
---@field calls table<string, integer> 0-based line of each tool call, by call id
---@field frames seri.Frame[] fenced code blocks
---@field prose {first: integer, last: integer}[] 0-based lines rendered as markdown
---@field id integer? the stored message it shows (its first line is that message's)
---@field action string? what <CR> on its lines does (`recap`: open the recap;
---`compacted`: open the record of the turns a recap replaced)

---@return seri.Block
local function block()
  return { lines = {}, marks = {}, calls = {}, frames = {}, prose = {} }
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

---A role heading (`## You`, `## seri`, `## Recap`): its marks are drawn over a band,
---the `##` shown as a bar.
---@param b seri.Block
---@param line string
---@param group string
local function heading(b, line, group)
  add(b, line, group)
  b.marks[#b.marks].line_group = "SeriRoleLine"
  table.insert(b.marks, { line = #b.lines - 1, group = group, end_col = 2, conceal = "▍" })
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

---`1,234` for 1234.
---@param n number
---@return string
local function grouped(n)
  local digits = tostring(math.floor(tonumber(n) or 0))
  return (digits:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

---`1 call`, `2 calls`, `1,200 tokens`: a count and its noun, singular for one.
---@param n number
---@param singular string
---@param plural string? (default: `singular` .. "s")
---@return string
function M.count(n, singular, plural)
  return ("%s %s"):format(grouped(n), n == 1 and singular or (plural or singular .. "s"))
end

---The fenced code blocks of `lines` (CommonMark fences of three or more backticks or
---tildes, indented by at most three spaces); a block still open at the end has no `last`.
---@param lines string[]
---@return {first: integer, last: integer?, lang: string, info: string}[] 1-based lines; `info` the whole info string
function M.fences(lines)
  local found, open = {}, nil
  for i, line in ipairs(lines) do
    if open then
      local fence = line:match("^ ? ? ?([`~]+)%s*$")
      if fence and fence:sub(1, 1) == open.char and #fence >= open.length then
        open.frame.last = i
        open = nil
      end
    else
      local fence, info = line:match("^ ? ? ?([`~][`~][`~]+)(.*)$")
      local char = fence and fence:sub(1, 1)
      local same = fence and not fence:find(char == "`" and "~" or "`", 1, true)
      if same and not (char == "`" and info:find("`", 1, true)) then
        local frame = { first = i, lang = vim.trim(info):match("^(%S*)") or "", info = vim.trim(info) }
        table.insert(found, frame)
        open = { char = char, length = #fence, frame = frame }
      end
    end
  end
  return found
end

---Add text of the conversation (a prompt, a reply), noting its fenced code blocks; it is
---rendered as markdown.
---@param b seri.Block
---@param lines string[]
local function content(b, lines)
  local offset = #b.lines - 1
  if #lines > 0 then
    table.insert(b.prose, { first = #b.lines, last = #b.lines + #lines - 1 })
  end
  for _, fence in ipairs(M.fences(lines)) do
    table.insert(b.frames, {
      first = offset + fence.first,
      last = fence.last and offset + fence.last or nil,
      lang = fence.lang,
    })
  end
  for _, line in ipairs(lines) do
    add(b, line)
  end
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
    local fork = type(session.forkedAt) == "number" and type(session.parentId) == "string"
    if fork then
      table.insert(details, "fork of " .. session.parentId:sub(1, 8))
    end
    if reason and reason ~= "" and not (fork and reason == "forked") then
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
  elseif call.name == "run" then
    summary = "$ " .. shorten(text("command") or "", 80)
    if text("cwd") and text("cwd") ~= "." and text("cwd") ~= "" then
      summary = summary .. " (in " .. text("cwd") .. ")"
    end
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

---The recap's lines, as written (no markdown: its words are often code and paths), each
---field's label marked.
---@param b seri.Block
---@param recap table the structured recap
local function recap_lines(b, recap)
  local function labelled(label, first)
    add(b, ("%s: %s"):format(label, first), "SeriRecap")
    table.insert(b.marks, { line = #b.lines - 1, group = "SeriRecapLabel", end_col = #label + 1 })
  end
  local fields = {
    { "goal", "Goal" },
    { "progress", "Progress" },
    { "blockers", "Blockers" },
    { "nextSteps", "Next steps" },
  }
  for _, field in ipairs(fields) do
    local value = type(recap[field[1]]) == "string" and vim.trim(recap[field[1]]) or ""
    local parts = split(value ~= "" and value or "(none)")
    labelled(field[2], parts[1])
    for i = 2, #parts do
      add(b, parts[i], "SeriRecap")
    end
  end
  for _, field in ipairs({ { "read", "Read" }, { "modified", "Modified" } }) do
    local paths = recap[field[1]]
    if type(paths) == "table" and #paths > 0 then
      labelled(field[2], table.concat(paths, ", "))
    end
  end
end

-- How the results of calls that were stopped, not failed, start (seri_lsp/agent/loop.py):
-- a command's own stop, the task's, seri stopping while it ran.
local STOPPED = { "stopped by the user", "Cancelled: the user stopped", "Interrupted: seri stopped" }

---@param b seri.Block
---@param msg seri.Message a `tool` message
local function result(b, msg)
  local content = msg.content or ""
  local stopped = vim.iter(STOPPED):any(function(start)
    return vim.startswith(content, start)
  end)
  -- A call that was stopped did not fail.
  if msg.isError and not stopped then
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

---A prompt's words, rendered, and its `Attached: @path` lines, as written.
---@param b seri.Block
---@param lines string[]
local function words_and_attached(b, lines)
  local run = {}
  for _, line in ipairs(lines) do
    if line:match("^Attached: @") then
      content(b, run)
      run = {}
      add(b, line, "SeriAttached")
    else
      table.insert(run, line)
    end
  end
  content(b, run)
end

---A prompt as stored: the user's words, the `Attached: @path` line, then each attached
---`<context path=... lines=...>` block folded under a line naming it.
---@param b seri.Block
---@param text string?
function M.prompt(b, text)
  local words, lines = {}, split(text)
  local i = 1
  while i <= #lines do
    local line = lines[i]
    local attrs = line:match("^<context (.-)>$")
    if attrs then
      local body, j = {}, i + 1
      while j <= #lines and lines[j] ~= "</context>" do
        table.insert(body, lines[j])
        j = j + 1
      end
      local where = attrs:match('path="(.-)"') or attrs:match('uri="(.-)"') or attrs
      where = where:gsub("&quot;", '"'):gsub("&amp;", "&")
      local range = attrs:match('lines="(.-)"')
      local head = where .. (range and (" (lines " .. range .. ")") or "")
      while #words > 0 and words[#words] == "" do
        table.remove(words)
      end
      words_and_attached(b, words)
      words = {}
      add(b, M.CONTEXT .. head, "SeriAttached")
      for _, part in ipairs(body) do
        add(b, M.BODY .. part, "SeriResult")
      end
      i = j + 1
    else
      table.insert(words, line)
      i = i + 1
    end
  end
  while #words > 0 and words[#words] == "" do
    table.remove(words)
  end
  words_and_attached(b, words)
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
  b.id = msg.id
  if msg.role == "user" and msg.kind == "recap" then
    local evicted = type(msg.recap) == "table" and tonumber(msg.recap.evicted) or nil
    heading(b, "## Recap", "SeriRecapTitle")
    if evicted and evicted > 0 and type(msg.recap) ~= "table" then
      local what = M.count(evicted, "earlier message was", "earlier messages were")
      add(b, what .. " compacted into this recap.", "SeriNotice")
    end
    if type(msg.recap) == "table" then
      recap_lines(b, msg.recap)
    else
      for _, line in ipairs(split(msg.content)) do
        add(b, line, "SeriRecap")
      end
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
    heading(b, "## You", "SeriYou")
    M.prompt(b, msg.content)
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
    heading(b, "## seri", "SeriAssistant")
  end
  if type(msg.thinking) == "string" and msg.thinking ~= "" then
    folded(b, M.THINKING, "thinking: " .. msg.thinking, "SeriResult")
  end
  local text = msg.content or ""
  if vim.trim(text) ~= "" then
    content(b, split(text))
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
    heading(b, "## seri", "SeriAssistant")
  end
  content(b, split(text))
  return b
end

local NOTICE_GROUPS = {
  [vim.log.levels.ERROR] = "SeriError",
  [vim.log.levels.WARN] = "SeriWarning",
}

---Lines of the plugin's own (a task was cancelled, failed, the server stopped...).
---@param text string
---@param level integer? vim.log.levels: errors and warnings stand out
---@param kind "report"|"compaction"|nil a report (`/cost`, `/context`: its lines as they are), a compaction's notice
---@return seri.Block
function M.notice(text, level, kind)
  local b = block()
  local group = NOTICE_GROUPS[level]
    or (kind == "report" and "SeriReport")
    or (kind == "compaction" and "SeriCompacted")
    or "SeriNotice"
  local lines = split(kind == "report" and text:gsub("%s+$", "") or vim.trim(text))
  for _, line in ipairs(lines) do
    add(b, line, group)
  end
  add(b, "")
  return b
end

local COMPACTED_BY = {
  auto = "Context compacted automatically",
  manual = "Context compacted",
  overflow = "Context compacted (the request was too long for the model)",
}

---What a compaction did (`seri/compacted`), in numbers: `Context compacted automatically:
---48 → 7 messages, 70,120 → 18,340 tokens.`, then the recap's Read and Modified lists.
---@param params table
---@return string
function M.compaction_text(params)
  local head = COMPACTED_BY[params.trigger] or COMPACTED_BY.manual
  local numbers = { "messagesBefore", "messagesAfter", "tokensBefore", "tokensAfter" }
  local known = vim.iter(numbers):all(function(key)
    return type(params[key]) == "number"
  end)
  local lines = {}
  if known then
    table.insert(
      lines,
      ("%s: %s → %s, %s → %s."):format(
        head,
        grouped(params.messagesBefore),
        M.count(params.messagesAfter, "message"),
        grouped(params.tokensBefore),
        M.count(params.tokensAfter, "token")
      )
    )
  else
    local evicted = tonumber(params.evicted) or 0
    local what = M.count(evicted, "message")
    table.insert(lines, ("%s: %s summarised into a recap."):format(head, what))
  end
  for _, field in ipairs({ { "read", "Read" }, { "modified", "Modified" } }) do
    local paths = params[field[1]]
    if type(paths) == "table" and #paths > 0 then
      table.insert(lines, ("%s: %s"):format(field[2], table.concat(paths, ", ")))
    end
  end
  return table.concat(lines, "\n")
end

---The divider drawn above a recap: what the recap replaced, from its `recap` object
---(the same live and on reopen): `── 12 earlier messages compacted (5 tool calls,
---70,120 → 18,340 tokens) ──`, the Read and Modified paths, and, with `key`, that the
---key on it opens the record of those turns (action `compacted`).
---@param recap table the message's structured recap
---@param key string|false|nil
---@return seri.Block
function M.compaction_divider(recap, key)
  local b = block()
  local details = {}
  local calls = tonumber(recap.toolCalls)
  if calls and calls > 0 then
    table.insert(details, M.count(calls, "tool call"))
  end
  if type(recap.tokensBefore) == "number" and type(recap.tokensAfter) == "number" then
    local tokens = M.count(recap.tokensAfter, "token")
    table.insert(details, ("%s → %s"):format(grouped(recap.tokensBefore), tokens))
  end
  local head = M.count(tonumber(recap.evicted) or 0, "earlier message") .. " compacted"
  if #details > 0 then
    head = ("%s (%s)"):format(head, table.concat(details, ", "))
  end
  add(b, ("── %s ──"):format(head), "SeriDivider")
  for _, field in ipairs({ { "read", "Read" }, { "modified", "Modified" } }) do
    local paths = recap[field[1]]
    if type(paths) == "table" and #paths > 0 then
      add(b, ("%s: %s"):format(field[2], table.concat(paths, ", ")), "SeriDivider")
    end
  end
  if key then
    add(b, key .. " here opens the record of those turns.", "SeriDivider")
  end
  add(b, "")
  b.action = "compacted"
  return b
end

---The line after a fork's copied messages: where they come from.
---@param parent string the session forked from
---@param title string? its title, once known
---@return seri.Block
function M.fork_mark(parent, title)
  local b = block()
  local from = title and ("“%s”"):format(shorten(title, 50)) or ("session " .. parent:sub(1, 8))
  add(b, ("── forked here from %s ──"):format(from), "SeriForkMark")
  add(b, "")
  return b
end

---What the running task waits for, as the chat's last line (`⋯ retrying 1/2`).
---@param text string
---@return seri.Block
function M.activity(text)
  local b = block()
  add(b, "⋯ " .. text, "SeriActivity")
  return b
end

---A prompt waiting for the running task to end.
---@param text string
---@param key string? the key that takes it back
---@return seri.Block
function M.queued(text, key)
  local b = block()
  heading(b, "## You (queued)", "SeriQueued")
  for _, line in ipairs(split(text)) do
    add(b, line)
  end
  local hint = "sent when the task ends"
  if key then
    hint = hint .. (" · %s takes it back into the input"):format(key)
  end
  add(b, hint, "SeriNotice")
  add(b, "")
  return b
end

---@class seri.CardKey
---@field key string
---@field label string

-- The longest excerpt of a change a card shows; the diff view has the rest.
local PREVIEW_LINES = 12

---The lines of a unified diff of `before` and `after`, without file headers.
---@param before string
---@param after string
---@return string[]
function M.unified(before, after)
  local diff = (vim.text and vim.text.diff or vim.diff)(before, after, { ctxlen = 1 })
  local lines = split(type(diff) == "string" and diff or "")
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
end

---@param list any
---@return string[]
local function strings(list)
  if type(list) ~= "table" then
    return {}
  end
  return vim.tbl_map(tostring, list)
end

---A command question's lines, as written: the command line and its cwd, the parts no
---rule allows (when it has several), why it is asked; or the workspace's rules it asks
---to use.
---@param question table
---@param line fun(text: string, group: string?)
local function command_details(question, line)
  local rules = strings(question.workspaceRules)
  for _, rule in ipairs(rules) do
    line("  rule: " .. rule, "SeriNotice")
  end
  if type(question.command) ~= "string" then
    return
  end
  for i, text in ipairs(split(question.command)) do
    line((i == 1 and "  $ " or "    ") .. text, "SeriTool")
  end
  line("  in " .. tostring(question.cwd or "."), "SeriNotice")
  local parts, unmatched = strings(question.parts), strings(question.unmatched)
  if #parts > 1 and #unmatched > 0 then
    line("  not allowed by a rule: " .. table.concat(unmatched, " · "), "SeriNotice")
  end
  if type(question.reason) == "string" and question.reason ~= "" then
    line("  asked because " .. question.reason, "SeriNotice")
  end
end

---A question the task waits on (`seri/approve`): what seri wants to do, an excerpt of
---the change, and the keys that answer it.
---@param question table the request's params
---@param keys seri.CardKey[]
---@return seri.Block
function M.card(question, keys)
  local b = block()
  local function line(text, group)
    add(b, M.CARD .. text, group)
    table.insert(b.marks, { line = #b.lines - 1, group = "SeriCard", end_col = #M.CARD })
  end
  line(tostring(question.message or "seri asks"), "SeriCardTitle")
  if question.kind == "write" then
    local preview
    if question.tooLarge then
      preview = { "(the file is too large to show the change)" }
    else
      preview = M.unified(question.current or "", question.proposed or "")
    end
    for i, text in ipairs(preview) do
      if i > PREVIEW_LINES then
        local more = M.count(#preview - PREVIEW_LINES, "line")
        line(("… %s more in the diff"):format(more), "SeriNotice")
        break
      end
      local first = text:sub(1, 1)
      local group = first == "+" and "SeriDiffAdd"
        or first == "-" and "SeriDiffDelete"
        or first == "@" and "SeriNotice"
        or nil
      line("  " .. text, group)
    end
  elseif question.kind == "memory" and question.path then
    line("  -> " .. tostring(question.path), "SeriNotice")
  elseif question.kind == "command" then
    command_details(question, line)
  elseif question.kind == "mcp" and type(question.arguments) == "table" then
    -- The arguments exactly as they would be sent: one line per argument, its value as
    -- JSON (nothing concealed, nothing cut).
    local names = vim.tbl_keys(question.arguments)
    table.sort(names)
    for _, name in ipairs(names) do
      line(("  %s: %s"):format(name, vim.json.encode(question.arguments[name])), "SeriNotice")
    end
  end
  local hints = vim.tbl_map(function(k)
    return k.key .. " " .. k.label
  end, keys)
  line(table.concat(hints, " · "), "SeriCardKeys")
  add(b, "")
  return b
end

return M
