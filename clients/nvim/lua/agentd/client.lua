--- agentd.client: the client behind the commands of agentd.nvim, loaded on first use
--- (through require("agentd"), which forwards what it does not define itself here).
---
--- Owns the plugin's one connection (opened on first use, reopened after the daemon
--- restarts), one chat buffer per agent with its session (agentd.session) and view
--- (agentd.render), the commands' actions, and the permission prompts and questions asked
--- with vim.ui. It never decides anything the daemon decides: every state it shows comes
--- from the daemon's events and stored messages. The options are agentd's (`setup`).

local agentd = require("agentd")
local rpc = require("agentd.rpc")
local session_mod = require("agentd.session")
local render = require("agentd.render")
local prompts = require("agentd.prompts")

local api = vim.api
local uv = vim.uv or vim.loop
local value = rpc.value

local M = {}

local HEADER = "\0header"

local state = {
  conn = nil,
  connecting = false,
  waiters = {},
  -- What the header shows about the connection: "connected", or why not.
  connection = "not connected",
  sessions = {}, -- agent id -> session
  by_buf = {}, -- buffer -> session
  last_agent = nil,
  reconnect_timer = nil,
  reconnect_delay = 100,
  prompt_open = false,
  -- Tests set this to hold reconnection while they make the daemon emit events.
  hold_reconnect = false,
}
M._state = state

local function notify(msg, level)
  vim.notify("agentd: " .. msg, level or vim.log.levels.INFO)
end

local function socket_path()
  return agentd.config.socket or rpc.default_socket_path()
end

---------------------------------------------------------------------------------------------
-- The view: a session's lines in its buffer, redrawn by regions (the header, one per
-- message), so streaming into the last message rewrites only that message's lines.
---------------------------------------------------------------------------------------------

local function region_lines(s, key)
  if key == HEADER then
    return render.header(s, state.connection)
  end
  return render.message(s.by_id[key])
end

