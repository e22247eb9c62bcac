import type { Event, ListMessagesParams, SendMessageParams } from "./generated/schema.js";
export type * from "./generated/schema.js";
/** What `sendMessage` takes: plain text or a list of parts. */
export type MessageContent = SendMessageParams["content"];
/** One part of `sendMessage` content. */
export type ContentPart = Exclude<MessageContent, string>[number];
/** The order of `listMessages` pages. */
export type ListOrder = NonNullable<ListMessagesParams["order"]>;
/** `{}`: the result of a method whose success is the answer itself. */
export type EmptyResult = Record<string, never>;
/** An `event` notification's payload, discriminated by `type` (the generated `Event`). */
export type AgentEvent = Event;
export type EventType = Event["type"];
/** The event of one type. */
export type EventOf<T extends EventType> = Extract<Event, {
    type: T;
}>;
export type StatusChangedEvent = EventOf<"statusChanged">;
export type UserMessageEvent = EventOf<"userMessage">;
export type MessageStartedEvent = EventOf<"messageStarted">;
export type TextDeltaEvent = EventOf<"textDelta">;
export type ReasoningDeltaEvent = EventOf<"reasoningDelta">;
export type UsageEvent = EventOf<"usage">;
export type ToolCallStartedEvent = EventOf<"toolCallStarted">;
export type ToolCallArgsDeltaEvent = EventOf<"toolCallArgsDelta">;
export type ToolCallReadyEvent = EventOf<"toolCallReady">;
export type PermissionRequestedEvent = EventOf<"permissionRequested">;
export type PermissionResolvedEvent = EventOf<"permissionResolved">;
export type ToolProgressEvent = EventOf<"toolProgress">;
export type ToolResultEvent = EventOf<"toolResult">;
export type SummarizedEvent = EventOf<"summarized">;
export type MessageCompletedEvent = EventOf<"messageCompleted">;
/** The end of a run; `messageId` is the assistant message the run wrote. */
export type LoopFinishedEvent = EventOf<"loopFinished">;
/**
 * Something failed. With `retry` it is a notice (one attempt failed and is retried, the
 * run goes on); without it the run's `loopFinished` follows. See {@link isRetryNotice}.
 */
export type ErrorEvent = EventOf<"error">;
export type AgentCreatedEvent = EventOf<"agentCreated">;
export type AgentUpdatedEvent = EventOf<"agentUpdated">;
export type AgentDeletedEvent = EventOf<"agentDeleted">;
/** Events were lost: reload (or subscribe with `snapshot`); live events go on at `seq + 1`. */
export type ResyncRequiredEvent = EventOf<"resyncRequired">;
/**
 * The first event of a stream opened with `snapshot: true`: the agent's status and latest
 * assistant message as of its `seq` (the agent's latest seq, not a new one).
 */
export type SnapshotEvent = EventOf<"snapshot">;
export type PlanUpdatedEvent = EventOf<"planUpdated">;
export type QuestionRequestedEvent = EventOf<"questionRequested">;
export type QuestionResolvedEvent = EventOf<"questionResolved">;
export type BackgroundTaskFinishedEvent = EventOf<"backgroundTaskFinished">;
export type McpServerStatusEvent = EventOf<"mcpServerStatus">;
