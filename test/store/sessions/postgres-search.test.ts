import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type SessionStore } from '../../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { sessionRecord } from '../builders.js';
import { message, runListingSearchConformance } from './listing-search-conformance.js';

const skipReason = postgresSkipReason();

describe.skipIf(skipReason !== undefined)('PostgreSQL store: listing and search', () => {
  let server: TestPostgres;
  const schemas = new WeakMap<SessionStore, string>();

  beforeAll(async () => {
    server = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
  });

  runListingSearchConformance({
    name: 'postgres store',
    create: async () => {
      const schema = server.freshSchema();
      const store = await createPostgresStore({ connectionString: server.url(), schema });
      schemas.set(store, schema);
      return store;
    },
    destroy: async (store) => {
      await store.close();
      await server.dropSchema(schemas.get(store)!);
    },
  });

  it('serves a page and a search from their indexes, not a scan of every row', async () => {
    const schema = server.freshSchema();
    const store = await createPostgresStore({ connectionString: server.url(), schema });
    const client = new pg.Client({ connectionString: server.url() });
    await client.connect();
    try {
      // The tables are tiny here: with sequential scans off, the plan shows which index serves each query.
      await client.query('SET enable_seqscan = off');
      await store.createSession(sessionRecord('one', { lastActivity: 5, updatedAt: 5 }));
      await store.append('one', [message('u1', 'plan the migration')]);
      const plan = async (sql: string) =>
        (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`)).rows
          .map((row) => row['QUERY PLAN'])
          .join('\n');
      const listing = await plan(
        `SELECT session_id FROM ${schema}.sessions ORDER BY pinned DESC, last_activity DESC, session_id COLLATE "C" DESC LIMIT 51`,
      );
      expect(listing).toContain('sessions_by_activity');
      const search = await plan(
        `SELECT 1 FROM ${schema}.session_messages WHERE words @@ plainto_tsquery('simple', 'migration') ORDER BY message_id DESC LIMIT 20`,
      );
      expect(search).toMatch(/session_messages_words|session_messages_pkey/);
    } finally {
      await client.end();
      await store.close();
      await server.dropSchema(schema);
    }
  });

  it('reads the same search words as the first search_words() did, for text in any script', async () => {
    const schema = server.freshSchema();
    const store = await createPostgresStore({ connectionString: server.url(), schema });
    const client = new pg.Client({ connectionString: server.url() });
    await client.connect();
    try {
      const icu = (await client.query("SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'")).rowCount === 1;
      // Migration 4's function, as the vectors stored before migration 7 were made with it.
      const before = icu
        ? `regexp_replace(lower(normalize(value, NFKC) COLLATE "und-x-icu"), '[!-/:-@[-\\\`{-~]+', ' ', 'g')`
        : `regexp_replace(lower(value), '[!-/:-@[-\\\`{-~]+', ' ', 'g')`;
      const samples = [
        '',
        'Plan the MIGRATION: src/store/index.ts, a-b_c.d "quoted" [x] {y} ~z \\ `tick` 100%',
        'Ünïcödé ÀB déjà vu', // Latin, composed (already NFKC)
        'e\u0301cole', // decomposed: normalization composes it
        'ﬁle Ⅻ ＡＢＣ 𝐀𝐁 ①', // compatibility characters NFKC folds
        'İSTANBUL ΣΟΦΙΑΣ ǅ', // case mappings beyond ASCII
        '日本語の文章 中文 한국어 العربية עברית हिन्दी',
        'emoji 👩‍💻 and ＃ｔａｇ',
      ];
      // And a few hundred strings of code points drawn from every plane's common blocks.
      let seed = 7;
      const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
      const ranges = [
        [0x20, 0x7e],
        [0xa0, 0x24f],
        [0x300, 0x36f],
        [0x370, 0x52f],
        [0x2000, 0x2bff],
        [0x3000, 0x30ff],
        [0xac00, 0xd7a3],
        [0xfb00, 0xfb4f],
        [0xff00, 0xffef],
        [0x1d400, 0x1d7ff],
        [0x1f300, 0x1f6ff],
      ];
      for (let index = 0; index < 300; index++) {
        let text = '';
        for (let char = 0; char < 1 + (next() % 24); char++) {
          const [low, high] = ranges[next() % ranges.length]!;
          text += String.fromCodePoint(low! + (next() % (high! - low! + 1)));
        }
        samples.push(text);
      }
      const { rows } = await client.query<{ value: string; now: string; then: string }>(
        `SELECT value, ${schema}.search_words(value) AS now, (SELECT ${before}) AS then FROM unnest($1::text[]) AS v(value)`,
        [samples],
      );
      expect(rows).toHaveLength(samples.length);
      expect(rows.filter((row) => row.now !== row.then)).toEqual([]);
    } finally {
      await client.end();
      await store.close();
      await server.dropSchema(schema);
    }
  });

  it('an append whose message cannot be indexed is stored all the same', async () => {
    const schema = server.freshSchema();
    const store = await createPostgresStore({ connectionString: server.url(), schema });
    try {
      await store.createSession(sessionRecord('nul'));
      // jsonb refuses \u0000: the index leaves the NUL out, the log keeps the message whole.
      const [event] = await store.append('nul', [message('u1', 'before\u0000after zebra')]);
      expect(event!.seq).toBe(0);
      const read = [];
      for await (const each of store.readLog('nul')) read.push(each);
      expect(read[0]).toMatchObject({ block: { content: 'before\u0000after zebra' } });
      expect((await store.searchSessions!({ text: 'zebra' })).hits.map((hit) => hit.blockId)).toEqual(['u1']);
    } finally {
      await store.close();
      await server.dropSchema(schema);
    }
  });
});
