import type { Store } from "robustly";

export type Fault = "none" | "hang" | "reject";

/** `inner`, with a switch that makes every operation hang (never settle) or reject, to test the fallbacks. */
export function faultyStore(
  inner: Store,
): Store & { fault: Fault; readonly calls: number; readonly hanging: number } {
  let calls = 0;
  let hanging = 0;
  const store = {
    name: "faulty",
    fault: "none" as Fault,
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
      return inner.read(key);
    },
    write(key: string, version: number, value: unknown, expire: number) {
      calls += 1;
      if (store.fault === "hang") {
        hanging += 1;
        return new Promise<never>(() => {});
      }
      if (store.fault === "reject") return Promise.reject(new Error("store unreachable"));
      return inner.write(key, version, value, expire);
    },
    close: () => inner.close(),
  };
  return store;
}
