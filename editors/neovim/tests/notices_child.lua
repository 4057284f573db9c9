-- The Neovim of notices.lua, with a screen (a terminal of the test's Neovim): routine
-- notices and failures while the chat is closed, then open, each step a separate event
-- as a user's commands are. It writes "done" to $SERI_TEST_MARKER when it is through (it
-- would wait at a hit-enter prompt instead).
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

local co

---Let the editor run (redraw, take keys) for `ms`, as between a user's commands.
local function pause(ms)
  vim.defer_fn(function()
    assert(coroutine.resume(co))
  end, ms)
  coroutine.yield()
end

local function wait(cond, what)
  for _ = 1, 300 do
    if cond() then
      return
    end
    pause(50)
  end
  error("timed out waiting for " .. what)
end

local function turns()
  return #H.events_named("SeriTurnEnded")
end

local function steps()
  vim.o.cmdheight = 1
  local seri = require("seri")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options())
  require("seri.config").options.chat.open_on_prompt = false
  wait(function()
    local project = require("seri.client").current()
    return project and project.ready
  end, "the server")
  -- The chat closed: a failed task, a long answer, a short one.
  vim.cmd("SeriPrompt hello")
  wait(function()
    return turns() == 1
  end, "the first task")
  vim.cmd("SeriTrajectory")
  wait(function()
    return vim.iter(H.notes):any(function(note)
      return note.msg:find("Trajectory recording", 1, true)
    end)
  end, "the trajectory answer")
  vim.cmd("SeriMaxTurns 7")
  pause(300)
  -- The chat open: a failed task again.
  vim.cmd("Seri")
  vim.cmd("wincmd p")
  vim.cmd("SeriPrompt hello again")
  wait(function()
    return turns() == 2
  end, "the second task")
  -- Both failures are in the chat, the one said while it was closed too.
  wait(function()
    return #vim.tbl_filter(function(line)
      return vim.startswith(line, "Task failed: ")
    end, require("seri.chat").lines()) == 2
  end, "both failures in the chat")
  pause(300)
end

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  callback = function()
    co = coroutine.create(function()
      local ok, err = pcall(steps)
      vim.fn.writefile({ ok and "done" or ("failed: " .. tostring(err)) }, vim.env.SERI_TEST_MARKER)
    end)
    vim.schedule(function()
      assert(coroutine.resume(co))
    end)
  end,
})
