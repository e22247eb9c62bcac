import type { AgentEvent } from "./types.js";

/** What one event given to {@link SeqMerger.accept} yields. */
export interface Accepted {
  /** Events to hand to the consumer, in order. */
  emit: AgentEvent[];
  /** Agents whose catch-up subscription is no longer needed (the main one covers them). */
  caughtUp: string[];
}

/**
 * The seq bookkeeping of a resumable event stream, without I/O.
 *
 * Each agent's events carry seqs one apart. The merger remembers the last seq it let through
 * per agent and lets an event through only once, in seq order:
 * - an event at or below the last seq is a duplicate (a replay overlapping what was seen);
 * - `resyncRequired` is let through when it is ahead of the last seq (events were lost: the
 *   consumer reloads), and dropped otherwise (nothing was lost);
 * - while an agent is *catching up* (after a reconnect of an all-agents stream, a
 *   subscription with `sinceSeq` replays what was missed, while the new all-agents
 *   subscription already delivers live events), events ahead of the last seq + 1 wait
 *   until the gap is filled; once everything before the first live event of the main
 *   subscription is through, the catch-up subscription is reported as no longer needed;
 * - otherwise an event ahead of the last seq + 1 is a jump the daemon made (after a crash
 *   seqs continue above a reserved mark, with a `resyncRequired` on replay) and goes
 *   through as it is.
 *
 * Events with seq 0 or no agent (`mcpServerStatus`, an all-agents `resyncRequired`) are
 * not the agents' and go through when they come from the main subscription.
 */
export class SeqMerger {
  // Insertion order is recency: an agent is re-inserted at each event.
  readonly #last = new Map<string, number>();
  readonly #pending = new Map<string, AgentEvent[]>();
  readonly #catching = new Set<string>();
  readonly #mainFirst = new Map<string, number>();
  readonly #deleted = new Set<string>();

  /** The last seq let through for this agent. */
  lastSeq(agentId: string): number | undefined {
    return this.#last.get(agentId);
  }

  /** Starts the stream of an agent at this seq (the events after it are wanted). */
  setLastSeq(agentId: string, seq: number): void {
    this.#setLast(agentId, seq);
  }

  /** Agents seen and not deleted, with their last seq, the least recently active first. */
  knownAgents(): Array<[string, number]> {
    return [...this.#last].filter(([agentId]) => !this.#deleted.has(agentId));
  }

  /** A catch-up subscription for this agent is being opened: hold events past a gap. */
  beginCatchUp(agentId: string): void {
    this.#catching.add(agentId);
    this.#mainFirst.delete(agentId);
  }

  /** Whether this agent's catch-up subscription is still needed. */
  isCatchingUp(agentId: string): boolean {
    return this.#catching.has(agentId);
  }

  /**
   * The catch-up subscription could not be made (e.g. the agent is gone): what was held
   * goes through as it is, in seq order.
   */
  abandonCatchUp(agentId: string): AgentEvent[] {
    this.#catching.delete(agentId);
    this.#mainFirst.delete(agentId);
    const held = this.#pending.get(agentId) ?? [];
    this.#pending.delete(agentId);
    const out: AgentEvent[] = [];
    for (const event of held) {
      const last = this.#last.get(agentId);
      if (last === undefined || event.seq > last) {
        out.push(event);
        this.#setLast(agentId, event.seq);
      }
    }
    return out;
  }

  /** Stops tracking an agent (it will be treated as new if it shows up again). */
  forget(agentId: string): void {
    this.#last.delete(agentId);
    this.#pending.delete(agentId);
    this.#catching.delete(agentId);
    this.#mainFirst.delete(agentId);
  }

  /**
   * Takes one event; `catchUpOf` names the agent of the catch-up subscription it came on,
   * `undefined` for the main subscription.
   */
  accept(event: AgentEvent, catchUpOf?: string): Accepted {
    const out: Accepted = { emit: [], caughtUp: [] };
    const agentId = event.agentId;
    if (typeof event.seq !== "number" || event.seq === 0 || !agentId) {
      if (catchUpOf === undefined) out.emit.push(event);
      return out;
    }
    if (catchUpOf !== undefined && (catchUpOf !== agentId || !this.#catching.has(agentId))) {
      // A late event of a catch-up subscription that is being closed: the main one has it.
      return out;
    }
    const catching = this.#catching.has(agentId);
    if (catchUpOf === undefined && catching && !this.#mainFirst.has(agentId)) {
      this.#mainFirst.set(agentId, event.seq);
    }
    const last = this.#last.get(agentId);
    if (last === undefined) {
      this.#pass(out, event);
    } else if (event.type === "resyncRequired") {
      if (event.seq > last) this.#pass(out, event);
    } else if (event.seq <= last) {
      // A duplicate.
    } else if (event.seq === last + 1 || !catching) {
      this.#pass(out, event);
    } else {
      this.#hold(agentId, event);
    }
    this.#drain(out, agentId);
    if (catching) {
      const first = this.#mainFirst.get(agentId);
      const now = this.#last.get(agentId);
      if (first !== undefined && now !== undefined && now >= first - 1) {
        this.#catching.delete(agentId);
        this.#mainFirst.delete(agentId);
        out.emit.push(...this.abandonCatchUp(agentId));
        out.caughtUp.push(agentId);
      }
    }
    return out;
  }

  #pass(out: Accepted, event: AgentEvent): void {
    out.emit.push(event);
    this.#setLast(event.agentId, event.seq);
    if (event.type === "agentDeleted") this.#deleted.add(event.agentId);
  }

  #hold(agentId: string, event: AgentEvent): void {
    const held = this.#pending.get(agentId) ?? [];
    if (!held.some((e) => e.seq === event.seq)) {
      held.push(event);
      held.sort((a, b) => a.seq - b.seq);
    }
    this.#pending.set(agentId, held);
  }

  #drain(out: Accepted, agentId: string): void {
    const held = this.#pending.get(agentId);
    if (held === undefined) return;
    while (held.length > 0) {
      const last = this.#last.get(agentId) ?? 0;
      const next = held[0]!;
      if (next.seq <= last) {
        held.shift();
      } else if (next.seq === last + 1) {
        held.shift();
        this.#pass(out, next);
      } else {
        break;
      }
    }
    if (held.length === 0) this.#pending.delete(agentId);
  }

  #setLast(agentId: string, seq: number): void {
    this.#last.delete(agentId);
    this.#last.set(agentId, seq);
  }
}
