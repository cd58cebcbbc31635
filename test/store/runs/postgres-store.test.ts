import { afterAll, beforeAll, describe } from 'vitest';
import { createPostgresRunStore, type RunStore } from '../../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { runRunStoreConformance } from './conformance.js';

const skipReason = postgresSkipReason();

describe.skipIf(skipReason !== undefined)('PostgreSQL run store', () => {
  let server: TestPostgres;
  const schemas = new WeakMap<RunStore, string>();

  beforeAll(async () => {
    server = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
  });

  async function open(schema: string): Promise<RunStore> {
    const store = await createPostgresRunStore({ connectionString: server.url(), schema });
    schemas.set(store, schema);
    return store;
  }

  // Each test gets its own schema: migrations run from scratch, nothing leaks between tests.
  runRunStoreConformance({
    name: 'postgres run store',
    create: () => open(server.freshSchema('runs')),
    reopen: async (store) => {
      await store.close();
      return open(schemas.get(store)!);
    },
    destroy: async (store) => {
      await store.close();
      await server.dropSchema(schemas.get(store)!);
    },
  });
});
