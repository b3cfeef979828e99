// What a user of ResponsiveBackoff and throttle relies on: the options and arguments it refuses and how it
// says so, its documented defaults, the exact delays at the boundaries and under the spread, the "change"
// events, and how a delay shared through a store moves, coalesces and refuses junk.
import fc from "fast-check";
import {
  MAX_SKEW,
  memoryStore,
  OptionError,
  RESPONSIVE_DEFAULTS,
  ResponsiveBackoff,
  type ResponsiveEvents,
  type Store,
  throttle,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { faultyStore } from "./support/faulty-store.js";

type Change = ResponsiveEvents["change"];

/** The "change" events `pace` emits, as they come. */
function changes(pace: ResponsiveBackoff): Change[] {
  const seen: Change[] = [];
  pace.on("change", (change) => seen.push(change));
  return seen;
}

/** A random source that always draws `value`. */
const always = (value: number) => () => value;

/** A fresh controller's state with `changes` over it. */
const stateWith = (changes: object) => ({ ...new ResponsiveBackoff().snapshot(), ...changes });

/** A memory store on `clock` holding `value` under the responsive backoff's key "k", as another process left it. */
async function storeHolding(clock: VirtualClock, value: unknown): Promise<Store> {
  const store = memoryStore({ clock });
  await store.write("responsive:k", 0, value, 86_400_000);
  return store;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("ResponsiveBackoff: what it is and its defaults", () => {
  it("reports its name as a backoff strategy: responsive", () => {
    expect(new ResponsiveBackoff().name).toBe("responsive");
  });

  it("documents its defaults, frozen, and a controller made without options follows them", () => {
    expect(RESPONSIVE_DEFAULTS).toEqual({
      base: 500,
      max: 900_000,
      spread: 0.3,
      maxSpread: 120_000,
      upMultiplier: 1.5,
      downMultiplier: 0.9,
      downThreshold: 10,
    });
    expect(Object.isFrozen(RESPONSIVE_DEFAULTS)).toBe(true);
    // A draw of 0 gives the low end of the spread: i − δ.
    const low = new ResponsiveBackoff({ random: always(0) });
    expect(low.base).toBe(500);
    expect(low.max).toBe(900_000);
    expect([low.failure(), low.failure()]).toEqual([500, 750 - 0.3 * 750]);
    // δ is capped at maxSpread (2 min): 600 000 × 1.5 = 900 000, less 120 000.
    const wide = new ResponsiveBackoff({ random: always(0) });
    wide.restore(stateWith({ current: 600_000 }));
    expect(wide.failure()).toBe(780_000);
    // A draw in the middle gives i itself, held to max.
    const capped = new ResponsiveBackoff({ random: always(0.5) });
    capped.restore(stateWith({ current: 800_000 }));
    expect(capped.failure()).toBe(900_000);
  });

  it("without a random source of its own, draws the spread from Math.random", () => {
    const draws = vi.spyOn(Math, "random").mockReturnValue(0);
    const pace = new ResponsiveBackoff();
    expect(pace.failure()).toBe(500); // from 0 to base: nothing drawn
    expect(pace.failure()).toBe(525);
    expect(draws).toHaveBeenCalledTimes(1);
  });
});

describe("ResponsiveBackoff: a wrong option fails at once, naming it, the value and what is allowed", () => {
  it("a clock without now() or without setTimer()", () => {
    const expected =
      /^ResponsiveBackoff: clock must be a Clock with now\(\) and setTimer\(ms, callback\); got /;
    for (const clock of [{ now: () => 0 }, { setTimer: () => () => {} }, 5]) {
      expect(() => new ResponsiveBackoff({ clock: clock as never })).toThrow(OptionError);
      expect(() => new ResponsiveBackoff({ clock: clock as never })).toThrow(expected);
    }
    expect(() => new ResponsiveBackoff({ clock: 5 as never })).toThrow(/; got 5$/);
  });

  it("a clock of null is refused, as retry refuses it, not taken for the real clock", () => {
    expect(() => new ResponsiveBackoff({ clock: null as never })).toThrow(
      /^ResponsiveBackoff: clock must be a Clock with now\(\) and setTimer\(ms, callback\); got null$/,
    );
  });

  it("a random that is not a function, or one that draws outside [0, 1) when it is first used", () => {
    expect(() => new ResponsiveBackoff({ random: 0.5 as never })).toThrow(
      /^ResponsiveBackoff: random must be a function; got 0\.5$/,
    );
    const pace = new ResponsiveBackoff({ random: always(1) });
    expect(pace.failure()).toBe(500); // from 0 to base: nothing drawn yet
    expect(() => pace.failure()).toThrow(OptionError);
    expect(() => pace.failure()).toThrow(
      /^ResponsiveBackoff: random must be a function returning numbers in \[0, 1\); got 1$/,
    );
  });

  it("max below base, naming the base it is compared with; max equal to base is allowed", () => {
    expect(() => new ResponsiveBackoff({ max: 499 })).toThrow(
      /^ResponsiveBackoff: max must be >= base \(500\); got 499$/,
    );
    const flat = new ResponsiveBackoff({ base: 100, max: 100 });
    expect([flat.failure(), flat.failure(), flat.failure()]).toEqual([100, 100, 100]);
  });

  it("restore() refuses unknown keys and a damaged state, naming the key", () => {
    const pace = new ResponsiveBackoff();
    expect(() => pace.restore({ ...pace.snapshot(), extra: 1 } as never)).toThrow(
      /^ResponsiveBackoff\.restore\.extra must be one of the known options \(current, successes, invocations, wentUp, wentDown, slept, totalSleep\); unknown option; got 1$/,
    );
    expect(() => pace.restore(null as never)).toThrow(
      /^ResponsiveBackoff\.restore must be an object; got null$/,
    );
    expect(() => pace.restore({ ...pace.snapshot(), wentUp: -1 })).toThrow(
      /^ResponsiveBackoff\.restore: wentUp must be an integer >= 0; got -1$/,
    );
    // Nothing was taken from the refused states.
    expect(pace.snapshot()).toEqual(new ResponsiveBackoff().snapshot());
  });

  it("throttle given a non-function or something other than a ResponsiveBackoff", () => {
    const pace = new ResponsiveBackoff();
    expect(() => throttle("put" as never, pace)).toThrow(OptionError);
    expect(() => throttle("put" as never, pace)).toThrow(/^throttle: fn must be a function; got "put"$/);
    const cases: [unknown, string][] = [
      [{}, "{}"],
      [undefined, "undefined"],
      // The class itself, not one made with new.
      [ResponsiveBackoff, "function ResponsiveBackoff"],
    ];
    for (const [controller, shown] of cases) {
      expect(() => throttle(() => 1, controller as never)).toThrow(OptionError);
      expect(() => throttle(() => 1, controller as never)).toThrow(
        `throttle: controller must be a ResponsiveBackoff; got ${shown}`,
      );
    }
  });
});

describe("ResponsiveBackoff: the delays at the boundaries", () => {
  it("rises from 0 to base, then by upMultiplier, capped at max", () => {
    const pace = new ResponsiveBackoff({ base: 100, max: 200, spread: 0 });
    const events = changes(pace);
    expect([pace.failure(), pace.failure(), pace.failure()]).toEqual([100, 150, 200]);
    expect(events).toEqual([
      { direction: "up", from: 0, to: 100 },
      { direction: "up", from: 100, to: 150 },
      { direction: "up", from: 150, to: 200 },
    ]);
    expect(pace.failure()).toBe(200);
    expect(pace.metrics().current).toBe(200);
  });

  it("a shrinking delay that lands exactly on base stays there; only below base does it drop to 0", () => {
    const pace = new ResponsiveBackoff({ base: 100, spread: 0, downThreshold: 1, downMultiplier: 0.5 });
    const events = changes(pace);
    pace.restore(stateWith({ current: 200 }));
    expect(pace.success()).toBe(100);
    expect(pace.success()).toBe(0); // 50 < base
    expect(pace.success()).toBe(0);
    expect(events).toEqual([
      { direction: "down", from: 200, to: 100 },
      { direction: "down", from: 100, to: 0 },
    ]);
    expect(pace.metrics()).toMatchObject({ current: 0, wentDown: 2 });
  });

  it("with coalesce, does not rise again while within the current delay of the last raise, on any clock", async () => {
    // A clock far from 0, as the real one is.
    const clock = new VirtualClock(1_700_000_000_000);
    const pace = new ResponsiveBackoff({ clock, base: 100, spread: 0, coalesce: true });
    const events = changes(pace);
    expect(pace.failure()).toBe(100);
    await clock.advance(99);
    expect(pace.failure()).toBe(100);
    await clock.advance(1);
    expect(pace.failure()).toBe(150);
    await clock.advance(149);
    expect(pace.failure()).toBe(150);
    expect(events).toEqual([
      { direction: "up", from: 0, to: 100 },
      { direction: "up", from: 100, to: 150 },
    ]);
    expect(pace.metrics()).toMatchObject({ wentUp: 2, invocations: 4, slept: 4 });
  });
});

describe("ResponsiveBackoff: the spread", () => {
  it("with spread 0 gives each delay exactly and never consults the random source", () => {
    let draws = 0;
    const pace = new ResponsiveBackoff({
      base: 100,
      spread: 0,
      downThreshold: 1,
      random: () => {
        draws += 1;
        return 0.9;
      },
    });
    expect([pace.failure(), pace.failure(), pace.failure()]).toEqual([100, 150, 225]);
    expect(pace.success()).toBe(202.5);
    expect(draws).toBe(0);
  });

  it("draws each new delay in [i − δ, i + δ], δ = spread × i: the ends and the middle", () => {
    const secondDelay = (draw: number) => {
      const pace = new ResponsiveBackoff({ base: 100, upMultiplier: 2, spread: 0.5, random: always(draw) });
      pace.failure();
      return pace.failure(); // i = 200, δ = 100
    };
    expect([secondDelay(0), secondDelay(0.5), secondDelay(0.75)]).toEqual([100, 200, 250]);
  });

  it("caps δ at maxSpread", () => {
    const secondDelay = (draw: number) => {
      const pace = new ResponsiveBackoff({
        base: 100,
        upMultiplier: 2,
        spread: 1,
        maxSpread: 30,
        random: always(draw),
      });
      pace.failure();
      return pace.failure(); // i = 200, δ = min(200, 30)
    };
    expect([secondDelay(0), secondDelay(0.5), secondDelay(0.75)]).toEqual([170, 200, 215]);
  });

  it("spreads a shrinking delay the same way", () => {
    const shrunk = (draw: number) => {
      const pace = new ResponsiveBackoff({
        base: 100,
        spread: 0.5,
        downThreshold: 1,
        downMultiplier: 0.5,
        random: always(draw),
      });
      pace.restore(stateWith({ current: 1000 }));
      return pace.success(); // i = 500, δ = 250
    };
    expect([shrunk(0), shrunk(0.5), shrunk(0.75)]).toEqual([250, 500, 625]);
  });

  it("puts a rising delay at i − δ + 2δ × draw, δ = min(spread × i, maxSpread), held to max (property)", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1, max: 1e6, noNaN: true }),
        fc.double({ min: 1, max: 10, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (base, upMultiplier, spread, maxSpread, draw) => {
          const max = base * 100;
          const pace = new ResponsiveBackoff({
            base,
            max,
            upMultiplier,
            spread,
            maxSpread,
            random: always(draw),
          });
          expect(pace.failure()).toBe(base);
          const i = base * upMultiplier;
          const delta = Math.min(spread * i, maxSpread);
          const drawn = spread === 0 ? i : i - delta + 2 * delta * draw;
          expect(pace.failure()).toBe(Math.min(drawn, max));
        },
      ),
    );
  });
});

