-- Questions a task waits on (`seri/approve`: a write, a memory line, running the checks),
-- shown as cards in the chat until answered or withdrawn, with the change to review in
-- a diff.
--
-- Neovim runs a server request's handler in a coroutine: the handler yields until the
-- user answers (or the server withdraws the question with `$/cancelRequest`), and the
-- editor goes on meanwhile.

local config = require("seri.config")

local M = {}

---@class seri.Question
---@field id string? the request's id (`requestId`), named by `$/cancelRequest`
---@field root string the project asking
---@field params table the request's params
---@field resolve fun(answer: table|string) ends the wait
---@field diff {tab: integer, bufs: integer[]}? the diff view, while open

---@type seri.Question[] waiting, oldest first
M.questions = {}

-- What the handler returns for a question the server took back.
local WITHDRAWN = "withdrawn"

---The questions waiting in a project, oldest first.
---@param root string?
---@return seri.Question[]
function M.pending(root)
  return vim.tbl_filter(function(q)
    return q.root == root
  end, M.questions)
end

---@param root string
local function changed(root)
  local project = require("seri.client").projects[root]
  require("seri.chat").on_questions(root)
  if project then
    require("seri.client").emit_status(project)
  end
end

---@class seri.Answer
---@field name "allow"|"allow_session"|"deny"|"never"
---@field choice string
---@field label string

-- Which choice each answer key gives, by the choice's words.
local NAMES = {
  ["Allow"] = "allow",
  ["Allow once"] = "allow",
  ["Remember"] = "allow",
  ["Use these rules"] = "allow",
  ["Allow for this session"] = "allow_session",
  ["Allow this tool for the session"] = "allow_session",
  ["Deny"] = "deny",
  ["Don't remember"] = "deny",
  ["Don't use them"] = "deny",
  ["Not now"] = "deny",
  ["Never for this project"] = "never",
}

---The name of the answer `choice` gives: a command's "Allow `npm test` for this session"
---is the session's allow too.
---@param choice string
---@return string?
local function name_of(choice)
  if NAMES[choice] then
    return NAMES[choice]
  end
  if choice:match("^Allow .+ for this session$") then
    return "allow_session"
  end
  return nil
end

-- The kinds whose Deny asks for a note for the model first.
local NOTED = { write = true, command = true }

---The answers of a question, with the key of each (keys set to false are left out).
---@param q seri.Question
---@return {key: string, name: string, choice: string, label: string}[]
function M.answers(q)
  local keys = config.options.keymaps
  local list = {}
  local choices = type(q.params.choices) == "table" and q.params.choices or {}
  local has_allow = false
  for _, choice in ipairs(choices) do
    has_allow = has_allow or name_of(choice) == "allow"
  end
  local named = {} -- one choice per key
  for _, choice in ipairs(choices) do
    local name = name_of(choice)
    local label = choice
    if name == "deny" and NOTED[q.params.kind] and choice == "Deny" then
      label = choice .. "…" -- a note for the model is asked
    end
    if name and named[name] then
      name = nil
    end
    if name then
      named[name] = true
    end
    if name and keys[name] then
      table.insert(list, { key = keys[name], name = name, choice = choice, label = label })
    end
    -- The checks offer no plain Allow: the allow key gives what there is.
    if name == "allow_session" and not has_allow and keys.allow then
      table.insert(list, { key = keys.allow, name = "allow", choice = choice, label = choice })
    end
  end
  return list
end

---The keys a card shows: its answers, and the diff for a write.
---@param q seri.Question
---@return seri.CardKey[]
function M.card_keys(q)
  local shown, seen = {}, {}
  for _, answer in ipairs(M.answers(q)) do
    if not seen[answer.choice] then
      seen[answer.choice] = true
      table.insert(shown, { key = answer.key, label = answer.label })
    end
  end
  local diff = config.options.keymaps.diff
  if q.params.kind == "write" and diff and not q.params.tooLarge then
    table.insert(shown, { key = diff, label = "Diff" })
  end
  return shown
end

-- The diff view's own key, besides the answers: its mapping and its hint in the bar.
local CLOSE_DIFF = { key = "q", hint = "close", desc = "seri: close the diff" }

