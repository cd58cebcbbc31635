import type { UnsequencedEvent } from '../../src/conversation/index.js';
import { createMemoryStore, type SessionStore } from '../../src/store/index.js';

export interface HeldAppend {
  /** Makes the append durable: its promise resolves with the numbered events. */
  release(): void;
  /** Makes the append fail with `error`. */
  fail(error: Error): void;
}

/**
 * A memory store whose appends, once `hold()` is called, become durable only when the test says
 * so. Each append is numbered at once, in call order, as the store contract says; only its promise waits.
 */
export function heldStore(): { store: SessionStore; held: HeldAppend[]; hold(): void } {
  const inner = createMemoryStore();
  const held: HeldAppend[] = [];
  let holding = false;
  const store = new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key) as unknown;
      if (key !== 'append')
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      return (sessionId: string, unsequenced: readonly UnsequencedEvent[]) => {
        const written = target.append(sessionId, unsequenced);
        if (!holding) return written;
        return new Promise((resolve, reject) => {
          held.push({ release: () => resolve(written), fail: (error) => reject(error) });
        });
      };
    },
  });
  return { store, held, hold: () => (holding = true) };
}
