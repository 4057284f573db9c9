-- Context attached to a prompt: `@path` mentions of workspace files (`@path:3-7` for
-- lines of one), `#buffer` (the file last edited) and `#selection` (its last visual
-- selection), completed in the chat's input (an omnifunc, and sources for nvim-cmp and
-- blink.cmp when they are installed) together with the slash commands the server
-- advertises (`seri.slash`).
--
-- What a prompt mentions is sent in `seri.prompt`'s `context`: a file with unsaved
-- changes with its text, lines with their text; a saved file needs nothing more than its
-- `@path` in the prompt (the model reads it when it needs to).

local client = require("seri.client")

local M = {}

---@class seri.ContextEntry
---@field path string workspace-relative (absolute outside the project)
---@field startLine integer?
---@field endLine integer?
---@field text string?

---@class seri.CompleteItem
---@field word string what is inserted
---@field kind string "file", "context" or "command"
---@field info string? a description (a slash command's summary)

---The words that stand for context in a prompt, for completion.
---@type {word: string, info: string}[]
M.TOKENS = {
  { word = "#buffer", info = "the file you last edited (its text too, when unsaved)" },
  { word = "#selection", info = "the lines you last selected in it" },
}

---What typing a character in the chat's input completes: the input bar's word for it,
---and the help's.
---@type {char: string, hint: string, help: string}[]
M.TRIGGERS = {
  { char = "@", hint = "file", help = "a file" },
  {
    char = "#",
    hint = "buffer",
    help = table.concat(
      vim.tbl_map(function(token)
        return token.word
      end, M.TOKENS),
      " / "
    ),
  },
  { char = "/", hint = "command", help = "a command" },
}

---The characters that start a completion in the chat's input.
---@return string[]
function M.trigger_characters()
  return vim.tbl_map(function(trigger)
    return trigger.char
  end, M.TRIGGERS)
end

---The input bar's hints of what completes: `@ file`, `# buffer`, `/ command`.
---@return string[]
function M.trigger_hints()
  return vim.tbl_map(function(trigger)
    return trigger.char .. " " .. trigger.hint
  end, M.TRIGGERS)
end

-- The most files offered; a workspace may hold far more.
local MAX_FILES = 20000
-- How long a listing of the workspace's files is reused.
local FILES_TTL_MS = 5000
-- Folders never listed (without git to say what is ignored).
local SKIP = { [".git"] = true, node_modules = true, [".venv"] = true, __pycache__ = true }

---@type table<string, {at: integer, files: string[]}>
local listings = {}

---The workspace's files, relative to `root`: git's (tracked and untracked, not ignored)
---in a git work tree, else a walk of the folder.
---@param root string
---@return string[]
function M.files(root)
  local now = vim.uv.now()
  local cached = listings[root]
  if cached and now - cached.at < FILES_TTL_MS then
    return cached.files
  end
  local files = {}
  if vim.uv.fs_stat(root .. "/.git") and vim.fn.executable("git") == 1 then
    local ok, job = pcall(vim.system, {
      "git",
      "ls-files",
      "--cached",
      "--others",
      "--exclude-standard",
      "--deduplicate",
    }, { cwd = root, text = true })
    local done = ok and job:wait(2000) or nil
    if done and done.code == 0 then
      for line in (done.stdout or ""):gmatch("[^\n]+") do
        table.insert(files, line)
        if #files >= MAX_FILES then
          break
        end
      end
    end
  end
  if #files == 0 then
    for name, kind in
      vim.fs.dir(root, {
        depth = 12,
        skip = function(dir)
          return not SKIP[vim.fs.basename(dir)]
        end,
      })
    do
      if kind == "file" then
        table.insert(files, name)
        if #files >= MAX_FILES then
          break
        end
      end
    end
    table.sort(files)
  end
  listings[root] = { at = now, files = files }
  return files
end

---What to complete before the cursor: `@` a file, `#` a context token, `/` (the
---prompt's first word) a slash command.
---@param before string the line up to the cursor
---@param root string
---@param first_line boolean whether this is the input's first line
---@return integer? start 0-based byte where the completed word starts
---@return seri.CompleteItem[] items
function M.complete(before, root, first_line)
  local at, base = before:match("()@([^%s@]*)$")
  if at and (at == 1 or before:sub(at - 1, at - 1):match("[%s(]")) then
    local files = M.files(root)
    local found = base == "" and vim.list_slice(files, 1, 200)
      or vim.fn.matchfuzzy(files, base, { limit = 200 })
    return at - 1,
      vim.tbl_map(function(path)
        return { word = "@" .. path, kind = "file" }
      end, found)
  end
  local hash, token = before:match("()#(%a*)$")
  if hash and (hash == 1 or before:sub(hash - 1, hash - 1):match("%s")) then
    return hash - 1,
      vim.tbl_filter(function(item)
        return vim.startswith(item.word, "#" .. token)
      end, M.TOKENS)
  end
  local command = first_line and before:match("^%s*(/%S*)$")
  if command then
    local commands = require("seri.slash").matching(client.projects[root], command)
    return #before - #command,
      vim.tbl_map(function(slash)
        return { word = "/" .. slash.name, kind = "command", info = slash.summary }
      end, commands)
  end
  return nil, {}
end

---'omnifunc' of the chat's input: matches are asked for again as the word grows
---(files match fuzzily, so `@app` offers `src/app.py`).
---@param findstart integer
---@param base string the word to complete (taken out of the line meanwhile)
---@return integer|table
function M.omnifunc(findstart, base)
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local before = vim.api.nvim_get_current_line():sub(1, col) .. (findstart == 1 and "" or base)
  local start, items = M.complete(before, client.root_for(0), row == 1)
  if findstart == 1 then
    return start or -3 -- -3: nothing to complete here, and no message about it
  end
  local words = vim.tbl_map(function(item)
    return { word = item.word, kind = item.kind, menu = item.info, icase = 1 }
  end, items)
  return { words = words, refresh = "always" }
end

-- The buffer the user last worked in: what `#buffer` and `#selection` mean.
---@type integer?
M.last_buf = nil

---Remember the file buffer the user is in (the chat's own buffers are not files).
---@param buf integer
function M.track(buf)
  if client.file_of(buf) then
    M.last_buf = buf
  end
end

---@param path string absolute
---@param root string
---@return string
local function relative(path, root)
  if vim.startswith(path, root .. "/") then
    return path:sub(#root + 2)
  end
  return path
end

---@param path string absolute
---@return integer? a loaded buffer showing it
local function loaded_buffer(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and client.file_of(buf) == path then
      return buf
    end
  end
  return nil
end

---Lines `first`..`last` (1-based; all when nil) of a file: from its buffer when it is
---loaded (unsaved changes included), else from the disk.
---@param path string absolute
---@param first integer?
---@param last integer?
---@return string[]?
local function read_lines(path, first, last)
  local buf = loaded_buffer(path)
  if buf then
    local count = vim.api.nvim_buf_line_count(buf)
    return vim.api.nvim_buf_get_lines(buf, (first or 1) - 1, math.min(last or count, count), false)
  end
  local ok, lines = pcall(vim.fn.readfile, path, "", last or -1)
  if not ok then
    return nil
  end
  return vim.list_slice(lines, first or 1, last or #lines)
end

---A mention for lines of a file: `@src/app.py:3-7` (`@src/app.py:3` for one line).
---@param path string as shown (relative or absolute)
---@param first integer
---@param last integer
---@return string
function M.mention(path, first, last)
  return ("@%s:%d"):format(path, first) .. (last ~= first and ("-" .. last) or "")
end

---The last visual selection in the buffer the user last worked in, as a mention.
---@param root string
---@return string? mention
---@return string? why there is none
local function last_selection(root)
  local buf = M.last_buf
  local path = buf and client.file_of(buf)
  if not path then
    return nil, "#selection: select lines in a file first"
  end
  local first = vim.api.nvim_buf_get_mark(buf, "<")[1]
  local last = vim.api.nvim_buf_get_mark(buf, ">")[1]
  if first < 1 or last < first then
    return nil, ("#selection: nothing was selected in %s yet"):format(relative(path, root))
  end
  return M.mention(relative(path, root), first, last), nil
end

---The prompt as sent and its context: `#buffer` and `#selection` become mentions of
---what they stand for, and each mention of a file that exists becomes a context entry
---when there is text to send (lines of it, or a buffer with unsaved changes).
---@param text string
---@param root string
---@return string text
---@return seri.ContextEntry[] context
---@return string[] problems tokens that stand for nothing (said to the user)
function M.resolve(text, root)
  local problems = {}
  if text:match("^/%a") then
    return text, {}, problems -- a slash command takes no context
  end
  text = text:gsub("%f[%S]#buffer%f[^%w_-]", function()
    local path = M.last_buf and client.file_of(M.last_buf)
    if not path then
      table.insert(problems, "#buffer: open a file first")
      return nil
    end
    return "@" .. relative(path, root)
  end)
  text = text:gsub("%f[%S]#selection%f[^%w_-]", function()
    local mention, why = last_selection(root)
    if not mention then
      table.insert(problems, why)
    end
    return mention
  end)
  local context, seen = {}, {}
  for raw in (" " .. text):gmatch("[%s(]@([^%s@]+)") do
    local mention = raw:gsub("[,.;:!?)%]'\"]+$", "")
    local path, first, last = mention:match("^(.-):(%d+)%-(%d+)$")
    if not path then
      path, first = mention:match("^(.-):(%d+)$")
      last = first
    end
    path = path or mention
    first, last = tonumber(first), tonumber(last)
    local absolute = vim.startswith(path, "/") and path or (root .. "/" .. path)
    local stat = vim.uv.fs_stat(absolute)
    local buf = loaded_buffer(absolute)
    if not seen[mention] and (stat and stat.type == "file" or buf) then
      seen[mention] = true
      local entry = { path = path } ---@type seri.ContextEntry
      if first then
        entry.startLine, entry.endLine = first, math.max(first, last or first)
      end
      if first or (buf and vim.bo[buf].modified) then
        local lines = read_lines(absolute, entry.startLine, entry.endLine)
        if lines then
          entry.text = table.concat(lines, "\n")
          table.insert(context, entry)
        end
      end
    end
  end
  return text, context, problems
end

---`:'<,'>SeriSend [prompt]`: lines of the current buffer go to seri. With a prompt it is
---sent at once with the lines attached; without, the lines' mention is added to the
---chat's input to write the prompt around.
---@param first integer
---@param last integer
---@param prompt string
function M.send_selection(first, last, prompt)
  local buf = vim.api.nvim_get_current_buf()
  local path = client.file_of(buf)
  if not path then
    require("seri.notice").say(":SeriSend works in a file's buffer", vim.log.levels.WARN)
    return
  end
  local root = client.root_for(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, first - 1, last, false)
  local entry = {
    path = relative(path, root),
    startLine = first,
    endLine = last,
    text = table.concat(lines, "\n"),
  }
  local seri = require("seri")
  if vim.trim(prompt) ~= "" then
    seri.prompt(prompt, { context = { entry } })
    return
  end
  seri.open()
  require("seri.chat").add_to_input(M.mention(entry.path, first, last) .. " ", { inline = true })
  require("seri.chat").focus_input(true)
end

---Let nvim-cmp and blink.cmp offer completions in the chat's input, when they are
---installed (once).
local registered = false
function M.register_sources()
  if registered then
    return
  end
  registered = true
  local has_cmp, cmp = pcall(require, "cmp")
  if has_cmp and type(cmp.register_source) == "function" then
    cmp.register_source("seri", require("seri.cmp").new())
    pcall(cmp.setup.filetype, "seri_input", { sources = { { name = "seri" }, { name = "buffer" } } })
  end
  local has_blink, blink = pcall(require, "blink.cmp")
  if has_blink and type(blink.add_source_provider) == "function" then
    pcall(blink.add_source_provider, "seri", { name = "seri", module = "seri.blink" })
    pcall(blink.add_filetype_source, "seri_input", "seri")
  end
end

---Whether a completion plugin completes in the input (then the input does not start
---its own completion as `@`, `#` or `/` is typed).
---@return boolean
function M.engine_present()
  return package.loaded["cmp"] ~= nil or package.loaded["blink.cmp"] ~= nil
end

return M
