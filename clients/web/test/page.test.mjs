// The web page in real headless Chromium against the real daemon binary: sign-in, an
// agent made and answered, permission prompts answered on the page and from another
// client, a reload and a daemon restart in the middle of a run, a refused token. Each
// scenario leaves a screenshot in target/web-screenshots/ (CI keeps that folder).

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, beforeEach, afterEach, test } from "node:test";

import { chromium } from "playwright-core";

import { MockModel, SCREENSHOTS, SocketClient, TestDaemon, WAIT_MS, gate, textReply, toolCallReply } from "./kit.mjs";

const CHROMIUM = process.env.CHROMIUM_BIN;
if (!CHROMIUM) throw new Error("CHROMIUM_BIN is not set: run clients/web/test.sh");

let model;
let daemon;
let browser;
let socket;
let context;
let page;

before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  model = await MockModel.start();
  daemon = await TestDaemon.start(model.url);
  socket = await SocketClient.connect(daemon.socket);
  await socket.call("subscribe", {});
  const root = process.getuid?.() === 0;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: root ? ["--no-sandbox"] : [] });
});

after(async () => {
  await browser?.close();
  socket?.close();
  await daemon?.stop();
  await model?.close();
});

beforeEach(async () => {
  context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on("pageerror", (error) => console.error("page error:", error));
});

afterEach(async (t) => {
  if (t.name && page) await page.screenshot({ path: path.join(SCREENSHOTS, `${slug(t.name)}.png`), fullPage: true }).catch(() => {});
  await context?.close();
});

function slug(name) {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 60);
}

/** Signs the page in the way a link from the daemon's log does (`/?token=`). */
async function signedIn() {
  await page.goto(`${daemon.url}/?token=${daemon.token}`);
  await page.getByRole("button", { name: "New agent" }).waitFor();
}

/** An agent made by the other client (the page must learn of it from the events). */
async function agentFromSocket(title, mode = "agent") {
  const agent = await socket.call("createAgent", { title, mode });
  const link = page.getByRole("link", { name: new RegExp(title) });
  await link.click();
  await page.getByRole("heading", { name: title }).waitFor();
  return agent;
}

async function send(text) {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("button", { name: "Send" }).click();
}

/** Waits until the agent's run ended as `reason` (seen by the other client). */
function finished(agentId, reason) {
  return socket.waitEvent((e) => e.agentId === agentId && e.type === "loopFinished" && e.reason === reason, `loopFinished ${reason}`);
}

test("1 sign in with the token in the form", async () => {
  await page.goto(daemon.url);
  await page.getByRole("textbox", { name: "Token" }).fill(daemon.token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "New agent" }).waitFor();
  await page.getByRole("status").filter({ hasText: "connected" }).waitFor();
  assert.equal(await page.getByRole("textbox", { name: "Token" }).count(), 0);
  const cookies = await context.cookies();
  assert.ok(cookies.some((c) => c.name === "agentd_session" && c.httpOnly));
});

test("2 create an agent, send, see the answer stream in as markdown", async () => {
  await signedIn();
  await page.getByRole("button", { name: "New agent" }).click();
  const form = page.getByRole("form", { name: "New agent" });
  await form.getByLabel("Title", { exact: true }).fill("Greeter");
  await form.getByLabel("Mode", { exact: true }).selectOption("chat");
  await form.getByLabel("Model", { exact: true }).selectOption({ label: "mock / mock-model" });
  await page.getByRole("button", { name: "Create" }).click();
  await page.getByRole("heading", { name: "Greeter" }).waitFor();
  await page.getByRole("link", { name: /Greeter/ }).waitFor();

  model.push(textReply(["Hello ", "from **the** ", "mock.\n\n- one\n- `two`\n\n<b>not bold</b>"]));
  await send("Say hello");
  const answer = page.locator("article.assistant[data-status=done]");
  await answer.waitFor();
  assert.equal(await answer.locator("p").first().textContent(), "Hello from the mock.");
  assert.equal(await answer.locator("strong").textContent(), "the");
  assert.deepEqual(await answer.locator("li").allTextContents(), ["one", "two"]);
  assert.equal(await answer.locator("b").count(), 0, "model HTML is shown as text, never as markup");
  assert.match(await answer.textContent(), /<b>not bold<\/b>/);
  await page.locator("article.user").filter({ hasText: "Say hello" }).waitFor();
  await page.getByRole("link", { name: /Greeter.*idle/ }).waitFor();
});

