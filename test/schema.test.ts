// One description per options type: the docs' tables are what the descriptions say, and every
// constructor accepts exactly the options its description lists, refusing a bad value with the words of
// the description.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import {
  adaptiveLimit,
  backoff,
  bulkhead,
  circuitBreaker,
  jitter,
  memoryStore,
  OptionError,
  ResponsiveBackoff,
  rateLimiter,
  retryBudget,
  robustFetch,
  steps,
  wrap,
} from "robustly";
import { inProcessWorker, supervise } from "robustly/supervisor";
import { describe, expect, it } from "vitest";
import { OPTIONS_DOC, optionsDoc, RETRY_DOC, retryDocWithTable, SCHEMAS } from "../scripts/options-docs.js";
import { RESPONSIVE_CHECKS } from "../src/adaptive/checks.js";
import { RESPONSIVE_SCHEMA } from "../src/adaptive/schema.js";
import { BACKOFF_CHECKS } from "../src/backoff/checks.js";
import { BACKOFF_SCHEMAS } from "../src/backoff/schema.js";
import { BREAKER_CHECKS } from "../src/breaker/checks.js";
import { BREAKER_SCHEMA } from "../src/breaker/schema.js";
import { RATIO_BUDGET_CHECKS, TOKEN_BUDGET_CHECKS } from "../src/budget/checks.js";
import { RATIO_BUDGET_SCHEMA, TOKEN_BUDGET_SCHEMA } from "../src/budget/schema.js";
import { BULKHEAD_CHECKS } from "../src/bulkhead/checks.js";
import { BULKHEAD_SCHEMA } from "../src/bulkhead/schema.js";
import type { Checks } from "../src/core/schema.js";
import { allowed, type Kind, keysOf, type Schema } from "../src/core/schema.js";
import { RENAMED } from "../src/core/validate.js";
import { HEDGE_CHECKS } from "../src/hedge/checks.js";
import { resolveHedge } from "../src/hedge/hedge.js";
import { HEDGE_SCHEMA } from "../src/hedge/schema.js";
import { FETCH_SCHEMA } from "../src/http/schema.js";
import { JITTER_CHECKS } from "../src/jitter/checks.js";
import { JITTER_SCHEMAS } from "../src/jitter/schema.js";
import { LIMIT_CHECKS } from "../src/limit/checks.js";
import { LIMIT_SCHEMA } from "../src/limit/schema.js";
import { RETRY_CHECKS, RETRY_STEP_CHECKS, RULE_CHECKS } from "../src/policy/checks.js";
import { RETRY_SCHEMA, RETRY_STEP_SCHEMA, RULE_SCHEMA } from "../src/policy/schema.js";
import { RATE_LIMITER_CHECKS } from "../src/ratelimit/checks.js";
import { RATE_LIMITER_SCHEMA } from "../src/ratelimit/schema.js";
import { SHARING_SCHEMA_CHECKS } from "../src/store/checks.js";
import { SHARING_FIELDS, SHARING_SCHEMA } from "../src/store/schema.js";
import { SUPERVISOR_SCHEMA } from "../src/supervisor/schema.js";
import { TIMEOUT_CHECKS } from "../src/timeout/checks.js";
import { TIMEOUT_SCHEMA } from "../src/timeout/schema.js";

