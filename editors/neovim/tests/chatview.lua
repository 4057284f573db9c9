-- The chat as it is read: a failed task says why in the chat and `gr` sends the prompt
-- again; a retry shows its count; fenced code has a frame with its language and `gy`
-- yanks it; `[[` and `]]` go from turn to turn; `?` lists the keys; after :SeriCompact
-- the recap is in view; sending a prompt brings the view to the end. The provider is
-- scripted by test_neovim.py.
local H = dofile(vim.env.SERI_TEST_PLUGIN .. "/tests/helpers.lua")

H.run(function()
  local seri = require("seri")
  local chat = require("seri.chat")
  vim.cmd.cd(vim.uv.fs_realpath(H.env.workspace))
  seri.setup(H.options({
    provider = { keepTokens = 1, retryBaseDelay = 1, retryMaxDelay = 1 },
  }))
  H.wait_ready()
  local file_win = vim.api.nvim_get_current_win()
  vim.cmd("Seri")
  local win = vim.fn.bufwinid(chat.state.buf)
  vim.api.nvim_set_current_win(file_win)

  -- Each key option is declared once in the chat's key table, and each key a bar hints
  -- at is mapped there.
  local keys = require("seri.chat.keys")
  local declared = {}
  for _, key in ipairs(keys.list) do
    if key.option then
      declared[key.option] = (declared[key.option] or 0) + 1
    end
  end
  for name in pairs(require("seri.config").defaults.keymaps) do
    H.eq(1, declared[name], ("keymaps.%s in the chat's key table"):format(name))
  end
  for which, buf in pairs({ chat = chat.state.buf, input = chat.state.input }) do
    for _, key in ipairs(keys.list) do
      local lhs = key.hint and key.hint.bar == which and keys.lhs(key)
      if lhs then
        local mapped = vim.api.nvim_buf_call(buf, function()
          return vim.fn.maparg(lhs, type(key.modes) == "table" and key.modes[1] or key.modes)
        end)
        H.truthy(mapped ~= "", ("%s, hinted in the %s bar, is mapped there"):format(lhs, which))
      end
    end
  end

  -- A failed task: its reason in the chat, and how to send the prompt again.
  vim.cmd("SeriPrompt hello there")
  H.eq("failed", H.wait_turn(1).status, "the first task")
  H.wait_chat({ "Task failed: ", "User not found.", "gr or :SeriRetry sends the prompt again." })
  local failure = H.chat_line("Task failed: ")
  local marks = vim.api.nvim_buf_get_extmarks(chat.state.buf, -1, { failure - 1, 0 },
    { failure - 1, -1 }, { details = true })
  H.truthy(vim.iter(marks):any(function(mark)
    return mark[4].hl_group == "SeriError"
  end), "the failure stands out")
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_feedkeys("gr", "x", false)
  H.eq("done", H.wait_turn(2).status, "the task sent again")
  H.wait_chat("Hello after the retry.")
  H.eq(1, #vim.tbl_filter(function(line)
    return line == "hello there"
  end, chat.lines()), "the prompt, once: the failed try went")

  -- A retried model call: the status and the chat's last line count the tries.
  vim.api.nvim_set_current_win(file_win)
  vim.cmd("SeriPrompt show me code")
  H.wait(function()
    return H.status():find("retrying 1/1", 1, true)
  end, "the status to say it retries")
  H.wait_chat("⋯ retrying 1/1")
  H.truthy(H.chat_has("busy"), "why it retries")
  H.eq("done", H.wait_turn(3).status, "the retried task")
  H.truthy(not H.chat_has("⋯ retrying"), "the retry line went with the task")

  -- Fenced code: a frame with the language; `gy` on the code yanks it.
  H.wait_chat("return x * 2")
  local ns = vim.api.nvim_get_namespaces().seri_chat_frames
  local frame_text = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(chat.state.buf, ns, 0, -1, { details = true })) do
    for _, line in ipairs(mark[4].virt_lines or {}) do
      table.insert(frame_text, line[1][1])
    end
    for _, chunk in ipairs(mark[4].virt_text or {}) do
      table.insert(frame_text, chunk[1])
    end
  end
  local frames = table.concat(frame_text, "\n")
  H.truthy(frames:find("╭─ python", 1, true), "the python block's frame: " .. frames)
  H.truthy(frames:find("╭─ code", 1, true), "a block without a language: " .. frames)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { H.chat_line("    return x * 2"), 0 })
  vim.fn.setreg('"', "")
  vim.api.nvim_feedkeys("gy", "x", false)
  H.eq({ "def f(x):", "    return x * 2" }, vim.fn.getreg('"', 1, true), "the yanked block")
  H.eq("V", vim.fn.getregtype('"'), "yanked as lines")

  -- [[ and ]] go from heading to heading.
  vim.api.nvim_win_set_cursor(win, { H.chat_line("    return x * 2"), 0 })
  vim.api.nvim_feedkeys("[[", "x", false)
  H.eq("## seri", vim.api.nvim_get_current_line(), "[[ from the code")
  vim.api.nvim_feedkeys("[[", "x", false)
  H.eq("## You", vim.api.nvim_get_current_line(), "[[ again")
  H.eq("show me code", chat.lines()[vim.api.nvim_win_get_cursor(win)[1] + 1], "the prompt's turn")
  vim.api.nvim_feedkeys("]]", "x", false)
  H.eq("## seri", vim.api.nvim_get_current_line(), "]]")

  -- ? lists the keys in a float.
  vim.api.nvim_feedkeys("?", "x", false)
  local float = vim.api.nvim_get_current_win()
  H.truthy(vim.api.nvim_win_get_config(float).relative ~= "", "a float")
  local help = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  for _, key in ipairs({ "gy", "[[", "]]", "gr", "a ", "D " }) do
    H.truthy(help:find(key, 1, true), ("%q in the help:\n%s"):format(key, help))
  end
  vim.api.nvim_feedkeys("q", "x", false)
  H.eq(false, vim.api.nvim_win_is_valid(float), "the float, closed with q")

  -- More turns than the window holds, then :SeriCompact: the recap is in view (the
  -- window is not left past the end of the shorter chat).
  vim.api.nvim_set_current_win(file_win)
  for n = 4, 6 do
    vim.cmd("SeriPrompt tell me more " .. n)
    H.eq("done", H.wait_turn(n).status, "long answer " .. n)
  end
  H.truthy(vim.api.nvim_buf_line_count(chat.state.buf) > 3 * vim.api.nvim_win_get_height(win),
    "a chat taller than its window")
  H.eq(vim.api.nvim_buf_line_count(chat.state.buf), vim.fn.line("w$", win), "the view at the end")
  vim.cmd("SeriCompact")
  H.wait(function()
    return #H.events_named("SeriCompacted") == 1
  end, "the compaction")
  H.wait_chat("## Recap")
  H.wait(function()
    local recap = H.chat_line("## Recap")
    return vim.fn.line("w0", win) <= recap and recap <= vim.fn.line("w$", win)
  end, "the recap in view")

  -- Scrolled up, a prompt sent brings the view to the end, where its reply comes.
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  vim.api.nvim_win_call(win, function()
    vim.cmd("normal! zt")
  end)
  vim.cmd("SeriPrompt one more")
  H.eq("done", H.wait_turn(7).status, "the last task")
  H.wait_chat("Followed.")
  H.eq(vim.api.nvim_buf_line_count(chat.state.buf), vim.fn.line("w$", win), "the view at the end")
end)
