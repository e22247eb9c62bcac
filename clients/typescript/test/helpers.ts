// Test kit: a scripted OpenAI-style model server and a real agentd in a temp dir.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

import type { AgentEvent } from "@agentd/client";

/** How long any single wait of a test may take. */
export const WAIT_MS = 15_000;

const here = path.dirname(fileURLToPath(import.meta.url));
/** The repository root (this file runs from clients/typescript/build/test). */
export const REPO_ROOT = path.resolve(here, "..", "..", "..", "..");
export const AGENTD_BIN = process.env.AGENTD_BIN ?? path.join(REPO_ROOT, "target", "debug", "agentd");

/** Rejects if `promise` does not settle within `ms`. */
export async function within<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Every event of `run` until it ends, within the wait limit (`what` names it on timeout). */
export async function collect(run: AsyncIterable<AgentEvent>, what: string): Promise<AgentEvent[]> {
  const events: AgentEvent[] = [];
  await within(
    (async () => {
      for await (const e of run) events.push(e);
    })(),
    what,
  );
  return events;
}

// ---------------------------------------------------------------------------------------
// The scripted model

/**
 * One streamed answer: SSE `data:` payloads, sent in order, with an optional pause between;
 * or, with `status`, an HTTP error answer with `events[0]` as its body.
 */
export interface Reply {
  events: string[];
  delayMs?: number;
  status?: number;
}

/** An HTTP error answer (e.g. 429) in OpenAI's error shape. */
export function errorReply(status: number, message: string): Reply {
  return { status, events: [JSON.stringify({ error: { message, type: "requests" } })] };
}

function chunk(delta: object, finishReason: string | null = null): string {
  return JSON.stringify({
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    model: "mock-model",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
}

function usage(completion: number): string {
  return JSON.stringify({
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    model: "mock-model",
    choices: [],
    usage: { prompt_tokens: 11, completion_tokens: completion, total_tokens: 11 + completion },
  });
}

/** A text answer, one content chunk per part. */
export function textReply(parts: string[], delayMs?: number): Reply {
  const events = parts.map((p) => chunk({ content: p }));
  events.push(chunk({}, "stop"), usage(parts.length), "[DONE]");
  return delayMs === undefined ? { events } : { events, delayMs };
}

/** An answer calling tools: for each call, an opening chunk and its arguments in two halves. */
export function toolCallReply(calls: Array<{ id: string; name: string; arguments: object }>): Reply {
  const events: string[] = [];
  calls.forEach((call, index) => {
    const args = JSON.stringify(call.arguments);
    const open = { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } };
    events.push(chunk({ role: "assistant", content: null, tool_calls: [open] }));
    const half = Math.floor(args.length / 2);
    for (const piece of [args.slice(0, half), args.slice(half)]) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, "tool_calls"), usage(calls.length), "[DONE]");
  return { events };
}

export interface RecordedRequest {
  path: string;
  body: any;
}

/** An HTTP server on 127.0.0.1 playing an OpenAI-compatible model: replies pushed in order. */
export class MockModel {
  readonly requests: RecordedRequest[] = [];
  readonly #queue: Reply[] = [];
  readonly #server: http.Server;
  readonly #waiters: Array<() => void> = [];
  #port = 0;

  private constructor(server: http.Server) {
    this.#server = server;
  }

  static async start(): Promise<MockModel> {
    const server = http.createServer();
    const model = new MockModel(server);
    server.on("request", (req, res) => model.#handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    model.#port = (server.address() as net.AddressInfo).port;
    return model;
  }

  /** The provider's `base_url`. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}/v1`;
  }

  push(reply: Reply): void {
    this.#queue.push(reply);
  }

  /** Resolves once `n` requests have come. */
  async waitRequests(n: number): Promise<RecordedRequest[]> {
    while (this.requests.length < n) {
      await within(new Promise<void>((resolve) => this.#waiters.push(resolve)), `${n} model requests`);
    }
    return this.requests;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      let body: unknown = null;
      try {
        body = JSON.parse(Buffer.concat(parts).toString("utf8"));
      } catch {
        body = Buffer.concat(parts).toString("utf8");
      }
      this.requests.push({ path: req.url ?? "", body });
      for (const wake of this.#waiters.splice(0)) wake();
      const reply = req.method === "POST" && req.url?.endsWith("/chat/completions") ? this.#queue.shift() : undefined;
      if (reply === undefined) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "the test scripted no reply for this request" } }));
        return;
      }
      if (reply.status !== undefined) {
        res.writeHead(reply.status, { "content-type": "application/json" });
        res.end(reply.events[0] ?? "");
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      void this.#stream(res, reply);
    });
  }

  async #stream(res: http.ServerResponse, reply: Reply): Promise<void> {
    for (const event of reply.events) {
      if (res.destroyed) return;
      res.write(`data: ${event}\n\n`);
      if (reply.delayMs !== undefined) await new Promise((r) => setTimeout(r, reply.delayMs));
    }
    res.end();
  }
}

