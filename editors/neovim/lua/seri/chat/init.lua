-- The chat: a `seri://chat` buffer in a split showing the open session of one project,
-- with a small `seri://input` window under it for typing prompts. This is its public
-- face (`require("seri.chat")`); the parts are
--
--   state.lua    what is shown and where (the one state table, mark namespaces)
--   draw.lua     drawing the buffer from the state; reading back what is drawn where
--   history.lua  the session's messages: pages, streamed replies, notices, reveal
--   events.lua   the server's notifications applied to the chat
--   ending.lua   how a stored turn ended (failed, cancelled, cut off), under its last message
--   input.lua    the prompt input: its text, sending, completion triggers
--   keys.lua     every key once: mappings, help lines and bar hints
--   window.lua   buffers, windows and their bars

local draw = require("seri.chat.draw")
local events = require("seri.chat.events")
local history = require("seri.chat.history")
local input = require("seri.chat.input")
local S = require("seri.chat.state")
local window = require("seri.chat.window")

local M = {}

M.CHAT_NAME = S.CHAT_NAME
M.INPUT_NAME = S.INPUT_NAME
---@type seri.ChatState
M.state = S.state

M.setup = events.setup
M.on_questions = events.on_questions

M.notice = history.notice
M.reveal = history.reveal
M.open_recap = history.open_recap
M.reload = history.reload
M.look_up_origin = history.look_up_origin
M.load_earlier = history.load_earlier
M.last_prompt = history.last_prompt

M.message_at = draw.message_at
M.message_under_cursor = draw.message_under_cursor
M.lines = draw.lines
M.foldexpr = draw.foldexpr
M.foldtext = draw.foldtext

M.focus_input = input.focus_input
M.set_input = input.set_input
M.add_to_input = input.add_to_input
M.offer_input = input.offer_input
M.input_text = input.input_text
M.send = input.send

M.is_open = window.is_open
M.bind = window.bind
M.open = window.open
M.close = window.close
M.toggle = window.toggle
M.follow = window.follow
M.winbar = window.winbar
M.input_winbar = window.input_winbar

return M
