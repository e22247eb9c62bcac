-- Table tests of the plugin's pure parts: the socket path rule, folding events into a
-- session, rendering, and the text of a sent selection. Run by test.sh (see run.lua).

local here = debug.getinfo(1, "S").source:sub(2):match("(.*)/")
vim.opt.runtimepath:prepend(here .. "/..")
package.path = here .. "/?.lua;" .. package.path

local H = require("harness")
local rpc = require("agentd.rpc")
local session = require("agentd.session")
local render = require("agentd.render")

local cases = H.cases("unit")

cases.case("socket path precedence", function()
  local uid = tostring(vim.loop.getuid())
  local cases = {
    { { AGENTD_SOCKET = "/s/x.sock", XDG_RUNTIME_DIR = "/run/user/7" }, "/s/x.sock", "$AGENTD_SOCKET" },
    { { XDG_RUNTIME_DIR = "/run/user/7" }, "/run/user/7/agentd/agentd.sock", "$XDG_RUNTIME_DIR/agentd/agentd.sock" },
    { { TMPDIR = "/var/tmp" }, "/var/tmp/agentd-" .. uid .. "/agentd.sock", "$TMPDIR/agentd-$UID/agentd.sock" },
    { {}, "/tmp/agentd-" .. uid .. "/agentd.sock", "/tmp/agentd-$UID/agentd.sock" },
    { { AGENTD_SOCKET = "", XDG_RUNTIME_DIR = "" }, "/tmp/agentd-" .. uid .. "/agentd.sock", "/tmp/agentd-$UID/agentd.sock" },
  }
  for _, c in ipairs(cases) do
    for _, k in ipairs({ "AGENTD_SOCKET", "XDG_RUNTIME_DIR", "TMPDIR" }) do
      vim.env[k] = c[1][k]
    end
    H.eq({ rpc.default_socket_path() }, { c[2], c[3] }, vim.inspect(c[1]))
  end
end)

local agent = { id = "agent-1", title = "T", mode = "agent", provider = "p", model = "m", status = "idle" }

