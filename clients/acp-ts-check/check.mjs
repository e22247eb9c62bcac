// Drives `agentd acp` with the official ACP TypeScript SDK's client, as an editor does:
// initialize, session/new, a prompt whose tool call is allowed, one whose tool call is
// rejected, then session/load on a second connection replaying the history. The daemon
// is the scripted provider's (no network), started by `agentd acp` itself.
//
// Usage: node check.mjs /path/to/agentd        Exit status 0 when every check passed.

import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { ClientApp, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const agentd = process.argv[2];
if (!agentd) {
  console.error("usage: node check.mjs /path/to/agentd");
  process.exit(2);
}
const WAIT_MS = 30_000;

const dir = mkdtempSync(join(tmpdir(), "agentd-acp-ts-"));
const workspace = realpathSync(mkdtempSync(join(tmpdir(), "agentd-acp-ts-ws-")));
writeFileSync(
  join(dir, "script.toml"),
  `
[[turns]]
reasoning = "A command to run."
text = "Running it."
[[turns.tool_calls]]
name = "bash"
arguments = { command = "echo from-ts-sdk" }

[[turns]]
text = "It printed from-ts-sdk."

[[turns]]
[[turns.tool_calls]]
name = "bash"
arguments = { command = "echo again" }

[[turns]]
text = "Not run, as you wish."
`,
);
writeFileSync(
  join(dir, "config.toml"),
  `[defaults]\nprovider = "script"\n\n[[providers]]\nid = "script"\nkind = "scripted"\nscript = "${join(dir, "script.toml")}"\n`,
);
const flags = ["--socket", join(dir, "run", "agentd.sock"), "--data-dir", join(dir, "data"),
  "--config", join(dir, "config.toml")];

let failures = 0;
function check(what, ok, detail) {
  if (ok) {
    console.log(`ok   ${what}`);
  } else {
    failures += 1;
    console.log(`FAIL ${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
}

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Runs `agentd acp`; `op(ctx, editor)` talks to it. `editor.updates` collects every
 * session/update; `editor.answer` picks the option of a permission request. */
async function asEditor(op) {
  const child = spawn(agentd, [...flags, "acp"], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const editor = { updates: [], questions: [], answer: () => "reject", stderr: () => stderr };
  const app = new ClientApp({ name: "acp-ts-check" })
    .onNotification("session/update", ({ params }) => {
      editor.updates.push(params.update);
    })
    .onRequest("session/request_permission", ({ params }) => {
      editor.questions.push(params);
      return { outcome: { outcome: "selected", optionId: editor.answer(params) } };
    });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  try {
    return await app.connectWith(stream, (ctx) => op(ctx, editor));
  } finally {
    child.stdin.end();
    await new Promise((resolve) => {
      if (child.exitCode !== null) resolve();
      else child.on("exit", resolve);
    });
    editor.log = stderr;
  }
}

const text = (updates, kind) =>
  updates.filter((u) => u.sessionUpdate === kind && u.content?.type === "text")
    .map((u) => u.content.text).join("");

let daemonPid;
try {
  const sessionId = await asEditor(async (ctx, editor) => {
    const init = await withTimeout(
      ctx.request("initialize", { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} }),
      "initialize",
    );
    const pid = /started agentd \(pid (\d+)\)/.exec(editor.stderr());
    daemonPid = pid ? Number(pid[1]) : undefined;
    check("agentd acp started the daemon", daemonPid !== undefined, editor.stderr());
    check("initialize: protocol version 1", init.protocolVersion === 1, init);
    check("initialize: agent info names agentd with a version",
      init.agentInfo?.name === "agentd" && /^\d+\.\d+\.\d+/.test(init.agentInfo?.version ?? ""), init.agentInfo);
    const caps = init.agentCapabilities ?? {};
    check("initialize: loadSession, images, embedded context, MCP over HTTP",
      caps.loadSession === true && caps.promptCapabilities?.image === true
        && caps.promptCapabilities?.embeddedContext === true && caps.mcpCapabilities?.http === true, caps);

    const created = await withTimeout(
      ctx.request("session/new", { cwd: workspace, mcpServers: [] }), "session/new");
    check("session/new: a session id and the agent mode", typeof created.sessionId === "string"
      && created.modes?.currentModeId === "agent", created);
    const modelOption = (created.configOptions ?? []).find((o) => o.id === "model");
    check("session/new: the model selector lists the daemon's model",
      modelOption?.currentValue === "script/script", created.configOptions);

    // A tool call allowed once.
    editor.answer = (request) => {
      const ids = request.options.map((o) => o.optionId);
      check("permission: allow once, always (twice) and reject offered",
        JSON.stringify(ids) === JSON.stringify(["allow_once", "allow_session", "allow_always", "reject"]), ids);
      return "allow_once";
    };
    const first = await withTimeout(ctx.request("session/prompt", {
      sessionId: created.sessionId,
      prompt: [{ type: "text", text: "run it" }],
    }), "session/prompt");
    check("prompt 1 ends with end_turn", first.stopReason === "end_turn", first);
    check("prompt 1 streamed the answer", text(editor.updates, "agent_message_chunk")
      === "Running it.It printed from-ts-sdk.", text(editor.updates, "agent_message_chunk"));
    check("prompt 1 streamed the thought",
      text(editor.updates, "agent_thought_chunk") === "A command to run.");
    const call = editor.updates.find((u) => u.sessionUpdate === "tool_call");
    check("the tool call is announced as execute", call?.kind === "execute", call);
    const done = editor.updates.filter((u) => u.sessionUpdate === "tool_call_update"
      && u.toolCallId === call?.toolCallId && u.status === "completed");
    check("the tool call completes with its output",
      done.length === 1 && JSON.stringify(done[0].content ?? []).includes("from-ts-sdk"), done);

    // A tool call rejected.
    editor.updates.length = 0;
    editor.answer = () => "reject";
    const second = await withTimeout(ctx.request("session/prompt", {
      sessionId: created.sessionId,
      prompt: [{ type: "text", text: "again" }],
    }), "session/prompt");
    check("prompt 2 ends with end_turn", second.stopReason === "end_turn", second);
    const failed = editor.updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed");
    check("the rejected call fails", failed.length === 1, editor.updates);
    check("prompt 2 streamed the answer",
      text(editor.updates, "agent_message_chunk") === "Not run, as you wish.");
    return created.sessionId;
  });

  // Another connection loads the session: its history comes back as session/update.
  await asEditor(async (ctx, editor) => {
    await withTimeout(ctx.request("initialize", { protocolVersion: PROTOCOL_VERSION }), "initialize");
    const loaded = await withTimeout(
      ctx.request("session/load", { sessionId, cwd: workspace, mcpServers: [] }), "session/load");
    check("session/load answers with the mode", loaded.modes?.currentModeId === "agent", loaded);
    check("session/load replays the user's words",
      text(editor.updates, "user_message_chunk") === "run itagain", editor.updates);
    check("session/load replays the answers", text(editor.updates, "agent_message_chunk")
      === "Running it.It printed from-ts-sdk.Not run, as you wish.");
    const calls = editor.updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.status);
    check("session/load replays both tool calls", JSON.stringify(calls) === '["completed","failed"]', calls);
    const err = await ctx.request("session/load", { sessionId: "no-such-agent", cwd: workspace, mcpServers: [] })
      .then(() => undefined, (e) => e);
    check("an unknown session is an ACP error with agentd's message",
      err?.code === -32002 && String(err?.message).includes("no-such-agent"), err);
  });
} catch (e) {
  failures += 1;
  console.log(`FAIL ${e?.stack ?? e}`);
} finally {
  if (daemonPid !== undefined) {
    try { process.kill(daemonPid, "SIGTERM"); } catch { /* already gone */ }
    // Wait (at most 10 s) for it to exit before its folder is removed.
    for (let i = 0; i < 200; i += 1) {
      try { process.kill(daemonPid, 0); } catch { break; }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  try { console.log(readFileSync(join(dir, "run", "agentd.log"), "utf8").split("\n").slice(-5).join("\n")); } catch { /* none */ }
}
rmSync(workspace, { recursive: true, force: true });
if (failures === 0) rmSync(dir, { recursive: true, force: true });
console.log(failures === 0 ? "acp-ts-check: all checks passed" : `acp-ts-check: ${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
