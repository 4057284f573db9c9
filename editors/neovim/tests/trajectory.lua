-- :SeriTrajectory shows whether runs are recorded and where that comes from, and turns
-- it on or off; with SERI_TRAJECTORY_ENABLED in the server's environment (the server is
-- restarted with it) the variable wins and the server's warning is shown as a warning.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")

  ---Run `:SeriTrajectory {args}`; the notifications it gave: its answer and its warnings.
  local function trajectory(args)
    local before = #H.notes
    vim.cmd("SeriTrajectory " .. args)
    local function answer()
      for i = before + 1, #H.notes do
        local note = H.notes[i]
        if note.level ~= vim.log.levels.WARN and note.msg:find("Trajectory recording", 1, true) then
          return note.msg
        end
      end
    end
    H.wait(answer, ":SeriTrajectory " .. args .. " to answer")
    vim.wait(100) -- a warning comes with the answer, if there is one
    local warnings = {}
    for i = before + 1, #H.notes do
      if H.notes[i].level == vim.log.levels.WARN then
        table.insert(warnings, H.notes[i].msg)
      end
    end
    return answer(), warnings
  end
  local function has(text, part)
    H.truthy(text:find(part, 1, true), ("%q in %q"):format(part, text))
  end

  seri.setup(H.options())
  H.wait_ready()
  local config = vim.uv.fs_realpath(H.env.profile) .. "/config.json"

  local said, warnings = trajectory("")
  has(said, "seri: Trajectory recording is on (the default")
  H.eq({}, warnings, "warnings of a fresh profile")
  said, warnings = trajectory("off")
  has(said, ("Trajectory recording is off (set in %s)"):format(config))
  H.eq({}, warnings, "warnings without the variable")
  said = trajectory("")
  has(said, ("Trajectory recording is off (set in %s)"):format(config))
  H.eq({ "off", "on" }, vim.fn.getcompletion("SeriTrajectory ", "cmdline"), "completion")
  local before = #H.notes
  pcall(vim.cmd, "SeriTrajectory maybe")
  H.truthy(H.notes[before + 1] and H.notes[before + 1].msg:find("takes on or off", 1, true),
    "a bad argument refused")

  -- The server started again with SERI_TRAJECTORY_ENABLED=true in its environment: the
  -- variable wins over the stored off, and both showing and setting warn about it.
  vim.env.SERI_TRAJECTORY_ENABLED = "true"
  require("seri.client").stop_all()
  H.wait(function()
    return #H.clients() == 0
  end, "the server to stop")
  seri.start()
  H.wait_ready()
  said, warnings = trajectory("")
  has(said, "Trajectory recording is on (SERI_TRAJECTORY_ENABLED=true in the environment")
  H.eq(1, #warnings, "the warning when shown: " .. vim.inspect(warnings))
  has(warnings[1], "seri: SERI_TRAJECTORY_ENABLED=true in the environment overrides")
  said, warnings = trajectory("off")
  has(said, "Trajectory recording is on (SERI_TRAJECTORY_ENABLED=true")
  H.eq(1, #warnings, "the warning when set: " .. vim.inspect(warnings))
  has(warnings[1], "until the variable is unset")
end)
