/**
 * The pieces the scenarios with a population of clients share: the clients themselves (each a retry
 * pipeline on the simulation's clock), the server they call, the samples taken every second and the
 * judgement of recovery after an outage.
 */
import { Eventual, type OutcomeListener, settleWith } from "../../core/invoke.js";
import type { Random } from "../../core/random.js";
import { AdaptiveLimitStep } from "../../limit/step.js";
import { Scope } from "../../pipeline/context.js";
import { Pipeline } from "../../pipeline/pipeline.js";
import { RateLimitStep } from "../../ratelimit/step.js";
import { retryPipeline } from "../../retry/retry.js";
import { Simulation, type Timed } from "../engine.js";
import { FINE_MS, Recorder, recovery, recoverySignals } from "../metrics.js";
import { CapacityServer, FlakyServer, LatencyServer } from "../servers.js";
import { budgetOption, type Strategy } from "../strategies.js";
import { SimulatedTimeoutStep } from "../timeout.js";
import type { Resolved, Run, ServerKind, Single } from "./scenario.js";

/** An exponentially distributed draw with the given mean (inverse transform). */
function exponentialDraw(random: Random, mean: number): number {
  return -Math.log(1 - random()) * mean;
}

export interface Population {
  clients: number;
  /** Mean think time before each request, ms; 0 with `once` starts every client at t = 0. */
  think: number;
  /** Each client makes one logical request and stops. */
  once: boolean;
  /**
   * Open loop: a client starts its next request a think time after starting the last one, whether or not
   * that one has finished (a steady offered rate). Closed loop (the overload experiment's reference
   * client): after it finishes.
   */
  openLoop: boolean;
  timeout: number;
  strategy: Strategy;
  operation: () => PromiseLike<unknown>;
}

/** Starts `clients` simulated clients, each calling the retry loop with the strategy's policy. */
export function populate(sim: Simulation, recorder: Recorder, p: Population): void {
  // A simulated client is a pipeline on the simulation's clock, the very one `retry` builds, with the
  // simulator's per-attempt timeout in the place of the library's (see `SimulatedTimeoutStep`).
  const guards = p.strategy.guards?.(sim.clock, sim.random);
  const timed = p.timeout >= 0 && p.timeout < Number.POSITIVE_INFINITY;
  // Timeouts are counted as they elapse, by the timeout step: no retry callback runs for every failure.
  const timeout = timed ? new SimulatedTimeoutStep(p.timeout, () => recorder.timedOut(sim.now)) : undefined;
  // A rate limiter and an adaptive limit, shared by the clients, inside the retry step and outside the
  // timeout.
  const limit = p.strategy.limit?.(sim.clock);
  const rate = p.strategy.rateLimit?.(sim.clock);
  const limited = [
    ...(rate === undefined ? [] : [new RateLimitStep(rate)]),
    ...(limit === undefined ? [] : [new AdaptiveLimitStep(limit)]),
  ];
  const pipelineOf = (policy: Strategy["policy"]) => {
    const retrying = retryPipeline<unknown>({ ...budgetOption(p.strategy), ...policy, ...guards });
    if (timeout === undefined && limited.length === 0) return retrying;
    return new Pipeline([...retrying.steps, ...limited, ...(timeout === undefined ? [] : [timeout])]);
  };
  const client = pipelineOf(p.strategy.policy);
  const afterThink = p.strategy.afterThink;
  /** Starts the next request of `timer`'s client `think` ms from now. */
  const thinkThenStart = (timer: ThinkTimer, think: number) => {
    timer.think = think;
    sim.schedule(think, timer);
  };
  const operation = () => {
    recorder.attempts += 1;
    return p.operation();
  };
  const closedLoop = !p.once && !p.openLoop;
  const finish = (request: Request, ok: boolean) => {
    if (ok) recorder.succeeded += 1;
    else recorder.failed += 1;
    recorder.completionTotal += sim.now - request.started;
    recorder.lastFinished = sim.now;
    if (closedLoop) thinkThenStart(request.timer, exponentialDraw(sim.random, p.think));
  };
  const start = (timer: ThinkTimer, think: number) => {
    const request = new Request(sim.now, timer, finish);
    recorder.started += 1;
    if (p.openLoop) thinkThenStart(timer, exponentialDraw(sim.random, p.think));
    runCall(afterThink === undefined ? client : pipelineOf(afterThink(think)), operation, sim, request);
  };
  for (let i = 0; i < p.clients; i++) {
    const timer = new ThinkTimer(start);
    if (p.once) thinkThenStart(timer, 0);
    else thinkThenStart(timer, exponentialDraw(sim.random, p.think));
  }
}

/**
 * A client's think timer, the event that starts its next request: one object per client, queued again
 * for each request, where a closure per request would do. A client has at most one request waiting to start.
 */
class ThinkTimer implements Timed {
  readonly #start: (timer: ThinkTimer, think: number) => void;
  /** The think time the pending request waits, ms. */
  think = 0;

  constructor(start: (timer: ThinkTimer, think: number) => void) {
    this.#start = start;
  }

  fire(): void {
    this.#start(this, this.think);
  }
}

/**
 * One request of a simulated client: when it started and whose it is, and the listener of its call's
 * outcome, in one object where three closures would be.
 */
class Request implements OutcomeListener<unknown> {
  readonly started: number;
  readonly timer: ThinkTimer;
  readonly #finish: (request: Request, ok: boolean) => void;

  constructor(started: number, timer: ThinkTimer, finish: (request: Request, ok: boolean) => void) {
    this.started = started;
    this.timer = timer;
    this.#finish = finish;
  }

  heard(): void {
    this.#finish(this, true);
  }

