-- What the chat shows is what is written: code in a change to approve, tool rows, paths,
-- a failure's reason, the recap and a compaction's notice are on the screen character
-- for character (read back from the screen, with the chat's 'conceallevel' in effect),
-- while the reply's markdown keeps its rendering, and its headings are not drawn as the
-- role headings (`## You`, `## seri`) are. The provider is scripted by
-- test_neovim_display.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

local CODE = 'slug = re.sub(r"[^a-z0-9]+", "-", post["tags"][0])'

H.run(function()
  local chat = require("seri.chat")
  local workspace = vim.uv.fs_realpath(H.env.workspace)
  vim.cmd.cd(workspace)
  require("seri").setup(H.options({
    permissions = { write = "ask" },
    provider = { keepTokens = 1 },
  }))
  H.wait_ready()
  vim.cmd("Seri")
  local win = vim.fn.bufwinid(chat.state.buf)
  vim.api.nvim_win_set_width(win, vim.o.columns) -- the screen of headless Neovim: 80x24
  local input_win = vim.fn.bufwinid(chat.state.input)
  vim.cmd.stopinsert()
  ---Where the user is: typing in the input under the chat.
  local function to_input()
    vim.api.nvim_set_current_win(input_win)
  end
  to_input()

  -- The change to approve: its hunk as written.
  vim.cmd("SeriPrompt slugify the first tag")
  H.wait_chat({ "seri wants to edit app.py.", "+" .. CODE })
  H.shown_exactly(win, "+" .. CODE)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_feedkeys("a", "x", false)
  to_input()
  H.eq("done", H.wait_turn(1).status, "the allowed edit")
  H.eq({ CODE }, vim.fn.readfile(workspace .. "/app.py"), "app.py")

  -- The reply's markdown is rendered: the code span's text whole, its marks hidden.
  H.wait_chat("is **slugged**.")
  local prose = H.chat_line("is **slugged**.")
  H.eq('Now post["tags"][0] is slugged.', H.screen_line(win, prose), "the reply's prose")
  H.eq("See the docs.", H.screen_line(win, H.chat_line("See [the docs]")), "a link")

  -- A role heading is a band, its `##` a bar; a heading of the reply is markdown's own.
  local function marks(lnum)
    local groups = {}
    for _, mark in ipairs(vim.inspect_pos(chat.state.buf, lnum - 1, 3).extmarks) do
      table.insert(groups, mark.opts.line_hl_group or mark.opts.hl_group)
    end
    return table.concat(groups, " ")
  end
  local role = H.chat_line("## seri")
  H.eq("▍ seri", H.screen_line(win, role), "the role heading")
  H.truthy(marks(role):find("SeriRoleLine", 1, true), "the role heading's band: " .. marks(role))
  local heading = H.chat_line("## Plan")
  H.eq("## Plan", H.screen_line(win, heading), "the reply's heading")
  local drawn = marks(heading)
  H.truthy(drawn:find("@markup.heading.2", 1, true), "markdown's heading: " .. drawn)
  H.truthy(not marks(heading):find("SeriRoleLine", 1, true), "no band: " .. marks(heading))

  -- Tool rows with a pattern and paths, and a result's first line.
  vim.cmd("SeriPrompt where is the tag read")
  H.eq("done", H.wait_turn(2).status, "the reading task")
  H.shown_exactly(win, '-> grep "[^a-z0-9]+" in src/[id]')
  H.shown_exactly(win, "-> read_file src/[id]/page.tsx")
  H.shown_exactly(win, '<- const tag = post["tags"][0];')

  -- In prose, brackets that make no link (no label defined) are text, as in CommonMark.
  local path = H.chat_line("It is read in src/[id]/page.tsx.")
  H.eq("It is read in src/[id]/page.tsx.", H.screen_line(win, path), "a path in the reply")

  -- The statusline component: its `%` written `%%`, so a statusline shows it as it is.
  local status = require("seri.status")
  local plain = status.text(status.project())
  H.truthy(plain:find("%", 1, true), "a share in the status: " .. plain)
  local line = vim.api.nvim_eval_statusline(require("seri").status(), { maxwidth = 200 })
  H.eq(plain, line.str, "the status drawn in a statusline")

  -- A failure's reason, as the provider said it.
  vim.cmd("SeriPrompt and now?")
  H.eq("failed", H.wait_turn(3).status, "the failing task")
  H.wait_chat('bad value post["tags"][0]')
  H.shown_exactly(win, 'bad value post["tags"][0]')

  -- The recap (opened after :SeriCompact) and the compaction's notice.
  vim.cmd("SeriCompact")
  H.wait(function()
    return #H.events_named("SeriCompacted") == 1
  end, "the compaction")
  H.wait_chat({ "## Recap", "Context compacted: " })
  H.shown_exactly(win, 'Goal: slugify post["tags"][0]')
  H.shown_exactly(win, 'Next steps: test re.sub(r"[^a-z0-9]+", "-", s)')
  H.shown_exactly(win, "Modified: app.py")
  local notice = H.chat_line("Context compacted: ")
  local read = H.truthy(H.chat_line("Read: src/[id]/page.tsx"), "the recap's Read list")
  H.truthy(read < notice, "the recap's list is above the notice")
  H.shown_exactly(win, "Read: src/[id]/page.tsx")
  local lines = chat.lines()
  for lnum = notice + 1, #lines do
    if lines[lnum]:find("src/[id]/page.tsx", 1, true) then
      local shown = H.screen_line(win, lnum)
      H.truthy(shown:find(lines[lnum], 1, true), "the notice's list: " .. shown)
    end
  end

  -- A count of one is singular.
  vim.cmd("SeriMaxTurns 1")
  vim.cmd("SeriPrompt read it once more")
  H.eq("max_turns", H.wait_turn(4).status, "the task at its budget")
  H.wait_chat("Stopped at the turn budget (1 turn).")
end)
