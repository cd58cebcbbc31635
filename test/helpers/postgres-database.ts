import { afterAll, beforeAll } from 'vitest';
import { startTestPostgres, TEST_ROLE, type TestPostgres } from './postgres.js';

/**
 * A database of its own for one test file (`parley serve` always uses the schema `parley`, so files
 * that start servers cannot share one): PostgreSQL is started before the file's tests and the
 * database dropped after. `url()` is its connection string inside a test. Apart from postgres.ts
 * because it imports vitest, and the PostgreSQL bench imports postgres.ts.
 */
export function useTestDatabase(prefix: string): { url(): string } {
  let postgres: TestPostgres | undefined;
  let databaseUrl: string | undefined;
  const database = `${prefix}_${process.pid}`;
  beforeAll(async () => {
    postgres = await startTestPostgres();
    await postgres.admin(`CREATE DATABASE ${database}${postgres.local ? ` OWNER ${TEST_ROLE}` : ''}`);
    databaseUrl = postgres.url({ database });
  }, 120_000);
  afterAll(async () => {
    if (postgres && !postgres.local)
      await postgres.admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
    await postgres?.destroy();
  });
  return {
    url() {
      if (databaseUrl === undefined)
        throw new Error('The test database is not ready (beforeAll failed, or PostgreSQL is missing).');
      return databaseUrl;
    },
  };
}
