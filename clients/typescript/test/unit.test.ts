// Pure parts: the socket path rule, the line framing, the seq merger, error kinds, and the
// check that the generated types are what the schema gives.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import {
  AgentdError,
  checkSocketPath,
  ConnectionError,
  connect,
  defaultSocketPath,
  kindOfCode,
  LineDecoder,
  SeqMerger,
  type AgentEvent,
} from "@agentd/client";

import { REPO_ROOT } from "./helpers.js";

test("the default socket path follows the daemon's rule", () => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ AGENTD_SOCKET: "/s/x.sock", XDG_RUNTIME_DIR: "/run/user/7" }, "/s/x.sock"],
    [{ XDG_RUNTIME_DIR: "/run/user/7" }, "/run/user/7/agentd/agentd.sock"],
    [{ TMPDIR: "/var/tmp" }, "/var/tmp/agentd-7/agentd.sock"],
    [{}, "/tmp/agentd-7/agentd.sock"],
    [{ AGENTD_SOCKET: "", XDG_RUNTIME_DIR: "" }, "/tmp/agentd-7/agentd.sock"],
  ];
  for (const [env, expected] of cases) {
    assert.equal(defaultSocketPath(env, 7), expected, JSON.stringify(env));
  }
});

test("lines are split wherever chunks end, even inside a UTF-8 character", () => {
  const text = '{"a":"héllo ✓"}\r\n\n{"b":2}\n{"c":';
  const bytes = Buffer.from(text, "utf8");
  for (let cut = 0; cut <= bytes.length; cut++) {
    const decoder = new LineDecoder();
    const lines = [...decoder.push(bytes.subarray(0, cut)), ...decoder.push(bytes.subarray(cut))];
    assert.deepEqual(lines, ['{"a":"héllo ✓"}', '{"b":2}'], `cut at ${cut}`);
  }
  const small = new LineDecoder(8);
  assert.throws(() => small.push(Buffer.from("0123456789")), /over 8 bytes/);
});

test("error kinds come from data.kind, else from the code", () => {
  const e = new AgentdError(-32001, "no agent", { kind: "agentNotFound" }, "getAgent");
  assert.equal(e.kind, "agentNotFound");
  assert.equal(e.code, -32001);
  assert.equal(e.method, "getAgent");
  assert.ok(e instanceof Error);
  assert.equal(new AgentdError(-32602, "bad", undefined).kind, "invalidParams");
  assert.equal(new AgentdError(-31999, "new", { kind: "somethingNew" }).kind, "somethingNew");
  assert.equal(kindOfCode(-31999), "unknown");
});

function ev(agentId: string, seq: number, type = "textDelta"): AgentEvent {
  return { agentId, seq, at: 0, type, messageId: "m", delta: String(seq) } as unknown as AgentEvent;
}

function seqs(events: AgentEvent[]): number[] {
  return events.map((e) => e.seq);
}

test("the merger drops duplicates and passes resyncs only when events were lost", () => {
  const m = new SeqMerger();
  m.setLastSeq("a", 10);
  assert.deepEqual(seqs(m.accept(ev("a", 9)).emit), []);
  assert.deepEqual(seqs(m.accept(ev("a", 10)).emit), []);
  assert.deepEqual(seqs(m.accept(ev("a", 11)).emit), [11]);
  assert.deepEqual(seqs(m.accept(ev("a", 11)).emit), []);
  assert.deepEqual(seqs(m.accept(ev("a", 11, "resyncRequired")).emit), [], "nothing was lost");
  assert.deepEqual(seqs(m.accept(ev("a", 20, "resyncRequired")).emit), [20]);
  assert.deepEqual(seqs(m.accept(ev("a", 21)).emit), [21]);
  // A jump without a catch-up (a crash mark) goes through as it is.
  assert.deepEqual(seqs(m.accept(ev("a", 1030)).emit), [1030]);
  // Daemon-level events pass from the main subscription only.
  assert.deepEqual(seqs(m.accept(ev("", 0, "mcpServerStatus")).emit), [0]);
  assert.deepEqual(seqs(m.accept(ev("", 0, "mcpServerStatus"), "a").emit), []);
});

