/**
 * Backoffs built from other backoffs (tenacity's `wait_chain` and `wait_combine`, a cap, a factor). Pure
 * functions over `Backoff` values: each returns a new backoff and holds no state of its own; the parts are
 * never changed. A stateful part (a shared `ResponsiveBackoff`) still hears of successes through the
 * whole, and a preview (`delays`) forks it.
 */
import { MAX_TIMER_DELAY } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { atLeastOrInfinity, integerAtLeast } from "../core/validate.js";
import { markFactories, toBackoff } from "./common.js";
import type { Backoff, BackoffLike } from "./types.js";

/** A delay (or a base or max) as the timer takes it: never NaN nor below 0, at most 2^31 − 1 ms. */
function inRange(ms: number): number {
  return Number.isNaN(ms) ? MAX_TIMER_DELAY : Math.min(Math.max(ms, 0), MAX_TIMER_DELAY);
}

/**
 * A backoff over `parts`: `success` reaches every part that listens for it, and `fork` rebuilds the whole
 * from the parts' forks (`rebuild`). A whole of pure parts is pure.
 */
function over(
  parts: readonly Backoff[],
  made: Omit<Backoff, "success" | "fork">,
  rebuild: (forks: readonly Backoff[]) => Backoff,
): Backoff {
  const out: Backoff = { ...made };
  const listening = [...new Set(parts)].filter((part) => typeof part.success === "function");
  if (listening.length > 0) {
    out.success = () => {
      for (const part of listening) part.success?.();
    };
  }
  if (parts.some((part) => typeof part.fork === "function")) {
    out.fork = () => {
      const forks = new Map<Backoff, Backoff>();
      return rebuild(
        parts.map((part) => {
          let fork = forks.get(part);
          if (fork === undefined) {
            fork = part.fork?.() ?? part;
            forks.set(part, fork);
          }
          return fork;
        }),
      );
    };
  }
  return out;
}

/**
 * `first`'s delays for the first `retries` retries, then `then`'s, from its own x = 0 (tenacity's
 * `wait_chain`): v_x = first(x) for x < retries, then(x − retries) after.
 *
 * @example
 * backoff.chain(backoff.constant({ base: 100 }), 3, backoff.exponential({ base: 1000 })); // 100, 100, 100, 1000, 2000, …
 */
export function chain(first: BackoffLike, retries: number, then: BackoffLike): Backoff {
  const a = toBackoff(first, "backoff.chain: first");
  const n = integerAtLeast("backoff.chain: retries", retries, 0);
  const b = toBackoff(then, "backoff.chain: then");
  return over(
    [a, b],
    {
      name: `chain(${a.name}, ${n}, ${b.name})`,
      base: n > 0 ? a.base : b.base,
      max: n > 0 ? Math.max(a.max, b.max) : b.max,
      delay: (x, random) => (x < n ? a.delay(x, random) : b.delay(x - n, random)),
    },
    ([fa, fb]) => chain(fa as Backoff, n, fb as Backoff),
  );
}

/**
 * The sum of two backoffs' delays (tenacity's `wait_combine`, `wait_fixed(3) + wait_random(0, 2)`):
 * v_x = a(x) + b(x), at most 2^31 − 1 ms.
 *
 * @example
 * backoff.plus(backoff.constant({ base: 3000 }), backoff.random({ max: 2000 })); // 3 to 5 s
 */
export function plus(a: BackoffLike, b: BackoffLike): Backoff {
  const x1 = toBackoff(a, "backoff.plus: a");
  const x2 = toBackoff(b, "backoff.plus: b");
  return over(
    [x1, x2],
    {
      name: `plus(${x1.name}, ${x2.name})`,
      base: x1.base + x2.base,
      max: x1.max + x2.max,
      delay: (x, random) => inRange(x1.delay(x, random) + x2.delay(x, random)),
    },
    ([f1, f2]) => plus(f1 as Backoff, f2 as Backoff),
  );
}

/**
 * `backoff` with every delay at most `ms`: v_x = min(b(x), ms).
 *
 * @example
 * backoff.capped(backoff.fibonacci(), 10_000);
 */
export function capped(backoff: BackoffLike, ms: number): Backoff {
  const b = toBackoff(backoff, "backoff.capped: backoff");
  const cap = atLeastOrInfinity("backoff.capped: ms", ms, 0);
  return over(
    [b],
    {
      name: `capped(${b.name})`,
      base: Math.min(b.base, cap),
      max: Math.min(b.max, cap),
      delay: (x, random) => Math.min(b.delay(x, random), cap),
    },
    ([f]) => capped(f as Backoff, cap),
  );
}

/**
 * `backoff` with every delay multiplied by `k` > 0: v_x = k × b(x), at most 2^31 − 1 ms.
 *
 * @example
 * backoff.scaled(backoff.linear({ base: 1, interval: 1 }), 1000); // 1, 2, 3 … seconds
 */
export function scaled(backoff: BackoffLike, k: number): Backoff {
  const b = toBackoff(backoff, "backoff.scaled: backoff");
  if (typeof k !== "number" || !Number.isFinite(k) || k <= 0) {
    throw new OptionError("backoff.scaled: k", k, "a finite number > 0");
  }
  return over(
    [b],
    {
      name: `scaled(${b.name})`,
      base: b.base * k,
      max: b.max * k,
      delay: (x, random) => inRange(b.delay(x, random) * k),
    },
    ([f]) => scaled(f as Backoff, k),
  );
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(chain, plus, capped, scaled);
