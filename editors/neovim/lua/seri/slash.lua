-- The slash commands, as the server advertises them (`initialize`'s
-- `capabilities.experimental.seri.slashCommands`, docs/protocol.md). `:SeriPrompt`'s
-- completion and the chat input's (the omnifunc, nvim-cmp, blink.cmp) are built from this
-- list alone, so a command added on the server is offered with no change here. Before
-- the project's server runs there are none.

local client = require("seri.client")

local M = {}

---@class seri.SlashCommand
---@field name string without the slash
---@field usage string how it is typed: `/compact [focus words]`
---@field summary string what it does, one line
---@field argumentHint string? what the words after it are (nil: it takes none)

---The slash commands the server of `project` advertises, in its order; none while it is
---not running.
---@param project seri.Project?
---@return seri.SlashCommand[]
function M.commands(project)
  local lsp = project and client.client(project)
  local capabilities = lsp and lsp.server_capabilities
  local experimental = capabilities and capabilities.experimental
  local seri = type(experimental) == "table" and experimental.seri
  local list = type(seri) == "table" and seri.slashCommands
  if type(list) ~= "table" then
    return {}
  end
  return vim.tbl_filter(function(command)
    return type(command) == "table" and type(command.name) == "string"
  end, list)
end

---The commands whose `/name` starts with `typed` (a `/` and the start of a name).
---@param project seri.Project?
---@param typed string
---@return seri.SlashCommand[]
function M.matching(project, typed)
  return vim.tbl_filter(function(command)
    return vim.startswith("/" .. command.name, typed)
  end, M.commands(project))
end

---Completion of `:SeriPrompt {text}` in the current buffer's project: `/name`, with a
---space after it when the command takes words.
---@param lead string
---@return string[]
function M.complete_prompt(lead)
  if lead:sub(1, 1) ~= "/" then
    return {}
  end
  return vim.tbl_map(function(command)
    return "/" .. command.name .. (command.argumentHint and " " or "")
  end, M.matching(client.current(), lead))
end

return M
