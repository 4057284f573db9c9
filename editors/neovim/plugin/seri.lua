-- seri: user commands only; everything else loads when a command runs or setup() is called.
if vim.g.loaded_seri == 1 then
  return
end
vim.g.loaded_seri = 1

if vim.fn.has("nvim-0.10") ~= 1 then
  vim.notify("seri needs Neovim 0.10 or later", vim.log.levels.ERROR)
  return
end

require("seri.commands").create()
