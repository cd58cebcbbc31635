import pg from 'pg';
import { StoreError } from '../errors.js';

/** Where the store connects, with the password left out so it can be shown in messages. */
export interface ConnectionTarget {
  host: string;
  port: number;
  database: string;
  user: string;
  /** The connection string with its password replaced by `***`. */
  redacted: string;
}

const DEFAULT_PORT = 5432;

/**
 * Checks a connection string before any connection is tried. node-postgres accepts nearly anything
 * (`"not a url"` becomes a database name on a socket), so only `postgres://` and `postgresql://`
 * URLs pass here, and a typo is reported as such rather than as an unreachable server.
 */
export function parseConnectionString(connectionString: unknown): ConnectionTarget {
  const fix =
    'Pass a URL like postgres://user:password@host:5432/database (percent-encode special characters in the password).';
  if (typeof connectionString !== 'string' || connectionString.trim() === '') {
    throw badConnectionString(`The PostgreSQL connection string is empty. ${fix}`);
  }
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch (error) {
    throw badConnectionString(
      `The PostgreSQL connection string "${redact(connectionString)}" cannot be parsed as a URL. ${fix}`,
      error,
    );
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw badConnectionString(
      `The PostgreSQL connection string "${redact(connectionString)}" starts with "${url.protocol}//"; it must start with postgres:// or postgresql://. ${fix}`,
    );
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  const user = decodeURIComponent(url.username) || process.env.PGUSER || process.env.USER || 'postgres';
  return {
    host: url.hostname || url.searchParams.get('host') || 'localhost',
    port: url.port === '' ? DEFAULT_PORT : Number(url.port),
    database: database || user,
    user,
    redacted: redact(connectionString),
  };
}

export interface PoolOptions {
  connectionString: string;
  /** Connections at most (default 10). */
  size: number;
  /** How long a new connection may take before it counts as unreachable. */
  connectTimeoutMs: number;
  /** How long a statement may go unanswered before its connection counts as lost (default 60 s). */
  answerTimeoutMs?: number;
}

/**
 * A statement with no answer after this long is on a dead connection: a network partition or a
 * dropped NAT entry leaves a TCP connection half-open, which never errors, and without a bound the
 * statement (and with it every append queued behind the one group in flight) would wait forever.
 * A minute is far beyond any statement Parley sends on a working server, migrations aside (they
 * run unbounded: setup.ts).
 */
export const DEFAULT_ANSWER_TIMEOUT_MS = 60_000;
/**
 * A statement with its own answer timeout: node-postgres reads `query_timeout` from a query's
 * config before the pool's (lib/client.js), though @types/pg leaves it out of QueryConfig.
 */
export type TimedQueryConfig = pg.QueryConfig & { query_timeout: number };

/** The longest timer Node keeps (about 24.8 days): in effect, no bound. */
export const UNBOUNDED_MS = 2 ** 31 - 1;

/** TCP keepalive on every connection, so the kernel notices a peer that vanished even while idle. */
export const KEEPALIVE_DELAY_MS = 10_000;

/**
 * A pool whose broken idle connections are dropped quietly: node-postgres emits `error` on the pool
 * when a server ends an idle connection (a restart, `pg_terminate_backend`), and an unhandled
 * `error` event would end the process. The next query simply gets a fresh connection. A statement
 * unanswered for `answerTimeoutMs` fails with node-postgres' "Query read timeout", which counts as a
 * connection failure (errors.ts): the pool then ends that connection rather than reuse it.
 */
export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.size,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    query_timeout: options.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    application_name: 'parley',
  });
  pool.on('error', () => undefined);
  return pool;
}

function badConnectionString(message: string, cause?: unknown): StoreError {
  return new StoreError('STORE_BAD_CONNECTION_STRING', message, { fault: 'user', cause });
}

/** The string with any password between `user:` and `@` hidden. */
function redact(connectionString: string): string {
  return connectionString.replace(/^([a-z]+:\/\/[^:/@]*:)[^@/]*@/i, '$1***@');
}
