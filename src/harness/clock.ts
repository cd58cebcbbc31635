/**
 * Where a run reads the time and sets its timers: the system clock by default; tests and the
 * durable-run service inject their own (a deadline that spans a restart is tested without sleeping).
 */
export interface HarnessClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `callback` after `ms`; returns what `clearTimeout` takes. */
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock: `Date.now()` and `setTimeout`. */
export const systemClock: HarnessClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
