// The wire as the schema has it now (against the real daemon): the methods the schema added,
// loopFinished's messageId, retry notices, snapshot joins, opaque listMessages cursors.

import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";

import {
  AgentdError,
  Client,
  connect,
  isRetryNotice,
  METHOD_NAMES,
  type AgentEvent,
  type Block,
  type Message,
} from "@agentd/client";

import {
  collect,
  assertContiguous,
  config,
  errorReply,
  MockModel,
  readUntil,
  rebuiltText,
  TestDaemon,
  textReply,
} from "./helpers.js";

const textOf = (blocks: Block[]) => blocks.map((b) => (b.type === "text" ? b.text : "")).join("");

describe("the wire of the schema", () => {
  let model: MockModel;
  let daemon: TestDaemon;
  let client: Client;

  // Model calls are retried twice here (quickly), so a 429 is a retry notice.
  beforeEach(async () => {
    model = await MockModel.start();
    daemon = await TestDaemon.start(config(model.url, "", 2));
    client = await connect({ socketPath: daemon.socket });
  });

  afterEach(async () => {
    client?.close();
    await daemon?.stop();
    await model?.close();
  });

  test("the daemon lists exactly the schema's methods, each with a wrapper", async () => {
    const init = await client.initialize({ clientName: "ts-wire-test" });
    const daemonMethods = init.capabilities.methods.filter((m) => m !== "subscribe" && m !== "unsubscribe");
    assert.deepEqual([...daemonMethods].sort(), [...METHOD_NAMES].sort());
  });

  test("loopFinished names the run's answer, and run() ends at it", async () => {
    const agent = await client.createAgent({ title: "loop end" });
    model.push(textReply(["Done ", "here."]));
    let answerId = "";
    const events = await collect(
      client.run(agent.id, "Finish", { onSent: (ids) => (answerId = ids.assistantMessageId) }),
      "the run",
    );
    const last = events[events.length - 1];
    assert.ok(last?.type === "loopFinished", `ends at loopFinished: ${events.map((e) => e.type).join(",")}`);
    assert.equal(last.messageId, answerId);
    assert.equal(last.reason, "completed");
    assert.equal(events.filter((e) => e.type === "loopFinished").length, 1);
  });

  test("a retried model call is a retry notice and the run goes on", async () => {
    const agent = await client.createAgent({ title: "retry" });
    model.push(errorReply(429, "Rate limit reached for requests"));
    model.push(textReply(["After ", "the retry."]));
    let answerId = "";
    const events = await collect(
      client.run(agent.id, "Try twice", { onSent: (ids) => (answerId = ids.assistantMessageId) }),
      "the retried run",
    );
    const notices = events.filter(isRetryNotice);
    assert.ok(notices.length >= 1, `a retry notice: ${JSON.stringify(events.filter((e) => e.type === "error"))}`);
    const notice = notices[0]!;
    assert.equal(notice.retry.attempt, 1);
    assert.equal(notice.retry.max, 2);
    assert.ok(notice.retry.delayMs >= 0);
    assert.equal(notice.retryable, true);
    assert.equal(notice.messageId, answerId);
    const last = events[events.length - 1];
    assert.ok(last?.type === "loopFinished" && last.reason === "completed", "the run went on to its end");
    assert.equal(rebuiltText(events, answerId), "After the retry.");
    // A run's own failure is no retry notice.
    assert.equal(isRetryNotice({ ...notice, retry: undefined }), false);
  });

  test("a stream opened with snapshot joins a run mid-stream without a gap", async () => {
    const agent = await client.createAgent({ title: "snapshot" });
    const parts = Array.from({ length: 30 }, (_, i) => `s${i} `);
    model.push(textReply(parts, 10));
    const watcher = client.events({ agentId: agent.id });
    await watcher.start();
    const joiner = client.events({ agentId: agent.id, snapshot: true });
    try {
      const sent = await client.sendMessage({ agentId: agent.id, content: "Count" });
      let deltas = 0;
      await readUntil(
        watcher,
        (e) => (e.type === "textDelta" && ++deltas === 3) || e.type === "loopFinished",
        [],
        "the first deltas",
      );
      const joined: AgentEvent[] = [];
      await readUntil(
        joiner,
        (e) => e.type === "loopFinished" || (e.type === "snapshot" && e.status === "idle"),
        joined,
        "the run's end after the snapshot",
      );
      const first = joined[0];
      assert.ok(first?.type === "snapshot", `the first event is the snapshot: ${first?.type}`);
      const message: Message | undefined = first.message;
      assert.equal(message?.id, sent.assistantMessageId);
      assert.equal(message?.role, "assistant");
      const before = textOf(message?.blocks ?? []);
      assert.equal(before + rebuiltText(joined.slice(1), sent.assistantMessageId), parts.join(""));
      assertContiguous(joined);
      const last = joined[joined.length - 1];
      if (last?.type === "loopFinished") assert.equal(last.messageId, sent.assistantMessageId);
    } finally {
      await watcher.return();
      await joiner.return();
    }
  });

  test("snapshot needs an agent and does not go with sinceSeq", async () => {
    for (const options of [{ snapshot: true }, { agentId: "agent-x", snapshot: true, sinceSeq: 3 }]) {
      await assert.rejects(client.events(options).next(), (e: unknown) => {
        assert.ok(e instanceof AgentdError);
        assert.equal(e.kind, "invalidParams");
        return true;
      });
    }
  });

  test("listMessages pages with the opaque cursors it gives", async () => {
    const agent = await client.createAgent({ title: "pages" });
    for (const word of ["one", "two"]) {
      model.push(textReply([`Answer ${word}.`]));
      await collect(client.run(agent.id, `Say ${word}`), `the run ${word}`);
    }
    const all = await client.listMessages({ agentId: agent.id, order: "desc" });
    assert.equal(all.messages.length, 4);
    assert.equal(all.nextCursor, undefined);
    for (const order of ["asc", "desc"] as const) {
      const ids: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 10; pages++) {
        const page = await client.listMessages({ agentId: agent.id, order, limit: 1, cursor });
        ids.push(...page.messages.map((m) => m.id));
        if (page.nextCursor === undefined) break;
        assert.equal(typeof page.nextCursor, "string");
        cursor = page.nextCursor;
      }
      const expected = all.messages.map((m) => m.id);
      assert.deepEqual(ids, order === "desc" ? expected : [...expected].reverse());
    }
  });

  test("complete, listProfiles and getPlan answer as the schema says", async () => {
    model.push(textReply(["Bon", "jour"]));
    const done = await client.complete({ prompt: "Translate to French: hello", system: "You translate." });
    assert.equal(done.text, "Bonjour");
    assert.equal(done.provider, "mock");
    assert.equal(done.model, "mock-model");
    const request = model.requests[model.requests.length - 1]?.body;
    assert.match(JSON.stringify(request.messages), /You translate\..*Translate to French: hello/s);
    await assert.rejects(client.complete({}), (e: unknown) => e instanceof AgentdError && e.kind === "invalidParams");

    const { profiles } = await client.listProfiles();
    assert.ok(profiles.length > 0);
    assert.ok(profiles.every((p) => typeof p.name === "string" && Array.isArray(p.tools)));
    assert.ok(profiles.some((p) => p.source === "builtin"));

    const agent = await client.createAgent({ title: "plan" });
    const plan = await client.getPlan({ agentId: agent.id });
    assert.equal(plan.agentId, agent.id);
    assert.deepEqual(plan.items, []);
    await assert.rejects(
      client.answerQuestion({ messageId: "no-such", toolCallId: "none", declined: true }),
      (e: unknown) => e instanceof AgentdError && (e.kind === "messageNotFound" || e.kind === "questionNotPending"),
    );
  });
});
