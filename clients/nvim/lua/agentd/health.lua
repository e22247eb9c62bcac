--- agentd.health: `:checkhealth agentd`. Reports the Neovim version, the configuration
--- (checked against the options there are), the socket path and where it comes from, and
--- whether a daemon answers `initialize` there: its version, protocol and OS sandbox.
---
--- It asks on a connection of its own (closed at the end), so the plugin's connection and
--- chats are left as they are; it loads the client's connection code (agentd.rpc), not the
--- client. Works on Neovim 0.7+: vim.health.start/ok/... (0.9+), vim.health.report_* (0.8),
--- require("health").report_* (0.7).

local M = {}

--- How long the check waits for the daemon's answer.
M.timeout_ms = 5000

--- The report functions of this Neovim: start, ok, info, warn, error.
local function reporter()
  local h = vim.health
  if h ~= nil and h.start ~= nil then
    return h
  end
  if h == nil or h.report_start == nil then
    h = require("health")
  end
  return { start = h.report_start, ok = h.report_ok, info = h.report_info, warn = h.report_warn, error = h.report_error }
end

local OPENS = { vsplit = true, split = true, tab = true, current = true }

-- What is wrong with option `key` set to `v`, or nil.
local function bad_option(key, v)
  if key == "socket" then
    if v ~= nil and (type(v) ~= "string" or v == "") then
      return "a path (a non-empty string) or nil"
    end
  elseif key == "open" then
    if not OPENS[v] then
      return '"vsplit", "split", "tab" or "current"'
    end
  elseif key == "mappings" then
    if type(v) ~= "boolean" then
      return "true or false"
    end
  elseif key == "reconnect_max_ms" then
    if type(v) ~= "number" or v <= 0 then
      return "a positive number of milliseconds"
    end
  end
  return nil
end

local function check_config(r, agentd)
  r.start("Configuration")
  local config, defaults = agentd.config, agentd._defaults
  local keys = {}
  for key in pairs(defaults) do
    keys[#keys + 1] = key
  end
  keys[#keys + 1] = "socket" -- its default is nil
  table.sort(keys)
  local problems = 0
  for _, key in ipairs(keys) do
    local v = config[key]
    local wrong = bad_option(key, v)
    if wrong then
      problems = problems + 1
      r.error(("%s = %s: must be %s"):format(key, vim.inspect(v), wrong), { "fix it in require(\"agentd\").setup({...})" })
    else
      r.info(("%s = %s%s"):format(key, vim.inspect(v), v == defaults[key] and " (default)" or ""))
    end
  end
  for key, v in pairs(config) do
    if defaults[key] == nil and key ~= "socket" then
      problems = problems + 1
      r.warn(("unknown option %s = %s: ignored"):format(key, vim.inspect(v)), { "see :help agentd-config" })
    end
  end
  if problems == 0 then
    r.ok("the options are valid")
  end
end

-- Connects and asks `initialize`; cb-less: waits (with vim.wait) up to M.timeout_ms.
-- Returns the result, or nil and why not.
local function initialize(rpc, path)
  local done, result, failure, conn = false, nil, nil, nil
  rpc.connect(path, {}, function(c, err)
    if c == nil then
      done, failure = true, err
      return
    end
    conn = c
    c:request("initialize", { clientName = "agentd.nvim checkhealth", protocolVersion = 1 }, function(e, r)
      done = true
      if e then
        failure = "initialize failed: " .. tostring(e.message)
      else
        result = r
      end
    end)
  end)
  local answered = vim.wait(M.timeout_ms, function()
    return done
  end, 10)
  if conn ~= nil then
    conn:close()
  end
  if not answered then
    return nil, ("no answer to initialize within %d ms"):format(M.timeout_ms)
  end
  return result, failure
end

local function check_sandbox(r, value, sandbox)
  if sandbox == nil then
    r.info("the daemon does not say how it confines commands (an older agentd)")
    return
  end
  local mode = tostring(value(sandbox.mode))
  local abi = value(sandbox.abi)
  local kernel = abi and ("Landlock ABI " .. tostring(abi)) or "no Landlock"
  if value(sandbox.enforced) then
    r.ok(("sandbox: enforced, default mode %s (%s)"):format(mode, kernel))
  elseif mode == "off" then
    r.warn("sandbox: off (`[sandbox] mode = \"off\"`): commands run with your full rights", {
      "the permission prompts are the only control; see docs/security.md",
    })
  else
    local reason = value(sandbox.reason)
    r.warn(("sandbox: not available (%s; %s), default mode %s"):format(reason or "no reason given", kernel, mode), {
      "every command asks before it runs, and its prompt says it would run unconfined",
    })
  end
end

local function check_daemon(r, agentd)
  r.start("Daemon")
  local rpc = require("agentd.rpc")
  local value = rpc.value
  local path, source = agentd.config.socket, 'setup({socket = ...})'
  if path == nil or path == "" then
    path, source = rpc.default_socket_path()
  end
  r.info(("socket: %s (from %s)"):format(path, source))
  local stat = (vim.uv or vim.loop).fs_stat(path)
  if stat == nil then
    r.error("no socket at " .. path, {
      "start the daemon: `agentd` (or its service: systemctl --user start agentd.socket)",
      "or point the plugin at its socket: setup({socket = ...}) or $AGENTD_SOCKET",
    })
    return
  end
  if stat.type ~= "socket" then
    r.error(("%s is a %s, not a socket"):format(path, stat.type))
    return
  end
  r.ok("the socket path resolves: " .. path)
  local result, err = initialize(rpc, path)
  if result == nil then
    r.error("the daemon does not answer: " .. tostring(err), { "is agentd running? its log says why it stopped" })
    return
  end
  r.ok(("agentd %s answers initialize (protocol %s)"):format(tostring(value(result.serverVersion)), tostring(value(result.protocolVersion))))
  local capabilities = value(result.capabilities) or {}
  check_sandbox(r, value, value(capabilities.sandbox))
end

function M.check()
  local r = reporter()
  r.start("Neovim")
  local v = vim.version()
  local version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.7") == 1 then
    r.ok("Neovim " .. version)
  else
    r.error("Neovim " .. version .. ": agentd.nvim needs 0.7 or newer")
  end
  local agentd = require("agentd")
  r.info("agentd.nvim " .. agentd.version)
  check_config(r, agentd)
  check_daemon(r, agentd)
end

return M
