-- :SeriRewind: with a count after a prompt that edited an open buffer and a file on disk
-- (both restored, the prompt back in the chat's input, the chat redrawn); without one,
-- through the pickers (vim.ui.select): a files-only rewind that leaves a file changed
-- since alone and lists it, then the same rewind forced; a refusal shown as the server
-- words it; `/rewind` typed in the chat, shown as :SeriRewind shows it. The provider is
-- scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  local workspace = vim.uv.fs_realpath(H.env.workspace)
  vim.cmd.cd(workspace)

  ---Answers for vim.ui.select, by kind: a function from the items to the one chosen.
  local pickers, asked = {}, {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked, {
      kind = opts.kind,
      prompt = opts.prompt,
      shown = vim.tbl_map(opts.format_item or tostring, items),
    })
    local choose = pickers[opts.kind]
    H.truthy(choose, "an unexpected picker: " .. tostring(opts.kind))
    on_choice(choose(items))
  end
  local function where(field, value)
    return function(items)
      for _, item in ipairs(items) do
        if item[field] == value then
          return item
        end
      end
      error(("no item with %s = %s"):format(field, vim.inspect(value)))
    end
  end
  local function notes_since(count, level)
    local found = {}
    for i = count + 1, #H.notes do
      if level == nil or H.notes[i].level == level then
        table.insert(found, H.notes[i].msg)
      end
    end
    return table.concat(found, "\n")
  end
  local function rewinds()
    return vim.tbl_filter(function(e)
      return e.data.reason == "rewound"
    end, H.events_named("SeriSessionChanged"))
  end
  local function read(name)
    return table.concat(vim.fn.readfile(workspace .. "/" .. name), "\n")
  end

  seri.setup(H.options())
  H.wait_ready()
  vim.cmd.edit(workspace .. "/open.txt")
  local open_buf = vim.api.nvim_get_current_buf()
  local project = require("seri.client").current()
  H.wait(function()
    return vim.lsp.buf_is_attached(open_buf, project.client_id)
  end, "open.txt to be attached")
  vim.cmd("Seri")

  -- A prompt edits the open buffer and a file on disk.
  vim.cmd("SeriPrompt change both to v2")
  H.eq("done", H.wait_turn(1).status, "the editing task")
  H.wait_chat({ "change both to v2", "Edited both." })
  H.eq({ "open: v2" }, vim.api.nvim_buf_get_lines(open_buf, 0, -1, false), "the buffer, edited")
  H.eq("app: v2", read("app.txt"), "app.txt, edited")

  -- :SeriRewind 1: both back, the prompt in the input, the chat drawn again without it.
  local before = #H.notes
  vim.cmd("SeriRewind 1")
  H.wait(function()
    return #rewinds() == 1
  end, "the rewound session change")
  H.wait(function()
    return chat.input_text() == "change both to v2"
  end, "the prompt back in the input (" .. chat.input_text() .. ")")
  H.eq({ "open: v1" }, vim.api.nvim_buf_get_lines(open_buf, 0, -1, false), "the buffer, restored")
  H.eq("app: v1", read("app.txt"), "app.txt, restored")
  H.wait_chat("rewound")
  H.wait(function()
    return not H.chat_has("Edited both.") and not H.chat_has("change both to v2")
  end, "the rewound exchange to leave the chat")
  H.truthy(notes_since(before):find("rewound 1 prompt (the conversation and files)", 1, true),
    "the rewind is reported: " .. notes_since(before))
  H.eq("", notes_since(before, vim.log.levels.WARN), "warnings after a clean rewind")

  -- Two more prompts: one edits app.txt, one creates notes.txt; then app.txt is changed
  -- by someone else.
  vim.cmd("SeriPrompt edit app again")
  H.eq("done", H.wait_turn(2).status, "the second editing task")
  vim.cmd("SeriPrompt create notes")
  H.eq("done", H.wait_turn(3).status, "the creating task")
  H.wait_chat({ "Edited app.", "Wrote notes." })
  H.eq("notes", read("notes.txt"), "notes.txt, created")
  vim.fn.writefile({ "app: mine" }, workspace .. "/app.txt")

  -- :SeriRewind alone: pick the older prompt, files only, and leave the conflict alone.
  before = #H.notes
  asked = {}
  pickers = {
    seri_checkpoint = where("steps", 2),
    seri_rewind_restore = where("restore", "files"),
    seri_rewind_conflicts = where("force", false),
  }
  vim.cmd("SeriRewind")
  H.wait(function()
    return #rewinds() == 2
  end, "the files-only rewind")
  H.eq({ "seri_checkpoint", "seri_rewind_restore", "seri_rewind_conflicts" },
    vim.tbl_map(function(a)
      return a.kind
    end, asked), "the pickers shown")
  H.eq(2, #asked[1].shown, "checkpoints offered")
  H.eq("create notes · just now · notes.txt", asked[1].shown[1], "the newest checkpoint")
  H.eq("edit app again · just now · app.txt · changed since: app.txt", asked[1].shown[2],
    "the older checkpoint, with the file changed since")
  H.truthy(asked[3].prompt:find("app.txt", 1, true), "the question names the file")
  H.wait(function()
    return notes_since(before, vim.log.levels.WARN) ~= ""
  end, "the conflict warning")
  local warning = notes_since(before, vim.log.levels.WARN)
  H.truthy(warning:find("left alone, changed since seri wrote them: app.txt", 1, true),
    "the conflict listed: " .. warning)
  H.truthy(warning:find(":SeriRewind 2 files force", 1, true), "how to force it: " .. warning)
  H.eq("app: mine", read("app.txt"), "app.txt, left alone")
  H.eq(0, vim.fn.filereadable(workspace .. "/notes.txt"), "notes.txt, created by seri, removed")
  H.wait_chat({ "rewound", "Edited app.", "Wrote notes." }) -- the conversation stays
  H.eq("change both to v2", chat.input_text(), "a files-only rewind brings back no prompt")

  -- Again, the conversation too, overwriting app.txt this time. The input still holds
  -- the first rewound prompt, unsent: the prompt this rewind removes comes under it.
  before = #H.notes
  asked = {}
  pickers = {
    seri_checkpoint = where("steps", 2),
    seri_rewind_restore = where("restore", "both"),
    seri_rewind_conflicts = where("force", true),
  }
  vim.cmd("SeriRewind")
  H.wait(function()
    return #rewinds() == 3
  end, "the forced rewind")
  H.eq(3, #asked, "the overwrite question was asked again")
  H.wait(function()
    return chat.input_text() == "change both to v2\n\nedit app again"
  end, "the earliest removed prompt under the draft in the input (" .. chat.input_text() .. ")")
  H.wait_chat("The prompt is back in the input, under your draft.")
  H.eq("app: v1", read("app.txt"), "app.txt, overwritten with its content before the prompt")
  H.wait(function()
    return not H.chat_has("Edited app.") and not H.chat_has("Wrote notes.")
  end, "the rewound prompts to leave the chat")
  H.eq("", notes_since(before, vim.log.levels.WARN), "warnings after a forced rewind")

  -- A rewind the server refuses: its words, as they are.
  before = #H.notes
  vim.cmd("SeriRewind 5")
  H.wait(function()
    return notes_since(before, vim.log.levels.ERROR) ~= ""
  end, "the refusal")
  local refusal = notes_since(before, vim.log.levels.ERROR)
  H.truthy(refusal:find("could not rewind: Cannot rewind 5 prompts", 1, true), refusal)

  -- Nothing left to pick: said so, no picker.
  before = #H.notes
  asked = {}
  vim.cmd("SeriRewind")
  H.wait(function()
    return notes_since(before):find("nothing to rewind", 1, true)
  end, "nothing to rewind")
  H.eq(0, #asked, "pickers with nothing to rewind")

  -- Bad arguments never reach the server.
  before = #H.notes
  pcall(vim.cmd, "SeriRewind 0") -- an error message, under :command an error
  pcall(vim.cmd, "SeriRewind files")
  local refused = notes_since(before, vim.log.levels.ERROR)
  H.truthy(refused:find("whole number from 1 to 10000, given once (got 0)", 1, true), refused)
  H.truthy(refused:find("give the number of prompts with those words", 1, true), refused)
  H.eq({ "files", "force" }, vim.fn.getcompletion("SeriRewind 1 f", "cmdline"), "words complete")

  -- /rewind typed in the chat's input does what :SeriRewind does: the prompt comes back
  -- into the input, and a file changed since seri wrote it is left alone and listed.
  vim.cmd("SeriPrompt edit app once more")
  H.eq("done", H.wait_turn(4).status, "the fourth editing task")
  H.wait_chat("Edited app once more.")
  vim.fn.writefile({ "app: yours" }, workspace .. "/app.txt")
  before = #H.notes
  chat.open(project)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat.state.input))
  vim.api.nvim_buf_set_lines(chat.state.input, 0, -1, false, { "/rewind 1" })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  H.wait(function()
    return chat.input_text() == "edit app once more"
  end, "the prompt removed by /rewind back in the input (" .. chat.input_text() .. ")")
  H.truthy(notes_since(before):find("rewound 1 prompt (the conversation and files)", 1, true),
    "the rewind is reported: " .. notes_since(before))
  local left = notes_since(before, vim.log.levels.WARN)
  H.truthy(left:find("left alone, changed since seri wrote them: app.txt", 1, true),
    "the conflict listed: " .. left)
  H.eq("app: yours", read("app.txt"), "app.txt, left alone")
end)
