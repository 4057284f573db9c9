-- The `:Seri*` user commands. `plugin/seri.lua` creates them at startup; each loads
-- the rest of the plugin only when it runs.

local M = {}

---@type {name: string, run: fun(args: table), opts: table}[]
M.list = {
  {
    name = "Seri",
    run = function()
      require("seri").toggle()
    end,
    opts = { nargs = 0, desc = "Toggle the seri chat" },
  },
  {
    name = "SeriPrompt",
    run = function(args)
      require("seri").prompt(args.args)
    end,
    opts = {
      nargs = "+",
      desc = "Send a prompt to seri (slash commands pass through)",
      complete = function(lead)
        return require("seri.slash").complete_prompt(lead)
      end,
    },
  },
  {
    name = "SeriSend",
    run = function(args)
      local first, last = args.line1, args.line2
      if args.range == 0 then
        first = vim.api.nvim_win_get_cursor(0)[1]
        last = first
      end
      require("seri.attach").send_selection(first, last, args.args)
    end,
    opts = {
      nargs = "*",
      range = true,
      desc = "Send lines to seri: with a prompt at once, else into the chat's input",
    },
  },
  {
    name = "SeriRetry",
    run = function()
      require("seri").retry()
    end,
    opts = { nargs = 0, desc = "Send the last seri prompt again" },
  },
  {
    name = "SeriCompact",
    run = function(args)
      require("seri").compact(args.args)
    end,
    opts = { nargs = "*", desc = "Compact the seri session now [focus words]" },
  },
  {
    name = "SeriNew",
    run = function()
      require("seri").new()
    end,
    opts = { nargs = 0, desc = "Start a new seri session" },
  },
  {
    name = "SeriClear",
    run = function()
      require("seri").clear()
    end,
    opts = { nargs = 0, desc = "Clear: a new seri session (the old one is kept)" },
  },
  {
    name = "SeriResume",
    run = function(args)
      require("seri").resume(args.args ~= "" and args.args or nil)
    end,
    opts = {
      nargs = "?",
      desc = "Resume a seri session by id, or pick one",
      complete = function(lead)
        return require("seri").complete_sessions(lead)
      end,
    },
  },
  {
    name = "SeriDelete",
    run = function(args)
      require("seri").delete(args.args ~= "" and args.args or nil)
    end,
    opts = {
      nargs = "?",
      desc = "Delete a seri session for good, after a confirmation (by id, or pick one)",
      complete = function(lead)
        return require("seri").complete_sessions(lead)
      end,
    },
  },
  {
    name = "SeriFork",
    run = function()
      require("seri").fork()
    end,
    opts = {
      nargs = 0,
      desc = "Fork the seri session at the message under the cursor (elsewhere: at the last one)",
    },
  },
  {
    name = "SeriSearch",
    run = function(args)
      require("seri").search(args.args, { all = args.bang })
    end,
    opts = {
      nargs = "+",
      bang = true,
      desc = "Search the seri sessions of this project (! every project's) into the quickfix list",
    },
  },
  {
    name = "SeriRename",
    run = function(args)
      require("seri").rename(args.args ~= "" and args.args or nil)
    end,
    opts = { nargs = "?", desc = "Give the seri session a title (none: edit the current one)" },
  },
  {
    name = "SeriExport",
    run = function(args)
      require("seri").export(args.args, { force = args.bang })
    end,
    opts = {
      nargs = 1,
      bang = true,
      complete = "file",
      desc = "Export the seri session to a file: .md a transcript, .json a bundle (! replaces)",
    },
  },
  {
    name = "SeriImport",
    run = function(args)
      require("seri").import(args.args)
    end,
    opts = {
      nargs = 1,
      complete = "file",
      desc = "Import a seri session bundle (.json) as a new session and open it",
    },
  },
  {
    name = "SeriContext",
    run = function()
      require("seri").context()
    end,
    opts = { nargs = 0, desc = "Show what fills the seri session's context window" },
  },
  {
    name = "SeriMcp",
    run = function()
      require("seri").mcp()
    end,
    opts = { nargs = 0, desc = "List seri's MCP servers and their status (r restarts one)" },
  },
  {
    name = "SeriCost",
    run = function()
      require("seri").cost()
    end,
    opts = { nargs = 0, desc = "Show what the seri session's model calls cost, in the chat" },
  },
  {
    name = "SeriModel",
    run = function(args)
      require("seri").model(args.args ~= "" and args.args or nil)
    end,
    opts = {
      nargs = "?",
      desc = "Choose the seri session's model from its next prompt (none: pick from the provider's)",
    },
  },
  {
    name = "SeriMaxTurns",
    run = function(args)
      require("seri").max_turns(args.args)
    end,
    opts = { nargs = 1, desc = "Set the seri turn budget for this session" },
  },
  {
    name = "SeriRewind",
    run = function(args)
      require("seri").rewind(args.fargs)
    end,
    opts = {
      nargs = "*",
      desc = "Rewind seri to before a prompt [n] [both|conversation|files] [force], or pick one",
      complete = function(lead)
        return require("seri").complete_rewind(lead)
      end,
    },
  },
  {
    name = "SeriTrajectory",
    run = function(args)
      require("seri").trajectory(args.args)
    end,
    opts = {
      nargs = "?",
      desc = "Show seri's trajectory recording, or turn it on or off",
      complete = function(lead)
        return vim.tbl_filter(function(item)
          return vim.startswith(item, lead)
        end, { "off", "on" })
      end,
    },
  },
  {
    name = "SeriCancel",
    run = function()
      require("seri").cancel()
    end,
    opts = { nargs = 0, desc = "Stop the running seri task" },
  },
  {
    name = "SeriStop",
    run = function()
      require("seri.chat.output").stop()
    end,
    opts = {
      nargs = 0,
      desc = "Stop the command seri runs (under the cursor in the chat, or the one running)",
    },
  },
  {
    name = "SeriInstall",
    run = function()
      require("seri").install()
    end,
    opts = { nargs = 0, desc = "Install or upgrade the seri server from the plugin's checkout" },
  },
}

---Create every command.
function M.create()
  for _, command in ipairs(M.list) do
    vim.api.nvim_create_user_command(command.name, command.run, command.opts)
  end
end

return M
