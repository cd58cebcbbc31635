import type pg from 'pg';
import { StoreError } from '../errors.js';
import { UNBOUNDED_MS, type ConnectionTarget, type TimedQueryConfig } from './connection.js';
import { storeErrorFrom } from './errors.js';
import { MIGRATIONS, type Migration } from './migrations.js';

export interface SetupResult {
  /** The schema version found before setup (0: no Parley tables yet). */
  from: number;
  to: number;
}

/**
 * Brings Parley's schema up to date, or refuses a schema newer than this code knows.
 *
 * One transaction under an advisory lock keyed by the schema name: two processes starting at once
 * take turns, and the second finds the work done. Every statement is transactional in PostgreSQL,
 * the schema's creation too, so a failure (missing rights, a lost connection) leaves nothing
 * half-created. A database already at this version needs no DDL, so a role with only read and write
 * rights on Parley's tables can run a store that an owner set up.
 */
export async function setUpSchema(
  pool: pg.Pool,
  schema: string,
  quotedSchema: string,
  target: ConnectionTarget,
  migrations: readonly Migration[] = MIGRATIONS,
  options: { existingOnly?: boolean } = {},
): Promise<SetupResult> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw storeErrorFrom(error, target, 'connect');
  }
  // A connection that breaks while checked out emits `error`; unhandled, that would end the process.
  const ignore = () => undefined;
  client.on('error', ignore);
  let broken: unknown;
  try {
    await client.query('BEGIN');
    // Waiting for another server's migrations, and running ours, may take as long as they take: the
    // pool's answer timeout (connection.ts) is for statements that are quick on a working server.
    await client.query(
      unbounded('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`parley migrations ${schema}`]),
    );
    const found = await client.query<{ schema_exists: boolean; table: string | null }>(
      'SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS schema_exists, to_regclass($2)::text AS table',
      [schema, `${quotedSchema}.migrations`],
    );
    const { schema_exists: schemaExists, table } = found.rows[0]!;
    if (options.existingOnly && table === null) {
      throw new StoreError(
        'STORE_SCHEMA_MISSING',
        `The PostgreSQL database "${target.database}" holds no Parley tables in schema "${schema}"${schemaExists ? '' : ' (there is no such schema)'}. ` +
          'Check the connection string and the schema name; nothing was created.',
        { fault: 'user', data: { schema, database: target.database } },
      );
    }
    if (!schemaExists) await client.query(`CREATE SCHEMA ${quotedSchema}`);
    if (table === null) {
      await client.query(
        `CREATE TABLE ${quotedSchema}.migrations (
           version integer PRIMARY KEY,
           description text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
    }
    const current = await client.query<{ version: number }>(
      `SELECT coalesce(max(version), 0)::int AS version FROM ${quotedSchema}.migrations`,
    );
    const from = current.rows[0]!.version;
    if (from > migrations.length) {
      throw new StoreError(
        'STORE_SCHEMA_TOO_NEW',
        `The PostgreSQL schema "${schema}" in database "${target.database}" is at version ${from}, but this Parley knows versions up to ${migrations.length}. ` +
          'Upgrade Parley to the version that last migrated this database, or point it at another schema or database.',
        { fault: 'user', data: { schema, databaseVersion: from, knownVersion: migrations.length } },
      );
    }
    await client.query(`SET LOCAL search_path TO ${quotedSchema}`);
    for (let version = from + 1; version <= migrations.length; version += 1) {
      const migration = migrations[version - 1]!;
      await client.query(unbounded(migration.sql));
      await client.query('INSERT INTO migrations (version, description) VALUES ($1, $2)', [
        version,
        migration.description,
      ]);
    }
    // Reading a table proves this role may use the schema, so missing rights show now, not at the first write.
    await client.query(`SELECT 1 FROM ${quotedSchema}.sessions LIMIT 1`);
    await client.query('COMMIT');
    return { from, to: migrations.length };
  } catch (error) {
    broken = error;
    await client.query('ROLLBACK').catch(ignore);
    throw storeErrorFrom(error, target, `set up Parley's tables (schema "${schema}")`);
  } finally {
    client.off('error', ignore);
    client.release(broken !== undefined && !(broken instanceof StoreError) ? true : undefined);
  }
}

function unbounded(text: string, values?: unknown[]): TimedQueryConfig {
  return { text, ...(values ? { values } : {}), query_timeout: UNBOUNDED_MS };
}
