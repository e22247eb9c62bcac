-- What the plugin costs at startup. Run by test.sh in a Neovim of its own (see run.lua): the
-- plugin/ file is sourced as a plugin manager would, and nothing else of the plugin is
-- required before the checks.

local here = debug.getinfo(1, "S").source:sub(2):match("(.*)/")
vim.opt.runtimepath:prepend(here .. "/..")
package.path = here .. "/?.lua;" .. package.path

local H = require("harness")

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

local failed, passed = 0, 0
local function case(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    passed = passed + 1
  else
    failed = failed + 1
    io.stdout:write("FAIL " .. name .. "\n" .. tostring(err) .. "\n")
  end
end

-- Must come first: it is about what the plugin/ file alone loads.
case("startup loads only the entry module; a command loads the client", function()
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

io.stdout:write(("startup: %d passed, %d failed\n"):format(passed, failed))
if failed > 0 then
  vim.cmd("cquit 1")
end
vim.cmd("qall!")
