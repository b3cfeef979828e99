/**
 * The one execution context every step and the operation see, and how a step makes a narrower one for
 * what runs inside it (an attempt, a timed part, a hedge).
 */
import { type AbortWatcher, unwatch, watch } from "../core/abort.js";
import { type Clock, systemClock } from "../core/clock.js";
import { PermanentError } from "../core/errors.js";
import { type Random, systemRandom } from "../core/random.js";
import { type AbortKind, type AnsweredRun, type BudgetClaim, LINKED, type LinkedAttempt } from "./link.js";

/** What every step, and the operation itself, receives. All times are in milliseconds. */
export interface ExecutionContext {
  /**
   * Aborts when what runs here is no longer wanted: the caller aborted (reason: theirs), a timeout step
   * ran out (reason: a `TimeoutError`), or another hedge won (reason: a `HedgeLostError`).
   */
  readonly signal: AbortSignal;
  /** 1 for the first attempt, 2 for the first retry, … (as counted by the nearest retry step outside). */
  readonly attempt: number;
  /** Retries so far (attempt − 1). */
  readonly retries: number;
  /**
   * The retries the nearest retry step's top-level policy still allows after this attempt: its
   * `maxRetries` minus the retries it has counted (free ones, and a rule's, are not). Infinity when there
   * is no limit, or no retry step outside.
   */
  readonly retriesLeft: number;
  /** Milliseconds since the nearest retry step outside made its first attempt. */
  readonly elapsed: number;
  /** The time limit of the nearest timeout step outside, in ms; Infinity when there is none. */
  readonly timeout: number;
  /** Within a hedge step: 1 for the first attempt, 2 for the first hedge, …; 1 outside any. */
  readonly hedge: number;
  /** The clock every step of this execution reads and sleeps on. */
  readonly clock: Clock;
  /** The randomness every step of this execution draws from. */
  readonly random: Random;
  /**
   * async-retry's `bail`: stops the nearest retry step outside. Once this attempt settles (whatever it
   * answers), the call ends with `error`, as if the attempt had thrown `new PermanentError(error)`: an
   * object is what the call rejects with, a message makes a `PermanentError`. Return right after calling
   * it. A function of its own, so it may be destructured; outside any retry step it does nothing.
   */
  readonly bail: (error?: unknown) => void;
}

export type { AbortKind, BudgetClaim } from "./link.js";

/** The parts of a context a step may change for what runs inside it. */
export interface ScopeFields {
  attempt?: number;
  retries?: number;
  retriesLeft?: number;
  elapsed?: number;
  timeout?: number;
  hedge?: number;
  claim?: BudgetClaim;
}

/**
 * The context as the pipeline keeps it. A scope is a node in a tree: a child aborts with its parent, and
 * may be aborted alone. The signal's `AbortController` is made only if someone reads `signal`, so that
 * steps and operations that never look at it cost nothing for it.
 */
export class Scope implements ExecutionContext {
  readonly attempt: number;
  readonly retries: number;
  /** Written by a retry step's fast path, which runs its first attempt in the scope it was given. */
  retriesLeft: number;
  readonly elapsed: number;
  readonly timeout: number;
  readonly hedge: number;
  readonly clock: Clock;
  readonly random: Random;
  readonly parent: Scope | undefined;
  /** A budget's mark (see `BudgetClaim`); not inherited. */
  readonly claim: BudgetClaim | undefined;
  /** False for a scope nothing can abort (a root without a caller's signal, and its plain children). */
  canAbort: boolean;
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;
  #kind: AbortKind | undefined;
  #hooks: Set<() => void> | undefined;
  /** Removes this scope's hook from its parent. */
  #detach: (() => void) | undefined;
  /** What ran here and answered last, let go of but kept for an abort of kind "settled" (see `keepAnswered`). */
  #answered: AnsweredRun | undefined;
  /** Set on the scope a retry step runs an attempt in: `bail` marks the nearest such scope. */
  retryAttempt = false;
  /** What `bail` left on this scope (an attempt's), for its retry step to end the call with. */
  bailed: PermanentError | undefined;
  #bail: ((error?: unknown) => void) | undefined;

