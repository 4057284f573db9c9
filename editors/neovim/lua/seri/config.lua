-- Options of the seri plugin: defaults, merged with what `setup()` is given.

---@class seri.ChatOptions
---@field side "right"|"left"|"top"|"bottom" where the chat split opens
---@field size number columns (or lines for top/bottom); a value up to 1 is a fraction of the editor
---@field input_height integer lines of the prompt input under the chat
---@field page_size integer messages fetched per page of history
---@field open_on_prompt boolean open the chat (without moving the cursor) when a prompt is sent
---@field start_insert boolean start in insert mode in the input when the chat opens

---@class seri.StatusOptions
---@field spend boolean `status()` adds the session's spend (`$0.0213`, or tokens when no cost is reported)

---@class seri.Keymaps
---@field send string|false normal-mode key in the input that sends the prompt
---@field send_insert string|false insert-mode key in the input that sends the prompt
---@field cancel string|false key (normal and insert mode, chat and input) that cancels the task
---@field close string|false normal-mode key that closes the chat
---@field load_earlier string|false chat key that loads earlier messages (on their line)
---@field allow string|false chat and diff key: allow what seri asks (write, memory)
---@field allow_session string|false chat and diff key: allow it for the rest of the session
---@field deny string|false chat and diff key: deny it (a write asks for a note for the model)
---@field never string|false chat key: never for this project (the question about a workspace's MCP servers)
---@field diff string|false chat key: show the change seri asks to make, in a diff
---@field retry string|false chat key: send the last prompt again (`:SeriRetry`)
---@field fork string|false chat key: fork the session at the message under the cursor (`:SeriFork`)
---@field yank_code string|false chat key: yank the code block under the cursor
---@field insert_code string|false chat key: put the code block under the cursor below the cursor of the last code window
---@field apply_code string|false chat key: apply the code block under the cursor to its file (a diff to approve first)
---@field rewind_here string|false chat key: rewind to before the prompt under the cursor (it returns to the input)
---@field next_turn string|false chat key: the next heading (prompt, reply, recap)
---@field prev_turn string|false chat key: the previous heading
---@field drop_queued string|false chat key: take a queued prompt back into the input
---@field help string|false chat key: a float listing the chat's keys
---@field stop_command string|false chat key: stop the command under the cursor, or the one running (`:SeriStop`)

---@class seri.Options
---@field cmd string[]? the server command (stdio); nil: see `server_command()`
---@field python string|string[]|nil the Python 3.11+ that `:SeriInstall` installs the server with
---@field settings table initialization options sent to the server (provider, permissions, ...)
---@field root_markers string[] files or folders that mark a project root
---@field autostart boolean start the server for the project when Neovim opens
---@field attach_buffers boolean let the server see the project's file buffers (unsaved text, edits)
---@field chat seri.ChatOptions
---@field status seri.StatusOptions
---@field keymaps seri.Keymaps

local M = {}

---@type seri.Options
M.defaults = {
  settings = {},
  root_markers = { ".git", "AGENTS.md", ".seri" },
  autostart = true,
  attach_buffers = true,
  chat = {
    side = "right",
    size = 0.4,
    input_height = 4,
    page_size = 200,
    open_on_prompt = true,
    start_insert = false,
  },
  status = {
    spend = false,
  },
  keymaps = {
    send = "<CR>",
    send_insert = "<C-s>",
    cancel = "<C-c>",
    close = "q",
    load_earlier = "<CR>",
    allow = "a",
    allow_session = "A",
    deny = "d",
    never = "gN",
    diff = "D",
    retry = "gr",
    fork = "gb",
    yank_code = "gy",
    insert_code = "gp",
    apply_code = "ga",
    rewind_here = "gR",
    next_turn = "]]",
    prev_turn = "[[",
    drop_queued = "x",
    help = "?",
    stop_command = "gs",
  },
}

---@type seri.Options
M.options = vim.deepcopy(M.defaults)

local SIDES = { right = true, left = true, top = true, bottom = true }

---Merge user options over the defaults; lists (cmd, root_markers) are replaced, not merged.
---@param opts table?
---@return seri.Options
function M.set(opts)
  opts = opts or {}
  for _, key in ipairs({ "cmd", "settings", "root_markers", "chat", "status", "keymaps" }) do
    if opts[key] ~= nil and type(opts[key]) ~= "table" then
      error(("seri: `%s` must be a table, got %s"):format(key, type(opts[key])))
    end
  end
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  merged.cmd = opts.cmd and vim.deepcopy(opts.cmd) or nil
  merged.root_markers = opts.root_markers and vim.deepcopy(opts.root_markers)
    or vim.deepcopy(M.defaults.root_markers)
  if merged.cmd and #merged.cmd == 0 then
    error("seri: `cmd` must name the server command, e.g. { 'seri-lsp' }")
  end
  if not SIDES[merged.chat.side] then
    error(("seri: chat.side must be right, left, top or bottom, got %s"):format(merged.chat.side))
  end
  local page = merged.chat.page_size
  if type(page) ~= "number" or page < 1 or page % 1 ~= 0 then
    error(("seri: chat.page_size must be a whole number of at least 1, got %s"):format(page))
  end
  M.options = merged
  return merged
end

---The server command, and where it comes from: `cmd` when given ("cmd"), else the server
---`:SeriInstall` installed ("installed"), else `seri-lsp` on PATH ("PATH").
---@return string[] cmd
---@return "cmd"|"installed"|"PATH" source
function M.server_command()
  if M.options.cmd then
    return M.options.cmd, "cmd"
  end
  local installed = require("seri.install").command()
  if installed then
    return installed, "installed"
  end
  return { "seri-lsp" }, "PATH"
end

---Initialization options as the server must receive them: a JSON object, with no empty
---tables (Neovim would send those as `[]`, which is not an object).
---@param settings table
---@return table
function M.init_options(settings)
  local function clean(value)
    if type(value) ~= "table" or vim.islist(value) and #value > 0 then
      return value
    end
    local out = {}
    for key, item in pairs(value) do
      local cleaned = clean(item)
      if type(cleaned) ~= "table" or next(cleaned) ~= nil then
        out[key] = cleaned
      end
    end
    return out
  end
  local cleaned = clean(settings or {})
  if next(cleaned) == nil then
    return vim.empty_dict()
  end
  return cleaned
end

return M
