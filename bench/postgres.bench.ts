/**
 * The PostgreSQL store beside bare `pg` calls on the same server in the same run:
 * - durable append of a 1 KB event, each awaited: p50 against a single-row INSERT (autocommit) through `pg`;
 * - 50 sessions appending at once: events/s against the bare statement that does what the store must per
 *   commit: insert the batch of 50 AND give each session its next seqs (a counter per session bumped in the
 *   same statement), each batch committed before the next;
 * - listing 10,000 sessions; loading a 10,000-message session (events kept as text, with jsonb beside it);
 * - cross-server delivery at 1,000 events/s: p99 on a second server against the same-server p99 (postgres-cross-server.ts).
 *
 * Starts its own server from Debian's `postgresql` package (fsync on), or uses PARLEY_BENCH_DATABASE_URL.
 */
import pg from 'pg';
import type { UnsequencedEvent } from '../src/conversation/index.js';
import { createPostgresStore, type SessionStore } from '../src/store/index.js';
import { findPostgresBin, startTestPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import { measureCrossServerDelivery } from './postgres-cross-server.js';
import { formatMs, percentile, ratio, table } from './stats.js';
import { benchRecord } from './bench-records.js';

const APPEND_SAMPLES = 1_000;
const ROUNDS = 4;
const WRITERS = 50;
const EVENTS_PER_WRITER = 100;
const SESSIONS = 10_000;
const MESSAGES = 10_000;
const LOADS = 7;

const text1k = (index: number) => {
  const head = `message ${index}: `;
  return head + 'the quick brown fox jumps over the lazy dog; '.repeat(23).slice(0, 1000 - head.length);
};

function messageEvent(index: number): UnsequencedEvent {
  return {
    type: 'block_complete',
    conversationId: 'main',
    block: { type: 'user_message', id: `m${index}`, createdAt: 1_700_000_000_000, content: text1k(index) },
  };
}

async function timed(count: number, op: (index: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const before = performance.now();
    await op(index);
    samples.push(performance.now() - before);
  }
  return samples;
}

const median = (values: readonly number[]) => percentile(values, 50);
const rate = (events: number, ms: number) => `${Math.round((events / ms) * 1000).toLocaleString('en-US')}/s`;
const met = (ok: boolean) => (ok ? 'met' : 'NOT met');

export async function run(): Promise<string> {
  const external = process.env.PARLEY_BENCH_DATABASE_URL;
  if (external === undefined && findPostgresBin() === undefined) {
    return '### PostgreSQL store\n\nSkipped: PostgreSQL is not installed (`apt-get install -y postgresql`), and PARLEY_BENCH_DATABASE_URL is not set.\n';
  }
  const saved = process.env.PARLEY_TEST_DATABASE_URL;
  if (external !== undefined) process.env.PARLEY_TEST_DATABASE_URL = external;
  else delete process.env.PARLEY_TEST_DATABASE_URL;
  let server: TestPostgres | undefined;
  try {
    server = await startTestPostgres({ fsync: true });
    return await measure(server);
  } finally {
    await server?.destroy();
    if (saved === undefined) delete process.env.PARLEY_TEST_DATABASE_URL;
    else process.env.PARLEY_TEST_DATABASE_URL = saved;
  }
}

async function measure(server: TestPostgres): Promise<string> {
  const schema = server.freshSchema('bench');
  const quoted = pg.escapeIdentifier(schema);
  const store = await createPostgresStore({ connectionString: server.url(), schema });
  const pool = new pg.Pool({ connectionString: server.url(), max: 10 });
  await pool.query(
    `CREATE TABLE ${quoted}.bare (session_id text NOT NULL, seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session_id, seq))`,
  );
  await pool.query(`CREATE TABLE ${quoted}.bare_logs (session_id text PRIMARY KEY, last_seq bigint NOT NULL)`);
  await pool.query(
    `CREATE TABLE ${quoted}.bare_jsonb (session_id text NOT NULL, seq bigint NOT NULL, body jsonb NOT NULL, PRIMARY KEY (session_id, seq))`,
  );
  const settings = await pool.query<{ name: string; setting: string }>(
    "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'server_version')",
  );
  const bodies = Array.from({ length: Math.max(MESSAGES, APPEND_SAMPLES) }, (_, index) =>
    JSON.stringify({ ...messageEvent(index), at: Date.now() }),
  );
  try {
    // 1. One durable append at a time, rounds interleaved so both sides see the same machine.
    await store.createSession(benchRecord('single'));
    const parleySingle: number[] = [];
    const bareSingle: number[] = [];
    const perRound = APPEND_SAMPLES / ROUNDS;
    for (let round = 0; round < ROUNDS; round += 1) {
      bareSingle.push(
        ...(await timed(perRound, (index) =>
          pool.query(`INSERT INTO ${quoted}.bare (session_id, seq, body) VALUES ($1, $2, $3)`, [
            'single',
            round * perRound + index,
            bodies[index]!,
          ]),
        )),
      );
      parleySingle.push(
        ...(await timed(perRound, (index) => store.append('single', [messageEvent(round * perRound + index)]))),
      );
    }

    // 2. Fifty sessions appending at once, each awaiting its own appends.
    for (let writer = 0; writer < WRITERS; writer += 1) await store.createSession(benchRecord(`writer-${writer}`));
    // The floor numbers the events itself: each session's counter is bumped by the events it gets and
    // the events are inserted numbered from the old value, in one statement (no locks taken first,
    // no group record, no notification, no search index: the least a numbered batch append costs).
    const writerIds = Array.from({ length: WRITERS }, (_, writer) => `bare-writer-${writer}`);
    await pool.query(`INSERT INTO ${quoted}.bare_logs (session_id, last_seq) SELECT unnest($1::text[]), 0`, [
      writerIds,
    ]);
    const bareBatches = async () => {
      const started = performance.now();
      for (let batch = 0; batch < EVENTS_PER_WRITER; batch += 1) {
        await pool.query({
          name: 'bare_numbered_batch',
          text: `WITH bumped AS (
              UPDATE ${quoted}.bare_logs s SET last_seq = s.last_seq + w.n
              FROM unnest($1::text[], $2::int[]) AS w(session_id, n)
              WHERE s.session_id = w.session_id
              RETURNING s.session_id, s.last_seq - w.n AS base
            )
            INSERT INTO ${quoted}.bare (session_id, seq, body)
            SELECT e.session_id, bumped.base + 1 + e.event_offset, e.body
            FROM unnest($3::text[], $4::int[], $5::text[]) AS e(session_id, event_offset, body)
            JOIN bumped USING (session_id)`,
          values: [
            writerIds,
            writerIds.map(() => 1),
            writerIds,
            writerIds.map(() => 0),
            writerIds.map((_, writer) => bodies[(batch * WRITERS + writer) % bodies.length]!),
          ],
        });
      }
      return performance.now() - started;
    };
    const parleyWriters = async () => {
      const started = performance.now();
      await Promise.all(
        Array.from({ length: WRITERS }, async (_, writer) => {
          for (let index = 0; index < EVENTS_PER_WRITER; index += 1)
            await store.append(`writer-${writer}`, [messageEvent(index)]);
        }),
      );
      return performance.now() - started;
    };
    await pool.query(`DELETE FROM ${quoted}.bare WHERE session_id LIKE 'bare-writer-%'`);
    const bareManyMs = await bareBatches();
    const parleyManyMs = await parleyWriters();
    const events = WRITERS * EVENTS_PER_WRITER;

    // 3. Listing 10,000 sessions, from a freshly opened store.
    const ids = Array.from({ length: SESSIONS }, (_, index) => `listed-${index}`);
    for (let start = 0; start < SESSIONS; start += 500) {
      await Promise.all(
        ids.slice(start, start + 500).map((id, offset) => store.createSession(benchRecord(id, start + offset))),
      );
    }
    const lister = await createPostgresStore({ connectionString: server.url(), schema });
    const listMs: number[] = [];
    let listed = 0;
    for (let rep = 0; rep < LOADS; rep += 1) {
      const before = performance.now();
      listed = 0;
      for await (const _ of lister.listSessions()) listed += 1;
      listMs.push(performance.now() - before);
    }
    const bareListMs = await timed(LOADS, async () => {
      const { rows } = await pool.query<{ record: string }>(`SELECT record FROM ${quoted}.sessions`);
      for (const row of rows) JSON.parse(row.record);
    });

    // 4. Loading a 10,000-message session: the store, and bare reads of the same bodies as text and as jsonb.
    await store.createSession(benchRecord('big'));
    for (let start = 0; start < MESSAGES; start += 100)
      await store.append(
        'big',
        Array.from({ length: 100 }, (_, offset) => messageEvent(start + offset)),
      );
    for (let start = 0; start < MESSAGES; start += 1_000) {
      const seqs = Array.from({ length: 1_000 }, (_, offset) => start + offset);
      const batch = seqs.map((seq) => bodies[seq]!);
      await pool.query(
        `INSERT INTO ${quoted}.bare (session_id, seq, body) SELECT 'big', * FROM unnest($1::bigint[], $2::text[])`,
        [seqs, batch],
      );
      await pool.query(
        `INSERT INTO ${quoted}.bare_jsonb (session_id, seq, body) SELECT 'big', * FROM unnest($1::bigint[], $2::jsonb[])`,
        [seqs, batch],
      );
    }
    let loaded = 0;
    const loadMs = await timed(LOADS, async () => {
      loaded = 0;
      for await (const _ of lister.readLog('big')) loaded += 1;
    });
    const bareTextMs = await timed(LOADS, async () => {
      const { rows } = await pool.query<{ body: string }>(
        `SELECT seq, body FROM ${quoted}.bare WHERE session_id = 'big' ORDER BY seq`,
      );
      for (const row of rows) JSON.parse(row.body);
    });
    // node-postgres parses jsonb with JSON.parse after the server renders it as text.
    const bareJsonbMs = await timed(LOADS, async () => {
      await pool.query(`SELECT seq, body FROM ${quoted}.bare_jsonb WHERE session_id = 'big' ORDER BY seq`);
    });
    await lister.close();

    // 5. Cross-server delivery: its own schema, two store instances as two servers would have.
    const deliverySchema = server.freshSchema('bench_cross');
    const delivery = await measureCrossServerDelivery(server.url(), deliverySchema);
    await server.dropSchema(deliverySchema);

    const singleP50 = median(parleySingle);
    const bareP50 = median(bareSingle);
    const parleyRate = events / parleyManyMs;
    const bareRate = events / bareManyMs;
    const setting = (name: string) => settings.rows.find((row) => row.name === name)?.setting ?? '?';
    return [
      '### PostgreSQL store',
      '',
      `PostgreSQL ${setting('server_version')} on 127.0.0.1, fsync=${setting('fsync')}, synchronous_commit=${setting('synchronous_commit')}; ` +
        'each Parley row beside its floor through `pg`, same server, same run.',
      '',
      table(
        ['measure', 'Parley', 'floor', 'Parley vs floor', 'target'],
        [
          [
            `durable append of a 1 KB event, p50 (${APPEND_SAMPLES} each, awaited one by one)`,
            `${formatMs(singleP50)} (p99 ${formatMs(percentile(parleySingle, 99))})`,
            `${formatMs(bareP50)} (p99 ${formatMs(percentile(bareSingle, 99))}): single-row INSERT, autocommit`,
            ratio(singleP50, bareP50),
            `≤ 1.5×: ${met(singleP50 <= 1.5 * bareP50)}`,
          ],
          [
            `${WRITERS} sessions appending at once (${events.toLocaleString('en-US')} events of 1 KB)`,
            rate(events, parleyManyMs),
            `${rate(events, bareManyMs)}: one statement per commit inserting ${WRITERS} rows and numbering them per session`,
            ratio(parleyRate, bareRate),
            `≥ 0.8×: ${met(parleyRate >= 0.8 * bareRate)}`,
          ],
          [
            `list ${listed.toLocaleString('en-US')} sessions (a freshly opened store, median of ${LOADS})`,
            formatMs(median(listMs)),
            `${formatMs(median(bareListMs))}: SELECT + JSON.parse`,
            ratio(median(listMs), median(bareListMs)),
            `< 250 ms: ${met(median(listMs) < 250)}`,
          ],
          [
            `load a ${loaded.toLocaleString('en-US')}-message session (median of ${LOADS})`,
            formatMs(median(loadMs)),
            `${formatMs(median(bareTextMs))}: SELECT text + JSON.parse`,
            ratio(median(loadMs), median(bareTextMs)),
            `< 100 ms: ${met(median(loadMs) < 100)}`,
          ],
          [
            '    the same events as jsonb (pg parses them)',
            '',
            formatMs(median(bareJsonbMs)),
            `text is ${ratio(median(bareJsonbMs), median(bareTextMs))} faster`,
            '',
          ],
          [
            `cross-server delivery at 1,000 events/s, p99 (${delivery.events.toLocaleString('en-US')} events, append call to session:event)`,
            `${formatMs(delivery.crossServerP99)} on server B (p50 ${formatMs(delivery.crossServerP50)})`,
            `${formatMs(delivery.sameServerP99)} on server A itself (p50 ${formatMs(delivery.sameServerP50)})`,
            ratio(delivery.crossServerP99, delivery.sameServerP99),
            `≤ 2×: ${met(delivery.crossServerP99 <= 2 * delivery.sameServerP99)}`,
          ],
        ],
      ),
      '',
    ].join('\n');
  } finally {
    await store.close();
    await pool.end();
  }
}
