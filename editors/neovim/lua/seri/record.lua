-- The record of the turns a compaction replaced: the divider above a recap opens it.
-- The conversation no longer holds them (the model never sees them again), the
-- session's recordings do: `seri.trajectory.get {compacted = true}` answers the events
-- of those turns, which are shown here as written (prompts, tool calls with their
-- arguments, results, edits), read-only, in a scratch buffer.

local M = {}

---@param value any
---@return string
local function shown(value)
  if type(value) == "string" then
    return value
  end
  if type(value) == "table" and value.elided then
    return ("(elided: %s bytes)"):format(tostring(value.originalBytes))
  end
  return vim.json.encode(value)
end

---@param lines string[]
---@param text string
---@param indent string
local function add_text(lines, text, indent)
  text = text:gsub("\r\n", "\n"):gsub("\r", "\n")
  for _, line in ipairs(vim.split(text, "\n", { plain = true })) do
    table.insert(lines, indent .. line)
  end
end

---One event's lines.
---@param lines string[]
---@param event {kind: string, createdAt: string?, data: table}
local function add_event(lines, event)
  local d = type(event.data) == "table" and event.data or {}
  local kind = event.kind
  if kind == "task_started" then
    table.insert(lines, "")
    table.insert(lines, ("## Prompt (%s)"):format(event.createdAt or ""))
    add_text(lines, shown(d.prompt or ""), "")
  elseif kind == "tool_call" then
    table.insert(lines, ("→ %s %s  [%s]"):format(shown(d.name), shown(d.arguments), shown(d.id)))
  elseif kind == "tool_result" then
    local head = d.isError and "← %s failed  [%s]" or "← %s  [%s]"
    table.insert(lines, head:format(shown(d.name), shown(d.id)))
    add_text(lines, shown(d.content or ""), "    ")
  elseif kind == "edit" then
    local line = ("edit %s: %s"):format(shown(d.path), shown(d.outcome))
    if d.reason ~= nil and d.reason ~= vim.NIL then
      line = line .. " (" .. shown(d.reason) .. ")"
    end
    table.insert(lines, line)
  elseif kind == "denial" then
    table.insert(lines, ("denied %s %s: %s"):format(shown(d.tool), shown(d.path), shown(d.reason)))
  elseif kind == "task_ended" then
    local line = ("task %s after %s turn(s)"):format(shown(d.status), shown(d.turns))
    if d.error ~= nil and d.error ~= vim.NIL then
      line = line .. ": " .. shown(d.error)
    end
    table.insert(lines, line)
  elseif kind == "compaction" then
    table.insert(lines, "")
    table.insert(
      lines,
      ("── compacted here (%s): %s messages ──"):format(shown(d.trigger), shown(d.evicted))
    )
  elseif kind ~= "usage" and kind ~= "opened" and kind ~= "checkpoint" then
    table.insert(lines, ("%s %s"):format(kind, vim.json.encode(d)))
  end
end

---The buffer's lines for a `seri.trajectory.get {compacted = true}` answer.
---@param result table
---@return string[]
function M.lines(result)
  local events = type(result.events) == "table" and result.events or {}
  if #events == 0 then
    return {
      "Nothing was recorded of the turns this recap replaced (recording was off then, or",
      "the session is a fork or an import: its recordings stay with its source).",
    }
  end
  local lines = {
    ("# Before the compaction: the record of session %s"):format(shown(result.sessionId)),
    "The turns the recap replaced, as recorded; the model no longer sees them.",
  }
  for _, event in ipairs(events) do
    add_event(lines, event)
  end
  return lines
end

---Open the record of the turns the session's recap replaced in a scratch buffer.
---@param session_id string?
function M.open_compacted(session_id)
  local client = require("seri.client")
  local project = client.current()
  if not project then
    return
  end
  local args = { compacted = true }
  if session_id then
    args.sessionId = session_id
  end
  client.execute(project, "seri.trajectory.get", args, function(err, result)
    if err or type(result) ~= "table" then
      local why = err and err.message or "no answer"
      require("seri.notice").say("Could not read the record: " .. why, vim.log.levels.ERROR)
      return
    end
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.lines(result))
    vim.bo[buf].modifiable = false
    vim.bo[buf].bufhidden = "wipe"
    pcall(vim.api.nvim_buf_set_name, buf, "seri://record/" .. shown(result.sessionId))
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, buf)
    vim.b[buf].seri_record = true
  end)
end

return M
