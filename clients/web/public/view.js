// Building the page's parts from state: the agent list, messages, tool calls, prompts,
// the plan and subagents. Only DOM here, no socket: actions go back through the callbacks
// the page passes in. Text goes in with textContent; the one innerHTML is model text
// through renderMarkdown, which escapes everything first.

import { renderMarkdown } from "./markdown.js";

/** `h("div.cls", {attr: v, onclick: f}, child...)`: a small element builder. */
export function h(tagAndClass, attrs = {}, ...children) {
  const [tag, ...classes] = tagAndClass.split(".");
  const el = document.createElement(tag);
  if (classes.length) el.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "text") el.textContent = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const STATUS_WORDS = {
  idle: "idle",
  generating: "working",
  waiting_permission: "needs permission",
  waiting_question: "has a question",
  paused: "paused",
  error: "error",
};

export function statusWord(status) {
  return STATUS_WORDS[status] ?? status;
}

/** The sidebar: top-level agents newest first, each followed by its subagents. */
export function renderAgentList(list, agents, { openId, unread }) {
  const children = new Map();
  const roots = [];
  for (const agent of agents.values()) {
    if (agent.parentAgentId && agents.has(agent.parentAgentId)) {
      if (!children.has(agent.parentAgentId)) children.set(agent.parentAgentId, []);
      children.get(agent.parentAgentId).push(agent);
    } else roots.push(agent);
  }
  const newestFirst = (a, b) => (a.id < b.id ? 1 : -1);
  const items = [];
  const add = (agent, depth) => {
    const count = unread.get(agent.id) ?? 0;
    const link = h(
      "a.agent-link",
      { href: `#agent=${encodeURIComponent(agent.id)}`, "aria-current": agent.id === openId ? "page" : null },
      h("span.agent-title", { text: agent.title }),
      h(`span.badge.status-${agent.status}`, { text: statusWord(agent.status) }),
      count > 0 ? h("span.unread", { title: `${count} unread`, text: `${count} unread` }) : null,
    );
    // A class, not a style attribute: the daemon's Content-Security-Policy forbids inline styles.
    items.push(h(`li.depth-${Math.min(depth, 3)}`, { "data-agent-id": agent.id }, link));
    for (const child of (children.get(agent.id) ?? []).sort(newestFirst)) add(child, depth + 1);
  };
  for (const agent of roots.sort(newestFirst)) add(agent, 0);
  list.replaceChildren(...items);
}

/** One message as an element (re-rendered whole when it changes). */
export function renderMessage(message) {
  const blocks = message.blocks.map((block) => renderBlock(message, block));
  const working = message.status === "pending" || message.status === "streaming";
  const footer = [];
  if (working) footer.push(h("span.cursor", { "aria-hidden": "true", text: "▍" }));
  if (["cancelled", "interrupted"].includes(message.status)) footer.push(h("span.badge", { text: message.status }));
  return h(
    `article.message.${message.role}`,
    { "data-message-id": message.id, "data-status": message.status, "aria-label": message.role === "user" ? "You" : "Agent" },
    ...blocks,
    footer.length ? h("div.message-foot", {}, ...footer) : null,
  );
}

function renderBlock(message, block) {
  switch (block.type) {
    case "text":
      if (message.role === "user") return h("div.user-text", { text: block.text });
      return markdownDiv(block.text);
    case "reasoning":
      if (!block.text) return null;
      return h("details.reasoning", {}, h("summary", { text: "Reasoning" }), h("div.reasoning-text", { text: block.text }));
    case "toolCall":
      return renderToolCall(block);
    case "error":
      return h("div.run-error", { role: "note" }, h("strong", { text: "Error: " }), block.message);
    case "steer":
      return h("div.steer", { text: block.text });
    case "image":
    case "document":
      return h("div.attachment", { text: `[${block.type}: ${block.name ?? block.path}]` });
    default:
      return null;
  }
}

function markdownDiv(text) {
  const div = h("div.markdown");
  div.innerHTML = renderMarkdown(text); // escaped by renderMarkdown (see markdown.js)
  return div;
}

const FINAL_TOOL_STATUSES = new Set(["success", "error", "denied", "cancelled", "interrupted"]);

/** A tool call: open while it is under way, folded to its summary line once it ended. */
function renderToolCall(block) {
  const brief = briefArguments(block.arguments);
  const args = block.arguments !== null && block.arguments !== undefined ? JSON.stringify(block.arguments, null, 2) : block.argumentsText ?? "";
  const parts = [
    h(
      "summary.tool-head",
      {},
      h("span.tool-name", { text: block.name }),
      h(`span.badge.tool-${block.status}`, { text: block.status }),
      brief ? h("code.tool-brief", { text: brief.text }) : null,
    ),
  ];
  if (args && args !== "{}" && !brief?.whole) parts.push(h("pre.tool-args", { "aria-label": "Arguments", text: args }));
  if (block.resolution) {
    const r = block.resolution;
    const said = r.cancelled ? "closed by a cancel" : r.granted ? `allowed (${r.remember})` : "denied";
    parts.push(h("div.tool-resolution", { text: `Permission: ${said}` }));
  }
  if (block.answer) parts.push(h("div.tool-resolution", { text: `Answer: ${describeAnswer(block.answer)}` }));
  if (block.liveOutput && !block.result) parts.push(h("pre.tool-live", { "aria-label": "Output", text: block.liveOutput }));
  if (block.progressMessage && !block.result) parts.push(h("div.tool-progress", { text: block.progressMessage }));
  if (block.result) {
    parts.push(h(`pre.tool-result${block.result.isError ? ".failed" : ""}`, { "aria-label": "Result", text: block.result.content }));
  }
  const open = !FINAL_TOOL_STATUSES.has(block.status) || block.name === "bash";
  return h("details.tool", { open, "data-tool-call-id": block.toolCallId, "data-status": block.status }, ...parts);
}