test("3 a tool prompt answered on the page with Allow once", async () => {
  await signedIn();
  const agent = await agentFromSocket("Runner");
  model.push(toolCallReply("call_a", "bash", { command: "echo hi-from-bash" }));
  model.push(textReply(["It printed hi."]));
  await send("Run echo");
  const prompt = page.getByRole("region", { name: "Permission for bash" });
  await prompt.getByText("echo hi-from-bash").first().waitFor();
  await page.screenshot({ path: path.join(SCREENSHOTS, "3-prompt-shown.png"), fullPage: true });
  await page.getByRole("button", { name: "Allow once" }).click();
  await page.locator("article.assistant[data-status=done]").getByText("It printed hi.").waitFor();
  await finished(agent.id, "completed");
  assert.match(await page.locator("pre.tool-result").textContent(), /hi-from-bash/);
  await page.getByRole("button", { name: "Allow once" }).waitFor({ state: "detached" });
  await page.getByText("Permission: allowed (once)").waitFor();
});

test("4 a tool prompt answered by another client closes on the page", async () => {
  await signedIn();
  const agent = await agentFromSocket("Shared");
  model.push(toolCallReply("call_b", "bash", { command: "echo answered-elsewhere" }));
  model.push(textReply(["Done elsewhere."]));
  await send("Run it");
  await page.getByRole("button", { name: "Allow once" }).waitFor();
  // The prompt is part of the agent's state, not of this page's memory: a reload shows it.
  await page.reload();
  await page.getByRole("button", { name: "Allow once" }).waitFor();
  await page.getByRole("button", { name: "Stop" }).waitFor();
  const session = await socket.call("getSession", { agentId: agent.id });
  assert.equal(session.pendingPermissions.length, 1);
  const [prompt] = session.pendingPermissions;
  await socket.call("handlePermissionResponse", { messageId: prompt.messageId, toolCallId: prompt.toolCallId, granted: true });
  await page.getByText("Done elsewhere.").waitFor();
  await page.getByRole("button", { name: "Allow once" }).waitFor({ state: "detached" });
  await page.getByRole("button", { name: "Stop" }).waitFor({ state: "hidden" });
  assert.match(await page.locator("pre.tool-result").textContent(), /answered-elsewhere/);
});

test("5 a reload mid-run picks the stream up where it was", async () => {
  await signedIn();
  const agent = await agentFromSocket("Reloaded", "chat");
  const held = gate();
  model.push(textReply(["First part, ", "second part."], { parts: 1, gate: held }));
  await send("Take your time");
  await page.getByText("First part,").waitFor();
  await page.reload();
  await page.getByRole("heading", { name: "Reloaded" }).waitFor();
  await page.getByText("First part,").waitFor();
  held.open();
  const answer = page.locator("article.assistant[data-status=done]");
  await answer.waitFor();
  assert.equal(await answer.locator(".markdown").textContent(), "First part, second part.");
  await finished(agent.id, "completed");
});

test("5b a daemon restart mid-run: the page reconnects and shows how the run ended", async () => {
  await signedIn();
  await agentFromSocket("Restarted", "chat");
  const held = gate();
  model.push(textReply(["Before the restart ", "(never sent)"], { parts: 1, gate: held }));
  await send("Keep going");
  await page.getByText("Before the restart").waitFor();
  socket.close();
  await daemon.restart();
  socket = await SocketClient.connect(daemon.socket);
  await socket.call("subscribe", {});
  held.open();
  await page.locator("article.assistant[data-status=interrupted]").getByText("Before the restart").waitFor();
  await page.getByRole("status").filter({ hasText: /^connected$/ }).waitFor();
  model.push(textReply(["After the restart."]));
  await send("Again");
  await page.locator("article.assistant[data-status=done]").getByText("After the restart.").waitFor();
});

