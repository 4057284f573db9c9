-- An nvim-cmp source for the chat's input (registered by `seri.attach` when nvim-cmp is
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
function source:is_available()
  return vim.bo.filetype == "seri_input"
end

---@return string[]
function source:get_trigger_characters()
  return attach.trigger_characters()
end

---@return string
function source:get_keyword_pattern()
  return [[\%(]] .. table.concat(attach.trigger_characters(), [[\|]]) .. [[\)\S*]]
end

---@param params table nvim-cmp's completion parameters
---@param callback fun(response: table?)
function source:complete(params, callback)
  local context = params.context
  local start, items = attach.complete(
    context.cursor_before_line,
    client.root_for(context.bufnr),
    context.cursor.row == 1
  )
  if not start then
    return callback()
  end
  callback({
    items = vim.tbl_map(function(item)
      return {
        label = item.word,
        filterText = item.word,
        insertText = item.word,
        kind = KINDS[item.kind],
        documentation = item.info,
      }
    end, items),
    isIncomplete = true,
  })
end

return source
