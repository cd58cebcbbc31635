import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createScriptedBackend, step, type AgentBackend } from '../../src/backends/index.js';
import {
  defineAgent,
  defineHarness,
  loadRecording,
  parseRecording,
  replay,
  ReplayDivergenceError,
  RECORDING_FORMAT_VERSION,
  type AgentMap,
  type SessionEvent,
} from '../../src/harness/index.js';
import { expectCode, expectThrowsCode, nextEvent, openManager, tempDir, watchUnhandledRejections } from './helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A back end that fails the test if anything calls it: replay must need none. */
function forbiddenBackend(): AgentBackend {
  return {
    describe: () => ({ name: 'forbidden', continuity: 'managed', models: [] }),
    execute: () => {
      throw new Error('replay called a back end');
    },
  };
}

/**
 * A workflow that exercises every kind of recorded input: a live injection, two prompts answered in
 * reverse order, a prompt that times out to its default, and a message that waits for a turn.
 */
function reviewWorkflow(
  backends: { reviewer: AgentBackend; fixer: AgentBackend },
  variant: { fixPrompt?: string; extraPhase?: boolean } = {},
) {
  const reviewer = defineAgent({ name: 'Reviewer', role: 'You review.', backend: backends.reviewer });
  const fixer = defineAgent({ name: 'Fixer', role: 'You fix.', backend: backends.fixer });
  return defineHarness({
    name: 'review-and-fix',
    agents: { reviewer, fixer },
    state: (input: { code: string }) => ({ code: input.code, notes: [] as string[] }),
    run: async ({ agents, state, session, phase, parallel, emit }) => {
      const review = await phase('review', () => agents.reviewer.run(`Review: ${state.code}`));
      state.notes.push(review);
      const [scope, style] = await parallel('questions', [
        () => session!.waitForUser('Fix everything?', { choices: ['Yes', 'No'] }),
        () => session!.waitForUser('Which style?', { choices: ['tabs', 'spaces'] }),
      ]);
      const deadline = await session!.waitForUser('Deploy after fixing?', {
        choices: ['Yes', 'No'],
        timeout: 5_000,
        defaultChoice: 'No',
      });
      if (variant.extraPhase) await phase('extra', async () => undefined);
      emit('decided', {
        scope: scope!.choice,
        style: style!.choice,
        deploy: deadline.choice,
        timedOut: deadline.timedOut ?? false,
      });
      state.code = await phase('fix', () =>
        agents.fixer.run(variant.fixPrompt ?? `Fix with ${style!.choice}: ${state.code}`),
      );
      return { code: state.code, deploy: deadline.choice };
    },
  });
}

function scriptedBackends() {
  return {
    reviewer: createScriptedBackend({
      turns: [
        [
          step.thinking('Looking.'),
          step.text('Two problems.'),
          step.awaitInjection((message) => `Also noted: ${message}`),
        ],
      ],
    }),
    fixer: createScriptedBackend({
      turns: [[step.text('fixed code'), step.tool('format', { style: 'tabs' }, 'formatted')]],
    }),
  };
}

/** Runs the workflow with scripted back ends and a scripted user, recording it to `path`. */
async function recordReview(path: string): Promise<{ events: SessionEvent[]; result: unknown }> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  const harness = reviewWorkflow(scriptedBackends());
  const session = harness
    .create({ code: 'let x = 1' }, { sessionManager: await openManager() })
    .startSession({ record: path });
  let sent = false;
  session.on('agent:event', (event) => {
    if (
      !sent &&
      event.agent === 'reviewer' &&
      event.event.type === 'block_complete' &&
      event.event.block.type === 'assistant_text'
    ) {
      sent = true;
      session.send('the loop too');
    }
  });
  const prompts: string[] = [];
  session.on('user:prompt', (event) => prompts.push(event.promptId));
  while (prompts.length < 2) await nextEvent(session, 'user:prompt');
  session.reply('prompt-2', 'tabs');
  session.reply('prompt-1', { choice: 'Yes' });
  await nextEvent(session, 'user:prompt', (event) => event.promptId === 'prompt-3');
  await vi.advanceTimersByTimeAsync(5_000);
  const result = await session.complete();
  vi.useRealTimers();
  return { events: result.events, result: result.result };
}

