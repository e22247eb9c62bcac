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
export declare class SeqMerger {
    #private;
    /** The last seq let through for this agent. */
    lastSeq(agentId: string): number | undefined;
    /** Starts the stream of an agent at this seq (the events after it are wanted). */
    setLastSeq(agentId: string, seq: number): void;
    /** Agents seen and not deleted, with their last seq, the least recently active first. */
    knownAgents(): Array<[string, number]>;
    /** A catch-up subscription for this agent is being opened: hold events past a gap. */
    beginCatchUp(agentId: string): void;
    /** Whether this agent's catch-up subscription is still needed. */
    isCatchingUp(agentId: string): boolean;
    /**
     * The catch-up subscription could not be made (e.g. the agent is gone): what was held
     * goes through as it is, in seq order.
     */
    abandonCatchUp(agentId: string): AgentEvent[];
    /** Stops tracking an agent (it will be treated as new if it shows up again). */
    forget(agentId: string): void;
    /**
     * Takes one event; `catchUpOf` names the agent of the catch-up subscription it came on,
     * `undefined` for the main subscription.
     */
    accept(event: AgentEvent, catchUpOf?: string): Accepted;
}
