/**
 * 100,000 sessions of four messages each, on the file store and on PostgreSQL: the first page of
 * `list_sessions` (the store's page from its index), `parley sessions` printing the newest 50 (a
 * fresh process: plain `node` on an esbuild bundle of the CLI, so tsx's start-up does not count),
 * full-text search p50 over a mix of common and rare words, and the web UI's first session rows
 * shown in headless Chromium, from navigation to the first row painted. Each row prints its target.
 *
 * The sessions are written straight into the store's own format in bulk (session folders with
 * session.json and log.jsonl; rows in PostgreSQL's tables, the search index filled by its own
 * function, index_pending_messages()), then the file store builds its indexes from them at its first open, timed as its own
 * row. `PARLEY_BENCH_SCALE_SESSIONS` sets the count (default 100,000).
 * `npm run bench scale`, or `npx tsx bench/scale.bench.ts`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import pg from 'pg';
import type { UnsequencedEvent } from '../src/conversation/index.js';
import { SessionRecordSchema, createFileStore, createPostgresStore, type SessionStore } from '../src/store/index.js';
import { findPostgresBin, startTestPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import { INDEX_BATCH_SESSIONS } from '../src/store/sessions/postgres-search-indexer.js';
import { percentile, table } from './stats.js';
import { eventsOf, queries, recordOf, sessionId, writeFileSessions } from './scale-corpus.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SESSIONS = Number(process.env['PARLEY_BENCH_SCALE_SESSIONS'] ?? 100_000);
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

/**
 * The CLI bundled once, so each run pays node's start-up and Parley's, not tsx's. Split into chunks
 * at each dynamic import, as the compiled `dist/` is, so a command loads only the modules (and the
 * packages) it imports: one file would import every package of every command at start-up.
 */
async function bundleCli(folder: string): Promise<string> {
  await build({
    entryPoints: [join(root, 'src/cli/main.ts')],
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outdir: folder,
    logLevel: 'silent',
    banner: {
      js: "import { createRequire as parleyRequire } from 'node:module'; const require = parleyRequire(import.meta.url);",
    },
  });
  return join(folder, 'main.js');
}

interface CliSamples {
  /** Wall time from spawn to exit. */
  wall: number[];
  /** The child's CPU time (user + system): what the machine's load does not stretch. */
  cpu: number[];
}

/**
 * Runs the CLI `runs` times, a fresh process each; `check` is given its output. The child's CPU
 * time is read with bash's `times` (its second line: the children's user and system time).
 */
