-- The test kit of the Neovim plugin: a scripted OpenAI-compatible model server and a real
-- agentd daemon, both driven from inside the headless Neovim that runs the plugin (its
-- event loop serves the mock while vim.wait waits). Every wait has a timeout.

local uv = vim.uv or vim.loop

local H = {}

H.timeout_ms = 15000

--- Waits until `cond()` is true; fails with `what` (and `detail()`, if given) after the
--- timeout.
function H.wait(what, cond, timeout_ms, detail)
  local ok = vim.wait(timeout_ms or H.timeout_ms, function()
    local good, result = pcall(cond)
    return good and result
  end, 10)
  if not ok then
    local extra = detail and ("\n" .. tostring(detail())) or ""
    error("timed out waiting for " .. what .. extra, 2)
  end
end

function H.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(("%s: got %s, want %s"):format(what or "value", vim.inspect(got), vim.inspect(want)), 2)
  end
end

function H.truthy(v, what)
  if not v then
    error((what or "value") .. " is not true", 2)
  end
  return v
end

--- A list of named cases run in order, each in `xpcall`, so one failing case is reported
--- with its traceback and the rest still run: `local cases = H.cases("unit")`,
--- `cases.case("name", fn)`, then `cases.finish()`, which prints the tally and quits Neovim
--- with status 1 when any case failed.
function H.cases(suite)
  local passed, failed = 0, 0
  local cases = {}
  function cases.case(name, fn)
    local ok, err = xpcall(fn, debug.traceback)
    if ok then
      passed = passed + 1
    else
      failed = failed + 1
      io.stdout:write("FAIL " .. name .. "\n" .. tostring(err) .. "\n")
    end
  end
  function cases.finish()
    io.stdout:write(("%s: %d passed, %d failed\n"):format(suite, passed, failed))
    vim.cmd(failed > 0 and "cquit 1" or "qall!")
  end
  return cases
end

---------------------------------------------------------------------------------------------
-- The scripted model.
---------------------------------------------------------------------------------------------

local Mock = {}
Mock.__index = Mock

--- Starts the model server on 127.0.0.1, port 0. Replies are pushed with `push` and served
--- in order; each request's decoded JSON body is kept in `requests`.
function H.mock_model()
  local self = setmetatable({ queue = {}, requests = {}, gates = {}, waiting = {}, served = 0 }, Mock)
  local server = uv.new_tcp()
  assert(server:bind("127.0.0.1", 0))
  assert(server:listen(32, function(err)
    if err then
      return
    end
    local client = uv.new_tcp()
    server:accept(client)
    self:_serve(client)
  end))
  self.server = server
  self.port = server:getsockname().port
  self.url = ("http://127.0.0.1:%d/v1"):format(self.port)
  return self
end

