-- :SeriExport FILE writes the open session as the extension says (.md a transcript,
-- .json a bundle), atomically, and says how many secrets were redacted; an existing file
-- is replaced only with a bang; an unknown extension or a missing folder is refused and
-- writes nothing. :SeriImport FILE makes a new session of a bundle and opens it in the
-- chat; a missing file or a file that is no bundle is refused, clearly. test_neovim.py
-- reads the files afterwards.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  local root = vim.uv.fs_realpath(H.env.workspace)
  vim.cmd.cd(root)
  seri.setup(H.options())
  H.wait_ready()
  -- The configured API key, pasted in a prompt: an export redacts it.
  vim.cmd("SeriPrompt remember test-key-not-a-secret for later")
  H.eq("done", H.wait_turn(1).status, "the task")
  H.wait_chat("Noted.")
  local source = require("seri.client").current().session.id

  vim.cmd("SeriExport out.md")
  local note = H.wait_note("Exported the session to " .. root .. "/out.md (markdown); 1 secret redacted.")
  H.eq(vim.log.levels.INFO, note.level, "an export is news, not a problem")
  vim.cmd("SeriExport " .. root .. "/bundle.json")
  H.wait_note("Exported the session to " .. root .. "/bundle.json (json); 1 secret redacted.")

  -- An existing file needs the bang.
  vim.cmd("SeriExport out.md")
  note = H.wait_note("out.md exists; :SeriExport! out.md replaces it")
  H.eq(vim.log.levels.ERROR, note.level, "refused")
  vim.fn.writefile({ "old" }, "out.md")
  vim.cmd("SeriExport! out.md")
  H.wait(function()
    return vim.fn.readfile("out.md")[1] ~= "old"
  end, "out.md replaced")

  -- An extension that names no format, a folder that is not there.
  vim.cmd("SeriExport notes.txt")
  note = H.wait_note("cannot export to notes.txt: the extension names the format, .md for a transcript")
  H.eq(vim.log.levels.ERROR, note.level, "refused")
  vim.cmd("SeriExport missing/out.md")
  H.wait_note("cannot export to missing/out.md: there is no folder " .. root .. "/missing")

  -- Import: a new session with the conversation, open in the chat.
  vim.cmd("SeriImport bundle.json")
  H.wait_note("bundle.json is now session")
  H.wait(function()
    local session = chat.state.session
    return session and session.id ~= source and H.chat_has("Noted.")
  end, "the imported session in the chat")
  H.truthy(H.chat_has("remember [redacted] for later"), "the prompt, as exported")
  H.eq(chat.state.session.id, require("seri.client").current().session.id, "it is open")
  local imported = chat.state.session.id

  -- The same bundle again: the session made the first time.
  vim.cmd("SeriResume " .. source)
  H.wait_chat("remember test-key-not-a-secret for later")
  vim.cmd("SeriImport bundle.json")
  H.wait_note("bundle.json was imported before, as session " .. imported:sub(1, 8) .. "; opened it")
  H.wait(function()
    return chat.state.session and chat.state.session.id == imported
  end, "the imported session open again")

  -- Refused: a missing file, a file that is no bundle.
  vim.cmd("SeriImport nowhere.json")
  note = H.wait_note("cannot import nowhere.json: there is no such file")
  H.eq(vim.log.levels.ERROR, note.level, "refused")
  vim.cmd("SeriImport out.md")
  note = H.wait_note("could not import out.md: ")
  H.eq(vim.log.levels.ERROR, note.level, "refused")
  H.eq(imported, require("seri.client").current().session.id, "the open session stays")
end)