---@param q seri.Question
local function close_diff(q)
  local view = q.diff
  q.diff = nil
  if not view then
    return
  end
  if vim.api.nvim_tabpage_is_valid(view.tab) then
    if #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd.tabclose(vim.api.nvim_tabpage_get_number(view.tab))
    end
  end
  for _, buf in ipairs(view.bufs) do
    if vim.api.nvim_buf_is_valid(buf) then
      vim.api.nvim_buf_delete(buf, { force = true })
    end
  end
end

---Stop waiting on `q` with `answer`.
---@param q seri.Question
---@param answer table|string
local function finish(q, answer)
  for i, other in ipairs(M.questions) do
    if other == q then
      table.remove(M.questions, i)
      break
    end
  end
  close_diff(q)
  q.resolve(answer)
  changed(q.root)
end

---Answer `q` with `choice` (a note goes with a write's Deny, asked first).
---@param q seri.Question
---@param answer {name: string, choice: string}
function M.answer(q, answer)
  if not vim.tbl_contains(M.questions, q) then
    return
  end
  if answer.name ~= "deny" or not NOTED[q.params.kind] or answer.choice ~= "Deny" then
    finish(q, { choice = answer.choice })
    return
  end
  vim.ui.input({ prompt = "Deny: tell seri why (optional): " }, function(note)
    if note == nil or not vim.tbl_contains(M.questions, q) then
      return -- cancelled: the question stays
    end
    local result = { choice = answer.choice }
    if vim.trim(note) ~= "" then
      result.note = note
    end
    finish(q, result)
  end)
end

---Answer `q` by the name of its answer (`allow`, `allow_session`, `deny`, `never`); false when
---the question has no such answer.
---@param q seri.Question
---@param name string
---@return boolean
function M.answer_by_name(q, name)
  for _, answer in ipairs(M.answers(q)) do
    if answer.name == name then
      M.answer(q, answer)
      return true
    end
  end
  return false
end

---The lines of `text`, without the empty one after a final newline.
---@param text string?
---@return string[]
local function text_lines(text)
  local lines = vim.split(text or "", "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
end

---A read-only scratch buffer holding `lines` (one side of a diff), wiped once hidden.
---@param name string
---@param lines string[]
---@param filetype string?
---@return integer
local function view_buffer(name, lines, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

M.text_lines = text_lines

local diff_count = 0

---A new tab page showing two texts of `path` side by side in diff mode, in read-only
---scratch buffers named `seri://<kind>/<n>/<side>/<path>` (the file's filetype).
---@param kind string `diff`, `apply`
---@param path string
---@param left {[1]: string, [2]: string[]} its side's name and lines
---@param right {[1]: string, [2]: string[]}
---@return {tab: integer, left: integer, right: integer, bufs: integer[]}
function M.diff_tab(kind, path, left, right)
  diff_count = diff_count + 1
  local filetype = vim.filetype.match({ filename = path })
  local prefix = ("seri://%s/%d/"):format(kind, diff_count)
  local left_buf = view_buffer(prefix .. left[1] .. "/" .. path, left[2], filetype)
  local right_buf = view_buffer(prefix .. right[1] .. "/" .. path, right[2], filetype)
  vim.cmd("tabnew")
  local tab = vim.api.nvim_get_current_tabpage()
  local scratch = vim.api.nvim_get_current_buf()
  local left_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(left_win, left_buf)
  if vim.api.nvim_buf_is_valid(scratch) and scratch ~= left_buf then
    pcall(vim.api.nvim_buf_delete, scratch, { force = true })
  end
  vim.cmd("diffthis")
  vim.cmd("rightbelow vsplit")
  local right_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(right_win, right_buf)
  vim.cmd("diffthis")
  return { tab = tab, left = left_win, right = right_win, bufs = { left_buf, right_buf } }
end

---Show the change a write question proposes: a tab page with the file as it is on the
---left and as it would be on the right, in diff mode; the card's keys answer from
---there, `q` closes it.
---@param q seri.Question
function M.show_diff(q)
  local p = q.params
  if p.kind ~= "write" then
    return
  end
  if p.tooLarge then
    require("seri.notice").say(("%s is too large to show the change"):format(p.path))
    return
  end
  if q.diff and vim.api.nvim_tabpage_is_valid(q.diff.tab) then
    vim.api.nvim_set_current_tabpage(q.diff.tab)
    return
  end
  local path = tostring(p.path or "file")
  local view = M.diff_tab(
    "diff",
    path,
    { "current", text_lines(p.current) },
    { "proposed", text_lines(p.proposed) }
  )
  local left, right, proposed = view.left, view.right, view.bufs[2]
  q.diff = { tab = view.tab, bufs = view.bufs }
  local hints = vim.tbl_map(function(k)
    return k.key .. " " .. k.label
  end, vim.tbl_filter(function(k)
    return k.label ~= "Diff"
  end, M.card_keys(q)))
  table.insert(hints, CLOSE_DIFF.key .. " " .. CLOSE_DIFF.hint)
  local before = p.current == nil and "new file" or "now"
  vim.wo[left].winbar = (" %s: %s"):format(before, path:gsub("%%", "%%%%"))
  vim.wo[right].winbar = (" seri proposes: %s%%=%s "):format(
    path:gsub("%%", "%%%%"),
    table.concat(hints, " · ")
  )
  for _, buf in ipairs(q.diff.bufs) do
    for _, answer in ipairs(M.answers(q)) do
      vim.keymap.set("n", answer.key, function()
        M.answer(q, answer)
      end, { buffer = buf, nowait = true, desc = "seri: " .. answer.choice })
    end
    vim.keymap.set("n", CLOSE_DIFF.key, function()
      close_diff(q)
    end, { buffer = buf, nowait = true, desc = CLOSE_DIFF.desc })
  end
  local line = math.max(1, math.min(tonumber(p.line) or 1, vim.api.nvim_buf_line_count(proposed)))
  vim.api.nvim_win_set_cursor(right, { line, 0 })
end

---The `seri/approve` handler: show the question, wait for the answer.
---@param project seri.Project
---@param params table
---@return any result
---@return lsp.ResponseError? error
function M.ask(project, params)
  if type(params) ~= "table" then
    return vim.NIL
  end
  local co, main = coroutine.running()
  if co == nil or main then
    -- A Neovim that cannot wait on a server request: ask on the command line.
    local choices = type(params.choices) == "table" and params.choices or {}
    local items = { tostring(params.message) }
    for i, choice in ipairs(choices) do
      table.insert(items, ("%d. %s"):format(i, choice))
    end
    local picked = choices[vim.fn.inputlist(items)]
    return picked and { choice = picked } or vim.NIL
  end
  ---@type seri.Question
  local q = {
    id = type(params.requestId) == "string" and params.requestId or nil,
    root = project.root,
    params = params,
    resolve = function(answer)
      vim.schedule(function()
        coroutine.resume(co, answer)
      end)
    end,
  }
  table.insert(M.questions, q)
  changed(project.root)
  local answer = coroutine.yield()
  if answer == WITHDRAWN then
    local cancelled = vim.lsp.protocol.ErrorCodes.RequestCancelled
    return nil, vim.lsp.rpc.rpc_response_error(cancelled, "the question was withdrawn")
  end
  return answer
end

---The server took a question back (`$/cancelRequest`): its card goes away. A request
---without an id (a server before `requestId`) is matched by its project: each of its
---questions goes, as only a cancelled task withdraws them.
---@param project seri.Project
---@param id any
function M.withdraw(project, id)
  local matched = vim.tbl_filter(function(q)
    return q.root == project.root and q.id == id
  end, M.questions)
  if #matched == 0 then
    matched = vim.tbl_filter(function(q)
      return q.root == project.root and q.id == nil
    end, M.questions)
  end
  for _, q in ipairs(matched) do
    finish(q, WITHDRAWN)
  end
end

---Every question of a project goes (its task ended, or its server stopped).
---@param root string
function M.withdraw_all(root)
  for _, q in ipairs(M.pending(root)) do
    finish(q, WITHDRAWN)
  end
end

return M