test("a catch-up merges with live events in order, whatever order they arrive in", () => {
  // Agent a was seen up to 5; while away, 6..9 happened. After the reconnect the main
  // subscription delivers live events from 10, the catch-up replays 6..9 then goes live.
  const orders: Array<Array<[string | undefined, number]>> = [
    // main first, catch-up after
    [[undefined, 10], [undefined, 11], ["a", 6], ["a", 7], ["a", 8], ["a", 9], ["a", 10], ["a", 11], [undefined, 12]],
    // catch-up first, including live ones
    [["a", 6], ["a", 7], ["a", 8], ["a", 9], ["a", 10], [undefined, 10], ["a", 11], [undefined, 11], [undefined, 12]],
    // interleaved
    [["a", 6], [undefined, 10], ["a", 7], [undefined, 11], ["a", 8], ["a", 9], [undefined, 12], ["a", 10]],
  ];
  for (const order of orders) {
    const m = new SeqMerger();
    m.setLastSeq("a", 5);
    m.beginCatchUp("a");
    const out: number[] = [];
    let caughtUp = false;
    for (const [source, seq] of order) {
      const r = m.accept(ev("a", seq), source);
      out.push(...seqs(r.emit));
      if (r.caughtUp.includes("a")) caughtUp = true;
    }
    assert.deepEqual(out, [6, 7, 8, 9, 10, 11, 12], JSON.stringify(order));
    assert.ok(caughtUp, "the catch-up subscription is reported as no longer needed");
    assert.equal(m.isCatchingUp("a"), false);
  }
});

test("a catch-up that cannot replay resyncs, and held live events follow", () => {
  const m = new SeqMerger();
  m.setLastSeq("a", 5);
  m.beginCatchUp("a");
  assert.deepEqual(seqs(m.accept(ev("a", 31), undefined).emit), []);
  const r = m.accept(ev("a", 30, "resyncRequired"), "a");
  assert.deepEqual(seqs(r.emit), [30, 31]);
  assert.deepEqual(r.caughtUp, ["a"]);
  // An agent that is gone: what was held goes through.
  const g = new SeqMerger();
  g.setLastSeq("b", 1);
  g.beginCatchUp("b");
  g.accept(ev("b", 4), undefined);
  assert.deepEqual(seqs(g.abandonCatchUp("b")), [4]);
});

test("a socket in a folder others can write to is refused before anything is sent", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-ts-untrusted-"));
  try {
    fs.chmodSync(dir, 0o755);
    const socket = path.join(dir, "agentd.sock");
    let connections = 0;
    const server = net.createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    try {
      await assert.rejects(connect({ socketPath: socket }), (e: unknown) => {
        assert.ok(e instanceof ConnectionError);
        assert.equal(e.reason, "untrusted");
        assert.match(e.message, /mode 0755/);
        return true;
      });
      assert.equal(connections, 0, "no connection was made");
      fs.chmodSync(dir, 0o700);
      assert.equal(await checkSocketPath(socket), fs.realpathSync(socket));
    } finally {
      server.close();
    }
    await assert.rejects(connect({ socketPath: path.join(dir, "none.sock") }), (e: unknown) => {
      assert.ok(e instanceof ConnectionError);
      assert.equal(e.reason, "unreachable");
      return true;
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the committed generated types are checked against the schema", () => {
  const script = path.join(REPO_ROOT, "clients", "typescript", "scripts", "check-generated.mjs");
  const schemaDir = path.join(REPO_ROOT, "agent-proto", "schema");
  const check = (dir: string) =>
    spawnSync(process.execPath, [script], { env: { ...process.env, AGENTD_SCHEMA_DIR: dir }, encoding: "utf8" });
  const same = check(schemaDir);
  assert.equal(same.status, 0, same.stderr);
  // A schema with one more method: the committed types no longer match.
  const changed = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-schema-"));
  try {
    fs.copyFileSync(path.join(schemaDir, "event.schema.json"), path.join(changed, "event.schema.json"));
    const openrpc = JSON.parse(fs.readFileSync(path.join(schemaDir, "openrpc.json"), "utf8"));
    openrpc.methods.push({ name: "newMethod", params: [], result: { name: "result", schema: { type: "boolean" } } });
    fs.writeFileSync(path.join(changed, "openrpc.json"), JSON.stringify(openrpc));
    const stale = check(changed);
    assert.equal(stale.status, 1);
    assert.match(stale.stderr, /src\/generated\/schema\.ts differs from what the schema gives/);
  } finally {
    fs.rmSync(changed, { recursive: true, force: true });
  }
});

test("the package's license is the workspace's, in SPDX form", () => {
  const cargo = fs.readFileSync(path.join(REPO_ROOT, "Cargo.toml"), "utf8");
  const workspace = /^\[workspace\.package\][^[]*?^license\s*=\s*"([^"]+)"/m.exec(cargo);
  assert.ok(workspace, "no license in Cargo.toml's [workspace.package]");
  // npm wants a compound SPDX expression in parentheses: "(MIT OR Apache-2.0)".
  const expression = workspace[1];
  const spdx = /\s(OR|AND|WITH)\s/.test(expression) ? `(${expression})` : expression;
  const root = path.join(REPO_ROOT, "clients", "typescript");
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  assert.equal(pkg.license, spdx, "package.json");
  const lock = JSON.parse(fs.readFileSync(path.join(root, "package-lock.json"), "utf8"));
  assert.equal(lock.packages[""].license, spdx, "package-lock.json");
});
