/**
 * What the simulated servers share: their errors, the `Server` interface, a pause, and the counting every
 * server does of what it is offered and what it answers in time.
 */
import type { Simulation } from "../engine.js";
import type { Recorder } from "../metrics.js";
import type { Outcome } from "../outcome.js";

/*
 * The simulated servers' errors name themselves on their prototype rather than in a field: a field is a
 * property defined on every instance, and a contention run makes millions of conflicts (the field took
 * two fifths of the time to make each one).
 */

/** Names `errorClass` as the built-in errors are named: on its prototype, writable, not enumerable. */
export function nameOnPrototype(errorClass: { prototype: Error }, name: string): void {
  Object.defineProperty(errorClass.prototype, "name", { value: name, writable: true, configurable: true });
}

/** The error a simulated server answers with. */
export class ServerError extends Error {
  declare readonly name: "ServerError";
  static {
    nameOnPrototype(ServerError, "ServerError");
  }
}

/** A write that lost the race: the version it read is no longer current. */
export class ConflictError extends Error {
  declare readonly name: "ConflictError";
  static {
    nameOnPrototype(ConflictError, "ConflictError");
  }
}

export interface Server {
  /** A request arrives now. */
  request(): Outcome<string>;
  /** Requests inside the server now. */
  readonly concurrency: number;
}

/** A pause: the server serves nothing from `start` to `end` (ms), while requests still arrive and count. */
export interface Pause {
  readonly start: number;
  readonly end: number;
}

/** Shared by the servers: counts, concurrency and the client's timeout, to tell answered-in-time apart. */
export abstract class Base implements Server {
  protected readonly sim: Simulation;
  protected readonly recorder: Recorder;
  /** The client's per-attempt timeout, ms: an answer later than this is one the client no longer waits for. */
  protected readonly timeout: number;
  concurrency = 0;

  constructor(sim: Simulation, recorder: Recorder, timeout: number) {
    this.sim = sim;
    this.recorder = recorder;
    this.timeout = timeout;
  }

  abstract request(): Outcome<string>;

  protected arrive(): void {
    this.recorder.offer(this.sim.now);
    this.recorder.work += 1;
    this.concurrency += 1;
    if (this.concurrency > this.recorder.peakConcurrency) this.recorder.peakConcurrency = this.concurrency;
  }

  /** Answers a request that arrived at `arrival`; `outcome` is undefined when its client no longer waits. */
  protected answer(outcome: Outcome<string> | undefined, arrival: number, error: Error | undefined): void {
    this.concurrency -= 1;
    const now = this.sim.now;
    const latency = now - arrival;
    if (latency < this.timeout) this.recorder.answered(now, error === undefined, latency);
    if (outcome === undefined) return;
    if (error === undefined) outcome.resolve("OK");
    else outcome.reject(error);
  }
}
