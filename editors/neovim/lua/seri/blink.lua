-- A blink.cmp source for the chat's input (registered by `seri.attach` when blink.cmp is
-- installed): workspace files after `@`, `#buffer` and `#selection`, slash commands.

local attach = require("seri.attach")
local client = require("seri.client")

local KINDS = { file = 17, context = 18, command = 14 } -- File, Reference, Keyword

local source = {}

---@return table
function source.new()
  return setmetatable({}, { __index = source })
end

---@return boolean
function source:enabled()
  return vim.bo.filetype == "seri_input"
end

---@return string[]
function source:get_trigger_characters()
  return attach.trigger_characters()
end

---@param ctx table blink.cmp's context (`line`, `cursor` {row, col})
---@param callback fun(response: table)
function source:get_completions(ctx, callback)
  local row, col = ctx.cursor[1], ctx.cursor[2]
  local start, items = attach.complete(ctx.line:sub(1, col), client.root_for(ctx.bufnr), row == 1)
  local range = {
    start = { line = row - 1, character = start or col },
    ["end"] = { line = row - 1, character = col },
  }
  callback({
    items = vim.tbl_map(function(item)
      return {
        label = item.word,
        filterText = item.word,
        kind = KINDS[item.kind],
        documentation = item.info,
        textEdit = { newText = item.word, range = range },
      }
    end, start and items or {}),
    is_incomplete_backward = true,
    is_incomplete_forward = true,
  })
end

return source
