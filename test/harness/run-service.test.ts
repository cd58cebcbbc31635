import { describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type ScriptedBackend } from '../../src/backends/index.js';
import {
  createRunService,
  defineAgent,
  defineHarness,
  type AnyHarness,
  type RunService,
  type RunServiceOptions,
} from '../../src/harness/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryRunStore, createMemoryStore, type RunStore } from '../../src/store/index.js';
import { expectCode, tempDir } from './helpers.js';
import {
  hasEnded,
  isWaiting,
  manualClock,
  projectWithWorkflow,
  waitForRun,
  type ManualClock,
} from './run-service-helpers.js';

/** examples/code-review.ts, small: write, ask for approval, review. Counts each agent's calls. */
function codeReview(
  writer: ScriptedBackend,
  reviewer: ScriptedBackend,
  options: { writePrompt?: string; timeout?: number; defaultChoice?: string } = {},
): AnyHarness {
  return defineHarness({
    name: 'code-review',
    agents: {
      writer: defineAgent({ name: 'Writer', role: 'writes code', backend: writer }),
      reviewer: defineAgent({ name: 'Reviewer', role: 'reviews code', backend: reviewer }),
    },
    state: () => ({ approved: false as boolean }),
    async run(context) {
      const startedAt = context.now();
      const token = context.random();
      const draft = await context.phase('write', () =>
        context.agents.writer.run(options.writePrompt ?? `Write ${String((context.input as { file: string }).file)}`),
      );
      const answer = await context.phase('approve', () =>
        context.session!.waitForUser(`Approve this draft? ${draft}`, {
          choices: ['yes', 'no'],
          ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
          ...(options.defaultChoice !== undefined ? { defaultChoice: options.defaultChoice } : {}),
        }),
      );
      context.state.approved = answer.choice === 'yes';
      const review = await context.phase('review', () =>
        context.agents.reviewer.run(`Review (${answer.choice ?? answer.content}): ${draft}`),
      );
      return { draft, review, approved: context.state.approved, timedOut: answer.timedOut === true, startedAt, token };
    },
  }) as AnyHarness;
}

interface World {
  root: string;
  runStore: RunStore;
  manager: SessionManager;
  clock: ManualClock;
  writer: ScriptedBackend;
  reviewer: ScriptedBackend;
  services: RunService[];
  /** A run service over the world's stores: a new one is a restarted process. */
  open(overrides?: Partial<RunServiceOptions> & { harness?: AnyHarness }): RunService;
}

async function world(harnessOptions: Parameters<typeof codeReview>[2] = {}): Promise<World> {
  const root = await projectWithWorkflow(await tempDir(), 'workflows/review.ts', {
    workflows: { review: 'workflows/review.ts' },
  });
  const writer = createScriptedBackend({
    defaultTurn: (call) => [step.text(`draft of "${call.prompt.split('\n').pop()}"`)],
  });
  const reviewer = createScriptedBackend({ defaultTurn: () => [step.text('looks good')] });
  const harness = codeReview(writer, reviewer, harnessOptions);
  const manager = await createSessionManager({ store: createMemoryStore() });
  const self: World = {
    root,
    runStore: createMemoryRunStore(),
    manager,
    clock: manualClock(),
    writer,
    reviewer,
    services: [],
    open(overrides = {}) {
      const { harness: chosen, ...rest } = overrides;
      const service = createRunService({
        runStore: self.runStore,
        sessionManager: manager,
        projectRoot: root,
        clock: self.clock,
        loadWorkflow: async () => chosen ?? harness,
        ...rest,
      });
      self.services.push(service);
      return service;
    },
  };
  return self;
}

async function closeAll(w: World): Promise<void> {
  for (const service of w.services) await service.close();
  await w.manager.close();
}

