-- Markdown rendering of the chat's prose (prompts and replies) with extmarks.
--
-- The chat buffer is not highlighted as one markdown document: what seri asks to
-- approve, tool rows, results, paths, notices and the recap are shown exactly as they
-- are written, and markdown's concealing (link brackets, code-span marks) would hide
-- characters of code there. Each stretch of prose is parsed on its own with Neovim's
-- markdown parser (its injections too: inline markup, code in a block's language), and
-- the captures of the `highlights` queries become extmarks on its lines: highlights,
-- conceals and, from Neovim 0.11, the hidden fence lines of code blocks.
--
-- As in CommonMark, `[text]` is a link only when the text defines its label: without
-- a definition (`[id]: url`), `src/[id]/page.tsx` or `x[0]` in a reply is text, shown
-- with its brackets (the parser takes any `[...]` for a reference link).

local M = {}

-- The treesitter highlighter's default priority (`vim.hl.priorities.treesitter`).
local PRIORITY = 100
local CONCEAL_LINES = vim.fn.has("nvim-0.11") == 1

---Whether prose can be rendered here (Neovim's markdown parser is there).
---@return boolean
function M.available()
  return (pcall(vim.treesitter.language.add, "markdown"))
end

-- Links by reference: links only where their label is defined.
local REFERENCE_LINKS = {
  shortcut_link = true,
  full_reference_link = true,
  collapsed_reference_link = true,
}

---Whether `node` is a reference link or part of one.
---@param node TSNode
---@return boolean
local function in_reference_link(node)
  local parent = node:parent()
  return REFERENCE_LINKS[node:type()] or (parent ~= nil and REFERENCE_LINKS[parent:type()])
    or false
end

---The `conceal` or `conceal_lines` value of a capture: set on its pattern or on it.
---@param metadata table
---@param id integer
---@param key string
---@return string?
local function meta(metadata, id, key)
  local value = metadata[key]
  if value == nil and metadata[id] then
    value = metadata[id][key]
  end
  return value
end

---@class seri.MarkdownMark
---@field row integer 0-based, within the text
---@field col integer
---@field end_row integer
---@field end_col integer
---@field group string
---@field priority integer
---@field conceal string?
---@field conceal_lines boolean

-- The marks of each text rendered lately: the chat is drawn again as a whole (a page
-- loaded, a compaction) far more often than its messages change.
---@type table<string, seri.MarkdownMark[]>
local cache = {}
local cached = 0
local CACHE_SIZE = 1000

---The marks that render `text` (its lines `lines`) as markdown.
---@param text string
---@param lines string[]
---@return seri.MarkdownMark[]
local function marks_of(text, lines)
  local ok, parser = pcall(vim.treesitter.get_string_parser, text, "markdown")
  if not ok then
    return {}
  end
  parser:parse(true)
  local marks = {}
  local last_row = #lines - 1
  local defines = vim.iter(lines):any(function(line)
    return line:match("^ ? ? ?%[[^%]]+%]:") ~= nil
  end)
  parser:for_each_tree(function(tree, ltree)
    local lang = ltree:lang()
    local query = vim.treesitter.query.get(lang, "highlights")
    if not query then
      return
    end
    for id, node, metadata in query:iter_captures(tree:root(), text) do
      local name = query.captures[id]
      local drawn = name ~= "spell" and name ~= "nospell" and not vim.startswith(name, "_")
      if drawn and (defines or not in_reference_link(node)) then
        local range = vim.treesitter.get_range(node, text, metadata[id])
        local end_row, end_col = range[4], range[5]
        if end_row > last_row then
          end_row, end_col = last_row, #lines[#lines]
        end
        table.insert(marks, {
          row = range[1],
          col = range[2],
          end_row = end_row,
          end_col = end_col,
          group = "@" .. name .. "." .. lang,
          priority = tonumber(metadata.priority) or PRIORITY,
          conceal = meta(metadata, id, "conceal"),
          conceal_lines = CONCEAL_LINES and meta(metadata, id, "conceal_lines") ~= nil,
        })
      end
    end
  end)
  return marks
end

---Render `lines`, shown in `buf` from 0-based row `first`, as markdown: extmarks in `ns`.
---@param buf integer
---@param ns integer
---@param first integer
---@param lines string[]
function M.render(buf, ns, first, lines)
  if #lines == 0 then
    return
  end
  local text = table.concat(lines, "\n")
  local marks = cache[text]
  if not marks then
    marks = marks_of(text, lines)
    if cached >= CACHE_SIZE then
      cache, cached = {}, 0
    end
    cache[text], cached = marks, cached + 1
  end
  for _, mark in ipairs(marks) do
    pcall(vim.api.nvim_buf_set_extmark, buf, ns, first + mark.row, mark.col, {
      end_row = first + mark.end_row,
      end_col = mark.end_col,
      hl_group = mark.group,
      priority = mark.priority,
      conceal = mark.conceal,
      conceal_lines = mark.conceal_lines and "" or nil,
      strict = false,
    })
  end
end

return M
