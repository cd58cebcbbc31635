import { promises as fs } from 'node:fs';
import { join, resolve } from 'node:path';
import { ValidationError } from '../conversation/index.js';
import { createFileStore, createPostgresStore, DEFAULT_POSTGRES_SCHEMA, type SessionStore } from '../store/index.js';

/** Where a SessionStore lives, as a command-line argument gives it: a data folder or a PostgreSQL URL. */
export type StoreLocation =
  { kind: 'folder'; dataDir: string } | { kind: 'postgres'; connectionString: string; schema: string };

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i;
const ANY_URL = /^[a-z][a-z0-9+.-]*:\/\//i;

/** `value` as a store location; `flag` names the option in errors. A URL other than postgres:// is refused, not taken as a folder. */
export function parseStoreLocation(
  value: string,
  flag: string,
  schema: string = DEFAULT_POSTGRES_SCHEMA,
): StoreLocation {
  if (value.trim() === '')
    throw new ValidationError(`${flag} is empty: give a data folder or a postgres:// URL.`, { data: { field: flag } });
  if (POSTGRES_URL.test(value)) return { kind: 'postgres', connectionString: value, schema };
  if (ANY_URL.test(value)) {
    throw new ValidationError(
      `${flag} ${JSON.stringify(describeUrl(value))} is a URL Parley cannot store sessions at: give a data folder, or a postgres:// (or postgresql://) URL.`,
      { data: { field: flag } },
    );
  }
  return { kind: 'folder', dataDir: resolve(value) };
}

/** The location for messages: a folder's path, or the URL with its password hidden. */
export function describeLocation(location: StoreLocation): string {
  if (location.kind === 'folder') return location.dataDir;
  const schema = location.schema === DEFAULT_POSTGRES_SCHEMA ? '' : ` (schema ${location.schema})`;
  return `${describeUrl(location.connectionString)}${schema}`;
}

function describeUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return value.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  }
}

export function sameLocation(left: StoreLocation, right: StoreLocation): boolean {
  if (left.kind === 'folder' && right.kind === 'folder') return left.dataDir === right.dataDir;
  if (left.kind === 'postgres' && right.kind === 'postgres')
    return left.connectionString === right.connectionString && left.schema === right.schema;
  return false;
}

/**
 * Opens the store to read from. A folder must already be a Parley data folder (it holds `sessions/`)
 * and a database must already hold Parley's tables: reading a mistyped location must not create one.
 */
export async function openSourceStore(
  location: StoreLocation,
  onWarning: (message: string) => void,
): Promise<SessionStore> {
  if (location.kind === 'postgres') {
    return createPostgresStore({
      connectionString: location.connectionString,
      schema: location.schema,
      existingOnly: true,
    });
  }
  if (!(await isDirectory(join(location.dataDir, 'sessions')))) {
    const exists = await isDirectory(location.dataDir);
    throw new ValidationError(
      `${location.dataDir} is not a Parley data folder: ${exists ? 'it has no sessions/ folder' : 'there is no such folder'}. ` +
        'Point --from at the folder that holds sessions/ (usually .parley in the project folder).',
      { data: { field: '--from', path: location.dataDir } },
    );
  }
  return createFileStore({ dataDir: location.dataDir, onWarning: (warning) => onWarning(warning.message) });
}

/** Opens the store to write to: a missing or empty folder becomes a data folder; a folder holding other things is refused. */
export async function openTargetStore(
  location: StoreLocation,
  onWarning: (message: string) => void,
): Promise<SessionStore> {
  if (location.kind === 'postgres')
    return createPostgresStore({ connectionString: location.connectionString, schema: location.schema });
  let entries: string[] | undefined;
  try {
    entries = await fs.readdir(location.dataDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') {
      throw new ValidationError(
        `${location.dataDir} is a file, not a folder: point --to at a data folder or a postgres:// URL.`,
        {
          data: { field: '--to', path: location.dataDir },
        },
      );
    }
    if (code !== 'ENOENT') throw error;
  }
  if (entries !== undefined && entries.length > 0 && !entries.includes('sessions')) {
    throw new ValidationError(
      `${location.dataDir} holds files but is not a Parley data folder (it has no sessions/ folder). ` +
        'Point --to at a Parley data folder, an empty or new folder, or a postgres:// URL.',
      { data: { field: '--to', path: location.dataDir } },
    );
  }
  return createFileStore({ dataDir: location.dataDir, onWarning: (warning) => onWarning(warning.message) });
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await fs.stat(path)).isDirectory();
  } catch {
    return false;
  }
}
