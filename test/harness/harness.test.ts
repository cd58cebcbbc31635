import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import {
  defineAgent,
  defineHarness,
  OutputValidationError,
  type AgentStreamEvent,
  type SessionEvent,
} from '../../src/harness/index.js';
import { expectCode, expectThrowsCode, openManager, outline } from './helpers.js';

describe('defineAgent and defineHarness', () => {
  it('refuse definitions a run could not use, naming what is missing', () => {
    const backend = createScriptedBackend();
    const noRole = expectThrowsCode(() => defineAgent({ name: 'x', backend } as never), 'INVALID_DEFINITION') as Error;
    expect(noRole.message).toContain('`role` or `instructions`');
    expectThrowsCode(() => defineAgent({ name: 'x', role: 'r', backend: {} as never }), 'INVALID_DEFINITION');
    expectThrowsCode(() => defineAgent({ name: '', role: 'r', backend }), 'INVALID_DEFINITION');
    const notAgent = expectThrowsCode(
      () => defineHarness({ name: 'h', agents: { helper: { name: 'helper' } as never }, run: async () => 1 }),
      'INVALID_DEFINITION',
    ) as Error;
    expect(notAgent.message).toContain('agents.helper');
    expectThrowsCode(() => defineHarness({ name: 'h', agents: {}, run: 'no' as never }), 'INVALID_DEFINITION');
  });
});

