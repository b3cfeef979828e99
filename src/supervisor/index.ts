/**
 * The supervisor (after Erlang/OTP and Akka): restart a crashing worker with backoff, and keep and redeliver every
 * unacknowledged message, with a bounded buffer, a restart limit, a poison-message limit and groups.
 * The `robustly/supervisor` entry point: Node.js only (threads and processes).
 */
export {
  MessageDeadLetteredError,
  MessageDroppedError,
  SupervisorGaveUpError,
  SupervisorStoppedError,
  WorkerExitError,
} from "./errors.js";
export { inProcessWorker, type WorkerInfo } from "./in-process.js";
export { SUPERVISOR_DEFAULTS } from "./options.js";
export { type ProcessWorkerOptions, processWorker } from "./process.js";
export { type ServeOptions, serveWorker } from "./serve.js";
export { supervise } from "./supervisor.js";
export { type ThreadWorkerOptions, threadWorker } from "./thread.js";
export type {
  DeadLetter,
  DeadLetterReason,
  Delivery,
  Disposable,
  Envelope,
  Handler,
  RestartStrategy,
  StopOptions,
  SuperviseOptions,
  Supervisor,
  SupervisorEvents,
  SupervisorMetrics,
  SupervisorState,
  WorkerFactory,
  WorkerHandle,
  WorkerStartContext,
  WorkerState,
  WorkerStatus,
} from "./types.js";
