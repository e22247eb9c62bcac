-- End-to-end tests of the Neovim plugin against the real agentd binary and a scripted model.
-- Run by test.sh: nvim --headless -u NONE -c "luafile tests/e2e.lua" with AGENTD_BIN and
-- AGENTD_NVIM_WORK (an empty private temp folder) set. Exits 0 when every scenario passed.

local here = debug.getinfo(1, "S").source:sub(2):match("(.*)/")
package.path = here .. "/?.lua;" .. package.path
vim.opt.runtimepath:prepend(here .. "/..")

local H = require("harness")
vim.cmd("filetype on")
local api = vim.api
local uv = vim.uv or vim.loop

local bin = assert(os.getenv("AGENTD_BIN"), "AGENTD_BIN is not set")
local work = assert(os.getenv("AGENTD_NVIM_WORK"), "AGENTD_NVIM_WORK is not set")

-- vim.ui and vim.notify answered by the test.
local selects, inputs, notes = {}, {}, {}
vim.ui.select = function(items, opts, cb)
  selects[#selects + 1] = { items = items, opts = opts, cb = cb }
end
vim.ui.input = function(opts, cb)
  inputs[#inputs + 1] = { opts = opts, cb = cb }
end
vim.notify = function(msg, level)
  notes[#notes + 1] = { msg = msg, level = level }
end

local function text(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

local function has(buf, needle)
  return text(buf):find(needle, 1, true) ~= nil
end

local function notes_text()
  local out = {}
  for _, n in ipairs(notes) do
    out[#out + 1] = n.msg
  end
  return "notifications:\n" .. table.concat(out, "\n")
end

-- The next vim.ui.select call, answered with the item `format_item` shows as `label`
-- (nil: dismissed); returns the call.
local function next_select(what)
  H.wait(what, function()
    return #selects > 0
  end, nil, notes_text)
  return table.remove(selects, 1)
end

local function labels(call)
  local out = {}
  for _, item in ipairs(call.items) do
    out[#out + 1] = call.opts.format_item and call.opts.format_item(item) or tostring(item)
  end
  return out
end

local function pick(call, label)
  for _, item in ipairs(call.items) do
    local shown = call.opts.format_item and call.opts.format_item(item) or tostring(item)
    if shown == label or (type(label) == "function" and label(item)) then
      call.cb(item)
      return
    end
  end
  error("no item " .. tostring(label) .. " in " .. vim.inspect(labels(call)))
end

-- The text of the last user message and of the tool results in a model request.
local function last_user_text(request)
  local messages = request.body.messages
  for i = #messages, 1, -1 do
    if messages[i].role == "user" then
      local c = messages[i].content
      if type(c) == "table" then
        local parts = {}
        for _, p in ipairs(c) do
          parts[#parts + 1] = p.text or ""
        end
        return table.concat(parts, "\n")
      end
      return c
    end
  end
end

local function tool_results(request)
  local out = {}
  for _, m in ipairs(request.body.messages) do
    if m.role == "tool" then
      out[#out + 1] = type(m.content) == "string" and m.content or vim.json.encode(m.content)
    end
  end
  return table.concat(out, "\n")
end

local project = work .. "/project"
uv.fs_mkdir(project, 448)
vim.cmd("cd " .. vim.fn.fnameescape(project))
project = uv.fs_realpath(project)

local mock = H.mock_model()
uv.fs_mkdir(work .. "/daemon", 448)
local daemon = H.daemon(bin, work .. "/daemon", mock)
daemon:start()

local agentd = require("agentd")
agentd.setup({ socket = daemon.socket })
-- The plugin/ file is what a plugin manager loads.
vim.cmd("runtime plugin/agentd.lua")

local s -- the session of the first chat buffer
local buf

local scenarios = {}

scenarios[#scenarios + 1] = {
  "a conversation streams into a new agent's chat buffer",
  function()
    mock:push({ { text = "Hello " }, { gate = "first" }, { text = "from the " }, { text = "mock model." } })
    vim.cmd("AgentdNew Chat test")
    H.wait("the chat buffer to load", function()
      local cur = agentd.session()
      return cur ~= nil and cur.ready and cur.subscription ~= nil
    end, nil, notes_text)
    s = agentd.session()
    buf = s.buf
    H.eq(api.nvim_buf_get_name(buf), "agentd://" .. s.agent_id, "buffer name")
    H.eq(s.agent.mode, "agent", "mode")
    H.eq(s.agent.workspace, project, "workspace")
    H.truthy(has(buf, "# Chat test"), "title in the header")
    vim.cmd("AgentdSend Say hello")
    H.wait("the first delta", function()
      return has(buf, "Hello") and has(buf, "## agentd (streaming)")
    end, nil, function()
      return text(buf)
    end)
    -- The rest is still held by the model: what shows is what arrived so far.
    H.truthy(not has(buf, "mock model."), "only the streamed part is shown")
    mock:open("first")
    H.wait("the whole answer", function()
      return has(buf, "Hello from the mock model.") and s.status == "idle"
    end, nil, function()
      return text(buf)
    end)
    H.truthy(has(buf, "## You\nSay hello\n"), "the user message")
    H.truthy(not has(buf, "(streaming)"), "the answer is complete")
    H.eq(last_user_text(mock.requests[1]), "Say hello", "what the model got")
  end,
}

scenarios[#scenarios + 1] = {
  "a visual range is sent with its file and line range",
  function()
    local f = assert(io.open(project .. "/code.lua", "w"))
    f:write("local a = 1\nlocal function double(x)\n  return x * 2\nend\nreturn a\n")
    f:close()
    vim.cmd("wincmd p")
    vim.cmd("edit code.lua")
    H.eq(vim.bo[0].filetype, "lua", "filetype")
    mock:push({ { text = "It doubles x." } })
    vim.cmd("2,4AgentdSend What does this do?")
    H.wait("the answer about the code", function()
      return has(buf, "It doubles x.") and s.status == "idle"
    end, nil, function()
      return text(buf)
    end)
    local sent = last_user_text(mock.requests[#mock.requests])
    H.eq(sent, "What does this do?\n\ncode.lua, lines 2-4:\n```lua\nlocal function double(x)\n  return x * 2\nend\n```", "the message")
    H.truthy(vim.fn.expand("%:t") == "code.lua", "focus stays in the code window")

    -- The same through the <Plug> mapping of a visual selection.
    vim.keymap.set("x", "<Bslash>as", "<Plug>(agentd-send)", { remap = true })
    mock:push({ { text = "Two lines." } })
    api.nvim_feedkeys(api.nvim_replace_termcodes("ggVj<Bslash>as", true, false, true), "x", false)
    H.wait("the answer about the selection", function()
      return has(buf, "Two lines.") and s.status == "idle"
    end, nil, function()
      return text(buf) .. "\n" .. notes_text()
    end)
    sent = last_user_text(mock.requests[#mock.requests])
    H.eq(sent, "code.lua, lines 1-2:\n```lua\nlocal a = 1\nlocal function double(x)\n```", "the selection alone")
  end,
}

scenarios[#scenarios + 1] = {
  "a tool call asks permission with vim.ui.select; allowed once, then denied",
  function()
    mock:push({ { text = "Let me run it." }, { tool = { id = "call_1", name = "bash", arguments = { command = "echo hi-from-tool" } } } })
    mock:push({ { text = "It printed hi-from-tool." } })
    local before = #mock.requests
    vim.cmd("AgentdSend Run the tool")
    local call = next_select("the permission prompt")
    H.truthy(call.opts.prompt:find("echo hi-from-tool", 1, true), "the prompt names the command: " .. call.opts.prompt)
    local shown = labels(call)
    H.eq(shown[1], "Allow once", "first choice")
    H.eq(shown[#shown], "Deny", "last choice")
    H.truthy(has(buf, "[tool bash] echo hi-from-tool — waiting for permission"), "the call waits in the buffer")
    pick(call, "Allow once")
    H.wait("the answer after the tool", function()
      return has(buf, "It printed hi-from-tool.") and s.status == "idle"
    end, nil, function()
      return text(buf) .. "\n" .. notes_text()
    end)
    H.truthy(has(buf, "[tool bash] echo hi-from-tool — done\n    hi-from-tool"), "the call with its output:\n" .. text(buf))
    H.eq(#mock.requests, before + 2, "model calls")
    H.truthy(tool_results(mock.requests[#mock.requests]):find("hi-from-tool", 1, true), "the model got the output")

    mock:push({ { tool = { id = "call_2", name = "bash", arguments = { command = "rm -rf build" } } } })
    mock:push({ { text = "Fine, I will not." } })
    vim.cmd("AgentdSend Clean up")
    call = next_select("the second permission prompt")
    pick(call, "Deny")
    H.wait("the answer after the denial", function()
      return has(buf, "Fine, I will not.") and s.status == "idle"
    end, nil, function()
      return text(buf)
    end)
    H.truthy(has(buf, "[tool bash] rm -rf build — denied"), "the denied call:\n" .. text(buf))
    H.truthy(tool_results(mock.requests[#mock.requests]):find("denied by the user", 1, true), "the model was told")
  end,
}

scenarios[#scenarios + 1] = {
  "a running command's output shows under its call as it comes, then its result",
  function()
    -- The command waits for the test to create go-on: its first line is shown while it runs.
    local cmd = "echo started; while [ ! -e go-on ]; do sleep 0.05; done; echo finished >&2"
    mock:push({ { tool = { id = "call_live", name = "bash", arguments = { command = cmd } } } })
    mock:push({ { text = "Ran it." } })
    vim.cmd("AgentdSend Run it live")
    pick(next_select("the permission prompt"), "Allow once")
    H.wait("the live output under the call", function()
      return has(buf, "— running\n  │ started") or has(buf, "— approved\n  │ started")
    end, nil, function()
      return text(buf)
    end)
    H.truthy(not has(buf, "  ! finished"), "nothing of what is not written yet:\n" .. text(buf))
    local go = assert(io.open(project .. "/go-on", "w"))
    go:close()
    H.wait("the answer after the command", function()
      return has(buf, "Ran it.") and s.status == "idle"
    end, nil, function()
      return text(buf)
    end)
    H.truthy(has(buf, "— done\n    started\n    [stderr]\n    finished"), "the result replaces the live lines:\n" .. text(buf))
  end,
}

scenarios[#scenarios + 1] = {
  "a question is answered with vim.ui.select",
  function()
    mock:push({
      {
        tool = {
          id = "call_q",
          name = "ask_user_question",
          arguments = { questions = { { question = "Which database?", header = "DB", options = { { label = "SQLite" }, { label = "Postgres" } } } } },
        },
      },
    })
    mock:push({ { text = "SQLite it is." } })
    vim.cmd("AgentdSend Pick a database")
    local call = next_select("the question")
    H.truthy(call.opts.prompt:find("Which database?", 1, true), "the question is asked")
    pick(call, "SQLite")
    H.wait("the answer after the question", function()
      return has(buf, "SQLite it is.") and s.status == "idle"
    end, nil, function()
      return text(buf) .. "\n" .. notes_text()
    end)
    H.truthy(tool_results(mock.requests[#mock.requests]):find("SQLite", 1, true), "the model got the answer")
    H.truthy(has(buf, "answer: SQLite"), "the answer shows")
  end,
}

scenarios[#scenarios + 1] = {
  ":AgentdCancel cancels a streaming run",
  function()
    mock:push({ { text = "Counting: one " }, { gate = "never-cancel" } })
    vim.cmd("AgentdSend Count forever")
    H.wait("the run to stream", function()
      return has(buf, "Counting: one")
    end)
    vim.cmd("AgentdCancel")
    H.wait("the cancelled run", function()
      return has(buf, "## agentd (cancelled)\nCounting: one") and s.status == "idle"
    end, nil, function()
      return text(buf)
    end)
  end,
}

scenarios[#scenarios + 1] = {
  "a dropped connection replays the missed events by seq",
  function()
    local other
    require("agentd.rpc").connect(daemon.socket, {}, function(conn)
      other = conn
    end)
    H.wait("a second connection", function()
      return other ~= nil
    end)
    mock:push({ { text = "Part one. " }, { gate = "away" }, { text = "Part two." } })
    vim.cmd("AgentdSend Keep going while I am away")
    H.wait("the first part", function()
      return has(buf, "Part one.")
    end)
    local loads = s.loads
    agentd._state.hold_reconnect = true
    agentd._drop()
    H.wait("the header to say disconnected", function()
      return has(buf, "status: disconnected")
    end)
    mock:open("away")
    local info
    H.wait("the run to end while the plugin is away", function()
      other:request("getSession", { agentId = s.agent_id }, function(_, r)
        info = r
      end)
      return info ~= nil and info.status == "idle"
    end)
    H.truthy(not has(buf, "Part two."), "nothing arrived while disconnected")
    agentd._state.hold_reconnect = false
    H.wait("the replayed end of the answer", function()
      other:request("getSession", { agentId = s.agent_id }, function(_, r)
        info = r
      end)
      return has(buf, "Part one. Part two.") and s.status == "idle" and s.last_seq == info.lastSeq
    end, nil, function()
      return text(buf) .. "\nlast_seq " .. tostring(s.last_seq) .. " daemon " .. tostring(info.lastSeq)
    end)
    H.eq(s.loads, loads, "replayed, not reloaded")
    other:close()
  end,
}

scenarios[#scenarios + 1] = {
  "the daemon restarts: the chat reconnects, shows the interrupted run and goes on",
  function()
    mock:push({ { text = "Interrupted " }, { gate = "never" } })
    vim.cmd("AgentdSend This run will be cut")
    H.wait("the run to stream", function()
      return has(buf, "Interrupted")
    end)
    daemon:stop()
    H.wait("the header to say disconnected", function()
      return has(buf, "status: disconnected")
    end)
    daemon:start()
    H.wait("the reconnection", function()
      return agentd._state.connection == "connected" and s.subscription ~= nil and not s.loading
    end, nil, notes_text)
    H.wait("the interrupted message", function()
      return has(buf, "## agentd (interrupted)\nInterrupted") and s.status == "idle"
    end, nil, function()
      return text(buf)
    end)
    mock:push({ { text = "Back again." } })
    vim.cmd("AgentdSend Are you back?")
    H.wait("an answer after the restart", function()
      return has(buf, "Back again.") and s.status == "idle"
    end, nil, function()
      return text(buf)
    end)
  end,
}

scenarios[#scenarios + 1] = {
  "the daemon crashes mid-run: the chat resyncs from the store",
  function()
    mock:push({ { text = "Crashing " }, { gate = "never-crash" } })
    vim.cmd("AgentdSend This run dies with the daemon")
    H.wait("the run to stream", function()
      return has(buf, "Crashing")
    end)
    -- A crash loses what was not saved yet (the store lags the events by up to 250 ms):
    -- wait until the stored answer holds the streamed text.
    local other
    require("agentd.rpc").connect(daemon.socket, {}, function(conn)
      other = conn
    end)
    H.wait("a second connection", function()
      return other ~= nil
    end)
    local stored
    H.wait("the streamed text to be stored", function()
      other:request("listMessages", { agentId = s.agent_id, order = "desc", limit = 1 }, function(_, r)
        stored = r and r.messages[1]
      end)
      return stored ~= nil and stored.blocks[1] ~= nil and stored.blocks[1].text == "Crashing "
    end)
    other:close()
    local loads = s.loads
    daemon:kill()
    H.wait("the header to say disconnected", function()
      return has(buf, "status: disconnected")
    end)
    daemon:start()
    -- The next daemon starts its seqs above a reserved mark and keeps no events of the old
    -- one: the subscription gets resyncRequired and the chat reloads the stored messages.
    H.wait("the reloaded chat", function()
      return s.loads > loads and not s.loading and has(buf, "## agentd (interrupted)\nCrashing") and s.status == "idle"
    end, nil, function()
      return text(buf) .. "\n" .. notes_text()
    end)
    mock:push({ { text = "Recovered." } })
    vim.cmd("AgentdSend And now?")
    H.wait("an answer after the crash", function()
      return has(buf, "Recovered.") and s.status == "idle"
    end, nil, function()
      return text(buf)
    end)
  end,
}

scenarios[#scenarios + 1] = {
  "a permission prompt stays answerable across a daemon restart",
  function()
    mock:push({ { tool = { id = "call_r", name = "bash", arguments = { command = "echo after-restart" } } } })
    mock:push({ { text = "Done after the restart." } })
    vim.cmd("AgentdSend Run it across a restart")
    local call = next_select("the permission prompt")
    daemon:stop()
    daemon:start()
    H.wait("the reconnection", function()
      return agentd._state.connection == "connected" and s.subscription ~= nil and not s.loading
    end, nil, notes_text)
    H.eq(#selects, 0, "the open prompt is not asked twice")
    pick(call, "Allow once")
    H.wait("the run after the restart", function()
      return has(buf, "Done after the restart.") and s.status == "idle"
    end, nil, function()
      return text(buf) .. "\n" .. notes_text()
    end)
    H.truthy(has(buf, "[tool bash] echo after-restart — done"), "the call ran:\n" .. text(buf))
  end,
}

scenarios[#scenarios + 1] = {
  ":AgentdAgents opens an agent's buffer with its history",
  function()
    local id = s.agent_id
    vim.cmd("bwipeout! " .. buf)
    H.eq(agentd._state.sessions[id], nil, "the session ends with its buffer")
    vim.cmd("AgentdAgents")
    local call = next_select("the agent list")
    pick(call, function(a)
      return a.id == id
    end)
    H.wait("the history", function()
      local cur = agentd.session()
      return cur ~= nil and cur.agent_id == id and cur.subscription ~= nil and has(cur.buf, "Done after the restart.")
    end, nil, notes_text)
    s = agentd.session()
    buf = s.buf
    H.truthy(has(buf, "## You\nSay hello\n\n## agentd\nHello from the mock model."), "the first exchange:\n" .. text(buf))
    H.truthy(has(buf, "[tool bash] rm -rf build — denied"), "stored tool calls show")
    mock:push({ { text = "Still here." } })
    vim.cmd("AgentdSend Still there?")
    H.wait("a live answer in the reopened buffer", function()
      return has(buf, "Still here.") and s.status == "idle"
    end, nil, function()
      return text(buf)
    end)
  end,
}

scenarios[#scenarios + 1] = {
  ":checkhealth agentd reports the daemon's version and sandbox",
  function()
    local info
    require("agentd.rpc").connect(daemon.socket, {}, function(conn)
      conn:request("initialize", { protocolVersion = 1 }, function(_, r)
        info = r
        conn:close()
      end)
    end)
    H.wait("the daemon's own answer", function()
      return info ~= nil
    end)
    local conn = agentd._state.conn
    vim.cmd("silent checkhealth agentd")
    local report = text(0)
    vim.cmd("bwipeout!")
    local function has_line(needle)
      H.truthy(report:find(needle, 1, true), ("%q in the report:\n%s"):format(needle, report))
    end
    has_line(("socket: %s (from setup({socket = ...}))"):format(daemon.socket))
    has_line("the socket path resolves: " .. daemon.socket)
    has_line(("agentd %s answers initialize (protocol %d)"):format(info.serverVersion, info.protocolVersion))
    local sandbox = info.capabilities.sandbox
    if sandbox.enforced then
      has_line("sandbox: enforced, default mode " .. sandbox.mode)
    elseif sandbox.mode ~= "off" then
      has_line("sandbox: not available (" .. tostring(sandbox.reason))
    end
    H.eq(agentd._state.conn, conn, "the plugin's own connection is left alone")
  end,
}

local failed = 0
for _, sc in ipairs(scenarios) do
  local ok, err = xpcall(sc[2], debug.traceback)
  if ok then
    io.stdout:write("ok   " .. sc[1] .. "\n")
  else
    failed = failed + 1
    io.stdout:write("FAIL " .. sc[1] .. "\n" .. tostring(err) .. "\n")
    break
  end
end
if failed > 0 then
  io.stdout:write("--- daemon log (tail) ---\n" .. daemon:log_tail() .. "\n")
end
daemon:kill()
mock:stop()
io.stdout:write(("%d scenario(s), %d failed\n"):format(#scenarios, failed))
vim.cmd(failed > 0 and "cquit 1" or "qall!")
