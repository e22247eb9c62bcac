// The client over the daemon's WebSocket listener (ws://, a token), against the real
// daemon binary: runs, resume after a broken connection and after a restart, a refused
// token; and where the URL and token come from.

import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";

import {
  chooseTarget,
  Client,
  ConnectionError,
  connect,
  type AgentEvent,
  type PendingPermission,
  type WebSocketConstructor,
} from "@agentd/client";

import {
  collect,
  assertContiguous,
  config,
  MockModel,
  readUntil,
  rebuiltText,
  TcpProxy,
  TestDaemon,
  textReply,
  toolCallReply,
  within,
} from "./helpers.js";

function finished(events: AgentEvent[]): string[] {
  return events.flatMap((e) => (e.type === "loopFinished" ? [e.reason] : []));
}

/** The global WebSocket (Node >= 22, or Node 20 with --experimental-websocket), if any. */
const globalWebSocket = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;

// Each implementation the client can use: the ws package, and the global WebSocket.
const implementations: Array<[string, WebSocketConstructor | undefined]> = [["the ws package", undefined]];
if (globalWebSocket !== undefined) implementations.push(["the global WebSocket", globalWebSocket]);

for (const [name, WebSocket] of implementations) {
  describe(`over WebSocket (${name})`, () => {
    let model: MockModel;
    let daemon: TestDaemon;
    let client: Client;
    const wsOptions = (url: string, token: string | undefined) =>
      WebSocket === undefined ? { url, token } : { url, token, WebSocket };

    beforeEach(async () => {
      model = await MockModel.start();
      daemon = await TestDaemon.start(config(model.url), { listen: true });
      client = await connect(wsOptions(daemon.url, daemon.token));
    });

    afterEach(async () => {
      client?.close();
      await daemon?.stop();
      await model?.close();
    });

    test("a run, with a permission prompt answered, goes over the listener", async () => {
      assert.equal(client.url, daemon.url);
      const agent = await client.createAgent({ title: "ws run", mode: "agent" });
      model.push(textReply(["Hel", "lo ", "there"]));
      let answerId = "";
      const events = await collect(
        client.run(agent.id, "Hi", { onSent: (ids) => (answerId = ids.assistantMessageId) }),
        "the text run",
      );
      assert.deepEqual(finished(events), ["completed"]);
      assert.equal(rebuiltText(events, answerId), "Hello there");
      assertContiguous(events);

      model.push(toolCallReply([{ id: "call_ws_1", name: "bash", arguments: { command: "echo over-ws" } }]));
      model.push(textReply(["Done."]));
      const prompts: PendingPermission[] = [];
      const ran = await collect(
        client.run(agent.id, "Run it", { onPermission: (p) => (prompts.push(p), { granted: true }) }),
        "the permission run",
      );
      assert.deepEqual(prompts.map((p) => p.arguments), [{ command: "echo over-ws" }]);
      assert.deepEqual(finished(ran), ["waitingPermission", "completed"]);
      const result = ran.find((e) => e.type === "toolResult");
      assert.ok(result?.type === "toolResult" && result.status === "success");
      assert.match(result.content, /over-ws/);
    });

    test("an event stream resumes after the connection breaks mid-run, without gaps or duplicates", async () => {
      const agent = await client.createAgent({ title: "ws broken connection" });
      const parts = Array.from({ length: 40 }, (_, i) => `w${i} `);
      model.push(textReply(parts, 5));
      const proxy = await TcpProxy.start(daemon.port);
      const other = await connect(wsOptions(proxy.url, daemon.token));
      // Hold the stream's reconnection until events were sent meanwhile, so they must be
      // replayed with sinceSeq (while the rest of the run still streams live).
      let openGate: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (openGate = resolve));
      const realConnection = other.connection.bind(other);
      const observer = client.events({ agentId: agent.id });
      const stream = other.events({ agentId: agent.id });
      await observer.start();
      await stream.start();
      other.connection = () => gate.then(realConnection);
      try {
        const sent = await client.sendMessage({ agentId: agent.id, content: "Count slowly" });
        const seen: AgentEvent[] = [];
        const observed: AgentEvent[] = [];
        await readUntil(stream, (e) => e.type === "textDelta", seen, "the first delta");
        proxy.cut();
        let deltas = 0;
        await readUntil(
          observer,
          (e) => (e.type === "textDelta" && ++deltas === 5) || e.type === "loopFinished",
          observed,
          "events sent while disconnected",
        );
        openGate();
        await readUntil(stream, (e) => e.type === "loopFinished", seen, "the end of the run");
        assert.ok(proxy.accepted >= 2, "the stream never reconnected");
        assertContiguous(seen);
        assert.equal(rebuiltText(seen, sent.assistantMessageId), parts.join(""));
      } finally {
        openGate();
        other.close();
        await observer.return();
        await proxy.close();
      }
    });

    test("an event stream resumes after a daemon restart", async () => {
      const agent = await client.createAgent({ title: "ws restart" });
      const stream = client.events({ agentId: agent.id });
      await stream.start();
      const seen: AgentEvent[] = [];
      model.push(textReply(["Before ", "the restart."]));
      const first = await client.sendMessage({ agentId: agent.id, content: "One" });
      await readUntil(stream, (e) => e.type === "loopFinished", seen, "the first run");
      await daemon.terminate();
      await daemon.restart();
      model.push(textReply(["After ", "the restart."]));
      const second = await client.sendMessage({ agentId: agent.id, content: "Two" });
      await readUntil(stream, (e) => e.type === "loopFinished", seen, "the run after the restart");
      assertContiguous(seen);
      assert.equal(new Set(seen.map((e) => e.seq)).size, seen.length, "no duplicate seqs");
      assert.equal(rebuiltText(seen, first.assistantMessageId), "Before the restart.");
      assert.equal(rebuiltText(seen, second.assistantMessageId), "After the restart.");
      await stream.return();
    });

    test("a stream whose daemon comes back with another token fails at once", async () => {
      const proxy = await TcpProxy.start(daemon.port);
      const watcher = new Client({ ...wsOptions(proxy.url, daemon.token), reconnectTimeoutMs: 600_000 });
      try {
        const agent = await watcher.createAgent({ title: "new token" });
        const stream = watcher.events({ agentId: agent.id });
        await stream.start();
        await daemon.terminate();
        daemon.changeToken();
        await daemon.restart();
        // While the daemon was away the stream retried (the proxy took those attempts).
        const before = proxy.accepted;
        await assert.rejects(within(stream.next(), "the refused stream"), (e: unknown) => {
          assert.ok(e instanceof ConnectionError && e.reason === "unauthorized", String(e));
          assert.match(e.message, /the token is wrong/);
          return true;
        });
        // Since the daemon is back: at most one refused attempt (and /readyz for the global one).
        const after = proxy.accepted - before;
        assert.ok(after <= (WebSocket === undefined ? 1 : 2), `${after} connections after the restart`);
      } finally {
        watcher.close();
        await proxy.close();
      }
    });

    test("a wrong or missing token is refused with a clear error, and not retried", async () => {
      const proxy = await TcpProxy.start(daemon.port);
      try {
        const cases: Array<[string | undefined, RegExp]> = [
          ["not-the-token-" + "x".repeat(32), /401.*the token is wrong/],
          [undefined, /401.*no token was given/],
        ];
        for (const [token, says] of cases) {
          const before = proxy.accepted;
          await assert.rejects(connect(wsOptions(proxy.url, token)), (e: unknown) => {
            assert.ok(e instanceof ConnectionError, String(e));
            assert.equal(e.reason, "unauthorized");
            assert.match(e.message, says);
            return true;
          });
          // A stream does not retry it either, however long it would wait to reconnect.
          const refused = new Client({ ...wsOptions(proxy.url, token), reconnectTimeoutMs: 600_000 });
          await assert.rejects(within(refused.events().next(), "the refused stream"), (e: unknown) => {
            assert.ok(e instanceof ConnectionError && e.reason === "unauthorized", String(e));
            return true;
          });
          refused.close();
          // One upgrade per attempt (the global WebSocket also asks /readyz once each).
          const connections = proxy.accepted - before;
          if (WebSocket === undefined) assert.equal(connections, 2);
          else assert.ok(connections >= 2 && connections <= 4, `${connections} connections`);
        }
      } finally {
        await proxy.close();
      }
    });
  });
}

