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
