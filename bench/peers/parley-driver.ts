/**
 * Parley's side of the peers bench (bench/peers.bench.ts bundles this file with esbuild and runs it
 * under plain `node`, like the peers' drivers): each step is one `SessionStore.append` of a ~1 KB
 * `assistant_text` block, resolved once durable.
 *
 * Systems: `parley-postgres` (the PostgreSQL store, group commit), `parley-postgres-unindexed` (the
 * same with the search indexer made a no-op in the bench's schema: what indexing beside the appends
 * costs, not a way Parley runs), `parley-file` (the file store: write + fdatasync of the session's log), and
 * `floor-postgres`, the bare statement underneath what
 * Parley's PostgreSQL store must do per commit: insert the batch AND give each session its next seqs,
 * in one statement through `pg`, the steps of every session that are waiting sent together.
 */
import pg from 'pg';
import type { UnsequencedEvent } from '../../src/conversation/index.js';
import { createFileStore, createPostgresStore, type SessionStore } from '../../src/store/index.js';
import { benchRecord } from '../bench-records.js';
import { driverArguments, report, runWorkload } from './workload.mjs';

const { system, options } = driverArguments();

function stepEvent(session: number, step: number, text: string): UnsequencedEvent {
  return {
    type: 'block_complete',
    conversationId: 'main',
    block: { type: 'assistant_text', id: `s${session}-${step}`, createdAt: 1_700_000_000_000, content: text },
  };
}

async function parley(store: SessionStore): Promise<void> {
  const ids = (session: number) => `peer-session-${session}`;
  const result = await runWorkload({
    sessions: options.sessions,
    steps: options.steps,
    prepare: (session) => store.createSession(benchRecord(ids(session), session)),
    step: (session, step, text) => store.append(ids(session), [stepEvent(session, step, text)]),
  });
  await store.close();
  report(system, result);
}

/**
 * The floor: what a bare client must send at least, per commit, to do the store's job. Steps that
 * arrive while a statement runs wait and go together in the next one (group commit, as the store
 * does); the statement bumps each session's counter and inserts the events numbered from it.
 */
async function floor(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const quoted = pg.escapeIdentifier(schema);
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
  await client.query(`CREATE TABLE ${quoted}.floor_logs (session_id text PRIMARY KEY, last_seq bigint NOT NULL)`);
  await client.query(
    `CREATE TABLE ${quoted}.floor_events (session_id text NOT NULL, seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session_id, seq))`,
  );
  const statement = {
    name: 'floor_append',
    text: `WITH bumped AS (
        UPDATE ${quoted}.floor_logs s SET last_seq = s.last_seq + w.n
        FROM unnest($1::text[], $2::int[]) AS w(session_id, n)
        WHERE s.session_id = w.session_id
        RETURNING s.session_id, s.last_seq - w.n AS base
      )
      INSERT INTO ${quoted}.floor_events (session_id, seq, body)
      SELECT e.session_id, bumped.base + 1 + e.event_offset, e.body
      FROM unnest($3::text[], $4::int[], string_to_array($5::text, E'\n')) AS e(session_id, event_offset, body)
      JOIN bumped USING (session_id)`,
  };
  let waiting: { sessionId: string; body: string; done: () => void }[] = [];
  let flushing: Promise<void> | undefined;
  const flush = async () => {
    while ((await new Promise((resolve) => setImmediate(resolve)), waiting.length > 0)) {
      const group = waiting;
      waiting = [];
      const counts = new Map<string, number>();
      const offsets = group.map(({ sessionId }) => {
        const offset = counts.get(sessionId) ?? 0;
        counts.set(sessionId, offset + 1);
        return offset;
      });
      await client.query({
        ...statement,
        values: [
          [...counts.keys()],
          [...counts.values()],
          group.map((entry) => entry.sessionId),
          offsets,
          group.map((entry) => entry.body).join('\n'),
        ],
      });
      for (const entry of group) entry.done();
    }
    flushing = undefined;
  };
  const ids = (session: number) => `floor-session-${session}`;
  const result = await runWorkload({
    sessions: options.sessions,
    steps: options.steps,
    prepare: (session) =>
      client.query(`INSERT INTO ${quoted}.floor_logs (session_id, last_seq) VALUES ($1, 0)`, [ids(session)]),
    step: (session, step, text) =>
      new Promise<void>((done) => {
        const body = JSON.stringify({ ...stepEvent(session, step, text), at: Date.now() });
        waiting.push({ sessionId: ids(session), body, done });
        flushing ??= flush();
      }),
  });
  await client.end();
  report(system, result);
}

if (system === 'parley-postgres') {
  await parley(await createPostgresStore({ connectionString: options.url!, schema: options.schema! }));
} else if (system === 'parley-postgres-unindexed') {
  // The store's search indexer runs beside the appends (migration 6): here it finds nothing to do.
  const store = await createPostgresStore({ connectionString: options.url!, schema: options.schema! });
  const client = new pg.Client({ connectionString: options.url! });
  await client.connect();
  await client.query(
    `CREATE OR REPLACE FUNCTION ${pg.escapeIdentifier(options.schema!)}.index_pending_messages(max_sessions integer, after_id text, sweep boolean, OUT added bigint, OUT last_id text) LANGUAGE sql AS 'SELECT 0::bigint, NULL::text'`,
  );
  await client.end();
  await parley(store);
} else if (system === 'parley-file') {
  await parley(await createFileStore({ dataDir: options.dir!, onWarning: () => {} }));
} else if (system === 'floor-postgres') {
  await floor(options.url!, options.schema!);
} else {
  throw new Error(
    `parley-driver: unknown system "${system}" (parley-postgres, parley-postgres-unindexed, parley-file, floor-postgres)`,
  );
}