describe("ResponsiveBackoff: waiting", () => {
  it("a wait of 0 resolves at once, with or without a signal, and sets no timer", async () => {
    const clock = new VirtualClock();
    const pace = new ResponsiveBackoff({ clock });
    const bare = pace.sleepOnSuccess();
    const signalled = pace.sleepOnSuccess(new AbortController().signal);
    expect(clock.pending).toBe(0);
    await expect(bare).resolves.toBeUndefined();
    await expect(signalled).resolves.toBeUndefined();
    expect(clock.now()).toBe(0);
  });

  it("a wait of 0 still rejects with the reason when the signal is already aborted", async () => {
    const clock = new VirtualClock();
    const pace = new ResponsiveBackoff({ clock });
    const reason = new Error("stopped");
    await expect(pace.sleepOnSuccess(AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(clock.pending).toBe(0);
  });

  it("throttle hands back the value at once while the delay is 0", async () => {
    const clock = new VirtualClock();
    const put = throttle(async (row: string) => `put ${row}`, new ResponsiveBackoff({ clock }));
    expect(await put("a")).toBe("put a");
    expect(clock.now()).toBe(0);
  });
});

describe("ResponsiveBackoff shared through a store", () => {
  it("emits a change when the fleet's delay moves it, with its direction, and none while it stays", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const options = { base: 100, spread: 0, downThreshold: 1, downMultiplier: 0.5, store, key: "k", clock };
    const failing = new ResponsiveBackoff(options);
    const watching = new ResponsiveBackoff(options);
    await Promise.all([failing.ready(), watching.ready()]);
    const events = changes(watching);
    failing.failure();
    await clock.advance(200);
    expect(watching.metrics().current).toBe(100);
    expect(events).toEqual([{ direction: "up", from: 0, to: 100 }]);
    // Exchanges that change nothing announce nothing.
    await clock.advance(500);
    expect(events).toHaveLength(1);
    failing.success(); // 50 < base: back to 0
    await clock.advance(200);
    expect(watching.metrics().current).toBe(0);
    expect(events).toEqual([
      { direction: "up", from: 0, to: 100 },
      { direction: "down", from: 100, to: 0 },
    ]);
    await Promise.all([failing.close(), watching.close()]);
  });

  it("with coalesce, failures of one burst seen by several processes raise the fleet's delay once", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const options = { base: 100, spread: 0, coalesce: true, store, key: "k", clock };
    const fleet = [
      new ResponsiveBackoff(options),
      new ResponsiveBackoff(options),
      new ResponsiveBackoff(options),
    ];
    await Promise.all(fleet.map((p) => p.ready()));
    for (const pace of fleet) expect(pace.failure()).toBe(100);
    await clock.advance(200);
    for (const pace of fleet)
      expect(pace.metrics()).toMatchObject({ current: 100, wentUp: 1, invocations: 3 });
    await Promise.all(fleet.map((p) => p.close()));
    expect((await store.read("responsive:k")).value).toMatchObject({
      state: { current: 100, wentUp: 1, invocations: 3 },
    });
  });

  it("with coalesce, a process that learned of a raise elsewhere counts its own failures within that delay as the same burst", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const options = { base: 1000, spread: 0, coalesce: true, store, key: "k", clock, syncEvery: 10 };
    const first = new ResponsiveBackoff(options);
    const second = new ResponsiveBackoff(options);
    await Promise.all([first.ready(), second.ready()]);
    first.failure();
    await clock.advance(30);
    expect(second.metrics()).toMatchObject({ current: 1000, wentUp: 1 });
    // Well within 1000 ms of the raise: part of that burst.
    expect(second.failure()).toBe(1000);
    expect(second.metrics()).toMatchObject({ current: 1000, wentUp: 1 });
    await clock.advance(30);
    expect(first.metrics()).toMatchObject({ current: 1000, wentUp: 1, invocations: 2 });
    // Once the delay has passed since the raise, a failure is a new burst.
    await clock.advance(1000);
    expect(second.failure()).toBe(1500);
    await Promise.all([first.close(), second.close()]);
  });

  it("takes a last raise dated later than any process could have made it as now + MAX_SKEW", async () => {
    const start = 1_000_000;
    const clock = new VirtualClock(start);
    const store = await storeHolding(clock, { state: stateWith({ current: 1000 }), raisedAt: 1e300 });
    const pace = new ResponsiveBackoff({ base: 100, spread: 0, coalesce: true, store, key: "k", clock });
    await pace.ready();
    // The raise counts as made at start + MAX_SKEW: failures within 1000 ms of that are its burst.
    await clock.advance(MAX_SKEW + 999);
    expect(pace.failure()).toBe(1000);
    await clock.advance(1);
    expect(pace.failure()).toBe(1500);
    await pace.close();
  });

  it("raises a delay of 0 to base on the first failure, though the fleet's last raise is dated a little ahead of this process", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = await storeHolding(clock, {
      state: stateWith({ wentUp: 1, wentDown: 1 }),
      raisedAt: 1_000_500,
    });
    const pace = new ResponsiveBackoff({ base: 100, spread: 0, coalesce: true, store, key: "k", clock });
    await pace.ready();
    expect(pace.metrics().current).toBe(0);
    expect(pace.failure()).toBe(100);
    expect(pace.metrics()).toMatchObject({ current: 100, wentUp: 2 });
    await pace.close();
  });

  it("keeps in its own view what it saw while an exchange was under way, announcing each change once", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    const store = faultyStore(inner, clock);
    store.latency = 20; // each store operation answers 20 ms after it is sent
    const pace = new ResponsiveBackoff({
      base: 10,
      spread: 0,
      downThreshold: 1,
      downMultiplier: 0.5,
      store,
      key: "k",
      clock,
    });
    const events = changes(pace);
    const ready = pace.ready();
    await clock.advance(40);
    await ready;
    /** Calls `act` once the next exchange has sent its first operation, and lets that exchange land. */
    const duringNextExchange = async (act: () => void) => {
      const sent = store.calls;
      while (store.calls === sent) await clock.advance(1);
      act();
      await clock.advance(40);
    };
    const shared = async () => ((await inner.read("responsive:k")).value as { state: object }).state;

    await duringNextExchange(() => expect(pace.failure()).toBe(10));
    // The exchange took the fleet's delay, without that failure; the process still counts it.
    expect(await shared()).toMatchObject({ current: 0, wentUp: 0 });
    expect(pace.metrics()).toMatchObject({ current: 10, wentUp: 1, invocations: 1 });
    await clock.advance(100);
    expect(await shared()).toMatchObject({ current: 10, wentUp: 1 });

    expect(pace.failure()).toBe(15);
    await clock.advance(150);
    expect(await shared()).toMatchObject({ current: 15, wentUp: 2 });

    await duringNextExchange(() => expect(pace.success()).toBe(0)); // 7.5 < base
    expect(await shared()).toMatchObject({ current: 15, wentDown: 0 });
    expect(pace.metrics()).toMatchObject({ current: 0, wentUp: 2, wentDown: 1, invocations: 3 });
    expect(events).toEqual([
      { direction: "up", from: 0, to: 10 },
      { direction: "up", from: 10, to: 15 },
      { direction: "down", from: 15, to: 0 },
    ]);
    const closed = pace.close();
    await clock.advance(40);
    await closed;
    expect(await shared()).toMatchObject({ current: 0, wentUp: 2, wentDown: 1, invocations: 3 });
  });

  it("does not replay into the fleet's delay the failures it saw alone while the store was down", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }));
    const pace = new ResponsiveBackoff({ base: 100, spread: 0, store, key: "k", clock });
    const seen: string[] = [];
    pace.on("store-down", () => seen.push("down"));
    pace.on("store-up", () => seen.push("up"));
    await pace.ready();
    store.fault = "reject";
    await clock.advance(100);
    expect(seen).toEqual(["down"]);
    expect([pace.failure(), pace.failure()]).toEqual([100, 150]);
    store.fault = "none";
    await clock.advance(2000);
    expect(seen).toEqual(["down", "up"]);
    // The fleet's delay wins.
    expect(pace.metrics()).toMatchObject({ current: 0, wentUp: 0 });
    await pace.close();
    expect((await store.read("responsive:k")).value).toMatchObject({ state: { current: 0, wentUp: 0 } });
  });

  describe("refuses a shared state that is not one, reports why, and starts afresh", () => {
    const shared = /^ResponsiveBackoff: shared state must be \{ state, raisedAt \}; got /;
    const cases: [string, unknown, string | RegExp][] = [
      ["a string", "junk", 'ResponsiveBackoff: shared state must be { state, raisedAt }; got "junk"'],
      ["null", null, "ResponsiveBackoff: shared state must be { state, raisedAt }; got null"],
      ["no state", { raisedAt: null }, shared],
      ["a state that is not an object", { state: 7, raisedAt: null }, shared],
      [
        "a damaged state",
        { state: stateWith({ current: "soon" }), raisedAt: null },
        'ResponsiveBackoff.restore: current must be a finite number >= 0; got "soon"',
      ],
      [
        "a raisedAt that is not a number",
        { state: stateWith({}), raisedAt: "soon" },
        'ResponsiveBackoff: raisedAt must be a finite number >= -Infinity; got "soon"',
      ],
      [
        "no raisedAt",
        { state: stateWith({}) },
        "ResponsiveBackoff: raisedAt must be a finite number >= -Infinity; got undefined",
      ],
    ];

    it.each(cases)("%s", async (_what, junk, reason) => {
      const clock = new VirtualClock(1_000_000);
      const store = await storeHolding(clock, junk);
      const pace = new ResponsiveBackoff({ base: 100, spread: 0, store, key: "k", clock });
      const reasons: string[] = [];
      pace.on("store-corrupt", (event) => reasons.push(event.reason));
      await pace.ready();
      expect(reasons).toHaveLength(1);
      if (typeof reason === "string") expect(reasons[0]).toBe(reason);
      else expect(reasons[0]).toMatch(reason);
      expect(pace.snapshot()).toEqual(new ResponsiveBackoff().snapshot());
      expect((await store.read("responsive:k")).value).toEqual({ state: stateWith({}), raisedAt: null });
      await pace.close();
    });

    it("and takes one that is, a last raise of null or a number", async () => {
      for (const raisedAt of [null, 999_900]) {
        const clock = new VirtualClock(1_000_000);
        const store = await storeHolding(clock, { state: stateWith({ current: 200, wentUp: 2 }), raisedAt });
        const pace = new ResponsiveBackoff({ base: 100, spread: 0, store, key: "k", clock });
        const reasons: string[] = [];
        pace.on("store-corrupt", (event) => reasons.push(event.reason));
        await pace.ready();
        expect(reasons).toEqual([]);
        expect(pace.metrics()).toMatchObject({ current: 200, wentUp: 2 });
        await pace.close();
      }
    });
  });
});

describe("ResponsiveBackoff's change event", () => {
  it("is told only of a change: a failure or a success that leaves the delay at max tells nothing", () => {
    const pace = new ResponsiveBackoff({
      base: 100,
      max: 200,
      spread: 0,
      upMultiplier: 2,
      downMultiplier: 1,
      downThreshold: 1,
    });
    const changes: unknown[] = [];
    pace.on("change", (change) => changes.push(change));
    expect([pace.failure(), pace.failure(), pace.failure(), pace.success()]).toEqual([100, 200, 200, 200]);
    expect(changes).toEqual([
      { direction: "up", from: 0, to: 100 },
      { direction: "up", from: 100, to: 200 },
    ]);
  });
});
