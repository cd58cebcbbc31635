/**
 * A real PostgreSQL for tests and benches: Debian's `postgresql` package run from a temp folder on
 * 127.0.0.1 at a free port, one server per test file. When the tests run as root, `initdb` and the
 * server run as the `postgres` user. `PARLEY_TEST_DATABASE_URL` points the tests at a server of
 * your own instead (then the tests that must stop, restart or add roles to the server are skipped,
 * each saying why).
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

const POSTGRES_ROOT = '/usr/lib/postgresql';
const SUPERUSER_PASSWORD = 'postgres-test-password';
/** The role Parley's tests connect as: it owns the test database, and is not a superuser. */
export const TEST_ROLE = 'parley';
export const TEST_PASSWORD = 'parley test password: with spaces & symbols';
export const TEST_DATABASE = 'parley';

export interface TestPostgres {
  /** True when this helper started the server, so it may stop, restart and add roles to it. */
  readonly local: boolean;
  readonly host: string;
  readonly port: number;
  /** A connection string for the test role (default) or another role and database. */
  url(options?: { user?: string; password?: string; database?: string }): string;
  /** Runs one statement as the superuser (the test role when the server is not local). */
  admin<Row extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
    database?: string,
  ): Promise<Row[]>;
  /** A schema name no other test in this run uses. */
  freshSchema(prefix?: string): string;
  dropSchema(schema: string): Promise<void>;
  /** `pg_ctl restart -m fast`: ends every connection, waits until the server accepts connections again. */
  restart(): Promise<void>;
  /** `pg_ctl stop`: `fast` (default) ends sessions cleanly; `immediate` kills the server as a crash would (recovery at the next start). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes its folder. */
  destroy(): Promise<void>;
}

