-- Rewinding (`:SeriRewind`): going back to before a prompt, in the conversation, the
-- files, or both, through the server's `seri.checkpoints` and `seri.rewind`.
--
-- With a count the rewind runs at once; without one the user picks a checkpoint, then
-- what to restore, and whether to overwrite files changed since seri wrote them. The
-- removed prompt goes back into the chat's input, to be edited and sent again.

local chat = require("seri.chat")
local client = require("seri.client")
local notice = require("seri.notice")
local time = require("seri.time")

local M = {}

M.RESTORE = { "both", "conversation", "files" }

---@class seri.Checkpoint
---@field steps integer what to pass to `seri.rewind` to go back to before this prompt
---@field prompt string its first line, shortened
---@field createdAt string
---@field files string[] files its task changed
---@field conflicts string[] files a rewind of `steps` leaves alone unless forced

---@class seri.RewindRequest
---@field steps? integer
---@field restore? "both"|"conversation"|"files"
---@field force? boolean
---@field message_id? integer a prompt's id: back to just before it (`gR`)

---@type {restore: string, label: string}[]
local RESTORE_ITEMS = {
  { restore = "both", label = "Conversation and files: go back to before this prompt" },
  { restore = "conversation", label = "Conversation only: keep the files as they are" },
  { restore = "files", label = "Files only: keep the conversation" },
}

local WHAT = {
  both = "the conversation and files",
  conversation = "the conversation",
  files = "files",
}

---@param n integer
---@return string
local function prompts(n)
  return n == 1 and "1 prompt" or ("%d prompts"):format(n)
end

---"just now", "5 minutes ago", "yesterday", "3 days ago", else the date.
---@param iso string
---@param now integer? seconds since the epoch (default: the clock)
---@return string
function M.relative_time(iso, now)
  local at = time.epoch(iso)
  if not at then
    return tostring(iso or "")
  end
  local ago = (now or os.time()) - at
  local function unit(n, name)
    return ("%d %s%s ago"):format(n, name, n == 1 and "" or "s")
  end
  if ago < 60 then
    return "just now"
  elseif ago < 3600 then
    return unit(math.floor(ago / 60), "minute")
  elseif ago < 86400 then
    return unit(math.floor(ago / 3600), "hour")
  elseif ago < 2 * 86400 then
    return "yesterday"
  elseif ago < 7 * 86400 then
    return unit(math.floor(ago / 86400), "day")
  end
  return iso:sub(1, 10)
end

---A checkpoint as the picker shows it: prompt · when · files (· changed since: ...).
---@param checkpoint seri.Checkpoint
---@return string
function M.format_checkpoint(checkpoint)
  local files = checkpoint.files or {}
  local parts = {
    checkpoint.prompt ~= "" and checkpoint.prompt or "(empty prompt)",
    M.relative_time(checkpoint.createdAt),
    #files > 0 and table.concat(files, ", ") or "no files changed",
  }
  local conflicts = checkpoint.conflicts or {}
  if #conflicts > 0 then
    table.insert(parts, "changed since: " .. table.concat(conflicts, ", "))
  end
  return table.concat(parts, " · ")
end

---Parse `:SeriRewind` arguments: `[n] [both|conversation|files] [force]`, any order.
---@param words string[]
---@return seri.RewindRequest? request
---@return string? error
function M.parse(words)
  local request = {}
  for _, word in ipairs(words) do
    local lowered = word:lower()
    if word:match("^%d+$") then
      local n = tonumber(word)
      if request.steps or n < 1 or n > 10000 then
        local why = "the number of prompts is a whole number from 1 to 10000, given once"
        return nil, ("%s (got %s)"):format(why, word)
      end
      request.steps = n
    elseif vim.tbl_contains(M.RESTORE, lowered) then
      if request.restore then
        return nil, "give one of both, conversation or files, once"
      end
      request.restore = lowered
    elseif lowered == "force" then
      request.force = true
    else
      return nil, ("expected a number, both, conversation, files or force (got %q)"):format(word)
    end
  end
  return request, nil
end

---Show what a rewind did, and put the removed prompt back into the chat's input (under
---a draft the input holds).
---@param project seri.Project
---@param request seri.RewindRequest
---@param result table the answer of `seri.rewind`
function M.done(project, request, result)
  -- A file that could not be put back keeps the conversation: only files were rewound.
  local restore = result.conversationKept and "files" or request.restore or "both"
  local rewound = tonumber(result.rewound) or request.steps
  if type(result.prompt) == "string" then
    chat.open(project)
    chat.offer_input(result.prompt)
  end
  local restored = result.restoredFiles or {}
  local message = ("rewound %s (%s)"):format(prompts(rewound), WHAT[restore] or restore)
  if #restored > 0 then
    message = message .. "; restored " .. table.concat(restored, ", ")
  end
  notice.say(message)
  local conflicts = result.conflicts or {}
  if #conflicts > 0 then
    local text = "left alone, changed since seri wrote them: "
      .. table.concat(conflicts, ", ")
    if restore == "files" then
      text = text .. (" (:SeriRewind %d files force overwrites them)"):format(rewound)
    end
    notice.say(text, vim.log.levels.WARN)
  end
  local failed = result.failed or {}
  if #failed > 0 then
    local lines = vim.tbl_map(function(failure)
      return ("%s (%s)"):format(failure.path, failure.reason)
    end, failed)
    notice.say("could not restore " .. table.concat(lines, "; "), vim.log.levels.WARN)
  end
