import type { SessionEvent, SessionEventType } from './events.js';

type Handler = (event: SessionEvent) => void;
/** Runs after an event's handlers; `dispatched` counts the events dispatched so far, this one included. */
export type DispatchHook = (event: SessionEvent, index: number, dispatched: number) => void;

/**
 * The append-only event log of one harness run. Handlers run
 * synchronously, in log order: an event emitted by a handler is queued and dispatched after the
 * current one, so every handler sees every event in the same order. Async iterators read the log
 * by position, so one that starts late replays what it missed and then follows live: there is no
 * gap between "replay" and "subscribe" because both read the same array.
 */
export class EventLog {
  readonly events: SessionEvent[] = [];
  private readonly handlers = new Map<SessionEventType | '*', Set<Handler>>();
  private readonly before: DispatchHook[] = [];
  private readonly after: DispatchHook[] = [];
  private readonly waiters = new Set<() => void>();
  private dispatching = false;
  private dispatchedCount = 0;
  private closed = false;

  constructor(private readonly onHandlerError: (error: unknown) => void) {}

  /** Events dispatched so far (the event being dispatched counts): the position of an outside action. */
  get dispatched(): number {
    return this.dispatchedCount;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  on(type: SessionEventType | '*', handler: Handler): () => void {
    let set = this.handlers.get(type);
    if (!set) {
      set = new Set();
      this.handlers.set(type, set);
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Hooks of the harness itself (recording, replay): `before` runs ahead of handlers, `after` behind them. */
  hook(when: 'before' | 'after', hook: DispatchHook): void {
    (when === 'before' ? this.before : this.after).push(hook);
  }

  emit(event: SessionEvent): void {
    if (this.closed) return;
    this.events.push(event);
    this.wake();
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      while (this.dispatchedCount < this.events.length) {
        const index = this.dispatchedCount;
        const next = this.events[index]!;
        this.dispatchedCount += 1;
        for (const hook of this.before) this.guard(() => hook(next, index, this.dispatchedCount));
        this.notify(this.handlers.get(next.type), next);
        this.notify(this.handlers.get('*'), next);
        for (const hook of this.after) this.guard(() => hook(next, index, this.dispatchedCount));
      }
    } finally {
      this.dispatching = false;
    }
    this.wake();
  }

  /** No more events: iterators end once they have read everything. */
  close(): void {
    this.closed = true;
    this.wake();
  }

  /** Resolves when the log grows or closes. */
  changed(): Promise<void> {
    return new Promise((resolve) => {
      const waiter = (): void => {
        this.waiters.delete(waiter);
        resolve();
      };
      this.waiters.add(waiter);
    });
  }

  async *iterate(): AsyncGenerator<SessionEvent> {
    let position = 0;
    for (;;) {
      while (position < this.events.length) yield this.events[position++]!;
      if (this.closed) return;
      await this.changed();
    }
  }

  private notify(handlers: Set<Handler> | undefined, event: SessionEvent): void {
    if (!handlers || handlers.size === 0) return;
    // A copy: a handler may subscribe or unsubscribe while the event is dispatched.
    for (const handler of [...handlers]) this.guard(() => handler(event));
  }

  private wake(): void {
    if (this.waiters.size === 0) return;
    for (const waiter of [...this.waiters]) waiter();
  }

  private guard(work: () => void): void {
    try {
      work();
    } catch (error) {
      this.onHandlerError(error);
    }
  }
}
