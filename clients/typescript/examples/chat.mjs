#!/usr/bin/env node
// Sends one message to an agent and prints the answer as it streams; asks at the terminal
// when the agent wants to run a tool that needs permission.
//
//   node examples/chat.mjs [--socket PATH] [--agent ID] [--mode chat|agent] "your message"
//
// Without --agent a new agent is created. The answer goes to stdout; tool activity and
// prompts go to stderr.

import * as readline from "node:readline/promises";
import { parseArgs } from "node:util";

import { AgentdError, connect } from "@agentd/client";

const { values, positionals } = parseArgs({
  options: {
    socket: { type: "string" },
    agent: { type: "string" },
    mode: { type: "string", default: "agent" },
  },
  allowPositionals: true,
});
const text = positionals.join(" ");
if (text === "") {
  console.error('usage: chat.mjs [--socket PATH] [--agent ID] [--mode chat|agent] "message"');
  process.exit(2);
}

/** @param {string} question */
async function ask(question) {
  if (!process.stdin.isTTY) return false;
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

const client = await connect(values.socket === undefined ? {} : { socketPath: values.socket });
try {
  const agentId =
    values.agent ??
    (await client.createAgent({ mode: values.mode === "chat" ? "chat" : "agent" })).id;
  console.error(`agent ${agentId}`);
  for await (const event of client.run(agentId, text, {
    onPermission: (prompt) => ask(`\nallow ${prompt.description}? [y/N] `),
  })) {
    switch (event.type) {
      case "textDelta":
        process.stdout.write(event.delta);
        break;
      case "toolCallReady":
        console.error(`\n[tool] ${event.name} ${JSON.stringify(event.arguments)}`);
        break;
      case "toolResult":
        console.error(`[${event.status}] ${event.content.split("\n").slice(0, 3).join("\n")}`);
        break;
      case "error":
        console.error(`\nerror: ${event.message} (${event.kind})`);
        break;
      case "loopFinished":
        process.stdout.write("\n");
        if (event.reason !== "completed") console.error(`run ended: ${event.reason}`);
        break;
    }
  }
} catch (e) {
  if (e instanceof AgentdError) {
    console.error(`agentd: ${e.message} (${e.kind})`);
    process.exitCode = 1;
  } else {
    throw e;
  }
} finally {
  client.close();
}
