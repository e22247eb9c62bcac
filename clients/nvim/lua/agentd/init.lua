--- agentd: a Neovim client of the agentd daemon. The entry module: the options (`setup`)
--- and the commands, and nothing else loaded until a command is used.
---
--- plugin/agentd.lua loads this at startup, so it must stay small and require no other
--- module at load time: each command loads the client (agentd.client: the connection,
--- sessions, chat buffers) in its callback, and :checkhealth agentd loads agentd.health.
--- Every other field of this module (`new`, `send`, `open`, `session`, ...) is the client's,
--- loaded on first access.

local M = {}

M.version = "0.1.0"

local defaults = {
  -- Socket path; nil: $AGENTD_SOCKET, else the daemon's default path.
  socket = nil,
  -- Where :AgentdNew and :AgentdAgents open a chat buffer: "vsplit", "split", "tab" or
  -- "current".
  open = "vsplit",
  -- Buffer-local mappings in chat buffers (i / <CR> to write, <C-c> to cancel, gp to answer
  -- open prompts).
  mappings = true,
  -- Longest wait between two reconnection attempts.
  reconnect_max_ms = 2000,
}

M.config = vim.deepcopy(defaults)
-- The options and their defaults (what :checkhealth agentd checks the config against).
M._defaults = defaults

-- Calls `agentd.client.<name>(...)`, loading the client on first use.
local function client(name, ...)
  return require("agentd.client")[name](...)
end

local commands_defined = false

--- Defines the commands and `<Plug>(agentd-send)` (the plugin/ file calls this; so does
--- setup). Once: later calls do nothing.
function M.define_commands()
  if commands_defined then
    return
  end
  commands_defined = true
  local cmd = vim.api.nvim_create_user_command
  cmd("AgentdNew", function(o)
    client("new", o.args)
  end, { nargs = "?", desc = "agentd: new agent in the current directory" })
  cmd("AgentdSend", function(o)
    if o.range > 0 then
      client("send", o.args, o.line1, o.line2)
    else
      client("send", o.args)
    end
  end, { nargs = "*", range = true, desc = "agentd: send text (with a range: those lines, their file and range)" })
  cmd("AgentdAgents", function()
    client("agents")
  end, { desc = "agentd: pick an agent and open its chat" })
  cmd("AgentdCancel", function()
    client("cancel")
  end, { desc = "agentd: cancel the current chat's run" })
  cmd("AgentdPrompts", function()
    client("prompts")
  end, { desc = "agentd: answer open permission prompts and questions" })
  cmd("AgentdReconnect", function()
    client("reconnect")
  end, { desc = "agentd: reconnect to the daemon" })
  -- Sends the visual selection with its file and line range: xmap <leader>as <Plug>(agentd-send)
  vim.keymap.set("x", "<Plug>(agentd-send)", ":AgentdSend<CR>", { silent = true, desc = "agentd: send the selection" })
end

--- Options (see :help agentd-config); every field is optional.
function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  M.define_commands()
end

return setmetatable(M, {
  __index = function(_, key)
    return require("agentd.client")[key]
  end,
})
