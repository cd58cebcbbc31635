import type { StreamEvent } from '../../conversation/index.js';
import type { ReadLogOptions, SessionStore } from '../../store/index.js';
import { materializeImportedSession } from './materialize.js';
import { openUnbuiltTranscript, parseUnbuiltTranscript, type UnbuiltTranscript } from './unbuilt-session.js';

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
/** A view's store underneath, for reads that must not build (`unbuiltEvents`). */
const RAW = Symbol('parley.importedSessionsRawStore');

type Builds = Map<string, true | Gate>;

/** A check's answer: whether it holds from now on, and the built events when the build kept them. */
interface Check {
  settled: boolean;
  events?: StreamEvent[];
}

/**
 * Calls waiting for a session's check or build. `waiting` counts the calls queued on `done` that
 * have not gone on yet: until it is back to 0, a new call queues too (on the settled promise, so
 * behind them), and only then may calls take the direct path — call order holds throughout.
 */
interface Gate {
  done: Promise<Check>;
  settled: boolean;
  waiting: number;
}

/**
 * Marks a store whose deferred sessions are built by another process (the one serving it, which
 * puts this view over its own store): building them here too would write their events twice.
 */
export function builtElsewhere(store: SessionStore): SessionStore {
  (store as unknown as Record<symbol, unknown>)[WRAPPED] = true;
  return store;
}

export function withImportedSessions(store: SessionStore): SessionStore {
  const holder = store as unknown as Record<symbol, unknown>;
  if (holder[WRAPPED] === true) return store;
  let builds = holder[BUILDS] as Builds | undefined;
  if (builds === undefined) {
    builds = new Map();
    holder[BUILDS] = builds;
  }
  const known = builds;

  /**
   * Runs `call` once the session is ready: at once when it is known to be, else after its check
   * (and build) and after every call queued before it. `call` gets the built events when this call
   * started a build that kept them (`reading`: it reads the whole log next).
   */
  const whenReady = <T>(sessionId: string, reading: boolean, call: (events?: StreamEvent[]) => T): T | Promise<T> => {
    let gate = known.get(sessionId);
    if (gate === true) return call();
    if (gate !== undefined && gate.settled && gate.waiting === 0) {
      known.set(sessionId, true);
      return call();
    }
    const starts = gate === undefined;
    if (gate === undefined) {
      const created: Gate = { done: check(store, sessionId, reading), settled: false, waiting: 0 };
      gate = created;
      known.set(sessionId, created);
      created.done.then(
        ({ settled }) => {
          if (settled) created.settled = true;
          else if (known.get(sessionId) === created) known.delete(sessionId);
        },
        () => {
          if (known.get(sessionId) === created) known.delete(sessionId);
        },
      );
    }
    const current = gate;
    current.waiting++;
    return current.done.then(
      (answer) => {
        current.waiting--;
        return call(starts ? answer.events : undefined);
      },
      (error: unknown) => {
        current.waiting--;
        throw error;
      },
    );
  };

  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === WRAPPED) return true;
      if (key === RAW) return target;
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (key === 'readLog') {
        return (sessionId: string, options: ReadLogOptions = {}): AsyncIterable<StreamEvent> => {
          const read = (events?: StreamEvent[]): AsyncIterable<StreamEvent> =>
            // This call started the build: the events just made durable are what the log holds.
            events !== undefined
              ? fromMemory(events, options)
              : (method.call(target, sessionId, options) as AsyncIterable<StreamEvent>);
          const started = whenReady(sessionId, true, read);
          if (!(started instanceof Promise)) return started;
          return (async function* () {
            yield* await started;
          })();
        };
      }
      if (typeof key === 'string' && LOG_METHODS.has(key)) {
        return (sessionId: string, ...rest: unknown[]): unknown =>
          whenReady(sessionId, false, () => method.call(target, sessionId, ...rest));
      }
      return method.bind(target);
    },
  });
}

/**
 * For a reader that only shows a session (`parley show`): the native copy of an imported session
 * whose blocks are not built yet, to parse without writing its events (`unbuilt-session.ts`),
 * when no build of it has run or started in this process. Undefined, having read nothing,
 * otherwise: read the log through the view, which builds it. A build started meanwhile writes
 * the same events, so either answer holds.
 */
export async function openUnbuiltSession(
  store: SessionStore,
  sessionId: string,
): Promise<UnbuiltTranscript | undefined> {
  const raw = ((store as unknown as Record<symbol, unknown>)[RAW] as SessionStore | undefined) ?? store;
  const builds = (raw as unknown as Record<symbol, unknown>)[BUILDS] as Builds | undefined;
  if (builds?.has(sessionId) === true) return undefined;
  const record = await raw.getSession(sessionId);
  if (record?.scope.kind !== 'imported') return undefined;
  return openUnbuiltTranscript(raw, sessionId);
}

/** `openUnbuiltSession`, parsed here: its events handed to `onEvents` in batches; false when there is nothing to parse. */
export async function readUnbuiltEvents(
  store: SessionStore,
  sessionId: string,
  onEvents: (events: StreamEvent[]) => void,
): Promise<boolean> {
  const transcript = await openUnbuiltSession(store, sessionId);
  if (transcript === undefined) return false;
  await parseUnbuiltTranscript(transcript, onEvents);
  return true;
}

async function* fromMemory(events: readonly StreamEvent[], options: ReadLogOptions): AsyncGenerator<StreamEvent> {
  const after = options.afterSeq ?? -1;
  const through = options.throughSeq ?? Number.POSITIVE_INFINITY;
  for (const event of events) if (event.seq > after && event.seq <= through) yield event;
}

/**
 * Builds the session's deferred events if it has any. `settled`: the answer holds from now on (a
 * session that does not exist yet is checked again at its next call).
 */
async function check(store: SessionStore, sessionId: string, keepEvents: boolean): Promise<Check> {
  let record;
  try {
    record = await store.getSession(sessionId);
  } catch {
    // An invalid id: the call itself reports it.
    return { settled: false };
  }
  if (record === undefined) return { settled: false };
  if (record.scope.kind !== 'imported') return { settled: true };
  const { events } = await materializeImportedSession(store, sessionId, { keepEvents });
  return events !== undefined ? { settled: true, events } : { settled: true };
}

/** A deferred import just wrote this session: its state is checked again at its next read. */
export function forgetImportedSession(store: SessionStore, sessionId: string): void {
  const builds = (store as unknown as Record<symbol, unknown>)[BUILDS] as Builds | undefined;
  if (builds?.get(sessionId) === true) builds.delete(sessionId);
}
