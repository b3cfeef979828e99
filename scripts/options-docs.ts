/**
 * The docs' option tables, read off the options' descriptions (the `schema.ts` files under `src/`):
 * `docs/options.md` whole, and the table of `retry`'s options in `docs/retry.md`. `npm run docs:options`
 * writes them; a test fails when what is written differs from what the descriptions say.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { RESPONSIVE_SCHEMA } from "../src/adaptive/schema.js";
import { BACKOFF_SCHEMAS } from "../src/backoff/schema.js";
import { BREAKER_SCHEMA } from "../src/breaker/schema.js";
import { RATIO_BUDGET_SCHEMA, TOKEN_BUDGET_SCHEMA } from "../src/budget/schema.js";
import { BULKHEAD_SCHEMA } from "../src/bulkhead/schema.js";
import { optionsTable, type Schema } from "../src/core/schema.js";
import { HEDGE_SCHEMA } from "../src/hedge/schema.js";
import { FETCH_SCHEMA } from "../src/http/schema.js";
import { JITTER_SCHEMAS } from "../src/jitter/schema.js";
import { LIMIT_SCHEMA } from "../src/limit/schema.js";
import { RETRY_SCHEMA, RETRY_STEP_SCHEMA, RULE_SCHEMA } from "../src/policy/schema.js";
import { RATE_LIMITER_SCHEMA } from "../src/ratelimit/schema.js";
import { SIMULATE_SCHEMA } from "../src/sim/schema.js";
import { SUPERVISOR_SCHEMA } from "../src/supervisor/schema.js";
import { TIMEOUT_SCHEMA } from "../src/timeout/schema.js";

/** Every options type, in the order the docs list them. */
export const SCHEMAS: readonly Schema[] = [
  RETRY_SCHEMA,
  RULE_SCHEMA,
  RETRY_STEP_SCHEMA,
  ...Object.values(BACKOFF_SCHEMAS).filter((s) => Object.keys(s.fields).length > 0),
  ...Object.values(JITTER_SCHEMAS).filter((s) => Object.keys(s.fields).length > 0),
  TIMEOUT_SCHEMA,
  BREAKER_SCHEMA,
  RATIO_BUDGET_SCHEMA,
  TOKEN_BUDGET_SCHEMA,
  BULKHEAD_SCHEMA,
  RATE_LIMITER_SCHEMA,
  LIMIT_SCHEMA,
  HEDGE_SCHEMA,
  RESPONSIVE_SCHEMA,
  FETCH_SCHEMA,
  SUPERVISOR_SCHEMA,
  SIMULATE_SCHEMA,
];

const root = fileURLToPath(new URL("..", import.meta.url));
export const OPTIONS_DOC = `${root}docs/options.md`;
export const RETRY_DOC = `${root}docs/retry.md`;

/** The whole of `docs/options.md`. */
export function optionsDoc(): string {
  const sections = SCHEMAS.map(
    (schema) => `## ${schema.name}\n\nTaken by ${schema.takenBy}.\n\n${optionsTable(schema)}\n`,
  );
  return `# Options

Every option of every options type, generated from the descriptions the checks, \`fromConfig\`, the
command line and these tables are all read from (\`npm run docs:options\` rewrites this page). Times are
milliseconds; config files and command-line flags also take a unit (\`1.5s\`, \`200ms\`, \`2m\`). A limit
that may be switched off is off when negative or \`Infinity\`. An unknown option fails at once and names
the nearest known one. The [glossary](glossary.md) gives each name's peers' names.

${sections.join("\n")}`;
}

const START = "<!-- options: retry -->";
const END = "<!-- /options -->";

/** The retry page with its table of `retry`'s options as the description says. */
export function retryDocWithTable(page: string): string {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/retry.md has no ${START} … ${END} section`);
  return `${page.slice(0, start + START.length)}\n${optionsTable(RETRY_SCHEMA)}\n${page.slice(end)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(OPTIONS_DOC, optionsDoc());
  writeFileSync(RETRY_DOC, retryDocWithTable(readFileSync(RETRY_DOC, "utf8")));
  console.log("wrote docs/options.md and the table of retry's options in docs/retry.md");
}
