/**
 * Run before each test file of the mutation runs (vitest.mutation.config.ts), where the files share one
 * module graph: what `npm test` gets from running each file in a module graph of its own, a process's
 * default retry budget that no earlier file has drawn on.
 */
import { beforeAll } from "vitest";
import { processBudgets } from "../../src/budget/default.js";

beforeAll(() => processBudgets.clear());