/** The newest PostgreSQL's bin folder, or undefined when the package is not installed. */
export function findPostgresBin(): string | undefined {
  if (!existsSync(POSTGRES_ROOT)) return undefined;
  const versions = readdirSync(POSTGRES_ROOT)
    .filter((name) => /^\d+$/.test(name) && existsSync(join(POSTGRES_ROOT, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(POSTGRES_ROOT, versions[0], 'bin');
}

/**
 * Why the PostgreSQL tests cannot run here, or undefined when they can. Outside CI a missing
 * server skips them with one loud line; in CI (`CI=true`) it is an error, so CI never passes by skipping.
 */
export function postgresSkipReason(): string | undefined {
  if (process.env.PARLEY_TEST_DATABASE_URL || findPostgresBin() !== undefined) return undefined;
  const reason = `PostgreSQL is not installed (no ${POSTGRES_ROOT}/<version>/bin/initdb): install it with \`apt-get install -y postgresql\`, or set PARLEY_TEST_DATABASE_URL`;
  if (process.env.CI === 'true') throw new Error(`${reason}. CI must run the PostgreSQL tests.`);
  console.warn(`\n!!! SKIPPING the PostgreSQL store tests: ${reason}.\n`);
  return reason;
}

let schemaCounter = 0;

/** Starts a server for this test file, or connects to PARLEY_TEST_DATABASE_URL. */
export async function startTestPostgres(options: { fsync?: boolean } = {}): Promise<TestPostgres> {
  const external = process.env.PARLEY_TEST_DATABASE_URL;
  return external ? externalServer(external) : localServer(options.fsync ?? false);
}

function externalServer(connectionString: string): TestPostgres {
  const parsed = new URL(connectionString);
  const cannot = (what: string) => () =>
    Promise.reject(new Error(`cannot ${what} a server given by PARLEY_TEST_DATABASE_URL`));
  return {
    local: false,
    host: parsed.hostname,
    port: Number(parsed.port || 5432),
    url: (options = {}) => {
      const url = new URL(connectionString);
      if (options.user !== undefined) url.username = encodeURIComponent(options.user);
      if (options.password !== undefined) url.password = encodeURIComponent(options.password);
      if (options.database !== undefined) url.pathname = `/${encodeURIComponent(options.database)}`;
      return url.toString();
    },
    admin: (text, values) => query(connectionString, text, values),
    freshSchema,
    dropSchema: async (schema) =>
      void (await query(connectionString, `DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`)),
    restart: cannot('restart'),
    stop: cannot('stop'),
    start: cannot('start'),
    destroy: async () => undefined,
  };
}

async function localServer(fsync: boolean): Promise<TestPostgres> {
  const bin = findPostgresBin();
  if (bin === undefined) throw new Error(postgresSkipReason() ?? 'PostgreSQL is not installed');
  const folder = mkdtempSync(join(tmpdir(), 'parley-pg-'));
  const data = join(folder, 'data');
  const log = join(folder, 'server.log');
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? await postgresUser() : undefined;
  const exec = async (program: string, args: string[]) => {
    const [file, argv] =
      owner === undefined
        ? [join(bin, program), args]
        : ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]];
    try {
      await run(file, argv, { cwd: folder, timeout: 120_000 });
    } catch (error) {
      const detail = existsSync(log)
        ? await run('tail', ['-n', '20', log]).then(
            (result) => result.stdout,
            () => '',
          )
        : '';
      throw new Error(`${program} ${args.join(' ')} failed: ${(error as Error).message}\n${detail}`, { cause: error });
    }
  };
  const port = await freePort();
  const host = '127.0.0.1';
  const adminUrl = (database = 'postgres') =>
    `postgres://postgres:${encodeURIComponent(SUPERUSER_PASSWORD)}@${host}:${port}/${encodeURIComponent(database)}`;
  try {
    writeFileSync(join(folder, 'password'), `${SUPERUSER_PASSWORD}\n`);
    if (owner !== undefined) {
      chownSync(folder, owner.uid, owner.gid);
      chownSync(join(folder, 'password'), owner.uid, owner.gid);
    }
    // TCP connections need a password (scram-sha-256), so a wrong one is refused as in production.
    await exec('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '--pwfile',
      join(folder, 'password'),
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '--no-locale',
      '-E',
      'UTF8',
      '--no-sync',
    ]);
    const settings = [`-p ${port}`, `-k ${folder}`, `-c listen_addresses=${host}`, '-c max_connections=100'];
    // Tests never lose power; fsync off keeps them fast. The bench keeps it on.
    if (!fsync) settings.push('-c fsync=off', '-c full_page_writes=off');
    const pgCtl = (...args: string[]) =>
      exec('pg_ctl', ['-D', data, '-l', log, '-w', '-t', '60', '-o', settings.join(' '), ...args]);
    await pgCtl('start');
    await query(adminUrl(), `CREATE ROLE ${TEST_ROLE} LOGIN PASSWORD ${pg.escapeLiteral(TEST_PASSWORD)}`);
    await query(adminUrl(), `CREATE DATABASE ${TEST_DATABASE} OWNER ${TEST_ROLE}`);
    let stopped = false;
    return {
      local: true,
      host,
      port,
      url: (options = {}) =>
        `postgres://${encodeURIComponent(options.user ?? TEST_ROLE)}:${encodeURIComponent(options.password ?? TEST_PASSWORD)}@${host}:${port}/${encodeURIComponent(options.database ?? TEST_DATABASE)}`,
      admin: (text, values, database = TEST_DATABASE) => query(adminUrl(database), text, values),
      freshSchema,
      dropSchema: async (schema) =>
        void (await query(adminUrl(TEST_DATABASE), `DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`)),
      restart: () => pgCtl('restart', '-m', 'fast'),
      stop: async (mode = 'fast') => {
        await pgCtl('stop', '-m', mode);
        stopped = true;
      },
      start: async () => {
        await pgCtl('start');
        stopped = false;
      },
      destroy: async () => {
        if (!stopped) await pgCtl('stop', '-m', 'immediate').catch(() => undefined);
        rmSync(folder, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await exec('pg_ctl', ['-D', data, 'stop', '-m', 'immediate']).catch(() => undefined);
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
}

function freshSchema(prefix = 'test'): string {
  schemaCounter += 1;
  return `${prefix}_${process.pid}_${schemaCounter}`;
}

async function query<Row extends pg.QueryResultRow>(
  connectionString: string,
  text: string,
  values?: unknown[],
): Promise<Row[]> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return (await client.query<Row>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
