import { isConnectionFailure } from './errors.js';

export const FIRST_BACKOFF_MS = 25;
export const MAX_BACKOFF_MS = 1_000;

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs `attempt` again, with growing pauses, while it fails because the connection failed (the
 * server restarted, a pooled connection was ended) and `retryForMs` has not passed. Only for work
 * that is safe to repeat: reads, upserts, and writes that check for their own earlier commit.
 * `attempt` is told whether an earlier attempt may have reached the server.
 */
export async function retryOnConnectionFailure<T>(
  retryForMs: number,
  attempt: (afterFailure: boolean) => Promise<T>,
  fail: (error: unknown) => Error,
): Promise<T> {
  const started = Date.now();
  let backoff = FIRST_BACKOFF_MS;
  for (let afterFailure = false; ; afterFailure = true) {
    try {
      return await attempt(afterFailure);
    } catch (error) {
      if (!isConnectionFailure(error) || Date.now() - started >= retryForMs) throw fail(error);
      await pause(backoff);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  }
}
