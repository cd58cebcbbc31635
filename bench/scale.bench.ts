/**
 * 100,000 sessions of four messages each, on the file store and on PostgreSQL: the first page of
 * `list_sessions` (the store's page from its index), `parley sessions` printing the newest 50 (a
 * fresh process: plain `node` on an esbuild bundle of the CLI, so tsx's start-up does not count),
 * full-text search p50 over a mix of common and rare words, and the web UI's first session rows
 * shown in headless Chromium, from navigation to the first row painted. Each row prints its target.
 *
 * The sessions are written straight into the store's own format in bulk (session folders with
 * session.json and log.jsonl; rows in PostgreSQL's tables, the search index filled by its own
 * trigger), then the file store builds its indexes from them at its first open, timed as its own
 * row. `PARLEY_BENCH_SCALE_SESSIONS` sets the count (default 100,000).
 * `npm run bench scale`, or `npx tsx bench/scale.bench.ts`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import pg from 'pg';
import {
  FORMAT_VERSION,
  createFileStore,
  createPostgresStore,
  type SessionRecord,
  type SessionStore,
} from '../src/store/index.js';
import { findPostgresBin, startTestPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import { percentile, table } from './stats.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SESSIONS = Number(process.env['PARLEY_BENCH_SCALE_SESSIONS'] ?? 100_000);
const START = 1_760_000_000_000;

/** A deterministic stream of numbers in [0, 1). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const COMMON =
  'the a to of and in is for on it with that this please fix add test check file function error build run'.split(' ');
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ten',
  'ru',
  'sa',
  'vor',
  'den',
  'qui',
  'pla',
  'zo',
  'nex',
  'tri',
  'bel',
  'mon',
  'fa',
];
/** 20,000 made-up words: the words of a team's projects, each rarer than the common ones. */
const VOCABULARY = Array.from({ length: 20_000 }, (_, index) => {
  let word = '';
  for (let rest = index + 17; rest > 0; rest = Math.floor(rest / SYLLABLES.length))
    word += SYLLABLES[rest % SYLLABLES.length];
  return word;
});

function sentence(next: () => number, words: number): string {
  const parts: string[] = [];
  for (let index = 0; index < words; index++) {
    const pick = next();
    // Zipf-like: common words often, project words by a skewed index.
    parts.push(
      pick < 0.45
        ? COMMON[Math.floor(next() * COMMON.length)]!
        : VOCABULARY[Math.floor(next() ** 2.5 * VOCABULARY.length)]!,
    );
  }
  return parts.join(' ');
}

function sessionId(index: number): string {
  return `scale-${String(index).padStart(6, '0')}`;
}

function recordOf(index: number): SessionRecord {
  const at = START + index * 1_000;
  return {
    formatVersion: FORMAT_VERSION,
    sessionId: sessionId(index),
    type: 'scripted',
    agentProfileReference: 'roles/dev.md',
    status: 'active',
    agentType: 'dev',
    scope: { kind: 'draft', role: 'dev', project: 'scale', taskSlug: `task-${index % 500}` },
    title: `Task ${index}`,
    createdAt: at,
    updatedAt: at + 3_000,
    lastActivity: at + 3_000,
    settings: {},
    stats: { totalMessages: 4, totalTokens: 0, totalCompactions: 0 },
  };
}

/** The four events of a session: request, answer, request, answer (whole blocks, as a finished turn logs them). */
function eventsOf(index: number): Array<Record<string, unknown>> {
  const next = random(index + 1);
  return [0, 1, 2, 3].map((seq) => {
    const at = START + index * 1_000 + seq * 1_000;
    const user = seq % 2 === 0;
    const content = sentence(next, user ? 14 : 24);
    return {
      type: 'block_complete',
      conversationId: 'main',
      at,
      block: { type: user ? 'user_message' : 'assistant_text', id: `b${seq}`, createdAt: at, content },
      sessionId: sessionId(index),
      seq,
    };
  });
}