end

---Run `seri.rewind`.
---@param project seri.Project
---@param request seri.RewindRequest
---@param on_done fun(result: table)?
function M.run(project, request, on_done)
  local args = { steps = request.steps, messageId = request.message_id }
  if request.restore then
    args.restore = request.restore
  end
  if request.force then
    args.force = true
  end
  client.execute(project, "seri.rewind", args, function(err, result)
    if err then
      -- The server's messages are whole sentences ("Cannot rewind 3 prompts: ...").
      notice.say("could not rewind: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    if type(result) == "table" then
      M.done(project, request, result)
      if on_done then
        on_done(result)
      end
    end
  end)
end

---"Rewind to here": back to before the prompt `message_id`, conversation and files. Files
---changed since seri wrote them are asked about first (`seri.rewind {check}`), while their
---earlier content is still kept: Overwrite rewinds with `force`, Cancel rewinds nothing.
---@param project seri.Project
---@param message_id integer
function M.rewind_here(project, message_id)
  local request = { message_id = message_id, restore = "both" }
  local args = { messageId = message_id, restore = "both", check = true }
  client.execute(project, "seri.rewind", args, function(err, result)
    if err then
      notice.say("could not rewind: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local conflicts = type(result) == "table" and result.conflicts or {}
    if #conflicts == 0 then
      M.run(project, request)
      return
    end
    vim.ui.select({ "Overwrite", "Cancel" }, {
      prompt = ("Overwrite %d file(s) changed since seri wrote them (%s)? Cancel rewinds nothing."):format(
        #conflicts,
        table.concat(conflicts, ", ")
      ),
      kind = "seri_rewind_overwrite",
    }, function(choice)
      if choice == "Overwrite" then
        M.run(project, vim.tbl_extend("force", request, { force = true }))
      end
    end)
  end)
end

---Ask whether to overwrite files changed since seri wrote them; `on_answer(force)`, or
---nothing when the user cancels.
---@param conflicts string[]
---@param on_answer fun(force: boolean)
local function ask_force(conflicts, on_answer)
  local items = {
    { force = false, label = "Leave them alone (restore the other files)" },
    { force = true, label = "Overwrite them with their content before the prompt" },
  }
  vim.ui.select(items, {
    prompt = ("Changed since seri wrote them: %s. Overwrite?"):format(
      table.concat(conflicts, ", ")
    ),
    kind = "seri_rewind_conflicts",
    format_item = function(item)
      return item.label
    end,
  }, function(choice)
    if choice then
      on_answer(choice.force)
    end
  end)
end

---Pick a checkpoint, then what to restore (and whether to overwrite), then rewind.
---@param project seri.Project
function M.pick(project)
  client.execute(project, "seri.checkpoints", nil, function(err, result)
    if err then
      notice.say("could not list checkpoints: " .. (err.message or ""), vim.log.levels.ERROR)
      return
    end
    local checkpoints = type(result) == "table" and result.checkpoints or {}
    if #checkpoints == 0 then
      if type(result) == "table" and result.retired then
        notice.say(
          "this session's checkpoints were retired (seri keeps them for the 20 most "
            .. "recently used sessions of a project); its conversation is intact",
          vim.log.levels.WARN
        )
      else
        notice.say("nothing to rewind in this session")
      end
      return
    end
    vim.ui.select(checkpoints, {
      prompt = "Rewind to before which prompt?",
      kind = "seri_checkpoint",
      format_item = M.format_checkpoint,
    }, function(checkpoint)
      if not checkpoint then
        return
      end
      vim.ui.select(RESTORE_ITEMS, {
        prompt = "Restore what?",
        kind = "seri_rewind_restore",
        format_item = function(item)
          return item.label
        end,
      }, function(choice)
        if not choice then
          return
        end
        local request = { steps = checkpoint.steps, restore = choice.restore }
        local conflicts = checkpoint.conflicts or {}
        if #conflicts == 0 or choice.restore == "conversation" then
          M.run(project, request)
          return
        end
        ask_force(conflicts, function(force)
          request.force = force
          M.run(project, request)
        end)
      end)
    end)
  end)
end

---Completion of `:SeriRewind`: the counts the open session can rewind, then the words.
---@param project seri.Project?
---@param lead string
---@return string[]
function M.complete(project, lead)
  local items = {}
  local result = project and client.execute_sync(project, "seri.checkpoints", nil, 500)
  if type(result) == "table" and type(result.checkpoints) == "table" then
    for _, checkpoint in ipairs(result.checkpoints) do
      table.insert(items, tostring(checkpoint.steps))
    end
  end
  vim.list_extend(items, { "both", "conversation", "files", "force" })
  return vim.tbl_filter(function(item)
    return vim.startswith(item, lead)
  end, items)
end

return M
