import { afterAll, beforeAll, describe } from 'vitest';
import { createPostgresStore, type SessionStore } from '../../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { runStoreConformance } from './conformance.js';

const skipReason = postgresSkipReason();

describe.skipIf(skipReason !== undefined)('PostgreSQL store', () => {
  let server: TestPostgres;
  const schemas = new WeakMap<SessionStore, string>();

  beforeAll(async () => {
    server = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
  });

  // Each test gets its own schema: migrations run from scratch, nothing leaks between tests.
  runStoreConformance({
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
});
