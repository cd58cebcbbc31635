import type { ScheduleFiring, ScheduleRecord } from './records.js';
import { checkFiring, checkLimit, checkSchedule, firingNotFound, scheduleExists, scheduleNotFound } from './rules.js';
import { newestFiringFirst, oldestFirst, type ScheduleStore } from './schedule-store.js';
import { checkId, storeClosed } from '../validate.js';

interface Entry {
  record: ScheduleRecord;
  /** By due time. */
  firings: Map<string, ScheduleFiring>;
}

/** The reference ScheduleStore: everything in memory, cloned on every read and write. */
export function createMemoryScheduleStore(): ScheduleStore {
  const schedules = new Map<string, Entry>();
  let closed = false;
  const copy = <T>(value: T): T => structuredClone(value);
  const open = (): void => {
    if (closed) throw storeClosed('memory schedule');
  };
  const entryOf = (scheduleId: string): Entry => {
    open();
    const entry = schedules.get(checkId(scheduleId, 'schedule id'));
    if (!entry) throw scheduleNotFound(scheduleId);
    return entry;
  };

  return {
    kind: 'memory',
    async createSchedule(input) {
      open();
      const record = { ...checkSchedule(input), revision: 0 };
      if (schedules.has(record.id)) throw scheduleExists(record.id);
      schedules.set(record.id, { record, firings: new Map() });
      return copy(record);
    },
    async getSchedule(scheduleId) {
      open();
      const entry = schedules.get(checkId(scheduleId, 'schedule id'));
      return entry ? copy(entry.record) : undefined;
    },
    async listSchedules() {
      open();
      return [...schedules.values()].map((entry) => copy(entry.record)).sort(oldestFirst);
    },
    async updateSchedule(input, options) {
      const checked = checkSchedule(input);
      const firing = options?.firing ? checkFiring(options.firing, checked.id) : undefined;
      const entry = entryOf(checked.id);
      if (entry.record.revision !== checked.revision) return undefined;
      if (firing && entry.firings.has(firing.fireAt)) return undefined;
      const record = { ...checked, revision: checked.revision + 1 };
      entry.record = record;
      if (firing) entry.firings.set(firing.fireAt, firing);
      return copy(record);
    },
    async updateFiring(input) {
      const firing = checkFiring(input);
      const entry = entryOf(firing.scheduleId);
      if (!entry.firings.has(firing.fireAt)) throw firingNotFound(firing);
      entry.firings.set(firing.fireAt, firing);
    },
    async listFirings(scheduleId, options) {
      const limit = checkLimit(options?.limit);
      const firings = [...entryOf(scheduleId).firings.values()].sort(newestFiringFirst);
      return copy(limit === undefined ? firings : firings.slice(0, limit));
    },
    async removeSchedule(scheduleId) {
      open();
      return schedules.delete(checkId(scheduleId, 'schedule id'));
    },
    async close() {
      closed = true;
    },
  };
}
