import type { Command } from 'commander';
import { isParleyError } from '../conversation/index.js';
import type { SessionStore } from '../store/index.js';
import { openChosenStore, resolveDataDir } from './options.js';

/** How often, and how long apart, a listing that found the folder held tries the holder's socket (it may be starting). */
const CONNECT_ATTEMPTS = 40;
const CONNECT_PAUSE_MS = 50;

/**
 * The store `parley sessions` lists from (and `parley search` searches), opened through the store layer alone: PostgreSQL when
 * `--store` names it, else the data folder's file store, or the store of the process holding the
 * folder through its socket. Both read records and the indexes, never a log, so they need
 * none of the session layer (its back ends and their SDKs are most of a process's start-up).
 *
 * Unlike `openDataFolderStore`, a listing that holds the folder does not serve it: it lets go
 * within a few hundred milliseconds, and a process that arrives meanwhile retries the lock.
 */
export async function openListingStore(command: Command): Promise<SessionStore> {
  // A reader that is gone in a moment: no scan of every session's log for what the index lacks.
  const chosen = await openChosenStore(command, { sweepSearchIndex: false });
  if (chosen !== undefined) return chosen;
  const { connectSocketStore, createFileStore, storeSocketPath } = await import('../store/index.js');
  const dataDir = resolveDataDir(command);
  let locked: unknown;
  for (let attempt = 0; attempt < CONNECT_ATTEMPTS; attempt += 1) {
    try {
      return await createFileStore({ dataDir });
    } catch (error) {
      if (!isParleyError(error, 'STORE_LOCKED')) throw error;
      locked = error;
    }
    try {
      return await connectSocketStore(storeSocketPath(dataDir), { label: dataDir });
    } catch {
      await new Promise((resolve) => setTimeout(resolve, CONNECT_PAUSE_MS));
    }
  }
  throw locked;
}
