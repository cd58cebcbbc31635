import pg from 'pg';
import { ParleyError } from '../../conversation/index.js';
import { StoreError } from '../errors.js';
import type { ConnectionTarget } from './connection.js';

/** SQLSTATE codes the store acts on (PostgreSQL manual, appendix A). */
export const SQLSTATE = {
  uniqueViolation: '23505',
  foreignKeyViolation: '23503',
  insufficientPrivilege: '42501',
  invalidPassword: '28P01',
  invalidAuthorization: '28000',
  unknownDatabase: '3D000',
  deadlock: '40P01',
  serializationFailure: '40001',
  tooManyConnections: '53300',
} as const;

/** Network errors that mean the server is not there (or not any more). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);

/** Codes of a connection that was never made (nothing sent): refused, no such host, server starting up, too many connections. */
const REFUSAL_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  '57P03',
  '53300',
]);

/** The SQLSTATE of a server error, or the errno code of a network error (the first of an AggregateError). */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const inner = (error as { errors?: unknown }).errors;
  return Array.isArray(inner) ? errorCode(inner[0]) : undefined;
}

/**
 * True when the connection failed rather than the statement: the server went away, restarted,
 * ended this backend, or could not be reached. A write that fails this way may or may not have
 * committed, and trying again on a new connection is the only way to find out.
 */
export function isConnectionFailure(error: unknown): boolean {
  const code = errorCode(error);
  if (code !== undefined) {
    if (NETWORK_CODES.has(code)) return true;
    // Class 08: connection exception; 57P01-57P03: admin or crash shutdown, server starting up.
    if (
      code.startsWith('08') ||
      code === '57P01' ||
      code === '57P02' ||
      code === '57P03' ||
      code === SQLSTATE.tooManyConnections
    )
      return true;
  }
  const message = error instanceof Error ? error.message : '';
  // "Query read timeout": no answer within the pool's answer timeout, so the connection is taken for dead.
  return /Connection terminated|connection timeout|timeout expired|not queryable|Client was closed|Query read timeout/i.test(
    message,
  );
}

/** True when no connection was made at all, so nothing was sent: the server is down, starting, or full. */
export function isRefusedConnection(error: unknown): boolean {
  const code = errorCode(error);
  if (code !== undefined && REFUSAL_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /timeout exceeded when trying to connect|connection timeout/i.test(message);
}

/** True for failures where the transaction was rolled back and running it again is safe and likely to succeed. */
export function isRetryableConflict(error: unknown): boolean {
  const code = errorCode(error);
  return code === SQLSTATE.deadlock || code === SQLSTATE.serializationFailure;
}

/** True for failures that came from PostgreSQL or the connection to it (not from Parley's or a caller's code). */
export function isDatabaseFailure(error: unknown): boolean {
  return error instanceof pg.DatabaseError || isConnectionFailure(error);
}

/**
 * A failure as the caller sees it: Parley's own errors (not found, invalid input) and a caller's
 * (an update function that threw) pass through; the database's become a StoreError.
 */
export function toStoreFailure(error: unknown, target: ConnectionTarget, action: string): Error {
  if (error instanceof ParleyError || !isDatabaseFailure(error))
    return error instanceof Error ? error : new Error(String(error));
  return storeErrorFrom(error, target, action);
}

/**
 * Turns a failure into one StoreError that says what to fix: wrong password, no server, no
 * database, missing rights. `action` says what the store was doing ("open the store").
 */
export function storeErrorFrom(error: unknown, target: ConnectionTarget, action: string): StoreError {
  if (error instanceof StoreError) return error;
  const code = errorCode(error);
  const reason = error instanceof Error ? error.message : String(error);
  const where = `PostgreSQL at ${target.host}:${target.port}`;
  const data = { host: target.host, port: target.port, database: target.database, user: target.user, sqlState: code };
  if (code === SQLSTATE.invalidPassword || code === SQLSTATE.invalidAuthorization) {
    return new StoreError(
      'STORE_AUTH_FAILED',
      `${where} refused role "${target.user}" (${reason}). Check the user name and password in the connection string, ` +
        `and that pg_hba.conf lets this role connect to database "${target.database}" from this host.`,
      { fault: 'user', cause: error, data },
    );
  }
  if (code === SQLSTATE.unknownDatabase) {
    return new StoreError(
      'STORE_UNAVAILABLE',
      `${where} has no database "${target.database}". Create it (createdb ${target.database}) or name an existing one in the connection string.`,
      { fault: 'user', cause: error, data },
    );
  }
  if (code === SQLSTATE.insufficientPrivilege) {
    return new StoreError(
      'STORE_PERMISSION_DENIED',
      `Role "${target.user}" may not ${action} in database "${target.database}" (${reason}). ` +
        `Grant it the rights (GRANT CREATE ON DATABASE ${target.database} TO ${target.user}, or make it the owner of Parley's schema), ` +
        'or start Parley once as a role that owns the schema so the tables exist.',
      { fault: 'user', cause: error, data },
    );
  }
  if (isConnectionFailure(error)) {
    return new StoreError(
      'STORE_UNAVAILABLE',
      `Could not ${action}: ${where} (database "${target.database}") cannot be reached (${reason}). ` +
        'Check that the server is running and that the host and port in the connection string are right.',
      { fault: 'system', cause: error, data },
    );
  }
  return new StoreError('STORE_IO', `Could not ${action} in ${where} (database "${target.database}"): ${reason}`, {
    fault: 'system',
    cause: error,
    data,
  });
}
