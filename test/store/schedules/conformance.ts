import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/conversation/index.js';
import type { ScheduleFiring, ScheduleRecord, ScheduleStore } from '../../../src/store/index.js';
import { BAD_IDS, storeErrorOf } from '../builders.js';

/** How a ScheduleStore's test file plugs into the shared suite (file, memory and PostgreSQL run it all). */
export interface ScheduleStoreInitializer {
  name: string;
  /** A fresh, empty store. */
  create(): Promise<ScheduleStore>;
  /** Opens the same store again (a restart); its old handle is closed first. */
  reopen?(store: ScheduleStore): Promise<ScheduleStore>;
  /** A second handle on the same store, as another server has (PostgreSQL only: the file store has one writer). */
  second?(store: ScheduleStore): Promise<ScheduleStore>;
  /** Releases what `create` made; the store may already be closed. */
  destroy(store: ScheduleStore): Promise<void>;
}

export function scheduleRecord(id: string, overrides: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    id,
    timing: { kind: 'cron', cron: '0 3 * * *', timeZone: 'Europe/Berlin' },
    target: { kind: 'workflow', workflow: 'workflows/review.ts', input: { file: 'a.ts' } },
    catchUp: 'skip',
    overlap: 'skip',
    paused: false,
    nextFireAt: '2025-01-03T02:00:00.000Z',
    queue: [],
    revision: 0,
    createdAt: '2025-01-02T03:04:05.000Z',
    updatedAt: '2025-01-02T03:04:05.000Z',
    ...overrides,
  };
}

export function firing(scheduleId: string, fireAt: string, overrides: Partial<ScheduleFiring> = {}): ScheduleFiring {
  return { scheduleId, fireAt, firedAt: fireAt, outcome: 'started', ...overrides };
}

