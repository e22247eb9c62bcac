--- agentd.rpc: one JSON-RPC 2.0 connection to the agentd daemon over its Unix socket.
---
--- Owns the socket path rule, the peer check, NDJSON framing, request ids, timeouts and
--- the routing of `event` notifications. It knows nothing about agents, buffers or the UI:
--- callers get `cb(err, result)` for requests and `on_event(subscription, event)` for
--- notifications, always on the main loop (never in a fast event), in arrival order.
--- Works on Neovim 0.7+: vim.loop only, vim.json for JSON.

local uv = vim.uv or vim.loop

local M = {}

--- Seconds a request may take before its callback gets a timeout error. The daemon gives
--- up on a request after 60 s (`-32603`), so this only fires when the daemon hangs.
M.request_timeout_ms = 70000

--- The JSON `null` of vim.json, as a Lua nil.
function M.value(v)
  if v == vim.NIL then
    return nil
  end
  return v
end

local function env(name)
  local v = os.getenv(name)
  if v ~= nil and v ~= "" then
    return v
  end
  return nil
end

--- The default socket path, the same rule as the daemon's (docs/protocol.md 1.1):
--- $AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock, else
--- ${TMPDIR:-/tmp}/agentd-$UID/agentd.sock. Second: which of them it is (for people).
function M.default_socket_path()
  local explicit = env("AGENTD_SOCKET")
  if explicit then
    return explicit, "$AGENTD_SOCKET"
  end
  local runtime = env("XDG_RUNTIME_DIR")
  if runtime then
    return runtime .. "/agentd/agentd.sock", "$XDG_RUNTIME_DIR/agentd/agentd.sock"
  end
  local tmp = env("TMPDIR")
  return (tmp or "/tmp") .. "/agentd-" .. tostring(uv.getuid()) .. "/agentd.sock",
    (tmp and "$TMPDIR" or "/tmp") .. "/agentd-$UID/agentd.sock"
end

-- The uid of the process at the other end of a connected Unix socket, through LuaJIT's FFI:
-- SO_PEERCRED on Linux, getpeereid elsewhere. nil and a reason when this build cannot ask
-- (no FFI, an architecture whose socket constants differ, a call that failed).
local function peer_uid(fd)
  local ok, ffi = pcall(require, "ffi")
  if not ok or type(fd) ~= "number" or fd < 0 then
    return nil, "this Neovim has no LuaJIT FFI"
  end
  -- Separately: a declaration another plugin made already fails alone.
  pcall(ffi.cdef, "int getsockopt(int, int, int, void *, unsigned int *);")
  pcall(ffi.cdef, "int getpeereid(int, unsigned int *, unsigned int *);")
  if ffi.os == "Linux" then
    local arch = ffi.arch
    if arch ~= "x64" and arch ~= "x86" and arch ~= "arm" and arch ~= "arm64" then
      return nil, "SO_PEERCRED constants unknown on " .. arch
    end
    -- struct ucred { pid_t pid; uid_t uid; gid_t gid; }; SOL_SOCKET 1, SO_PEERCRED 17.
    local cred = ffi.new("int[3]")
    local len = ffi.new("unsigned int[1]", 12)
    local called, rc = pcall(ffi.C.getsockopt, fd, 1, 17, cred, len)
    if not called or rc ~= 0 or len[0] ~= 12 then
      return nil, "getsockopt(SO_PEERCRED) failed"
    end
    return tonumber(cred[1])
  end
  if ffi.os == "OSX" or ffi.os == "BSD" then
    local euid = ffi.new("unsigned int[1]")
    local egid = ffi.new("unsigned int[1]")
    local called, rc = pcall(ffi.C.getpeereid, fd, euid, egid)
    if not called or rc ~= 0 then
      return nil, "getpeereid failed"
    end
    return tonumber(euid[0])
  end
  return nil, "no peer credentials on " .. tostring(ffi.os)
end

-- When the peer's uid cannot be asked: the socket and its folder must be ours and the folder
-- private (0700), which is what the daemon itself requires of them, so no other user can
-- have put a socket there.
local function check_owner(path, uid)
  local sock = uv.fs_stat(path)
  local dir_path = path:match("^(.*)/[^/]*$")
  if dir_path == nil or dir_path == "" then
    dir_path = "/"
  end
  local dir = uv.fs_stat(dir_path)
  if sock == nil or dir == nil then
    return false, "cannot stat " .. path .. " or its folder"
  end
  if sock.uid ~= uid then
    return false, path .. " belongs to uid " .. sock.uid
  end
  if dir.uid ~= uid or dir.mode % 512 ~= 448 then
    return false, dir_path .. " is not a private (0700) folder of this user"
  end
  return true
end

M._check_owner = check_owner

--- Checks that the daemon behind `pipe` (connected to `path`) runs as this user. Returns
--- true, or false and the reason to refuse the socket.
function M.check_peer(pipe, path)
  local me = uv.getuid()
  local uid, why = peer_uid(pipe:fileno())
  if uid ~= nil then
    if uid == me then
      return true
    end
    return false, ("the process serving %s runs as uid %d, not as this user (%d)"):format(path, uid, me)
  end
  local ok, reason = check_owner(path, me)
  if ok then
    return true
  end
  return false, ("cannot verify who serves %s (%s): %s"):format(path, why, reason)
end

local Conn = {}
Conn.__index = Conn

