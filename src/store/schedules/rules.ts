import { ValidationError } from '../../conversation/index.js';
import { StoreError } from '../errors.js';
import { checkId, checkRecord } from '../validate.js';
import { ScheduleFiringSchema, ScheduleRecordSchema, type ScheduleFiring, type ScheduleRecord } from './records.js';

/** The checks every ScheduleStore makes before it writes, so the three stores refuse the same things. */

export function checkSchedule(record: unknown): ScheduleRecord {
  checkId((record as { id?: unknown } | null)?.id, 'schedule id');
  return checkRecord(ScheduleRecordSchema, record, 'schedule record');
}

export function checkFiring(firing: unknown, scheduleId?: string): ScheduleFiring {
  checkId((firing as { scheduleId?: unknown } | null)?.scheduleId, 'schedule id');
  const checked = checkRecord(ScheduleFiringSchema, firing, 'schedule firing');
  if (scheduleId !== undefined && checked.scheduleId !== scheduleId)
    throw new ValidationError(
      `Refusing a firing of schedule "${checked.scheduleId}" written with schedule "${scheduleId}": they must be the same.`,
    );
  return checked;
}

export function checkLimit(limit: number | undefined): number | undefined {
  if (limit === undefined) return undefined;
  if (!Number.isInteger(limit) || limit < 1)
    throw new ValidationError(`listFirings: limit must be a whole number of at least 1, not ${String(limit)}.`);
  return limit;
}

export function scheduleNotFound(scheduleId: string): StoreError {
  return new StoreError(
    'SCHEDULE_NOT_FOUND',
    `No schedule "${scheduleId}" in this store. List schedules to see the ids that exist.`,
    { fault: 'user', data: { scheduleId } },
  );
}

export function firingNotFound(firing: ScheduleFiring): StoreError {
  return new StoreError(
    'SCHEDULE_NOT_FOUND',
    `No firing of schedule "${firing.scheduleId}" due at ${firing.fireAt} is stored; a firing is stored with the schedule write that claims it.`,
    { fault: 'system', data: { scheduleId: firing.scheduleId, fireAt: firing.fireAt } },
  );
}

export function scheduleExists(scheduleId: string): StoreError {
  return new StoreError(
    'SCHEDULE_EXISTS',
    `A schedule "${scheduleId}" is stored already; a new schedule needs a new id.`,
    { fault: 'user', data: { scheduleId } },
  );
}
