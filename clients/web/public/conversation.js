// One agent's conversation as the page shows it, rebuilt from the daemon's events.
//
// Pure state, no DOM and no socket: it takes stored messages (listMessages), a snapshot,
// and events, and applies them by the rules of docs/protocol.md 4.6, so what it holds is
// what `listMessages` would store. It also keeps what no message stores: the live output of
// running commands (toolProgress) and retry notices. The page renders from it.

export class Conversation {
  constructor(agentId) {
    this.agentId = agentId;
    /** Messages in order (user and assistant), as the store has them plus live changes. */
    this.messages = [];
    /** The seq of the last event applied; events at or below it are skipped. */
    this.lastSeq = 0;
    this.status = "idle";
    this.plan = [];
    /** A transient line about the run (a retry notice), or "". */
    this.notice = "";
    /** Where the current step of each assistant message begins (protocol.md 4.6). */
    this.steps = new Map();
    /** Ids of messages changed since the page last rendered them. */
    this.dirty = new Set();
  }

  /**
   * Adds the stored history (listMessages, read after the snapshot subscription): every
   * message the conversation does not hold yet is older than those it holds (those came
   * with the snapshot or its events), so they go first, in stored order.
   */
  mergeHistory(stored) {
    const live = new Set(this.messages.map((m) => m.id));
    const older = stored.filter((m) => !live.has(m.id)).map((m) => structuredClone(m));
    for (const m of older) this.dirty.add(m.id);
    this.messages = [...older, ...this.messages];
  }

  /** A `snapshot` event: its message is the latest state of the message it names. */
  applySnapshot(event) {
    this.status = event.status;
    this.lastSeq = event.seq;
    if (event.message) {
      const message = this.#upsert(structuredClone(event.message));
      this.#newStep(message, event.stepStart ?? message.blocks.length);
    }
  }

  /** Applies one event; answers false for one already applied (seq at or below lastSeq). */
  apply(event) {
    if (event.seq !== 0 && event.seq <= this.lastSeq) return false;
    if (event.seq !== 0) this.lastSeq = event.seq;
    const handler = this[`on_${event.type}`];
    if (typeof handler === "function") handler.call(this, event);
    return true;
  }

  /** The message with id `id`, if known. */
  message(id) {
    return this.messages.find((m) => m.id === id);
  }

  /** The permission prompts and questions waiting for an answer, oldest first. */
  pending() {
    const out = [];
    for (const message of this.messages) {
      for (const block of message.blocks) {
        if (block.type !== "toolCall") continue;
        if (block.status === "waitingPermission" && block.prompt && !block.resolution) {
          out.push({ kind: "permission", messageId: message.id, block });
        } else if (isWaitingAnswer(block.status) && block.questions && !block.answer) {
          out.push({ kind: "question", messageId: message.id, block });
        }
      }
    }
    return out;
  }

