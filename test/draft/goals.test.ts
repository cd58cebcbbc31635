import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type ScriptedBackend } from '../../src/backends/index.js';
import { isParleyError } from '../../src/conversation/index.js';
import type { DraftService } from '../../src/draft/index.js';
import { closeAll, gate, harness, until } from './helpers.js';

afterEach(closeAll);

function verdict(met: boolean, missing: string, progress = true) {
  return [step.text(JSON.stringify({ met, missing, progress }))];
}

async function drafted(service: DraftService, channelId = 'c') {
  const [project] = await service.listProjects();
  const task = await service.createTask({ project: project!.name, title: 'Make it work' });
  return service.draft({ channelId, role: 'dev', project: project!.name, task: task.slug });
}

async function expectCode(promise: Promise<unknown>, code: string, text?: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(isParleyError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
  if (text) expect((error as Error).message).toMatch(text);
}

async function goalBlocks(h: Awaited<ReturnType<typeof harness>>, sessionId: string) {
  const conversation = await h.manager.loadConversation(sessionId);
  return conversation.blocks.flatMap((block) =>
    block.type === 'system' && (block.data as { goal?: unknown } | undefined)?.goal !== undefined ? [block] : [],
  );
}

describe('goals', () => {
  it('a goal judged by a model is met at the third turn; the continuation says what is missing', async () => {
    const judge = createScriptedBackend({
      name: 'judge',
      idPrefix: 'judge',
      turns: [verdict(false, 'no tests yet'), verdict(false, 'the login test fails'), verdict(true, '')],
    });
    const h = await harness({ backends: { judge } });
    const { sessionId } = await drafted(h.service);
    const agent = h.backends.get('default') as ScriptedBackend;
    const started = await h.service.setGoal({
      channelId: 'c',
      condition: 'the login works and is tested',
      judge: { kind: 'model', backend: 'judge' },
      budget: { turns: 5 },
    });
    expect(started).toMatchObject({ state: 'running', budget: { turns: 5 }, used: { turns: 0 } });
    const ended = await h.service.goalSettled({ channelId: 'c' });
    expect(ended).toMatchObject({ state: 'ended', ended: { reason: 'met' }, used: { turns: 3 } });
    expect(ended!.judgements.map((entry) => entry.met)).toEqual([false, false, true]);
    expect(agent.calls).toHaveLength(3);
    expect(agent.calls[0]!.prompt).toContain('the login works and is tested');
    expect(agent.calls[1]!.prompt).toContain('Still missing: no tests yet');
    expect(agent.calls[2]!.prompt).toContain('Still missing: the login test fails');
    expect(judge.calls[1]!.prompt).toContain('no tests yet');
    // The goal, each judgement and its end are in the session's log; the status and the events show them.
    const records = (await goalBlocks(h, sessionId)).map(
      (block) => (block.data as { goal: { kind: string } }).goal.kind,
    );
    expect(records).toEqual(['set', 'judgement', 'judgement', 'judgement', 'ended']);
    expect((await h.service.getDraftStatus({ channelId: 'c' })).session?.goal).toMatchObject({ state: 'ended' });
    expect(h.recorder.of('goal_status').at(-1)?.goal.ended?.reason).toBe('met');
  });

  it('a goal that is never met stops at its turn budget and says why', async () => {
    let judgements = 0;
    const judge = createScriptedBackend({
      name: 'judge',
      defaultTurn: () => verdict(false, `still missing after ${++judgements}`, true),
    });
    const h = await harness({ backends: { judge } });
    await drafted(h.service);
    await h.service.setGoal({
      channelId: 'c',
      condition: 'never',
      judge: { kind: 'model', backend: 'judge' },
      budget: { turns: 2 },
    });
    const ended = await h.service.goalSettled({ channelId: 'c' });
    expect(ended).toMatchObject({ ended: { reason: 'turns' }, used: { turns: 2 } });
    expect(ended!.ended!.message).toMatch(/2 of 2 turn/);
    expect((h.backends.get('default') as ScriptedBackend).calls).toHaveLength(2);
  });

  it('three judgements in a row without progress stop a goal as stuck', async () => {
    const judge = createScriptedBackend({ name: 'judge', defaultTurn: () => verdict(false, 'nothing changed', false) });
    const h = await harness({ backends: { judge } });
    await drafted(h.service);
    await h.service.setGoal({
      channelId: 'c',
      condition: 'x',
      judge: { kind: 'model', backend: 'judge' },
      budget: { turns: 10 },
    });
    const ended = await h.service.goalSettled({ channelId: 'c' });
    expect(ended).toMatchObject({ ended: { reason: 'stuck' }, used: { turns: 3 } });
  });

  it('a cost budget stops a goal once the turns spent it', async () => {
    const judge = createScriptedBackend({ name: 'judge', defaultTurn: () => verdict(false, 'more', true) });
    const agent = createScriptedBackend({ defaultTurn: () => [step.text('working'), step.cost(0.5)] });
    const h = await harness({ backends: { default: agent, judge } });
    await drafted(h.service);
    await h.service.setGoal({
      channelId: 'c',
      condition: 'x',
      judge: { kind: 'model', backend: 'judge' },
      budget: { turns: 10, costUsd: 1 },
    });
    const ended = await h.service.goalSettled({ channelId: 'c' });
    expect(ended).toMatchObject({ ended: { reason: 'cost' }, used: { turns: 2, costUsd: 1 } });
  });

  it('a time budget stops a goal once its turns took that long, by the injected clock', async () => {
    let now = Date.parse('2026-12-02T06:00:00.000Z');
    // Each judgement comes 40 s of the clock after the one before: a 60 s budget is spent after two turns.
    const judge = createScriptedBackend({
      name: 'judge',
      defaultTurn: () => {
        now += 40_000;
        return verdict(false, 'more', true);
      },
    });
    const h = await harness({ backends: { judge }, clock: () => now });
    await drafted(h.service);
    await h.service.setGoal({
      channelId: 'c',
      condition: 'x',
      judge: { kind: 'model', backend: 'judge' },
      budget: { turns: 10, timeMs: 60_000 },
    });
    const ended = await h.service.goalSettled({ channelId: 'c' });
    expect(ended).toMatchObject({ ended: { reason: 'time' }, used: { turns: 2, timeMs: 80_000 } });
    expect(ended!.ended!.message).toBe('Out of budget: 80 s of 60 s used.');
    expect((h.backends.get('default') as ScriptedBackend).calls).toHaveLength(2);
  });

  it('a person stops a goal mid-turn: the turn ends cleanly and the goal is stopped', async () => {
    const hold = gate();
    const agent = createScriptedBackend({ turns: [[step.text('partial'), { type: 'wait', until: hold.promise }]] });
    const h = await harness({ backends: { default: agent } });
    const { sessionId } = await drafted(h.service);
    await h.service.setGoal({ channelId: 'c', condition: 'x', budget: { turns: 3 } });
    await until(() => agent.calls.length === 1, 'the first goal turn');
    const stopped = await h.service.stopGoal({ channelId: 'c' });
    expect(stopped).toMatchObject({ state: 'ended', ended: { reason: 'stopped' }, used: { turns: 0 } });
    expect(agent.calls).toHaveLength(1);
    const status = await h.service.getDraftStatus({ channelId: 'c' });
    expect(status.session).toMatchObject({ turnRunning: false, goal: { ended: { reason: 'stopped' } } });
    const conversation = await h.manager.loadConversation(sessionId);
    expect(
      conversation.blocks.some((block) => block.type === 'assistant_text' && block.content.includes('partial')),
    ).toBe(true);
    await expectCode(h.service.stopGoal({ channelId: 'c' }), 'NO_GOAL');
  });

  it('a goal judged by a command: a failing exit goes on with the output tail, exit 0 is met', async () => {
    const h = await harness();
    await drafted(h.service);
    const agent = h.backends.get('default') as ScriptedBackend;
    // The command passes once the marker file exists; the agent's second turn "writes" it.
    const marker = path.join(h.root, 'done.txt');
    agent.enqueue([step.text('first try')], async () => {
      await fs.writeFile(marker, 'ok');
      return [step.text('fixed')];
    });
    await h.service.setGoal({
      channelId: 'c',
      condition: 'done.txt exists',
      judge: { kind: 'command', command: 'test -f done.txt || { echo "done.txt is missing"; exit 1; }' },
      budget: { turns: 4 },
    });
    const ended = await h.service.goalSettled({ channelId: 'c' });
    expect(ended).toMatchObject({ ended: { reason: 'met' }, used: { turns: 2 } });
    expect(agent.calls[1]!.prompt).toContain('done.txt is missing');
    expect(agent.calls[1]!.prompt).toContain('exited with 1');
  });

  it('bad input is refused with a clear error and nothing is stored', async () => {
    const h = await harness();
    const { sessionId } = await drafted(h.service);
    await expectCode(
      h.service.setGoal({ channelId: 'c', condition: 'x', budget: { turns: 0 } }),
      'INVALID_INPUT',
      /turn budget must be 1 or more/,
    );
    await expectCode(
      h.service.setGoal({ channelId: 'c', condition: 'x', budget: { turns: 2, costUsd: -1 } }),
      'INVALID_INPUT',
      /cost budget/,
    );
    await expectCode(
      h.service.setGoal({
        channelId: 'c',
        condition: 'x',
        judge: { kind: 'command', command: 'no-such-program-here --check' },
        budget: { turns: 2 },
      }),
      'INVALID_INPUT',
      /no-such-program-here.*not a program/,
    );
    await expectCode(
      h.service.setGoal({
        channelId: 'c',
        condition: 'x',
        judge: { kind: 'command', command: 'n=$(cat runs; if then' },
        budget: { turns: 2 },
      }),
      'INVALID_INPUT',
      /is not valid shell/,
    );
    await expectCode(
      h.service.setGoal({
        channelId: 'c',
        condition: 'x',
        judge: { kind: 'model', backend: 'nope' },
        budget: { turns: 2 },
      }),
      'INVALID_INPUT',
      /back end "nope"/,
    );
    await expectCode(
      h.service.setGoal({ channelId: 'nobody', condition: 'x', budget: { turns: 2 } }),
      'NO_ACTIVE_DRAFT',
    );
    expect(await goalBlocks(h, sessionId)).toEqual([]);
    expect(await h.service.getGoal({ channelId: 'c' })).toBeUndefined();
  });

  it('a goal left open in the log goes on after a crash and a restart', async () => {
    const judge = createScriptedBackend({ name: 'judge', defaultTurn: () => verdict(true, '') });
    const first = await harness({ store: 'file', backends: { judge } });
    const { sessionId } = await drafted(first.service);
    const never = gate();
    const agent = first.backends.get('default') as ScriptedBackend;
    agent.enqueue([step.text('started'), step.wait(never.promise)]);
    await first.service.setGoal({
      channelId: 'c',
      condition: 'x',
      judge: { kind: 'model', backend: 'judge' },
      budget: { turns: 2 },
    });
    await until(() => agent.calls.length === 1, 'the first goal turn');
    // A crash: the store lets go of its lock, the turn in flight never finishes, the goal stays open.
    await first.store.close();
    const after = createScriptedBackend({ idPrefix: 'second-process' });
    const second = await harness({
      store: 'file',
      project: { root: first.root, dataDir: first.dataDir },
      backends: { default: after, scripted: after, judge },
    });
    expect(await second.service.recover()).toMatchObject({ recovered: 1 });
    const resumed = await second.service.goalSettled({ channelId: 'c' });
    expect(resumed).toMatchObject({ ended: { reason: 'met' }, used: { turns: 1 } });
    expect(after.calls[0]!.prompt).toContain('Work towards this goal');
    const kinds = (await goalBlocks(second, sessionId)).map(
      (block) => (block.data as { goal: { kind: string } }).goal.kind,
    );
    expect(kinds).toEqual(['set', 'judgement', 'ended']);
  });
});