local function draw(s)
  local buf = s.buf
  if buf == nil or not api.nvim_buf_is_valid(buf) then
    return
  end
  local keys = { HEADER }
  for _, m in ipairs(s.messages) do
    keys[#keys + 1] = m.id
  end
  local last = api.nvim_buf_line_count(buf)
  local follow = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf and api.nvim_win_get_cursor(win)[1] >= last then
      follow[#follow + 1] = win
    end
  end
  vim.bo[buf].modifiable = true
  local full = s.full or s.regions == nil or #s.regions > #keys
  if not full then
    local offset = 0
    for i, k in ipairs(keys) do
      local r = s.regions[i]
      if r == nil then
        local lines = region_lines(s, k)
        api.nvim_buf_set_lines(buf, offset, offset, false, lines)
        r = { key = k, n = #lines }
        s.regions[i] = r
      elseif r.key ~= k then
        full = true
        break
      elseif (k == HEADER and s.header_dirty) or s.dirty[k] then
        local lines = region_lines(s, k)
        api.nvim_buf_set_lines(buf, offset, offset + r.n, false, lines)
        r.n = #lines
      end
      offset = offset + r.n
    end
  end
  if full then
    local all, regions = {}, {}
    for i, k in ipairs(keys) do
      local lines = region_lines(s, k)
      vim.list_extend(all, lines)
      regions[i] = { key = k, n = #lines }
    end
    api.nvim_buf_set_lines(buf, 0, -1, false, all)
    s.regions = regions
    s.full = false
  end
  s.dirty = {}
  s.header_dirty = false
  vim.bo[buf].modifiable = false
  local count = api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    if api.nvim_win_is_valid(win) then
      api.nvim_win_set_cursor(win, { count, 0 })
    end
  end
end

local function schedule_draw(s)
  if s.draw_pending then
    return
  end
  s.draw_pending = true
  vim.schedule(function()
    s.draw_pending = false
    draw(s)
  end)
end

local function set_connection(text)
  state.connection = text
  for _, s in pairs(state.sessions) do
    s.header_dirty = true
    schedule_draw(s)
  end
end

---------------------------------------------------------------------------------------------
-- The connection.
---------------------------------------------------------------------------------------------

local handle_event, subscribe, schedule_reconnect, reload

local function on_event(subscription, ev)
  local s = state.sessions[value(ev.agentId)]
  if s == nil or s.subscription ~= subscription then
    return
  end
  handle_event(s, ev)
end

local function on_close(reason)
  state.conn = nil
  for _, s in pairs(state.sessions) do
    s.subscription = nil
  end
  set_connection("disconnected (" .. reason .. "); reconnecting")
  schedule_reconnect()
end

--- Calls `cb(conn)` with the open connection, opening it if needed; `cb(nil, err)` if the
--- daemon cannot be reached.
local function with_conn(cb)
  if state.conn ~= nil and not state.conn.closed then
    cb(state.conn)
    return
  end
  state.waiters[#state.waiters + 1] = cb
  if state.connecting then
    return
  end
  state.connecting = true
  rpc.connect(socket_path(), { on_event = on_event, on_close = on_close }, function(conn, err)
    state.connecting = false
    local waiters = state.waiters
    state.waiters = {}
    if conn ~= nil then
      state.conn = conn
      state.reconnect_delay = 100
      conn:request("initialize", { clientName = "agentd.nvim", clientVersion = agentd.version, protocolVersion = 1 }, function() end)
      set_connection("connected")
      for _, s in pairs(state.sessions) do
        if s.ready then
          subscribe(s)
        elseif not s.loading then
          -- Its first load was cut short by the lost connection.
          reload(s, function()
            s.ready = true
            subscribe(s)
          end)
        end
      end
    end
    for _, w in ipairs(waiters) do
      w(conn, err)
    end
  end)
end

--- Requests `method` on the connection (opened if needed); errors are shown unless
--- `cb` takes them (it gets `err, result`).
local function call(method, params, cb)
  with_conn(function(conn, err)
    if conn == nil then
      if cb then
        cb({ kind = "disconnected", message = err }, nil)
      else
        notify(err, vim.log.levels.ERROR)
      end
      return
    end
    conn:request(method, params, function(e, result)
      if cb then
        cb(e, result)
      elseif e then
        notify(method .. ": " .. e.message, vim.log.levels.ERROR)
      end
    end)
  end)
end

prompts.init({ state = state, call = call, notify = notify })

schedule_reconnect = function()
  if state.reconnect_timer ~= nil or next(state.sessions) == nil then
    return
  end
  local timer = uv.new_timer()
  state.reconnect_timer = timer
  timer:start(state.reconnect_delay, 0, function()
    timer:close()
    vim.schedule(function()
      state.reconnect_timer = nil
      if state.conn ~= nil or next(state.sessions) == nil then
        return
      end
      if state.hold_reconnect then
        schedule_reconnect()
        return
      end
      with_conn(function(conn)
        if conn == nil then
          state.reconnect_delay = math.min(state.reconnect_delay * 2, agentd.config.reconnect_max_ms)
          schedule_reconnect()
        end
      end)
    end)
  end)
end

---------------------------------------------------------------------------------------------
-- Sessions: load, subscribe, fold events.
---------------------------------------------------------------------------------------------

local ask_pending

-- Every stored message of an agent, oldest first, page by page.
local function all_messages(agent_id, cb)
  local out = {}
  local function page(cursor)
    call("listMessages", { agentId = agent_id, order = "asc", limit = 500, cursor = cursor }, function(err, result)
      if err then
        cb(err)
        return
      end
      vim.list_extend(out, value(result.messages) or {})
      local next_cursor = value(result.nextCursor)
      if next_cursor ~= nil then
        page(next_cursor)
      else
        cb(nil, out)
      end
    end)
  end
  page(nil)
end

--- Reloads a session from the store (agent, session with its prompts, messages, plan).
--- Events that arrive meanwhile are held and folded in after, above the loaded seq.
reload = function(s, done)
  if s.loading then
    return
  end
  s.loading = true
  s.held = {}
  local function fail(err)
    s.loading = false
    s.held = nil
    if err.kind == "agentNotFound" then
      s.deleted = true
      s.header_dirty = true
      schedule_draw(s)
    elseif err.kind ~= "disconnected" then
      notify("cannot load agent " .. s.agent_id .. ": " .. err.message, vim.log.levels.ERROR)
    end
  end
  call("getAgent", { agentId = s.agent_id }, function(err, agent)
    if err then
      return fail(err)
    end
    call("getSession", { agentId = s.agent_id }, function(err2, info)
      if err2 then
        return fail(err2)
      end
      all_messages(s.agent_id, function(err3, messages)
        if err3 then
          return fail(err3)
        end
        call("getPlan", { agentId = s.agent_id }, function(err4, plan)
          s.agent = agent
          s:load(info, messages, err4 == nil and plan or nil)
          s.loading = false
          local held = s.held
          s.held = nil
          for _, ev in ipairs(held) do
            handle_event(s, ev)
          end
          schedule_draw(s)
          ask_pending()
          if done then
            done()
          end
        end)
      end)
    end)
  end)
end

-- Takes the stored copies of the latest messages once a run ended.
local function refresh(s)
  call("listMessages", { agentId = s.agent_id, order = "desc", limit = 4 }, function(err, result)
    if err or state.sessions[s.agent_id] ~= s then
      return
    end
    local list = value(result.messages) or {}
    local asc = {}
    for i = #list, 1, -1 do
      asc[#asc + 1] = list[i]
    end
    s:refresh(asc)
    schedule_draw(s)
  end)
end

handle_event = function(s, ev)
  if s.loading then
    s.held[#s.held + 1] = ev
    return
  end
  local actions = s:apply(ev)
  if actions.reload then
    reload(s)
  end
  if actions.refresh then
    refresh(s)
  end
  if actions.ask then
    ask_pending()
  end
  schedule_draw(s)
end

-- Subscribes to the agent's events after its last seen seq: the daemon replays what was
-- missed, or sends resyncRequired (then the session reloads).
subscribe = function(s)
  local params = { agentId = s.agent_id }
  if s.last_seq ~= nil then
    params.sinceSeq = s.last_seq
  end
  with_conn(function(conn)
    if conn == nil or s.sub_conn == conn then
      return
    end
    s.sub_conn = conn
    conn:request("subscribe", params, function(err, subscription)
      if err then
        if err.kind == "agentNotFound" then
          s.deleted = true
          s.header_dirty = true
          schedule_draw(s)
        elseif err.kind ~= "disconnected" then
          notify("subscribe: " .. err.message, vim.log.levels.ERROR)
        end
        return
      end
      if state.sessions[s.agent_id] == s and state.conn == conn then
        s.subscription = subscription
      else
        conn:unsubscribe(subscription)
      end
    end)
  end)
end

---------------------------------------------------------------------------------------------
-- Chat buffers.
---------------------------------------------------------------------------------------------

local function close_session(s)
  if state.sessions[s.agent_id] ~= s then
    return
  end
  state.sessions[s.agent_id] = nil
  if s.buf then
    state.by_buf[s.buf] = nil
  end
  if state.last_agent == s.agent_id then
    state.last_agent = nil
  end
  if state.conn ~= nil and s.subscription ~= nil then
    state.conn:unsubscribe(s.subscription)
  end
  s.subscription = nil
end

local function show(buf, keep_focus)
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf then
      if not keep_focus then
        api.nvim_set_current_win(win)
      end
      return
    end
  end
  local from = api.nvim_get_current_win()
  local how = agentd.config.open
  if state.by_buf[api.nvim_get_current_buf()] ~= nil or how == "current" then
    api.nvim_set_current_buf(buf)
  else
    if how == "split" then
      vim.cmd("split")
    elseif how == "tab" then
      vim.cmd("tabnew")
    else
      vim.cmd("vsplit")
    end
    api.nvim_set_current_buf(buf)
  end
  if keep_focus and api.nvim_win_is_valid(from) then
    api.nvim_set_current_win(from)
  end
end

local function make_buffer(s)
  local buf = api.nvim_create_buf(true, true)
  api.nvim_buf_set_name(buf, "agentd://" .. s.agent_id)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "agentd"
  vim.bo[buf].syntax = "markdown"
  vim.bo[buf].modifiable = false
  api.nvim_buf_set_var(buf, "agentd_agent_id", s.agent_id)
  local group = api.nvim_create_augroup("agentd_buf_" .. buf, { clear = true })
  api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = buf,
    callback = function()
      close_session(s)
    end,
  })
  api.nvim_create_autocmd("BufEnter", {
    group = group,
    buffer = buf,
    callback = function()
      state.last_agent = s.agent_id
    end,
  })
  if agentd.config.mappings then
    local function map(lhs, fn, desc)
      vim.keymap.set("n", lhs, fn, { buffer = buf, desc = desc, silent = true })
    end
    map("i", function()
      M.compose()
    end, "agentd: write a message")
    map("<CR>", function()
      M.compose()
    end, "agentd: write a message")
    map("<C-c>", function()
      M.cancel()
    end, "agentd: cancel the run")
    map("gp", function()
      M.prompts()
    end, "agentd: answer open prompts")
  end
  s.buf = buf
  state.by_buf[buf] = s
  return buf
end

--- Opens (or shows) the chat buffer of `agent` (an Agent from the daemon), loads its history
--- and follows its events. `cb(session)` once it is loaded.
function M.open(agent, cb)
  local s = state.sessions[agent.id]
  if s ~= nil and s.buf ~= nil and api.nvim_buf_is_valid(s.buf) then
    show(s.buf)
    state.last_agent = s.agent_id
    if cb then
      cb(s)
    end
    return s
  end
  s = session_mod.new(agent)
  state.sessions[agent.id] = s
  state.last_agent = agent.id
  show(make_buffer(s))
  draw(s)
  reload(s, function()
    s.ready = true
    subscribe(s)
    if cb then
      cb(s)
    end
  end)
  return s
end

local function trim(text)
  return (text:gsub("^%s+", ""):gsub("%s+$", ""))
end

local function current_session()
  local s = state.by_buf[api.nvim_get_current_buf()]
  if s ~= nil then
    return s
  end
  if state.last_agent ~= nil then
    return state.sessions[state.last_agent]
  end
  return nil
end

local function need_session()
  local s = current_session()
  if s == nil then
    notify("no chat buffer: open one with :AgentdNew or :AgentdAgents", vim.log.levels.WARN)
  end
  return s
end

ask_pending = function()
  prompts.ask_pending()
end

---------------------------------------------------------------------------------------------
-- Commands.
---------------------------------------------------------------------------------------------

--- :AgentdNew [title]: a new agent in agent mode working in the current directory.
function M.new(title, cb)
  local params = { mode = "agent", workspace = uv.cwd() }
  if title ~= nil and trim(title) ~= "" then
    params.title = trim(title)
  end
  call("createAgent", params, function(err, agent)
    if err then
      notify("cannot create an agent: " .. err.message, vim.log.levels.ERROR)
      return
    end
    M.open(agent, cb)
  end)
end

local function send_to(s, content)
  local id = ("nvim-%d-%d"):format(uv.hrtime(), math.random(1, 1e9))
  call("sendMessage", { agentId = s.agent_id, content = content, clientRequestId = id }, function(err)
    if err then
      notify(err.message, vim.log.levels.ERROR)
    end
  end)
end

--- The text sent for lines `line1`..`line2` of buffer `buf`: its path (relative to the
--- agent's workspace when inside it), the line range and the code in a fence.
function M.selection_text(buf, line1, line2, workspace)
  local path = api.nvim_buf_get_name(buf)
  if path == "" then
    path = "[unnamed buffer " .. buf .. "]"
  elseif workspace ~= nil and path:sub(1, #workspace + 1) == workspace .. "/" then
    path = path:sub(#workspace + 2)
  end
  local lines = api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
  local code = table.concat(lines, "\n")
  local fence = "```"
  while code:find(fence, 1, true) do
    fence = fence .. "`"
  end
  local range = line1 == line2 and ("line %d"):format(line1) or ("lines %d-%d"):format(line1, line2)
  local ft = vim.bo[buf].filetype
  return ("%s, %s:\n%s%s\n%s\n%s"):format(path, range, fence, ft, code, fence)
end

--- :AgentdSend {text}, or with a range: the range's lines of the current buffer with its file
--- and line range (and {text} before them).
function M.send(text, line1, line2)
  local s = need_session()
  if s == nil then
    return
  end
  text = text and trim(text) or ""
  local content = text
  if line1 ~= nil then
    local buf = api.nvim_get_current_buf()
    if state.by_buf[buf] == nil then
      local snippet = M.selection_text(buf, line1, line2, value(s.agent.workspace))
      content = text ~= "" and (text .. "\n\n" .. snippet) or snippet
      if s.buf and api.nvim_buf_is_valid(s.buf) then
        show(s.buf, true)
      end
    end
  end
  if content == "" then
    M.compose()
    return
  end
  send_to(s, content)
end

--- Asks for a message with vim.ui.input and sends it to the current chat's agent.
function M.compose()
  local s = need_session()
  if s == nil then
    return
  end
  vim.ui.input({ prompt = "agentd> " }, function(input)
    if input ~= nil and trim(input) ~= "" then
      send_to(s, input)
    end
  end)
end

--- :AgentdCancel: cancels the current chat's run.
function M.cancel()
  local s = need_session()
  if s == nil then
    return
  end
  call("cancelLoop", { agentId = s.agent_id }, function(err, result)
    if err then
      notify("cancel: " .. err.message, vim.log.levels.ERROR)
    elseif not value(result.cancelled) then
      notify("nothing to cancel")
    end
  end)
end

--- :AgentdAgents: pick an agent and open its chat buffer with its history.
function M.agents()
  call("listAgents", { limit = 200 }, function(err, result)
    if err then
      notify("cannot list agents: " .. err.message, vim.log.levels.ERROR)
      return
    end
    local agents = value(result.agents) or {}
    if #agents == 0 then
      notify("no agents yet: :AgentdNew makes one")
      return
    end
    vim.ui.select(agents, {
      prompt = "agentd agents",
      kind = "agentd.agent",
      format_item = function(a)
        local facts = { tostring(value(a.mode) or ""), tostring(value(a.status) or "") }
        return ("%s  (%s)  %s"):format(tostring(value(a.title)), table.concat(facts, ", "), a.id)
      end,
    }, function(agent)
      if agent ~= nil then
        M.open(agent)
      end
    end)
  end)
end

--- :AgentdPrompts: asks again the prompts and questions left unanswered.
function M.prompts()
  for _, s in pairs(state.sessions) do
    for _, p in pairs(s.prompts) do
      if p.state == "dismissed" then
        p.state = "new"
      end
    end
    for _, q in pairs(s.questions) do
      if q.state == "dismissed" then
        q.state = "new"
      end
    end
  end
  ask_pending()
end

--- The session of a chat buffer (for statuslines and tests).
function M.session(buf)
  return state.by_buf[buf or api.nvim_get_current_buf()]
end

-- Drops the connection as if it had broken (tests, and :AgentdReconnect).
function M._drop()
  if state.conn ~= nil then
    local conn = state.conn
    conn:close()
    on_close("dropped")
  end
end

--- :AgentdReconnect: drops the connection and opens a new one (replaying what was missed).
function M.reconnect()
  M._drop()
  with_conn(function(conn, err)
    if conn == nil then
      notify(err, vim.log.levels.ERROR)
    end
  end)
end

return M
