#!/usr/bin/env node
// Fails when a module imports a layer above its own (the layers of docs/architecture.md), reaches into
// another layer past its index.ts, or when imports form a cycle, between layers or between files
// inside one layer. Type-only imports count: `import type` is erased at run time, but a cycle
// through one still ties the modules into one unit (a contract importing its implementer's types,
// as registry <-> config <-> registrations did in src/backends/), and a contract depends on nothing
// of what implements it. A dynamic `import()` of a file counts too: a lazy opener whose
// implementation imports the opener back for a constant is the same knot. Packages are never
// edges, so an optional SDK loaded on first use is no cycle.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const root = resolve(process.argv[2] ?? 'src');

/** What each layer may import (besides itself). */
const allowed = {
  conversation: [],
  // Spans and metrics (OpenTelemetry's API only): read stream events, used by every layer that runs turns.
  telemetry: ['conversation'],
  store: ['conversation'],
  // People's commands and webhooks run on session events: below every layer that has an event to report.
  hooks: ['conversation'],
  backends: ['conversation', 'store', 'telemetry'],
  // The workspace toolset (files, search, commands, approvals, sandbox): tools are back-end ToolDefinitions.
  workspace: ['conversation', 'backends'],
  sessions: ['conversation', 'store', 'backends', 'telemetry', 'hooks'],
  harness: ['conversation', 'store', 'backends', 'sessions', 'workspace', 'telemetry', 'hooks'],
  // The draft service hands the server the wire contract's own shapes (draft status, agents, results).
  draft: ['conversation', 'store', 'backends', 'sessions', 'harness', 'protocol', 'workspace', 'telemetry', 'hooks'],
  protocol: ['conversation'],
  server: [
    'conversation',
    'store',
    'backends',
    'sessions',
    'harness',
    'draft',
    'protocol',
    'workspace',
    'telemetry',
    'hooks',
  ],
  // The editors' face beside the server: the same layers below, no WebSocket protocol of its own.
  acp: ['conversation', 'store', 'backends', 'sessions', 'draft', 'workspace', 'telemetry', 'hooks'],
  'ui/tui': ['conversation', 'protocol'],
  'ui/web': ['conversation', 'protocol'],
  cli: [
    'conversation',
    'store',
    'backends',
    'sessions',
    'harness',
    'draft',
    'protocol',
    'server',
    'acp',
    'workspace',
    'ui/tui',
    'ui/web',
    'telemetry',
    'hooks',
  ],
  // The package's public faces: the root (`parley`, src/index.ts) and the subpaths (`parley/<name>`,
  // src/entry/<name>.ts). Nothing inside src/ imports them; each is a curated list of names that
  // re-exports from the layers' own index.ts, which stay the internal faces layers use.
  '.': [
    'conversation',
    'store',
    'backends',
    'sessions',
    'harness',
    'draft',
    'protocol',
    'server',
    'workspace',
    'telemetry',
    'hooks',
  ],
};
allowed.entry = allowed['.'];

function layerOf(file) {
  const rel = relative(root, file).split(sep);
  if (rel.length === 1) return '.';
  if (rel[0] === 'ui') return `ui/${rel[1]}`;
  return rel[0];
}

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return walk(path);
    return /\.(ts|tsx)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

function resolveImport(from, specifier) {
  const base = resolve(dirname(from), specifier).replace(/\.js$/, '');
  for (const candidate of [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {}
  }
  return undefined;
}

/** Imports of a file, static and dynamic (`import()`); both count for layering and for cycles. */
function importsOf(file) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Cycles known and accepted, each as its files relative to the root, sorted and joined by `|`,
 * with a comment saying why. Empty: src/ has none. Add one only with a reason and an issue to remove it.
 */
const allowedCycles = new Set([]);

const files = walk(root);
const problems = [];
const graph = new Map();

for (const file of files) {
  const layer = layerOf(file);
  const edges = [];
  for (const specifier of importsOf(file)) {
    if (!specifier.startsWith('.')) continue;
    const target = resolveImport(file, specifier);
    if (!target) {
      problems.push(`${relative(root, file)}: cannot resolve import '${specifier}'`);
      continue;
    }
    if (!target.startsWith(root + sep)) {
      problems.push(`${relative(root, file)}: imports '${specifier}' outside src/`);
      continue;
    }
    const targetLayer = layerOf(target);
    if (targetLayer !== layer) {
      const permitted = allowed[layer];
      if (!permitted) problems.push(`${relative(root, file)}: file is in no known layer ('${layer}')`);
      else if (!permitted.includes(targetLayer))
        problems.push(
          `${relative(root, file)}: layer '${layer}' may not import layer '${targetLayer}' ('${specifier}')`,
        );
      const targetRel = relative(root, target);
      const indexOfLayer = targetLayer === '.' ? 'index.ts' : join(targetLayer, 'index.ts');
      if (targetRel !== indexOfLayer) {
        problems.push(
          `${relative(root, file)}: imports '${specifier}' past the public face of layer '${targetLayer}' (import its index.ts)`,
        );
      }
    }
    edges.push(target);
  }
  graph.set(file, edges);
}

// Cycle detection over every import between files (DFS with colours); each cycle is reported once, as a path.
const colour = new Map();
const stack = [];
const reported = new Set();
function dfs(node) {
  colour.set(node, 'grey');
  stack.push(node);
  for (const next of graph.get(node) ?? []) {
    if (colour.get(next) === 'grey') {
      const cycle = stack
        .slice(stack.indexOf(next))
        .concat(next)
        .map((file) => relative(root, file));
      const key = [...new Set(cycle)].sort().join('|');
      if (!reported.has(key) && !allowedCycles.has(key)) {
        reported.add(key);
        problems.push(`import cycle: ${cycle.join(' -> ')}`);
      }
    } else if (!colour.has(next)) dfs(next);
  }
  stack.pop();
  colour.set(node, 'black');
}
for (const file of files) if (!colour.has(file)) dfs(file);

if (problems.length > 0) {
  console.error(`check-layers: ${problems.length} problem(s)\n` + problems.map((problem) => `  ${problem}`).join('\n'));
  process.exit(1);
}
console.log(`check-layers: ${files.length} files, layers and cycles OK`);