export function runScheduleStoreConformance(initializer: ScheduleStoreInitializer): void {
  describe(`ScheduleStore conformance: ${initializer.name}`, () => {
    let store: ScheduleStore;
    beforeEach(async () => {
      store = await initializer.create();
    });
    afterEach(async () => {
      await initializer.destroy(store);
    });

    it('creates at revision 0, reads back and lists oldest first, never keeping the caller’s object', async () => {
      const record = scheduleRecord('nightly', { revision: 7 });
      const created = await store.createSchedule(record);
      expect(created.revision).toBe(0);
      record.paused = true;
      expect(await store.getSchedule('nightly')).toEqual(created);
      await store.createSchedule(scheduleRecord('earlier', { createdAt: '2025-01-01T00:00:00.000Z' }));
      expect((await store.listSchedules()).map((each) => each.id)).toEqual(['earlier', 'nightly']);
      const read = (await store.getSchedule('nightly'))!;
      read.paused = true;
      expect((await store.getSchedule('nightly'))!.paused).toBe(false);
      expect(await store.getSchedule('missing')).toBeUndefined();
    });

    it('refuses a taken id, an invalid record and a bad id, storing nothing', async () => {
      await store.createSchedule(scheduleRecord('nightly'));
      expect((await storeErrorOf(() => store.createSchedule(scheduleRecord('nightly')))).code).toBe('SCHEDULE_EXISTS');
      await expect(
        store.createSchedule({ ...scheduleRecord('broken'), catchUp: 'always' as never }),
      ).rejects.toBeInstanceOf(ValidationError);
      for (const id of BAD_IDS.slice(0, 3))
        expect((await storeErrorOf(() => store.getSchedule(id))).code).toBe('INVALID_ID');
      expect((await store.listSchedules()).map((each) => each.id)).toEqual(['nightly']);
    });

    it('writes only over the revision it read, with its firing, and bumps the revision', async () => {
      const created = await store.createSchedule(scheduleRecord('nightly'));
      const claimed = await store.updateSchedule(
        { ...created, nextFireAt: '2025-01-04T02:00:00.000Z' },
        { firing: firing('nightly', '2025-01-03T02:00:00.000Z') },
      );
      expect(claimed?.revision).toBe(1);
      // A second writer that read revision 0 is told it lost; nothing it sent is stored.
      const late = await store.updateSchedule(
        { ...created, nextFireAt: '2025-01-05T02:00:00.000Z' },
        { firing: firing('nightly', '2025-01-04T02:00:00.000Z') },
      );
      expect(late).toBeUndefined();
      expect((await store.getSchedule('nightly'))?.nextFireAt).toBe('2025-01-04T02:00:00.000Z');
      expect((await store.listFirings('nightly')).map((each) => each.fireAt)).toEqual(['2025-01-03T02:00:00.000Z']);
      expect((await storeErrorOf(() => store.updateSchedule(scheduleRecord('missing')))).code).toBe(
        'SCHEDULE_NOT_FOUND',
      );
    });

    it('keeps one firing per due time: a write that brings a stored one again writes nothing', async () => {
      const created = await store.createSchedule(scheduleRecord('nightly'));
      const first = (await store.updateSchedule(created, { firing: firing('nightly', '2025-01-03T02:00:00.000Z') }))!;
      expect(
        await store.updateSchedule(first, { firing: firing('nightly', '2025-01-03T02:00:00.000Z', { server: 'b' }) }),
      ).toBeUndefined();
      expect((await store.getSchedule('nightly'))?.revision).toBe(1);
      const firings = await store.listFirings('nightly');
      expect(firings).toHaveLength(1);
      expect(firings[0]?.server).toBeUndefined();
    });

    it('of many claims of one revision at once, exactly one wins', async () => {
      const created = await store.createSchedule(scheduleRecord('nightly'));
      const handles = [store];
      if (initializer.second) handles.push(await initializer.second(store));
      try {
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, index) =>
            handles[index % handles.length]!.updateSchedule(
              { ...created, name: `claim ${index}` },
              { firing: firing('nightly', '2025-01-03T02:00:00.000Z', { server: `server-${index}` }) },
            ),
          ),
        );
        const won = results.filter((result) => result !== undefined);
        expect(won).toHaveLength(1);
        const stored = (await store.getSchedule('nightly'))!;
        expect(stored.name).toBe(won[0]!.name);
        const firings = await store.listFirings('nightly');
        expect(firings).toHaveLength(1);
        expect(`claim ${firings[0]!.server!.slice('server-'.length)}`).toBe(stored.name);
      } finally {
        for (const handle of handles.slice(1)) await handle.close();
      }
    });

    it('updates a stored firing, lists firings newest first with a limit, and refuses an unknown one', async () => {
      let record = await store.createSchedule(scheduleRecord('nightly'));
      for (const day of ['03', '04', '05'])
        record = (await store.updateSchedule(record, { firing: firing('nightly', `2025-01-${day}T02:00:00.000Z`) }))!;
      await store.updateFiring(firing('nightly', '2025-01-04T02:00:00.000Z', { runId: 'run-4' }));
      const all = await store.listFirings('nightly');
      expect(all.map((each) => each.fireAt.slice(8, 10))).toEqual(['05', '04', '03']);
      expect(all[1]?.runId).toBe('run-4');
      expect((await store.listFirings('nightly', { limit: 2 })).map((each) => each.fireAt.slice(8, 10))).toEqual([
        '05',
        '04',
      ]);
      expect((await storeErrorOf(() => store.updateFiring(firing('nightly', '2025-02-01T02:00:00.000Z')))).code).toBe(
        'SCHEDULE_NOT_FOUND',
      );
      expect((await storeErrorOf(() => store.listFirings('missing'))).code).toBe('SCHEDULE_NOT_FOUND');
      await expect(store.listFirings('nightly', { limit: 0 })).rejects.toBeInstanceOf(ValidationError);
    });

    it('removes a schedule with its firings', async () => {
      const created = await store.createSchedule(scheduleRecord('nightly'));
      await store.updateSchedule(created, { firing: firing('nightly', '2025-01-03T02:00:00.000Z') });
      expect(await store.removeSchedule('nightly')).toBe(true);
      expect(await store.removeSchedule('nightly')).toBe(false);
      expect(await store.getSchedule('nightly')).toBeUndefined();
      expect((await storeErrorOf(() => store.listFirings('nightly'))).code).toBe('SCHEDULE_NOT_FOUND');
      await store.createSchedule(scheduleRecord('nightly'));
      expect(await store.listFirings('nightly')).toEqual([]);
    });

    it.runIf(initializer.reopen !== undefined)('schedules and firings survive a reopen', async () => {
      const created = await store.createSchedule(scheduleRecord('nightly'));
      const claimed = (await store.updateSchedule(
        { ...created, queue: ['2025-01-04T02:00:00.000Z'] },
        { firing: firing('nightly', '2025-01-03T02:00:00.000Z') },
      ))!;
      store = await initializer.reopen!(store);
      expect(await store.getSchedule('nightly')).toEqual(claimed);
      expect(await store.listFirings('nightly')).toEqual([firing('nightly', '2025-01-03T02:00:00.000Z')]);
    });

    it('after close(), every call is STORE_CLOSED', async () => {
      await store.close();
      expect((await storeErrorOf(() => store.getSchedule('nightly'))).code).toBe('STORE_CLOSED');
      expect((await storeErrorOf(() => store.listSchedules())).code).toBe('STORE_CLOSED');
      expect((await storeErrorOf(() => store.createSchedule(scheduleRecord('nightly')))).code).toBe('STORE_CLOSED');
    });
  });
}