/** Writes the sessions as the file store keeps them: a folder each with session.json and log.jsonl. */
function writeFileSessions(dataDir: string): void {
  mkdirSync(join(dataDir, 'sessions'), { recursive: true });
  for (let index = 0; index < SESSIONS; index++) {
    const folder = join(dataDir, 'sessions', sessionId(index));
    mkdirSync(folder);
    writeFileSync(join(folder, 'session.json'), `${JSON.stringify(recordOf(index), null, 2)}\n`);
    const header = JSON.stringify({ formatVersion: FORMAT_VERSION, kind: 'parley-log', sessionId: sessionId(index) });
    writeFileSync(
      join(folder, 'log.jsonl'),
      `${[header, ...eventsOf(index).map((event) => JSON.stringify(event))].join('\n')}\n`,
    );
  }
}

/** Queries as people type them: a common word with a project word, a project word alone, two project words, and words no message holds. */
function queries(): string[] {
  const next = random(99);
  const list: string[] = [];
  for (let index = 0; index < 30; index++) {
    const block = eventsOf(Math.floor(next() * SESSIONS))[Math.floor(next() * 4)]!['block'] as { content: string };
    const words = block.content.split(' ');
    const project = words.filter((word) => !COMMON.includes(word));
    if (index % 3 === 0) list.push(project[0] ?? words[0]!);
    else if (index % 3 === 1) list.push(`${COMMON[index % COMMON.length]} ${project[0] ?? words[1]!}`);
    else list.push(project.slice(0, 2).join(' ') || words[0]!);
  }
  list.push('zzzz nothing', 'Привет мир', 'deploy OR 1=1; --');
  return list;
}

async function timeEach(count: number, action: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let index = 0; index < count; index++) {
    const started = performance.now();
    await action();
    samples.push(performance.now() - started);
  }
  return samples;
}

function ms(value: number): string {
  return `${value.toFixed(value < 10 ? 2 : 0)} ms`;
}

function verdict(value: number, target: number): string {
  return value <= target ? 'met' : `missed (${(value / target).toFixed(1)}×)`;
}

/** The CLI bundled once, so each `parley sessions` pays node's start-up and Parley's, not tsx's. */
async function bundleCli(folder: string): Promise<string> {
  const outfile = join(folder, 'parley.mjs');
  await build({
    entryPoints: [join(root, 'src/cli/main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile,
    logLevel: 'silent',
    banner: {
      js: "import { createRequire as parleyRequire } from 'node:module'; const require = parleyRequire(import.meta.url);",
    },
  });
  return outfile;
}

function timeCli(cli: string, args: string[], runs: number): number[] {
  const samples: number[] = [];
  for (let index = 0; index < runs; index++) {
    const started = performance.now();
    const output = execFileSync(process.execPath, [cli, ...args], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    samples.push(performance.now() - started);
    if (output.split('\n').filter(Boolean).length !== 50)
      throw new Error(`parley sessions printed ${output.split('\n').length} lines`);
  }
  return samples;
}

/** From navigation to the first session row painted, in headless Chromium against a server on `dataDir` (or a store). */
async function timeWebFirstRows(
  options: { dataDir: string; store?: SessionStore },
  runs: number,
): Promise<number[] | string> {
  let harness;
  try {
    const { startWebHarness } = await import('../test/ui/web/web-harness.js');
    harness = await startWebHarness({ dataDir: options.dataDir, ...(options.store ? { store: options.store } : {}) });
  } catch (error) {
    return `not run: ${String(error).split('\n')[0]}`;
  }
  try {
    const samples: number[] = [];
    for (let index = 0; index < runs; index++) {
      const page = await harness.page();
      const started = performance.now();
      await page.goto(harness.server.url);
      await page.waitForSelector('.session-row', { state: 'visible', timeout: 30_000 });
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined))));
      samples.push(performance.now() - started);
      await page.context().close();
    }
    return samples;
  } finally {
    await harness.close();
  }
}

interface StoreRows {
  name: string;
  firstPage: number[];
  search: number[];
  cli: number[];
  web: number[] | string;
  extra: Array<[string, string]>;
}

