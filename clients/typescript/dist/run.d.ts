import type { EventStream } from "./events.js";
import type { AgentEvent, MessageContent, PendingPermission, PendingQuestion, PermissionLevel, QuestionAnswer, Remember, SendMessageParams, SendMessageResult } from "./types.js";
/** How to answer a permission prompt. */
export interface PermissionAnswer {
    granted: boolean;
    /** `session`/`always` only where the prompt is `rememberable`. Default `once`. */
    remember?: Remember;
    permissionType?: PermissionLevel;
}
/**
 * Answers a permission prompt of the run: `true`/`false`, or an answer with `remember`.
 * Gets the `permissionRequested` event (or, when the client missed it, the prompt as
 * `getSession` lists it: the same fields without the event's).
 */
export type PermissionHandler = (prompt: PendingPermission) => boolean | PermissionAnswer | Promise<boolean | PermissionAnswer>;
/** The answer to a question call: one answer per question, in order, or a refusal. */
export type QuestionReply = {
    answers: QuestionAnswer[];
} | {
    declined: true;
};
/** Answers the model's questions (`questionRequested`, or the entry of `getSession`). */
export type QuestionHandler = (request: PendingQuestion) => QuestionReply | Promise<QuestionReply>;
export interface RunOptions {
    /** Answers permission prompts; without it the run ends at the first prompt. */
    onPermission?: PermissionHandler;
    /** Answers the model's questions; without it the run ends at the first question. */
    onQuestion?: QuestionHandler;
    /** Sent as `clientRequestId` (default: a random UUID), so a resend is not a second message. */
    clientRequestId?: string;
    /** Called with the ids `sendMessage` answered, before the first event is yielded. */
    onSent?: (ids: SendMessageResult) => void;
    /**
     * This turn's own choices, sent with `sendMessage`: `provider`, `model`,
     * `reasoningEffort`, `outputSchema` (the final answer then comes parsed as
     * `structuredOutput` in `messageCompleted`).
     */
    turn?: Pick<SendMessageParams, "provider" | "model" | "reasoningEffort" | "outputSchema">;
}
/** What the run follower needs of the client. */
export interface RunHost {
    openStream(agentId: string): EventStream;
    call(method: string, params: object): Promise<unknown>;
    readonly reconnectTimeoutMs: number;
}
/**
 * Sends `content` to the agent and yields the events of the run it starts: from the
 * `messageStarted` of its answer to the `loopFinished` that ends it. A run that stops at a
 * permission prompt or a question goes on when the callback answers it (the stop's
 * `loopFinished` is yielded too, then the resumed run's events); without a callback the run
 * ends there, and the prompt can be answered later. An `error` event with `retry` is a
 * notice (the model call is retried; see `isRetryNotice`) and the run goes on; the run
 * ends only at its `loopFinished` (the one whose `messageId` is the run's answer).
 */
export declare function followRun(host: RunHost, agentId: string, content: MessageContent, options?: RunOptions): AsyncGenerator<AgentEvent, void, undefined>;