  constructor(clock: Clock, random: Random, parent?: Scope, fields?: ScopeFields, canAbort = false) {
    this.clock = clock;
    this.random = random;
    this.parent = parent;
    if (parent === undefined) {
      this.attempt = 1;
      this.retries = 0;
      this.retriesLeft = Number.POSITIVE_INFINITY;
      this.elapsed = 0;
      this.timeout = Number.POSITIVE_INFINITY;
      this.hedge = 1;
    } else {
      // A child is always made with its fields (`child`).
      const own = fields as ScopeFields;
      this.attempt = own.attempt ?? parent.attempt;
      this.retries = own.retries ?? parent.retries;
      this.retriesLeft = own.retriesLeft ?? parent.retriesLeft;
      this.elapsed = own.elapsed ?? parent.elapsed;
      this.timeout = own.timeout ?? parent.timeout;
      this.hedge = own.hedge ?? parent.hedge;
    }
    this.claim = fields?.claim;
    this.canAbort = canAbort;
    if (parent?.canAbort) {
      this.canAbort = true;
      if (parent.#aborted) {
        this.#aborted = true;
        this.#reason = parent.#reason;
        this.#kind = parent.#kind;
      } else {
        this.#detach = parent.onAbort(() => this.abort(parent.#reason, parent.#kind as AbortKind));
      }
    }
  }

  /** A scope for what runs inside: it aborts with this one; `abortable` when the step may abort it alone. */
  child(fields: ScopeFields, abortable = false): Scope {
    return new Scope(this.clock, this.random, this, fields, abortable);
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  get bail(): (error?: unknown) => void {
    this.#bail ??= (error?: unknown) => {
      let scope: Scope = this;
      while (!scope.retryAttempt && scope.parent !== undefined) scope = scope.parent;
      scope.bailed ??= error instanceof PermanentError ? error : new PermanentError(error);
    };
    return this.#bail;
  }

  /** What `bail` left on this scope, taken off it; undefined when nothing was. */
  takeBail(): PermanentError | undefined {
    const bailed = this.bailed;
    this.bailed = undefined;
    return bailed;
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  /** The abort's reason (undefined while not aborted). */
  get reason(): unknown {
    return this.#reason;
  }

  /** Why it was aborted (undefined while not aborted). */
  get abortKind(): AbortKind | undefined {
    return this.#kind;
  }

  /** Calls `hook` once when this scope aborts, unless the returned function is called first. */
  onAbort(hook: () => void): () => void {
    if (!this.canAbort) return noop;
    this.#hooks ??= new Set();
    const hooks = this.#hooks;
    hooks.add(hook);
    return () => {
      hooks.delete(hook);
    };
  }

  /**
   * Aborts this scope and everything inside it (once; later calls do nothing). An abort of kind "settled"
   * (the call has answered) also reaches the run kept by `keepAnswered`: what answered for the call is let
   * go, however deep inside. Any other kind has nothing left to cut short there, and only drops it.
   */
  abort(reason: unknown, kind: AbortKind): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#kind = kind;
    this.#detach?.();
    this.#detach = undefined;
    this.#controller?.abort(reason);
    const hooks = this.#hooks;
    this.#hooks = undefined;
    if (hooks !== undefined) for (const hook of [...hooks]) hook();
    const answered = this.#answered;
    this.#answered = undefined;
    if (kind === "settled") answered?.abort(reason, kind);
  }

  /** Ends this scope's tie to its parent (when what ran in it has settled); it keeps its own state. */
  release(): void {
    this.#detach?.();
    this.#detach = undefined;
  }