/** The one argument that says what a call does (a command, a path), for its summary line. */
function briefArguments(args) {
  if (!args || typeof args !== "object") return null;
  for (const key of ["command", "path", "pattern", "url", "description", "query"]) {
    if (typeof args[key] === "string") {
      const line = args[key].split("\n")[0];
      const text = line.length > 100 ? `${line.slice(0, 99)}…` : line;
      return { text, whole: Object.keys(args).length === 1 && line === args[key] && text === line };
    }
  }
  return null;
}

function describeAnswer(answer) {
  if (answer.cancelled) return "closed by a cancel";
  if (answer.declined) return "declined";
  return (answer.answers ?? []).map((a) => [...(a.selected ?? []), a.text].filter(Boolean).join(", ")).join("; ");
}

/** A permission prompt with its three answers. */
export function renderPermission(pending, onAnswer) {
  const { block } = pending;
  const prompt = block.prompt;
  const buttons = [
    h("button", { type: "button", onclick: () => onAnswer(true, "once"), text: "Allow once" }),
    h("button", { type: "button", onclick: () => onAnswer(true, "session"), disabled: !prompt.rememberable, text: "Allow for session" }),
    h("button.danger", { type: "button", onclick: () => onAnswer(false, "once"), text: "Deny" }),
  ];
  return h(
    "section.prompt",
    { "aria-label": `Permission for ${block.name}`, "data-tool-call-id": block.toolCallId },
    h("h3", { text: `${block.name} asks to ${prompt.permissionType}` }),
    h("p", { text: prompt.description }),
    prompt.commandDisplay ? h("pre.command", { text: prompt.commandDisplay }) : null,
    prompt.paths?.length ? h("ul.paths", {}, ...prompt.paths.map((p) => h("li", { text: p }))) : null,
    prompt.risk ? h("p.risk", { text: prompt.risk }) : null,
    prompt.outsideSandbox ? h("p.risk", { text: "It runs outside the sandbox, with your full rights." }) : null,
    prompt.networkAccess ? h("p.risk", { text: "It gets network access." }) : null,
    h("div.row", {}, ...buttons),
  );
}

/** The model's questions: options to pick, own words, "Answer" and "Decline". */
export function renderQuestion(pending, onAnswer) {
  const { block } = pending;
  const fieldsets = block.questions.map((q, qi) =>
    h(
      "fieldset",
      {},
      h("legend", { text: q.header ? `${q.header}: ${q.question}` : q.question }),
      ...q.options.map((o) =>
        h(
          "label.option",
          {},
          h("input", { type: q.multiSelect ? "checkbox" : "radio", name: `q${qi}`, value: o.label }),
          ` ${o.label}`,
          o.description ? h("small", { text: ` — ${o.description}` }) : null,
        ),
      ),
      h("input", { type: "text", name: `text${qi}`, "aria-label": `Your own answer to question ${qi + 1}`, placeholder: "or in your own words" }),
    ),
  );
  const form = h("form.prompt", { "aria-label": "Question" }, h("h3", { text: "The agent asks" }), ...fieldsets);
  const answers = () =>
    block.questions.map((q, qi) => {
      const selected = [...form.querySelectorAll(`input[name="q${qi}"]:checked`)].map((i) => i.value);
      const text = form.querySelector(`input[name="text${qi}"]`).value.trim();
      return { ...(selected.length ? { selected } : {}), ...(text ? { text } : {}) };
    });
  form.append(
    h(
      "div.row",
      {},
      h("button", { type: "submit", text: "Answer" }),
      h("button.quiet", { type: "button", onclick: () => onAnswer({ declined: true }), text: "Decline" }),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    onAnswer({ answers: answers() });
  });
  return form;
}

export function renderPlan(section, items) {
  section.hidden = items.length === 0;
  const mark = { pending: "☐", in_progress: "◐", completed: "☑" };
  section.querySelector("ol").replaceChildren(
    ...items.map((item) =>
      h(`li.plan-${item.status}`, {}, `${mark[item.status] ?? "•"} `, item.status === "in_progress" && item.activeForm ? item.activeForm : item.content),
    ),
  );
}

export function renderSubagents(section, children) {
  section.hidden = children.length === 0;
  section.querySelector("ul").replaceChildren(
    ...children.map((agent) =>
      h(
        "li",
        {},
        h("a", { href: `#agent=${encodeURIComponent(agent.id)}`, text: agent.title }),
        " ",
        h(`span.badge.status-${agent.status}`, { text: statusWord(agent.status) }),
        agent.subagentType ? h("small", { text: ` (${agent.subagentType})` }) : null,
      ),
    ),
  );
}
