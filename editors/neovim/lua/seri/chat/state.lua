-- What the chat shows and where: the one state table every part of the chat reads, the
-- namespaces of its marks, and the windows showing it.

local M = {}

M.CHAT_NAME = "seri://chat"
M.INPUT_NAME = "seri://input"

---@class seri.ChatNamespaces
---@field text integer highlights of the drawn lines
---@field calls integer marks on tool-call lines, so a result arriving later goes right under its call
---@field frames integer the frames drawn around fenced code blocks
---@field ids integer marks on the first line of each stored message (their ids in `state.mark_ids`)
---@field actions integer marks over the lines of a notice that acts on <CR> (`state.actions`)
M.ns = {
  text = vim.api.nvim_create_namespace("seri_chat"),
  calls = vim.api.nvim_create_namespace("seri_chat_calls"),
  frames = vim.api.nvim_create_namespace("seri_chat_frames"),
  ids = vim.api.nvim_create_namespace("seri_chat_ids"),
  actions = vim.api.nvim_create_namespace("seri_chat_actions"),
}

---@class seri.ChatState
---@field buf integer?
---@field input integer?
---@field root string? the project shown
---@field session seri.Session?
---@field reason string? why the session was opened
---@field messages seri.Message[] stored messages shown, oldest first
---@field seen table<integer, boolean> ids of `messages`
---@field has_more boolean older messages exist on the server
---@field loaded boolean
---@field load_token table? the `seri.session.get` whose answer is awaited
---@field backlog table[] `seri/message` params that arrived while loading
---@field stream string text of the reply in progress
---@field stored_end integer lines before the streamed part
---@field last_role string? role of the last stored block
---@field load_line integer? 0-based line of "load earlier messages"
---@field call_marks table<string, integer> extmark on each tool call's line, by call id
---@field tail_items {first: integer, last: integer, question?: seri.Question, queued?: integer}[] 0-based lines of cards and queued prompts
---@field highlighted boolean its prose is rendered as markdown (`seri.markdown`)
---@field notices seri.ChatNotice[] the plugin's lines, by the message they follow
---@field mark_ids table<integer, integer> message id of each mark in `ns.ids`
---@field actions table<integer, string> what <CR> does on the lines of each mark in `ns.actions`
---@field recap_lines {first: integer, last: integer, top: integer?}? 1-based lines of the recap's fold (`top`: its divider's first line)
---@field fork_origin {session: string, id: string, title: string?}? the session the open fork came from
---@field target {session: string, id: integer, word: string?}? a message to put the cursor on once its session is shown (`reveal`)
M.state = {
  mark_ids = {},
  actions = {},
  call_marks = {},
  notices = {},
  tail_items = {},
  highlighted = false,
  messages = {},
  seen = {},
  has_more = false,
  loaded = false,
  backlog = {},
  stream = "",
  stored_end = 0,
}

---@class seri.ChatNotice
---@field text string
---@field level integer? vim.log.levels
---@field after integer? the id of the message it follows
---@field session string? the session it was said in
---@field report boolean? a report (`/cost`, `/context`): aligned lines, shown as they are
---@field action string? what <CR> on it does: "recap" opens the recap
---@field turn_end boolean? says how a task ended (the stored `turnEnded` after the same message is not drawn again)
---@field compacted boolean? said before a compaction: drawn only while its message is shown

---@param buf integer?
---@return boolean
function M.valid(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf)
end

---@return integer[] windows of the current tab page showing the chat or its input
function M.windows()
  local wins = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if buf == M.state.buf or buf == M.state.input then
      table.insert(wins, win)
    end
  end
  return wins
end

---The window of the current tab page showing `buf`.
---@param buf integer?
---@return integer?
function M.window_of(buf)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  return nil
end

---The project the chat shows.
---@return seri.Project?
function M.shown_project()
  local root = M.state.root
  return root and require("seri.client").projects[root] or nil
end

return M
