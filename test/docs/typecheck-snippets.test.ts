/**
 * The examples and every TypeScript block in README.md and docs/ type-check against the public
 * API, so a renamed or dropped export cannot leave the documentation wrong.
 *
 * How to write a block (for contributors):
 * - A block fenced as ```ts (or ```typescript) is compiled on its own, as an ES module, with the
 *   repository's compiler options. It imports Parley as a user does: `from 'parley'` or
 *   `from 'parley/<subpath>'` (tsconfig.json's `paths` map those to src/index.ts and src/entry/).
 *   Top-level `await` is fine.
 * - A block that goes on from the block before it (uses its names) is fenced ```ts continued: it is
 *   compiled appended to the one before, so it must not import a name that one already imports.
 * - A block that is not meant to compile (a fragment, a shape, pseudo-code) is fenced
 *   ```ts no-check, and is left alone.
 *
 * The blocks are compiled from memory (no files are written): a compiler host serves each one as a
 * file under the repository, so `zod` and the other packages resolve from its node_modules.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const REPOSITORY = resolve(import.meta.dirname, '..', '..');
// Compiling the examples and snippets reads much of src/ with the checker; two busy cores are slow.
const COMPILE_TIMEOUT = 240_000;

interface Snippet {
  /** Where the block starts, as `file:line`, for the failure message. */
  origin: string;
  /** The virtual path the block is compiled under. */
  path: string;
  code: string;
}

function markdownFiles(): string[] {
  const found = [join(REPOSITORY, 'README.md')];
  const walk = (folder: string): void => {
    for (const name of readdirSync(folder).sort()) {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.md')) found.push(path);
    }
  };
  walk(join(REPOSITORY, 'docs'));
  return found;
}

/** The ```ts blocks of one markdown text, with `continued` ones joined to the block before. */
function snippetsOf(file: string, text: string): Snippet[] {
  const snippets: Snippet[] = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const fence = /^(\s*)(`{3,})(ts|typescript)\b(.*)$/.exec(lines[index]!);
    if (!fence) continue;
    const [, indent, ticks, , rest] = fence;
    const flags = rest!.trim().split(/\s+/);
    const body: string[] = [];
    let end = index + 1;
    while (end < lines.length && !lines[end]!.trimStart().startsWith(ticks!)) {
      body.push(lines[end]!.startsWith(indent!) ? lines[end]!.slice(indent!.length) : lines[end]!);
      end++;
    }
    const origin = `${relative(REPOSITORY, file)}:${index + 1}`;
    index = end;
    if (flags.includes('no-check')) continue;
    const code = body.join('\n');
    const previous = snippets.at(-1);
    if (flags.includes('continued') && previous) {
      previous.code += `\n${code}`;
      previous.origin += ` + ${origin}`;
      continue;
    }
    const slug = relative(REPOSITORY, file).replace(/[^a-zA-Z0-9]+/g, '-');
    snippets.push({ origin, path: join(REPOSITORY, '.snippets', `${slug}-${index + 1}.mts`), code });
  }
  // Every block is a module, even one with no import or export, so top-level await works.
  for (const snippet of snippets) snippet.code += '\nexport {};\n';
  return snippets;
}

/** Compiles the given files (real paths or snippets held in memory) and returns the errors of each. */
function typecheck(files: readonly string[], snippets: readonly Snippet[]): Map<string, string[]> {
  const config = ts.readConfigFile(join(REPOSITORY, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, REPOSITORY);
  const options: ts.CompilerOptions = { ...parsed.options, noEmit: true, rootDir: REPOSITORY, declaration: false };
  const virtual = new Map(snippets.map((snippet) => [snippet.path, snippet.code]));
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (path) => virtual.has(path) || fileExists.call(host, path);
  host.readFile = (path) => virtual.get(path) ?? readFile.call(host, path);
  host.getSourceFile = (path, language, ...rest) => {
    const code = virtual.get(path);
    return code === undefined
      ? getSourceFile.call(host, path, language, ...rest)
      : ts.createSourceFile(path, code, language, true);
  };
  const program = ts.createProgram([...files, ...virtual.keys()], options, host);
  const errors = new Map<string, string[]>();
  for (const path of [...files, ...virtual.keys()]) {
    const source = program.getSourceFile(path);
    if (!source) {
      errors.set(path, ['not compiled']);
      continue;
    }
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    errors.set(
      path,
      diagnostics.map((diagnostic) => {
        const line = diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line;
        return `line ${line + 1}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
      }),
    );
  }
  return errors;
}

describe('examples and documentation snippets type-check against the public API', () => {
  it('splits a markdown file into blocks: no-check is skipped, continued joins the block before', () => {
    const text = [
      '```ts',
      "import { applyEvent } from 'parley';",
      '```',
      '```ts continued',
      'applyEvent;',
      '```',
      '```ts no-check',
      'not code',
      '```',
      '  ```typescript',
      '  const indented = 1;',
      '  ```',
      '```sh',
      'npm test',
      '```',
    ].join('\n');
    const snippets = snippetsOf(join(REPOSITORY, 'docs', 'x.md'), text);
    expect(snippets.map((snippet) => snippet.origin)).toEqual(['docs/x.md:1 + docs/x.md:4', 'docs/x.md:10']);
    expect(snippets[0]!.code).toBe("import { applyEvent } from 'parley';\napplyEvent;\nexport {};\n");
    expect(snippets[1]!.code).toBe('const indented = 1;\nexport {};\n');
  });

  it(
    'examples/*.ts, README.md and docs/**/*.md compile; a block using a name parley does not export does not',
    () => {
      const examples = readdirSync(join(REPOSITORY, 'examples'))
        .filter((name) => name.endsWith('.ts'))
        .map((name) => join(REPOSITORY, 'examples', name));
      const snippets = markdownFiles().flatMap((file) => snippetsOf(file, readFileSync(file, 'utf8')));
      // The control: proves a wrong snippet is reported, so an empty error list means something.
      const control: Snippet = {
        origin: 'control',
        path: join(REPOSITORY, '.snippets', 'control.mts'),
        code: "import { KeyedQueue } from 'parley';\nexport const queue = new KeyedQueue();\n",
      };
      const errors = typecheck(examples, [...snippets, control]);
      expect(errors.get(control.path)!.join('\n')).toMatch(/has no exported member .*KeyedQueue/);
      const failures = [
        ...examples.map((path) => ({ origin: relative(REPOSITORY, path), errors: errors.get(path)! })),
        ...snippets.map((snippet) => ({ origin: snippet.origin, errors: errors.get(snippet.path)! })),
      ].filter((result) => result.errors.length > 0);
      expect(
        failures,
        'fix the code, or fence a block that is not meant to compile as ```ts no-check (see this test file)',
      ).toEqual([]);
      expect(examples.length).toBeGreaterThan(0);
    },
    COMPILE_TIMEOUT,
  );
});