  #upsert(message) {
    const index = this.messages.findIndex((m) => m.id === message.id);
    if (index >= 0) this.messages[index] = message;
    else this.messages.push(message);
    this.dirty.add(message.id);
    return message;
  }

  /** A step begins at block `start`: its pieces are the blocks before its first tool call. */
  #newStep(message, start = message.blocks.length) {
    let piecesEnd = start;
    while (piecesEnd < message.blocks.length && message.blocks[piecesEnd].type !== "toolCall") piecesEnd += 1;
    const toolSince = piecesEnd < message.blocks.length;
    this.steps.set(message.id, { start, piecesEnd, lastPiece: piecesEnd > start ? piecesEnd - 1 : -1, toolSince });
  }

  #assistant(id) {
    let message = this.message(id);
    if (!message) {
      message = this.#upsert({ id, agentId: this.agentId, role: "assistant", blocks: [], status: "pending" });
      this.#newStep(message);
    }
    this.dirty.add(id);
    return message;
  }

  #toolCall(event) {
    const message = this.#assistant(event.messageId);
    return message.blocks.find((b) => b.type === "toolCall" && b.toolCallId === event.toolCallId);
  }

  #delta(event, kind) {
    const message = this.#assistant(event.messageId);
    if (message.status === "pending") message.status = "streaming";
    const step = this.steps.get(message.id);
    const last = step.lastPiece >= 0 ? message.blocks[step.lastPiece] : undefined;
    const extendable =
      last && last.type === kind && !step.toolSince && !(kind === "reasoning" && (last.signature || last.redacted || last.details));
    if (extendable) {
      last.text += event.delta;
      return;
    }
    message.blocks.splice(step.piecesEnd, 0, { type: kind, text: event.delta });
    step.lastPiece = step.piecesEnd;
    step.piecesEnd += 1;
    step.toolSince = false;
  }

  // The rules of protocol.md 4.6, one method per event type.

  on_statusChanged(e) {
    this.status = e.status;
    if (e.status !== "generating") this.notice = "";
  }

  on_userMessage(e) {
    const message = structuredClone(e.message);
    if (!this.message(message.id)) {
      this.messages.push(message);
      this.dirty.add(message.id);
    }
  }

  on_messageStarted(e) {
    let message = this.message(e.messageId);
    if (!message) {
      message = e.message
        ? structuredClone(e.message)
        : { id: e.messageId, agentId: this.agentId, role: "assistant", blocks: [], status: "pending" };
      this.messages.push(message);
    }
    this.dirty.add(message.id);
    this.#newStep(message);
  }

  on_textDelta(e) {
    this.#delta(e, "text");
  }

  on_reasoningDelta(e) {
    this.#delta(e, "reasoning");
  }

  on_usage(e) {
    const message = this.#assistant(e.messageId);
    const usage = message.usage ?? { inputTokens: 0, outputTokens: 0 };
    message.usage = { inputTokens: usage.inputTokens + e.inputTokens, outputTokens: usage.outputTokens + e.outputTokens };
  }

  on_toolCallStarted(e) {
    const message = this.#assistant(e.messageId);
    if (message.status === "pending") message.status = "streaming";
    message.blocks.push({ type: "toolCall", toolCallId: e.toolCallId, name: e.name, arguments: null, status: "streaming" });
    this.steps.get(message.id).toolSince = true;
  }

  on_toolCallArgsDelta(e) {
    const block = this.#toolCall(e);
    if (block) block.argumentsText = (block.argumentsText ?? "") + e.delta;
  }

  on_toolCallReady(e) {
    const block = this.#toolCall(e);
    if (block) Object.assign(block, { arguments: e.arguments, status: "ready" });
  }

  on_permissionRequested(e) {
    const block = this.#toolCall(e);
    if (!block) return;
    const { seq, agentId, at, type, messageId, toolCallId, toolName, arguments: _args, ...prompt } = e;
    block.status = "waitingPermission";
    block.prompt = prompt;
    delete block.resolution;
  }

  on_permissionResolved(e) {
    const block = this.#toolCall(e);
    if (!block) return;
    block.resolution = { granted: e.granted, remember: e.remember, ...(e.cancelled ? { cancelled: true } : {}) };
    if (block.status === "waitingPermission") block.status = e.granted ? "approved" : "denied";
  }

  on_questionRequested(e) {
    const block = this.#toolCall(e);
    if (!block) return;
    block.status = "waitingAnswer";
    block.questions = e.questions;
    delete block.answer;
  }

  on_questionResolved(e) {
    const block = this.#toolCall(e);
    if (!block) return;
    const { answers, declined, cancelled } = e;
    block.answer = { ...(answers ? { answers } : {}), ...(declined ? { declined } : {}), ...(cancelled ? { cancelled } : {}) };
    if (isWaitingAnswer(block.status)) block.status = "approved";
  }

  on_toolProgress(e) {
    const block = this.#toolCall(e);
    if (!block) return;
    if (block.status === "ready" || block.status === "approved") block.status = "running";
    if (e.output) block.liveOutput = (block.liveOutput ?? "") + e.output.text;
    if (e.message) block.progressMessage = e.message;
    if (e.total !== undefined) block.progressMessage = `${e.progress} / ${e.total}`;
  }

  on_toolResult(e) {
    const message = this.#assistant(e.messageId);
    const block = this.#toolCall(e);
    if (block) {
      block.status = e.status;
      block.result = { content: e.content, isError: e.status !== "success", ...(e.offloadPath ? { offloadPath: e.offloadPath } : {}), durationMs: e.durationMs };
    }
    this.#newStep(message);
  }

  on_steered(e) {
    const message = this.#assistant(e.messageId);
    message.blocks.push({ type: "steer", id: e.id, text: e.text });
    this.#newStep(message);
  }

  on_error(e) {
    if (e.retry || e.kind === "toolsLeftOut") {
      this.notice = e.message;
      return;
    }
    if (e.messageId) this.#assistant(e.messageId).blocks.push({ type: "error", message: e.message, kind: e.kind });
  }

  on_messageCompleted(e) {
    const message = this.#assistant(e.messageId);
    message.status = e.status;
    if (e.structuredOutput !== undefined) message.structuredOutput = e.structuredOutput;
  }

  on_loopFinished(e) {
    if (["waitingPermission", "waitingQuestion", "paused", "maxSteps", "maxTokens"].includes(e.reason)) {
      this.#assistant(e.messageId).status = "waiting";
    }
  }

  on_planUpdated(e) {
    this.plan = e.items;
  }

  on_reverted() {
    // The conversation lost messages: the page reloads the history (see app.js).
  }
}

function isWaitingAnswer(status) {
  return status === "waitingAnswer" || status === "waiting_answer";
}
