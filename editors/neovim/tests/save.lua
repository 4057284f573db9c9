-- `seri/saveDocuments`: before running the checks, the server has the editor save the
-- buffers its task edited. SERI_TEST_SAVE=handler answers the request as the server
-- would send it; SERI_TEST_SAVE=task runs a task that edits an open buffer, then a
-- check that reads the file on disk (the provider is scripted by test_neovim.py).
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local workspace = vim.uv.fs_realpath(H.env.workspace)
  vim.cmd.cd(workspace)
  local function path(name)
    return workspace .. "/" .. name
  end

  if vim.env.SERI_TEST_SAVE == "handler" then
    require("seri").setup(H.options())
    H.wait_ready()
    local writes = {}
    vim.api.nvim_create_autocmd("BufWritePre", {
      callback = function(args)
        table.insert(writes, vim.fs.basename(args.file))
      end,
    })
    vim.cmd.edit(path("edited.txt"))
    local edited = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(edited, 0, -1, false, { "edited: after" })
    vim.cmd.edit(path("clean.txt"))
    -- A buffer whose folder does not exist cannot be written.
    vim.cmd.edit(path("gone/new.txt"))
    local gone = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(gone, 0, -1, false, { "nowhere to go" })
    local uris = vim.tbl_map(function(name)
      return vim.uri_from_fname(path(name))
    end, { "edited.txt", "clean.txt", "closed.txt", "gone/new.txt" })

    local project = require("seri.client").current()
    local lsp = vim.lsp.get_client_by_id(project.client_id)
    local handler = H.truthy(lsp.handlers["seri/saveDocuments"], "a seri/saveDocuments handler")
    local result = handler(nil, { uris = uris }, { method = "seri/saveDocuments",
      client_id = project.client_id })
    H.eq({ saved = { uris[1], uris[2], uris[3] } }, result, "the answer")
    H.eq({ "edited: after" }, vim.fn.readfile(path("edited.txt")), "edited.txt on disk")
    H.eq(false, vim.bo[edited].modified, "edited.txt's buffer after saving")
    -- :write ran in each modified buffer, autocommands included (new.txt's then failed).
    H.eq({ "edited.txt", "new.txt" }, writes, "buffers written with :write")
    H.eq({ "closed: before" }, vim.fn.readfile(path("closed.txt")), "closed.txt, not opened")
    H.eq(-1, vim.fn.bufnr(path("closed.txt")), "a buffer for closed.txt")
    H.eq(true, vim.bo[gone].modified, "the unwritable buffer stays modified")
    H.truthy(vim.tbl_filter(function(note)
      local named = note.msg:find("could not save .*gone/new.txt: E212: ")
      return note.level == vim.log.levels.WARN and named
    end, H.notes)[1], "a warning naming the buffer that could not be saved")
  else
    require("seri").setup(H.options({
      checks = { { name = "grep", command = "grep -q after open.txt" } },
      permissions = { run = "allow" },
    }))
    H.wait_ready()
    vim.cmd.edit(path("open.txt"))
    local open = vim.api.nvim_get_current_buf()
    local project = require("seri.client").current()
    H.wait(function()
      return vim.lsp.buf_is_attached(open, project.client_id)
    end, "open.txt to be attached")
    vim.cmd("SeriPrompt edit open.txt")
    local ended = H.wait_turn(1)
    H.eq("done", ended.status, "the task, its check passing on the saved buffer")
    H.eq({ "open: after" }, vim.fn.readfile(path("open.txt")), "open.txt on disk")
    H.eq(false, vim.bo[open].modified, "open.txt's buffer, saved")
    H.truthy(not H.chat_has("Checks failed"), "no failing check in the chat")
  end
end)
