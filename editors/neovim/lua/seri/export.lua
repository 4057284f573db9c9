-- Carrying sessions (`:SeriExport`, `:SeriImport`): the open session written to a file
-- as a markdown transcript or a JSON bundle (`seri.session.export`, paths made relative
-- and secrets redacted by the server), and a bundle read back as a new session
-- (`seri.session.import`), which the chat then opens.

local chat = require("seri.chat")
local client = require("seri.client")
local notice = require("seri.notice")

local M = {}

-- The format of an export, by the file's extension.
M.FORMATS = { md = "markdown", markdown = "markdown", json = "json" }

-- The largest bundle the server imports.
local MAX_IMPORT = 64 * 1024 * 1024

---@param text string
local function fail(text)
  notice.say(text, vim.log.levels.ERROR)
end

---The full path of what the user typed (`~`, `%` and environment variables expanded).
---@param file string
---@return string
local function full_path(file)
  return vim.fs.normalize(vim.fn.fnamemodify(vim.fn.expand(vim.trim(file)), ":p"))
end

---Write `text` to `path` whole or not at all: into a file beside it, then renamed over
---it. Returns nil, or why it failed.
---@param path string
---@param text string
---@return string? problem
function M.write_atomic(path, text)
  local temp = ("%s.%d.seri-tmp"):format(path, vim.uv.os_getpid())
  local fd, err = vim.uv.fs_open(temp, "w", tonumber("644", 8))
  if not fd then
    return err
  end
  local written, werr = vim.uv.fs_write(fd, text)
  local synced, serr = vim.uv.fs_fsync(fd)
  vim.uv.fs_close(fd)
  local renamed, rerr = nil, nil
  if written == #text and synced then
    renamed, rerr = vim.uv.fs_rename(temp, path)
  end
  if not renamed then
    vim.uv.fs_unlink(temp)
    return werr or serr or rerr or ("only %d of %d bytes were written"):format(written or 0, #text)
  end
  return nil
end

---Export the open session of `project` to `file`, the format named by its extension
---(`.md`: a transcript to read; `.json`: a bundle to import). An existing file is
---replaced only with `opts.force` (`:SeriExport!`).
---@param project seri.Project
---@param file string
---@param opts {force?: boolean}?
function M.export(project, file, opts)
  if vim.trim(file or "") == "" then
    fail(":SeriExport needs a file name ending in .md or .json")
    return
  end
  local path = full_path(file)
  local ext = vim.fn.fnamemodify(path, ":e"):lower()
  local format = M.FORMATS[ext]
  if not format then
    fail(
      ("cannot export to %s: the extension names the format, .md for a transcript to read or .json for a bundle to import (:SeriImport)"):format(
        file
      )
    )
    return
  end
  local folder = vim.fs.dirname(path)
  if vim.fn.isdirectory(folder) == 0 then
    fail(("cannot export to %s: there is no folder %s"):format(file, folder))
    return
  end
  if vim.uv.fs_stat(path) and not (opts and opts.force) then
    fail(("%s exists; :SeriExport! %s replaces it"):format(file, file))
    return
  end
  client.execute(project, "seri.session.export", { format = format }, function(err, result)
    if err or type(result) ~= "table" or type(result.text) ~= "string" then
      fail("could not export the session: " .. (err and err.message or "no answer"))
      return
    end
    local problem = M.write_atomic(path, result.text)
    if problem then
      fail(("could not write %s: %s"):format(path, problem))
      return
    end
    local count = tonumber(result.redactions) or 0
    local secrets = count == 0 and "no secrets found"
      or ("%d secret%s redacted"):format(count, count == 1 and "" or "s")
    notice.say(("Exported the session to %s (%s); %s."):format(path, format, secrets))
  end)
end

---Import the JSON bundle in `file` as a new session of `project` and open it in the
---chat (a bundle imported before opens the session made then).
---@param project seri.Project
---@param file string
function M.import(project, file)
  if vim.trim(file or "") == "" then
    fail(":SeriImport needs the file of a bundle (:SeriExport writes one to a .json file)")
    return
  end
  local path = full_path(file)
  local stat = vim.uv.fs_stat(path)
  if not stat or stat.type ~= "file" then
    local what = stat and "it is not a file" or "there is no such file"
    fail(("cannot import %s: %s"):format(file, what))
    return
  end
  if stat.size > MAX_IMPORT then
    fail(("cannot import %s: it is over 64 MiB, larger than any bundle"):format(file))
    return
  end
  local handle, err = io.open(path, "rb")
  if not handle then
    fail(("cannot import %s: %s"):format(file, err))
    return
  end
  local text = handle:read("*a")
  handle:close()
  client.execute(project, "seri.session.import", { text = text }, function(ierr, result)
    if ierr or type(result) ~= "table" or type(result.session) ~= "table" then
      fail(("could not import %s: %s"):format(file, ierr and ierr.message or "no answer"))
      return
    end
    local session = result.session
    local args = { sessionId = session.id }
    client.execute(project, "seri.session.resume", args, function(rerr)
      local short = tostring(session.id):sub(1, 8)
      if rerr then
        fail(
          ("imported %s as session %s, but could not open it: %s"):format(file, short, rerr.message)
        )
        return
      end
      chat.open(project, { focus = false })
      local said = result.alreadyImported and "was imported before, as session %s; opened it"
        or "is now session %s"
      notice.say(("%s %s."):format(vim.fn.fnamemodify(path, ":t"), said:format(short)))
    end)
  end)
end

return M
