import { createServer } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isParleyError } from '../../../src/conversation/index.js';
import { createPostgresStore } from '../../../src/store/index.js';
import { parseConnectionString } from '../../../src/store/postgres/connection.js';
import { MIGRATIONS } from '../../../src/store/postgres/migrations.js';
import { setUpSchema } from '../../../src/store/postgres/setup.js';
import {
  postgresSkipReason,
  startTestPostgres,
  TEST_DATABASE,
  TEST_PASSWORD,
  TEST_ROLE,
  type TestPostgres,
} from '../../helpers/postgres.js';
import { collect, sessionRecord, storeErrorOf, textEvent } from '../builders.js';

const skipReason = postgresSkipReason();
/** Roles and passwords are this helper's own only on a server it started (not PARLEY_TEST_DATABASE_URL's). */
const local = !process.env.PARLEY_TEST_DATABASE_URL;

/** Parley's tables in a schema, sorted. */
async function tablesIn(server: TestPostgres, schema: string): Promise<string[]> {
  const rows = await server.admin<{ tablename: string }>(
    'SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename',
    [schema],
  );
  return rows.map((row) => row.tablename);
}

async function schemaExists(server: TestPostgres, schema: string): Promise<boolean> {
  return (await server.admin('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).length === 1;
}

describe.skipIf(skipReason !== undefined)('PostgreSQL store: setup, migrations and bad input', () => {
  let server: TestPostgres;

  beforeAll(async () => {
    server = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
  });

  describe('append group ids', () => {
    it('are pruned when a store opens, once no retry can need them (an hour, or ten retry windows)', async () => {
      const schema = server.freshSchema();
      let store = await createPostgresStore({ connectionString: server.url(), schema });
      await store.createSession(sessionRecord('s1'));
      await store.append('s1', [textEvent('b1', 'old')]);
      await store.append('s1', [textEvent('b2', 'recent')]);
      await store.close();
      const groups = `${pg.escapeIdentifier(schema)}.append_groups`;
      // The first group committed two hours ago: long past any retry.
      await server.admin(
        `UPDATE ${groups} SET committed_at = now() - interval '2 hours' WHERE group_id = (SELECT group_id FROM ${groups} ORDER BY committed_at LIMIT 1)`,
      );
      expect(await server.admin(`SELECT 1 FROM ${groups}`)).toHaveLength(2);
      store = await createPostgresStore({ connectionString: server.url(), schema });
      expect(await server.admin(`SELECT 1 FROM ${groups}`)).toHaveLength(1);
      // The events themselves are untouched.
      expect((await collect(store.readLog('s1'))).map((event) => event.seq)).toEqual([0, 1]);
      await store.close();
    });
  });

  describe('migrations', () => {
    it('creates every table in its own schema and records each migration once', async () => {
      const schema = server.freshSchema();
      const store = await createPostgresStore({ connectionString: server.url(), schema });
      await store.close();
      expect(await tablesIn(server, schema)).toEqual([
        'agent_descriptions',
        'append_groups',
        'checkpoints',
        'context_documents',
        'draft_leases',
        'drafts',
        'events',
        'features',
        'migrations',
        'project_tasks',
        'projects',
        'role_files',
        'run_journal_entries',
        'run_journals',
        'runs',
        'schedule_firings',
        'schedules',
        'search_positions',
        'session_logs',
        'session_messages',
        'sessions',
        'tasks',
        'transcripts',
      ]);
      const applied = await server.admin<{ version: number }>(
        `SELECT version FROM ${pg.escapeIdentifier(schema)}.migrations ORDER BY version`,
      );
      expect(applied.map((row) => row.version)).toEqual(MIGRATIONS.map((_, index) => index + 1));
    });

    it('runs migrations once when many processes start at the same time, and reopens without change', async () => {
      const schema = server.freshSchema();
      // Each store has its own pool: the setups race in the database as separate processes would.
      const stores = await Promise.all(
        Array.from({ length: 6 }, () => createPostgresStore({ connectionString: server.url(), schema })),
      );
      await stores[0]!.createSession(sessionRecord('kept'));
      await Promise.all(stores.map((store) => store.close()));
      const reopened = await createPostgresStore({ connectionString: server.url(), schema });
      expect(await reopened.getSession('kept')).toEqual(sessionRecord('kept'));
      await reopened.close();
      const applied = await server.admin(`SELECT version FROM ${pg.escapeIdentifier(schema)}.migrations`);
      expect(applied).toHaveLength(MIGRATIONS.length);
    });

    it('refuses a schema newer than it knows, naming both versions, and changes nothing', async () => {
      const schema = server.freshSchema();
      await (await createPostgresStore({ connectionString: server.url(), schema })).close();
      const newer = MIGRATIONS.length + 3;
      await server.admin(
        `INSERT INTO ${pg.escapeIdentifier(schema)}.migrations (version, description) VALUES ($1, 'from the future')`,
        [newer],
      );
      const error = await storeErrorOf(() => createPostgresStore({ connectionString: server.url(), schema }));
      expect(error.code).toBe('STORE_SCHEMA_TOO_NEW');
      expect(error.message).toContain(`version ${newer}`);
      expect(error.message).toContain(`up to ${MIGRATIONS.length}`);
      expect(error.data).toMatchObject({ databaseVersion: newer, knownVersion: MIGRATIONS.length });
      expect(await server.admin(`SELECT version FROM ${pg.escapeIdentifier(schema)}.migrations`)).toHaveLength(
        MIGRATIONS.length + 1,
      );
    });

    it('leaves nothing half-created when a migration fails', async () => {
      const schema = server.freshSchema();
      const target = parseConnectionString(server.url());
      const pool = new pg.Pool({ connectionString: server.url() });
      try {
        const broken = [
          ...MIGRATIONS,
          { description: 'fails halfway', sql: 'CREATE TABLE half (id int); SELECT 1 / 0;' },
        ];
        const error = await storeErrorOf(() => setUpSchema(pool, schema, pg.escapeIdentifier(schema), target, broken));
        expect(error.message).toContain('division by zero');
      } finally {
        await pool.end();
      }
      expect(await schemaExists(server, schema)).toBe(false);
    });

    it('quotes the schema name, so any name works and injects nothing', async () => {
      const schema = `Odd "name"; DROP TABLE x; --${server.freshSchema()}`;
      const store = await createPostgresStore({ connectionString: server.url(), schema });
      await store.createSession(sessionRecord('s'));
      await store.append('s', [textEvent('b', 'x')]);
      expect((await collect(store.readLog('s'))).map((event) => event.seq)).toEqual([0]);
      await store.close();
      expect(await tablesIn(server, schema)).toContain('events');
      await server.dropSchema(schema);
    });

    it('refuses an empty or too long schema name before connecting', async () => {
      for (const schema of ['', 'x'.repeat(64)]) {
        await expect(createPostgresStore({ connectionString: server.url(), schema })).rejects.toSatisfy((error) =>
          isParleyError(error, 'INVALID_INPUT'),
        );
      }
    });
  });

  describe('bad input', () => {
    it.each([
      ['not a url', 'cannot be parsed'],
      ['mysql://user:secret@localhost/db', 'must start with postgres://'],
      ['postgres://user:secret@localhost:notaport/db', 'cannot be parsed'],
      ['', 'empty'],
    ])(
      'refuses the connection string %j with STORE_BAD_CONNECTION_STRING, hiding the password',
      async (connectionString, problem) => {
        const error = await storeErrorOf(() => createPostgresStore({ connectionString }));
        expect(error.code).toBe('STORE_BAD_CONNECTION_STRING');
        expect(error.fault).toBe('user');
        expect(error.message).toContain(problem);
        expect(error.message).toContain('postgres://user:password@host');
        expect(error.message).not.toContain('secret');
      },
    );

    it.runIf(local)(
      'refuses a wrong password with STORE_AUTH_FAILED naming the role, and never shows the password',
      async () => {
        const schema = server.freshSchema();
        const error = await storeErrorOf(() =>
          createPostgresStore({ connectionString: server.url({ password: 'wrong-horse' }), schema }),
        );
        expect(error.code).toBe('STORE_AUTH_FAILED');
        expect(error.message).toContain(`role "${TEST_ROLE}"`);
        expect(error.message).toContain('password');
        expect(error.message).not.toContain('wrong-horse');
        expect(await schemaExists(server, schema)).toBe(false);
      },
    );

    it('refuses an unreachable server with STORE_UNAVAILABLE naming host and port', async () => {
      const port = await closedPort();
      const error = await storeErrorOf(() =>
        createPostgresStore({
          connectionString: `postgres://${TEST_ROLE}:${encodeURIComponent(TEST_PASSWORD)}@127.0.0.1:${port}/${TEST_DATABASE}`,
        }),
      );
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toContain(`127.0.0.1:${port}`);
      expect(error.message).toContain('running');
    });

    it('refuses a database that does not exist, saying how to create it', async () => {
      const error = await storeErrorOf(() =>
        createPostgresStore({ connectionString: server.url({ database: 'no_such_database' }) }),
      );
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toContain('createdb no_such_database');
    });

    describe.runIf(local)('rights', () => {
      const limitedRole = 'parley_limited';
      const limitedPassword = 'limited password';
      beforeAll(async () => {
        await server.admin(`CREATE ROLE ${limitedRole} LOGIN PASSWORD ${pg.escapeLiteral(limitedPassword)}`);
      });

      it('refuses a database where the role may not create tables with STORE_PERMISSION_DENIED, creating nothing', async () => {
        const schema = server.freshSchema();
        const error = await storeErrorOf(() =>
          createPostgresStore({
            connectionString: server.url({ user: limitedRole, password: limitedPassword }),
            schema,
          }),
        );
        expect(error.code).toBe('STORE_PERMISSION_DENIED');
        expect(error.fault).toBe('user');
        expect(error.message).toContain(`Role "${limitedRole}"`);
        expect(error.message).toContain(`GRANT CREATE ON DATABASE ${TEST_DATABASE} TO ${limitedRole}`);
        expect(await schemaExists(server, schema)).toBe(false);
      });

      it('runs on tables an owner set up, with only read and write rights on them', async () => {
        const schema = server.freshSchema();
        await (await createPostgresStore({ connectionString: server.url(), schema })).close();
        const quoted = pg.escapeIdentifier(schema);
        await server.admin(`GRANT USAGE ON SCHEMA ${quoted} TO ${limitedRole}`);
        await server.admin(`GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA ${quoted} TO ${limitedRole}`);
        const store = await createPostgresStore({
          connectionString: server.url({ user: limitedRole, password: limitedPassword }),
          schema,
        });
        await store.createSession(sessionRecord('s'));
        expect(await store.append('s', [textEvent('b', 'x')])).toHaveLength(1);
        await store.close();
      });

      it('refuses a role that may not even read the tables with STORE_PERMISSION_DENIED', async () => {
        const schema = server.freshSchema();
        await (await createPostgresStore({ connectionString: server.url(), schema })).close();
        const error = await storeErrorOf(() =>
          createPostgresStore({
            connectionString: server.url({ user: limitedRole, password: limitedPassword }),
            schema,
          }),
        );
        expect(error.code).toBe('STORE_PERMISSION_DENIED');
      });
    });
  });
});

/** A port on 127.0.0.1 where nothing listens. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
