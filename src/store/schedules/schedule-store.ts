import type { ScheduleFiring, ScheduleRecord } from './records.js';

/**
 * Where schedules live: each schedule's record and the list of its firings. Implementations: file
 * (the data folder), memory (tests), PostgreSQL (several servers share it). Every one passes
 * `test/store/schedules/conformance.ts`.
 *
 * Every implementer must:
 * - validate ids with `IdSchema` (INVALID_ID) and every record with its zod schema (a
 *   ValidationError) before touching anything, and never keep or hand out a caller's objects;
 * - write a schedule only when the revision the caller read is still the stored one, bump it, and
 *   write the firing that goes with the write in the same atomic step (one transaction, one file
 *   replace): of two servers claiming one firing, exactly one succeeds and the other is told so;
 * - keep at most one firing per (schedule, due time);
 * - after `close()`, reject every call with `STORE_CLOSED`.
 */
export interface ScheduleStore {
  readonly kind: string;
  /** Stores a new schedule at revision 0; `SCHEDULE_EXISTS` when its id is taken. */
  createSchedule(record: ScheduleRecord): Promise<ScheduleRecord>;
  /** The schedule, or undefined. */
  getSchedule(scheduleId: string): Promise<ScheduleRecord | undefined>;
  /** Oldest first (by `createdAt`, then id). */
  listSchedules(): Promise<ScheduleRecord[]>;
  /**
   * Replaces the schedule if its stored revision is still `record.revision`, and stores `firing`
   * with it when given; resolves with the record as stored (its revision bumped), or undefined when
   * another write came first (the revision moved on, or that firing is stored already): nothing was
   * written then. `SCHEDULE_NOT_FOUND` for an unknown id.
   */
  updateSchedule(record: ScheduleRecord, options?: { firing?: ScheduleFiring }): Promise<ScheduleRecord | undefined>;
  /** Replaces a stored firing (its outcome once the run started); `SCHEDULE_NOT_FOUND` when it was never stored. */
  updateFiring(firing: ScheduleFiring): Promise<void>;
  /** The schedule's firings, newest due time first; `SCHEDULE_NOT_FOUND` for an unknown schedule. */
  listFirings(scheduleId: string, options?: { limit?: number }): Promise<ScheduleFiring[]>;
  /** Removes the schedule and its firings; false when there was none. */
  removeSchedule(scheduleId: string): Promise<boolean>;
  /** Waits for pending writes, then refuses every call with `STORE_CLOSED`. */
  close(): Promise<void>;
}

/** Oldest first, by creation time then id. */
export function oldestFirst(a: ScheduleRecord, b: ScheduleRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Newest due time first. */
export function newestFiringFirst(a: ScheduleFiring, b: ScheduleFiring): number {
  return a.fireAt < b.fireAt ? 1 : a.fireAt > b.fireAt ? -1 : 0;
}