/** Builds what takes a schema's options, with `options` over the least it needs. */
const makers: [Schema, (options: Record<string, unknown>) => unknown][] = [
  [RETRY_SCHEMA, (o) => wrap(async () => 1, o)],
  [RETRY_STEP_SCHEMA, (o) => steps.retry(o)],
  [RULE_SCHEMA, (o) => wrap(async () => 1, { rules: [{ when: TypeError, ...o }] })],
  ...Object.entries(BACKOFF_SCHEMAS)
    .filter(([name]) => name !== "none")
    .map(([name, schema]): [Schema, (o: Record<string, unknown>) => unknown] => [
      schema,
      (o) =>
        (backoff as unknown as Record<string, (o: unknown) => unknown>)[name]?.(
          name === "random" ? { max: 10, ...o } : o,
        ),
    ]),
  ...Object.entries(JITTER_SCHEMAS)
    .filter(([name]) => name !== "none" && name !== "decorrelated")
    .map(([name, schema]): [Schema, (o: Record<string, unknown>) => unknown] => [
      schema,
      (o) => (jitter as Record<string, (o: unknown) => unknown>)[name]?.(o),
    ]),
  [TIMEOUT_SCHEMA, (o) => steps.timeout({ ms: 1, ...o } as never)],
  [BREAKER_SCHEMA, (o) => circuitBreaker(o)],
  [RATIO_BUDGET_SCHEMA, (o) => retryBudget(o)],
  [TOKEN_BUDGET_SCHEMA, (o) => retryBudget({ maxTokens: 10, tokenRatio: 0.1, ...o } as never)],
  [BULKHEAD_SCHEMA, (o) => bulkhead({ limit: 1, ...o } as never)],
  [RATE_LIMITER_SCHEMA, (o) => rateLimiter({ rate: 1, ...o } as never)],
  [LIMIT_SCHEMA, (o) => adaptiveLimit(o as never)],
  // hedge() rejects rather than throws: its options are checked by resolveHedge, synchronously.
  [HEDGE_SCHEMA, (o) => resolveHedge({ delay: 1, ...o } as never)],
  [RESPONSIVE_SCHEMA, (o) => new ResponsiveBackoff(o)],
  [SUPERVISOR_SCHEMA, (o) => supervise({ worker: inProcessWorker(() => (n: number) => n), ...o } as never)],
];

function caught(make: () => unknown): OptionError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionError);
    return error as OptionError;
  }
  throw new Error("no OptionError");
}

/** The known options an unknown one's error lists. */
function listed(make: (o: Record<string, unknown>) => unknown): string[] {
  const error = caught(() => make({ zzUnknownOption: 1 }));
  const list = /known options \(([^)]*)\)/.exec(error.message)?.[1];
  expect(list, error.message).toBeDefined();
  return (list as string).split(", ");
}

describe("the docs' tables", () => {
  it("docs/options.md is what the descriptions say (npm run docs:options rewrites it)", () => {
    expect(readFileSync(OPTIONS_DOC, "utf8")).toBe(optionsDoc());
  });

  it("the retry page's table of retry's options is what the description says", () => {
    const page = readFileSync(RETRY_DOC, "utf8");
    expect(page).toBe(retryDocWithTable(page));
  });

  it("every options type has a section, and every option a row", () => {
    const doc = readFileSync(OPTIONS_DOC, "utf8");
    for (const schema of SCHEMAS) {
      expect(doc).toContain(`## ${schema.name}\n`);
      for (const key of keysOf(schema)) expect(doc).toContain(`| \`${key}\` |`);
    }
  });
});

describe("each constructor takes exactly the options its description lists", () => {
  it.each(makers.map(([schema, make]) => [schema.name, schema, make] as const))(
    "%s",
    (_name, schema, make) => {
      expect(new Set(listed(make))).toEqual(new Set(keysOf(schema)));
    },
  );

  it("robustFetch: its own options and retry's", async () => {
    const error = await robustFetch("http://127.0.0.1:1/", {}, { zzUnknownOption: 1 } as never).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OptionError);
    const list = /known options \(([^)]*)\)/.exec((error as Error).message)?.[1]?.split(", ") ?? [];
    const own = keysOf(FETCH_SCHEMA).filter((key) => !keysOf(RETRY_SCHEMA).includes(key));
    expect(new Set([...list, ...own])).toEqual(new Set(keysOf(FETCH_SCHEMA)));
  });
});

/** A value the kind refuses, when there is an obvious one. */
function refused(kind: Kind): fc.Arbitrary<unknown> | undefined {
  switch (kind.type) {
    case "number":
      return fc.oneof(
        fc.constant(Number.NaN),
        fc.constant("1"),
        fc.constant(kind.exclusive ? kind.min : kind.min - 1),
        ...(kind.max === undefined ? [] : [fc.constant(kind.max + 1)]),
      );
    case "integer":
      return fc.oneof(fc.constant(kind.min + 0.5), fc.constant(kind.min - 1), fc.constant(Number.NaN));
    case "limit":
      return fc.oneof(fc.constant(Number.NaN), fc.constant("3"), ...(kind.integer ? [fc.constant(1.5)] : []));
    case "boolean":
      return fc.constantFrom("yes", 1, null);
    case "enum":
      return fc.constantFrom("bogus", 3);
    case "function":
      return fc.constantFrom(42, "f", {});
    default:
      return undefined;
  }
}

