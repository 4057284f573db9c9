-- `:SeriContext`: what fills the open session's context window, in a float. One bar per
-- part (`seri.session.context`), all drawn to one scale that ends at the compaction
-- point (or at the estimate, once it is past it), with `│` where compaction starts; the
-- total last. `q` or <Esc> closes it.

local client = require("seri.client")

local M = {}

-- The cells a bar may take.
M.BAR_WIDTH = 30

-- The longest name shown; a longer one is cut with "…".
local NAME_WIDTH = 28

local EIGHTHS = { "▏", "▎", "▍", "▌", "▋", "▊", "▉" }

---What each kind of part is called, and its highlight group.
M.KINDS = {
  system = { "System prompt", "SeriContextSystem" },
  agents = { "AGENTS.md", "SeriContextAgents" },
  rule = { "Rule", "SeriContextRule" },
  memory = { "Memory", "SeriContextMemory" },
  recap = { "Recap", "SeriContextRecap" },
  globRules = { "Glob rules", "SeriContextGlobRules" },
  checks = { "Check results", "SeriContextChecks" },
  user = { "Your prompts", "SeriContextUser" },
  assistant = { "Replies and thinking", "SeriContextAssistant" },
  toolCalls = { "Tool calls", "SeriContextToolCalls" },
  toolResult = { "Tool results", "SeriContextToolResult" },
}