  /**
   * `run` ran in this scope and has answered, its tie let go (`release`): this scope keeps it, and only
   * it, until something else answers here or this scope aborts, so that a timeout step's `abortOnReturn`
   * outside still reaches the run that answered for the call. One at a time: a retry loop's hundredth
   * attempt holds no more here than its first. Nothing is kept by a scope nothing can abort.
   */
  keepAnswered(run: AnsweredRun): void {
    if (this.canAbort && !this.#aborted) this.#answered = run;
  }

  /** For a root: stops watching the caller's signal (nothing to do for a scope without one). */
  close(): void {}

  /** The nearest mark of `budget` on this scope or outside it. */
  findClaim(budget: object): BudgetClaim | undefined {
    for (let scope: Scope | undefined = this; scope !== undefined; scope = scope.parent) {
      if (scope.claim?.budget === budget) return scope.claim;
    }
    return undefined;
  }
}

function noop(): void {}

/**
 * The scope an execution starts from: it aborts (kind "caller") when the caller's signal does. Many
 * executions that share one signal add one listener to it between them (see `watchAbort`); `close()`
 * removes this one's when the execution has settled.
 */
export class RootScope extends Scope implements AbortWatcher {
  #signal: AbortSignal | undefined;

  constructor(clock: Clock, random: Random, signal?: AbortSignal) {
    super(clock, random, undefined, undefined, signal !== undefined);
    if (signal === undefined) return;
    if (signal.aborted) this.abort(signal.reason, "caller");
    else {
      this.#signal = signal;
      watch(signal, this);
    }
  }

  /** The caller's signal aborted. */
  signalAborted(): void {
    const signal = this.#signal;
    this.#signal = undefined;
    if (signal !== undefined) this.abort(signal.reason, "caller");
  }

  /** Stops watching the caller's signal. */
  override close(): void {
    const signal = this.#signal;
    this.#signal = undefined;
    if (signal !== undefined) unwatch(signal, this);
  }
}

/**
 * The scope to go on with when a step passes `next` a context: the one it was given, or, for a plain
 * object a user-written step made (say `{ ...context, attempt: 2 }`), a child of `fallback` carrying its
 * numbers. A plain object's own `signal` is not followed: abort through the context you were given.
 */
export function toScope(context: unknown, fallback: Scope): Scope {
  if (context instanceof Scope) return context;
  if (context === null || typeof context !== "object") return fallback;
  const own = scopeOf(context);
  if (own !== undefined) return own;
  const c = context as Partial<ExecutionContext>;
  const num = (v: unknown) => (typeof v === "number" && !Number.isNaN(v) ? v : undefined);
  return fallback.child({
    attempt: num(c.attempt),
    retries: num(c.retries),
    retriesLeft: num(c.retriesLeft),
    elapsed: num(c.elapsed),
    timeout: num(c.timeout),
  });
}

/**
 * The scope a context stands for: itself, or, for an attempt the retry loop made without one (see
 * `LinkedAttempt`), the scope of that attempt, made once, when a step or pipeline first runs inside it: a
 * child of the retry step's scope (or a root of its own, for `retry`'s), carrying the attempt's numbers,
 * aborting when the attempt does, its `bail` stopping that call. Undefined for any other context.
 */
export function scopeOf(context: unknown): Scope | undefined {
  if (context instanceof Scope) return context;
  if (context === null || typeof context !== "object" || (context as LinkedAttempt)[LINKED] !== true) {
    return undefined;
  }
  const attempt = context as LinkedAttempt;
  if (attempt.scope !== undefined) return attempt.scope as Scope;
  const outer = (attempt.parent as Scope | undefined) ?? new Scope(attempt.clock, attempt.random);
  const scope = outer.child(
    {
      attempt: attempt.attempt,
      retries: attempt.retries,
      retriesLeft: attempt.retriesLeft,
      elapsed: attempt.elapsed,
      timeout: attempt.timeout,
      claim: attempt.claim,
    },
    true,
  );
  scope.retryAttempt = true;
  attempt.scope = scope;
  if (attempt.kind !== undefined) scope.abort(attempt.reason, attempt.kind);
  return scope;
}

/**
 * The scope of a context a step was given: itself (or the scope it stands for), or, when a step is called
 * outside a pipeline with a plain object, a new root scope on that object's clock and randomness (or the
 * system's).
 */
export function toRootScope(context: ExecutionContext | undefined): Scope {
  if (context instanceof Scope) return context;
  const own = scopeOf(context);
  if (own !== undefined) return own;
  return new Scope(context?.clock ?? systemClock, context?.random ?? systemRandom);
}
