import { afterAll, beforeAll, describe } from 'vitest';
import { createPostgresScheduleStore, type ScheduleStore } from '../../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { runScheduleStoreConformance } from './conformance.js';

const skipReason = postgresSkipReason();

describe.skipIf(skipReason !== undefined)('PostgreSQL schedule store', () => {
  let server: TestPostgres;
  const schemas = new WeakMap<ScheduleStore, string>();

  beforeAll(async () => {
    server = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
  });

  async function open(schema: string): Promise<ScheduleStore> {
    const store = await createPostgresScheduleStore({ connectionString: server.url(), schema });
    schemas.set(store, schema);
    return store;
  }

  // Each test gets its own schema: migrations run from scratch, nothing leaks between tests.
  runScheduleStoreConformance({
    name: 'postgres schedule store',
    create: () => open(server.freshSchema('schedules')),
    reopen: async (store) => {
      await store.close();
      return open(schemas.get(store)!);
    },
    second: (store) => open(schemas.get(store)!),
    destroy: async (store) => {
      await store.close();
      await server.dropSchema(schemas.get(store)!);
    },
  });
});
