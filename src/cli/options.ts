import { basename, resolve } from 'node:path';
import type { Command } from 'commander';
import type { DraftStore, SessionStore } from '../store/index.js';
import { ParleyError } from '../conversation/index.js';
import { resolveDataDir, resolveStoreUrl } from './global-options.js';

// In a module that imports nothing, which the TUI reads before its first frame; here for every other command.
export { DATABASE_URL_VARIABLE, resolveDataDir, resolveStoreUrl } from './global-options.js';

/**
 * Opens the PostgreSQL store `--store` (or `PARLEY_DATABASE_URL`) names, or returns undefined when
 * neither is given (the caller then uses the file store in the data folder). A bad URL, a refused
 * password or an unreachable server fail here with the store's one error, before anything is written.
 * The caller closes the store.
 */
export async function openChosenStore(
  command: Command,
  options: { sweepSearchIndex?: boolean } = {},
): Promise<SessionStore | undefined> {
  const url = resolveStoreUrl(command);
  if (url === undefined) return undefined;
  const { createPostgresStore } = await import('../store/index.js');
  return createPostgresStore({ connectionString: url, ...options });
}

/**
 * Opens the PostgreSQL DraftStore (projects, tasks, drafts, role files, draft leases) on the database
 * `--store` names, or returns undefined for the file DraftStore in the data folder. A server on
 * PostgreSQL keeps no state on its own disk: its drafts live beside its sessions. The caller closes it.
 */
export async function openChosenDraftStore(
  command: Command,
  projectRoot: string,
  dataDir: string,
): Promise<DraftStore | undefined> {
  const url = resolveStoreUrl(command);
  if (url === undefined) return undefined;
  const [{ createPostgresDraftStore }, { slugify }] = await Promise.all([
    import('../store/index.js'),
    import('../draft/index.js'),
  ]);
  const path = resolve(projectRoot);
  return createPostgresDraftStore({
    connectionString: url,
    home: { name: slugify(basename(path)) ?? 'project', path, dataDir },
  });
}

/** The session manager's store option: the opened store, or the file store in the data folder. */
export function storeOption(
  command: Command,
  store: SessionStore | undefined,
): { store: SessionStore } | { dataDir: string } {
  return store ? { store } : { dataDir: resolveDataDir(command) };
}

/** Environment variable: how long this server's draft leases last, in milliseconds (default 30 s). */
export const DRAFT_LEASE_VARIABLE = 'PARLEY_DRAFT_LEASE_MS';
/** Shorter leases would be renewed more often than a busy server can be relied on to. */
const MIN_DRAFT_LEASE_MS = 1_000;

/** PARLEY_DRAFT_LEASE_MS as a whole number of milliseconds; undefined (the default) when unset or empty. */
export function draftLeaseFromEnvironment(maximum: number): number | undefined {
  const value = process.env[DRAFT_LEASE_VARIABLE];
  if (value === undefined || value.trim() === '') return undefined;
  const leaseMs = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || leaseMs < MIN_DRAFT_LEASE_MS || leaseMs > maximum) {
    throw new ParleyError(
      'INVALID_INPUT',
      `${DRAFT_LEASE_VARIABLE} must be a whole number of milliseconds from ${MIN_DRAFT_LEASE_MS} to ${maximum}, not "${value}". Unset it for the default (30000).`,
      { fault: 'user' },
    );
  }
  return leaseMs;
}
