import type { ReadLogOptions, SessionStore } from '../../store/index.js';
import { materializeImportedSession } from './materialize.js';

/**
 * A view of a store in which an imported session whose events were deferred
 * (`deferred-import.ts`) is built before anything reads or writes its log or its checkpoints: the
 * first `readLog`, `lastSeq`, `append`, `readCheckpoint`, `listCheckpoints` or `writeCheckpoint`
 * of such a session waits until its events are durable in the log (`materialize.ts`), and calls
 * made meanwhile wait behind it in call order. Everything else passes through unchanged, so a
 * listing never builds anything.
 *
 * The SessionManager (`createSessionManager`) and `importTranscripts` use this view, so the
 * server's `get_events`, `parley show`, the TUI and web UI, compaction, moving to another back end,
 * continuing the session and re-imports all see the built session.
 */

/** Methods whose first argument is a session id and that touch its log or checkpoints. */
const LOG_METHODS = new Set(['lastSeq', 'append', 'readCheckpoint', 'listCheckpoints', 'writeCheckpoint']);

/**
 * Per store, shared by every view of it in the process (`shareStore` hands out several): a session
 * checked and built (`true`), or the check or build under way. Kept on the store object itself (a
 * view's property writes reach the store), so two views never build one session twice.
 */
const BUILDS = Symbol.for('parley.importedSessionBuilds');
const WRAPPED = Symbol.for('parley.importedSessionsView');

type Builds = Map<string, true | Promise<boolean>>;

export function withImportedSessions(store: SessionStore): SessionStore {
  const holder = store as unknown as Record<symbol, unknown>;
  if (holder[WRAPPED] === true) return store;
  let builds = holder[BUILDS] as Builds | undefined;
  if (builds === undefined) {
    builds = new Map();
    holder[BUILDS] = builds;
  }
  const known = builds;

  /** Undefined when the session is ready; else the promise to wait for. */
  const ready = (sessionId: string): Promise<boolean> | undefined => {
    const state = known.get(sessionId);
    if (state === true) return undefined;
    if (state !== undefined) return state;
    const building = check(store, sessionId);
    known.set(sessionId, building);
    // Registered first, so it runs before the calls that wait on `building`: a call made after
    // them takes the direct path only once every earlier one has gone on, in order.
    building.then(
      (settled) => (settled ? known.set(sessionId, true) : known.delete(sessionId)),
      () => known.delete(sessionId),
    );
    return building;
  };

  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === WRAPPED) return true;
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (key === 'readLog') {
        return (sessionId: string, options?: ReadLogOptions): AsyncIterable<unknown> => {
          const waiting = ready(sessionId);
          if (waiting === undefined) return method.call(target, sessionId, options) as AsyncIterable<unknown>;
          return (async function* () {
            await waiting;
            yield* method.call(target, sessionId, options) as AsyncIterable<unknown>;
          })();
        };
      }
      if (typeof key === 'string' && LOG_METHODS.has(key)) {
        return (sessionId: string, ...rest: unknown[]): unknown => {
          const waiting = ready(sessionId);
          if (waiting === undefined) return method.call(target, sessionId, ...rest);
          return waiting.then(() => method.call(target, sessionId, ...rest));
        };
      }
      return method.bind(target);
    },
  });
}

/**
 * Builds the session's deferred events if it has any. Resolves with whether the answer holds from
 * now on: a session that does not exist (yet) is checked again at its next call.
 */
async function check(store: SessionStore, sessionId: string): Promise<boolean> {
  let record;
  try {
    record = await store.getSession(sessionId);
  } catch {
    // An invalid id: the call itself reports it.
    return false;
  }
  if (record === undefined) return false;
  if (record.scope.kind !== 'imported') return true;
  await materializeImportedSession(store, sessionId);
  return true;
}

/** A deferred import just wrote this session: its state is checked again at its next read. */
export function forgetImportedSession(store: SessionStore, sessionId: string): void {
  (((store as unknown as Record<symbol, unknown>)[BUILDS] as Builds | undefined) ?? new Map()).delete(sessionId);
}