test("6 a wrong token is refused", async () => {
  const answer = await fetch(`${daemon.url}/login`, { method: "POST", body: new URLSearchParams({ token: "not-the-token" }), redirect: "manual" });
  assert.equal(answer.status, 401);
  await page.goto(daemon.url);
  await page.getByRole("textbox", { name: "Token" }).fill("not-the-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "refused" }).waitFor();
  assert.equal(await page.getByRole("button", { name: "New agent" }).isVisible(), false);
  assert.deepEqual(await context.cookies(), []);
});

test("7 the plan, and a question answered on the page", async () => {
  await signedIn();
  const agent = await agentFromSocket("Planner");
  const todos = [
    { content: "Ask which colour", status: "in_progress", activeForm: "Asking which colour" },
    { content: "Paint the wall", status: "pending" },
  ];
  model.push(toolCallReply("call_p", "todo_write", { todos }));
  const question = { question: "Which colour?", header: "Colour", options: [{ label: "Red" }, { label: "Blue", description: "calm" }] };
  model.push(toolCallReply("call_q", "ask_user_question", { questions: [question] }));
  model.push(textReply(["Blue it is."]));
  await send("Paint my wall");
  const plan = page.getByRole("region", { name: "Plan" });
  await plan.getByText("Asking which colour").waitFor();
  await plan.getByText("Paint the wall").waitFor();
  const form = page.getByRole("form", { name: "Question" });
  await form.getByText("Colour: Which colour?").waitFor();
  await page.screenshot({ path: path.join(SCREENSHOTS, "7-question-shown.png"), fullPage: true });
  await form.getByRole("radio", { name: /Blue/ }).check();
  await form.getByRole("button", { name: "Answer" }).click();
  await page.getByText("Blue it is.").waitFor();
  const resolved = await socket.waitEvent((e) => e.agentId === agent.id && e.type === "questionResolved", "questionResolved");
  assert.deepEqual(resolved.answers, [{ selected: ["Blue"] }]);
  await form.waitFor({ state: "detached" });
  await finished(agent.id, "completed");
});

test("8 a subagent shows under its parent, and opens", async () => {
  await signedIn();
  const agent = await agentFromSocket("Delegator");
  model.push(toolCallReply("call_t", "task", { description: "Look around", prompt: "Say what you see", subagentType: "explore" }));
  model.push(textReply(["I see a wall."]));
  model.push(textReply(["The helper saw a wall."]));
  await send("Delegate");
  await page.getByText("The helper saw a wall.").waitFor();
  await finished(agent.id, "completed");
  const child = [...(await socket.call("listAgents", {})).agents].find((a) => a.parentAgentId === agent.id);
  assert.ok(child, "the subagent is listed");
  // The child answered while the parent was open: one unread answer, until it is opened.
  await page.getByRole("link", { name: new RegExp(`${child.title}.*1 unread`) }).waitFor();
  const panel = page.getByRole("region", { name: "Subagents" });
  await panel.getByRole("link", { name: child.title }).click();
  await page.getByRole("heading", { name: child.title }).waitFor();
  await page.getByText("I see a wall.").waitFor();
  assert.equal(await page.locator(`li.depth-1[data-agent-id="${child.id}"]`).count(), 1);
  assert.equal(await page.getByText("1 unread").count(), 0);
});

test("9 two tabs follow the same run; Stop in one cancels it for both", async () => {
  await signedIn();
  const agent = await agentFromSocket("Twins", "chat");
  const other = await context.newPage();
  other.setDefaultTimeout(WAIT_MS);
  await other.goto(`${daemon.url}/#agent=${encodeURIComponent(agent.id)}`);
  await other.getByRole("heading", { name: "Twins" }).waitFor();
  const held = gate();
  model.push(textReply(["Streaming to both ", "(never sent)"], { parts: 1, gate: held }));
  await send("Talk to both tabs");
  await other.locator("article.user").getByText("Talk to both tabs").waitFor();
  await other.getByText("Streaming to both").waitFor();
  await other.getByRole("button", { name: "Stop" }).click();
  await page.locator("article.assistant[data-status=cancelled]").getByText("Streaming to both").waitFor();
  await other.locator("article.assistant[data-status=cancelled]").waitFor();
  await page.getByRole("button", { name: "Stop" }).waitFor({ state: "hidden" });
  held.open();
  await finished(agent.id, "cancelled");
  await other.screenshot({ path: path.join(SCREENSHOTS, "9-the-other-tab.png"), fullPage: true });
});

test("10 Deny gives the call a denied result and the run goes on", async () => {
  await signedIn();
  const agent = await agentFromSocket("Refuser");
  model.push(toolCallReply("call_d", "bash", { command: "rm -rf build" }));
  model.push(textReply(["Understood, I left it."]));
  await send("Clean up");
  await page.getByRole("button", { name: "Deny" }).click();
  await page.getByText("Understood, I left it.").waitFor();
  await finished(agent.id, "completed");
  assert.equal(await page.locator('.tool[data-status="denied"]').count(), 1);
  assert.match(await page.locator("pre.tool-result").textContent(), /denied by the user/);
});

test("11 a running command's output shows live, then its result", async () => {
  await signedIn();
  const agent = await agentFromSocket("Watcher");
  const release = path.join(agent.workspace, "release");
  const command = `echo first-line; while [ ! -e ${release} ]; do sleep 0.05; done; echo last-line`;
  model.push(toolCallReply("call_l", "bash", { command }));
  model.push(textReply(["Watched it."]));
  await send("Run something slow");
  await page.getByRole("button", { name: "Allow once" }).click();
  const live = page.locator("pre.tool-live");
  await live.getByText("first-line").waitFor();
  assert.equal(await page.locator("pre.tool-result").count(), 0, "no result while it runs");
  await page.screenshot({ path: path.join(SCREENSHOTS, "11-live-output.png"), fullPage: true });
  fs.writeFileSync(release, "");
  await page.getByText("Watched it.").waitFor();
  await finished(agent.id, "completed");
  assert.match(await page.locator("pre.tool-result").textContent(), /first-line\nlast-line/);
  assert.equal(await live.count(), 0, "the result replaces the live output");
});

test("12 sign out ends the session", async () => {
  await signedIn();
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("textbox", { name: "Token" }).waitFor();
  const session = await page.evaluate(async () => (await fetch("/session")).status);
  assert.equal(session, 401);
});