describe("a bad value is refused in the words of the description", () => {
  for (const [schema, make] of makers) {
    for (const [key, field] of Object.entries(schema.fields)) {
      const bad = refused(field.kind);
      if (bad === undefined) continue;
      it(`${schema.name}: ${key} (${allowed(field.kind)})`, () => {
        fc.assert(
          fc.property(bad, (value) => {
            // A sharing option is checked once a store is given (without one it is refused as such).
            const shared = key in SHARING_FIELDS && key !== "store" ? { store: memoryStore(), key: "k" } : {};
            const error = caught(() => make({ ...shared, [key]: value }));
            expect(error.message).toContain(`must be ${allowed(field.kind)}; got`);
          }),
        );
      });
    }
  }
});

describe("the glossary", () => {
  const glossary = readFileSync(new URL("../docs/glossary.md", import.meta.url), "utf8");
  const known = new Set(SCHEMAS.flatMap((schema) => keysOf(schema)));

  it("names only options that exist: every name in its first column is an option of some options type", () => {
    const names = glossary
      .split("\n")
      .filter((line) => line.startsWith("| ") && !line.startsWith("| robustly") && !line.startsWith("| ---"))
      .flatMap((line) =>
        [...(line.split(" | ")[0] ?? "").matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1] as string),
      );
    expect(names.length).toBeGreaterThan(20);
    const notOptions = ["PermanentError", "giveUp"];
    expect(names.filter((name) => !known.has(name) && !notOptions.includes(name))).toEqual([]);
  });

  it("gives every renamed option's new name", () => {
    for (const [old, now] of Object.entries(RENAMED)) {
      expect(glossary).toContain(`\`${old}\``);
      expect(known.has(now)).toBe(true);
      expect(glossary).toContain(`\`${now}\``);
    }
  });
});

describe("the checks that run when options are given are the descriptions' own", () => {
  const pairs: [Schema, Checks | undefined][] = [
    [RETRY_SCHEMA, RETRY_CHECKS],
    [RETRY_STEP_SCHEMA, RETRY_STEP_CHECKS],
    [RULE_SCHEMA, RULE_CHECKS],
    [TIMEOUT_SCHEMA, TIMEOUT_CHECKS],
    [BREAKER_SCHEMA, BREAKER_CHECKS],
    [RATIO_BUDGET_SCHEMA, RATIO_BUDGET_CHECKS],
    [TOKEN_BUDGET_SCHEMA, TOKEN_BUDGET_CHECKS],
    [BULKHEAD_SCHEMA, BULKHEAD_CHECKS],
    [RATE_LIMITER_SCHEMA, RATE_LIMITER_CHECKS],
    [LIMIT_SCHEMA, LIMIT_CHECKS],
    [HEDGE_SCHEMA, HEDGE_CHECKS],
    [RESPONSIVE_SCHEMA, RESPONSIVE_CHECKS],
    [SHARING_SCHEMA, SHARING_SCHEMA_CHECKS],
    ...Object.entries(BACKOFF_SCHEMAS).map(([name, schema]): [Schema, Checks | undefined] => [
      schema,
      BACKOFF_CHECKS[name],
    ]),
    ...Object.entries(JITTER_SCHEMAS).map(([name, schema]): [Schema, Checks | undefined] => [
      schema,
      JITTER_CHECKS[name],
    ]),
  ];
  it.each(pairs.map(([schema, checks]) => [schema.name, schema, checks] as const))(
    "%s: the same options in the same order, each taking the same kind, required alike, under the same names",
    (_, schema, checks) => {
      expect(checks).toBeDefined();
      const checked = checks as Checks;
      expect(keysOf(checked)).toEqual(keysOf(schema));
      for (const key of keysOf(schema)) {
        expect(checked.fields[key]?.kind, key).toEqual(schema.fields[key]?.kind);
        expect(checked.fields[key]?.required === true, key).toBe(schema.fields[key]?.required === true);
        expect(checked.label(key)).toBe(schema.label(key));
      }
      expect([checked.name, checked.where]).toEqual([schema.name, schema.where]);
      expect(Object.keys(BACKOFF_CHECKS)).toEqual(Object.keys(BACKOFF_SCHEMAS));
      expect(Object.keys(JITTER_CHECKS)).toEqual(Object.keys(JITTER_SCHEMAS));
    },
  );
});
