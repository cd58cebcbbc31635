import type { StreamEvent } from '../../conversation/index.js';
import { StoreError } from '../errors.js';
import type { SessionStore, StoreChange } from './session-store.js';

/**
 * One opened store shared by several parts of one process, each through its own view, as if each
 * had opened the store itself: a view's `watch` reports what the other views wrote (and what the
 * store's own `watch` reports from other processes), never what the view itself wrote — the
 * contract of `SessionStore.watch`.
 *
 * Why: the file store may be opened by one process only, so a `parley serve` that also follows
 * native transcripts (`--watch-native`) writes the imports through one view and serves through
 * another, and its clients see the imported events arrive as they would from another server on
 * PostgreSQL.
 */
export interface SharedStore {
  /** A new view. Closing a view stops its watchers and refuses its later calls; the store stays open. */
  view(): SessionStore;
  /** Closes every view, then the store. */
  close(): Promise<void>;
}

const RECORD_WRITES = new Set(['createSession', 'createSessionWithTranscripts', 'updateSession']);

export function shareStore(store: SessionStore): SharedStore {
  const views = new Set<ViewState>();
  const report = (from: ViewState, change: StoreChange): void => {
    for (const view of views) if (view !== from) for (const listener of view.listeners) listener(change);
  };
  return {
    view() {
      const state: ViewState = { listeners: new Set(), closed: false, unwatchInner: [] };
      views.add(state);
      return makeView(store, state, report, () => views.delete(state));
    },
    async close() {
      for (const view of views) closeView(view);
      views.clear();
      await store.close();
    },
  };
}

interface ViewState {
  listeners: Set<(change: StoreChange) => void>;
  closed: boolean;
  unwatchInner: Array<() => void>;
}

function closeView(state: ViewState): void {
  state.closed = true;
  state.listeners.clear();
  for (const unwatch of state.unwatchInner) unwatch();
  state.unwatchInner = [];
}

function makeView(
  store: SessionStore,
  state: ViewState,
  report: (from: ViewState, change: StoreChange) => void,
  forget: () => void,
): SessionStore {
  const closedError = (): StoreError =>
    new StoreError('STORE_CLOSED', 'This view of the store is closed; open a new one to go on.', { fault: 'system' });
  const watch = (onChange: (change: StoreChange) => void): (() => void) => {
    if (state.closed) throw closedError();
    state.listeners.add(onChange);
    const unwatchInner = store.watch?.(onChange);
    if (unwatchInner !== undefined) state.unwatchInner.push(unwatchInner);
    return () => {
      state.listeners.delete(onChange);
      unwatchInner?.();
    };
  };
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'watch') return watch;
      if (key === 'close') {
        return () => {
          closeView(state);
          forget();
          return Promise.resolve();
        };
      }
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      return (...args: unknown[]): unknown => {
        // Thrown, not a rejected promise: `readLog` and `listSessions` return iterables, not promises.
        if (state.closed) throw closedError();
        const result = method.apply(target, args);
        if (key === 'append' && result instanceof Promise) {
          const sessionId = args[0] as string;
          return (result as Promise<StreamEvent[]>).then((events) => {
            const first = events[0];
            if (first !== undefined) report(state, { kind: 'appended', sessionId, firstSeq: first.seq });
            return events;
          });
        }
        if (typeof key === 'string' && RECORD_WRITES.has(key) && result instanceof Promise) {
          const sessionId =
            key === 'updateSession' ? (args[0] as string) : (args[0] as { sessionId: string }).sessionId;
          return result.then((value: unknown) => {
            report(state, { kind: 'updated', sessionId });
            return value;
          });
        }
        return result;
      };
    },
  });
}
