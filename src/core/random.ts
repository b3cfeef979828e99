/**
 * Randomness is injected: every strategy draws from a `Random`, a function returning a number in [0, 1).
 * Only this module touches `Math.random`.
 */
import { OptionError } from "./errors.js";

/** A source of uniform random numbers in [0, 1), like `Math.random`. */
export type Random = () => number;

/** The default source: `Math.random`. */
export const systemRandom: Random = () => Math.random();

// Sources known to draw in [0, 1): the default and every seededRandom. Any other is checked as it draws.
const trusted = new WeakSet<Random>([systemRandom]);

/**
 * `random` itself when it is known to draw in [0, 1); otherwise a source that checks each draw and throws
 * an OptionError naming `option` for one outside it (7, -1, NaN, a string), rather than letting it turn
 * into NaN delays further on. A comparison per draw is all it costs.
 */
export function checkedRandom(random: Random, option = "random"): Random {
  if (trusted.has(random)) return random;
  const checked: Random = () => {
    const r = random();
    if (!(typeof r === "number" && r >= 0 && r < 1)) {
      throw new OptionError(option, r, "a function returning numbers in [0, 1)");
    }
    return r;
  };
  trusted.add(checked);
  return checked;
}

/**
 * The largest seed: seeds are integers in [0, MAX_SEED] (32 bits), each its own sequence. The commands and
 * `simulate({ seed })` refuse any other; `seededRandom` reduces other numbers to 32 bits (truncated, mod 2^32).
 */
export const MAX_SEED = 0xffff_ffff;

/**
 * A deterministic `Random` from a 32-bit seed (mulberry32, a public-domain generator by Tommy Ettinger):
 * the same seed always yields the same sequence. Fast, small state, good enough for jitter and simulation,
 * not for cryptography.
 *
 * @example
 * const random = seededRandom(42);
 * random(); // always the same first number for seed 42
 */
export function seededRandom(seed: number): Random {
  if (!Number.isFinite(seed)) {
    throw new TypeError(`seededRandom: seed must be a finite number; got ${String(seed)}`);
  }
  let state = Math.trunc(seed) >>> 0;
  const random: Random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  trusted.add(random);
  return random;
}

/** A uniform draw in [low, high). */
export function uniform(random: Random, low: number, high: number): number {
  return low + (high - low) * random();
}

/** A uniform integer in [0, n] (both ends included). */
export function uniformInt(random: Random, n: number): number {
  return Math.min(n, Math.floor(random() * (n + 1)));
}

/**
 * A standard normal draw, N(0, 1), by the Box–Muller transform (Box & Muller, 1958).
 * `1 - random()` keeps the logarithm's argument in (0, 1].
 */
export function standardNormal(random: Random): number {
  const u1 = 1 - random();
  const u2 = random();
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}