describe('durable runs: the run service', () => {
  it('journals a run, and after a restart resumes it from the journal: no agent called twice, no question asked twice', async () => {
    const w = await world();
    const first = w.open();
    const prompts: string[] = [];
    first.on('run_prompt', ({ prompt }) => prompts.push(prompt.promptId));
    const started = await first.startRun({ workflow: 'review', input: { file: 'a.ts' } });
    expect(started).toMatchObject({ status: 'running', harness: 'code-review', workflow: { ref: 'review' } });
    const waiting = await waitForRun(first, started.id, isWaiting);
    expect(waiting.pendingPrompts).toMatchObject([{ promptId: 'prompt-1', choices: ['yes', 'no'] }]);
    expect(waiting.phases).toEqual(['write', 'approve']);
    expect(waiting.agents.find((agent) => agent.key === 'writer')?.sessionId).toBeDefined();
    await first.close();
    expect((await w.runStore.getRun(started.id))!.status).toBe('waiting');
    const journalBefore = await w.runStore.readJournal(started.id);

    w.clock.advance(3_600_000);
    const second = w.open();
    second.on('run_prompt', ({ prompt }) => prompts.push(prompt.promptId));
    const recovered = await second.recoverRuns();
    expect(recovered.map((run) => run.id)).toEqual([started.id]);
    const again = await waitForRun(second, started.id, isWaiting);
    expect(again.pendingPrompts).toEqual(waiting.pendingPrompts);
    expect(w.writer.calls).toHaveLength(1);
    expect(prompts).toEqual(['prompt-1']);

    const outcome = await second.answerPrompt(started.id, 'prompt-1', 'yes');
    expect(outcome.accepted).toBe(true);
    const done = await waitForRun(second, started.id, hasEnded);
    expect(done.status).toBe('complete');
    expect(done.result).toMatchObject({
      draft: 'draft of "Write a.ts"',
      review: 'looks good',
      approved: true,
      startedAt: Date.parse('2026-01-05T09:00:00.000Z'),
    });
    expect(w.writer.calls).toHaveLength(1);
    expect(w.reviewer.calls).toHaveLength(1);
    expect(done.phases).toEqual(['write', 'approve', 'review']);
    // The journal only grew: what was there before the restart is there unchanged.
    const journal = await w.runStore.readJournal(started.id);
    expect(journal.slice(0, journalBefore.length)).toEqual(journalBefore);
    expect(journal.filter((entry) => entry.kind === 'prompt')).toHaveLength(1);
    expect(journal.map((entry) => entry.kind)).toEqual([
      'now',
      'random',
      'session',
      'turn-start',
      'turn',
      'prompt',
      'reply',
      'session',
      'turn-start',
      'turn',
    ]);
    expect(done.journalLength).toBe(journal.length);
    await closeAll(w);
  });

  it('gives a resumed run the same result as an uninterrupted one, now() and random() included', async () => {
    const plain = await world();
    const service = plain.open();
    const run = await service.startRun({ workflow: 'workflows/review.ts', input: { file: 'b.ts' } });
    await waitForRun(service, run.id, isWaiting);
    await service.answerPrompt(run.id, 'prompt-1', 'no');
    const uninterrupted = (await waitForRun(service, run.id, hasEnded)).result as Record<string, unknown>;
    await closeAll(plain);

    const w = await world();
    const first = w.open();
    const started = await first.startRun({ workflow: 'workflows/review.ts', input: { file: 'b.ts' } });
    const before = await waitForRun(first, started.id, isWaiting);
    await first.close();
    w.clock.advance(86_400_000);
    const second = w.open();
    await second.recoverRuns();
    await waitForRun(second, started.id, isWaiting);
    await second.answerPrompt(started.id, 'prompt-1', '2');
    const resumed = (await waitForRun(second, started.id, hasEnded)).result as Record<string, unknown>;
    const { token: _a, ...sameA } = uninterrupted;
    const { token, ...sameB } = resumed;
    expect(sameB).toEqual(sameA);
    // random() was journaled: the resumed run saw the value the first process handed out.
    const journaled = (await w.runStore.readJournal(started.id)).find((entry) => entry.kind === 'random')!.data as {
      value: number;
    };
    expect(token).toBe(journaled.value);
    expect(before.status).toBe('waiting');
    await closeAll(w);
  });

  it('stops a run whose workflow code changed with ReplayDivergenceError naming the step; the run is failed with its journal intact', async () => {
    const w = await world();
    const first = w.open();
    const started = await first.startRun({ workflow: 'review', input: { file: 'a.ts' } });
    await waitForRun(first, started.id, isWaiting);
    await first.close();
    const journalBefore = await w.runStore.readJournal(started.id);

    const changed = codeReview(w.writer, w.reviewer, { writePrompt: 'Write it in Rust' });
    const second = w.open({ harness: changed });
    await second.recoverRuns();
    const failed = await waitForRun(second, started.id, hasEnded);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ code: 'REPLAY_DIVERGED', step: 'agent "writer" turn 1' });
    expect(failed.error!.message).toMatch(/Write it in Rust/);
    expect(w.writer.calls).toHaveLength(1);
    expect(await w.runStore.readJournal(started.id)).toEqual(journalBefore);

    // With the code put back, a person starts it again from its journal: nothing is repeated.
    await second.close();
    const third = w.open();
    expect((await third.resumeRun(started.id)).status).toBe('running');
    await waitForRun(third, started.id, isWaiting);
    await third.answerPrompt(started.id, 'prompt-1', 'yes');
    const done = await waitForRun(third, started.id, hasEnded);
    expect(done).toMatchObject({ status: 'complete' });
    expect(done.error).toBeUndefined();
    expect(w.writer.calls).toHaveLength(1);
    await closeAll(w);
  });

  it('a failed run can be aborted by a person; a finished one cannot be paused or resumed', async () => {
    const w = await world();
    const first = w.open();
    const started = await first.startRun({ workflow: 'review', input: { file: 'a.ts' } });
    await waitForRun(first, started.id, isWaiting);
    await first.close();
    const second = w.open({ harness: codeReview(w.writer, w.reviewer, { writePrompt: 'Write it in Rust' }) });
    await second.recoverRuns();
    await waitForRun(second, started.id, hasEnded);
    expect((await second.abortRun(started.id, 'code changed')).status).toBe('aborted');
    await expectCode(second.pauseRun(started.id), 'RUN_ENDED');
    await expectCode(second.resumeRun(started.id), 'RUN_ENDED');
    await closeAll(w);
  });

  it('a workflow that now ends before its journal does is a divergence too', async () => {
    const w = await world();
    const first = w.open();
    const started = await first.startRun({ workflow: 'review', input: { file: 'a.ts' } });
    await waitForRun(first, started.id, isWaiting);
    await first.close();
    const shorter = defineHarness({
      name: 'code-review',
      agents: { writer: defineAgent({ name: 'Writer', role: 'writes code', backend: w.writer }) },
      async run(context) {
        context.now();
        return 'nothing';
      },
    }) as AnyHarness;
    const second = w.open({ harness: shorter });
    await second.recoverRuns();
    const failed = await waitForRun(second, started.id, hasEnded);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'REPLAY_DIVERGED', step: 'random call 1' } });
    await closeAll(w);
  });

  it('a step the journal never saw, while journaled steps remain, is a divergence: nothing new is called', async () => {
    const w = await world();
    const first = w.open();
    const started = await first.startRun({ workflow: 'review', input: { file: 'a.ts' } });
    await waitForRun(first, started.id, isWaiting);
    await first.close();
    // The new code asks the reviewer first: the journal's writer turn is never reached.
    const reordered = defineHarness({
      name: 'code-review',
      agents: {
        writer: defineAgent({ name: 'Writer', role: 'writes code', backend: w.writer }),
        reviewer: defineAgent({ name: 'Reviewer', role: 'reviews code', backend: w.reviewer }),
      },
      async run(context) {
        context.now();
        context.random();
        await context.agents.reviewer.run('Look first');
        return context.agents.writer.run('Write a.ts');
      },
    }) as AnyHarness;
    const second = w.open({ harness: reordered, stallTimeoutMs: 50 });
    await second.recoverRuns();
    const failed = await waitForRun(second, started.id, hasEnded);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'REPLAY_DIVERGED', step: 'the session of agent "reviewer"' },
    });
    expect(w.reviewer.calls).toHaveLength(0);
    expect(w.writer.calls).toHaveLength(1);
    await closeAll(w);
  });

  it('keeps a waitForUser deadline across a restart: the remaining time, not a fresh timeout', async () => {
    const w = await world({ timeout: 60_000, defaultChoice: 'no' });
    const first = w.open();
    const started = await first.startRun({ workflow: 'review', input: { file: 'a.ts' } });
    const waiting = await waitForRun(first, started.id, isWaiting);
    expect(waiting.pendingPrompts[0]!.deadline).toBe('2026-01-05T09:01:00.000Z');
    await first.close();

    w.clock.advance(30_000);
    const second = w.open();
    await second.recoverRuns();
    const again = await waitForRun(second, started.id, isWaiting);
    expect(again.pendingPrompts[0]!.deadline).toBe('2026-01-05T09:01:00.000Z');
    w.clock.advance(29_999);
    expect((await second.getRun(started.id)).status).toBe('waiting');
    w.clock.advance(1);
    const done = await waitForRun(second, started.id, hasEnded);
    expect(done.result).toMatchObject({ approved: false, timedOut: true });
    expect(w.reviewer.calls).toHaveLength(1);
    await closeAll(w);
  });

  it('a deadline that passed while Parley was down applies at resume: the default, or TimeoutError without one', async () => {
    for (const defaultChoice of ['no', undefined]) {
      const w = await world({ timeout: 60_000, ...(defaultChoice !== undefined ? { defaultChoice } : {}) });
      const first = w.open();
      const started = await first.startRun({ workflow: 'review', input: { file: 'a.ts' } });
      await waitForRun(first, started.id, isWaiting);
      await first.close();
      w.clock.advance(120_000);
      const second = w.open();
      await second.recoverRuns();
      const done = await waitForRun(second, started.id, hasEnded);
      if (defaultChoice !== undefined)
        expect(done).toMatchObject({ status: 'complete', result: { timedOut: true, approved: false } });
      else expect(done).toMatchObject({ status: 'failed', error: { code: 'PROMPT_TIMEOUT' } });
      expect((await w.runStore.readJournal(started.id)).filter((entry) => entry.kind === 'timeout')).toHaveLength(1);
      await closeAll(w);
    }
  });

  it('recovers 20 waiting runs at once after a restart, and each completes with one call per agent', async () => {
    const w = await world();
    const first = w.open();
    const ids: string[] = [];
    for (let index = 0; index < 20; index++)
      ids.push((await first.startRun({ workflow: 'review', input: { file: `f${index}.ts` } })).id);
    await Promise.all(ids.map((id) => waitForRun(first, id, isWaiting)));
    await first.close();

    const second = w.open();
    const recovered = await second.recoverRuns();
    expect(recovered.map((run) => run.id).sort()).toEqual([...ids].sort());
    await Promise.all(ids.map((id) => waitForRun(second, id, isWaiting)));
    expect((await second.listRuns({ status: ['waiting'] })).map((run) => run.id).sort()).toEqual([...ids].sort());
    await Promise.all(ids.map((id) => second.answerPrompt(id, 'prompt-1', 'yes')));
    const done = await Promise.all(ids.map((id) => waitForRun(second, id, hasEnded)));
    expect(done.every((run) => run.status === 'complete')).toBe(true);
    expect(w.writer.calls).toHaveLength(20);
    expect(w.reviewer.calls).toHaveLength(20);
    await closeAll(w);
  });

  it('journals messages sent while no agent runs; after a restart the turn that took one does not take it again', async () => {
    const writer = createScriptedBackend({ defaultTurn: () => [step.text('ok')] });
    const harness = defineHarness({
      name: 'inbox',
      agents: { writer: defineAgent({ name: 'Writer', role: 'writes', backend: writer }) },
      async run(context) {
        await context.session!.waitForUser('Start?');
        const first = await context.agents.writer.run('First draft');
        await context.session!.waitForUser('Again?');
        const second = await context.agents.writer.run('Second draft');
        return [first, second];
      },
    }) as AnyHarness;
    const w = await world();
    const first = w.open({ harness });
    const run = await first.startRun({ workflow: 'review' });
    await waitForRun(first, run.id, isWaiting);
    await first.sendToRun(run.id, 'use tabs', { agent: 'Writer' });
    await expectCode(first.sendToRun(run.id, 'hello', { agent: 'nobody' }), 'UNKNOWN_AGENT');
    expect((await w.runStore.readJournal(run.id)).map((entry) => entry.kind)).toEqual(['prompt', 'send']);
    await first.close();

    const second = w.open({ harness });
    await second.recoverRuns();
    await waitForRun(second, run.id, isWaiting);
    await second.answerPrompt(run.id, 'prompt-1', 'go');
    await waitForRun(second, run.id, (record) => record.pendingPrompts[0]?.promptId === 'prompt-2');
    expect(writer.calls).toHaveLength(1);
    expect(writer.calls[0]!.prompt).toContain('- use tabs');
    await second.close();

    const third = w.open({ harness });
    await third.recoverRuns();
    await waitForRun(third, run.id, (record) => record.pendingPrompts[0]?.promptId === 'prompt-2');
    await third.answerPrompt(run.id, 'prompt-2', 'go');
    expect((await waitForRun(third, run.id, hasEnded)).status).toBe('complete');
    expect(writer.calls).toHaveLength(2);
    expect(writer.calls[1]!.prompt).not.toContain('use tabs');
    const start = (await w.runStore.readJournal(run.id)).find((entry) => entry.kind === 'turn-start')!;
    expect(start.data).toMatchObject({ agent: 'writer', turn: 1, messages: ['use tabs'] });
    await closeAll(w);
  });

  it('answers: a refused reply keeps the prompt waiting, a second answer is PROMPT_ALREADY_ANSWERED, unknown runs are RUN_NOT_FOUND', async () => {
    const w = await world();
    const service = w.open();
    const run = await service.startRun({ workflow: 'review', input: { file: 'a.ts' } });
    await waitForRun(service, run.id, isWaiting);
    expect(await service.answerPrompt(run.id, 'prompt-1', 'maybe')).toMatchObject({
      accepted: false,
      message: expect.stringMatching(/not one of the choices/),
    });
    expect((await service.getRun(run.id)).status).toBe('waiting');
    expect((await service.answerPrompt(run.id, 'prompt-1', 'yes')).accepted).toBe(true);
    await expectCode(service.answerPrompt(run.id, 'prompt-1', 'no'), 'PROMPT_ALREADY_ANSWERED');
    await expectCode(service.answerPrompt('run-nope', 'prompt-1', 'no'), 'RUN_NOT_FOUND');
    await expectCode(service.getRun('run-nope'), 'RUN_NOT_FOUND');
    await waitForRun(service, run.id, hasEnded);
    await expectCode(service.answerPrompt(run.id, 'prompt-1', 'no'), 'RUN_ENDED');
    await closeAll(w);
  });

  it('a paused run stays paused across a restart and goes on when resumed; an aborted one is over', async () => {
    const w = await world();
    const first = w.open();
    const run = await first.startRun({ workflow: 'review', input: { file: 'a.ts' } });
    await waitForRun(first, run.id, isWaiting);
    expect((await first.pauseRun(run.id)).status).toBe('paused');
    await first.close();
    const second = w.open();
    await second.recoverRuns();
    await waitForRun(second, run.id, (record) => record.status === 'paused' && record.pendingPrompts.length === 1);
    await second.answerPrompt(run.id, 'prompt-1', 'yes');
    expect(w.reviewer.calls).toHaveLength(0);
    expect((await second.resumeRun(run.id)).status).not.toBe('paused');
    expect((await waitForRun(second, run.id, hasEnded)).status).toBe('complete');
    expect(w.reviewer.calls).toHaveLength(1);

    const other = await second.startRun({ workflow: 'review', input: { file: 'b.ts' } });
    await waitForRun(second, other.id, isWaiting);
    const aborted = await second.abortRun(other.id, 'not needed');
    expect(aborted).toMatchObject({ status: 'aborted', pendingPrompts: [] });
    await expectCode(second.resumeRun(other.id), 'RUN_ENDED');
    await closeAll(w);
  });

  it("runs a named project's workflow from that project's folder, and lists runs by project", async () => {
    const w = await world();
    const other = await projectWithWorkflow(await tempDir(), 'workflows/other.ts');
    const loaded: string[] = [];
    const base = codeReview(w.writer, w.reviewer);
    const service = w.open({
      projectRootOf: (project) => (project === 'shop' ? other : w.root),
      loadWorkflow: async (path) => {
        loaded.push(path);
        return base;
      },
    });
    const run = await service.startRun({ workflow: 'workflows/other.ts', project: 'shop', input: { file: 'a.ts' } });
    expect(run.project).toBe('shop');
    expect(run.workflow.path).toBe(`${other}/workflows/other.ts`);
    await expectCode(
      service.startRun({ workflow: 'workflows/other.ts', input: { file: 'a.ts' } }),
      'WORKFLOW_LOAD_FAILED',
    );
    expect((await service.listRuns({ project: 'shop' })).map((record) => record.id)).toEqual([run.id]);
    expect(loaded).toEqual([`${other}/workflows/other.ts`]);
    await closeAll(w);
  });

  it('refuses a workflow outside the project or unknown by name, storing nothing', async () => {
    const w = await world();
    const service = w.open({ loadWorkflow: undefined });
    await expectCode(service.startRun({ workflow: '../elsewhere.ts' }), 'INVALID_INPUT');
    await expectCode(service.startRun({ workflow: 'missing' }), 'WORKFLOW_LOAD_FAILED');
    await expectCode(service.startRun({ workflow: 'workflows/review.ts', input: { big: 1n } }), 'INVALID_INPUT');
    expect(await service.listRuns()).toEqual([]);
    await closeAll(w);
  });
});
