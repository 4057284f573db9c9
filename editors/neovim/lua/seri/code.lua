-- Fenced code blocks in the chat: a frame with the language around each, and the
-- block under the cursor for `gy`, `gp` and `ga`.

local render = require("seri.render")

local M = {}

-- Neovim 0.11 hides the fence lines of markdown code blocks (treesitter `conceal_lines`):
-- the frame is then drawn on lines of its own.
local FENCES_HIDDEN = vim.fn.has("nvim-0.11") == 1

---Draw a frame with the language around a fenced code block (0-based rows).
---@param buf integer
---@param ns integer the namespace of the frames
---@param frame {first: integer, last: integer?, lang: string}
---@param stop integer the block's last row (for a fence still open)
---@param highlighted boolean the prose is rendered as markdown (0.11 hides its fences)
function M.draw_frame(buf, ns, frame, stop, highlighted)
  local last_body = (frame.last or (stop + 1)) - 1
  local label = frame.lang ~= "" and frame.lang or "code"
  local width = 24
  for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, frame.first + 1, last_body + 1, false)) do
    width = math.max(width, math.min(100, vim.fn.strdisplaywidth(line) + 4))
  end
  local top = { { "╭─ " .. label .. " " .. ("─"):rep(width - #label - 4), "SeriCodeFrame" } }
  local bottom = { { "╰" .. ("─"):rep(width - 1), "SeriCodeFrame" } }
  for row = frame.first + 1, last_body do
    vim.api.nvim_buf_set_extmark(buf, ns, row, 0, {
      virt_text = { { "│ ", "SeriCodeFrame" } },
      virt_text_pos = "inline",
    })
  end
  if FENCES_HIDDEN and highlighted then
    if last_body > frame.first then
      vim.api.nvim_buf_set_extmark(buf, ns, frame.first + 1, 0, {
        virt_lines = { top },
        virt_lines_above = true,
      })
      if frame.last then
        vim.api.nvim_buf_set_extmark(buf, ns, last_body, 0, { virt_lines = { bottom } })
      end
    end
    return
  end
  local overlay = { virt_text_pos = "overlay", virt_text_win_col = 0, hl_mode = "combine" }
  vim.api.nvim_buf_set_extmark(buf, ns, frame.first, 0, vim.tbl_extend("force", overlay, {
    virt_text = top,
  }))
  if frame.last then
    vim.api.nvim_buf_set_extmark(buf, ns, frame.last, 0, vim.tbl_extend("force", overlay, {
      virt_text = bottom,
    }))
  end
end

---The file a fence's info string names (```python src/app.py, or ```src/app.py): a word
---with a dot and an extension, no scheme.
---@param info string
---@return string?
function M.named_file(info)
  for word in info:gmatch("%S+") do
    if not word:match("^%a[%w+.-]*:") and word:match("^[%w./\\_-]*[%w_-]%.%w+$") then
      return word
    end
  end
  return nil
end

---The fenced code block around `row` (1-based) of `lines`: its code lines.
---@param lines string[]
---@param row integer
---@return string[]? lines
---@return string? lang
---@return string? file the file its fence names
function M.block_at(lines, row)
  for _, fence in ipairs(render.fences(lines)) do
    local last = fence.last or (#lines + 1)
    if row >= fence.first and row <= last then
      local file = M.named_file(fence.info or "")
      return vim.list_slice(lines, fence.first + 1, last - 1), fence.lang, file
    end
  end
  return nil, nil, nil
end

return M