// ---------------------------------------------------------------------------------------
// The daemon

const SCRUBBED_ENV = [
  "AGENTD_SOCKET",
  "AGENTD_DATA_DIR",
  "AGENTD_CONFIG",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "http_proxy",
  "https_proxy",
  "all_proxy",
];

/** A daemon config with the mock as its one provider; `maxRetries` > 0 retries quickly. */
export function config(modelUrl: string, extra = "", maxRetries = 0): string {
  return `[defaults]
provider = "mock"
model = "mock-model"

[[providers]]
id = "mock"
kind = "openai"
base_url = "${modelUrl}"
api_key = "test-key"
max_retries = ${maxRetries}
retry_base_ms = 20
models = [{ id = "mock-model", context_window = 32768, max_output_tokens = 4096 }]
${extra}
`;
}

/** A TCP port of 127.0.0.1 free right now (bound, read, closed). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A real agentd on a socket, data dir and config of its own temp dir; with `listen`, also
 * its WebSocket listener on a free port of 127.0.0.1 (`url`), with a token of its own
 * (`token`, in a 0600 token file).
 */
export class TestDaemon {
  readonly dir: string;
  readonly socket: string;
  readonly dataDir: string;
  readonly configPath: string;
  readonly logPath: string;
  port = 0;
  url = "";
  token = "";
  tokenFile = "";
  /** With `tls`: the listener's self-signed certificate (the CA a client trusts). */
  cert = "";
  #child: ChildProcess | undefined;

  private constructor(dir: string) {
    this.dir = dir;
    const run = path.join(dir, "run");
    fs.mkdirSync(run, { mode: 0o700 });
    this.socket = path.join(run, "agentd.sock");
    this.dataDir = path.join(dir, "data");
    this.configPath = path.join(dir, "config.toml");
    this.logPath = path.join(dir, "daemon.log");
  }

