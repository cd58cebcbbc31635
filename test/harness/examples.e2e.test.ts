import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import codeReview, { SAMPLE_CODE } from '../../examples/code-review.js';
import devLoop, { type DevLoopResult } from '../../examples/dev-loop.js';
import { replay, type SessionEvent } from '../../src/harness/index.js';
import { nextEvent, openManager, outline, tempDir } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/code-review.v1.jsonl', import.meta.url));

describe('examples/code-review.ts (review, ask the user, fix)', () => {
  it('fixes everything when the user answers Yes', async () => {
    const session = codeReview.create(undefined, { sessionManager: await openManager() }).startSession();
    const prompt = await nextEvent(session, 'user:prompt');
    expect(prompt.prompt).toContain('Found 2 issue(s)');
    expect(prompt.choices).toEqual(['Yes', 'No', 'Review each']);
    session.reply(prompt.promptId, 'Yes');
    const { result } = await session.complete();
    expect(result!.code).toBe(
      SAMPLE_CODE.replace('<= items.length', '< items.length').replace('var sum', 'let sum').replace('var i', 'let i'),
    );
    expect(result!.fixed).toHaveLength(2);
  });

  it('asks about each issue on "Review each" and fixes only the chosen ones', async () => {
    const session = codeReview.create({ code: SAMPLE_CODE }, { sessionManager: await openManager() }).startSession();
    const answers = ['Review each', 'Skip', 'Fix'];
    session.on('user:prompt', (event) => session.reply(event.promptId, answers.shift()!));
    const { result, events } = await session.complete();
    expect(result!.fixed).toEqual(['Uses `var`; prefer `let` or `const`.']);
    expect(result!.code).toContain('<= items.length');
    expect(result!.code).toContain('let sum');
    expect(outline(events).filter((line) => line.startsWith('user:prompt'))).toHaveLength(3);
  });

  it('leaves the code alone on No, and with run() (no user) fixes everything', async () => {
    const session = codeReview.create(undefined, { sessionManager: await openManager() }).startSession();
    session.on('user:prompt', (event) => session.reply(event.promptId, 'No'));
    expect((await session.complete()).result).toMatchObject({ code: SAMPLE_CODE, fixed: [] });
    const { result } = await codeReview.create(undefined, { sessionManager: await openManager() }).run();
    expect(result.fixed).toHaveLength(2);
  });

  it('the committed recording (format version 1) replays with no back end and no user', async () => {
    const replayed = await replay(FIXTURE, codeReview);
    expect(replayed.aborted).toBe(false);
    expect(replayed.result).toMatchObject({
      fixed: ['Off-by-one: `i <= items.length` reads past the end of the array; use `<`.'],
    });
    expect(replayed.result!.code).toContain('i < items.length');
    expect(replayed.result!.code).toContain('var sum');
    expect(outline(replayed.events)).toEqual([
      'harness:start',
      'phase:start review',
      'agent:start reviewer',
      'agent:complete reviewer',
      'phase:complete review',
      'custom review',
      'user:prompt prompt-1',
      'user:reply prompt-1',
      'user:prompt prompt-2',
      'user:reply prompt-2',
      'user:prompt prompt-3',
      'user:reply prompt-3',
      'phase:start fix',
      'agent:start fixer',
      'agent:complete fixer',
      'phase:complete fix',
      'custom fixed',
      'session:complete',
    ]);
  });
});

describe('examples/dev-loop.ts (the Ralph loop)', { timeout: 90_000 }, () => {
  it('iterates until build, lint and test pass, keeping the loop in the task session checkpoint and asking after 2 failures', async () => {
    const manager = await openManager();
    const session = devLoop.create({ askAfterFailures: 2 }, { sessionManager: manager }).startSession();
    const checks: SessionEvent[] = [];
    session.on('custom', (event) => checks.push(event));
    const prompt = await nextEvent(session, 'user:prompt');
    expect(prompt.prompt).toContain('failed 2 iterations in a row');
    expect(prompt.prompt).toContain('no-var');
    // The checkpoint already holds the second iteration's outcome while the loop waits.
    const waiting = await manager.getCheckpoint('dev-task-sample-sum-in_dev');
    expect(waiting?.ralphLoop).toEqual({
      currentIteration: 2,
      passedChecks: ['build', 'test'],
      failedChecks: ['lint'],
      lastError: 'lint: src/sum.mjs:2: no-var: use let or const',
    });
    session.reply(prompt.promptId, 'Continue');

    const { result } = await session.complete();
    expect(result).toMatchObject({ status: 'passed', iterations: 4 });
    expect((result as Extract<DevLoopResult, { status: 'passed' }>).source).toContain(
      'for (const n of numbers) total += n;',
    );
    expect(checks.map((event) => (event.type === 'custom' ? event.data['failed'] : undefined))).toEqual([
      ['build', 'test'],
      ['lint'],
      ['test'],
      [],
    ]);

    const final = await manager.getCheckpoint('dev-task-sample-sum-in_dev');
    expect(final?.ralphLoop).toEqual({
      currentIteration: 4,
      passedChecks: ['build', 'lint', 'test'],
      failedChecks: [],
    });
    const history = await manager.listCheckpoints('dev-task-sample-sum-in_dev');
    expect(history.map((checkpoint) => checkpoint.ralphLoop?.lastError ?? null)).toEqual([
      'build: SyntaxError: Unexpected end of input',
      'lint: src/sum.mjs:2: no-var: use let or const',
      'test: sum([1, 2, 3]) returned 5, expected 6',
      null,
    ]);
    // The dev agent's turns live in that task session too.
    const messages = await manager.getRecentMessages('dev-task-sample-sum-in_dev');
    expect(
      messages.filter((message) => message.role === 'user').map((message) => message.content.split(':')[0]),
    ).toEqual(['Iteration 1', 'Iteration 2', 'Iteration 3', 'Iteration 4']);
  });

  it('stops when the user says Stop, and without a user stops after the failures', async () => {
    const session = devLoop.create(undefined, { sessionManager: await openManager() }).startSession();
    session.on('user:prompt', (event) => session.reply(event.promptId, 'Stop'));
    expect((await session.complete()).result).toEqual({
      status: 'stopped',
      iterations: 2,
      lastError: 'lint: src/sum.mjs:2: no-var: use let or const',
    });
    const { result } = await devLoop.create({ askAfterFailures: 1 }, { sessionManager: await openManager() }).run();
    expect(result).toEqual({
      status: 'stopped',
      iterations: 1,
      lastError: 'build: SyntaxError: Unexpected end of input',
    });
  });

  it('a recorded loop replays, running the real checks again, with no back end and no user', async () => {
    const path = join(await tempDir(), 'dev-loop.jsonl');
    const session = devLoop.create(undefined, { sessionManager: await openManager() }).startSession({ record: path });
    session.on('user:prompt', (event) => session.reply(event.promptId, 'Continue'));
    const original = await session.complete();
    const replayed = await replay(path, devLoop);
    expect(replayed.result).toEqual(original.result);
  });
});
