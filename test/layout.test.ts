// No two files under src/ import each other, however indirectly. A circle of imports makes the order in
// which modules load decide what a module sees at its top level, and makes neither side readable or
// testable alone. Every import counts: type-only ones (`import type`, `import { type X }`), re-exports
// (`export … from`), dynamic `import(…)` and `import("./x.js").T` in types.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const src = fileURLToPath(new URL("../src", import.meta.url));

const files = readdirSync(src, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
  .map((file) => join(src, file))
  .sort();

/** Every module specifier `text` names: in imports, re-exports, `import(…)` calls and `import(…)` types. */
function specifiers(text: string): string[] {
  const source = ts.createSourceFile("scanned.ts", text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push(node.moduleReference.expression.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument !== undefined && ts.isStringLiteralLike(argument)) found.push(argument.text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The source file a relative specifier names (`./x.js` is `./x.ts`, a folder its `index.ts`). */
function resolveSpecifier(from: string, specifier: string): string | undefined {
  const target = resolve(dirname(from), specifier);
  const candidates = [
    target.replace(/\.js$/, ".ts"),
    target.replace(/\.mjs$/, ".mts"),
    target,
    `${target}.ts`,
    join(target, "index.ts"),
  ];
  return candidates.find((candidate) => candidate.endsWith(".ts") && existsSync(candidate));
}

const graph = new Map<string, string[]>();
const unresolved: string[] = [];
for (const file of files) {
  const targets = new Set<string>();
  for (const specifier of specifiers(readFileSync(file, "utf8"))) {
    if (!specifier.startsWith(".")) continue;
    const target = resolveSpecifier(file, specifier);
    // An import of something other than a source file (package.json) cannot close a circle.
    if (target === undefined) {
      if (!/\.json$/.test(specifier)) unresolved.push(`${relative(src, file)}: ${specifier}`);
    } else if (target.startsWith(src)) targets.add(target);
  }
  graph.set(file, [...targets].sort());
}

/** The strongly connected components with more than one file, or one that imports itself (Tarjan). */
function cycles(edges: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of edges.get(file) ?? []) {
      if (!index.has(target)) {
        connect(target);
        low.set(file, Math.min(low.get(file) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) as number, index.get(target) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (edges.get(file) ?? []).includes(file)) found.push(component.sort());
  };
  for (const file of edges.keys()) if (!index.has(file)) connect(file);
  return found;
}

/** One line per circle: its files, and what each imports within it. */
function describeCycle(component: string[]): string {
  const members = new Set(component);
  const name = (file: string) => relative(src, file);
  const links = component.map((file) => {
    const within = (graph.get(file) ?? []).filter((target) => members.has(target));
    return `${name(file)} -> ${within.map(name).join(", ")}`;
  });
  return `circle of ${component.length}: ${links.join("; ")}`;
}

describe("the import graph of src/", () => {
  it("reads every file and resolves every relative import", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(unresolved).toEqual([]);
  });

  it("sees every kind of import a circle can be made of", () => {
    // Guards the scanner itself: an import it missed could hide a circle.
    const text = [
      'import type { A } from "./a.js";',
      "import {",
      "  type B,",
      "  b,",
      '} from "./b.js";',
      'export { c } from "./c.js";',
      'export type * from "./d.js";',
      'import "./e.js";',
      'type F = import("./f.js").F;',
      'const g = () => import("./g.js");',
      '// import { h } from "./h.js";',
    ].join("\n");
    expect(specifiers(text)).toEqual(["./a.js", "./b.js", "./c.js", "./d.js", "./e.js", "./f.js", "./g.js"]);
    const at = (...path: string[]) => join(src, ...path);
    expect(graph.get(at("index.ts"))).toContain(at("retry", "retry.ts"));
    expect(graph.get(at("cli", "main.ts"))).toContain(at("cli", "simulate.ts"));
  });

  it("has no circle", () => {
    expect(cycles(graph).map(describeCycle)).toEqual([]);
  });
});