-- Folds `events` ({seq, type, ...}) into a new session loaded at seq `from`; returns the
-- session and the actions of each event, as "seq:reload,ask,refresh" strings.
local function fold(events, from)
  local s = session.new(agent)
  s:load({ status = "idle", lastSeq = from or 0, pendingPermissions = {} }, {}, nil)
  local acts = {}
  for _, ev in ipairs(events) do
    ev.agentId = "agent-1"
    local a = s:apply(ev)
    local names = {}
    for _, n in ipairs({ "reload", "ask", "refresh" }) do
      if a[n] then
        names[#names + 1] = n
      end
    end
    if #names > 0 then
      acts[#acts + 1] = ev.seq .. ":" .. table.concat(names, ",")
    end
  end
  return s, acts
end

local function body(s)
  local out = {}
  for _, m in ipairs(s.messages) do
    vim.list_extend(out, render.message(m))
  end
  return table.concat(out, "\n")
end

cases.case("deltas join, duplicates are dropped, a gap asks for a reload", function()
  local cases = {
    {
      "joined text",
      {
        { seq = 1, type = "messageStarted", messageId = "a" },
        { seq = 2, type = "textDelta", messageId = "a", delta = "Hel" },
        { seq = 3, type = "textDelta", messageId = "a", delta = "lo" },
        { seq = 4, type = "messageCompleted", messageId = "a", status = "done" },
      },
      "## agentd\nHello\n",
      {},
    },
    {
      "a replayed duplicate is ignored",
      {
        { seq = 1, type = "textDelta", messageId = "a", delta = "one " },
        { seq = 2, type = "textDelta", messageId = "a", delta = "two" },
        { seq = 2, type = "textDelta", messageId = "a", delta = "two" },
        { seq = 1, type = "textDelta", messageId = "a", delta = "one " },
      },
      "## agentd (streaming)\none two\n",
      {},
    },
    {
      "a gap reloads and is not applied",
      {
        { seq = 1, type = "textDelta", messageId = "a", delta = "x" },
        { seq = 3, type = "textDelta", messageId = "a", delta = "y" },
      },
      "## agentd (streaming)\nx\n",
      { "3:reload" },
    },
    {
      "resyncRequired reloads",
      { { seq = 40, type = "resyncRequired", reason = "too old" } },
      "",
      { "40:reload" },
    },
    {
      "reasoning then text are separate blocks",
      {
        { seq = 1, type = "reasoningDelta", messageId = "a", delta = "think" },
        { seq = 2, type = "textDelta", messageId = "a", delta = "say" },
        { seq = 3, type = "messageCompleted", messageId = "a", status = "interrupted" },
      },
      "## agentd (interrupted)\n> think\nsay\n",
      {},
    },
    {
      "a tool call through its permission prompt",
      {
        { seq = 1, type = "toolCallStarted", messageId = "a", toolCallId = "c", name = "bash" },
        { seq = 2, type = "toolCallArgsDelta", messageId = "a", toolCallId = "c", delta = '{"command":"ls"}' },
        { seq = 3, type = "toolCallReady", messageId = "a", toolCallId = "c", name = "bash", arguments = { command = "ls" } },
        { seq = 4, type = "permissionRequested", messageId = "a", toolCallId = "c", toolName = "bash", permissionType = "execute", description = "run: ls", rememberable = true },
        { seq = 5, type = "statusChanged", status = "waiting_permission" },
        { seq = 6, type = "loopFinished", reason = "waitingPermission" },
      },
      "## agentd (streaming)\n[tool bash] ls — waiting for permission\n",
      { "6:ask,refresh" },
    },
    {
      "a tool result shows its first lines",
      {
        { seq = 1, type = "toolCallReady", messageId = "a", toolCallId = "c", name = "read_file", arguments = { path = "a.txt" } },
        { seq = 2, type = "toolResult", messageId = "a", toolCallId = "c", status = "success", content = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n" },
      },
      "## agentd (streaming)\n[tool read_file] a.txt — done\n    1\n    2\n    3\n    4\n    5\n    6\n    7\n    8\n    … 2 more lines\n",
      {},
    },
    {
      "a running command's output shows under its call until its result",
      {
        { seq = 1, type = "toolCallReady", messageId = "a", toolCallId = "c", name = "bash", arguments = { command = "make" } },
        { seq = 2, type = "toolProgress", messageId = "a", toolCallId = "c", progress = 5, output = { stream = "stdout", text = "one\ntw" } },
        { seq = 3, type = "toolProgress", messageId = "a", toolCallId = "c", progress = 8, output = { stream = "stdout", text = "o\n" } },
        { seq = 4, type = "toolProgress", messageId = "a", toolCallId = "c", progress = 12, output = { stream = "stderr", text = "oops" } },
      },
      "## agentd (streaming)\n[tool bash] make — ready\n  │ one\n  │ two\n  ! oops\n",
      {},
    },
    {
      "a command's result replaces its live output",
      {
        { seq = 1, type = "toolCallReady", messageId = "a", toolCallId = "c", name = "bash", arguments = { command = "make" } },
        { seq = 2, type = "toolProgress", messageId = "a", toolCallId = "c", progress = 4, output = { stream = "stdout", text = "one\n" } },
        { seq = 3, type = "toolResult", messageId = "a", toolCallId = "c", status = "success", content = "one\n" },
      },
      "## agentd (streaming)\n[tool bash] make — done\n    one\n",
      {},
    },
    {
      "an error ends the run",
      {
        { seq = 1, type = "error", messageId = "a", message = "retrying in 1 s", kind = "providerHttpError", retryable = true },
        { seq = 2, type = "error", messageId = "a", message = "boom", kind = "providerStreamError", retryable = false },
        { seq = 3, type = "messageCompleted", messageId = "a", status = "error" },
        { seq = 4, type = "loopFinished", reason = "error", error = "boom" },
      },
      "## agentd (error)\n[retrying] retrying in 1 s\n[error] boom\n",
      { "4:refresh" },
    },
    {
      "unknown events and fields are ignored",
      {
        { seq = 1, type = "somethingNew", messageId = "a", extra = { 1, 2 } },
        { seq = 2, type = "textDelta", messageId = "a", delta = "ok", newField = true },
      },
      "## agentd (streaming)\nok\n",
      {},
    },
  }
  for _, c in ipairs(cases) do
    local s, acts = fold(c[2])
    H.eq(body(s), c[3], c[1] .. " (text)")
    H.eq(acts, c[4], c[1] .. " (actions)")
  end
end)

cases.case("prompts open and close with their events, and survive a reload", function()
  local s = fold({
    { seq = 1, type = "permissionRequested", messageId = "a", toolCallId = "c", toolName = "bash", permissionType = "execute", rememberable = false },
  })
  local k = session.key("a", "c")
  H.eq(s.prompts[k].state, "new", "opened")
  s.prompts[k].state = "asking"
  s:load({
    status = "waiting_permission",
    lastSeq = 9,
    pendingPermissions = { { messageId = "a", toolCallId = "c", toolName = "bash", permissionType = "execute" } },
  }, {
    {
      id = "a",
      role = "assistant",
      status = "waiting",
      blocks = { { type = "toolCall", toolCallId = "c", name = "bash", arguments = { command = "ls" }, status = "waitingPermission" } },
    },
  }, nil)
  H.eq(s.prompts[k].state, "asking", "kept over a reload")
  H.eq(s.last_seq, 9, "seq from getSession")
  s:apply({ seq = 10, type = "permissionResolved", messageId = "a", toolCallId = "c", granted = true, remember = "once" })
  H.eq(s.prompts[k], nil, "closed")
  H.eq(body(s), "## agentd (waiting)\n[tool bash] ls — approved\n", "status")
end)

cases.case("a steer shows as the user's words inside the turn, and the answer goes on after it", function()
  local s = fold({
    { seq = 1, type = "messageStarted", messageId = "a" },
    { seq = 2, type = "textDelta", messageId = "a", delta = "Building" },
    { seq = 3, type = "steered", messageId = "a", id = "u2", text = "use release" },
    { seq = 4, type = "textDelta", messageId = "a", delta = "Release it is" },
    { seq = 5, type = "messageCompleted", messageId = "a", status = "done" },
  })
  H.eq(body(s), "## agentd\nBuilding\n» you: use release\nRelease it is\n", "steered")
end)

cases.case("the header says who, where, how and the plan", function()
  local s = session.new({ id = "agent-1", title = "Fix", mode = "agent", provider = "p", model = "m", workspace = "/w", status = "idle" })
  s:apply({ seq = 1, type = "planUpdated", items = { { content = "Read", status = "completed" }, { content = "Fix it", activeForm = "Fixing it", status = "in_progress" }, { content = "Test", status = "pending" } } })
  H.eq(render.header(s, "connected"), {
    "# Fix",
    "agent agent-1 · agent · p/m · /w",
    "status: idle",
    "plan:",
    "  [x] Read",
    "  [~] Fixing it",
    "  [ ] Test",
    "",
  }, "header")
  H.eq(render.header(s, "disconnected (x); reconnecting")[3], "status: disconnected (x); reconnecting", "offline")
end)

cases.case("a stored history renders like the live one", function()
  local s = session.new(agent)
  s:load({ status = "idle", lastSeq = 5, pendingPermissions = {} }, {
    {
      id = "u",
      role = "user",
      status = "done",
      blocks = {
        { type = "text", text = "Hi\nthere" },
        { type = "document", mimeType = "application/pdf", path = "/d/1.pdf", name = "spec.pdf", size = 5 },
      },
    },
    {
      id = "a",
      role = "assistant",
      status = "done",
      blocks = {
        { type = "text", text = "Let me look." },
        { type = "toolCall", toolCallId = "c", name = "bash", arguments = { command = "ls" }, status = "denied", result = { content = "denied by the user", isError = false } },
      },
    },
  }, nil)
  H.eq(body(s), "## You\nHi\nthere\n[document spec.pdf: /d/1.pdf]\n\n## agentd\nLet me look.\n[tool bash] ls — denied\n    denied by the user\n", "history")
end)

cases.case("a selection is sent with its path relative to the workspace and its range", function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  dir = vim.loop.fs_realpath(dir)
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_name(buf, dir .. "/src/x.md")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a", "```", "b" })
  vim.bo[buf].filetype = "markdown"
  local agentd = require("agentd")
  H.eq(agentd.selection_text(buf, 1, 3, dir), "src/x.md, lines 1-3:\n````markdown\na\n```\nb\n````", "fence longer than the code's")
  H.eq(agentd.selection_text(buf, 3, 3, "/elsewhere"), dir .. "/src/x.md, line 3:\n```markdown\nb\n```", "outside the workspace")
  vim.fn.delete(dir, "rf")
end)

cases.case("without peer credentials, only a socket in a private folder of this user passes", function()
  local uv = vim.uv or vim.loop
  local dir = vim.fn.tempname()
  uv.fs_mkdir(dir, 493) -- 0755
  local path = dir .. "/s.sock"
  local server = uv.new_pipe(false)
  assert(server:bind(path))
  local me = uv.getuid()
  local ok, why = rpc._check_owner(path, me)
  H.eq(ok, false, "0755 folder")
  H.truthy(why:find("not a private", 1, true), why)
  uv.fs_chmod(dir, 448) -- 0700
  H.eq(rpc._check_owner(path, me), true, "0700 folder")
  H.eq(rpc._check_owner(path, me + 1), false, "another user's socket")
  H.eq(rpc._check_owner(dir .. "/none.sock", me), false, "no socket")
  server:close()
  vim.fn.delete(dir, "rf")
end)

cases.finish()