  failed(): void {
    this.#finish(this, false);
  }
}

/**
 * Runs one call of `client` on the simulation's clock and randomness. The simulated operations settle
 * synchronously, and so do the steps over them: the outcome is reported before this returns to the event
 * loop, with no microtask in between.
 */
export function runOnSimulation(
  client: Pipeline,
  operation: () => PromiseLike<unknown>,
  sim: Simulation,
  onValue: () => void,
  onError: () => void,
): void {
  runCall(client, operation, sim, { heard: onValue, failed: onError });
}

/** `runOnSimulation`, telling `listener` of the outcome. */
function runCall(
  client: Pipeline,
  operation: () => PromiseLike<unknown>,
  sim: Simulation,
  listener: OutcomeListener<unknown>,
): void {
  const scope = new Scope(sim.clock, sim.random);
  let result: unknown;
  try {
    result = client.execute(operation, scope);
  } catch (error) {
    listener.failed(error);
    return;
  }
  if (result instanceof Eventual) result.listenBy(listener);
  else
    settleWith(
      result,
      (value) => listener.heard(value),
      (error) => listener.failed(error),
    );
}

/** Samples the server's concurrency every 100 ms (`FINE_MS`); the last sample of a second is that second's. */
export function sampleEverySecond(
  sim: Simulation,
  recorder: Recorder,
  server: { readonly concurrency: number },
): void {
  const sample = () => {
    recorder.sampleConcurrency(sim.now - 0.5, server.concurrency);
    if (sim.now + FINE_MS <= recorder.seconds * 1000) sim.after(FINE_MS, sample);
  };
  sim.after(FINE_MS, sample);
}

/** What the clients of a scenario call, and how. */
export interface Target {
  readonly server: { readonly concurrency: number };
  readonly operation: () => PromiseLike<unknown>;
  /** Each client makes one logical request, at t = 0, and stops. */
  readonly once?: boolean;
  readonly openLoop: boolean;
  readonly think: number;
  readonly timeout: number;
  /** The server's knee (see `LatencyServer.knee`), if it has one. */
  readonly knee?: number | null;
}

/**
 * One run of a population of clients against the target `setup` makes, and, with `judged`, whether and
 * when goodput came back after the outage.
 */
export function runClients(
  r: Resolved,
  run: Run,
  setup: (sim: Simulation, recorder: Recorder) => Target,
  judged: boolean,
): Single {
  const sim = new Simulation(run.seed);
  const recorder = new Recorder(r.duration);
  const t = setup(sim, recorder);
  populate(sim, recorder, {
    clients: run.clients,
    think: t.think,
    once: t.once ?? false,
    openLoop: t.openLoop,
    timeout: t.timeout,
    strategy: run.strategy,
    operation: t.operation,
  });
  sampleEverySecond(sim, recorder, t.server);
  sim.run(r.duration, (now) => run.onSlice(now / r.duration), 5000);
  const judgement = judged ? judgeOutage(r, recorder, t.knee ?? null) : NOT_JUDGED;
  return {
    recorder,
    events: sim.events,
    ...judgement,
    batchTime: null,
    capacityUse: null,
    makespan:
      t.once === true && recorder.succeeded + recorder.failed === recorder.started
        ? recorder.lastFinished
        : null,
  };
}

/** What a run says of recovery when it is not judged. */
const NOT_JUDGED = { recovered: null, recoveryTime: null, baseline: null } as const;

/** Whether and when goodput (and the requests in flight) came back after the outage `r` asks for. */
export function judgeOutage(
  r: Resolved,
  recorder: Recorder,
  knee: number | null,
): Pick<Single, "recovered" | "recoveryTime" | "inFlightRecoveryTime" | "aboveKneeTime" | "baseline"> {
  if (r.outage === null) return NOT_JUDGED;
  const startS = Math.floor(r.outage.start / 1000);
  const endS = Math.ceil((r.outage.start + r.outage.length) / 1000);
  const warmupS = Math.min(10, Math.floor(startS / 2));
  const baseline = recovery(recorder.successes, warmupS, startS, endS).baseline;
  const outage = { start: r.outage.start, end: r.outage.start + r.outage.length };
  const fine = recoverySignals(recorder, warmupS * 1000, outage, knee);
  return {
    recovered: fine.goodput !== null,
    recoveryTime: fine.goodput,
    inFlightRecoveryTime: fine.inFlight,
    aboveKneeTime: fine.aboveKnee,
    baseline,
  };
}

/**
 * A server of `kind` for the clients to call: the capacity and latency servers pause for the outage, the
 * flaky one fails with `failureProbability` (its own option's when null).
 */
export function serverTarget(
  kind: ServerKind,
  r: Resolved,
  failureProbability: number | null,
  openLoop: boolean,
): (sim: Simulation, recorder: Recorder) => Target {
  return (sim, recorder) => {
    const pause =
      r.outage === null ? undefined : { start: r.outage.start, end: r.outage.start + r.outage.length };
    const made =
      kind === "flaky"
        ? new FlakyServer(sim, recorder, r.timeout, {
            ...r.flakyServer,
            failureProbability: failureProbability ?? r.flakyServer.failureProbability,
          })
        : kind === "capacity"
          ? new CapacityServer(sim, recorder, r.timeout, { ...r.capacityServer, pause })
          : new LatencyServer(sim, recorder, r.timeout, { ...r.latencyServer, pause });
    return {
      server: made,
      operation: () => made.request(),
      openLoop,
      think: r.think,
      timeout: r.timeout,
      knee: kind === "latency" ? LatencyServer.knee(r.timeout, r.latencyServer) : null,
    };
  };
}