describe('recordings', () => {
  it('are versioned JSONL: a header, then every event, every user action and every back-end turn', async () => {
    const path = join(await tempDir(), 'review.jsonl');
    const { events, result } = await recordReview(path);
    expect(result).toEqual({ code: 'fixed code', deploy: 'No' });

    const lines = (await readFile(path, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({
      kind: 'header',
      formatVersion: RECORDING_FORMAT_VERSION,
      harness: 'review-and-fix',
      input: { code: 'let x = 1' },
    });
    expect(lines[0]!['agents']).toEqual({
      reviewer: { name: 'Reviewer', backend: 'scripted' },
      fixer: { name: 'Fixer', backend: 'scripted' },
    });

    const recording = loadRecording(path);
    expect(recording.events.map((entry) => entry.event.type)).toEqual(events.map((event) => event.type));
    expect(recording.inputs.map((input) => input.action)).toEqual(['send', 'reply', 'reply', 'timeout']);
    expect(recording.inputs[1]).toMatchObject({ action: 'reply', promptId: 'prompt-2', content: 'tabs' });
    expect(recording.turns.map((turn) => [turn.agent, turn.turn])).toEqual([
      ['reviewer', 1],
      ['fixer', 1],
    ]);
    const reviewerTurn = recording.turns[0]!;
    // Each recorded back-end event sits at the position of its agent:event in the log.
    for (const [index, position] of reviewerTurn.positions.entries()) {
      const event = recording.events[position]!.event as unknown as SessionEvent;
      expect(event.type).toBe('agent:event');
      expect(event.type === 'agent:event' && event.event.type).toBe(reviewerTurn.events[index]!.type);
    }
  });

  it('replay re-runs the workflow with no back end and no user, deterministically', async () => {
    const path = join(await tempDir(), 'review.jsonl');
    const original = await recordReview(path);
    const harness = reviewWorkflow({ reviewer: forbiddenBackend(), fixer: forbiddenBackend() });
    const manager = await openManager();
    const replayed = await replay(path, harness, undefined, { sessionManager: manager });

    expect(replayed.result).toEqual(original.result);
    expect(replayed.aborted).toBe(false);
    const shape = (events: SessionEvent[]) =>
      events.map((event) => `${event.type}${event.type === 'agent:event' ? `:${event.event.type}` : ''}`);
    expect(shape(replayed.events)).toEqual(shape(original.events));
    // The replayed agents have real sessions again, with the recorded output.
    const fixerSession = (
      replayed.events.find((event) => event.type === 'agent:start' && event.agent === 'fixer') as { sessionId: string }
    ).sessionId;
    expect((await manager.getRecentMessages(fixerSession)).map((message) => message.content)).toEqual([
      'Fix with tabs: let x = 1',
      'fixed code',
    ]);
    // The injection was replayed into the running reviewer turn.
    expect(replayed.events.find((event) => event.type === 'message:injected')).toMatchObject({
      delivery: 'live',
      agent: 'reviewer',
    });
    // The timeout came from the recording, not the clock: no fake timers are running now.
    expect(replayed.events.find((event) => event.type === 'user:timeout')).toMatchObject({
      promptId: 'prompt-3',
      defaultChoice: 'No',
    });
  });

  it('replay fails at the first step where the run differs, saying what was expected and what happened', async () => {
    const path = join(await tempDir(), 'review.jsonl');
    await recordReview(path);
    const changed = reviewWorkflow(
      { reviewer: forbiddenBackend(), fixer: forbiddenBackend() },
      { fixPrompt: 'Fix it however you like.' },
    );
    const error = await expectCode(replay(path, changed), 'REPLAY_DIVERGED');
    expect(error).toBeInstanceOf(ReplayDivergenceError);
    const divergence = error as ReplayDivergenceError;
    const recording = loadRecording(path);
    const expectedStep = recording.events.findIndex(
      (entry) => entry.event.type === 'agent:start' && entry.event['agent'] === 'fixer',
    );
    expect(divergence.step).toBe(expectedStep);
    expect(divergence.message).toContain(`step ${expectedStep}`);
    expect(divergence.message).toContain('agent:start agent="fixer"');
    expect(divergence.message).toContain(
      'at prompt: expected "Fix with tabs: let x = 1", got "Fix it however you like."',
    );
    expect(divergence.expected).toMatchObject({ prompt: 'Fix with tabs: let x = 1' });
    expect(divergence.actual).toMatchObject({ prompt: 'Fix it however you like.' });
  });

  it('an extra step or a run that ends early is a divergence too', async () => {
    const path = join(await tempDir(), 'review.jsonl');
    await recordReview(path);
    const extra = await expectCode(
      replay(path, reviewWorkflow({ reviewer: forbiddenBackend(), fixer: forbiddenBackend() }, { extraPhase: true })),
      'REPLAY_DIVERGED',
    );
    expect((extra as Error).message).toContain('but the run produced "phase:start name="extra""');

    const short = defineHarness({
      name: 'review-and-fix',
      agents: { reviewer: defineAgent({ name: 'Reviewer', role: 'r', backend: forbiddenBackend() }) },
      state: (input: { code: string }) => input,
      run: async ({ agents, phase }) => phase('review', () => agents.reviewer.run('Review: let x = 1')),
    });
    const ended = await expectCode(replay(path, short), 'REPLAY_DIVERGED');
    expect((ended as Error).message).toContain(
      'expected "parallel:start name="questions"" but the run produced "session:complete"',
    );
  });

  it('an aborted session replays to the same abort, mid-turn', async () => {
    watchUnhandledRejections();
    const path = join(await tempDir(), 'abort.jsonl');
    const make = (backend: AgentBackend) =>
      defineHarness({
        name: 'long-task',
        agents: { worker: defineAgent({ name: 'Worker', role: 'r', backend }) },
        state: () => ({ stage: 'start' }),
        run: async ({ agents, state }) => {
          state.stage = 'working';
          await agents.worker.run('Work for a long time.');
          state.stage = 'done';
          return 'finished';
        },
      });
    const backend = createScriptedBackend({
      turns: [[step.text('Step one done.'), step.wait(new Promise(() => {})), step.text('never')]],
    });
    const session = make(backend)
      .create(undefined, { sessionManager: await openManager() })
      .startSession({ record: path });
    session.on('agent:event', (event) => {
      if (event.event.type === 'block_complete') session.abort('too slow');
    });
    const original = await session.complete();
    expect(original).toMatchObject({ aborted: true, abortReason: 'too slow', state: { stage: 'working' } });

    const replayed = await replay(path, make(forbiddenBackend()));
    expect(replayed).toMatchObject({
      aborted: true,
      abortReason: 'too slow',
      state: { stage: 'working' },
      result: undefined,
    });
    expect(replayed.events.map((event) => event.type)).toEqual(original.events.map((event) => event.type));
  });

  it('parallel agents replay although their events interleave differently', async () => {
    const path = join(await tempDir(), 'parallel.jsonl');
    const make = (left: AgentBackend, right: AgentBackend) =>
      defineHarness({
        name: 'pair',
        agents: {
          left: defineAgent({ name: 'Left', role: 'r', backend: left }),
          right: defineAgent({ name: 'Right', role: 'r', backend: right }),
        },
        run: async ({ agents, parallel, task }) =>
          parallel('both', [
            () => task('left', () => agents.left.run('L')),
            () => task('right', () => agents.right.run('R')),
          ]),
      });
    const session = make(
      createScriptedBackend({ turns: [[step.text('left says a lot of words here')]] }),
      createScriptedBackend({ turns: [[step.text('right answers briefly')]] }),
    )
      .create(undefined, { sessionManager: await openManager() })
      .startSession({ record: path });
    const original = await session.complete();
    const replayed = await replay(path, make(forbiddenBackend(), forbiddenBackend()));
    expect(replayed.result).toEqual(original.result);
  });

  it('a run that stops producing what the recording waits for fails as diverged instead of hanging', async () => {
    const path = join(await tempDir(), 'stall.jsonl');
    const make = (backend: AgentBackend, announce: boolean) =>
      defineHarness({
        name: 'stall',
        agents: { worker: defineAgent({ name: 'Worker', role: 'r', backend }) },
        run: async ({ agents, parallel, emit }) =>
          parallel<string>('both', [
            async () => {
              if (announce) emit('side-note', {});
              return 'noted';
            },
            () => agents.worker.run('go'),
          ]),
      });
    const original = await make(createScriptedBackend({ turns: [[step.text('ok')]] }), true)
      .create(undefined, { sessionManager: await openManager() })
      .startSession({ record: path })
      .complete();
    expect(original.aborted).toBe(false);
    const error = await expectCode(
      replay(path, make(forbiddenBackend(), false), undefined, { stallTimeoutMs: 50 }),
      'REPLAY_DIVERGED',
    );
    expect((error as Error).message).toContain('produced no event');
    expect((error as Error).message).toContain('"custom name="side-note"" (step');
  });
});

describe('recording files', () => {
  it('a version this Parley does not know is refused with a clear error', () => {
    const error = expectThrowsCode(
      () =>
        parseRecording(
          '{"kind":"header","formatVersion":2,"harness":"x","createdAt":"","agents":{}}\n',
          'future.jsonl',
        ),
      'UNSUPPORTED_RECORDING_VERSION',
    ) as Error;
    expect(error.message).toContain('version 2');
    expect(error.message).toContain('reads version 1');
  });

  it('a damaged line is refused, naming the line', async () => {
    const path = join(await tempDir(), 'review.jsonl');
    await recordReview(path);
    const text = await readFile(path, 'utf8');
    await writeFile(path, `${text}{"kind":"event","index":`);
    const lines = text.trimEnd().split('\n').length;
    const error = expectThrowsCode(() => loadRecording(path), 'INVALID_RECORDING') as Error;
    expect(error.message).toContain(`line ${lines + 1}`);
    expectThrowsCode(() => parseRecording('{"kind":"event","index":0,"event":{"type":"x"}}'), 'INVALID_RECORDING');
  });

  it('a recording of another workflow is refused', async () => {
    const path = join(await tempDir(), 'review.jsonl');
    await recordReview(path);
    const other = defineHarness({ name: 'something-else', agents: {} as AgentMap, run: async () => 1 });
    const error = await expectCode(replay(path, other), 'INVALID_RECORDING');
    expect((error as Error).message).toContain('"review-and-fix"');
  });

  it('a path that cannot be written fails startSession at once', async () => {
    const harness = defineHarness({ name: 'x', agents: {}, run: async () => 1 });
    const dir = await tempDir();
    const error = expectThrowsCode(
      () => harness.create().startSession({ record: join(dir, 'missing', 'r.jsonl') }),
      'RECORDING_FAILED',
    ) as Error;
    expect(error.message).toContain('missing');
  });
});

describe('recording failures', () => {
  it('an event that cannot be written makes complete() fail with RECORDING_FAILED', async () => {
    const path = join(await tempDir(), 'bad.jsonl');
    const harness = defineHarness({
      name: 'unwritable',
      agents: {},
      run: async ({ emit }) => {
        emit('odd', { big: 10n });
        return 'ran';
      },
    });
    const error = await expectCode(harness.create().startSession({ record: path }).complete(), 'RECORDING_FAILED');
    expect((error as Error).message).toContain('BigInt');
    expect((error as Error).message).toContain('incomplete');
  });
});
