import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AbortWatcher, sweep, unwatch, watch } from "../src/core/abort.js";

// Many calls watch one signal through one listener: whatever the order in which they come and go, those
// still watching when it aborts are each told once, in the order they came.
describe("the watchers of a signal", () => {
  it("are told once each, in the order they came, however others came and went before", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ who: fc.integer({ min: 0, max: 5 }), on: fc.boolean() }), { maxLength: 40 }),
        (steps) => {
          const controller = new AbortController();
          const told: number[] = [];
          const watchers: AbortWatcher[] = Array.from({ length: 6 }, (_, i) => ({
            signalAborted: () => told.push(i),
          }));
          // What a set in the order of arrival would hold.
          const expected: number[] = [];
          for (const { who, on } of steps) {
            const watcher = watchers[who] as AbortWatcher;
            if (on) {
              watch(controller.signal, watcher);
              if (!expected.includes(who)) expected.push(who);
            } else {
              unwatch(controller.signal, watcher);
              if (expected.includes(who)) expected.splice(expected.indexOf(who), 1);
            }
          }
          controller.abort();
          expect(told).toEqual(expected);
          // Told once: another abort event (there is none) or a sweep tells no one again.
          sweep();
          controller.signal.dispatchEvent(new Event("abort"));
          expect(told).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });
});
