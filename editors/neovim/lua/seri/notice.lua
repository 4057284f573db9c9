-- What the plugin tells the user, where the user looks: a line in the chat when the chat
-- is shown, else one short line on the command line (never a hit-enter prompt: notices
-- of the same moment are joined, and a long one is cut to the room there is; the chat
-- keeps the whole text). The server's words for its commands become the editor's.

local M = {}

-- The server's messages name its protocol commands; a Neovim user types these instead.
local COMMANDS = {
  ["seri.cancel"] = ":SeriCancel or <C-c>",
  ["seri.compact"] = ":SeriCompact",
  ["seri.rewind"] = ":SeriRewind",
  ["seri.checkpoints"] = ":SeriRewind",
  ["seri.maxTurns"] = ":SeriMaxTurns",
  ["seri.session.list"] = ":SeriResume",
  ["seri.session.resume"] = ":SeriResume",
  ["seri.session.new"] = ":SeriNew",
  ["seri.session.fork"] = ":SeriFork",
  ["seri.session.usage"] = ":SeriCost",
  ["seri.session.context"] = ":SeriContext",
  ["seri.session.search"] = ":SeriSearch",
  ["seri.session.rename"] = ":SeriRename",
  ["seri.session.delete"] = ":SeriDelete",
  ["seri.session.export"] = ":SeriExport",
  ["seri.session.import"] = ":SeriImport",
  ["seri.clear"] = ":SeriClear",
  ["seri.trajectory"] = ":SeriTrajectory",
}

---`text` with the server's command names (`seri.cancel`) replaced by the editor's
---(`:SeriCancel or <C-c>`); other words (`seri.db`) stay.
---@param text string
---@return string
function M.editor_words(text)
  return (tostring(text):gsub("seri%.[%a.]*%a", function(name)
    return COMMANDS[name]
  end))
end

---@type {text: string, level: integer}[] notices of this moment, not shown yet
local queued = {}

---The room on the command line before Neovim asks to press Enter.
---@return integer
local function room()
  local space = tonumber(vim.v.echospace) or vim.o.columns - 12
  return math.max(20, space + math.max(0, vim.o.cmdheight - 1) * vim.o.columns)
end

---`text` on one line, cut to `width` display cells.
---@param text string
---@param width integer
---@return string
function M.one_line(text, width)
  text = vim.trim((text:gsub("%s*\n%s*", " ")))
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local cut = vim.fn.strcharpart(text, 0, width - 1)
  while vim.fn.strdisplaywidth(cut) > width - 1 do
    cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - 1)
  end
  return cut .. "…"
end

local function flush()
  local items = queued
  queued = {}
  if #items == 0 then
    return
  end
  local level, texts = vim.log.levels.INFO, {}
  for _, item in ipairs(items) do
    level = math.max(level, item.level)
    table.insert(texts, item.text)
  end
  vim.notify(M.one_line("seri: " .. table.concat(texts, " · "), room()), level)
end

---Tell the user `text`: in the chat when it is shown (and kept there for when it is
---opened otherwise), else also on the command line, on one line.
---@param text string
---@param level integer? vim.log.levels (INFO by default)
---@param opts {report?: boolean, action?: string, turn_end?: boolean}? how the chat shows it (`seri.chat.notice`)
function M.say(text, level, opts)
  level = level or vim.log.levels.INFO
  text = M.editor_words(text):gsub("^seri: ", "")
  local chat = require("seri.chat")
  local shown = chat.is_open()
  chat.notice(text, level, opts)
  if shown then
    return
  end
  table.insert(queued, { text = text, level = level })
  if #queued == 1 then
    vim.schedule(flush)
  end
end

return M
