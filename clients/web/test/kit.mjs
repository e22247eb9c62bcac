// Test kit of the web page's tests: a scripted OpenAI-compatible model, a real agentd with
// its WebSocket listener on in a temp dir, a raw JSON-RPC client on its Unix socket, and
// headless Chromium (the system's, driven by playwright-core).

import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

/** How long any single wait of a test may take. */
export const WAIT_MS = 20_000;

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, "..", "..", "..");
export const AGENTD_BIN = process.env.AGENTD_BIN ?? path.join(REPO_ROOT, "target", "debug", "agentd");
export const SCREENSHOTS = path.join(REPO_ROOT, "target", "web-screenshots");

/** Rejects if `promise` does not settle within `ms`. */
export async function within(promise, what, ms = WAIT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------
// The scripted model

function chunk(delta, finishReason = null) {
  return JSON.stringify({
    id: "chatcmpl-web",
    object: "chat.completion.chunk",
    model: "mock-model",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
}

function usage(completion) {
  return JSON.stringify({
    id: "chatcmpl-web",
    object: "chat.completion.chunk",
    model: "mock-model",
    choices: [],
    usage: { prompt_tokens: 11, completion_tokens: completion, total_tokens: 11 + completion },
  });
}

/** A gate a reply's stream waits at until the test opens it. */
export function gate() {
  let open;
  const opened = new Promise((resolve) => (open = resolve));
  return { opened, open: () => open() };
}

/**
 * A text answer, one content chunk per part. With `pauseAfter: {parts: n, gate}` the
 * stream stops after n parts until the gate opens (a run that stays mid-stream).
 */
export function textReply(parts, pauseAfter) {
  const events = parts.map((p) => chunk({ content: p }));
  events.push(chunk({}, "stop"), usage(parts.length), "[DONE]");
  return { events, pauseAfter };
}

/** An answer calling one tool, its arguments in two halves. */
export function toolCallReply(id, name, args) {
  const text = JSON.stringify(args);
  const half = Math.floor(text.length / 2);
  const open = { index: 0, id, type: "function", function: { name, arguments: "" } };
  const events = [chunk({ role: "assistant", content: null, tool_calls: [open] })];
  for (const piece of [text.slice(0, half), text.slice(half)]) {
    events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
  }
  events.push(chunk({}, "tool_calls"), usage(1), "[DONE]");
  return { events };
}

/** An HTTP server on 127.0.0.1 playing an OpenAI-compatible model: replies pushed in order. */
export class MockModel {
  requests = [];
  #queue = [];
  #server;
  #port = 0;

  static async start() {
    const model = new MockModel();
    model.#server = http.createServer((req, res) => model.#handle(req, res));
    await new Promise((resolve) => model.#server.listen(0, "127.0.0.1", resolve));
    model.#port = model.#server.address().port;
    return model;
  }

  get url() {
    return `http://127.0.0.1:${this.#port}/v1`;
  }

  push(reply) {
    this.#queue.push(reply);
  }

  async close() {
    this.#server.closeAllConnections?.();
    await new Promise((resolve) => this.#server.close(() => resolve()));
  }

  #handle(req, res) {
    const parts = [];
    req.on("data", (c) => parts.push(c));
    req.on("end", () => {
      this.requests.push({ path: req.url, body: Buffer.concat(parts).toString("utf8") });
      const reply = req.method === "POST" && req.url.endsWith("/chat/completions") ? this.#queue.shift() : undefined;
      if (reply === undefined) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "the test scripted no reply for this request" } }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      void this.#stream(res, reply);
    });
  }

  async #stream(res, reply) {
    for (const [index, event] of reply.events.entries()) {
      if (reply.pauseAfter && index === reply.pauseAfter.parts) await reply.pauseAfter.gate.opened;
      if (res.destroyed) return;
      res.write(`data: ${event}\n\n`);
    }
    res.end();
  }
}

// ---------------------------------------------------------------------------------------
// The daemon

const SCRUBBED_ENV = ["AGENTD_SOCKET", "AGENTD_DATA_DIR", "AGENTD_CONFIG", "AGENTD_URL", "AGENTD_TOKEN"];
const PROXY_ENV = /^(http|https|all|no)_proxy$/i;

/**
 * A real agentd with `[listen]` on a free port of its own (kept across restarts, so an
 * open page can reconnect), its own 0600 token file and the mock as its provider.
 */
export class TestDaemon {
  #child;

  constructor(dir) {
    this.dir = dir;
    this.runtimeDir = path.join(dir, "run");
    this.dataDir = path.join(dir, "data");
    this.configDir = path.join(dir, "config");
    this.socket = path.join(this.runtimeDir, "agentd", "agentd.sock");
    this.configPath = path.join(this.configDir, "agentd", "config.toml");
    this.tokenPath = path.join(dir, "listen.token");
    this.logPath = path.join(dir, "daemon.log");
    this.token = randomBytes(24).toString("hex");
    this.port = 0;
  }

  /** The page's address. */
  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(modelUrl) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-web-"));
    const daemon = new TestDaemon(dir);
    daemon.port = await freePort();
    for (const d of [daemon.runtimeDir, daemon.dataDir, path.dirname(daemon.configPath)]) fs.mkdirSync(d, { recursive: true, mode: 0o700 });
    fs.writeFileSync(daemon.tokenPath, `${daemon.token}\n`, { mode: 0o600 });
    fs.writeFileSync(daemon.configPath, daemon.#config(modelUrl));
    await daemon.#spawn();
    return daemon;
  }

  #config(modelUrl) {
    return `[defaults]
provider = "mock"
model = "mock-model"

[[providers]]
id = "mock"
kind = "openai"
base_url = "${modelUrl}"
api_key = "test-key"
max_retries = 0
models = [{ id = "mock-model", context_window = 32768, max_output_tokens = 4096 }]

[listen]
address = "127.0.0.1:${this.port}"
token_file = "${this.tokenPath}"
`;
  }

  /** Stops (SIGTERM, a clean stop) and starts again on the same dirs; the port may change. */
  async restart() {
    await this.terminate();
    await this.#spawn();
  }

  async terminate() {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await within(exited, "agentd to exit after SIGTERM");
  }

  async stop() {
    const child = this.#child;
    this.#child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  log() {
    try {
      return fs.readFileSync(this.logPath, "utf8");
    } catch {
      return "";
    }
  }

  async #spawn() {
    if (!fs.existsSync(AGENTD_BIN)) throw new Error(`no agentd binary at ${AGENTD_BIN}: build it (cargo build -p agentd --bin agentd) or set AGENTD_BIN`);
    const env = {};
    for (const [k, v] of Object.entries(process.env)) if (!SCRUBBED_ENV.includes(k) && !PROXY_ENV.test(k)) env[k] = v;
    Object.assign(env, { XDG_RUNTIME_DIR: this.runtimeDir, XDG_DATA_HOME: this.dataDir, XDG_CONFIG_HOME: this.configDir, AGENTD_LOG: "debug" });
    const log = fs.openSync(this.logPath, "a");
    const child = spawn(AGENTD_BIN, ["--socket", this.socket, "--data-dir", path.join(this.dataDir, "agentd"), "--config", this.configPath], {
      env,
      stdio: ["ignore", log, log],
    });
    fs.closeSync(log);
    this.#child = child;
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`agentd exited before it was ready; log:\n${this.log()}`);
      if ((await accepts(this.socket)) && (await healthy(this.url))) return;
      if (Date.now() > deadline) throw new Error(`agentd did not start its listener within 15 s; log:\n${this.log()}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function healthy(url) {
  try {
    return (await fetch(`${url}/healthz`)).ok;
  } catch {
    return false;
  }
}

function accepts(socket) {
  return new Promise((resolve) => {
    const s = net.createConnection({ path: socket });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

// ---------------------------------------------------------------------------------------
// Another client: raw JSON-RPC (NDJSON) on the Unix socket

export class SocketClient {
  #socket;
  #nextId = 1;
  #pending = new Map();
  events = [];
  #waiters = [];

  static async connect(socketPath) {
    const client = new SocketClient();
    client.#socket = net.createConnection({ path: socketPath });
    await within(new Promise((resolve, reject) => client.#socket.once("connect", resolve).once("error", reject)), "the socket");
    let buffered = "";
    client.#socket.on("data", (data) => {
      buffered += data.toString("utf8");
      let newline;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.trim()) client.#receive(JSON.parse(line));
      }
    });
    return client;
  }

  call(method, params = {}) {
    const id = this.#nextId++;
    this.#socket.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    return within(
      new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject })),
      `the answer to ${method}`,
    );
  }

  /** Waits for an event (of any subscription of this client) that `test` accepts. */
  waitEvent(test, what) {
    const found = this.events.find(test);
    if (found) return Promise.resolve(found);
    return within(new Promise((resolve) => this.#waiters.push({ test, resolve })), what);
  }

  close() {
    this.#socket.destroy();
  }

  #receive(message) {
    if (message.method === "event") {
      const event = message.params.result;
      this.events.push(event);
      this.#waiters = this.#waiters.filter((w) => (w.test(event) ? (w.resolve(event), false) : true));
      return;
    }
    const call = this.#pending.get(message.id);
    if (!call) return;
    this.#pending.delete(message.id);
    if (message.error) call.reject(Object.assign(new Error(message.error.message), { kind: message.error.data?.kind }));
    else call.resolve(message.result);
  }
}
