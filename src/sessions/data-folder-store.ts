import { isParleyError } from '../conversation/index.js';
import {
  connectSocketStore,
  createFileStore,
  serveStoreOnSocket,
  shareStore,
  storeSocketPath,
  type SessionStore,
  type StoreWarning,
} from '../store/index.js';
import { builtElsewhere, withImportedSessions } from './import/imported-store.js';

/**
 * The store of a data folder for this process, whether or not another Parley process has it open.
 * The first process opens the file store (taking `store.lock`) and serves it on the folder's socket
 * (`serveStoreOnSocket`); a process that finds the folder held uses the holder's store through that
 * socket, so an editor may start a second `parley acp` (or a `parley sessions`) beside a running
 * one. Either way the store has `watch`: a SessionManager that follows it (`followStoreChanges`)
 * sees what the other processes write, as a server on PostgreSQL sees other servers.
 *
 * Why the holder's store, not a store each process opens: the file store numbers a session's events
 * and groups their fsyncs in memory, so one process must make every write; and whatever kind of
 * process holds the folder (`parley acp`, `parley serve`, `parley chat`), it has a store to serve,
 * where an ACP process has no server to attach to.
 */

/** How often, and how long apart, a process that found the folder held tries its socket (the holder may be starting). */
const CONNECT_ATTEMPTS = 40;
const CONNECT_PAUSE_MS = 50;

export async function openDataFolderStore(
  dataDir: string,
  onWarning: (warning: StoreWarning) => void,
): Promise<SessionStore> {
  let locked: unknown;
  for (let attempt = 0; attempt < CONNECT_ATTEMPTS; attempt += 1) {
    try {
      return await hold(dataDir, onWarning);
    } catch (error) {
      if (!isParleyError(error, 'STORE_LOCKED')) throw error;
      locked = error;
    }
    try {
      return builtElsewhere(await connectSocketStore(storeSocketPath(dataDir), { label: dataDir }));
    } catch {
      // The holder is starting (its socket is not up yet) or stopping (its lock not yet released): try both again.
      await new Promise((resolve) => setTimeout(resolve, CONNECT_PAUSE_MS));
    }
  }
  // A holder that serves no socket (an older Parley): the lock's own error says who holds the folder.
  throw locked;
}

/** Opens the file store and serves it; closing the returned store stops serving, then releases the folder. */
async function hold(dataDir: string, onWarning: (warning: StoreWarning) => void): Promise<SessionStore> {
  const shared = shareStore(await createFileStore({ dataDir, onWarning }));
  // Each connection's view builds deferred imported sessions here, once for every process. A socket
  // that cannot be made (a read-only temp folder) leaves this process the folder's only user, as
  // before: another one is then told who holds the folder.
  const server = await serveStoreOnSocket(storeSocketPath(dataDir), () => withImportedSessions(shared.view())).catch(
    () => undefined,
  );
  const own = shared.view();
  return new Proxy(own, {
    get(target, key, receiver) {
      if (key === 'close') {
        return async () => {
          await server?.close();
          await shared.close();
        };
      }
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
