/**
 * Runs tasks one after another per key (a session, a feature), in call order; tasks of different
 * keys run concurrently. A failed task does not stop the ones queued after it.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** True while a task for `key` is queued or running. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /** Settles once every task queued for `key` so far has finished. */
  idle(key: string): Promise<void> {
    return this.tails.get(key) ?? Promise.resolve();
  }

  /** Settles once every task queued so far, under any key, has finished. */
  async idleAll(): Promise<void> {
    await Promise.all(this.tails.values());
  }
}
