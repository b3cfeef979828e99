import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Eventual } from "../src/core/invoke.js";

describe("Eventual", () => {
  it("tells a listener object (listenBy) exactly what, and when, listen tells two callbacks", () => {
    // Listeners come before or after it settles, as objects or as callbacks, in any mix and order.
    const plan = fc.record({
      before: fc.array(fc.boolean(), { maxLength: 4 }),
      after: fc.array(fc.boolean(), { maxLength: 3 }),
      fulfil: fc.boolean(),
    });
    fc.assert(
      fc.property(plan, ({ before, after, fulfil }) => {
        const heard: string[] = [];
        const eventual = new Eventual<number>();
        let n = 0;
        const add = (byObject: boolean) => {
          const name = `${byObject ? "object" : "callbacks"} ${n++}`;
          if (byObject) {
            eventual.listenBy({
              heard: (value) => heard.push(`${name} heard ${value}`),
              failed: (error) => heard.push(`${name} failed ${String(error)}`),
            });
          } else {
            eventual.listen(
              (value) => heard.push(`${name} heard ${value}`),
              (error) => heard.push(`${name} failed ${String(error)}`),
            );
          }
        };
        before.forEach(add);
        expect(heard).toEqual([]);
        if (fulfil) eventual.resolve(7);
        else eventual.reject("down");
        // Settling again changes nothing.
        eventual.resolve(8);
        after.forEach(add);
        const outcome = fulfil ? "heard 7" : "failed down";
        const names = [...before, ...after].map((byObject, i) => `${byObject ? "object" : "callbacks"} ${i}`);
        expect(heard).toEqual(names.map((name) => `${name} ${outcome}`));
      }),
    );
  });
});