describe('run(): fire and forget', () => {
  it('runs phases, tasks and agents, returns result, state and every event, with no session in the context', async () => {
    const backend = createScriptedBackend({ turns: [[step.text('The plan is ready.')]] });
    const planner = defineAgent({ name: 'Planner', role: 'You plan the work.', backend });
    let sawSession: unknown = 'unset';
    const harness = defineHarness({
      name: 'plan',
      agents: { planner },
      state: (input: { goal: string }) => ({ goal: input.goal, plan: '' }),
      run: async ({ agents, state, phase, task, emit, session }) => {
        sawSession = session;
        state.plan = await phase('plan', () => task('draft', () => agents.planner.run(`Plan: ${state.goal}`)));
        emit('planned', { length: state.plan.length });
        return { plan: state.plan };
      },
    });
    const manager = await openManager();
    const instance = harness.create({ goal: 'ship it' }, { sessionManager: manager });
    const result = await instance.run();

    expect(result.result).toEqual({ plan: 'The plan is ready.' });
    expect(result.state).toBe(instance.state);
    expect(instance.state.plan).toBe('The plan is ready.');
    expect(sawSession).toBeUndefined();
    expect(outline(result.events)).toEqual([
      'harness:start',
      'phase:start plan',
      'task:start draft',
      'agent:start planner',
      'agent:complete planner',
      'task:complete draft',
      'phase:complete plan',
      'custom planned',
    ]);
    const deltas = result.events.filter(
      (event): event is AgentStreamEvent => event.type === 'agent:event' && event.event.type === 'text_delta',
    );
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((event) => (event.event.type === 'text_delta' ? event.event.delta : '')).join('')).toBe(
      'The plan is ready.',
    );
  });

  it("keeps each agent's conversation as a workflow-scoped Parley session, built by managed request building", async () => {
    const backend = createScriptedBackend({ turns: [[step.text('First answer.')], [step.text('Second answer.')]] });
    const writer = defineAgent({
      name: 'Writer',
      role: 'You write release notes.',
      instructions: 'Be brief.',
      backend,
    });
    const harness = defineHarness({
      name: 'notes',
      agents: { writer },
      run: async ({ agents }) => {
        await agents.writer.run('Draft the notes.');
        return agents.writer.run('Shorten them.');
      },
    });
    const manager = await openManager();
    const result = await harness.create(undefined, { sessionManager: manager }).run();
    expect(result.result).toBe('Second answer.');

    const sessions = await manager.listSessions({ scopeKind: 'workflow' });
    expect(sessions).toHaveLength(1);
    const record = sessions[0]!;
    expect(record.scope).toEqual({ kind: 'workflow', harness: 'notes', agent: 'writer' });
    expect(record.type).toBe('scripted');
    const messages = await manager.getRecentMessages(record.sessionId);
    expect(messages.map((message) => [message.role, message.content])).toEqual([
      ['user', 'Draft the notes.'],
      ['assistant', 'First answer.'],
      ['user', 'Shorten them.'],
      ['assistant', 'Second answer.'],
    ]);
    // The second request carries the role and the first exchange in its system prompt.
    const second = backend.calls[1]!;
    expect(second.prompt).toBe('Shorten them.');
    expect(second.systemPrompt).toContain('You write release notes.');
    expect(second.systemPrompt).toContain('Be brief.');
    expect(second.systemPrompt).toContain('First answer.');
  });

  it('turns of one agent run one at a time, in call order', async () => {
    const backend = createScriptedBackend({ turns: [[step.text('one')], [step.text('two')]] });
    const agent = defineAgent({ name: 'A', role: 'r', backend });
    const harness = defineHarness({
      name: 'serial',
      agents: { agent },
      run: async ({ agents }) => Promise.all([agents.agent.run('first'), agents.agent.run('second')]),
    });
    const result = await harness.create(undefined, { sessionManager: await openManager() }).run();
    expect(result.result).toEqual(['one', 'two']);
    expect(outline(result.events).filter((line) => line.startsWith('agent:'))).toEqual([
      'agent:start agent',
      'agent:complete agent',
      'agent:start agent',
      'agent:complete agent',
    ]);
  });

  it('rejects with the workflow error, after a task:failed event; an agent error block becomes AgentTurnError', async () => {
    const backend = createScriptedBackend({
      turns: [[step.text('partial '), step.error('The model is overloaded.', { retryable: true })]],
    });
    const agent = defineAgent({ name: 'A', role: 'r', backend });
    const events: SessionEvent[] = [];
    const harness = defineHarness({
      name: 'fails',
      agents: { agent },
      run: async ({ agents, task }) => task('ask', () => agents.agent.run('hi')),
    });
    const instance = harness
      .create(undefined, { sessionManager: await openManager() })
      .on('*', (event) => events.push(event));
    const error = (await expectCode(instance.run(), 'AGENT_TURN_FAILED')) as Error & { data: Record<string, unknown> };
    expect(error.message).toContain('The model is overloaded.');
    expect(error.data['retryable']).toBe(true);
    const failed = events.find((event) => event.type === 'task:failed');
    expect(failed).toMatchObject({ id: 'ask', error: { code: 'AGENT_TURN_FAILED' } });
    expect(events.find((event) => event.type === 'agent:complete')).toMatchObject({
      stopReason: 'error',
      output: 'partial ',
    });
  });

  it('an instance runs once', async () => {
    const harness = defineHarness({ name: 'once', agents: {}, run: async () => 1 });
    const instance = harness.create();
    await instance.run();
    await expectCode(instance.run(), 'ALREADY_STARTED');
    expectThrowsCode(() => instance.startSession(), 'ALREADY_STARTED');
  });

  it('useSession runs an agent in its seed-003 task session', async () => {
    const backend = createScriptedBackend({ turns: [[step.text('done')]] });
    const dev = defineAgent({ name: 'Dev', role: 'You implement the task.', agentType: 'dev', backend });
    const harness = defineHarness({
      name: 'task-work',
      agents: { dev },
      run: async ({ agents }) => {
        const id = await agents.dev.useSession({
          type: 'task',
          agentType: 'dev',
          featureId: 'f1',
          taskId: 't1',
          taskState: 'in_dev',
        });
        await agents.dev.run('Implement it.');
        return { id, same: await agents.dev.sessionId() };
      },
    });
    const manager = await openManager();
    const { result } = await harness.create(undefined, { sessionManager: manager }).run();
    expect(result).toEqual({ id: 'dev-task-f1-t1-in_dev', same: 'dev-task-f1-t1-in_dev' });
    expect((await manager.getRecentMessages('dev-task-f1-t1-in_dev')).map((message) => message.content)).toEqual([
      'Implement it.',
      'done',
    ]);
  });
});

