-- Shared by the headless Neovim tests (run by tests/test_neovim.py). Each scenario script
-- calls `H.run(function() ... end)`: an assertion that fails prints why, with the chat's
-- text and Neovim's messages, and exits 1; a scenario that finishes exits 0.

local H = {}

H.env = {
  plugin = assert(vim.env.SERI_TEST_PLUGIN, "SERI_TEST_PLUGIN is not set"),
  python = vim.env.SERI_TEST_PYTHON,
  -- `python -m seri_lsp`, or what starts it forked from the test's warm process
  server = vim.env.SERI_TEST_SERVER and vim.json.decode(vim.env.SERI_TEST_SERVER)
    or { vim.env.SERI_TEST_PYTHON, "-m", "seri_lsp" },
  profile = vim.env.SERI_TEST_PROFILE,
  workspace = vim.env.SERI_TEST_WORKSPACE,
  base_url = vim.env.SERI_TEST_BASE_URL,
  model = vim.env.SERI_TEST_MODEL,
}

vim.opt.rtp:prepend(H.env.plugin)
vim.cmd("runtime plugin/seri.lua")

---What the plugin told the user, as {msg, level}: each notice whole (`seri: ...`, shown
---in the chat, or on one line), and what else went to vim.notify. The command-line lines
---of notices are in `H.shown`.
H.notes = {}
H.shown = {}
local notify = vim.notify
vim.notify = function(msg, level, opts)
  local from = debug.getinfo(2, "S").source
  local into = from:find("seri/notice.lua", 1, true) and H.shown or H.notes
  table.insert(into, { msg = msg, level = level or vim.log.levels.INFO })
  return notify(msg, level, opts)
end
local notice = require("seri.notice")
local say = notice.say
notice.say = function(text, level, opts)
  table.insert(H.notes, { msg = "seri: " .. text, level = level or vim.log.levels.INFO })
  return say(text, level, opts)
end

---The server command and settings the tests use (the scripted provider).
---@param extra table? settings merged over the defaults
---@return table options for require("seri").setup
function H.options(extra)
  local settings = {
    provider = {
      baseUrl = H.env.base_url,
      model = H.env.model,
      apiKey = "test-key-not-a-secret",
      timeout = 10,
      maxRetries = 1,
      retryBaseDelay = 0.01,
      retryMaxDelay = 0.05,
    },
    permissions = { write = "allow" },
  }
  settings = vim.tbl_deep_extend("force", settings, extra or {})
  return {
    cmd = vim.list_extend(vim.deepcopy(H.env.server), { "--profile-root", H.env.profile }),
    settings = settings,
  }
end

---Wait until `cond()` is truthy (the event loop runs meanwhile).
---@param cond fun(): any
---@param what string what is awaited, for the failure message
---@param ms integer?
function H.wait(cond, what, ms)
  local ok = vim.wait(ms or 10000, function()
    local good, value = pcall(cond)
    return good and value
  end, 20)
  if not ok then
    error("timed out waiting for " .. what, 2)
  end
end

---Wait for a notification holding `text` (plain); returns it.
---@param text string
---@return table note {msg, level}
function H.wait_note(text)
  local found
  H.wait(function()
    found = vim.tbl_filter(function(note)
      return note.msg:find(text, 1, true)
    end, H.notes)[1]
    return found
  end, ("a notification holding %q"):format(text))
  return found
end

---Run a `seri.*` command and wait for its answer (one request at a time, so a polling
---loop never floods the server).
---@param name string
---@param args table?
---@return any result
function H.call(name, args)
  local done, answer = false, nil
  require("seri").execute(name, args, function(err, result)
    done, answer = true, err and { error = err } or result
  end)
  H.wait(function()
    return done
  end, "the answer to " .. name)
  return answer
end

function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    local message = ("%s: expected %s, got %s"):format(
      what or "values differ",
      vim.inspect(expected),
      vim.inspect(actual)
    )
    error(message, 2)
  end
end

function H.truthy(value, what)
  if not value then
    error(what or "expected a true value", 2)
  end
  return value
end

---The chat buffer's text.
---@return string
function H.chat()
  return table.concat(require("seri.chat").lines(), "\n")
end

---Whether the chat holds `text` (plain).
function H.chat_has(text)
  return H.chat():find(text, 1, true) ~= nil
end

---Wait until the chat holds every one of `texts`.
---@param texts string[]|string
function H.wait_chat(texts, ms)
  texts = type(texts) == "table" and texts or { texts }
  for _, text in ipairs(texts) do
    H.wait(function()
      return H.chat_has(text)
    end, ("the chat to show %q"):format(text), ms)
  end
end

---The 1-based line number of the first chat line holding `text`.
function H.chat_line(text)
  for i, line in ipairs(require("seri.chat").lines()) do
    if line:find(text, 1, true) then
      return i
    end
  end
  return nil
end

