// agentd's web page: sign-in, the live agent list, one agent's conversation, and the
// actions a person takes on them. A client like any other: everything it shows comes from
// the daemon's answers and events (docs/protocol.md), never from its own actions, so
// several tabs and other clients see the same thing. The open agent is in the URL
// (#agent=ID), so a reload opens it again; a lost connection resumes from the last seq.

import { Conversation } from "./conversation.js";
import { Connection, RpcError } from "./rpc.js";
import * as view from "./view.js";

const $ = (id) => document.getElementById(id);

const state = {
  /** id → Agent, from listAgents and the all-agents subscription. */
  agents: new Map(),
  /** id → answers finished while the agent was not open. */
  unread: new Map(),
  allSubscription: null,
  /** The open agent: {agentId, conversation, subscription}, or null. */
  open: null,
  /** listProfiles / listModels answers, fetched when the create form first opens. */
  choices: null,
};

const wsUrl = (location.protocol === "https:" ? "wss:" : "ws:") + "//" + location.host + "/";
const connection = new Connection(wsUrl, {
  open: () => void onConnected(),
  event: (subscription, event) => onEvent(subscription, event),
  state: (text) => showConnection(text),
  closed: () => void checkSignedIn(),
});

// ---------------------------------------------------------------------------------------
// Sign-in

async function sessionValid() {
  const answer = await fetch("/session", { credentials: "same-origin", cache: "no-store" });
  return answer.ok;
}

async function boot() {
  bindControls();
  if (await sessionValid()) return startApp();
  showSignIn("");
}

function showSignIn(error) {
  connection.stop();
  $("app").hidden = true;
  $("signout").hidden = true;
  $("signin").hidden = false;
  const line = $("signin-error");
  line.textContent = error;
  line.hidden = !error;
  $("token").focus();
}

async function signIn(event) {
  event.preventDefault();
  const token = $("token").value.trim();
  const answer = await fetch("/login", {
    method: "POST",
    credentials: "same-origin",
    body: new URLSearchParams({ token }),
  }).catch((error) => ({ ok: false, status: 0, error }));
  $("token").value = "";
  if (answer.status === 401) return showSignIn("That token was refused (401): check it and try again.");
  if (!answer.ok) return showSignIn(`Could not sign in: ${answer.error?.message ?? `HTTP ${answer.status}`}`);
  if (await sessionValid()) return startApp();
  showSignIn("The daemon accepted the token but the session did not start (are cookies allowed?).");
}

/** After a connection ended: a session that is no longer valid shows the sign-in again. */
async function checkSignedIn() {
  try {
    if (!(await sessionValid())) showSignIn("Your session ended: sign in again.");
  } catch {
    // The daemon is away: the connection keeps retrying.
  }
}

function startApp() {
  $("signin").hidden = true;
  $("app").hidden = false;
  $("signout").hidden = false;
  connection.start();
}

// ---------------------------------------------------------------------------------------
// Connection and events

async function onConnected() {
  try {
    state.allSubscription = await connection.call("subscribe", {});
    const list = await connection.call("listAgents", { limit: 500 });
    state.agents = new Map(list.agents.map((a) => [a.id, a]));
    renderAgents();
    const id = agentInUrl();
    if (id) await follow(id, { resume: state.open?.agentId === id });
    else showEmpty();
  } catch (error) {
    showError(error);
  }
}

function onEvent(subscription, event) {
  if (subscription === state.allSubscription) onListEvent(event);
  if (state.open && subscription === state.open.subscription) onAgentEvent(event);
}

/** Events of every agent: the list's titles, statuses and unread counts. */
function onListEvent(event) {
  const agent = state.agents.get(event.agentId);
  switch (event.type) {
    case "agentCreated":
    case "agentUpdated":
      state.agents.set(event.agent.id, event.agent);
      break;
    case "agentDeleted":
      state.agents.delete(event.agentId);
      state.unread.delete(event.agentId);
      break;
    case "statusChanged":
      if (agent) agent.status = event.status;
      break;
    case "messageCompleted":
      if (event.status === "done" && state.open?.agentId !== event.agentId) {
        state.unread.set(event.agentId, (state.unread.get(event.agentId) ?? 0) + 1);
      }
      break;
    case "resyncRequired":
      void reloadAgentList();
      return;
    default:
      return;
  }
  renderAgents();
  if (state.open) renderOpen();
}

async function reloadAgentList() {
  try {
    const list = await connection.call("listAgents", { limit: 500 });
    state.agents = new Map(list.agents.map((a) => [a.id, a]));
    renderAgents();
  } catch (error) {
    showError(error);
  }
}

