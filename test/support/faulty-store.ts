import type { Clock, Store } from "robustly";

export type Fault = "none" | "hang" | "reject";

/**
 * `inner`, with a switch that makes every operation hang (never settle) or reject, to test the fallbacks,
 * and a `latency` (ms on `clock`) before each answer, so that exchanges are under way while calls go on.
 */
export function faultyStore(
  inner: Store,
  clock?: Clock,
): Store & {
  fault: Fault;
  /** ms, or a function drawing each operation's latency. */
  latency: number | (() => number);
  conflicts: number;
  readonly calls: number;
  readonly hanging: number;
} {
  let calls = 0;
  let hanging = 0;
  const store = {
    name: "faulty",
    fault: "none" as Fault,
    latency: 0 as number | (() => number),
    /** This many writes from now answer "not written", as if another process always wrote first. */
    conflicts: 0,
    get calls() {
      return calls;
    },
    get hanging() {
      return hanging;
    },
    read(key: string) {
      calls += 1;
      if (store.fault === "hang") {
        hanging += 1;
        return new Promise<never>(() => {});
      }
      if (store.fault === "reject") return Promise.reject(new Error("store unreachable"));
      return later(() => inner.read(key));
    },
    write(key: string, version: number, value: unknown, expire: number) {
      calls += 1;
      if (store.fault === "hang") {
        hanging += 1;
        return new Promise<never>(() => {});
      }
      if (store.fault === "reject") return Promise.reject(new Error("store unreachable"));
      if (store.conflicts > 0) {
        store.conflicts -= 1;
        return inner.read(key).then((entry) => ({ written: false, entry }));
      }
      return later(() => inner.write(key, version, value, expire));
    },
    close: () => inner.close(),
  };
  /**
   * Runs `operation` half-way through `latency` ms on the clock and answers at the end, as a server half a
   * round trip away would (at once without a latency or a clock).
   */
  function later<T>(operation: () => Promise<T>): Promise<T> {
    const latency = typeof store.latency === "function" ? store.latency() : store.latency;
    if (latency <= 0 || clock === undefined) return operation();
    return new Promise<T>((resolve, reject) => {
      clock.setTimer(latency / 2, () =>
        operation().then(
          (answer) => clock.setTimer(latency / 2, () => resolve(answer)),
          (error: unknown) => clock.setTimer(latency / 2, () => reject(error)),
        ),
      );
    });
  }

  return store;
}
