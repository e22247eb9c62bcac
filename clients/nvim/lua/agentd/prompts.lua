--- agentd.prompts: permission prompts and the model's questions, asked with vim.ui.select
--- and vim.ui.input, one at a time across all chats, and answered with
--- handlePermissionResponse / answerQuestion.
---
--- It only asks what a session lists as open (agentd.session keeps that from the events
--- and getSession) and only once its run is suspended; it never decides a permission.

local value = require("agentd.rpc").value

local M = {}

-- Set by init: the plugin's state, call(method, params, cb), notify(msg, level).
local state, call, notify

function M.init(c)
  state, call, notify = c.state, c.call, c.notify
end


local function answer_permission(s, p, choice)
  local params = {
    messageId = p.messageId,
    toolCallId = p.toolCallId,
    granted = choice.granted,
    permissionType = value(p.info.permissionType),
  }
  if choice.granted then
    params.remember = choice.remember
  end
  call("handlePermissionResponse", params, function(err)
    if err == nil then
      return
    end
    if err.kind == "permissionNotPending" then
      notify("that prompt was already answered (or cancelled)")
      s.prompts[p.key or ""] = nil
    else
      p.state = "dismissed"
      notify("could not answer the prompt: " .. err.message .. "; :AgentdPrompts asks again", vim.log.levels.ERROR)
    end
  end)
end

local function ask_permission(s, p)
  p.state = "asking"
  state.prompt_open = true
  local info = p.info
  local tool = value(info.toolName) or "a tool"
  local what = value(info.commandDisplay) or value(info.command) or value(info.description) or ""
  local items = { { label = "Allow once", granted = true, remember = "once" } }
  if value(info.rememberable) then
    items[#items + 1] = { label = "Allow for this session", granted = true, remember = "session" }
  end
  items[#items + 1] = { label = "Deny", granted = false }
  local prompt = ("agentd: %s (%s) wants to: %s"):format(tool, tostring(value(info.permissionType) or "?"), what)
  local risk = value(info.risk)
  if type(risk) == "string" and risk ~= "" then
    prompt = prompt .. " [" .. risk .. "]"
  end
  vim.ui.select(items, {
    prompt = prompt,
    kind = "agentd.permission",
    format_item = function(item)
      return item.label
    end,
  }, function(choice)
    state.prompt_open = false
    if choice == nil then
      p.state = "dismissed"
      notify("the prompt stays open; :AgentdPrompts asks again")
    else
      p.state = "answered"
      answer_permission(s, p, choice)
    end
    M.ask_pending()
  end)
end

local function trim(text)
  return (text:gsub("^%s+", ""):gsub("%s+$", ""))
end

local function send_answer(s, q, params)
  params.messageId = q.messageId
  params.toolCallId = q.toolCallId
  call("answerQuestion", params, function(err)
    if err == nil then
      return
    end
    if err.kind == "questionNotPending" then
      notify("that question was already answered (or cancelled)")
    else
      q.state = "dismissed"
      notify("could not answer the question: " .. err.message .. "; :AgentdPrompts asks again", vim.log.levels.ERROR)
    end
  end)
end

-- Asks each question in turn (vim.ui.select for a single choice, vim.ui.input for several
-- labels or own words), then sends every answer at once.
local function ask_question(s, q)
  q.state = "asking"
  state.prompt_open = true
  local questions = value(q.info.questions) or {}
  local answers = {}
  local function finish(params)
    state.prompt_open = false
    if params == nil then
      q.state = "dismissed"
      notify("the question stays open; :AgentdPrompts asks again")
    else
      q.state = "answered"
      send_answer(s, q, params)
    end
    M.ask_pending()
  end
  local function step(i)
    if i > #questions then
      finish({ answers = answers })
      return
    end
    local question = questions[i]
    local text = tostring(value(question.question) or "")
    local options = value(question.options) or {}
    local labels = {}
    for _, o in ipairs(options) do
      labels[#labels + 1] = tostring(value(o.label))
    end
    local function own_words(prompt)
      vim.ui.input({ prompt = prompt }, function(input)
        if input == nil then
          return finish(nil)
        end
        input = trim(input)
        if input == "" then
          return finish({ declined = true })
        end
        local known = {}
        for _, l in ipairs(labels) do
          known[l] = true
        end
        local selected, rest = {}, {}
        if value(question.multiSelect) then
          for part in (input .. ","):gmatch("([^,]*),") do
            part = trim(part)
            if known[part] then
              selected[#selected + 1] = part
            elseif part ~= "" then
              rest[#rest + 1] = part
            end
          end
        else
          rest[1] = input
        end
        local answer = {}
        if #selected > 0 then
          answer.selected = selected
        end
        if #rest > 0 then
          answer.text = table.concat(rest, ", ")
        end
        answers[i] = answer
        step(i + 1)
      end)
    end
    if value(question.multiSelect) then
      own_words(("agentd asks: %s (any of: %s; comma-separated, or your own words; empty declines): "):format(
        text,
        table.concat(labels, ", ")
      ))
      return
    end
    local items = {}
    for _, o in ipairs(options) do
      local label = tostring(value(o.label))
      local desc = value(o.description)
      items[#items + 1] = { label = label, shown = desc and (label .. " — " .. tostring(desc)) or label }
    end
    items[#items + 1] = { own = true, shown = "Answer in my own words…" }
    items[#items + 1] = { decline = true, shown = "Decline to answer" }
    vim.ui.select(items, {
      prompt = "agentd asks: " .. text,
      kind = "agentd.question",
      format_item = function(item)
        return item.shown
      end,
    }, function(choice)
      if choice == nil then
        return finish(nil)
      elseif choice.decline then
        return finish({ declined = true })
      elseif choice.own then
        return own_words("agentd asks: " .. text .. " ")
      end
      answers[i] = { selected = { choice.label } }
      step(i + 1)
    end)
  end
  step(1)
end

--- Asks the next open prompt or question of a suspended run, one at a time.
function M.ask_pending()
  if state.prompt_open then
    return
  end
  for _, s in pairs(state.sessions) do
    if s.status == "waiting_permission" and not s.loading then
      for k, p in pairs(s.prompts) do
        if p.state == "new" then
          p.key = k
          return ask_permission(s, p)
        end
      end
    end
    if s.status == "waiting_question" and not s.loading then
      for _, q in pairs(s.questions) do
        if q.state == "new" then
          return ask_question(s, q)
        end
      end
    end
  end
end

return M
