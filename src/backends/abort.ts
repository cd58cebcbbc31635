/** Outcome of waiting on something that an abort may cut short. */
export type Abortable<T> = { aborted: false; value: T } | { aborted: true };

/**
 * Waits for `promise` unless `signal` aborts first. The abort listener is removed once either
 * settles, so long turns do not pile listeners on a shared signal. A rejection is rethrown.
 */
export function abortable<T>(promise: PromiseLike<T>, signal: AbortSignal | undefined): Promise<Abortable<T>> {
  if (!signal) return Promise.resolve(promise).then((value) => ({ aborted: false, value }));
  if (signal.aborted) return Promise.resolve({ aborted: true });
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve({ aborted: true });
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(promise).then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve({ aborted: false, value });
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