describe("where the client connects", () => {
  test("an explicit url or socket path, else AGENTD_URL and AGENTD_TOKEN, else the socket", () => {
    const env = { AGENTD_URL: "ws://h:1", AGENTD_TOKEN: "env-token" };
    const rows: Array<[Parameters<typeof chooseTarget>[0], Record<string, string>, object]> = [
      [{}, {}, {}],
      [{ socketPath: "/s.sock" }, env, { socketPath: "/s.sock" }],
      [{}, env, { url: "ws://h:1", token: "env-token" }],
      [{ token: "mine" }, env, { url: "ws://h:1", token: "mine" }],
      [{ url: "wss://x:2" }, env, { url: "wss://x:2", token: "env-token" }],
      [{ socketPath: "ws://y:3", token: "t" }, {}, { url: "ws://y:3", token: "t" }],
      [{}, { AGENTD_URL: "" }, {}],
      [{ url: "ws://h:1" }, {}, { url: "ws://h:1" }],
    ];
    for (const [options, environment, expected] of rows) {
      assert.deepEqual(chooseTarget(options, environment), expected, JSON.stringify([options, environment]));
    }
    assert.throws(() => chooseTarget({ socketPath: "/s", url: "ws://h:1" }, {}), TypeError);
    assert.throws(() => chooseTarget({ url: "http://h:1" }, {}), TypeError);
    assert.throws(() => chooseTarget({}, { AGENTD_URL: "h:1" }), TypeError);
  });

  test("wss with the listener's own certificate: trusted by caCert or AGENTD_CA_CERT, refused without", async () => {
    const model = await MockModel.start();
    const daemon = await TestDaemon.start(config(model.url), { listen: true, tls: true });
    const clients: Client[] = [];
    try {
      const client = await connect({ url: daemon.url, token: daemon.token, caCert: daemon.cert });
      clients.push(client);
      const agent = await client.createAgent({ title: "wss" });
      model.push(textReply(["over ", "TLS"]));
      let answerId = "";
      const events = await collect(
        client.run(agent.id, "Hi", { onSent: (ids) => (answerId = ids.assistantMessageId) }),
        "the run over wss",
      );
      assert.equal(rebuiltText(events, answerId), "over TLS");
      const fromEnv = new Client({}, { AGENTD_URL: daemon.url, AGENTD_TOKEN: daemon.token, AGENTD_CA_CERT: daemon.cert });
      clients.push(fromEnv);
      assert.equal((await fromEnv.getAgent({ agentId: agent.id })).title, "wss");
      const untrusting = new Client({ url: daemon.url, token: daemon.token, reconnectTimeoutMs: 600_000 });
      clients.push(untrusting);
      // Refused at once, by a call and by a stream (no retry of an untrusted certificate).
      const attempts: Array<() => Promise<unknown>> = [() => untrusting.getAgent({ agentId: agent.id }), () => untrusting.events().next()];
      for (const attempt of attempts) {
        await assert.rejects(within(attempt(), "the untrusted certificate"), (e: unknown) => {
          assert.ok(e instanceof ConnectionError && e.reason === "untrusted", String(e));
          assert.match(e.message, /certificate/);
          return true;
        });
      }
    } finally {
      for (const c of clients) c.close();
      await daemon.stop();
      await model.close();
    }
  });

  test("a client made from the environment talks to the listener it names", async () => {
    const model = await MockModel.start();
    const daemon = await TestDaemon.start(config(model.url), { listen: true });
    const client = new Client({}, { AGENTD_URL: daemon.url, AGENTD_TOKEN: daemon.token });
    try {
      assert.equal(client.url, daemon.url);
      const agent = await client.createAgent({ title: "from the environment" });
      const bySocket = await connect({ socketPath: daemon.socket });
      assert.equal((await bySocket.getAgent({ agentId: agent.id })).title, "from the environment");
      bySocket.close();
    } finally {
      client.close();
      await daemon.stop();
      await model.close();
    }
  });
});
