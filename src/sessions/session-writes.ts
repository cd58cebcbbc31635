import { KeyedQueue } from '../store/index.js';

/**
 * The order of writes to each session, and the group commit of appends.
 *
 * Every write takes its place in one queue per session, in call order. For an append that place
 * is only its turn to be handed to the store (`store.append` numbers appends in call order): the
 * queue is released at once, so appends made while a write is being flushed join the next flush
 * (group commit) instead of waiting one fsync each. Then, strictly in the same order, each append
 * is applied to the cached conversation and announced once it is durable (`applyInOrder`).
 */
export class SessionWriteQueues {
  /** One queue per session: writes to a session happen in call order. */
  private readonly queues = new KeyedQueue();
  /** Per session, appends being made durable, then applied and announced in call order. */
  private readonly applying = new KeyedQueue();

  /** Runs `work` after every earlier write to the same session. */
  serialize<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    return this.queues.run(sessionId, work);
  }

  /** Settles once every append issued so far to the session has been applied. */
  applied(sessionId: string): Promise<void> {
    return this.applying.idle(sessionId);
  }

  /** Runs `apply` on a durable append's result after every earlier append to the same session was applied. */
  applyInOrder<T, R>(sessionId: string, durable: Promise<T>, apply: (value: T) => R | Promise<R>): Promise<R> {
    // Settled into a value at once, so a failed write is never an unhandled rejection while it waits its turn.
    const outcome = durable.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    return this.applying.run(sessionId, async () => {
      const result = await outcome;
      if ('error' in result) throw result.error;
      return apply(result.value);
    });
  }

  /** True while the session has a write queued or an append waiting to be applied. */
  busy(sessionId: string): boolean {
    return this.queues.busy(sessionId) || this.applying.busy(sessionId);
  }

  /** Settles once every write and every append queued so far has finished. */
  async idleAll(): Promise<void> {
    await this.queues.idleAll();
    await this.applying.idleAll();
  }
}
