import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ParleyError } from '../../src/conversation/index.js';
import {
  createScheduler,
  type AddScheduleRequest,
  type Scheduler,
  type ScheduleTargets,
} from '../../src/harness/index.js';
import {
  createFileScheduleStore,
  createMemoryScheduleStore,
  type ScheduleFiring,
  type ScheduleStore,
  type ScheduleTarget,
} from '../../src/store/index.js';

/** A clock the test moves; the scheduler's timer is not started, the test calls `tick()`. */
function testClock(startIso: string) {
  let now = Date.parse(startIso);
  return {
    now: () => now,
    setTimeout: () => undefined,
    clearTimeout: () => undefined,
    set(iso: string) {
      now = Date.parse(iso);
    },
    advance(ms: number) {
      now += ms;
    },
  };
}

/** Targets that record each firing; with `keepRunning`, a run goes on until the test ends it. */
function recordingTargets(options: { fail?: boolean; keepRunning?: boolean } = {}) {
  const fired: Array<{ fireAt: string; runId: string }> = [];
  const running = new Set<string>();
  let counter = 0;
  const targets: ScheduleTargets = {
    check: async (target) => {
      if (target.kind === 'workflow' && target.workflow === 'missing.ts')
        throw new ParleyError('WORKFLOW_LOAD_FAILED', 'No workflow module at missing.ts.', { fault: 'user' });
      return target;
    },
    fire: async (_target, firing) => {
      if (options.fail) throw new ParleyError('WORKFLOW_LOAD_FAILED', 'The workflow module no longer loads.');
      counter += 1;
      const runId = `run-${counter}`;
      fired.push({ fireAt: firing.fireAt, runId });
      if (options.keepRunning) running.add(runId);
      return { runId };
    },
    running: async (firing: ScheduleFiring) => firing.runId !== undefined && running.has(firing.runId),
  };
  return { targets, fired, running };
}

const workflow: ScheduleTarget = { kind: 'workflow', workflow: 'workflows/review.ts', input: { depth: 1 } };
const daily = (extra: Partial<AddScheduleRequest> = {}): AddScheduleRequest => ({
  cron: '0 3 * * *',
  timeZone: 'Europe/Berlin',
  target: workflow,
  ...extra,
});

