import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { step } from '../../src/backends/index.js';
import { coreRunServiceFactory, serveRuns } from '../../src/cli/run-service-wiring.js';
import { Notifier } from '../../src/hooks/index.js';
import { RpcError, type ProtocolClient } from '../../src/protocol/index.js';
import { createMemoryScheduleStore, type ScheduleStore } from '../../src/store/index.js';
import { ManualClock, recordingSink } from '../hooks/notification-helpers.js';
import { startTestServer, type TestServer } from './helpers.js';

const repo = resolve(import.meta.dirname, '..', '..');

/** A clock the test sets; the scheduler's timer never fires by itself (the test calls `tick()`). */
function schedulerClock(startIso: string) {
  let now = Date.parse(startIso);
  return {
    now: () => now,
    setTimeout: () => undefined,
    clearTimeout: () => undefined,
    set: (iso: string) => void (now = Date.parse(iso)),
  };
}

async function rpcErrorOf(action: Promise<unknown>): Promise<RpcError> {
  try {
    await action;
  } catch (error) {
    if (error instanceof RpcError) return error;
    throw error;
  }
  throw new Error('expected the server to refuse');
}

describe('schedules on a server, over the protocol', () => {
  let harness: TestServer | undefined;
  afterEach(async () => {
    await harness?.stop();
    harness = undefined;
  });

  async function serve(store: ScheduleStore, clock = schedulerClock('2026-01-10T12:00:00.000Z')) {
    const notificationClock = new ManualClock();
    const sink = recordingSink();
    const notifier = new Notifier({ sinks: [sink], clock: notificationClock, delayMs: 1_000, coalesceMs: 0 });
    harness = await startTestServer({
      scheduleStore: store,
      schedulerClock: clock,
      createRunService: serveRuns(coreRunServiceFactory, () => undefined),
      notifier,
    });
    // A workflow without agents: its runs complete at once.
    await mkdir(join(harness.root, 'workflows'));
    await writeFile(
      join(harness.root, 'workflows', 'nightly.ts'),
      `import { defineHarness } from '${pathToFileURL(join(repo, 'src', 'index.ts')).href}';\n` +
        `export default defineHarness({ name: 'nightly', agents: {}, async run(context) { return { echoed: context.input }; } });\n`,
    );
    return { harness, clock, sink, notificationClock };
  }

  it('adds, lists, fires a workflow run at its time, pauses, resumes and removes', async () => {
    const store = createMemoryScheduleStore();
    const { harness, clock } = await serve(store);
    const client = await harness.client();
    const updates: string[] = [];
    client.on('schedule_updated', ({ schedule }) => updates.push(schedule.last?.outcome ?? 'added'));
    const schedule = await client.addSchedule({
      name: 'nightly review',
      cron: '0 3 * * *',
      timeZone: 'Europe/Berlin',
      target: { kind: 'workflow', workflow: 'workflows/nightly.ts', input: { depth: 2 } },
    });
    expect(schedule.nextFireAt).toBe('2026-01-11T02:00:00.000Z');
    expect((await client.listSchedules()).map((each) => each.id)).toEqual([schedule.id]);

    clock.set('2026-01-11T02:00:01.000Z');
    await harness.server.scheduler!.tick();
    const fired = (await client.request('get_schedule', { scheduleId: schedule.id })).firings;
    expect(fired).toHaveLength(1);
    const runId = fired[0]!.runId!;
    expect(fired[0]).toMatchObject({ outcome: 'started', fireAt: '2026-01-11T02:00:00.000Z' });
    await vi.waitFor(async () => expect((await client.getRun(runId)).status).toBe('complete'));
    expect((await client.getRun(runId)).result).toEqual({ echoed: { depth: 2 } });
    await vi.waitFor(() => expect(updates).toContain('started'));

    expect((await client.pauseSchedule(schedule.id)).paused).toBe(true);
    clock.set('2026-01-12T02:00:01.000Z');
    await harness.server.scheduler!.tick();
    expect((await client.request('get_schedule', { scheduleId: schedule.id })).firings).toHaveLength(1);
    const resumed = await client.resumeSchedule(schedule.id);
    expect(resumed.nextFireAt).toBe('2026-01-13T02:00:00.000Z');
    await client.removeSchedule(schedule.id);
    expect(await client.listSchedules()).toEqual([]);
    expect((await rpcErrorOf(client.removeSchedule(schedule.id))).reason).toBe('SCHEDULE_NOT_FOUND');
  });

  it('a schedule survives a restart of the server and fires after it', async () => {
    const store = createMemoryScheduleStore();
    const { harness, clock } = await serve(store);
    const schedule = await (
      await harness.client()
    ).addSchedule({ everySeconds: 3600, target: { kind: 'workflow', workflow: 'workflows/nightly.ts' } });
    await harness.restart({ scheduleStore: store, schedulerClock: clock });
    clock.set('2026-01-10T13:00:05.000Z');
    await harness.server.scheduler!.tick();
    const client = await harness.client();
    const firings = (await client.request('get_schedule', { scheduleId: schedule.id })).firings;
    expect(firings.map((each) => each.outcome)).toEqual(['started']);
  });

  it('prompts a draft of a role on its own channel, drafting it at the first firing, and the same draft after', async () => {
    const store = createMemoryScheduleStore();
    const { harness, clock } = await serve(store);
    const client = await harness.client();
    harness.backend.enqueue([step.text('Weekly summary one.')], [step.text('Weekly summary two.')]);
    const schedule = await client.addSchedule({
      cron: '0 9 * * 1',
      timeZone: 'America/New_York',
      target: { kind: 'draft', prompt: 'Summarize the week.', project: harness.project, role: 'dev' },
    });
    expect(schedule.target).toMatchObject({ channelId: `schedule-${schedule.id}` });
    // Monday 12 January 2026, 09:00 in New York is 14:00 UTC.
    clock.set('2026-01-12T14:00:00.000Z');
    await harness.server.scheduler!.tick();
    const first = (await client.request('get_schedule', { scheduleId: schedule.id })).schedule.last!;
    expect(first.outcome).toBe('started');
    const sessionId = first.sessionId!;
    await harness.server.drafts.settled({ channelId: `schedule-${schedule.id}` });
    clock.set('2026-01-19T14:00:00.000Z');
    await harness.server.scheduler!.tick();
    const second = (await client.request('get_schedule', { scheduleId: schedule.id })).schedule.last!;
    expect(second).toMatchObject({ outcome: 'started', sessionId });
    await harness.server.drafts.settled({ channelId: `schedule-${schedule.id}` });
    const texts = (await client.request('get_messages', { sessionId })).messages
      .filter((message) => message.role === 'user')
      .map((message) => message.content);
    expect(texts).toEqual(['Summarize the week.', 'Summarize the week.']);
  });

  it('a firing that cannot start is recorded as failed and notifies', async () => {
    const store = createMemoryScheduleStore();
    const { harness, clock, sink, notificationClock } = await serve(store);
    const client = await harness.client();
    const { sessionId } = await client.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    const schedule = await client.addSchedule({
      name: 'poke',
      everySeconds: 60,
      target: { kind: 'session', sessionId, prompt: 'Still there?' },
    });
    // The draft is closed before the firing: the prompt has nowhere to go.
    await client.request('undraft', {});
    clock.set('2026-01-10T12:01:00.000Z');
    await harness.server.scheduler!.tick();
    const last = (await client.request('get_schedule', { scheduleId: schedule.id })).schedule.last!;
    expect(last).toMatchObject({ outcome: 'failed', error: { code: 'NO_ACTIVE_DRAFT' } });
    notificationClock.advance(1_000);
    await vi.waitFor(() => expect(sink.sent).toHaveLength(1));
    expect(sink.sent[0]).toMatchObject({ kind: 'schedule_failed', title: 'Schedule poke failed to fire' });
    expect(sink.sent[0]!.items[0]).toMatchObject({ scheduleId: schedule.id, route: `#schedule=${schedule.id}` });
  });

  describe('bad input is refused naming what is wrong, and nothing is stored', () => {
    const workflow = { kind: 'workflow' as const, workflow: 'workflows/nightly.ts' };
    const cases: Array<[string, (project: string) => Parameters<ProtocolClient['addSchedule']>[0], string, RegExp]> = [
      [
        'a cron that does not parse',
        () => ({ cron: 'every day', timeZone: 'UTC', target: workflow }),
        'INVALID_SCHEDULE',
        /"every day" does not parse/,
      ],
      [
        'a bad time zone',
        () => ({ cron: '0 3 * * *', timeZone: 'Europe/Atlantis', target: workflow }),
        'INVALID_SCHEDULE',
        /Europe\/Atlantis/,
      ],
      [
        'a cron without a time zone',
        () => ({ cron: '0 3 * * *', target: workflow }),
        'INVALID_SCHEDULE',
        /explicit IANA time zone/,
      ],
      [
        'a workflow that does not exist',
        () => ({ everySeconds: 60, target: { kind: 'workflow', workflow: 'workflows/none.ts' } }),
        'WORKFLOW_LOAD_FAILED',
        /none\.ts/,
      ],
      [
        'a role that does not exist',
        (project) => ({ everySeconds: 60, target: { kind: 'draft', prompt: 'hi', project, role: 'wizard' } }),
        'ROLE_NOT_FOUND',
        /No role "wizard"/,
      ],
      [
        'a project that does not exist',
        () => ({ everySeconds: 60, target: { kind: 'draft', prompt: 'hi', project: 'nowhere', role: 'dev' } }),
        'PROJECT_NOT_FOUND',
        /No project "nowhere"/,
      ],
      [
        'a session that does not exist',
        () => ({ everySeconds: 60, target: { kind: 'session', prompt: 'hi', sessionId: 'no-such-session' } }),
        'SESSION_NOT_FOUND',
        /no-such-session/,
      ],
    ];
    for (const [what, params, code, message] of cases)
      it(what, async () => {
        const store = createMemoryScheduleStore();
        const { harness } = await serve(store);
        const client = await harness.client();
        const error = await rpcErrorOf(client.addSchedule(params(harness.project)));
        expect(error.reason).toBe(code);
        expect(error.message).toMatch(message);
        expect(await store.listSchedules()).toEqual([]);
      });
  });
});
