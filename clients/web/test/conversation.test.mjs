// The conversation model (public/conversation.js) against the rules of protocol.md 4.6:
// events in, the blocks `listMessages` would store out.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Conversation } from "../public/conversation.js";

/** Events from a compact list: [type, fields]; seqs from 2 on. */
function run(conversation, events, firstSeq = 2) {
  events.forEach(([type, fields], i) => conversation.apply({ seq: firstSeq + i, agentId: "a", at: 0, type, ...fields }));
}

const M = { messageId: "m1" };

test("text, a tool call, its result, and the next step's text make four blocks", () => {
  const c = new Conversation("a");
  run(c, [
    ["userMessage", { message: { id: "u1", role: "user", blocks: [{ type: "text", text: "hi" }], status: "done" } }],
    ["statusChanged", { status: "generating" }],
    ["messageStarted", M],
    ["reasoningDelta", { ...M, delta: "think" }],
    ["textDelta", { ...M, delta: "Let " }],
    ["textDelta", { ...M, delta: "me." }],
    ["toolCallStarted", { ...M, toolCallId: "c1", name: "bash" }],
    ["toolCallArgsDelta", { ...M, toolCallId: "c1", delta: '{"command":"ls"}' }],
    ["toolCallReady", { ...M, toolCallId: "c1", name: "bash", arguments: { command: "ls" } }],
    ["permissionRequested", { ...M, toolCallId: "c1", toolName: "bash", permissionType: "execute", description: "run: ls", arguments: { command: "ls" }, rememberable: true }],
    ["statusChanged", { status: "waiting_permission" }],
    ["loopFinished", { ...M, reason: "waitingPermission" }],
  ]);
  assert.equal(c.status, "waiting_permission");
  assert.equal(c.message("m1").status, "waiting");
  assert.deepEqual(c.pending().map((p) => [p.kind, p.block.toolCallId, p.block.prompt.description]), [["permission", "c1", "run: ls"]]);
  run(
    c,
    [
      ["permissionResolved", { ...M, toolCallId: "c1", granted: true, remember: "once" }],
      ["statusChanged", { status: "generating" }],
      ["messageStarted", M],
      ["toolProgress", { ...M, toolCallId: "c1", progress: 3, output: { stream: "stdout", text: "a\n" } }],
      ["toolResult", { ...M, toolCallId: "c1", status: "success", content: "a\nexit code: 0", durationMs: 1 }],
      ["textDelta", { ...M, delta: "Done." }],
      ["usage", { ...M, inputTokens: 5, outputTokens: 2 }],
      ["messageCompleted", { ...M, status: "done" }],
      ["statusChanged", { status: "idle" }],
      ["loopFinished", { ...M, reason: "completed" }],
    ],
    14,
  );
  const message = c.message("m1");
  assert.deepEqual(
    message.blocks.map((b) => [b.type, b.text ?? b.status]),
    [["reasoning", "think"], ["text", "Let me."], ["toolCall", "success"], ["text", "Done."]],
  );
  assert.equal(message.blocks[2].liveOutput, "a\n");
  assert.deepEqual(c.pending(), []);
  assert.equal(c.lastSeq, 23);
  assert.equal(c.status, "idle");
});

test("text after a tool call of the same step goes before the call (interleaved)", () => {
  const c = new Conversation("a");
  run(c, [
    ["messageStarted", M],
    ["textDelta", { ...M, delta: "A" }],
    ["toolCallStarted", { ...M, toolCallId: "c1", name: "glob" }],
    ["textDelta", { ...M, delta: "B" }],
    ["textDelta", { ...M, delta: "C" }],
  ]);
  assert.deepEqual(c.message("m1").blocks.map((b) => b.text ?? b.type), ["A", "BC", "toolCall"]);
});

test("a snapshot mid-step goes on from its stepStart; old seqs are skipped", () => {
  const c = new Conversation("a");
  const message = { id: "m1", role: "assistant", status: "streaming", blocks: [{ type: "text", text: "Old." }, { type: "text", text: "One " }] };
  c.applySnapshot({ seq: 7, type: "snapshot", status: "generating", message, stepStart: 1 });
  assert.equal(c.apply({ seq: 7, type: "textDelta", ...M, delta: "dup " }), false);
  run(c, [["textDelta", { ...M, delta: "two" }]], 8);
  c.mergeHistory([
    { id: "u0", role: "user", blocks: [], status: "done" },
    { id: "m1", role: "assistant", blocks: [], status: "streaming" },
  ]);
  assert.deepEqual(c.messages.map((m) => m.id), ["u0", "m1"]);
  assert.deepEqual(c.message("m1").blocks.map((b) => b.text), ["Old.", "One two"]);
});

test("a retry notice is no block; the final error is", () => {
  const c = new Conversation("a");
  run(c, [
    ["messageStarted", M],
    ["error", { ...M, message: "retrying in 1 s", kind: "providerHttpError", retryable: true, retry: { attempt: 1, max: 2, delayMs: 1000 } }],
    ["error", { ...M, message: "boom", kind: "providerHttpError", retryable: false }],
  ]);
  assert.equal(c.notice, "retrying in 1 s");
  assert.deepEqual(c.message("m1").blocks, [{ type: "error", message: "boom", kind: "providerHttpError" }]);
});
