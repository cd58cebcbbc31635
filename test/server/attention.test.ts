import { describe, expect, it } from 'vitest';
import type { DraftService } from '../../src/draft/index.js';
import type { RunService } from '../../src/harness/index.js';
import { Notifier } from '../../src/hooks/index.js';
import { wireAttention } from '../../src/server/attention.js';
import type { Hub } from '../../src/server/hub.js';
import type { SessionManager } from '../../src/sessions/index.js';
import type { RunRecord } from '../../src/store/index.js';
import { ManualClock, recordingSink } from '../hooks/notification-helpers.js';

/** An `on` that keeps its listeners, and `emit` to call them. */
function emitter() {
  const listeners = new Map<string, Array<(payload: never) => void>>();
  return {
    on: ((name: string, listener: (payload: never) => void) => {
      listeners.set(name, [...(listeners.get(name) ?? []), listener]);
      return () =>
        listeners.set(
          name,
          (listeners.get(name) ?? []).filter((entry) => entry !== listener),
        );
    }) as never,
    emit: (name: string, payload: unknown) => {
      for (const listener of listeners.get(name) ?? []) listener(payload as never);
    },
  };
}

function run(fields: Partial<RunRecord>): RunRecord {
  return {
    id: 'run-1',
    harness: 'release',
    workflow: { ref: 'release.ts', path: '/p/release.ts' },
    project: 'demo',
    input: {},
    state: {},
    status: 'waiting',
    phases: [],
    pendingPrompts: [],
    agents: [],
    journalLength: 1,
    createdAt: '2026-12-02T06:00:00.000Z',
    updatedAt: '2026-12-02T06:00:00.000Z',
    ...fields,
  };
}

function setup() {
  const clock = new ManualClock();
  const sink = recordingSink();
  const notifier = new Notifier({ sinks: [sink], clock, delayMs: 1_000, coalesceMs: 0 });
  const drafts = emitter();
  const manager = emitter();
  const runs = emitter();
  const hub = { hasChannel: () => false, hasFollowers: () => false } as unknown as Hub;
  const runService = { ...runs, getRun: async () => run({}) } as unknown as RunService;
  const stops = wireAttention({
    notifier,
    drafts: drafts as unknown as DraftService,
    manager: manager as unknown as SessionManager,
    hub,
    runService,
  });
  const flush = async () => {
    // The run's or draft's description is read first: one turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(1_000);
    await notifier.idle();
  };
  return { notifier, sink, drafts, manager, runs, stops, flush };
}

describe('what the server notifies', () => {
  it("a run's question, unless it was answered first; a failed run", async () => {
    const { sink, runs, flush } = setup();
    const prompt = { promptId: 'p1', prompt: 'Ship 1.2?', choices: ['yes', 'no'], askedAt: '2026-12-02T06:00:00.000Z' };
    runs.emit('run_prompt', { runId: 'run-1', prompt });
    await flush();
    expect(sink.sent).toHaveLength(1);
    expect(sink.sent[0]).toMatchObject({
      kind: 'run_question',
      title: 'release asks: Ship 1.2?',
      message: 'Ship 1.2? (yes / no)\nrelease · run run-1 in demo',
      items: [{ runId: 'run-1', route: '#run=run-1' }],
    });

    runs.emit('run_prompt', { runId: 'run-1', prompt: { ...prompt, promptId: 'p2' } });
    await new Promise((resolve) => setImmediate(resolve));
    runs.emit('run_updated', { run: run({ status: 'running', pendingPrompts: [] }) });
    await flush();
    expect(sink.sent).toHaveLength(1);

    runs.emit('run_updated', { run: run({ status: 'failed', error: { code: 'BOOM', message: 'the build broke' } }) });
    await flush();
    expect(sink.sent[1]).toMatchObject({
      kind: 'run_failed',
      title: 'Run release failed',
      message: expect.stringContaining('BOOM: the build broke'),
    });
  });

  it('a failed worker, a compaction that fell back (until a model compaction succeeds), not a completed worker', async () => {
    const { sink, drafts, manager, flush } = setup();
    const agent = {
      agentId: 'w1',
      kind: 'worker',
      role: 'qa',
      project: 'demo',
      taskSlug: 'login',
      status: 'completed',
      sessionId: 's1',
      startedAt: '2026-12-02T06:00:00.000Z',
      costUsd: 0,
      prompt: 'Test the login page',
    };
    drafts.emit('agent_status', { channelId: 'c', agent });
    drafts.emit('agent_status', { channelId: 'c', agent: { ...agent, status: 'failed' } });
    manager.emit('session:compaction-complete', {
      sessionId: 's1',
      summarizer: { kind: 'structural', fallback: true },
    });
    await flush();
    expect(sink.sent).toHaveLength(1);
    expect(sink.sent[0]!.items.map((item) => `${item.kind} ${item.title}`)).toEqual([
      'worker_failed Worker qa failed',
      'compaction_fallback Compaction fell back to the structural checkpoint',
    ]);
    expect(sink.sent[0]!.items[0]).toMatchObject({ where: 'demo / login', route: '#session=s1' });
  });

  it("a goal's end by itself (met, out of budget), not one a person stopped, nor a goal still running", async () => {
    const { sink, drafts, flush } = setup();
    const goal = {
      goalId: 'g1',
      condition: 'the tests pass',
      judge: { kind: 'command', command: 'npm test' },
      budget: { turns: 5 },
      used: { turns: 3, costUsd: 0, timeMs: 1_000 },
      startedAt: '2026-12-02T06:00:00.000Z',
      state: 'running',
      judgements: [],
    };
    drafts.emit('goal_status', { channelId: 'c', sessionId: 's1', goal });
    const ended = (id: string, reason: string, message: string) => ({
      channelId: 'c',
      sessionId: 's1',
      goal: { ...goal, goalId: id, state: 'ended', ended: { reason, message, at: '2026-12-02T06:01:00.000Z' } },
    });
    drafts.emit('goal_status', ended('g0', 'stopped', 'Stopped by a person.'));
    drafts.emit('goal_status', ended('g1', 'met', 'The judge says the goal holds.'));
    drafts.emit('goal_status', ended('g2', 'turns', 'Out of budget: 5 of 5 turns used.'));
    await flush();
    expect(sink.sent.flatMap((sent) => sent.items.map((item) => `${item.kind} ${item.title}`))).toEqual([
      'goal_ended Goal met: the tests pass',
      'goal_ended Goal stopped: the tests pass',
    ]);
    expect(sink.sent.flatMap((sent) => sent.items)[0]!.message).toBe(
      'The judge says the goal holds. Met after 3 turns.',
    );
    expect(sink.sent.flatMap((sent) => sent.items)[1]).toMatchObject({
      message: 'Out of budget: 5 of 5 turns used.',
      route: '#session=s1',
      channelId: 'c',
    });
  });

  it('stops listening when unwired', async () => {
    const { sink, drafts, stops, flush } = setup();
    for (const stop of stops) stop();
    drafts.emit('draft_status', { channelId: 'c', sessionId: 's1', role: 'dev', turnCount: 1 });
    await flush();
    expect(sink.sent).toEqual([]);
  });
});
