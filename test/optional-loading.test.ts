/**
 * Loading an optional package (ioredis, vega, vega-lite) in process: a package that is not found becomes
 * one line naming what needs it and the npm command; any other failure passes unchanged. (The CLI's and
 * the Redis store's own runs without the packages are in test/optional-packages.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { isModuleNotFound, loadOptional, MissingPackageError } from "../src/core/optional.js";

/** An error with `message`, and `code` and `cause` when given. */
function failure(message: string, code?: string, cause?: unknown): Error {
  return Object.assign(new Error(message, cause === undefined ? undefined : { cause }), code ? { code } : {});
}

/** `error` as the cause of `depth` errors wrapped around it, the outermost first. */
function wrapped(depth: number, error: Error): Error {
  let outer = error;
  for (let i = 0; i < depth; i++) outer = failure(`wrapper ${i}`, undefined, outer);
  return outer;
}

describe("a missing optional package", () => {
  it("is named in one line with what needs it and the npm command, one package or two", () => {
    const one = new MissingPackageError(["ioredis"], "redisStore({ url })");
    expect(one.message).toBe("redisStore({ url }) needs the optional package ioredis: npm install ioredis");
    expect(one).toMatchObject({ name: "MissingPackageError", packages: ["ioredis"] });
    const two = new MissingPackageError(["vega", "vega-lite"], "robustly plot");
    expect(two.message).toBe(
      "robustly plot needs the optional packages vega and vega-lite: npm install vega vega-lite",
    );
  });

  it.each<[string, unknown, boolean]>([
    ["Node's ESM code", failure("x", "ERR_MODULE_NOT_FOUND"), true],
    ["Node's CommonJS code", failure("x", "MODULE_NOT_FOUND"), true],
    ["a bundler's 'Cannot find module'", failure("Cannot find module 'vega'"), true],
    ["'Cannot find package', in any case", failure("cannot FIND package 'ioredis'"), true],
    ["a browser's 'Failed to resolve'", failure("Failed to resolve module specifier"), true],
    ["Deno's 'Failed to load url'", failure("Failed to load url https://x"), true],
    ["a cause four levels down", wrapped(4, failure("e", "ERR_MODULE_NOT_FOUND")), true],
    ["a cause five levels down: too deep", wrapped(5, failure("f", "ERR_MODULE_NOT_FOUND")), false],
    ["another error", failure("connection refused", "ECONNREFUSED"), false],
    ["no Error at all", { code: "ERR_MODULE_NOT_FOUND" }, false],
  ])("is told from %s", (_, error, found) => {
    expect(isModuleNotFound(error)).toBe(found);
  });

  it("becomes a MissingPackageError with the loader's error as its cause; any other failure passes unchanged", async () => {
    const notFound = failure("Cannot find package 'vega'", "ERR_MODULE_NOT_FOUND");
    const error = await loadOptional(["vega"], "robustly plot", () => Promise.reject(notFound)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MissingPackageError);
    expect((error as Error).cause).toBe(notFound);
    const other = new Error("syntax error in the package");
    await expect(loadOptional(["vega"], "robustly plot", () => Promise.reject(other))).rejects.toBe(other);
    await expect(loadOptional(["vega"], "robustly plot", async () => "the module")).resolves.toBe(
      "the module",
    );
  });
});
