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
}

/**
 * A pool whose broken idle connections are dropped quietly: node-postgres emits `error` on the pool
 * when a server ends an idle connection (a restart, `pg_terminate_backend`), and an unhandled
 * `error` event would end the process. The next query simply gets a fresh connection.
 */
export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.size,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
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