---@param n number
---@return string
local function grouped(n)
  local digits = tostring(math.floor(tonumber(n) or 0))
  return (digits:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

---A path inside `root` as relative to it, one in the home folder with `~`.
---@param path string
---@param root string
---@return string
local function short_path(path, root)
  if root ~= "" and vim.startswith(path, root .. "/") then
    return path:sub(#root + 2)
  end
  return vim.fn.fnamemodify(path, ":~")
end

---How the float names a part: `System prompt`, `rule: .seri/rules/style.md`, `read_file
---results`.
---@param part {kind: string, name: string}
---@param root string the project
---@return string
function M.label(part, root)
  local known = M.KINDS[part.kind]
  if part.kind == "agents" then
    return short_path(part.name, root)
  elseif part.kind == "rule" or part.kind == "memory" then
    return known[1]:lower() .. ": " .. short_path(part.name, root)
  elseif part.kind == "toolResult" then
    return part.name .. " results"
  elseif part.kind == "mcpTools" then
    return "MCP tools of " .. part.name
  end
  return known and known[1] or part.name
end

---A bar of `cells` cells (eighths shown), at least a sliver for anything above nothing.
---@param cells number
---@return string
local function bar(cells)
  local full = math.floor(cells)
  local eighths = math.floor((cells - full) * 8)
  local text = ("█"):rep(full)
  if eighths > 0 then
    text = text .. EIGHTHS[eighths]
  elseif full == 0 and cells > 0 then
    text = EIGHTHS[1]
  end
  return text
end

---@param text string
---@param width integer
---@return string
local function fit(text, width)
  if vim.fn.strdisplaywidth(text) > width then
    text = vim.fn.strcharpart(text, 0, width - 1) .. "…"
  end
  return text .. (" "):rep(width - vim.fn.strdisplaywidth(text))
end

---@class seri.ContextLine
---@field text string
---@field marks {group: string, first: integer, last: integer}[] byte columns, end exclusive

---The float's lines for a `seri.session.context` answer.
---@param context table
---@param root string the project, for short paths
---@return seri.ContextLine[]
function M.lines(context, root)
  local window = tonumber(context.contextWindow) or 0
  local at = tonumber(context.compactAt) or 0
  local estimate = tonumber(context.estimateTokens) or 0
  local lines = {}
  local function line(text, marks)
    table.insert(lines, { text = text, marks = marks or {} })
  end
  local share = window > 0 and math.floor(estimate * 100 / window + 0.5) or 0
  local starts = window > 0 and math.floor(at * 100 / window + 0.5) or 0
  line(
    (" %s of %s tokens (%d%%); compaction starts at %s (%d%%)."):format(
      grouped(estimate),
      grouped(window),
      share,
      grouped(at),
      starts
    )
  )
  line("")
  -- One scale for every bar: up to the compaction point, or the estimate once past it.
  local scale = math.max(estimate, at, 1)
  local mark_at = math.floor(at / scale * M.BAR_WIDTH + 0.5)
  local function row(name, tokens, group, percent)
    local cells = tokens / scale * M.BAR_WIDTH
    local drawn = bar(cells)
    local chars = vim.fn.strchars(drawn)
    -- The mark goes in its column: after the bar when the bar ends short of it.
    local before = vim.fn.strcharpart(drawn, 0, mark_at)
    local after = vim.fn.strcharpart(drawn, mark_at)
    local pad_before = (" "):rep(math.max(0, mark_at - chars))
    local pad_after = (" "):rep(M.BAR_WIDTH - math.max(chars, mark_at))
    local head = " " .. fit(name, NAME_WIDTH) .. "  "
    local text = head .. before .. pad_before .. "│" .. after .. pad_after
    local numbers = ("  %9s"):format(grouped(tokens))
      .. (percent and ("  %3d%%"):format(percent) or "")
    local marks = {}
    if #before > 0 then
      table.insert(marks, { group = group, first = #head, last = #head + #before })
    end
    local mark = #head + #before + #pad_before
    table.insert(marks, { group = "SeriContextMark", first = mark, last = mark + #"│" })
    if #after > 0 then
      local first = mark + #"│"
      table.insert(marks, { group = group, first = first, last = first + #after })
    end
    line(text .. numbers, marks)
  end
  local parts = type(context.parts) == "table" and context.parts or {}
  for _, part in ipairs(parts) do
    local tokens = tonumber(part.tokens) or 0
    local known = M.KINDS[part.kind]
    local percent = estimate > 0 and math.floor(tokens * 100 / estimate + 0.5) or 0
    row(M.label(part, root), tokens, known and known[2] or "SeriContextOther", percent)
  end
  local billed = tonumber(context.lastBilledTokens)
  local local_tokens = tonumber(context.localTokens) or 0
  if billed and billed > local_tokens then
    local beyond = billed - local_tokens
    row(
      "billed beyond the parts",
      beyond,
      "SeriContextOther",
      math.floor(beyond * 100 / billed + 0.5)
    )
  end
  -- As wide as a row with its share: the name, the bar and its mark, the numbers.
  line(" " .. ("─"):rep(NAME_WIDTH + 2 + M.BAR_WIDTH + 1 + 11 + 6))
  row("total", estimate, "SeriContextTotal", nil)
  line("")
  local keep = tonumber(context.keepTokens) or 0
  line(
    (" │ compaction starts at %s tokens; it keeps up to %s token%s of the newest messages."):format(
      grouped(at),
      grouped(keep),
      keep == 1 and "" or "s"
    )
  )
  line(" q or <Esc> closes")
  return lines
end

local ns = vim.api.nvim_create_namespace("seri_context")

---Show `lines` in a float over the editor.
---@param lines seri.ContextLine[]
---@return integer buf
---@return integer win
local function float(lines)
  local texts = vim.tbl_map(function(l)
    return l.text
  end, lines)
  local width = 0
  for _, text in ipairs(texts) do
    width = math.max(width, vim.fn.strdisplaywidth(text) + 1)
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, texts)
  for i, l in ipairs(lines) do
    for _, mark in ipairs(l.marks) do
      vim.api.nvim_buf_set_extmark(buf, ns, i - 1, mark.first, {
        end_col = mark.last,
        hl_group = mark.group,
      })
    end
  end
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "seri_context"
  width = math.min(width, vim.o.columns - 4)
  local height = math.min(#texts, vim.o.lines - 4)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    style = "minimal",
    border = "rounded",
    title = " seri: what fills the context ",
    title_pos = "center",
  })
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, function()
      if vim.api.nvim_win_is_valid(win) then
        vim.api.nvim_win_close(win, true)
      end
    end, { buffer = buf, nowait = true, desc = "Close" })
  end
  return buf, win
end

---Ask the project's server what fills the open session's context and show it in a float.
---@param project seri.Project
---@param done fun(buf: integer?, win: integer?)? called once shown (nil, nil: it failed)
function M.open(project, done)
  client.execute(project, "seri.session.context", nil, function(err, result)
    if err or type(result) ~= "table" then
      local why = err and err.message or "no answer"
      require("seri.notice").say("what fills the context: " .. why, vim.log.levels.ERROR)
      if done then
        done(nil, nil)
      end
      return
    end
    local buf, win = float(M.lines(result, project.root))
    if done then
      done(buf, win)
    end
  end)
end

return M
