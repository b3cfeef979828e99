/** `supervise(options)`, described once (see `src/core/schema.ts`). */
import type { Schema } from "../core/schema.js";

const timeLimit = { kind: { type: "limit", integer: false }, ms: true } as const;

export const SUPERVISOR_SCHEMA: Schema = {
  name: "supervisor",
  takenBy: "`supervise(options)`",
  where: "supervise",
  label: (key) => `supervise: ${key}`,
  fields: {
    worker: {
      kind: {
        type: "other",
        allowed:
          "a worker factory (processWorker, threadWorker, inProcessWorker), or a non-empty array of them",
      },
      default: "none (required)",
      doc: "What starts a worker; an array is a group of different workers.",
    },
    instances: {
      kind: { type: "integer", min: 1, max: 1000 },
      default: "1",
      doc: "Workers started from one factory (each a process, a thread or an in-process handler).",
    },
    strategy: {
      kind: { type: "enum", values: ["one-for-one", "all-for-one"] },
      default: '"one-for-one"',
      doc: "When a worker crashes, restart it alone or the whole group.",
    },
    route: {
      kind: { type: "function" },
      default: "the least busy worker",
      doc: "(message, workers) => index: which worker a message goes to.",
    },
    concurrency: {
      kind: { type: "integer", min: 1, max: 1e6 },
      default: "1",
      doc: "Messages one worker handles at once.",
    },
    backoff: {
      kind: {
        type: "other",
        allowed: "a backoff (from backoff.*), an object with delay(retries, random), or a function",
      },
      default: "backoff.slotted({ slot: 10, ceiling: 10 })",
      doc: "How long to wait before restarting a crashed worker.",
    },
    maxPending: {
      kind: { type: "limit", integer: true },
      default: "1000 (at least workers × concurrency)",
      doc: "Messages waiting or in flight at most; beyond it send() rejects with MessageDroppedError. Negative or Infinity for no limit.",
    },
    maxDeliveries: {
      kind: { type: "limit", integer: true },
      default: "5",
      doc: "Deliveries of one message at most; then it is dead-lettered. Negative or Infinity for no limit.",
    },
    poisonAfter: {
      kind: { type: "integer", min: 1, max: 1000 },
      default: "3",
      doc: "Crashes of its worker one message may cause; then it is dead-lettered as poison, and its crashes stop counting against maxRestarts once the worker acknowledges another message.",
    },
    maxRestarts: {
      kind: { type: "limit", integer: true },
      default: "10",
      doc: "Restarts allowed within restartWindow before the supervisor gives up (a poison message's crashes forgiven). Negative or Infinity for no limit.",
    },
    restartWindow: { ...timeLimit, default: "60000", doc: "The window maxRestarts counts over." },
    ackTimeout: {
      ...timeLimit,
      default: "none",
      doc: "A message not acknowledged within this time kills its worker, which is restarted.",
    },
    startTimeout: {
      ...timeLimit,
      default: "none",
      doc: "A worker not ready within this time is killed and restarted.",
    },
    clock: {
      kind: { type: "other", allowed: "a Clock" },
      default: "the real clock",
      doc: "Where time is read.",
    },
    random: {
      kind: { type: "function" },
      default: "Math.random",
      doc: "The draws behind the restart backoff.",
    },
  },
};