describe('outputSchema', () => {
  const Schema = z.object({ issues: z.array(z.string()) });

  it('returns the validated value found in the text (a fenced JSON block after prose)', async () => {
    const backend = createScriptedBackend({
      turns: [[step.text('Two issues.\n```json\n{"issues": ["a", "b"]}\n```\nDone.')]],
    });
    const reviewer = defineAgent({ name: 'Reviewer', role: 'r', backend, outputSchema: Schema });
    const harness = defineHarness({
      name: 'schema',
      agents: { reviewer },
      run: async ({ agents }) => agents.reviewer.run('review'),
    });
    const { result } = await harness.create(undefined, { sessionManager: await openManager() }).run();
    expect(result).toEqual({ issues: ['a', 'b'] });
    // The back end was told the JSON Schema, so a back end that can constrain output does.
    expect(backend.calls[0]!.outputSchema).toMatchObject({ type: 'object', properties: { issues: { type: 'array' } } });
  });

  it('asks once for a repair when the output does not match, then returns the repaired value', async () => {
    const backend = createScriptedBackend({
      turns: [[step.text('{"issues": "just one"}')], [step.text('{"issues": ["just one"]}')]],
    });
    const reviewer = defineAgent({ name: 'Reviewer', role: 'r', backend, outputSchema: Schema });
    const events: SessionEvent[] = [];
    const harness = defineHarness({
      name: 'repair',
      agents: { reviewer },
      run: async ({ agents }) => agents.reviewer.run('review'),
    });
    const { result } = await harness
      .create(undefined, { sessionManager: await openManager() })
      .on('agent:start', (event) => events.push(event))
      .run();
    expect(result).toEqual({ issues: ['just one'] });
    expect(backend.calls).toHaveLength(2);
    expect(backend.calls[1]!.prompt).toContain('did not match the required output format');
    expect(backend.calls[1]!.prompt).toContain('issues');
    expect(events.map((event) => (event.type === 'agent:start' ? (event.repair ?? false) : null))).toEqual([
      false,
      true,
    ]);
  });

  it('fails with OutputValidationError carrying the raw output after the repair attempt also fails', async () => {
    const backend = createScriptedBackend({ turns: [[step.text('no json here')], [step.text('still {not json')]] });
    const reviewer = defineAgent({ name: 'Reviewer', role: 'r', backend, outputSchema: Schema });
    const harness = defineHarness({
      name: 'invalid',
      agents: { reviewer },
      run: async ({ agents }) => agents.reviewer.run('review'),
    });
    const error = await expectCode(
      harness.create(undefined, { sessionManager: await openManager() }).run(),
      'OUTPUT_VALIDATION_FAILED',
    );
    expect(error).toBeInstanceOf(OutputValidationError);
    const typed = error as OutputValidationError;
    expect(typed.rawOutput).toBe('still {not json');
    expect(typed.attempts).toEqual(['no json here', 'still {not json']);
    expect(typed.fault).toBe('model');
    expect(typed.message).toContain('Reviewer'.toLowerCase());
  });
});

