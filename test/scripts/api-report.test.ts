import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  collectApi,
  ENTRY_POINTS,
  renderApiReport,
  REPORT_PATH,
  REPOSITORY,
  ROOT_NAME_LIMIT,
  type ApiEntry,
} from '../../scripts/api-report.js';

// Reading the whole source with the compiler takes a while on two busy cores.
const COMPILE_TIMEOUT = 180_000;

let entries: ApiEntry[];
beforeAll(() => {
  entries = collectApi(REPOSITORY);
}, COMPILE_TIMEOUT);

const rootEntry = () => entries.find((entry) => entry.specifier === 'parley')!;

describe('the public API report', () => {
  it('matches the committed docs/api/parley.api.md (run `npm run api` after changing an entry point)', async () => {
    const committed = await readFile(join(REPOSITORY, REPORT_PATH), 'utf8');
    const current = renderApiReport(entries);
    const added = current.split('\n').filter((line) => !committed.split('\n').includes(line));
    const removed = committed.split('\n').filter((line) => !current.split('\n').includes(line));
    expect(
      { added, removed },
      `The public API differs from ${REPORT_PATH}: run \`npm run api\` and commit the report with the change.`,
    ).toEqual({ added: [], removed: [] });
    expect(current).toBe(committed);
  });

  it(`the root exports at most ${ROOT_NAME_LIMIT} names, values and types together`, () => {
    const names = rootEntry().exports.map((exported) => exported.name);
    expect(names.length, `parley exports ${names.length} names`).toBeLessThanOrEqual(ROOT_NAME_LIMIT);
  });

  it('every root export has a TSDoc comment on its declaration', () => {
    const undocumented = rootEntry()
      .exports.filter((exported) => exported.summary === undefined)
      .map((exported) => exported.name);
    expect(undocumented, 'give each of these a /** … */ comment saying what it is for').toEqual([]);
  });

  it('every entry point in package.json has a source in the report, and the other way round', async () => {
    const manifest = JSON.parse(await readFile(join(REPOSITORY, 'package.json'), 'utf8')) as {
      exports: Record<string, string | { types: string; import: string }>;
    };
    const fromManifest = Object.entries(manifest.exports)
      .filter(([subpath]) => subpath !== './package.json')
      .map(([subpath, target]) => {
        const { types, import: module } = target as { types: string; import: string };
        expect(types.replace(/\.d\.ts$/, ''), `${subpath}: types and import name one module`).toBe(
          module.replace(/\.js$/, ''),
        );
        return { specifier: subpath === '.' ? 'parley' : `parley/${subpath.slice(2)}`, built: module };
      });
    expect(fromManifest).toEqual(
      ENTRY_POINTS.map((entry) => ({
        specifier: entry.specifier,
        built: `./${entry.source.replace(/^src\//, 'dist/').replace(/\.ts$/, '.js')}`,
      })),
    );
  });

  it('keeps internal helpers out of every entry point', () => {
    const internal = [
      'plural',
      'KeyedQueue',
      'TypedEmitter',
      'extractJsonCandidates',
      'jsonCandidates',
      'parseAgentOutput',
    ];
    for (const entry of entries) {
      const leaked = entry.exports.map((exported) => exported.name).filter((name) => internal.includes(name));
      expect(leaked, entry.specifier).toEqual([]);
    }
  });

  it('an export added without updating the report is caught', () => {
    const root = rootEntry();
    const grown: ApiEntry[] = entries.map((entry) =>
      entry === root
        ? {
            ...entry,
            exports: [
              ...entry.exports,
              { name: 'somethingNew', kind: 'function', text: '() => void', summary: 'New.' },
            ],
          }
        : entry,
    );
    expect(renderApiReport(grown)).not.toBe(renderApiReport(entries));
    expect(renderApiReport(grown)).toContain('- **somethingNew** (function) `() => void`: New.');
  });
});