describe('the scheduler', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  function open(store: ScheduleStore, clock: ReturnType<typeof testClock>, targets: ScheduleTargets): Scheduler {
    const scheduler = createScheduler({ store, targets, clock });
    cleanups.push(() => scheduler.close());
    return scheduler;
  }

  it('fires at its times in its time zone, and goes on across a restart on the same store', async () => {
    const dataDir = await fs.mkdtemp(join(tmpdir(), 'parley-scheduler-'));
    cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }));
    const clock = testClock('2026-01-10T12:00:00.000Z');
    const { targets, fired } = recordingTargets();
    let store = await createFileScheduleStore({ dataDir });
    let scheduler = open(store, clock, targets);
    const schedule = await scheduler.addSchedule(daily());
    // 03:00 in Berlin in winter is 02:00 UTC.
    expect(schedule.nextFireAt).toBe('2026-01-11T02:00:00.000Z');
    clock.set('2026-01-11T01:59:59.000Z');
    await scheduler.tick();
    expect(fired).toEqual([]);
    clock.set('2026-01-11T02:00:00.000Z');
    await scheduler.tick();
    await scheduler.tick();
    expect(fired.map((each) => each.fireAt)).toEqual(['2026-01-11T02:00:00.000Z']);

    // A restart: a new scheduler on the store reopened.
    await scheduler.close();
    await store.close();
    store = await createFileScheduleStore({ dataDir });
    cleanups.push(() => store.close());
    scheduler = open(store, clock, targets);
    clock.set('2026-01-12T02:00:10.000Z');
    await scheduler.tick();
    expect(fired.map((each) => each.fireAt)).toEqual(['2026-01-11T02:00:00.000Z', '2026-01-12T02:00:00.000Z']);
    const stored = await scheduler.getSchedule(schedule.id);
    expect(stored.nextFireAt).toBe('2026-01-13T02:00:00.000Z');
    expect(stored.last).toMatchObject({ fireAt: '2026-01-12T02:00:00.000Z', outcome: 'started', runId: 'run-2' });
    expect((await scheduler.listFirings(schedule.id)).map((each) => each.runId)).toEqual(['run-2', 'run-1']);
  });

  it('skips the firings missed while no server ran (catchUp skip), recording one as missed', async () => {
    const clock = testClock('2026-01-10T12:00:00.000Z');
    const { targets, fired } = recordingTargets();
    const scheduler = open(createMemoryScheduleStore(), clock, targets);
    const schedule = await scheduler.addSchedule(daily({ catchUp: 'skip' }));
    clock.set('2026-01-14T12:00:00.000Z');
    await scheduler.tick();
    expect(fired).toEqual([]);
    const stored = await scheduler.getSchedule(schedule.id);
    expect(stored.last).toMatchObject({ fireAt: '2026-01-11T02:00:00.000Z', outcome: 'missed' });
    expect(stored.nextFireAt).toBe('2026-01-15T02:00:00.000Z');
    clock.set('2026-01-15T02:00:00.000Z');
    await scheduler.tick();
    expect(fired.map((each) => each.fireAt)).toEqual(['2026-01-15T02:00:00.000Z']);
  });

  it('runs the missed firings once on start (catchUp once), not once per missed day', async () => {
    const clock = testClock('2026-01-10T12:00:00.000Z');
    const { targets, fired } = recordingTargets();
    const scheduler = open(createMemoryScheduleStore(), clock, targets);
    const schedule = await scheduler.addSchedule(daily({ catchUp: 'once' }));
    clock.set('2026-01-14T12:00:00.000Z');
    await scheduler.tick();
    await scheduler.tick();
    expect(fired).toHaveLength(1);
    expect((await scheduler.getSchedule(schedule.id)).nextFireAt).toBe('2026-01-15T02:00:00.000Z');
  });

  it('a late firing (a busy server, under a minute) fires; it is not missed', async () => {
    const clock = testClock('2026-01-10T12:00:00.000Z');
    const { targets, fired } = recordingTargets();
    const scheduler = open(createMemoryScheduleStore(), clock, targets);
    await scheduler.addSchedule(daily({ catchUp: 'skip' }));
    clock.set('2026-01-11T02:00:45.000Z');
    await scheduler.tick();
    expect(fired).toHaveLength(1);
  });

  describe('a firing while the previous run goes on', () => {
    async function overlapping(overlap: 'skip' | 'queue' | 'parallel') {
      const clock = testClock('2026-01-10T12:00:00.000Z');
      const recorded = recordingTargets({ keepRunning: true });
      const scheduler = open(createMemoryScheduleStore(), clock, recorded.targets);
      const schedule = await scheduler.addSchedule({ everySeconds: 60, target: workflow, overlap });
      clock.advance(60_000);
      await scheduler.tick();
      clock.advance(60_000);
      await scheduler.tick();
      clock.advance(60_000);
      await scheduler.tick();
      return { clock, scheduler, schedule, ...recorded };
    }

    it('skip: is dropped while the run is unfinished, and the next one after it ends fires', async () => {
      const { clock, scheduler, schedule, fired, running } = await overlapping('skip');
      expect(fired).toHaveLength(1);
      const outcomes = (await scheduler.listFirings(schedule.id)).map((each) => each.outcome);
      expect(outcomes).toEqual(['skipped_overlap', 'skipped_overlap', 'started']);
      running.clear();
      clock.advance(60_000);
      await scheduler.tick();
      expect(fired).toHaveLength(2);
    });

    it('queue: waits, then starts in order, one at a time, as each run before it ends', async () => {
      const { scheduler, schedule, fired, running } = await overlapping('queue');
      expect(fired).toHaveLength(1);
      expect((await scheduler.getSchedule(schedule.id)).queue).toHaveLength(2);
      await scheduler.tick();
      expect(fired).toHaveLength(1);
      running.delete('run-1');
      await scheduler.tick();
      expect(fired.map((each) => each.runId)).toEqual(['run-1', 'run-2']);
      const second = (await scheduler.listFirings(schedule.id)).find((each) => each.runId === 'run-2');
      expect(second?.outcome).toBe('started');
      running.delete('run-2');
      await scheduler.tick();
      expect(fired).toHaveLength(3);
      expect((await scheduler.getSchedule(schedule.id)).queue).toEqual([]);
      // Each queued firing started in its due order.
      const order = fired.map((each) => each.fireAt);
      expect([...order].sort()).toEqual(order);
    });

    it('parallel: starts beside it', async () => {
      const { fired } = await overlapping('parallel');
      expect(fired).toHaveLength(3);
    });
  });

  it('fires a daily time once on each daylight-saving day: the skipped hour in spring, the doubled one in autumn', async () => {
    const clock = testClock('2026-03-27T12:00:00.000Z');
    const { targets, fired } = recordingTargets();
    const scheduler = open(createMemoryScheduleStore(), clock, targets);
    // 02:30 does not exist in Berlin on 29 March 2026 and happens twice on 25 October 2026.
    await scheduler.addSchedule(daily({ cron: '30 2 * * *' }));
    for (let step = 0; step < 4 * 24 * 3; step += 1) {
      clock.advance(15 * 60_000);
      await scheduler.tick();
    }
    expect(fired.map((each) => each.fireAt)).toEqual([
      '2026-03-28T01:30:00.000Z',
      // The skipped 02:30 fires once, at 03:00 CEST.
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    fired.length = 0;
    clock.set('2026-10-24T03:00:00.000Z');
    await scheduler.tick();
    fired.length = 0;
    for (let step = 0; step < 4 * 24 * 2; step += 1) {
      clock.advance(15 * 60_000);
      await scheduler.tick();
    }
    // 25 October: 02:30 CEST (00:30 UTC) once, not again at 02:30 CET.
    expect(fired.map((each) => each.fireAt)).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
  });

  it('two schedulers on one store: every firing is made by exactly one of them', async () => {
    const clock = testClock('2026-01-10T12:00:00.000Z');
    const store = createMemoryScheduleStore();
    const recorded = recordingTargets();
    const first = open(store, clock, recorded.targets);
    const second = open(store, clock, recorded.targets);
    await first.addSchedule({ everySeconds: 1, target: workflow, overlap: 'parallel' });
    for (let step = 0; step < 20; step += 1) {
      clock.advance(1_000);
      await Promise.all([first.tick(), second.tick()]);
    }
    const due = recorded.fired.map((each) => each.fireAt);
    expect(due).toHaveLength(20);
    expect(new Set(due).size).toBe(20);
  });

  it('pauses (nothing fires) and resumes from now, not making up the paused firings', async () => {
    const clock = testClock('2026-01-10T12:00:00.000Z');
    const { targets, fired } = recordingTargets();
    const scheduler = open(createMemoryScheduleStore(), clock, targets);
    const schedule = await scheduler.addSchedule(daily({ catchUp: 'once' }));
    expect((await scheduler.pauseSchedule(schedule.id)).paused).toBe(true);
    clock.set('2026-01-13T12:00:00.000Z');
    await scheduler.tick();
    expect(fired).toEqual([]);
    const resumed = await scheduler.resumeSchedule(schedule.id);
    expect(resumed.nextFireAt).toBe('2026-01-14T02:00:00.000Z');
    await scheduler.tick();
    expect(fired).toEqual([]);
    await scheduler.removeSchedule(schedule.id);
    expect(await scheduler.listSchedules()).toEqual([]);
    await expect(scheduler.removeSchedule(schedule.id)).rejects.toMatchObject({ code: 'SCHEDULE_NOT_FOUND' });
  });

  it('a firing that cannot start is recorded as failed with its reason, and told to listeners', async () => {
    const clock = testClock('2026-01-10T12:00:00.000Z');
    const { targets } = recordingTargets({ fail: true });
    const scheduler = open(createMemoryScheduleStore(), clock, targets);
    const failures: ScheduleFiring[] = [];
    scheduler.on('schedule_failed', ({ firing }) => failures.push(firing));
    const schedule = await scheduler.addSchedule(daily());
    clock.set('2026-01-11T02:00:00.000Z');
    await scheduler.tick();
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ outcome: 'failed', error: { code: 'WORKFLOW_LOAD_FAILED' } });
    const stored = await scheduler.getSchedule(schedule.id);
    expect(stored.last).toMatchObject({ outcome: 'failed' });
    expect(stored.active).toBeUndefined();
  });

  describe('bad input is refused with a message naming what is wrong, and nothing is stored', () => {
    const cases: Array<[string, AddScheduleRequest, RegExp]> = [
      ['a cron that does not parse', daily({ cron: '61 * * * *' }), /"61 \* \* \* \*" does not parse.*minute/],
      ['a cron with no time zone', { cron: '0 3 * * *', target: workflow }, /needs an explicit IANA time zone/],
      [
        'a time zone that does not exist',
        daily({ timeZone: 'Mars/Olympus' }),
        /"Mars\/Olympus" is not an IANA time zone/,
      ],
      ['both a cron and an interval', daily({ everySeconds: 60 }), /exactly one of a cron expression/],
      ['an interval of zero', { everySeconds: 0, target: workflow }, /whole number of seconds/],
      [
        'parallel overlap for a prompt',
        { everySeconds: 60, overlap: 'parallel', target: { kind: 'session', sessionId: 's-1', prompt: 'hi' } },
        /"parallel" needs a workflow target/,
      ],
      [
        'a workflow that does not exist',
        daily({ target: { kind: 'workflow', workflow: 'missing.ts' } }),
        /missing\.ts/,
      ],
      ['a target of no known kind', daily({ target: { kind: 'email' } as never }), /target is not valid/],
    ];
    for (const [what, request, message] of cases)
      it(what, async () => {
        const clock = testClock('2026-01-10T12:00:00.000Z');
        const store = createMemoryScheduleStore();
        const scheduler = open(store, clock, recordingTargets().targets);
        await expect(scheduler.addSchedule(request)).rejects.toThrow(message);
        expect(await store.listSchedules()).toEqual([]);
      });
  });
});