async function measureStore(
  store: SessionStore,
  searches: string[],
): Promise<{ firstPage: number[]; search: number[]; hits: number }> {
  const firstPage = await timeEach(30, () => store.listSessionPage!({ limit: 50 }));
  let hits = 0;
  const search: number[] = [];
  for (let round = 0; round < 2; round++) {
    for (const text of searches) {
      const started = performance.now();
      hits += (await store.searchSessions!({ text })).hits.length;
      search.push(performance.now() - started);
    }
  }
  return { firstPage, search, hits };
}

async function fileRows(folder: string, cli: string, searches: string[]): Promise<StoreRows> {
  const dataDir = join(folder, 'file', '.parley');
  let started = performance.now();
  writeFileSessions(dataDir);
  const generated = performance.now() - started;
  started = performance.now();
  let store = await createFileStore({ dataDir, onWarning: () => {} });
  await store.listSessionPage!({ limit: 1 });
  await store.searchSessions!({ text: 'the' });
  const built = performance.now() - started;
  await store.close();
  started = performance.now();
  store = await createFileStore({ dataDir, onWarning: () => {} });
  await store.listSessionPage!({ limit: 50 });
  const reopened = performance.now() - started;
  started = performance.now();
  await store.searchSessions!({ text: 'the' });
  const searchLoad = performance.now() - started;
  const measured = await measureStore(store, searches);
  await store.close();
  const cliSamples = timeCli(cli, ['--data-dir', dataDir, 'sessions'], 7);
  const web = await timeWebFirstRows({ dataDir }, 3);
  return {
    name: 'file',
    firstPage: measured.firstPage,
    search: measured.search,
    cli: cliSamples,
    web,
    extra: [
      [`write ${SESSIONS.toLocaleString('en-US')} sessions (bench setup)`, ms(generated)],
      ['first open: both indexes built from the sessions', ms(built)],
      ['open from the indexes + first page', ms(reopened)],
      ['search index loaded in a fresh process (first search)', ms(searchLoad)],
      ['search hits returned (all queries)', String(measured.hits)],
    ],
  };
}