describe('retry', () => {
  it('retries failed attempts with events for each, and returns the first success', async () => {
    let calls = 0;
    const harness = defineHarness({
      name: 'retry',
      agents: {},
      run: async ({ retry }) =>
        retry(
          'flaky',
          async (attempt) => {
            calls += 1;
            if (attempt < 3) throw new Error(`failure ${attempt}`);
            return 'ok';
          },
          { attempts: 3, backoff: 0 },
        ),
    });
    const { result, events } = await harness.create().run();
    expect(result).toBe('ok');
    expect(calls).toBe(3);
    expect(
      events.filter((event) => event.type.startsWith('retry:')).map((event) => ({ ...event, timestamp: undefined })),
    ).toEqual([
      { type: 'retry:attempt', name: 'flaky', attempt: 1, attempts: 3, timestamp: undefined },
      {
        type: 'retry:failure',
        name: 'flaky',
        attempt: 1,
        attempts: 3,
        error: { name: 'Error', message: 'failure 1' },
        willRetry: true,
        delayMs: 0,
        timestamp: undefined,
      },
      { type: 'retry:attempt', name: 'flaky', attempt: 2, attempts: 3, timestamp: undefined },
      {
        type: 'retry:failure',
        name: 'flaky',
        attempt: 2,
        attempts: 3,
        error: { name: 'Error', message: 'failure 2' },
        willRetry: true,
        delayMs: 0,
        timestamp: undefined,
      },
      { type: 'retry:attempt', name: 'flaky', attempt: 3, attempts: 3, timestamp: undefined },
    ]);
  });

  it('stops at the first error retryOn refuses, and after the last attempt, rethrowing the error', async () => {
    const refused = defineHarness({
      name: 'refused',
      agents: {},
      run: async ({ retry }) =>
        retry(
          'strict',
          async () => {
            throw new TypeError('bad input');
          },
          { attempts: 5, backoff: 0, retryOn: (error) => !(error instanceof TypeError) },
        ),
    });
    const events: SessionEvent[] = [];
    await expect(
      refused
        .create()
        .on('retry:failure', (event) => events.push(event))
        .run(),
    ).rejects.toThrow('bad input');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ willRetry: false, attempt: 1 });

    const exhausted = defineHarness({
      name: 'exhausted',
      agents: {},
      run: async ({ retry }) =>
        retry(
          'always',
          async (attempt) => {
            throw new Error(`no ${attempt}`);
          },
          { attempts: 2, backoff: () => 0 },
        ),
    });
    await expect(exhausted.create().run()).rejects.toThrow('no 2');
  });

  it('refuses attempts below one', async () => {
    const harness = defineHarness({
      name: 'bad-retry',
      agents: {},
      run: async ({ retry }) => retry('x', async () => 1, { attempts: 0 }),
    });
    await expectCode(harness.create().run(), 'INVALID_INPUT');
  });
});

describe('parallel', () => {
  it('runs at most `concurrency` at once, returns results in input order, and tags events with their branch', async () => {
    let running = 0;
    let most = 0;
    const releases: Array<() => void> = [];
    const harness = defineHarness({
      name: 'fan-out',
      agents: {},
      run: async ({ parallel, task }) =>
        parallel(
          'jobs',
          [0, 1, 2, 3].map(
            (index) => () =>
              task(`job-${index}`, async () => {
                running += 1;
                most = Math.max(most, running);
                await new Promise<void>((resolve) => releases.push(resolve));
                running -= 1;
                return index * 10;
              }),
          ),
          { concurrency: 2 },
        ),
    });
    const instance = harness.create();
    const done = instance.run();
    // Release jobs one by one, last started first, so they finish out of order.
    for (let released = 0; released < 4; released++) {
      while (releases.length === 0) await new Promise((resolve) => setImmediate(resolve));
      releases.pop()!();
    }
    const { result, events } = await done;
    expect(result).toEqual([0, 10, 20, 30]);
    expect(most).toBe(2);
    expect(events.find((event) => event.type === 'parallel:start')).toMatchObject({
      name: 'jobs',
      count: 4,
      concurrency: 2,
    });
    const starts = events.filter((event) => event.type === 'task:start');
    expect(starts.map((event) => [event.type === 'task:start' ? event.id : '', event.branch])).toEqual(
      expect.arrayContaining([
        ['job-0', 'jobs#0'],
        ['job-1', 'jobs#1'],
        ['job-2', 'jobs#2'],
        ['job-3', 'jobs#3'],
      ]),
    );
    expect(events.find((event) => event.type === 'parallel:complete')?.branch).toBeUndefined();
  });

  it('stops starting new work after the first failure and rejects with it once running work ends', async () => {
    const started: number[] = [];
    const harness = defineHarness({
      name: 'fan-out-fails',
      agents: {},
      run: async ({ parallel }) =>
        parallel(
          'jobs',
          [0, 1, 2, 3].map((index) => async () => {
            started.push(index);
            if (index === 0) throw new Error('job 0 failed');
            return index;
          }),
          { concurrency: 1 },
        ),
    });
    const events: SessionEvent[] = [];
    await expect(
      harness
        .create()
        .on('parallel:failed', (event) => events.push(event))
        .run(),
    ).rejects.toThrow('job 0 failed');
    expect(started).toEqual([0]);
    expect(events).toHaveLength(1);
  });
});
