// The client against the real daemon binary and the scripted model.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as path from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";

import {
  AgentdError,
  Client,
  ConnectionError,
  connect,
  type AgentEvent,
  type PendingPermission,
  type PendingQuestion,
} from "@agentd/client";

import {
  collect,
  assertContiguous,
  config,
  MockModel,
  readUntil,
  rebuiltText,
  TestDaemon,
  REPO_ROOT,
  textReply,
  toolCallReply,
  within,
} from "./helpers.js";

function lastOf(events: AgentEvent[]): AgentEvent {
  const last = events[events.length - 1];
  assert.ok(last !== undefined, "no events");
  return last;
}

// Each test gets its own model server and daemon (in a temp dir of its own).
describe("against agentd", () => {
  let model: MockModel;
  let daemon: TestDaemon;
  let client: Client;

  beforeEach(async () => {
    model = await MockModel.start();
    daemon = await TestDaemon.start(config(model.url));
    client = await connect({ socketPath: daemon.socket });
  });

  afterEach(async () => {
    client?.close();
    await daemon?.stop();
    await model?.close();
  });

  test("a text run yields the answer's events up to its loopFinished", async () => {
    const agent = await client.createAgent({ title: "text run" });
    model.push(textReply(["Hel", "lo ", "from ", "the ", "mock"]));
    let answerId = "";
    const events = await collect(
      client.run(agent.id, "Say hello", { onSent: (ids) => (answerId = ids.assistantMessageId) }),
      "the text run",
    );
    assert.equal(events[0]?.type, "messageStarted");
    const last = lastOf(events);
    assert.equal(last.type, "loopFinished");
    assert.equal(last.type === "loopFinished" && last.reason, "completed");
    assert.equal(rebuiltText(events, answerId), "Hello from the mock");
    assertContiguous(events);
    const stored = await client.listMessages({ agentId: agent.id, order: "desc", limit: 1 });
    const message = stored.messages[0];
    assert.equal(message?.id, answerId);
    assert.equal(message?.status, "done");
    const text = message?.blocks.map((b) => (b.type === "text" ? b.text : "")).join("");
    assert.equal(text, "Hello from the mock");
    const found = await client.searchMessages({ query: "FROM the", agentId: agent.id });
    assert.deepEqual(
      found.hits.map((h) => [h.messageId, h.snippet]),
      [[answerId, "Hello from the mock"]],
    );
    // The mock reports 11 tokens in and 5 out; the test config prices no model.
    const usage = await client.getUsage({ agentId: agent.id });
    assert.deepEqual(
      [usage.answers, usage.inputTokens, usage.outputTokens, usage.costUsd, usage.unpriced],
      [1, 11, 5, undefined, ["mock/mock-model"]],
    );
    const request = model.requests[model.requests.length - 1]?.body;
    assert.equal(request.messages[request.messages.length - 1].content, "Say hello");
  });

  test("a run with an outputSchema gets the answer parsed and the vendor form", async () => {
    const agent = await client.createAgent({ title: "schema" });
    model.push(textReply(['{"n": ', "3}"]));
    const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
    const events = await collect(
      client.run(agent.id, "count", { turn: { outputSchema: schema, reasoningEffort: "low" } }),
      "the schema run",
    );
    const done = events.filter((e) => e.type === "messageCompleted");
    assert.deepEqual(
      done.map((e) => (e.type === "messageCompleted" ? [e.status, e.structuredOutput] : [])),
      [["done", { n: 3 }]],
    );
    const stored = await client.listMessages({ agentId: agent.id, order: "desc", limit: 1 });
    assert.deepEqual(stored.messages[0]?.structuredOutput, { n: 3 });
    const request = model.requests[model.requests.length - 1]?.body;
    assert.equal(request.response_format.type, "json_schema");
    assert.deepEqual(request.response_format.json_schema.schema, schema);
  });

  test("a permission prompt is answered through onPermission and the run goes on", async () => {
    const agent = await client.createAgent({ title: "permission run", mode: "agent" });
    model.push(toolCallReply([{ id: "call_ts_1", name: "bash", arguments: { command: "echo tsclient-ok" } }]));
    model.push(textReply(["The command ", "printed it."]));
    const prompts: PendingPermission[] = [];
    let answerId = "";
    const events = await collect(
      client.run(agent.id, "Run the echo", {
        onSent: (ids) => (answerId = ids.assistantMessageId),
        onPermission: (prompt) => {
          prompts.push(prompt);
          return { granted: true };
        },
      }),
      "the permission run",
    );
    assert.equal(prompts.length, 1);
    assert.equal(prompts[0]?.toolName, "bash");
    assert.equal(prompts[0]?.permissionType, "execute");
    assert.deepEqual(prompts[0]?.arguments, { command: "echo tsclient-ok" });
    const types = events.map((e) => e.type);
    const waiting = events.findIndex((e) => e.type === "loopFinished" && e.reason === "waitingPermission");
    assert.ok(waiting > 0, `a waitingPermission stop was yielded: ${types.join(",")}`);
    const resolved = events.find((e) => e.type === "permissionResolved");
    assert.ok(resolved?.type === "permissionResolved" && resolved.granted);
    const result = events.find((e) => e.type === "toolResult");
    assert.ok(result?.type === "toolResult", `a tool result: ${types.join(",")}`);
    assert.equal(result.status, "success");
    assert.match(result.content, /tsclient-ok/);
    const last = lastOf(events);
    assert.ok(last.type === "loopFinished" && last.reason === "completed", `ends completed: ${types.join(",")}`);
    assert.equal(rebuiltText(events, answerId), "The command printed it.");
    assertContiguous(events);
  });

  test("a turn's diff, then revertTo undoes it and every client hears reverted", async () => {
    const agent = await client.createAgent({ title: "undo", mode: "agent" });
    model.push(toolCallReply([{ id: "call_ts_w", name: "write_file", arguments: { path: "notes.txt", content: "hi\n" } }]));
    model.push(textReply(["Written."]));
    let ids = { userMessageId: "", assistantMessageId: "" };
    await collect(
      client.run(agent.id, "Write the notes", {
        onSent: (sent) => (ids = sent),
        onPermission: () => ({ granted: true }),
      }),
      "the write run",
    );
    const diff = await client.getTurnDiff({ agentId: agent.id, messageId: ids.assistantMessageId });
    assert.deepEqual(
      diff.files.map((f) => [f.path, f.status]),
      [["notes.txt", "added"]],
    );
    assert.match(diff.files[0]?.diff ?? "", /\+\+\+ b\/notes.txt\n@@ -0,0 \+1 @@\n\+hi\n/);
    const watcher = await connect({ socketPath: daemon.socket });
    try {
      const stream = watcher.events({ agentId: agent.id });
      await stream.start();
      const result = await client.revertTo({ agentId: agent.id, messageId: ids.userMessageId });
      assert.deepEqual(result, { restored: ["notes.txt"], conflicts: [], removedMessages: 2 });
      const events: AgentEvent[] = [];
      await readUntil(stream, (e) => e.type === "reverted", events, "the reverted event");
      const reverted = lastOf(events);
      assert.ok(reverted.type === "reverted" && reverted.removedMessages === 2);
    } finally {
      watcher.close();
    }
    const listed = await client.listMessages({ agentId: agent.id });
    assert.equal(listed.messages.length, 0);
  });

  test("a denied prompt gives the call a denied result", async () => {
    const agent = await client.createAgent({ title: "denied run", mode: "agent" });
    model.push(toolCallReply([{ id: "call_ts_2", name: "bash", arguments: { command: "echo never" } }]));
    model.push(textReply(["Not allowed, then."]));
    const events = await collect(client.run(agent.id, "Try it", { onPermission: () => false }), "the denied run");
    const result = events.find((e) => e.type === "toolResult");
    assert.ok(result?.type === "toolResult");
    assert.equal(result.status, "denied");
    const last = lastOf(events);
    assert.ok(last.type === "loopFinished" && last.reason === "completed");
  });

  test("without onPermission the run ends at the prompt, which stays pending", async () => {
    const agent = await client.createAgent({ title: "unanswered", mode: "agent" });
    model.push(toolCallReply([{ id: "call_ts_3", name: "bash", arguments: { command: "echo later" } }]));
    const events = await collect(client.run(agent.id, "Ask me"), "the run up to its prompt");
    const last = lastOf(events);
    assert.ok(last.type === "loopFinished" && last.reason === "waitingPermission");
    const session = await client.getSession({ agentId: agent.id });
    assert.equal(session.status, "waiting_permission");
    assert.equal(session.pendingPermissions[0]?.toolName, "bash");
    await client.cancelLoop({ agentId: agent.id });
  });

  test("a message queued behind a prompt is listed, cancelled; compactContext says when there is nothing to do", async () => {
    const agent = await client.createAgent({ title: "queue", mode: "agent" });
    model.push(toolCallReply([{ id: "call_ts_q", name: "bash", arguments: { command: "echo later" } }]));
    const events = await collect(client.run(agent.id, "Ask me"), "the run up to its prompt");
    assert.ok(lastOf(events).type === "loopFinished");
    const queued = await client.sendMessage({ agentId: agent.id, content: "then this", whenBusy: "queue" });
    assert.equal(queued.delivery, "queued");
    const session = await client.getSession({ agentId: agent.id });
    assert.deepEqual(
      session.queue.map((q) => [q.userMessageId, q.whenBusy]),
      [[queued.userMessageId, "queue"]],
    );
    const dropped = await client.cancelQueuedMessage({ agentId: agent.id });
    assert.equal(dropped.cancelled, 1);
    await assert.rejects(client.compactContext({ agentId: agent.id }), (e: unknown) => {
      assert.ok(e instanceof AgentdError);
      assert.equal(e.kind, "invalidState");
      return true;
    });
    await client.cancelLoop({ agentId: agent.id });
  });

  test("a question of the model is answered through onQuestion", async () => {
    const agent = await client.createAgent({ title: "question run", mode: "agent" });
    const questions = [{ question: "Which colour?", options: [{ label: "Red" }, { label: "Blue" }] }];
    model.push(toolCallReply([{ id: "call_ts_4", name: "ask_user_question", arguments: { questions } }]));
    model.push(textReply(["Blue it is."]));
    const asked: PendingQuestion[] = [];
    const events = await collect(
      client.run(agent.id, "Pick for me", {
        onQuestion: (request) => {
          asked.push(request);
          return { answers: [{ selected: ["Blue"] }] };
        },
      }),
      "the question run",
    );
    assert.equal(asked.length, 1);
    assert.equal(asked[0]?.questions[0]?.question, "Which colour?");
    const resolved = events.find((e) => e.type === "questionResolved");
    assert.ok(resolved?.type === "questionResolved");
    assert.deepEqual(resolved.answers, [{ selected: ["Blue"] }]);
    const last = lastOf(events);
    assert.ok(last.type === "loopFinished" && last.reason === "completed");
    // The model got the answer as the call's result.
    const followUp = model.requests[model.requests.length - 1]?.body;
    const toolMessage = followUp.messages.find((m: { role: string }) => m.role === "tool");
    assert.match(JSON.stringify(toolMessage), /Blue/);
  });

  test("errors are AgentdError with the daemon's code, kind, message and data", async () => {
    await assert.rejects(client.getAgent({ agentId: "no-such-agent" }), (e: unknown) => {
      assert.ok(e instanceof AgentdError);
      assert.equal(e.code, -32001);
      assert.equal(e.kind, "agentNotFound");
      assert.deepEqual(e.data, { kind: "agentNotFound" });
      assert.match(e.message, /no-such-agent/);
      assert.equal(e.method, "getAgent");
      return true;
    });
    await assert.rejects(client.call("noSuchMethod", {}), (e: unknown) => {
      assert.ok(e instanceof AgentdError);
      assert.equal(e.kind, "methodNotFound");
      assert.equal(e.code, -32601);
      return true;
    });
    const agent = await client.createAgent({ title: "errors" });
    await assert.rejects(client.call("sendMessage", { agentId: agent.id }), (e: unknown) => {
      assert.ok(e instanceof AgentdError);
      assert.equal(e.kind, "invalidParams");
      return true;
    });
    // The connection is still usable after errors.
    assert.equal((await client.getAgent({ agentId: agent.id })).id, agent.id);
  });

  test("every method of the daemon has a method on the client", async () => {
    const init = await client.initialize({ clientName: "ts-test" });
    assert.equal(init.protocolVersion, 1);
    const missing = init.capabilities.methods.filter(
      (m) => m !== "subscribe" && m !== "unsubscribe" && typeof (client as unknown as Record<string, unknown>)[m] !== "function",
    );
    assert.deepEqual(missing, []);
  });

  test("an event stream resumes after its connection breaks mid-run, without gaps or duplicates", async () => {
    const agent = await client.createAgent({ title: "broken connection" });
    const parts = Array.from({ length: 40 }, (_, i) => `w${i} `);
    model.push(textReply(parts, 5));
    const observer = client.events({ agentId: agent.id });
    await observer.start();
    const other = await connect({ socketPath: daemon.socket });
    // Hold the streams' reconnection until events were sent meanwhile, so they must be
    // replayed (while the rest of the run is still streaming live).
    let openGate: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const realConnection = other.connection.bind(other);
    const one = other.events({ agentId: agent.id });
    const all = other.events();
    await one.start();
    await all.start();
    other.connection = () => gate.then(realConnection);
    try {
      const sent = await client.sendMessage({ agentId: agent.id, content: "Count slowly" });
      const fromOne: AgentEvent[] = [];
      const fromAll: AgentEvent[] = [];
      const observed: AgentEvent[] = [];
      await readUntil(one, (e) => e.type === "textDelta", fromOne, "the first delta");
      (await realConnection()).close();
      let deltas = 0;
      // (Deltas may be joined any way: the end of the run will do too.)
      await readUntil(
        observer,
        (e) => (e.type === "textDelta" && ++deltas === 5) || e.type === "loopFinished",
        observed,
        "events sent while disconnected",
      );
      openGate();
      const ends = (e: AgentEvent) => e.type === "loopFinished";
      await readUntil(one, ends, fromOne, "the end of the run (one agent)");
      await readUntil(all, (e) => e.agentId === agent.id && ends(e), fromAll, "the end of the run (all agents)");
      for (const events of [fromOne, fromAll.filter((e) => e.agentId === agent.id)]) {
        assertContiguous(events);
        assert.equal(rebuiltText(events, sent.assistantMessageId), parts.join(""));
      }
    } finally {
      openGate();
      other.close();
      await observer.return();
    }
  });

  test("run ends after the daemon is killed mid-run and a new one starts", async () => {
    // kill -9 mid-run, then a new daemon on the same data dir: the run was interrupted and
    // its events are gone (resyncRequired); run asks where the run stands and ends.
    const agent = await client.createAgent({ title: "killed" });
    model.push(textReply(["one ", "two ", "three"], 2_000));
    const events: AgentEvent[] = [];
    let killed = false;
    await within(
      (async () => {
        for await (const e of client.run(agent.id, "count")) {
          events.push(e);
          if (!killed && e.type === "textDelta") {
            killed = true;
            await daemon.kill();
            await daemon.restart();
          }
        }
      })(),
      "run to end after the daemon was killed",
    );
    assert.ok(killed, "no text came before the kill");
    assert.ok(["resyncRequired", "loopFinished"].includes(lastOf(events).type), lastOf(events).type);
    const session = await client.getSession({ agentId: agent.id });
    assert.equal(session.status, "idle");
    assert.equal(session.runMessageId, undefined);
  });

  test("an event stream resumes after a daemon restart with the same data dir", async () => {
    const agent = await client.createAgent({ title: "restart" });
    const watcher = await connect({ socketPath: daemon.socket });
    const stream = watcher.events({ agentId: agent.id });
    await stream.start();
    const seen: AgentEvent[] = [];
    try {
      model.push(textReply(["Before ", "the restart."]));
      const first = await client.sendMessage({ agentId: agent.id, content: "One" });
      await readUntil(stream, (e) => e.type === "loopFinished", seen, "the first run");
      await daemon.terminate();
      await daemon.restart();
      model.push(textReply(["After ", "the restart."]));
      // The old connection is gone; the next call connects again.
      const second = await client.sendMessage({ agentId: agent.id, content: "Two" });
      await readUntil(stream, (e) => e.type === "loopFinished", seen, "the run after the restart");
      assertContiguous(seen);
      assert.equal(new Set(seen.map((e) => e.seq)).size, seen.length, "no duplicate seqs");
      assert.equal(rebuiltText(seen, first.assistantMessageId), "Before the restart.");
      assert.equal(rebuiltText(seen, second.assistantMessageId), "After the restart.");
      const session = await client.getSession({ agentId: agent.id });
      assert.equal(lastOf(seen).seq, session.lastSeq);
    } finally {
      watcher.close();
    }
  });

  test("the example prints the streamed answer", async () => {
    model.push(textReply(["An ", "example ", "answer."]));
    const script = path.join(REPO_ROOT, "clients", "typescript", "examples", "chat.mjs");
    const { stdout, stderr } = await within(
      new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
        execFile(
          process.execPath,
          [script, "--socket", daemon.socket, "--mode", "chat", "Hello", "example"],
          { timeout: 15_000 },
          (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve({ stdout, stderr })),
        );
      }),
      "the example",
    );
    assert.equal(stdout, "An example answer.\n");
    assert.match(stderr, /^agent /);
  });

  test("close() ends event streams and fails later calls", async () => {
    const agent = await client.createAgent({ title: "close" });
    const closing = await connect({ socketPath: daemon.socket });
    const stream = closing.events({ agentId: agent.id });
    await stream.start();
    const drained = (async () => {
      const got: AgentEvent[] = [];
      for await (const e of stream) got.push(e);
      return got;
    })();
    const inFlight = closing.listAgents();
    closing.close();
    await within(drained, "the stream to end after close()");
    await inFlight.catch(() => undefined);
    await assert.rejects(closing.listAgents(), (e: unknown) => {
      assert.ok(e instanceof ConnectionError);
      assert.equal(e.reason, "clientClosed");
      return true;
    });
    // The daemon is fine, and other clients too.
    assert.equal((await client.getAgent({ agentId: agent.id })).id, agent.id);
  });
});
