import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { branches } from './branches.js';
import { AbortedError, describeError, HarnessError } from './errors.js';
import type { UnstampedSessionEvent } from './events.js';
import type { ParallelOptions, RetryOptions } from './types.js';

/**
 * The structured steps a workflow composes (`phase`, `task`, `retry`, `parallel`): each emits its
 * own start / end events around the caller's function and stops at the run's checkpoints.
 */

/** What a step needs from the run it belongs to. */
export interface StepHost {
  readonly signal: AbortSignal;
  readonly aborted: boolean;
  /** Throws once the run is aborted, waits while it is paused. */
  checkpoint(): Promise<void>;
  emit(unstamped: UnstampedSessionEvent): number;
  abortError(signal: AbortSignal): AbortedError;
}

export async function runStep<T>(
  host: StepHost,
  kind: 'phase' | 'task',
  name: string,
  fn: () => Promise<T>,
): Promise<T> {
  await host.checkpoint();
  const started = performance.now();
  host.emit(kind === 'phase' ? { type: 'phase:start', name } : { type: 'task:start', id: name });
  try {
    const result = await fn();
    const duration = performance.now() - started;
    host.emit(
      kind === 'phase' ? { type: 'phase:complete', name, duration } : { type: 'task:complete', id: name, duration },
    );
    return result;
  } catch (error) {
    const duration = performance.now() - started;
    const info = describeError(error);
    host.emit(
      kind === 'phase'
        ? { type: 'phase:failed', name, duration, error: info }
        : { type: 'task:failed', id: name, duration, error: info },
    );
    throw error;
  }
}

export async function runRetry<T>(
  host: StepHost,
  name: string,
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 3;
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new HarnessError(
      'INVALID_INPUT',
      `retry("${name}"): attempts must be a whole number of at least 1, not ${String(attempts)}.`,
      { fault: 'user' },
    );
  }
  for (let attempt = 1; ; attempt++) {
    await host.checkpoint();
    host.emit({ type: 'retry:attempt', name, attempt, attempts });
    try {
      return await fn(attempt);
    } catch (error) {
      const retryable =
        !(error instanceof AbortedError) && !host.aborted && (options.retryOn ? options.retryOn(error, attempt) : true);
      const willRetry = retryable && attempt < attempts;
      const delayMs = willRetry ? backoffDelay(options.backoff, attempt) : 0;
      host.emit({ type: 'retry:failure', name, attempt, attempts, error: describeError(error), willRetry, delayMs });
      if (!willRetry) throw error;
      if (delayMs > 0) {
        try {
          await delay(delayMs, undefined, { signal: host.signal });
        } catch {
          throw host.abortError(host.signal);
        }
      }
    }
  }
}

export async function runParallel<T>(
  host: StepHost,
  name: string,
  fns: Array<() => Promise<T>>,
  options: ParallelOptions = {},
): Promise<T[]> {
  const limit = options.concurrency ?? fns.length;
  if (!(limit >= 1) || (Number.isFinite(limit) && !Number.isInteger(limit))) {
    throw new HarnessError(
      'INVALID_INPUT',
      `parallel("${name}"): concurrency must be a whole number of at least 1, not ${String(options.concurrency)}.`,
      { fault: 'user' },
    );
  }
  await host.checkpoint();
  const started = performance.now();
  const workers = Math.min(limit, fns.length);
  host.emit({ type: 'parallel:start', name, count: fns.length, concurrency: workers });
  const parent = branches.getStore();
  const results = new Array<T>(fns.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (!failure && next < fns.length) {
      const index = next++;
      const branch = `${parent !== undefined ? `${parent}/` : ''}${name}#${index}`;
      try {
        results[index] = await branches.run(branch, async () => {
          await host.checkpoint();
          return fns[index]!();
        });
      } catch (error) {
        // The first failure stops new work; running branches finish so nothing outlives the call.
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  if (failure) {
    host.emit({ type: 'parallel:failed', name, error: describeError(failure.error) });
    throw failure.error;
  }
  host.emit({ type: 'parallel:complete', name, count: fns.length, duration: performance.now() - started });
  return results;
}

function backoffDelay(backoff: RetryOptions['backoff'], attempt: number): number {
  const value =
    typeof backoff === 'function'
      ? backoff(attempt)
      : typeof backoff === 'number'
        ? backoff
        : Math.min(500 * 2 ** (attempt - 1), 30_000);
  return Number.isFinite(value) && value > 0 ? value : 0;
}
