import { randomUUID } from "node:crypto";

import { AgentdError, ConnectionError } from "./errors.js";
import type { EventStream } from "./events.js";
import type {
  AgentEvent,
  MessageContent,
  PendingPermission,
  PendingQuestion,
  PermissionLevel,
  QuestionAnswer,
  Remember,
  SendMessageParams,
  SendMessageResult,
  SessionInfo,
} from "./types.js";

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
export type PermissionHandler = (
  prompt: PendingPermission,
) => boolean | PermissionAnswer | Promise<boolean | PermissionAnswer>;

/** The answer to a question call: one answer per question, in order, or a refusal. */
export type QuestionReply = { answers: QuestionAnswer[] } | { declined: true };

/** Answers the model's questions (`questionRequested`, or the entry of `getSession`). */
export type QuestionHandler = (
  request: PendingQuestion,
) => QuestionReply | Promise<QuestionReply>;

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
export async function* followRun(
  host: RunHost,
  agentId: string,
  content: MessageContent,
  options: RunOptions = {},
): AsyncGenerator<AgentEvent, void, undefined> {
  const stream = host.openStream(agentId);
  try {
    await stream.start();
    const clientRequestId = options.clientRequestId ?? randomUUID();
    const sent = (await callRetrying(host, "sendMessage", {
      ...options.turn,
      agentId,
      content,
      clientRequestId,
    })) as SendMessageResult;
    options.onSent?.(sent);
    const mine = sent.assistantMessageId;
    let started = false;
    const prompts = new Map<string, PendingPermission>();
    const questions = new Map<string, PendingQuestion>();

    for await (const event of stream) {
      if (event.type === "resyncRequired") {
        // Events were lost: ask the daemon where the run stands.
        yield event;
        const session = (await host.call("getSession", { agentId })) as SessionInfo;
        const outcome = await afterResync(host, session, mine, options);
        if (outcome === "ended") return;
        if (outcome === "running") started = true;
        continue;
      }
      if (event.type === "messageStarted" && event.messageId === mine) started = true;
      // `loopFinished` names the message its run wrote: the end of this run is known even
      // where its start was not seen, and another run's end is never taken for it. (A
      // daemon older than that field sends none: then the first one after the start is it.)
      const finished = event.type === "loopFinished" ? (event.messageId as string | undefined) : undefined;
      if (finished === mine) started = true;
      if (!started) continue;
      yield event;
      if (event.type === "permissionRequested" && event.messageId === mine) {
        prompts.set(event.toolCallId, event);
      } else if (event.type === "questionRequested" && event.messageId === mine) {
        questions.set(event.toolCallId, event);
      } else if (event.type === "loopFinished") {
        if (finished !== undefined && finished !== mine) continue;
        let answered = false;
        if (event.reason === "waitingPermission" && options.onPermission !== undefined) {
          const waiting = prompts.size > 0 ? [...prompts.values()] : await pendingPrompts(host, agentId, mine);
          prompts.clear();
          answered = await answerPrompts(host, waiting, options.onPermission);
        } else if (event.reason === "waitingQuestion" && options.onQuestion !== undefined) {
          const waiting =
            questions.size > 0 ? [...questions.values()] : await pendingQuestions(host, agentId, mine);
          questions.clear();
          answered = await answerQuestions(host, waiting, options.onQuestion);
        }
        if (!answered) return;
      }
    }
  } finally {
    await stream.return();
  }
}

/** Where a run stands after a resync: still running, answered and resumed, or ended. */
async function afterResync(
  host: RunHost,
  session: SessionInfo,
  mine: string,
  options: RunOptions,
): Promise<"running" | "ended"> {
  if (session.runMessageId !== mine) return "ended";
  if (session.status === "generating") return "running";
  if (session.status === "waiting_permission" && options.onPermission !== undefined) {
    const waiting = session.pendingPermissions.filter((p) => p.messageId === mine);
    return (await answerPrompts(host, waiting, options.onPermission)) ? "running" : "ended";
  }
  if (session.status === "waiting_question" && options.onQuestion !== undefined) {
    const waiting = (session.pendingQuestions ?? []).filter((q) => q.messageId === mine);
    return (await answerQuestions(host, waiting, options.onQuestion)) ? "running" : "ended";
  }
  return "ended";
}

async function pendingPrompts(host: RunHost, agentId: string, mine: string): Promise<PendingPermission[]> {
  const session = (await host.call("getSession", { agentId })) as SessionInfo;
  return session.pendingPermissions.filter((p) => p.messageId === mine);
}

async function pendingQuestions(host: RunHost, agentId: string, mine: string): Promise<PendingQuestion[]> {
  const session = (await host.call("getSession", { agentId })) as SessionInfo;
  return (session.pendingQuestions ?? []).filter((q) => q.messageId === mine);
}

/** Answers each prompt; false when there was none to answer (the run does not resume). */
async function answerPrompts(
  host: RunHost,
  prompts: PendingPermission[],
  onPermission: PermissionHandler,
): Promise<boolean> {
  for (const prompt of prompts) {
    const raw = await onPermission(prompt);
    const answer: PermissionAnswer = typeof raw === "boolean" ? { granted: raw } : raw;
    await ignoring("permissionNotPending", () =>
      host.call("handlePermissionResponse", {
        messageId: prompt.messageId,
        toolCallId: prompt.toolCallId,
        granted: answer.granted,
        remember: answer.remember,
        permissionType: answer.permissionType,
      }),
    );
  }
  return prompts.length > 0;
}

async function answerQuestions(
  host: RunHost,
  requests: PendingQuestion[],
  onQuestion: QuestionHandler,
): Promise<boolean> {
  for (const request of requests) {
    const reply = await onQuestion(request);
    const params =
      "declined" in reply && reply.declined
        ? { declined: true }
        : { answers: (reply as { answers: QuestionAnswer[] }).answers };
    await ignoring("questionNotPending", () =>
      host.call("answerQuestion", {
        messageId: request.messageId,
        toolCallId: request.toolCallId,
        ...params,
      }),
    );
  }
  return requests.length > 0;
}

/** Another client answered first: the run goes on (or ended) all the same. */
async function ignoring(kind: string, f: () => Promise<unknown>): Promise<void> {
  try {
    await f();
  } catch (e) {
    if (!(e instanceof AgentdError && e.kind === kind)) throw e;
  }
}

/**
 * A call that is safe to repeat (`sendMessage` with a `clientRequestId`), retried while the
 * connection is being re-established.
 */
async function callRetrying(host: RunHost, method: string, params: object): Promise<unknown> {
  const deadline = Date.now() + host.reconnectTimeoutMs;
  let delay = 50;
  for (;;) {
    try {
      return await host.call(method, params);
    } catch (e) {
      const transient =
        e instanceof ConnectionError && (e.reason === "closed" || e.reason === "unreachable");
      if (!transient || Date.now() >= deadline) throw e;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 1000);
    }
  }
}