async function postgresRows(folder: string, cli: string, searches: string[]): Promise<StoreRows | string> {
  if (findPostgresBin() === undefined && process.env['PARLEY_TEST_DATABASE_URL'] === undefined)
    return 'PostgreSQL is not installed (`apt-get install -y postgresql`)';
  let server: TestPostgres | undefined;
  try {
    server = await startTestPostgres({ fsync: true });
    const url = server.url();
    const schema = 'parley';
    // The schema made by the store's own migrations, then rows in bulk as the store writes them.
    await (await createPostgresStore({ connectionString: url, schema })).close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    let started = performance.now();
    const CHUNK = 5_000;
    for (let first = 0; first < SESSIONS; first += CHUNK) {
      const ids: string[] = [];
      const records: string[] = [];
      const eventIds: string[] = [];
      const seqs: number[] = [];
      const bodies: string[] = [];
      for (let index = first; index < Math.min(SESSIONS, first + CHUNK); index++) {
        ids.push(sessionId(index));
        records.push(JSON.stringify(recordOf(index)));
        for (const event of eventsOf(index)) {
          const { sessionId: id, seq, ...body } = event;
          eventIds.push(id as string);
          seqs.push(seq as number);
          bodies.push(JSON.stringify(body));
        }
      }
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO ${schema}.sessions (session_id, record, status, backend_type, agent_type, scope_kind)
         SELECT id, record, 'active', 'scripted', 'dev', 'draft' FROM unnest($1::text[], $2::text[]) AS s(id, record)`,
        [ids, records],
      );
      await client.query(
        `INSERT INTO ${schema}.session_logs (session_id, last_seq) SELECT id, 3 FROM unnest($1::text[]) AS s(id)`,
        [ids],
      );
      await client.query(
        `INSERT INTO ${schema}.events (session_id, seq, body) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])`,
        [eventIds, seqs, bodies],
      );
      await client.query('COMMIT');
    }
    await client.query(`ANALYZE ${schema}.sessions; ANALYZE ${schema}.session_messages`);
    const generated = performance.now() - started;
    await client.end();
    const store = await createPostgresStore({ connectionString: url, schema });
    started = performance.now();
    await store.listSessionPage!({ limit: 50 });
    const firstEver = performance.now() - started;
    const measured = await measureStore(store, searches);
    await store.close();
    const cliSamples = timeCli(cli, ['--store', url, 'sessions'], 7);
    const webStore = await createPostgresStore({ connectionString: url, schema });
    const web = await timeWebFirstRows({ dataDir: join(folder, 'pg-web', '.parley'), store: webStore }, 3);
    await webStore.close().catch(() => undefined);
    return {
      name: 'PostgreSQL',
      firstPage: measured.firstPage,
      search: measured.search,
      cli: cliSamples,
      web,
      extra: [
        [
          `insert ${SESSIONS.toLocaleString('en-US')} sessions, ${(SESSIONS * 4).toLocaleString('en-US')} events, indexed by the trigger (bench setup)`,
          ms(generated),
        ],
        ['first page on a new connection', ms(firstEver)],
        ['search hits returned (all queries)', String(measured.hits)],
      ],
    };
  } catch (error) {
    return `failed: ${String(error)}`;
  } finally {
    await server?.destroy();
  }
}

export async function run(): Promise<string> {
  const folder = mkdtempSync(join(tmpdir(), 'parley-scale-'));
  const cleanup = [folder];
  try {
    // Beside the repository's node_modules, so the bundle's packages resolve.
    const bundleFolder = mkdtempSync(join(root, '.bench-scale-'));
    cleanup.push(bundleFolder);
    const cli = await bundleCli(bundleFolder);
    const searches = queries();
    const sections: string[] = [
      `### ${SESSIONS.toLocaleString('en-US')} sessions of four messages\n`,
      `Search queries: ${searches.length} (a project word; a common word and a project word; two project words; three that match nothing or hold SQL), each run twice.\n`,
    ];
    const results: Array<StoreRows | string> = [
      await fileRows(folder, cli, searches),
      await postgresRows(folder, cli, searches),
    ];
    const rows: string[][] = [];
    const notes: string[] = [];
    // The floor of any fresh-process row: node starting and exiting with nothing to do, on this machine now.
    const floor: number[] = [];
    for (let index = 0; index < 7; index++) {
      const started = performance.now();
      execFileSync(process.execPath, ['-e', '0']);
      floor.push(performance.now() - started);
    }
    rows.push(['(floor)', 'bare `node -e 0`, start to exit (p50)', ms(percentile(floor, 0.5)), '', '']);
    for (const result of results) {
      if (typeof result === 'string') {
        notes.push(`PostgreSQL: ${result}`);
        continue;
      }
      const page = percentile(result.firstPage, 0.5);
      const search = percentile(result.search, 0.5);
      const cliP50 = percentile(result.cli, 0.5);
      rows.push([result.name, 'list_sessions first page (store, p50)', ms(page), '< 300 ms', verdict(page, 300)]);
      rows.push([
        result.name,
        '`parley sessions`, newest 50 (fresh process, p50)',
        ms(cliP50),
        '< 300 ms',
        verdict(cliP50, 300),
      ]);
      rows.push([result.name, 'search p50', ms(search), '< 300 ms', verdict(search, 300)]);
      rows.push([result.name, 'search p99', ms(percentile(result.search, 0.99)), '', '']);
      if (typeof result.web === 'string') rows.push([result.name, 'web UI first rows shown', result.web, '< 1 s', '']);
      else {
        const web = percentile(result.web, 0.5);
        rows.push([
          result.name,
          'web UI first rows shown (from navigation, p50)',
          ms(web),
          '< 1 s',
          verdict(web, 1_000),
        ]);
      }
      for (const [name, value] of result.extra) rows.push([result.name, name, value, '', '']);
    }
    sections.push(table(['store', 'what', 'measured', 'target', ''], rows));
    if (notes.length > 0) sections.push(`\n${notes.join('\n')}\n`);
    return sections.join('\n');
  } finally {
    for (const path of cleanup) rmSync(path, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await run());
