/**
 * The robustlib example of "Software Robustness and Timeout Retry Backoff Paradigms", done with robustly:
 * exponential backoff (base 1 s, cap 32 s, multiplier 2) with full jitter, at most 5 retries within 60 s,
 * retrying only value errors and timeouts of a resource that fails at random.
 *
 *   npm run demo                           real time and Math.random: may take over half a minute
 *   npm run demo -- --seed 7               the same failures and delays on every run
 *   npm run demo -- --virtual --seed 7     on a virtual clock: virtual timestamps, finishes at once
 *
 * Either outcome (success, or failure once the retries run out) is a complete run and exits with 0;
 * a bad flag exits with 2.
 */
import { type AttemptContext, backoff, jitter, type Random, TimeoutError, wrap } from "../src/index.js";
import { seededRandom, VirtualClock } from "../src/testing.js";

const USAGE = `Usage: npm run demo -- [--seed N] [--virtual] [--help]

  --seed N    draw the resource's failures and the jitter from seededRandom(N), N an integer
              in [0, 4294967295], so that every run with the same N prints the same attempts
  --virtual   run on a VirtualClock: timestamps are virtual, starting at 12:00:00.000000,
              and the run finishes at once instead of sleeping through its backoffs
  --help      print this help`;

/** Each attempt may take this long (ms) before robustly gives up on it with a TimeoutError. */
const ATTEMPT_TIMEOUT = 1_000;

/** Where virtual time starts: noon, in ms since midnight. */
const VIRTUAL_START = 12 * 3_600_000;

/** The demo's own error kind, retried like the design note's Python ValueError. */
class ValueError extends Error {
  override readonly name = "ValueError";
}

class UsageError extends Error {}

interface Flags {
  seed: number | undefined;
  virtual: boolean;
  help: boolean;
}

function parseFlags(argv: readonly string[]): Flags {
  const flags: Flags = { seed: undefined, virtual: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--virtual") flags.virtual = true;
    else if (arg === "--help" || arg === "-h") flags.help = true;
    else if (arg === "--seed" || arg.startsWith("--seed=")) {
      const value = arg === "--seed" ? argv[++i] : arg.slice("--seed=".length);
      flags.seed = parseSeed(value);
    } else {
      throw new UsageError(`unknown option ${JSON.stringify(arg)}`);
    }
  }
  return flags;
}

function parseSeed(value: string | undefined): number {
  if (value === undefined) throw new UsageError("--seed needs a value, an integer in [0, 4294967295]");
  const seed = Number(value);
  if (!/^\d+$/.test(value) || seed > 0xffff_ffff) {
    throw new UsageError(`--seed must be an integer in [0, 4294967295]; got ${JSON.stringify(value)}`);
  }
  return seed;
}

/**
 * The resource: like the design note's example_resource_access, 30% of attempts time out and 30% of the
 * rest fail with a ValueError. A timeout here is real: the attempt never answers, and robustly's
 * per-attempt timeout aborts it with a TimeoutError.
 */
function resourceAccess(random: Random): (context: AttemptContext) => Promise<string> {
  return async function exampleResourceAccess({ signal }) {
    if (random() < 0.3) {
      return new Promise<string>((_resolve, reject) => {
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    }
    if (random() < 0.3) throw new ValueError("Simulated resource access error");
    return "Resource accessed successfully";
  };
}

/** HH:MM:SS.micro for a time of day given in ms since midnight. */
function timeOfDay(ms: number): string {
  const day = 86_400_000_000;
  const micros = ((Math.round(ms * 1000) % day) + day) % day;
  const pad = (n: number, width: number) => String(Math.floor(n)).padStart(width, "0");
  const seconds = micros / 1_000_000;
  return `${pad(seconds / 3600, 2)}:${pad((seconds % 3600) / 60, 2)}:${pad(seconds % 60, 2)}.${pad(micros % 1_000_000, 6)}`;
}

/** The local wall-clock time in ms since midnight, to the microsecond where the platform allows. */
function wallTimeOfDay(): number {
  const now = performance.timeOrigin + performance.now();
  const today = new Date(now);
  return now - new Date(today.getFullYear(), today.getMonth(), today.getDate()).getTime();
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function main(argv: readonly string[]): Promise<number> {
  let flags: Flags;
  try {
    flags = parseFlags(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`demo: ${error.message}\n\n${USAGE}\n`);
    return 2;
  }
  if (flags.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }

  const random: Random = flags.seed === undefined ? Math.random : seededRandom(flags.seed);
  const clock = flags.virtual ? new VirtualClock(VIRTUAL_START) : undefined;
  const stamp = () => `[${timeOfDay(clock === undefined ? wallTimeOfDay() : clock.now())}]`;
  const print = (line: string) => process.stdout.write(`${line}\n`);

  // The design note's access_wrapper, configured as its robustlib example is.
  const wrappedResourceAccess = wrap(resourceAccess(random), {
    timeout: ATTEMPT_TIMEOUT,
    maxRetries: 5,
    maxElapsed: 60_000,
    retryOn: [ValueError, TimeoutError],
    backoff: backoff.exponential({ base: 1_000, max: 32_000, multiplier: 2 }),
    jitter: jitter.full(),
    scale: 1,
    random,
    clock,
    onSuccess: () => print(`${stamp()} on_success called`),
    onError: (error, retries) =>
      print(`${stamp()} on_error: attempt ${retries} failed with: ${messageOf(error)}`),
  });

  const run = (async () => {
    try {
      print(await wrappedResourceAccess());
    } catch (error) {
      print(`Failed to access resource: ${messageOf(error)}`);
    }
  })();
  // On the virtual clock nothing happens until time is moved: fire every timer the run sets, in order.
  if (clock !== undefined) await clock.runAll();
  await run;
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
