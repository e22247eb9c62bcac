-- What the plugin costs at startup, and :checkhealth agentd without a daemon. Run by test.sh
-- in a Neovim of its own (see run.lua): the plugin/ file is sourced as a plugin manager would,
-- and nothing else of the plugin is required before the first check.

local here = debug.getinfo(1, "S").source:sub(2):match("(.*)/")
vim.opt.runtimepath:prepend(here .. "/..")
package.path = here .. "/?.lua;" .. package.path

local H = require("harness")
local work = assert(os.getenv("AGENTD_NVIM_WORK"), "AGENTD_NVIM_WORK is not set")

-- The plugin's modules loaded so far, sorted.
local function loaded()
  local out = {}
  for name in pairs(package.loaded) do
    if name == "agentd" or name:match("^agentd%.") then
      out[#out + 1] = name
    end
  end
  table.sort(out)
  return out
end

local function health_lines()
  vim.cmd("silent checkhealth agentd")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd("bwipeout!")
  return table.concat(lines, "\n")
end

local function has(text, needle)
  if text:find(needle, 1, true) == nil then
    error(("%q not in:\n%s"):format(needle, text), 2)
  end
end

local cases = H.cases("startup")

-- Must come first: it is about what the plugin/ file alone loads.
cases.case("startup loads only the entry module; a command loads the client", function()
  H.eq(loaded(), {}, "before the plugin/ file")
  vim.cmd("runtime plugin/agentd.lua")
  H.eq(loaded(), { "agentd" }, "after the plugin/ file")
  local commands = vim.api.nvim_get_commands({})
  for _, name in ipairs({ "AgentdNew", "AgentdSend", "AgentdAgents", "AgentdCancel", "AgentdPrompts", "AgentdReconnect" }) do
    H.truthy(commands[name], name .. " is defined")
  end
  H.truthy(vim.fn.maparg("<Plug>(agentd-send)", "x") ~= "", "<Plug>(agentd-send) is mapped")
  require("agentd").setup({ reconnect_max_ms = 500 })
  H.eq(loaded(), { "agentd" }, "after setup")
  -- A command that needs no daemon: it loads the client and its parts.
  vim.cmd("AgentdPrompts")
  H.eq(loaded(), { "agentd", "agentd.client", "agentd.prompts", "agentd.render", "agentd.rpc", "agentd.session" }, "after :AgentdPrompts")
  H.eq(require("agentd")._state.connection, "not connected", "the client through the entry module")
end)

cases.case(":checkhealth agentd without a daemon says what to do", function()
  local socket = work .. "/nothing-here.sock"
  vim.env.AGENTD_SOCKET = socket
  local report = health_lines()
  vim.env.AGENTD_SOCKET = nil
  has(report, "Neovim")
  local v = vim.version()
  has(report, ("Neovim %d.%d.%d"):format(v.major, v.minor, v.patch))
  has(report, "Configuration")
  has(report, "reconnect_max_ms = 500")
  has(report, "open = \"vsplit\" (default)")
  has(report, "the options are valid")
  has(report, ("socket: %s (from $AGENTD_SOCKET)"):format(socket))
  has(report, "no socket at " .. socket)
  has(report, "start the daemon")
end)

cases.case(":checkhealth agentd finds a wrong option and a socket path that is no socket", function()
  local file = work .. "/not-a-socket"
  local f = assert(io.open(file, "w"))
  f:close()
  require("agentd").setup({ socket = file, open = "float", colour = "blue" })
  local report = health_lines()
  require("agentd").setup({})
  has(report, 'open = "float": must be "vsplit", "split", "tab" or "current"')
  has(report, 'unknown option colour = "blue"')
  has(report, ("socket: %s (from setup({socket = ...}))"):format(file))
  has(report, file .. " is a file, not a socket")
end)

cases.finish()