/** Events of the open agent, applied in seq order; a gap or a resync reloads it. */
function onAgentEvent(event) {
  const open = state.open;
  const conversation = open.conversation;
  if (event.type === "snapshot") {
    conversation.applySnapshot(event);
  } else if (event.type === "resyncRequired") {
    return void follow(open.agentId, { resume: false });
  } else if (event.type === "agentDeleted") {
    state.open = null;
    location.hash = "";
    return showEmpty();
  } else {
    if (conversation.lastSeq > 0 && event.seq > conversation.lastSeq + 1) return void follow(open.agentId, { resume: false });
    if (!conversation.apply(event)) return;
    if (event.type === "reverted" && event.removedMessages > 0) return void follow(open.agentId, { resume: false });
  }
  scheduleRender();
}

/**
 * Opens agent `agentId`. Fresh: subscribe with a snapshot (the latest message exactly as
 * of a seq), then read the older history; events that come meanwhile are applied to the
 * snapshot's message, and the history fills in what is older. Resume (after a reconnect):
 * subscribe with `sinceSeq` = the last seq applied; a resyncRequired comes back here fresh.
 */
async function follow(agentId, { resume }) {
  const previous = state.open;
  if (resume && previous?.agentId === agentId && previous.conversation.lastSeq > 0) {
    previous.subscription = await connection.call("subscribe", { agentId, sinceSeq: previous.conversation.lastSeq });
    return;
  }
  if (previous?.subscription && connection.connected) {
    connection.call("unsubscribe", { subscription: previous.subscription }).catch(() => {});
  }
  const conversation = new Conversation(agentId);
  const open = { agentId, conversation, subscription: null };
  state.open = open;
  state.unread.delete(agentId);
  renderAgents();
  renderOpen();
  try {
    open.subscription = await connection.call("subscribe", { agentId, snapshot: true });
    const [history, plan] = await Promise.all([allMessages(agentId), connection.call("getPlan", { agentId })]);
    if (state.open !== open) return;
    conversation.mergeHistory(history);
    if (conversation.plan.length === 0) conversation.plan = plan.items;
    renderOpen();
  } catch (error) {
    if (state.open === open) showError(error);
  }
}

async function allMessages(agentId) {
  const messages = [];
  let cursor;
  do {
    const page = await connection.call("listMessages", { agentId, limit: 500, ...(cursor ? { cursor } : {}) });
    messages.push(...page.messages);
    cursor = page.nextCursor;
  } while (cursor);
  return messages;
}

function agentInUrl() {
  const match = /^#agent=(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : null;
}

// ---------------------------------------------------------------------------------------
// Rendering

let renderQueued = false;

function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    if (state.open) renderOpen();
  });
}

function renderAgents() {
  view.renderAgentList($("agents"), state.agents, { openId: state.open?.agentId, unread: state.unread });
}

function showEmpty() {
  $("chat").hidden = true;
  $("empty").hidden = !$("create").hidden;
}

const messageElements = new Map();

function renderOpen() {
  const { agentId, conversation } = state.open;
  const agent = state.agents.get(agentId);
  $("empty").hidden = true;
  $("chat").hidden = false;
  $("agent-title").textContent = agent?.title ?? agentId;
  const status = conversation.lastSeq > 0 ? conversation.status : agent?.status ?? "idle";
  $("agent-status").textContent = view.statusWord(status);
  $("agent-status").className = `badge status-${status}`;
  $("stop").hidden = !["generating", "waiting_permission", "waiting_question", "paused"].includes(status);
  $("notice").textContent = conversation.notice;
  view.renderPlan($("plan"), conversation.plan);
  view.renderSubagents($("subagents"), [...state.agents.values()].filter((a) => a.parentAgentId === agentId));
  renderMessages(conversation);
  renderPrompts(conversation);
}

function renderMessages(conversation) {
  const box = $("messages");
  const nearBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  if (messageElements.agentId !== conversation.agentId) {
    messageElements.clear();
    messageElements.agentId = conversation.agentId;
  }
  for (const id of conversation.dirty) {
    const message = conversation.message(id);
    if (message) messageElements.set(id, view.renderMessage(message));
  }
  conversation.dirty.clear();
  const wanted = conversation.messages.map((m) => messageElements.get(m.id) ?? view.renderMessage(m));
  const same = wanted.length === box.children.length && wanted.every((el, i) => box.children[i] === el);
  if (!same) box.replaceChildren(...wanted);
  if (nearBottom) box.scrollTop = box.scrollHeight;
}