function timeCli(cli: string, args: string[], runs: number, check: (output: string) => void): CliSamples {
  const samples: CliSamples = { wall: [], cpu: [] };
  for (let index = 0; index < runs; index++) {
    const started = performance.now();
    const result = spawnSync(
      'bash',
      [
        '-c',
        'node_bin="$1"; shift; "$node_bin" "$@" 2>/dev/null; status=$?; times >&2; exit $status',
        'bash',
        process.execPath,
        cli,
        ...args,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    samples.wall.push(performance.now() - started);
    if (result.status !== 0) throw new Error(`parley ${args.join(' ')} exited ${String(result.status)}`);
    check(result.stdout);
    const children = result.stderr.trim().split('\n').at(-1) ?? '';
    const seconds = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((match) => Number(match[1]) * 60 + Number(match[2]));
    samples.cpu.push(((seconds[0] ?? 0) + (seconds[1] ?? 0)) * 1_000);
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
  cli: CliSamples;
  searchCli: CliSamples;
  web: number[] | string;
  extra: Array<[string, string]>;
}

function fiftyLines(output: string): void {
  const lines = output.split('\n').filter(Boolean).length;
  if (lines !== 50) throw new Error(`parley sessions printed ${lines} lines, not 50`);
}

function someHits(output: string): void {
  if (!/ seq \d+ /.test(output)) throw new Error(`parley search found nothing: ${output.slice(0, 200)}`);
}

/** A query of two words for `parley search` that finds something: a common word and a project word, as people type. */
async function cliQuery(store: SessionStore, searches: readonly string[]): Promise<string[]> {
  for (const text of searches)
    if (text.split(' ').length === 2 && (await store.searchSessions!({ text })).hits.length > 0) return text.split(' ');
  return searches[0]!.split(' ');
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
  writeFileSessions(dataDir, SESSIONS);
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
  const words = await cliQuery(store, searches);
  await store.close();
  const cliSamples = timeCli(cli, ['--data-dir', dataDir, 'sessions'], 7, fiftyLines);
  const searchCli = timeCli(cli, ['--data-dir', dataDir, 'search', ...words], 7, someHits);
  const web = await timeWebFirstRows({ dataDir }, 3);
  return {
    name: 'file',
    firstPage: measured.firstPage,
    search: measured.search,
    cli: cliSamples,
    searchCli,
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

/** Rows in bulk, as the PostgreSQL store writes them (its trigger fills the search table): five statements per 5,000 sessions. */
async function insertPostgresSessions(client: pg.Client, schema: string, count: number): Promise<void> {
  const CHUNK = 5_000;
  for (let first = 0; first < count; first += CHUNK) {
    const ids: string[] = [];
    const records: string[] = [];
    const eventIds: string[] = [];
    const seqs: number[] = [];
    const bodies: string[] = [];
    for (let index = first; index < Math.min(count, first + CHUNK); index++) {
      ids.push(sessionId(index));
      records.push(JSON.stringify(SessionRecordSchema.parse(recordOf(index))));
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
  // The search index as the store fills it after its appends (migration 6): by its own function.
  for (let after: string | null = null, first = true; first || after !== null; first = false)
    after = (
      await client.query<{ last_id: string | null }>(
        `SELECT last_id FROM ${schema}.index_pending_messages($1, $2, true)`,
        [INDEX_BATCH_SESSIONS, after],
      )
    ).rows[0]!.last_id;
}

/** Every row of a session, as the tables hold them: what the bulk writer must match. */
async function postgresRowsOf(client: pg.Client, schema: string): Promise<string> {
  const tables = [
    `SELECT session_id, record, status, backend_type, agent_type, scope_kind, feature_id, task_id, task_state FROM ${schema}.sessions ORDER BY 1`,
    `SELECT session_id, last_seq FROM ${schema}.session_logs ORDER BY 1`,
    `SELECT session_id, seq, body FROM ${schema}.events ORDER BY 1, 2`,
    `SELECT session_id, seq, block_id, conversation_id, role, at, content, words::text FROM ${schema}.session_messages ORDER BY 1, 2`,
  ];
  const rows = [];
  for (const query of tables) rows.push((await client.query(query)).rows);
  return JSON.stringify(rows);
}

/** Three sessions written through the store's API and three by the bulk writer, in two schemas: every row must be the same. */
async function checkPostgresCorpus(client: pg.Client, url: string): Promise<void> {
  const store = await createPostgresStore({ connectionString: url, schema: 'corpus_api' });
  for (let index = 0; index < 3; index++) {
    await store.createSession(recordOf(index));
    await store.append(sessionId(index), unsequenced(index));
  }
  await store.close();
  await (await createPostgresStore({ connectionString: url, schema: 'corpus_bulk' })).close();
  await insertPostgresSessions(client, 'corpus_bulk', 3);
  if ((await postgresRowsOf(client, 'corpus_api')) !== (await postgresRowsOf(client, 'corpus_bulk')))
    throw new Error('the bulk PostgreSQL writer does not write what the store writes');
}

/** Three sessions written through the file store's API and three by the bulk writer: every file the same, byte for byte. */
async function checkFileCorpus(folder: string): Promise<void> {
  const api = join(folder, 'corpus-api');
  const bulk = join(folder, 'corpus-bulk');
  writeFileSessions(bulk, 3);
  const store = await createFileStore({ dataDir: api, onWarning: () => {} });
  for (let index = 0; index < 3; index++) {
    await store.createSession(recordOf(index));
    await store.append(sessionId(index), unsequenced(index));
  }
  await store.close();
  for (let index = 0; index < 3; index++)
    for (const name of ['session.json', 'log.jsonl']) {
      const path = (dataDir: string) => join(dataDir, 'sessions', sessionId(index), name);
      if (readFileSync(path(api), 'utf8') !== readFileSync(path(bulk), 'utf8'))
        throw new Error(`the bulk file writer does not write what the store writes (${name})`);
    }
}

function unsequenced(index: number): UnsequencedEvent[] {
  return eventsOf(index).map(({ sessionId: _id, seq: _seq, ...event }) => event) as unknown as UnsequencedEvent[];
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
    // A failure below ends the server under this connection (finally): that must not throw from the process.
    client.on('error', () => undefined);
    await checkPostgresCorpus(client, url);
    let started = performance.now();
    await insertPostgresSessions(client, schema, SESSIONS);
    await client.query(`ANALYZE ${schema}.sessions; ANALYZE ${schema}.session_messages`);
    const generated = performance.now() - started;
    await client.end();
    const store = await createPostgresStore({ connectionString: url, schema });
    started = performance.now();
    await store.listSessionPage!({ limit: 50 });
    const firstEver = performance.now() - started;
    const measured = await measureStore(store, searches);
    const words = await cliQuery(store, searches);
    await store.close();
    const cliSamples = timeCli(cli, ['--store', url, 'sessions'], 7, fiftyLines);
    const searchCli = timeCli(cli, ['--store', url, 'search', ...words], 7, someHits);
    const webStore = await createPostgresStore({ connectionString: url, schema });
    const web = await timeWebFirstRows({ dataDir: join(folder, 'pg-web', '.parley'), store: webStore }, 3);
    await webStore.close().catch(() => undefined);
    return {
      name: 'PostgreSQL',
      firstPage: measured.firstPage,
      search: measured.search,
      cli: cliSamples,
      searchCli,
      web,
      extra: [
        [
          `insert ${SESSIONS.toLocaleString('en-US')} sessions, ${(SESSIONS * 4).toLocaleString('en-US')} events, indexed by index_pending_messages() (bench setup)`,
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
    await checkFileCorpus(folder);
    const searches = queries(SESSIONS);
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
    const missed: string[] = [];
    // The floor of any fresh-process row: node starting and exiting with nothing to do, on this machine now.
    const floor: number[] = [];
    for (let index = 0; index < 7; index++) {
      const started = performance.now();
      execFileSync(process.execPath, ['-e', '0']);
      floor.push(performance.now() - started);
    }
    rows.push(['(floor)', 'bare `node -e 0`, start to exit (p50)', ms(percentile(floor, 50)), '', '']);
    for (const result of results) {
      if (typeof result === 'string') {
        notes.push(`PostgreSQL: ${result}`);
        missed.push(`PostgreSQL: ${result}`);
        continue;
      }
      const page = percentile(result.firstPage, 50);
      const search = percentile(result.search, 50);
      const target = (what: string, value: number, limit: number) => {
        const met = value <= limit;
        if (!met) missed.push(`${result.name}: ${what} ${ms(value)} > ${ms(limit)}`);
        return met ? 'met' : `missed (${(value / limit).toFixed(1)}×)`;
      };
      rows.push([
        result.name,
        'list_sessions first page (store, p50)',
        ms(page),
        '< 300 ms',
        target('first page', page, 300),
      ]);
      for (const [what, samples] of [
        ['`parley sessions`, newest 50', result.cli],
        ['`parley search` two words, first search of a process', result.searchCli],
      ] as const) {
        const wall = percentile(samples.wall, 50);
        rows.push([result.name, `${what} (fresh process, p50)`, ms(wall), '< 300 ms', target(what, wall, 300)]);
        rows.push([result.name, `${what}: the process's CPU time (p50)`, ms(percentile(samples.cpu, 50)), '', '']);
      }
      rows.push([
        result.name,
        'search p50 (store, in process)',
        ms(search),
        '< 300 ms',
        target('search p50', search, 300),
      ]);
      rows.push([result.name, 'search p99', ms(percentile(result.search, 99)), '', '']);
      if (typeof result.web === 'string') {
        missed.push(`${result.name}: web UI ${result.web}`);
        rows.push([result.name, 'web UI first rows shown', result.web, '< 1 s', 'not run']);
      } else {
        const web = percentile(result.web, 50);
        rows.push([
          result.name,
          'web UI first rows shown (from navigation, p50)',
          ms(web),
          '< 1 s',
          target('web first rows', web, 1_000),
        ]);
      }
      for (const [name, value] of result.extra) rows.push([result.name, name, value, '', '']);
    }
    sections.push(table(['store', 'what', 'measured', 'target', ''], rows));
    if (notes.length > 0) sections.push(`\n${notes.join('\n')}\n`);
    const load = loadavg()[0]!.toFixed(1);
    sections.push(`\nLoad average (1 min) at the end: ${load} on ${availableParallelism()} cores.\n`);
    if (missed.length > 0) {
      // The bench fails past its targets; the table above says by how much.
      process.exitCode = 1;
      sections.push(`\n**FAILED: ${missed.length} target(s) missed.** ${missed.join('; ')}\n`);
    }
    return sections.join('\n');
  } finally {
    for (const path of cleanup) rmSync(path, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await run());