--- Connects to the daemon at `path`. `handlers.on_event(subscription, event)` gets each
--- event notification, `handlers.on_close(reason)` is called once when the connection ends
--- (not after an explicit `close`). `cb(conn)` on success, `cb(nil, message)` on failure.
function M.connect(path, handlers, cb)
  local pipe = uv.new_pipe(false)
  pipe:connect(path, function(err)
    if err then
      pipe:close()
      vim.schedule(function()
        cb(nil, ("no agentd answers at %s (%s); start it with `agentd`"):format(path, err))
      end)
      return
    end
    local ok, why = M.check_peer(pipe, path)
    if not ok then
      pipe:close()
      vim.schedule(function()
        cb(nil, "refusing the socket: " .. why)
      end)
      return
    end
    local conn = setmetatable({
      path = path,
      pipe = pipe,
      next_id = 0,
      pending = {},
      parts = {},
      closed = false,
      handlers = handlers or {},
    }, Conn)
    pipe:read_start(function(rerr, chunk)
      conn:_on_read(rerr, chunk)
    end)
    vim.schedule(function()
      cb(conn)
    end)
  end)
end

-- Runs in a fast event: splits frames, decodes them, and hands them to the main loop in
-- order (vim.schedule keeps the order of its callbacks).
function Conn:_on_read(err, chunk)
  if err or chunk == nil then
    local reason = err and ("read error: " .. err) or "the daemon closed the connection"
    vim.schedule(function()
      self:_closed(reason)
    end)
    return
  end
  local frames = {}
  local start = 1
  while true do
    local nl = chunk:find("\n", start, true)
    if nl == nil then
      break
    end
    self.parts[#self.parts + 1] = chunk:sub(start, nl - 1)
    frames[#frames + 1] = table.concat(self.parts)
    self.parts = {}
    start = nl + 1
  end
  if start <= #chunk then
    self.parts[#self.parts + 1] = chunk:sub(start)
  end
  if #frames == 0 then
    return
  end
  local messages = {}
  for _, frame in ipairs(frames) do
    if frame:find("%S") then
      local ok, msg = pcall(vim.json.decode, frame)
      if ok and type(msg) == "table" then
        messages[#messages + 1] = msg
      end
    end
  end
  vim.schedule(function()
    for _, msg in ipairs(messages) do
      if self.closed then
        return
      end
      self:_dispatch(msg)
    end
  end)
end

local function to_error(e)
  if type(e) ~= "table" then
    return { message = tostring(e), kind = "internal" }
  end
  local data = M.value(e.data)
  return {
    code = M.value(e.code),
    message = M.value(e.message) or "error",
    kind = type(data) == "table" and M.value(data.kind) or nil,
  }
end

function Conn:_dispatch(msg)
  local id = M.value(msg.id)
  if id ~= nil and (msg.result ~= nil or msg.error ~= nil) then
    local entry = self.pending[id]
    if entry == nil then
      return
    end
    self.pending[id] = nil
    entry.timer:stop()
    entry.timer:close()
    if msg.error ~= nil and msg.error ~= vim.NIL then
      entry.cb(to_error(msg.error), nil)
    else
      entry.cb(nil, msg.result)
    end
    return
  end
  if msg.method == "event" and type(msg.params) == "table" then
    local params = msg.params
    if self.handlers.on_event and type(params.result) == "table" then
      self.handlers.on_event(params.subscription, params.result)
    end
  end
end

function Conn:_fail_pending(reason)
  local pending = self.pending
  self.pending = {}
  for _, entry in pairs(pending) do
    entry.timer:stop()
    entry.timer:close()
    entry.cb({ kind = "disconnected", message = reason }, nil)
  end
end

function Conn:_closed(reason)
  if self.closed then
    return
  end
  self.closed = true
  if not self.pipe:is_closing() then
    self.pipe:close()
  end
  self:_fail_pending(reason)
  if self.handlers.on_close then
    self.handlers.on_close(reason)
  end
end

--- Closes the connection; pending requests fail with kind `disconnected`; `on_close` is
--- not called.
function Conn:close()
  if self.closed then
    return
  end
  self.closed = true
  if not self.pipe:is_closing() then
    self.pipe:close()
  end
  self:_fail_pending("the connection was closed")
end

-- Sends one frame with an id; `cb(err, result)` once, on the main loop.
function Conn:_send(id, frame, cb)
  if self.closed then
    vim.schedule(function()
      cb({ kind = "disconnected", message = "not connected to agentd" }, nil)
    end)
    return
  end
  local timer = uv.new_timer()
  self.pending[id] = { cb = cb, timer = timer }
  timer:start(M.request_timeout_ms, 0, function()
    vim.schedule(function()
      local entry = self.pending[id]
      if entry == nil then
        return
      end
      self.pending[id] = nil
      timer:close()
      cb({ kind = "timeout", message = "agentd did not answer in time" }, nil)
    end)
  end)
  self.pipe:write(frame .. "\n", function(err)
    if err then
      vim.schedule(function()
        self:_closed("write error: " .. err)
      end)
    end
  end)
end

--- Calls `method` with `params` (a table of named params; nil for none). `cb(err, result)`
--- with err = {code, message, kind} (kind: the daemon's data.kind, or `disconnected`,
--- `timeout`).
function Conn:request(method, params, cb)
  self.next_id = self.next_id + 1
  local id = self.next_id
  if params == nil or next(params) == nil then
    params = vim.empty_dict()
  end
  local frame = vim.json.encode({ jsonrpc = "2.0", id = id, method = method, params = params })
  self:_send(id, frame, cb)
end

--- Ends a subscription. Written by hand: vim.json prints large integers with 14 digits,
--- and a subscription id must go back exactly as it came.
function Conn:unsubscribe(subscription, cb)
  self.next_id = self.next_id + 1
  local id = self.next_id
  local frame = ('{"jsonrpc":"2.0","id":%d,"method":"unsubscribe","params":{"subscription":%s}}'):format(
    id,
    type(subscription) == "number" and ("%.0f"):format(subscription) or vim.json.encode(subscription)
  )
  self:_send(id, frame, cb or function() end)
end

return M