---What window `win` shows of its buffer's line `lnum` (1-based), as the screen has it
---after a redraw: concealed characters gone, inline virtual text and fold text in. The
---line is scrolled into view, second from the top with the window's cursor on the line
---above (the cursor's line shows concealed text). Read with `screenstring()`, the cells
---a user sees.
---@param win integer
---@param lnum integer
---@return string
function H.screen_line(win, lnum)
  vim.api.nvim_win_call(win, function()
    local above = math.max(1, lnum - 1)
    vim.fn.winrestview({ topline = above, lnum = above, col = 0 })
  end)
  vim.cmd("redraw!")
  local at = vim.fn.screenpos(win, lnum, 1)
  if at.row == 0 then
    return ""
  end
  local origin = vim.fn.win_screenpos(win)
  local width = vim.api.nvim_win_get_width(win)
  local height = vim.api.nvim_win_text_height(win, { start_row = lnum - 1, end_row = lnum - 1 })
  local cells = {}
  for row = at.row, at.row + math.max(1, height.all - height.fill) - 1 do
    for col = origin[2], origin[2] + width - 1 do
      table.insert(cells, vim.fn.screenstring(row, col))
    end
  end
  return (table.concat(cells):gsub("%s+$", ""))
end

---What window `win` shows now, row by row as the screen has it after a redraw (virtual
---lines included), read with `screenstring()`.
---@param win integer
---@return string
function H.window_screen(win)
  vim.cmd("redraw!")
  local origin = vim.fn.win_screenpos(win)
  local rows = {}
  for row = origin[1], origin[1] + vim.api.nvim_win_get_height(win) - 1 do
    local cells = {}
    for col = origin[2], origin[2] + vim.api.nvim_win_get_width(win) - 1 do
      table.insert(cells, vim.fn.screenstring(row, col))
    end
    table.insert(rows, (table.concat(cells):gsub("%s+$", "")))
  end
  return table.concat(rows, "\n")
end

---Fail unless the chat's window shows the chat line holding `text` whole, every
---character of the line as it is in the buffer (nothing concealed).
---@param win integer the chat's window
---@param text string
function H.shown_exactly(win, text)
  local lnum = H.truthy(H.chat_line(text), ("a chat line holding %q"):format(text))
  local line = require("seri.chat").lines()[lnum]
  local shown = H.screen_line(win, lnum)
  if not shown:find(line, 1, true) then
    error(("line %d is shown as\n  %s\nbut holds\n  %s"):format(lnum, shown, line), 2)
  end
end

---`require("seri").status(opts)` as a statusline draws it (its `%` are written `%%`).
---@param opts {spend?: boolean}?
---@return string
function H.status(opts)
  local text = require("seri").status(opts)
  return vim.api.nvim_eval_statusline(text, { maxwidth = 500, use_tabline = true }).str
end

---The seri LSP clients running.
function H.clients()
  return vim.lsp.get_clients({ name = "seri" })
end

---Wait for the project's server to be ready and its start-up (resume on open) done.
function H.wait_ready()
  H.wait(function()
    local project = require("seri.client").current()
    return project and project.ready
  end, "the seri server to start")
end

---Record User autocommands `Seri*` with their data.
H.events = {}
vim.api.nvim_create_autocmd("User", {
  pattern = { "SeriMessage", "SeriTurnEnded", "SeriSessionChanged", "SeriCompacted" },
  callback = function(args)
    table.insert(H.events, { name = args.match, data = args.data })
  end,
})

---Events recorded so far with this name.
function H.events_named(name)
  return vim.tbl_filter(function(e)
    return e.name == name
  end, H.events)
end

---The SeriTurnEnded events of the open session (a subagent's have another sessionId).
function H.turns()
  local project = require("seri.client").current()
  local open = project and project.session and project.session.id
  return vim.tbl_filter(function(e)
    return e.data.sessionId == open
  end, H.events_named("SeriTurnEnded"))
end

---Wait until the `n`-th task of the open session ended; returns its SeriTurnEnded data.
function H.wait_turn(n)
  H.wait(function()
    return #H.turns() >= n
  end, ("task %d to end"):format(n), 20000)
  return H.turns()[n].data
end

local function stop()
  for _, client in ipairs(H.clients()) do
    vim.lsp.stop_client(client.id)
  end
  vim.wait(3000, function()
    return #H.clients() == 0
  end, 20)
end

---Run a scenario: exit 0 when it finishes, 1 (with the reason) when it fails. Started as
---an init file (`nvim -u script`), it runs once Neovim has entered, as a user's would.
---@param fn fun()
function H.run(fn)
  if vim.v.vim_did_enter == 0 then
    vim.api.nvim_create_autocmd("VimEnter", {
      once = true,
      callback = vim.schedule_wrap(function()
        H.run(fn)
      end),
    })
    return
  end
  local ok, err = xpcall(fn, debug.traceback)
  if not ok then
    io.stderr:write("\nFAILED: " .. tostring(err) .. "\n")
    io.stderr:write("\n--- chat ---\n" .. H.chat() .. "\n--- notifications ---\n")
    for _, note in ipairs(H.notes) do
      io.stderr:write(("[%s] %s\n"):format(note.level, note.msg))
    end
    stop()
    os.exit(1)
  end
  stop()
  io.stderr:write("\nSCENARIO PASSED\n")
  os.exit(0)
end

return H
