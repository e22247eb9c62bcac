--- agentd.session: what one chat buffer knows about its agent, rebuilt from the daemon's
--- events and stored messages.
---
--- Pure state: no socket, no buffer, no UI. `apply(event)` folds one event in (deduplicating
--- by seq, asking for a reload on a gap or a `resyncRequired`) and says what the caller
--- should do next; `load` replaces everything from `getSession` + `listMessages`. Which
--- messages changed is kept in `dirty` for the view to redraw only those.

local value = require("agentd.rpc").value

local M = {}

local Session = {}
Session.__index = Session

function M.new(agent)
  local s = setmetatable({
    agent_id = agent.id,
    agent = agent,
    status = value(agent.status) or "idle",
    messages = {},
    by_id = {},
    last_seq = nil,
    plan = nil,
    -- Open permission prompts and questions, by "messageId/toolCallId":
    -- { messageId, toolCallId, info, state = "new" | "asking" | "dismissed" }.
    prompts = {},
    questions = {},
    dirty = {},
    header_dirty = true,
    deleted = false,
    loads = 0,
  }, Session)
  return s
end

local function key(message_id, tool_call_id)
  return tostring(message_id) .. "/" .. tostring(tool_call_id)
end
M.key = key

-- A stored Message (or one from a userMessage event) as this model keeps it.
local function from_wire(m)
  local blocks = {}
  for _, b in ipairs(value(m.blocks) or {}) do
    local copy = {}
    for k, v in pairs(b) do
      copy[k] = value(v)
    end
    blocks[#blocks + 1] = copy
  end
  return {
    id = m.id,
    role = value(m.role) or "assistant",
    status = value(m.status) or "done",
    blocks = blocks,
  }
end

--- Lines of a running command's output a call keeps (the view shows the last few).
M.live_lines = 200

--- Adds a piece of a running command's output to call block `b`: `b.live` is its lines,
--- each `{ stream, text, open }` (`open`: the piece that ends it may still go on).
function M.add_live(b, stream, text)
  local lines = b.live or {}
  b.live = lines
  local pos = 1
  while pos <= #text do
    local nl = text:find("\n", pos, true)
    local piece = text:sub(pos, (nl or (#text + 1)) - 1)
    local last = lines[#lines]
    if last and last.open and last.stream == stream then
      last.text = last.text .. piece
    else
      if last then
        last.open = false
      end
      lines[#lines + 1] = { stream = stream, text = piece, open = true }
    end
    if nl then
      lines[#lines].open = false
      pos = nl + 1
    else
      pos = #text + 1
    end
  end
  while #lines > M.live_lines do
    table.remove(lines, 1)
    b.live_dropped = (b.live_dropped or 0) + 1
  end
end

function Session:_touch(id)
  self.dirty[id] = true
end

function Session:_message(id)
  local msg = self.by_id[id]
  if msg == nil then
    msg = { id = id, role = "assistant", status = "pending", blocks = {} }
    self.messages[#self.messages + 1] = msg
    self.by_id[id] = msg
  end
  self:_touch(id)
  return msg
end

function Session:_put(m)
  local msg = from_wire(m)
  local old = self.by_id[msg.id]
  if old then
    old.role, old.status, old.blocks = msg.role, msg.status, msg.blocks
  else
    self.messages[#self.messages + 1] = msg
    self.by_id[msg.id] = msg
  end
  self:_touch(msg.id)
end

function Session:_tool(ev)
  local msg = self:_message(ev.messageId)
  if msg.status == "pending" then
    msg.status = "streaming"
  end
  for _, b in ipairs(msg.blocks) do
    if b.type == "toolCall" and b.toolCallId == ev.toolCallId then
      return b
    end
  end
  local b = { type = "toolCall", toolCallId = ev.toolCallId, name = value(ev.name) or value(ev.toolName), status = "streaming" }
  msg.blocks[#msg.blocks + 1] = b
  return b
end

function Session:_append(ev, kind)
  local msg = self:_message(ev.messageId)
  if msg.status == "pending" then
    msg.status = "streaming"
  end
  local last = msg.blocks[#msg.blocks]
  if last and last.type == kind then
    last.text = (last.text or "") .. (value(ev.delta) or "")
  else
    msg.blocks[#msg.blocks + 1] = { type = kind, text = value(ev.delta) or "" }
  end
end

--- Replaces the whole model: `info` is a getSession result, `messages` every stored message
--- (oldest first), `plan` a getPlan result or nil. Open prompts keep their state (a prompt
--- already on screen is not asked twice).
function Session:load(info, messages, plan)
  self.loads = (self.loads or 0) + 1
  self.messages, self.by_id = {}, {}
  for _, m in ipairs(messages) do
    local msg = from_wire(m)
    self.messages[#self.messages + 1] = msg
    self.by_id[msg.id] = msg
  end
  self.status = value(info.status) or self.status
  self.last_seq = value(info.lastSeq)
  if plan ~= nil then
    local items = value(plan.items)
    self.plan = (items and #items > 0) and items or nil
  end
  local prompts = {}
  for _, p in ipairs(value(info.pendingPermissions) or {}) do
    local k = key(p.messageId, p.toolCallId)
    local old = self.prompts[k]
    prompts[k] = { messageId = p.messageId, toolCallId = p.toolCallId, info = p, state = old and old.state or "new" }
  end
  self.prompts = prompts
  local questions = {}
  for _, q in ipairs(value(info.pendingQuestions) or {}) do
    local k = key(q.messageId, q.toolCallId)
    local old = self.questions[k]
    questions[k] = { messageId = q.messageId, toolCallId = q.toolCallId, info = q, state = old and old.state or "new" }
  end
  self.questions = questions
  self.last_end = nil
  self.full = true
  self.header_dirty = true
end

--- Takes newer stored copies of messages (e.g. after a run ended: the events may have been
--- joined with a store read that lagged them). Messages still being written are left alone.
function Session:refresh(messages)
  local final = { done = true, cancelled = true, error = true, interrupted = true, waiting = true }
  for _, m in ipairs(messages) do
    if final[value(m.status)] then
      self:_put(m)
    end
  end
end

--- Folds one event in. Returns what to do: `reload` (events were missed: reload from the
--- store), `ask` (a run ended at a prompt or a question: ask the user), `refresh` (a run
--- ended: take the stored copies of its messages).
function Session:apply(ev)
  local actions = {}
  local seq = value(ev.seq)
  local t = ev.type
  if t == "resyncRequired" then
    self.last_seq = seq
    actions.reload = true
    return actions
  end
  if type(seq) == "number" and seq > 0 then
    if self.last_seq ~= nil and seq <= self.last_seq then
      return actions
    end
    local gap = self.last_seq ~= nil and seq > self.last_seq + 1
    self.last_seq = seq
    if gap then
      actions.reload = true
      return actions
    end
  end
  if t == "userMessage" then
    self:_put(ev.message)
  elseif t == "messageStarted" then
    local msg = self:_message(ev.messageId)
    msg.status = "streaming"
  elseif t == "textDelta" then
    self:_append(ev, "text")
  elseif t == "reasoningDelta" then
    self:_append(ev, "reasoning")
  elseif t == "toolCallStarted" then
    self:_tool(ev)
  elseif t == "toolCallArgsDelta" then
    local b = self:_tool(ev)
    b.rawArguments = (b.rawArguments or "") .. (value(ev.delta) or "")
  elseif t == "toolCallReady" then
    local b = self:_tool(ev)
    b.arguments = value(ev.arguments)
    b.status = "ready"
  elseif t == "permissionRequested" then
    local b = self:_tool(ev)
    b.status = "waitingPermission"
    b.prompt = ev
    local k = key(ev.messageId, ev.toolCallId)
    if self.prompts[k] == nil then
      self.prompts[k] = { messageId = ev.messageId, toolCallId = ev.toolCallId, info = ev, state = "new" }
    end
  elseif t == "permissionResolved" then
    local b = self:_tool(ev)
    if value(ev.cancelled) then
      b.status = "cancelled"
    elseif value(ev.granted) then
      b.status = "approved"
    else
      b.status = "denied"
    end
    self.prompts[key(ev.messageId, ev.toolCallId)] = nil
  elseif t == "toolProgress" then
    local b = self:_tool(ev)
    local output = value(ev.output)
    if type(output) == "table" then
      M.add_live(b, value(output.stream), value(output.text) or "")
    else
      b.progress = { progress = value(ev.progress), total = value(ev.total), message = value(ev.message) }
    end
  elseif t == "toolResult" then
    local b = self:_tool(ev)
    b.status = value(ev.status) or b.status
    b.result = { content = value(ev.content), isError = value(ev.status) == "error" }
  elseif t == "questionRequested" then
    local b = self:_tool(ev)
    b.status = "waitingAnswer"
    b.questions = value(ev.questions)
    local k = key(ev.messageId, ev.toolCallId)
    if self.questions[k] == nil then
      self.questions[k] = { messageId = ev.messageId, toolCallId = ev.toolCallId, info = ev, state = "new" }
    end
  elseif t == "questionResolved" then
    local b = self:_tool(ev)
    b.answer = { answers = value(ev.answers), declined = value(ev.declined), cancelled = value(ev.cancelled) }
    if b.status == "waitingAnswer" then
      b.status = value(ev.cancelled) and "cancelled" or "approved"
    end
    self.questions[key(ev.messageId, ev.toolCallId)] = nil
  elseif t == "steered" then
    -- The user's words joined the running turn; what the model writes next is a new block.
    local msg = self:_message(ev.messageId)
    msg.blocks[#msg.blocks + 1] = { type = "steer", id = value(ev.id), text = value(ev.text) or "" }
  elseif t == "messageCompleted" then
    local msg = self:_message(ev.messageId)
    msg.status = value(ev.status) or msg.status
  elseif t == "error" then
    local id = value(ev.messageId)
    if id ~= nil then
      local msg = self:_message(id)
      msg.blocks[#msg.blocks + 1] = {
        type = "error",
        message = value(ev.message),
        kind = value(ev.kind),
        retryable = value(ev.retryable),
        live = true,
      }
    end
  elseif t == "statusChanged" then
    self.status = value(ev.status) or self.status
    if self.status == "generating" then
      self.last_end = nil
    end
    self.header_dirty = true
  elseif t == "loopFinished" then
    self.last_end = { reason = value(ev.reason), error = value(ev.error) }
    self.header_dirty = true
    local reason = value(ev.reason)
    if reason == "waitingPermission" or reason == "waitingQuestion" then
      actions.ask = true
    end
    actions.refresh = true
  elseif t == "agentCreated" or t == "agentUpdated" then
    if type(ev.agent) == "table" then
      self.agent = ev.agent
      self.header_dirty = true
    end
  elseif t == "agentDeleted" then
    self.deleted = true
    self.header_dirty = true
  elseif t == "planUpdated" then
    local items = value(ev.items)
    self.plan = (items and #items > 0) and items or nil
    self.header_dirty = true
  end
  return actions
end

return M
