export { chooseTarget, Client, connect, type ClientMethods, type ConnectOptions } from "./client.js";
export { checkSocketPath, Connection, type SubscriptionId, type WebSocketTarget } from "./connection.js";
export { AgentdError, ConnectionError, kindOfCode } from "./errors.js";
export { EventStream, isRetryNotice, type EventsOptions } from "./events.js";
export { LineDecoder, MAX_FRAME_BYTES } from "./framing.js";
export { SeqMerger, type Accepted } from "./merge.js";
export * from "./methods.js";
export { defaultSocketPath, effectiveUid, SOCKET_ENV } from "./paths.js";
export type {
  PermissionAnswer,
  PermissionHandler,
  QuestionHandler,
  QuestionReply,
  RunOptions,
} from "./run.js";
export * from "./types.js";
export {
  CA_CERT_ENV,
  isWebSocketUrl,
  refusedUpgrade,
  TOKEN_ENV,
  URL_ENV,
  type WebSocketConstructor,
  type WebSocketLike,
} from "./websocket.js";
