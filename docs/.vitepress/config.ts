// The docs site: the pages of docs/ as they are on GitHub, built by VitePress into .docs-site/ (`npm run
// docs`). The policy explorer runs robustly in the page: "robustly" and "robustly/sim" resolve to the
// portable entries' sources.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitepress";
import { githubSlug } from "./slug.js";

const source = (path: string) => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));

const guide = [
  { text: "Retry", link: "/retry" },
  { text: "Backoff and jitter", link: "/backoff-and-jitter" },
  { text: "Pipelines", link: "/pipeline" },
  { text: "Budgets, breakers and Retry-After", link: "/guards" },
  { text: "Fetch, hedging and fault injection", link: "/http" },
  { text: "Responsive backoff", link: "/responsive-backoff" },
  { text: "The supervisor", link: "/supervisor" },
  { text: "Shared state on Redis", link: "/shared-state" },
  { text: "The overload simulator", link: "/simulator" },
  { text: "Defaults under an outage", link: "/defaults" },
  { text: "Policy explorer", link: "/explorer" },
  { text: "The command line and JSON", link: "/cli" },
  { text: "Testing code that retries", link: "/testing" },
  { text: "Telemetry", link: "/telemetry" },
];
const reference = [
  { text: "Options", link: "/options" },
  { text: "Glossary", link: "/glossary" },
  { text: "Peers", link: "/peers" },
  { text: "Reliability", link: "/reliability" },
  { text: "Entry points and layout", link: "/entry-points" },
];
const migrating = ["p-retry", "async-retry", "exponential-backoff", "cockatiel", "tenacity"].map((name) => ({
  text: name,
  link: `/migrating/${name}`,
}));

export default defineConfig({
  title: "robustly",
  description: "Timeouts, retry policies, backoff and jitter, with injectable time and randomness.",
  outDir: "../.docs-site",
  cacheDir: "../node_modules/.cache/vitepress",
  lastUpdated: false,
  markdown: { anchor: { slugify: githubSlug } },
  themeConfig: {
    nav: [
      { text: "Guide", link: "/retry" },
      { text: "Explorer", link: "/explorer" },
      { text: "Options", link: "/options" },
    ],
    sidebar: [
      { text: "Guide", items: guide },
      { text: "Reference", items: reference },
      { text: "Coming from another library", items: migrating },
    ],
    outline: [2, 3],
    search: { provider: "local" },
  },
  vite: {
    resolve: {
      alias: [
        { find: /^robustly\/sim$/, replacement: source("sim/index.ts") },
        { find: /^robustly$/, replacement: source("index.ts") },
      ],
    },
  },
});