function renderPrompts(conversation) {
  const box = $("prompts");
  const pending = conversation.pending();
  const key = pending.map((p) => `${p.kind}:${p.block.toolCallId}`).join(",");
  if (box.dataset.key === key) return; // keep what the person is typing or ticking
  box.dataset.key = key;
  box.replaceChildren(
    ...pending.map((p) =>
      p.kind === "permission"
        ? view.renderPermission(p, (granted, remember) => answerPermission(p, granted, remember))
        : view.renderQuestion(p, (answer) => answerQuestion(p, answer)),
    ),
  );
}

function showConnection(text) {
  const words = { connecting: "connecting…", connected: "connected", reconnecting: "connection lost: reconnecting…" };
  $("connection").textContent = words[text] ?? text;
  $("connection").dataset.state = text;
}

function showError(error) {
  const line = $("error");
  line.textContent = error instanceof RpcError ? `${error.message} (${error.kind})` : String(error.message ?? error);
  line.hidden = false;
}

function clearError() {
  $("error").hidden = true;
}

// ---------------------------------------------------------------------------------------
// Actions

async function act(what) {
  clearError();
  try {
    return await what();
  } catch (error) {
    showError(error);
    return undefined;
  }
}

function answerPermission(pending, granted, remember) {
  const params = { messageId: pending.messageId, toolCallId: pending.block.toolCallId, granted, remember };
  params.permissionType = pending.block.prompt.permissionType;
  void act(async () => {
    try {
      await connection.call("handlePermissionResponse", params);
    } catch (error) {
      // Another client answered first: its permissionResolved closes the prompt here too.
      if (!(error instanceof RpcError && error.kind === "permissionNotPending")) throw error;
    }
  });
}

function answerQuestion(pending, answer) {
  const params = { messageId: pending.messageId, toolCallId: pending.block.toolCallId, ...answer };
  void act(async () => {
    try {
      await connection.call("answerQuestion", params);
    } catch (error) {
      if (!(error instanceof RpcError && error.kind === "questionNotPending")) throw error;
    }
  });
}

async function send(event) {
  event.preventDefault();
  const box = $("composer").elements.message;
  const content = box.value;
  if (!content.trim() || !state.open) return;
  const agentId = state.open.agentId;
  const sent = await act(() => connection.call("sendMessage", { agentId, content }));
  if (sent) box.value = "";
}

async function openCreateForm() {
  const form = $("create");
  form.hidden = false;
  $("empty").hidden = true;
  form.elements.title.focus();
  if (state.choices) return;
  const answers = await act(() => Promise.all([connection.call("listProfiles"), connection.call("listModels")]));
  if (!answers || state.choices) return; // failed (shown; the next opening asks again), or filled meanwhile
  const [profiles, models] = answers;
  state.choices = { profiles: profiles.profiles, models: models.models };
  form.elements.profile.append(...profiles.profiles.map((p) => view.h("option", { value: p.name, text: `${p.name}: ${p.description}` })));
  form.elements.model.append(
    ...models.models.map((m) => view.h("option", { value: JSON.stringify([m.provider, m.id]), text: `${m.provider} / ${m.id}` })),
  );
}

async function create(event) {
  event.preventDefault();
  const f = $("create").elements;
  const params = { mode: f.mode.value };
  if (f.title.value.trim()) params.title = f.title.value.trim();
  if (f.profile.value) params.profile = f.profile.value;
  if (f.workspace.value.trim()) params.workspace = f.workspace.value.trim();
  if (f.model.value) [params.provider, params.model] = JSON.parse(f.model.value);
  const agent = await act(() => connection.call("createAgent", params));
  if (!agent) return;
  $("create").reset();
  $("create").hidden = true;
  location.hash = `agent=${encodeURIComponent(agent.id)}`;
}

function bindControls() {
  $("signin-form").addEventListener("submit", signIn);
  $("composer").addEventListener("submit", send);
  $("composer").elements.message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => act(() => connection.call("cancelLoop", { agentId: state.open.agentId })));
  $("new-agent").addEventListener("click", () => void openCreateForm());
  $("create").addEventListener("submit", create);
  $("create-cancel").addEventListener("click", () => {
    $("create").hidden = true;
    if (!state.open) showEmpty();
  });
  window.addEventListener("hashchange", () => {
    $("create").hidden = true;
    const id = agentInUrl();
    if (id && connection.connected) void follow(id, { resume: false });
    else if (!id) {
      state.open = null;
      renderAgents();
      showEmpty();
    }
  });
}

void boot();
