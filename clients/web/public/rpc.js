// The page's connection to agentd: JSON-RPC 2.0 over the daemon's WebSocket listener,
// one message per text frame, named params. It reconnects by itself with a growing
// delay (0.5 s doubling to 10 s) and tells the page each time it is connected again, so
// the page can subscribe again from the seqs it has (subscriptions do not survive a
// connection). It holds no state of the agents: that is the page's.

/** An error answer of the daemon: `kind` is its `data.kind` (docs/protocol.md 2). */
export class RpcError extends Error {
  constructor(error) {
    super(error.message);
    this.code = error.code;
    this.kind = error.data?.kind ?? "unknown";
  }
}

export class Connection {
  /**
   * `url`: the ws(s) URL. `handlers`: `open()` after each connect, `event(subscription,
   * event)` for each notification, `state(text)` for the status line, `closed()` after a
   * connection ended (the page checks the sign-in then).
   */
  constructor(url, handlers) {
    this.url = url;
    this.handlers = handlers;
    this.nextId = 1;
    this.pending = new Map();
    this.delayMs = 500;
    this.socket = null;
    this.stopped = false;
  }

  start() {
    this.stopped = false;
    this.#connect();
  }

  /** Closes for good (the page signs out). */
  stop() {
    this.stopped = true;
    this.socket?.close();
  }

  get connected() {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  /** Calls `method` with named `params`; resolves with the result, rejects with RpcError. */
  call(method, params = {}) {
    if (!this.connected) return Promise.reject(new Error(`not connected to agentd (calling ${method}); reconnecting`));
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject, method }));
  }

  #connect() {
    this.handlers.state("connecting");
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.onopen = () => {
      this.delayMs = 500;
      this.handlers.state("connected");
      this.handlers.open();
    };
    socket.onmessage = (frame) => this.#receive(frame.data);
    socket.onclose = () => {
      if (this.socket !== socket) return;
      for (const call of this.pending.values()) call.reject(new Error(`the connection to agentd closed during ${call.method}`));
      this.pending.clear();
      if (this.stopped) return;
      this.handlers.state("reconnecting");
      this.handlers.closed();
      setTimeout(() => !this.stopped && this.#connect(), this.delayMs);
      this.delayMs = Math.min(this.delayMs * 2, 10_000);
    };
  }

  #receive(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      console.error("agentd sent a frame that is not JSON", text);
      return;
    }
    for (const one of Array.isArray(message) ? message : [message]) {
      if (one.method === "event" && one.params) {
        this.handlers.event(one.params.subscription, one.params.result);
        continue;
      }
      const call = this.pending.get(one.id);
      if (!call) continue;
      this.pending.delete(one.id);
      if (one.error) call.reject(new RpcError(one.error));
      else call.resolve(one.result);
    }
  }
}
