--- agentd.render: the lines a chat buffer shows for a session's header and for each
--- message. Pure: tables in, lists of strings out (no newline inside a line).

local value = require("agentd.rpc").value

local M = {}

--- Lines of a tool result shown under a finished call.
M.result_lines = 8

local function split(text)
  local out = {}
  text = tostring(text or "")
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    out[#out + 1] = line
  end
  return out
end
M.split = split

local function add_all(out, lines, prefix)
  for _, l in ipairs(lines) do
    out[#out + 1] = (prefix or "") .. l
  end
end

local tool_status = {
  streaming = "writing…",
  ready = "ready",
  waitingPermission = "waiting for permission",
  waitingAnswer = "waiting for your answer",
  approved = "approved",
  running = "running",
  success = "done",
  error = "failed",
  denied = "denied",
  cancelled = "cancelled",
  interrupted = "interrupted",
}

local message_status = {
  pending = "waiting for the model",
  streaming = "streaming",
  waiting = "waiting",
  cancelled = "cancelled",
  error = "error",
  interrupted = "interrupted",
}

local function one_line(s, max)
  s = tostring(s):gsub("%s+", " ")
  if #s > max then
    s = s:sub(1, max - 1) .. "…"
  end
  return s
end

-- What a call does, in a few words: its command, path, pattern or URL, else its arguments.
local function summary(b)
  local args = value(b.arguments)
  if type(args) == "table" then
    local questions = value(args.questions)
    if type(questions) == "table" and type(questions[1]) == "table" and type(value(questions[1].question)) == "string" then
      return one_line(questions[1].question, 100)
    end
    for _, k in ipairs({ "command", "path", "pattern", "url", "query", "description" }) do
      local v = value(args[k])
      if type(v) == "string" and v ~= "" then
        return one_line(v, 100)
      end
    end
    local ok, json = pcall(vim.json.encode, args)
    if ok and json ~= "[]" and json ~= "{}" then
      return one_line(json, 100)
    end
    return ""
  end
  if b.rawArguments and b.rawArguments ~= "" then
    return one_line(b.rawArguments, 100)
  end
  return ""
end

local function tool_lines(out, b)
  local what = summary(b)
  local status = tool_status[b.status] or tostring(b.status)
  local head = "[tool " .. tostring(b.name or "?") .. "] "
  if what ~= "" then
    head = head .. what .. " "
  end
  out[#out + 1] = head .. "— " .. status
  if b.progress then
    local p = b.progress
    local line = "    progress " .. tostring(p.progress or "")
    if p.total then
      line = line .. "/" .. tostring(p.total)
    end
    if p.message then
      line = line .. " " .. one_line(p.message, 80)
    end
    out[#out + 1] = line
  end
  local result = value(b.result)
  local finished = type(result) == "table" and value(result.content) ~= nil
  if b.live and not finished then
    -- A running command's output as it comes: its last lines, stderr's marked "!".
    local lines = b.live
    local first = math.max(1, #lines - M.result_lines + 1)
    local earlier = first - 1 + (b.live_dropped or 0)
    if earlier > 0 then
      out[#out + 1] = ("    … %d earlier lines"):format(earlier)
    end
    for i = first, #lines do
      local mark = lines[i].stream == "stderr" and "  ! " or "  │ "
      out[#out + 1] = mark .. lines[i].text
    end
  end
  if finished then
    local lines = split(value(result.content))
    while #lines > 0 and lines[#lines] == "" do
      lines[#lines] = nil
    end
    local shown = math.min(#lines, M.result_lines)
    for i = 1, shown do
      out[#out + 1] = "    " .. lines[i]
    end
    if #lines > shown then
      out[#out + 1] = ("    … %d more lines"):format(#lines - shown)
    end
  end
  local answer = value(b.answer)
  if type(answer) == "table" then
    if value(answer.cancelled) then
      out[#out + 1] = "    (question cancelled)"
    elseif value(answer.declined) then
      out[#out + 1] = "    (declined)"
    else
      for _, a in ipairs(value(answer.answers) or {}) do
        local parts = {}
        for _, l in ipairs(value(a.selected) or {}) do
          parts[#parts + 1] = l
        end
        if value(a.text) then
          parts[#parts + 1] = value(a.text)
        end
        out[#out + 1] = "    answer: " .. table.concat(parts, ", ")
      end
    end
  end
end

--- The lines of one message, a blank line after it.
function M.message(msg)
  local out = {}
  if msg.role == "user" then
    out[1] = "## You"
  else
    local s = message_status[msg.status]
    out[1] = s and ("## agentd (" .. s .. ")") or "## agentd"
  end
  for _, b in ipairs(msg.blocks) do
    if b.type == "text" then
      add_all(out, split(b.text))
    elseif b.type == "reasoning" then
      if b.text and b.text ~= "" then
        add_all(out, split(b.text), "> ")
      end
    elseif b.type == "toolCall" then
      tool_lines(out, b)
    elseif b.type == "image" then
      out[#out + 1] = "[image " .. tostring(b.path or b.mimeType or "") .. "]"
    elseif b.type == "document" then
      out[#out + 1] = "[document " .. tostring(b.name or "") .. ": " .. tostring(b.path or "") .. "]"
    elseif b.type == "steer" then
      add_all(out, split(tostring(b.text or "")), "» you: ")
    elseif b.type == "error" then
      local prefix = b.retryable and b.live and "[retrying] " or "[error] "
      add_all(out, split(tostring(b.message or b.kind or "error")), prefix)
    end
  end
  out[#out + 1] = ""
  return out
end

local plan_mark = { completed = "[x]", in_progress = "[~]", pending = "[ ]" }

--- The header: title, what the agent is, its status (or the connection's), its plan.
function M.header(s, connection)
  local a = s.agent or {}
  local out = { "# " .. tostring(value(a.title) or "agent") }
  local facts = { "agent " .. tostring(s.agent_id) }
  if value(a.mode) then
    facts[#facts + 1] = tostring(value(a.mode))
  end
  if value(a.provider) or value(a.model) then
    facts[#facts + 1] = tostring(value(a.provider) or "?") .. "/" .. tostring(value(a.model) or "?")
  end
  if value(a.workspace) then
    facts[#facts + 1] = tostring(value(a.workspace))
  end
  out[#out + 1] = table.concat(facts, " · ")
  local status
  if s.deleted then
    status = "deleted"
  elseif connection ~= "connected" then
    status = tostring(connection)
  else
    status = tostring(s.status)
    if s.last_end and s.status ~= "generating" and s.last_end.error then
      status = status .. " — " .. one_line(s.last_end.error, 120)
    end
  end
  out[#out + 1] = "status: " .. status
  if s.plan then
    out[#out + 1] = "plan:"
    for _, item in ipairs(s.plan) do
      local st = value(item.status)
      local text = (st == "in_progress" and value(item.activeForm)) or value(item.content) or ""
      out[#out + 1] = "  " .. (plan_mark[st] or "[?]") .. " " .. one_line(text, 120)
    end
  end
  out[#out + 1] = ""
  return out
end

return M