--- Queues a reply: a list of steps, each `{text = "..."}` (a content delta),
--- `{reasoning = "..."}`, `{tool = {id, name, arguments}}` (arguments: a table), or
--- `{gate = "name"}` (the stream waits there until `open("name")`). The finish reason is
--- `tool_calls` when the reply has a tool call, else `stop`.
function Mock:push(steps)
  self.queue[#self.queue + 1] = steps
end

--- Lets streams waiting at `gate` go on.
function Mock:open(gate)
  self.gates[gate] = true
  local waiting = self.waiting[gate] or {}
  self.waiting[gate] = nil
  for _, go in ipairs(waiting) do
    go()
  end
end

local function chunk(delta, finish)
  local choice = { index = 0, delta = delta }
  if finish then
    choice.finish_reason = finish
  end
  return "data: " .. vim.json.encode({ id = "mock", object = "chat.completion.chunk", choices = { choice } }) .. "\n\n"
end

local function http_chunk(data)
  return ("%x\r\n%s\r\n"):format(#data, data)
end

function Mock:_serve(client)
  local buf = ""
  client:read_start(function(err, data)
    if err or data == nil then
      client:close()
      return
    end
    buf = buf .. data
    local head_end = buf:find("\r\n\r\n", 1, true)
    if head_end == nil then
      return
    end
    local head = buf:sub(1, head_end)
    local length = tonumber(head:lower():match("content%-length:%s*(%d+)"))
    if length == nil then
      client:write("HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
      client:close()
      return
    end
    local body = buf:sub(head_end + 4)
    if #body < length then
      return
    end
    client:read_stop()
    local path = head:match("^%S+%s+(%S+)")
    vim.schedule(function()
      self:_reply(client, path, body:sub(1, length))
    end)
  end)
end

function Mock:_reply(client, path, body)
  local ok, decoded = pcall(vim.json.decode, body)
  self.requests[#self.requests + 1] = { path = path, body = ok and decoded or body, raw = body }
  local steps = table.remove(self.queue, 1)
  if steps == nil or not tostring(path):match("/chat/completions$") then
    local msg = '{"error":{"message":"mock model: no reply queued for ' .. tostring(path) .. '"}}'
    client:write(("HTTP/1.1 500 Mock\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"):format(#msg, msg))
    client:shutdown(function()
      client:close()
    end)
    return
  end
  local function write(data)
    if not client:is_closing() then
      client:write(http_chunk(data))
    end
  end
  client:write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
  local finish = "stop"
  local tool_index = 0
  local i = 0
  local function go()
    while true do
      i = i + 1
      local step = steps[i]
      if step == nil then
        break
      end
      if step.gate then
        if not self.gates[step.gate] then
          local list = self.waiting[step.gate] or {}
          list[#list + 1] = go
          self.waiting[step.gate] = list
          return
        end
      elseif step.text then
        write(chunk({ content = step.text }))
      elseif step.reasoning then
        write(chunk({ reasoning_content = step.reasoning }))
      elseif step.tool then
        finish = "tool_calls"
        write(chunk({
          tool_calls = {
            {
              index = tool_index,
              id = step.tool.id,
              type = "function",
              ["function"] = { name = step.tool.name, arguments = vim.json.encode(step.tool.arguments) },
            },
          },
        }))
        tool_index = tool_index + 1
      end
    end
    write(chunk(vim.empty_dict(), finish))
    write("data: [DONE]\n\n")
    if not client:is_closing() then
      client:write("0\r\n\r\n")
      client:shutdown(function()
        client:close()
      end)
    end
    self.served = self.served + 1
  end
  go()
end

function Mock:stop()
  if not self.server:is_closing() then
    self.server:close()
  end
end

---------------------------------------------------------------------------------------------
-- The daemon.
---------------------------------------------------------------------------------------------

local Daemon = {}
Daemon.__index = Daemon

local scrubbed = {
  AGENTD_SOCKET = true,
  AGENTD_DATA_DIR = true,
  AGENTD_CONFIG = true,
  HTTP_PROXY = true,
  HTTPS_PROXY = true,
  ALL_PROXY = true,
  http_proxy = true,
  https_proxy = true,
  all_proxy = true,
}

--- A daemon in `dir` (socket in dir/run, data in dir/data) talking to `mock`; `extra_toml`
--- is appended to its config. Started by `start`.
function H.daemon(bin, dir, mock, extra_toml)
  local run = dir .. "/run"
  uv.fs_mkdir(run, 448)
  local config = dir .. "/config.toml"
  local f = assert(io.open(config, "w"))
  f:write(([==[
[defaults]
provider = "mock"
model = "mock-model"

[[providers]]
id = "mock"
kind = "openai"
base_url = "%s"
api_key = "test-key"
max_retries = 0
models = [{ id = "mock-model", context_window = 32768, max_output_tokens = 4096 }]
%s
]==]):format(mock.url, extra_toml or ""))
  f:close()
  return setmetatable({
    bin = bin,
    dir = dir,
    socket = run .. "/agentd.sock",
    data = dir .. "/data",
    config = config,
    log = dir .. "/daemon.log",
  }, Daemon)
end

function Daemon:log_tail()
  local f = io.open(self.log, "r")
  if f == nil then
    return "(no log)"
  end
  local text = f:read("*a")
  f:close()
  return text:sub(-4000)
end

-- Whether something accepts connections on the socket (asked asynchronously; the answer
-- lands in self.accepting).
function Daemon:_probe()
  local pipe = uv.new_pipe(false)
  pipe:connect(self.socket, function(err)
    self.accepting = err == nil
    pipe:close()
  end)
end

--- Starts the daemon and waits until its socket accepts a connection.
function Daemon:start()
  local env = {}
  for k, v in pairs(vim.fn.environ()) do
    if not scrubbed[k] and k ~= "AGENTD_LOG" then
      env[#env + 1] = k .. "=" .. v
    end
  end
  env[#env + 1] = "AGENTD_LOG=info"
  local fd = assert(uv.fs_open(self.log, "a", 420))
  self.exited = false
  local handle, pid = uv.spawn(self.bin, {
    args = { "--socket", self.socket, "--data-dir", self.data, "--config", self.config },
    env = env,
    stdio = { nil, fd, fd },
  }, function(code, signal)
    self.exited = true
    self.exit = { code = code, signal = signal }
  end)
  uv.fs_close(fd)
  if handle == nil then
    error("cannot run " .. self.bin .. ": " .. tostring(pid))
  end
  self.handle, self.pid = handle, pid
  self.accepting = false
  H.wait("agentd to accept connections on " .. self.socket, function()
    if self.exited then
      error("agentd exited: " .. vim.inspect(self.exit) .. "\n" .. self:log_tail())
    end
    if not self.accepting then
      self:_probe()
    end
    return self.accepting
  end, 15000, function()
    return self:log_tail()
  end)
end

--- Stops the daemon with SIGTERM (a clean stop) and waits for it to exit.
function Daemon:stop()
  if self.handle == nil or self.exited then
    return
  end
  self.handle:kill("sigterm")
  H.wait("agentd to exit after SIGTERM", function()
    return self.exited
  end, 15000, function()
    return self:log_tail()
  end)
  self.handle:close()
  self.handle = nil
end

--- Kills the daemon with SIGKILL (a crash) and waits for it to exit.
function Daemon:kill()
  if self.handle == nil then
    return
  end
  if not self.exited then
    self.handle:kill("sigkill")
    H.wait("agentd to exit after SIGKILL", function()
      return self.exited
    end, 10000)
  end
  self.handle:close()
  self.handle = nil
end

return H