  static async start(configToml: string, options: { listen?: boolean; tls?: boolean } = {}): Promise<TestDaemon> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-ts-"));
    const daemon = new TestDaemon(dir);
    if (options.listen === true) {
      daemon.port = await freePort();
      daemon.url = `ws://127.0.0.1:${daemon.port}`;
      daemon.token = randomBytes(24).toString("hex");
      daemon.tokenFile = path.join(dir, "listen.token");
      fs.writeFileSync(daemon.tokenFile, daemon.token + "\n", { mode: 0o600, flag: "wx" });
      configToml += `\n[listen]\naddress = "127.0.0.1:${daemon.port}"\ntoken_file = "${daemon.tokenFile}"\n`;
      if (options.tls === true) {
        daemon.cert = path.join(dir, "cert.pem");
        const key = path.join(dir, "key.pem");
        execFileSync("openssl", [
          "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
          "-keyout", key, "-out", daemon.cert, "-days", "2", "-subj", "/CN=127.0.0.1",
          "-addext", "subjectAltName=IP:127.0.0.1",
        ], { stdio: "ignore" });
        daemon.url = `wss://127.0.0.1:${daemon.port}`;
        configToml += `tls_cert = "${daemon.cert}"\ntls_key = "${key}"\n`;
      }
    }
    fs.writeFileSync(daemon.configPath, configToml);
    await daemon.#spawn();
    return daemon;
  }

  /** A new token in the token file (the daemon reads it when it starts). */
  changeToken(): void {
    this.token = randomBytes(24).toString("hex");
    fs.writeFileSync(this.tokenFile, this.token + "\n");
  }

  /** Starts the daemon again on the same socket, data dir and config. */
  async restart(): Promise<void> {
    await this.#spawn();
  }

  /** SIGTERM, then waits for the exit (a clean stop: runs saved as interrupted). */
  async terminate(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    this.#child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    await within(exited, "agentd to exit after SIGTERM");
  }

  /** SIGKILL, then waits for the exit (as a crash: nothing saved on the way out). */
  async kill(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    this.#child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await within(exited, "agentd to exit after SIGKILL");
  }

  /** Stops the daemon and removes its temp dir (the log is printed if `failed`). */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGKILL");
      await exited;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  log(): string {
    try {
      return fs.readFileSync(this.logPath, "utf8");
    } catch {
      return "";
    }
  }

  async #spawn(): Promise<void> {
    if (!fs.existsSync(AGENTD_BIN)) {
      throw new Error(`no agentd binary at ${AGENTD_BIN}: build it (cargo build -p agentd --bin agentd) or set AGENTD_BIN`);
    }
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !SCRUBBED_ENV.includes(k)) env[k] = v;
    }
    env.AGENTD_LOG = "debug";
    const log = fs.openSync(this.logPath, "a");
    const child = spawn(
      AGENTD_BIN,
      ["--socket", this.socket, "--data-dir", this.dataDir, "--config", this.configPath],
      { env, stdio: ["ignore", log, log] },
    );
    fs.closeSync(log);
    this.#child = child;
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`agentd exited before it was ready; log:\n${this.log()}`);
      }
      if ((await accepts({ path: this.socket })) && (this.port === 0 || (await accepts({ host: "127.0.0.1", port: this.port })))) {
        return;
      }
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`agentd did not accept connections within 10 s; log:\n${this.log()}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

function accepts(where: net.NetConnectOpts): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createConnection(where);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

// ---------------------------------------------------------------------------------------
// Events

/** The text of one message rebuilt from its `textDelta`s. */
export function rebuiltText(events: AgentEvent[], messageId: string): string {
  return events
    .filter((e): e is Extract<AgentEvent, { type: "textDelta" }> => e.type === "textDelta" && e.messageId === messageId)
    .map((e) => e.delta)
    .join("");
}

/**
 * Checks one agent's events are in order without a gap or a duplicate: each seq is one
 * above the previous, except where a `resyncRequired` (which carries the current last seq)
 * says events were lost.
 */
export function assertContiguous(events: AgentEvent[]): void {
  let last: number | undefined;
  for (const e of events) {
    if (last !== undefined) {
      if (e.type === "resyncRequired") {
        if (e.seq <= last) throw new Error(`resyncRequired at seq ${e.seq} after seq ${last}`);
      } else if (e.seq !== last + 1) {
        throw new Error(`seq ${e.seq} (${e.type}) follows seq ${last}: ${JSON.stringify(events.map((x) => [x.seq, x.type]))}`);
      }
    }
    last = e.seq;
  }
}

/** Reads events from `iterator` until `stop` holds for one (included) or the wait times out. */
export async function readUntil(
  iterator: AsyncIterator<AgentEvent>,
  stop: (e: AgentEvent) => boolean,
  sink: AgentEvent[],
  what: string,
): Promise<void> {
  for (;;) {
    const next = await within(iterator.next(), what);
    if (next.done) throw new Error(`the stream ended while waiting for ${what}`);
    sink.push(next.value);
    if (stop(next.value)) return;
  }
}

/**
 * A TCP proxy in front of a port of 127.0.0.1 that counts the connections it takes and
 * can break them all (`cut`), as a network failure would.
 */
export class TcpProxy {
  accepted = 0;
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();

  private constructor(server: net.Server) {
    this.#server = server;
  }

  static async start(targetPort: number): Promise<TcpProxy> {
    const server = net.createServer();
    const proxy = new TcpProxy(server);
    server.on("connection", (client) => {
      proxy.accepted++;
      const upstream = net.createConnection({ host: "127.0.0.1", port: targetPort });
      for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
        proxy.#sockets.add(a);
        a.on("close", () => proxy.#sockets.delete(a));
        a.on("error", () => b.destroy());
        a.on("end", () => b.end());
        a.pipe(b);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.#server.address() as net.AddressInfo).port}`;
  }

  /** Breaks every connection through the proxy now; new ones are still taken. */
  cut(): void {
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
