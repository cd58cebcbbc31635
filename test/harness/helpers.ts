import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import { isParleyError } from '../../src/conversation/index.js';
import type { SessionEvent, SessionEventHandler, SessionEventOf, SessionEventType } from '../../src/harness/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A session manager over a memory store, closed after the test. */
export async function openManager(): Promise<SessionManager> {
  const manager = await createSessionManager({ store: createMemoryStore() });
  cleanups.push(() => manager.close());
  return manager;
}

/** A temporary folder, removed after the test. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'parley-harness-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Records every unhandled rejection while the test runs (and fails it if there was any). */
export function watchUnhandledRejections(): unknown[] {
  const seen: unknown[] = [];
  const listener = (reason: unknown): void => {
    seen.push(reason);
  };
  process.on('unhandledRejection', listener);
  cleanups.push(async () => {
    // Let rejections of this test reach the listener before it is removed.
    await new Promise((resolve) => setImmediate(resolve));
    process.removeListener('unhandledRejection', listener);
    expect(seen, 'no unhandled rejection').toEqual([]);
  });
  return seen;
}

export async function expectCode(promise: Promise<unknown>, code: string): Promise<unknown> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(isParleyError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
  return error;
}

export function expectThrowsCode(work: () => unknown, code: string): unknown {
  try {
    work();
  } catch (error) {
    expect(isParleyError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
    return error;
  }
  throw new Error(`expected ${code}, but nothing was thrown`);
}

/** The events' types, leaving out the stream of agent events. */
export function outline(events: readonly SessionEvent[]): string[] {
  return events
    .filter((event) => event.type !== 'agent:event')
    .map((event) => {
      switch (event.type) {
        case 'phase:start':
        case 'phase:complete':
        case 'phase:failed':
        case 'custom':
          return `${event.type} ${event.name}`;
        case 'task:start':
        case 'task:complete':
        case 'task:failed':
          return `${event.type} ${event.id}`;
        case 'agent:start':
        case 'agent:complete':
          return `${event.type} ${event.agent}`;
        case 'user:prompt':
        case 'user:reply':
        case 'user:timeout':
          return `${event.type} ${event.promptId}`;
        default:
          return event.type;
      }
    });
}

/** Resolves on the first event of this type (and predicate) the session emits. */
export function nextEvent<T extends SessionEventType>(
  session: { on<E extends SessionEventType | '*'>(type: E, handler: SessionEventHandler<E>): unknown },
  type: T,
  predicate: (event: SessionEventOf<T>) => boolean = () => true,
): Promise<SessionEventOf<T>> {
  return new Promise((resolve) => {
    let done = false;
    session.on(type, ((event: SessionEventOf<T>) => {
      if (!done && predicate(event)) {
        done = true;
        resolve(event);
      }
    }) as SessionEventHandler<T>);
  });
}
