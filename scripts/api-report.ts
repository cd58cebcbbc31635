/**
 * The API report: every name each entry point of the package exports, with its kind, a short type
 * text and the first sentence of its TSDoc, written to docs/api/parley.api.md. A change to the
 * public surface shows up as a change to that file in review; test/scripts/api-report.test.ts
 * fails when the file is stale. Run `npm run api` to write it.
 *
 * It reads the source with the TypeScript compiler API (no api-extractor: it would need the
 * built .d.ts files and a package of its own).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The package's entry points: the import specifier and the source file behind it. */
export const ENTRY_POINTS: readonly { specifier: string; source: string }[] = [
  { specifier: 'parley', source: 'src/index.ts' },
  { specifier: 'parley/conversation', source: 'src/entry/conversation.ts' },
  { specifier: 'parley/store', source: 'src/entry/store.ts' },
  { specifier: 'parley/backends', source: 'src/entry/backends.ts' },
  { specifier: 'parley/sessions', source: 'src/entry/sessions.ts' },
  { specifier: 'parley/harness', source: 'src/entry/harness.ts' },
  { specifier: 'parley/protocol', source: 'src/entry/protocol.ts' },
  { specifier: 'parley/testing', source: 'src/entry/testing.ts' },
];

/** The most names the root may export (values and types together): a root that fits on a screen. */
export const ROOT_NAME_LIMIT = 150;

/** Where the report is committed, relative to the repository. */
export const REPORT_PATH = 'docs/api/parley.api.md';

/** One exported name as the report shows it. */
export interface ApiExport {
  name: string;
  /** `function`, `class`, `const`, `interface`, `type`, `enum`; two joined by `+` when a value and a type share the name. */
  kind: string;
  /** The signature (functions), the heritage (classes), the members (interfaces) or the type text, shortened. */
  text: string;
  /** The first sentence of the TSDoc comment on the declaration, if there is one. */
  summary: string | undefined;
}

/** One entry point and its exports, sorted by name. */
export interface ApiEntry {
  specifier: string;
  source: string;
  exports: ApiExport[];
}

const TEXT_LIMIT = 160;

function shorten(text: string): string {
  const flat = text.replace(/\s+/g, ' ').replace(/`/g, "'").trim();
  return flat.length > TEXT_LIMIT ? `${flat.slice(0, TEXT_LIMIT - 1)}…` : flat;
}

function firstSentence(text: string): string | undefined {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat === '') return undefined;
  // A full stop followed by a space ends the sentence; `e.g. x` and `v1.2` do not.
  const match = /^(.*?[.!?])(?=\s+[A-Z`(*_"'[])/.exec(flat);
  return match?.[1] ?? flat;
}

function kindOf(declaration: ts.Declaration): string {
  if (ts.isFunctionDeclaration(declaration)) return 'function';
  if (ts.isClassDeclaration(declaration)) return 'class';
  if (ts.isInterfaceDeclaration(declaration)) return 'interface';
  if (ts.isTypeAliasDeclaration(declaration)) return 'type';
  if (ts.isEnumDeclaration(declaration)) return 'enum';
  if (ts.isVariableDeclaration(declaration)) return 'const';
  return ts.SyntaxKind[declaration.kind];
}

function describe(checker: ts.TypeChecker, symbol: ts.Symbol, declaration: ts.Declaration): string {
  const flags = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope;
  if (ts.isFunctionDeclaration(declaration)) {
    const type = checker.getTypeOfSymbolAtLocation(symbol, declaration);
    return type
      .getCallSignatures()
      .map((signature) => checker.signatureToString(signature, undefined, flags))
      .join(' ; ');
  }
  if (ts.isClassDeclaration(declaration)) {
    const heritage = (declaration.heritageClauses ?? []).map((clause) => clause.getText()).join(' ');
    const constructor = declaration.members.find(ts.isConstructorDeclaration);
    const parameters = constructor ? `(${constructor.parameters.map((p) => p.getText()).join(', ')})` : '';
    return `class ${symbol.name}${parameters}${heritage ? ` ${heritage}` : ''}`;
  }
  if (ts.isInterfaceDeclaration(declaration)) {
    const heritage = (declaration.heritageClauses ?? []).map((clause) => clause.getText()).join(' ');
    const members = declaration.members.map((member) => {
      const name = member.name ? member.name.getText() : '';
      const optional = 'questionToken' in member && member.questionToken ? '?' : '';
      const call = ts.isMethodSignature(member) ? '()' : '';
      return `${name}${optional}${call}`;
    });
    return `${heritage ? `${heritage} ` : ''}{ ${members.join('; ')} }`;
  }
  if (ts.isTypeAliasDeclaration(declaration)) return declaration.type.getText();
  if (ts.isVariableDeclaration(declaration)) {
    if (declaration.type) return declaration.type.getText();
    return checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, declaration), declaration, flags);
  }
  return '';
}

/** Reads the exports of every entry point from the source under `root`. */
export function collectApi(root: string): ApiEntry[] {
  const configPath = join(root, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const sources = ENTRY_POINTS.map((entry) => resolve(root, entry.source));
  const program = ts.createProgram(sources, { ...parsed.options, noEmit: true });
  const checker = program.getTypeChecker();
  return ENTRY_POINTS.map((entry, index) => {
    const file = program.getSourceFile(sources[index]!);
    const module = file && checker.getSymbolAtLocation(file);
    if (!module) throw new Error(`api-report: ${entry.source} is not a module (does it exist and export anything?)`);
    const exports = checker.getExportsOfModule(module).map((exported): ApiExport => {
      const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declarations = target.getDeclarations() ?? [];
      const kinds = [...new Set(declarations.map(kindOf))];
      const texts = declarations.map((declaration) => describe(checker, target, declaration)).filter(Boolean);
      const documentation = ts.displayPartsToString(target.getDocumentationComment(checker));
      return {
        name: exported.name,
        kind: kinds.join('+'),
        text: shorten(texts.join(' ; ')),
        summary: firstSentence(documentation),
      };
    });
    exports.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { specifier: entry.specifier, source: entry.source, exports };
  });
}

/** The report's markdown for the given entry points. */
export function renderApiReport(entries: readonly ApiEntry[]): string {
  const lines = [
    "# Parley's public API",
    '',
    '<!-- Generated by `npm run api` (scripts/api-report.ts) from the entry points; do not edit. -->',
    '',
    'Every name each entry point exports, with its kind, a short type text and the first sentence of its',
    'TSDoc. `test/scripts/api-report.test.ts` fails when this file and the code differ: a change here is a',
    'change to what users can import, and is reviewed as one.',
    '',
    '| entry point | source | names |',
    '| --- | --- | --- |',
    ...entries.map((entry) => `| \`${entry.specifier}\` | \`${entry.source}\` | ${entry.exports.length} |`),
  ];
  for (const entry of entries) {
    lines.push('', `## \`${entry.specifier}\``, '');
    for (const exported of entry.exports) {
      const text = exported.text ? ` \`${exported.text}\`` : '';
      lines.push(`- **${exported.name}** (${exported.kind})${text}: ${exported.summary ?? '(undocumented)'}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The repository this script lives in. */
export const REPOSITORY = resolve(dirname(fileURLToPath(import.meta.url)), '..');

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const target = join(REPOSITORY, REPORT_PATH);
  const report = renderApiReport(collectApi(REPOSITORY));
  let previous = '';
  try {
    previous = readFileSync(target, 'utf8');
  } catch {}
  writeFileSync(target, report);
  console.log(`${relative(process.cwd(), target)}: ${previous === report ? 'unchanged' : 'written'}`);
}
