import { Cron } from 'croner';
import type { ScheduleTiming } from '../store/index.js';
import { HarnessError } from './errors.js';

/**
 * When a schedule fires, worked out by croner (which reads the expression in the schedule's IANA
 * time zone and handles daylight-saving changes: a daily time that falls into the hour skipped in
 * spring fires once, at the first valid minute after it, and one that occurs twice in autumn fires
 * once, at its first occurrence) or by a fixed interval counted from the schedule's creation.
 */

/** A time zone the runtime knows, or INVALID_SCHEDULE naming it. */
export function checkTimeZone(timeZone: string): string {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone }).format(0);
    return timeZone;
  } catch {
    throw invalidSchedule(
      `"${timeZone}" is not an IANA time zone this runtime knows. Use a name like Europe/Berlin, America/New_York or UTC.`,
      { timeZone },
    );
  }
}

/** Throws INVALID_SCHEDULE naming what is wrong with the timing: a cron that does not parse, a bad zone. */
export function checkTiming(timing: ScheduleTiming): void {
  if (timing.kind === 'interval') return;
  checkTimeZone(timing.timeZone);
  cronOf(timing);
}

/** The first due time strictly after `afterMs`, or undefined when the expression has none. */
export function nextFireTime(timing: ScheduleTiming, afterMs: number, createdAtMs: number): number | undefined {
  if (timing.kind === 'interval') {
    const every = timing.everySeconds * 1000;
    const elapsed = Math.max(0, afterMs - createdAtMs);
    return createdAtMs + (Math.floor(elapsed / every) + 1) * every;
  }
  return cronOf(timing).nextRun(new Date(afterMs))?.getTime();
}

/** The next `count` due times after `afterMs` (for `parley schedule add` to show what it will do). */
export function upcomingFireTimes(
  timing: ScheduleTiming,
  afterMs: number,
  createdAtMs: number,
  count: number,
): number[] {
  const times: number[] = [];
  let after = afterMs;
  while (times.length < count) {
    const next = nextFireTime(timing, after, createdAtMs);
    if (next === undefined) break;
    times.push(next);
    after = next;
  }
  return times;
}

function cronOf(timing: Extract<ScheduleTiming, { kind: 'cron' }>): Cron {
  try {
    return new Cron(timing.cron, { timezone: timing.timeZone, paused: true });
  } catch (error) {
    throw invalidSchedule(
      `The cron expression "${timing.cron}" does not parse: ${(error as Error).message}. Write five fields (minute hour day-of-month month weekday, e.g. "0 3 * * *"), or six with seconds first.`,
      { cron: timing.cron },
    );
  }
}

export function invalidSchedule(message: string, data: Record<string, unknown> = {}): HarnessError {
  return new HarnessError('INVALID_SCHEDULE', message, { fault: 'user', data });
}
