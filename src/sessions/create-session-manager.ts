import { loadTokenizer } from '../conversation/index.js';
import type { StoreWarning } from '../store/index.js';
import { openDataFolderStore } from './data-folder-store.js';
import { SessionError } from './errors.js';
import { withImportedSessions } from './import/imported-store.js';
import {
  DEFAULT_COMPACTION_THRESHOLD,
  DEFAULT_TOKEN_BUDGET,
  type SessionManagerOptions,
} from './session-manager-types.js';
import { SessionManager } from './session-manager.js';
import { checkBudget } from './session-requests.js';

/**
 * Opens a SessionManager over a file store in `dataDir` or over the given store.
 * `close()` releases the data folder.
 */
export async function createSessionManager(options: SessionManagerOptions): Promise<SessionManager> {
  // Checked before a store is opened, so a bad option never leaves a data folder locked.
  checkBudget(
    options.tokenBudget ?? DEFAULT_TOKEN_BUDGET,
    options.compactionThreshold ?? DEFAULT_COMPACTION_THRESHOLD,
    'createSessionManager',
  );
  checkLiveSessionBounds(options);
  let store = options.store;
  let ownsStore = false;
  const warnings: StoreWarning[] = [];
  let manager: SessionManager | undefined;
  if (!store) {
    if (!options.dataDir) {
      throw new SessionError(
        'INVALID_INPUT',
        'createSessionManager needs `dataDir` (a folder for the file store) or `store`.',
        { fault: 'user' },
      );
    }
    // Held by another Parley process, the folder is used through that process's store.
    store = await openDataFolderStore(options.dataDir, (warning) =>
      manager ? manager.reportWarning(warning) : warnings.push(warning),
    );
    ownsStore = true;
  }
  // The tokenizer loads in the background (a listing never waits for it); the first count awaits it.
  if (!options.countTokens && options.preloadTokenizer !== false) void loadTokenizer();
  // An imported session whose blocks were deferred is built on its first read, whoever reads it.
  manager = new SessionManager(withImportedSessions(store), ownsStore, options);
  for (const warning of warnings) manager.reportWarning(warning);
  return manager;
}

function checkLiveSessionBounds(options: SessionManagerOptions): void {
  const idle = options.liveSessionIdleMs;
  if (idle !== undefined && !(Number.isFinite(idle) && idle > 0)) {
    throw new SessionError(
      'INVALID_INPUT',
      `createSessionManager: \`liveSessionIdleMs\` must be a positive number of milliseconds, not ${String(idle)}.`,
      { fault: 'user' },
    );
  }
  const max = options.maxLiveSessions;
  if (max !== undefined && !(Number.isInteger(max) && max > 0)) {
    throw new SessionError(
      'INVALID_INPUT',
      `createSessionManager: \`maxLiveSessions\` must be a whole number above 0 (or left out for no bound), not ${String(max)}.`,
      { fault: 'user' },
    );
  }
}
