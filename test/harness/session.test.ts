import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentBackend } from '../../src/backends/index.js';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import {
  AbortedError,
  defineAgent,
  defineHarness,
  TimeoutError,
  type SessionEvent,
  type UserResponse,
} from '../../src/harness/index.js';
import { expectCode, expectThrowsCode, nextEvent, openManager, outline, watchUnhandledRejections } from './helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

/** The scripted back end without mid-turn injection, like a back end that cannot take one. */
function withoutInjection(backend: AgentBackend): AgentBackend {
  return { describe: () => backend.describe(), execute: (request) => ({ events: backend.execute(request).events }) };
}

const never = new Promise<void>(() => {});

describe('waitForUser', () => {
  it('waits for the reply, with the status waiting meanwhile; a choice can be given by number', async () => {
    const harness = defineHarness({
      name: 'ask',
      agents: {},
      run: async ({ session }) => session!.waitForUser('Ship it?', { choices: ['Yes', 'No'] }),
    });
    const session = harness.create().startSession();
    const prompt = await nextEvent(session, 'user:prompt');
    expect(prompt).toMatchObject({ promptId: 'prompt-1', prompt: 'Ship it?', choices: ['Yes', 'No'] });
    expect(session.status).toBe('waiting');
    expect(session.pendingPrompts).toEqual([{ promptId: 'prompt-1', prompt: 'Ship it?', choices: ['Yes', 'No'] }]);
    const outcome = session.reply(prompt.promptId, '2');
    expect(outcome).toMatchObject({ accepted: true, response: { content: 'No', choice: 'No' } });
    const result = await session.complete();
    expect(result.aborted).toBe(false);
    expect(result.result).toMatchObject({ content: 'No', choice: 'No' });
    expect(session.status).toBe('complete');
    expect(outline(result.events)).toEqual([
      'harness:start',
      'user:prompt prompt-1',
      'user:reply prompt-1',
      'session:complete',
    ]);
  });

  it("a reply the validator refuses gets the validator's message back and the prompt keeps waiting", async () => {
    const harness = defineHarness({
      name: 'validate',
      agents: {},
      run: async ({ session }) =>
        session!.waitForUser('How many workers?', {
          validator: (input) => (/^\d+$/.test(input) ? true : 'Enter a whole number, like 3.'),
        }),
    });
    const session = harness.create().startSession();
    const rejected: SessionEvent[] = [];
    session.on('user:reply-rejected', (event) => rejected.push(event));
    const prompt = await nextEvent(session, 'user:prompt');
    expect(session.reply(prompt.promptId, 'three')).toEqual({
      accepted: false,
      message: 'Enter a whole number, like 3.',
    });
    expect(session.status).toBe('waiting');
    expect(rejected).toMatchObject([
      { promptId: 'prompt-1', content: 'three', message: 'Enter a whole number, like 3.' },
    ]);
    expect(session.reply(prompt.promptId, '3').accepted).toBe(true);
    expect((await session.complete()).result).toMatchObject({ content: '3' });
  });

  it('a reply that is not one of the choices is refused, naming them', async () => {
    const harness = defineHarness({
      name: 'choices',
      agents: {},
      run: async ({ session }) => session!.waitForUser('Fix?', { choices: ['Yes', 'No'] }),
    });
    const session = harness.create().startSession();
    const prompt = await nextEvent(session, 'user:prompt');
    const refused = session.reply(prompt.promptId, { choice: 'Maybe' });
    expect(refused.accepted).toBe(false);
    expect(!refused.accepted && refused.message).toContain('Yes, No');
    expect(session.reply(prompt.promptId, 'yes')).toMatchObject({ accepted: true, response: { choice: 'Yes' } });
    await session.complete();
  });

  it('a reply to an unknown or an answered prompt is an error with a code', async () => {
    const harness = defineHarness({
      name: 'errors',
      agents: {},
      run: async ({ session }) => session!.waitForUser('Go?'),
    });
    const session = harness.create().startSession();
    const prompt = await nextEvent(session, 'user:prompt');
    const unknown = expectThrowsCode(() => session.reply('prompt-99', 'hi'), 'UNKNOWN_PROMPT') as Error;
    expect(unknown.message).toContain('Waiting prompts: prompt-1');
    session.reply(prompt.promptId, 'yes');
    expectThrowsCode(() => session.reply(prompt.promptId, 'again'), 'PROMPT_ALREADY_ANSWERED');
    await session.complete();
  });

  it('two prompts wait at once and are answered in reverse order, each getting its own reply', async () => {
    const harness = defineHarness({
      name: 'two-prompts',
      agents: {},
      run: async ({ session, parallel }) =>
        parallel('questions', [() => session!.waitForUser('Name?'), () => session!.waitForUser('Colour?')]),
    });
    const session = harness.create().startSession();
    const prompts: string[] = [];
    session.on('user:prompt', (event) => prompts.push(event.promptId));
    while (prompts.length < 2) await nextEvent(session, 'user:prompt');
    expect(session.pendingPrompts.map((prompt) => prompt.prompt)).toEqual(['Name?', 'Colour?']);
    session.reply('prompt-2', 'blue');
    expect(session.status).toBe('waiting');
    session.reply('prompt-1', 'Ada');
    const result = await session.complete();
    expect((result.result as UserResponse[]).map((response) => response.content)).toEqual(['Ada', 'blue']);
  });

  it('with a timeout and a default, the wait ends with the default and timedOut: true', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const harness = defineHarness({
      name: 'timeout-default',
      agents: {},
      run: async ({ session }) =>
        session!.waitForUser('Deploy now?', { choices: ['Yes', 'No'], timeout: 30_000, defaultChoice: 'No' }),
    });
    const session = harness.create().startSession();
    const prompt = await nextEvent(session, 'user:prompt');
    await vi.advanceTimersByTimeAsync(29_999);
    expect(session.status).toBe('waiting');
    await vi.advanceTimersByTimeAsync(1);
    const result = await session.complete();
    expect(result.result).toMatchObject({ content: 'No', choice: 'No', timedOut: true });
    expect(result.events.find((event) => event.type === 'user:timeout')).toMatchObject({
      promptId: prompt.promptId,
      defaultChoice: 'No',
    });
    expectThrowsCode(() => session.reply(prompt.promptId, 'Yes'), 'PROMPT_ALREADY_ANSWERED');
  });

  it('with a timeout and no default, the wait fails with TimeoutError; with no timeout it never times out', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const harness = defineHarness({
      name: 'timeouts',
      agents: {},
      run: async ({ session }) => {
        const open = session!.waitForUser('No timeout: waits until answered');
        let error: unknown;
        try {
          await session!.waitForUser('Quick?', { timeout: 1_000 });
        } catch (caught) {
          error = caught;
        }
        return { error, open: await open };
      },
    });
    const session = harness.create().startSession();
    await nextEvent(session, 'user:prompt', (event) => event.prompt === 'Quick?');
    await vi.advanceTimersByTimeAsync(60 * 60 * 1000);
    expect(session.pendingPrompts.map((prompt) => prompt.prompt)).toEqual(['No timeout: waits until answered']);
    session.reply('prompt-1', 'finally');
    const { result } = await session.complete();
    const { error, open } = result as { error: TimeoutError; open: UserResponse };
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.code).toBe('PROMPT_TIMEOUT');
    expect(error.message).toContain('defaultChoice');
    expect(open.content).toBe('finally');
  });

  it('refuses wait options that cannot work', async () => {
    const harness = defineHarness({
      name: 'bad-wait',
      agents: {},
      run: async ({ session }) => session!.waitForUser('Pick', { choices: ['A', 'B'], defaultChoice: 'C' }),
    });
    await expectCode(harness.create().startSession().complete(), 'INVALID_INPUT');
  });
});

describe('messages', () => {
  it("send reaches the running turn through the back end's injection, and the session shows it", async () => {
    const backend = createScriptedBackend({
      turns: [[step.text('Working on it.'), step.awaitInjection((message) => `Noted: ${message}`)]],
    });
    const worker = defineAgent({ name: 'Worker', role: 'r', backend });
    const harness = defineHarness({
      name: 'inject',
      agents: { worker },
      run: async ({ agents }) => agents.worker.run('Start.'),
    });
    const manager = await openManager();
    const session = harness.create(undefined, { sessionManager: manager }).startSession();
    await nextEvent(session, 'agent:event', (event) => event.event.type === 'block_complete');
    session.send('Use tabs, not spaces.');
    const result = await session.complete();
    expect(result.result).toBe('Working on it.\n\nNoted: Use tabs, not spaces.');
    expect(backend.calls[0]!.injected).toEqual(['Use tabs, not spaces.']);
    expect(result.events.find((event) => event.type === 'message:injected')).toMatchObject({
      agent: 'worker',
      delivery: 'live',
    });
    const sessionId = (result.events.find((event) => event.type === 'agent:start') as { sessionId: string }).sessionId;
    const messages = await manager.getRecentMessages(sessionId);
    expect(messages.find((message) => message.content === 'Use tabs, not spaces.')).toMatchObject({
      role: 'user',
      metadata: { injected: true },
    });
  });

  it('a message sent while no agent runs waits for the next turn (or readMessages)', async () => {
    const backend = createScriptedBackend({ turns: [[step.text('first')], [step.text('second')]] });
    const worker = defineAgent({ name: 'Worker', role: 'r', backend });
    const harness = defineHarness({
      name: 'queue',
      agents: { worker },
      run: async ({ agents, session }) => {
        const prompt = await session!.waitForUser('Ready?');
        const before = session!.hasMessages();
        await agents.worker.run('Go.');
        await session!.waitForUser('Again?');
        const read = session!.readMessages();
        await agents.worker.run('Go again.');
        return {
          prompt: prompt.content,
          before,
          read: read.map((message) => message.content),
          after: session!.hasMessages(),
        };
      },
    });
    const session = harness.create(undefined, { sessionManager: await openManager() }).startSession();
    await nextEvent(session, 'user:prompt');
    session.send('Mind the tests.');
    session.reply('prompt-1', 'yes');
    await nextEvent(session, 'user:prompt', (event) => event.promptId === 'prompt-2');
    session.send('Read by the workflow.');
    session.reply('prompt-2', 'yes');
    const result = await session.complete();
    expect(result.result).toEqual({ prompt: 'yes', before: true, read: ['Read by the workflow.'], after: false });
    expect(backend.calls[0]!.prompt).toBe('Messages from the user while you were working:\n- Mind the tests.\n\nGo.');
    expect(backend.calls[1]!.prompt).toBe('Go again.');
    expect(
      result.events
        .filter((event) => event.type === 'message:injected')
        .map((event) => event.type === 'message:injected' && event.delivery),
    ).toEqual(['queue', 'queue']);
    expect(result.events.find((event) => event.type === 'agent:start')).toMatchObject({
      messages: ['Mind the tests.'],
    });
  });

  it('sendTo an agent that is not running waits in its inbox for its next turn; other agents do not get it', async () => {
    const first = createScriptedBackend({ turns: [[step.text('a1'), step.wait(never)]] });
    const second = createScriptedBackend({ turns: [[step.text('b1')]] });
    const alpha = defineAgent({ name: 'Alpha', role: 'r', backend: first });
    const beta = defineAgent({ name: 'Beta', role: 'r', backend: second });
    const harness = defineHarness({
      name: 'inbox',
      agents: { alpha, beta },
      run: async ({ agents, session }) => {
        await session!.waitForUser('Start?');
        return agents.beta.run('Beta, go.');
      },
    });
    const session = harness.create(undefined, { sessionManager: await openManager() }).startSession();
    await nextEvent(session, 'user:prompt');
    session.sendTo('Beta', 'For Beta only.');
    expectThrowsCode(() => session.sendTo('gamma', 'nobody'), 'UNKNOWN_AGENT');
    session.reply('prompt-1', 'go');
    await session.complete();
    expect(second.calls[0]!.prompt).toContain('For Beta only.');
    expect(first.calls).toHaveLength(0);
  });

  it('a message for a running agent whose back end cannot inject waits for its next turn', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const backend = createScriptedBackend({ turns: [[step.text('one'), step.wait(released)], [step.text('two')]] });
    const worker = defineAgent({ name: 'Worker', role: 'r', backend: withoutInjection(backend) });
    const harness = defineHarness({
      name: 'no-inject',
      agents: { worker },
      run: async ({ agents }) => [await agents.worker.run('Turn one.'), await agents.worker.run('Turn two.')],
    });
    const session = harness.create(undefined, { sessionManager: await openManager() }).startSession();
    await nextEvent(session, 'agent:event', (event) => event.event.type === 'block_complete');
    session.send('Later, please.');
    release();
    const result = await session.complete();
    expect(result.events.find((event) => event.type === 'message:injected')).toMatchObject({
      agent: 'worker',
      delivery: 'inbox',
    });
    expect(backend.calls[0]!.injected).toEqual([]);
    expect(backend.calls[1]!.prompt).toContain('- Later, please.\n\nTurn two.');
  });

  it('send after the session ended is an error', async () => {
    const session = defineHarness({ name: 'ended', agents: {}, run: async () => 1 })
      .create()
      .startSession();
    await session.complete();
    expectThrowsCode(() => session.send('hello?'), 'SESSION_ENDED');
  });
});

describe('abort', () => {
  it('mid-turn: the turn ends with a system block, complete() resolves aborted with the partial state, nothing escapes', async () => {
    const unhandled = watchUnhandledRejections();
    const backend = createScriptedBackend({
      turns: [[step.text('Half of the answer'), step.wait(never), step.text('never said')]],
    });
    const worker = defineAgent({ name: 'Worker', role: 'r', backend });
    const harness = defineHarness({
      name: 'abort-turn',
      agents: { worker },
      state: () => ({ progress: 'started' }),
      run: async ({ agents, state, session }) => {
        // A prompt the workflow never awaits is rejected by the abort too: it must not crash anything.
        void session!.waitForUser('Side question');
        state.progress = 'asked the worker';
        const answer = await agents.worker.run('Answer.');
        state.progress = 'done';
        return answer;
      },
    });
    const manager = await openManager();
    const session = harness.create(undefined, { sessionManager: manager }).startSession();
    await nextEvent(session, 'agent:event', (event) => event.event.type === 'block_complete');
    expect(session.status).toBe('waiting');
    session.abort('the user changed their mind');
    expect(session.status).toBe('aborted');
    const result = await session.complete();
    expect(result).toMatchObject({
      aborted: true,
      abortReason: 'the user changed their mind',
      result: undefined,
      state: { progress: 'asked the worker' },
    });
    expect(session.status).toBe('aborted');
    const complete = result.events.find((event) => event.type === 'agent:complete');
    expect(complete).toMatchObject({ stopReason: 'aborted', output: 'Half of the answer' });
    const sessionId = (complete as { sessionId: string }).sessionId;
    const conversation = await manager.loadConversation(sessionId);
    expect(conversation.blocks.map((block) => block.type)).toEqual(['user_message', 'assistant_text', 'system']);
    expect(conversation.blocks[2]).toMatchObject({ type: 'system', subtype: 'aborted' });
    expect(result.events.at(-1)).toMatchObject({
      type: 'session:complete',
      aborted: true,
      abortReason: 'the user changed their mind',
    });
    expect(unhandled).toEqual([]);
  });

  it('while waiting for the user: the wait rejects with AbortedError and the workflow may return a partial result', async () => {
    watchUnhandledRejections();
    const harness = defineHarness({
      name: 'abort-wait',
      agents: {},
      run: async ({ session }) => {
        try {
          await session!.waitForUser('Continue?');
          return 'continued';
        } catch (error) {
          return error instanceof AbortedError ? `partial (${error.reason})` : 'other';
        }
      },
    });
    const session = harness.create().startSession();
    await nextEvent(session, 'user:prompt');
    session.abort('closing');
    const result = await session.complete();
    expect(result).toMatchObject({ aborted: true, result: 'partial (closing)', abortReason: 'closing' });
  });

  it("the caller's signal aborts the session", async () => {
    const controller = new AbortController();
    const harness = defineHarness({
      name: 'signal',
      agents: {},
      run: async ({ session }) => session!.waitForUser('Wait'),
    });
    const session = harness.create().startSession({ signal: controller.signal });
    await nextEvent(session, 'user:prompt');
    controller.abort('shutting down');
    expect(await session.complete()).toMatchObject({ aborted: true, abortReason: 'shutting down' });
  });

  it('the signal reaches a running back end: a turn blocked on its back end ends at once', async () => {
    const backend = createScriptedBackend({ turns: [[step.awaitInjection()]] });
    const worker = defineAgent({ name: 'Worker', role: 'r', backend });
    const harness = defineHarness({
      name: 'abort-backend',
      agents: { worker },
      run: async ({ agents }) => agents.worker.run('Wait for me.'),
    });
    const session = harness.create(undefined, { sessionManager: await openManager() }).startSession();
    await nextEvent(session, 'agent:start');
    session.abort();
    const result = await session.complete();
    expect(result.aborted).toBe(true);
    const blocks = result.events.flatMap((event) =>
      event.type === 'agent:event' && event.event.type === 'block_complete' ? [event.event.block] : [],
    );
    expect(blocks.at(-1)).toMatchObject({ type: 'system', subtype: 'aborted' });
  });
});

describe('the session as an event stream', () => {
  it('for await yields every event; a consumer that starts late misses nothing', async () => {
    const backend = createScriptedBackend({ turns: [[step.text('hello there')]] });
    const greeter = defineAgent({ name: 'Greeter', role: 'r', backend });
    const harness = defineHarness({
      name: 'stream',
      agents: { greeter },
      run: async ({ agents, phase }) => phase('greet', () => agents.greeter.run('Hi')),
    });
    const session = harness.create(undefined, { sessionManager: await openManager() }).startSession();
    const early = (async () => {
      const seen: SessionEvent[] = [];
      for await (const event of session) seen.push(event);
      return seen;
    })();
    const result = await session.complete();
    const late: SessionEvent[] = [];
    for await (const event of session) late.push(event);
    expect(await early).toEqual(result.events);
    expect(late).toEqual(result.events);
    expect(late.at(-1)).toMatchObject({ type: 'session:complete', result: 'hello there', aborted: false });
  });

  it('handlers attached right after startSession() see the first event', async () => {
    const session = defineHarness({ name: 'first', agents: {}, run: async () => 1 })
      .create()
      .startSession();
    const types: string[] = [];
    session.on('*', (event) => types.push(event.type));
    await session.complete();
    expect(types).toEqual(['harness:start', 'session:complete']);
  });

  it('a workflow error rejects complete() and ends the stream with session:error', async () => {
    const harness = defineHarness({
      name: 'broken',
      agents: {},
      run: async ({ phase }) =>
        phase('explode', async () => {
          throw new Error('kaput');
        }),
    });
    const session = harness.create().startSession();
    await expect(session.complete()).rejects.toThrow('kaput');
    const seen: string[] = [];
    for await (const event of session) seen.push(event.type);
    expect(seen).toEqual(['harness:start', 'phase:start', 'phase:failed', 'session:error']);
  });

  it('pause holds the workflow at its next step until resume', async () => {
    const harness = defineHarness({
      name: 'pausing',
      agents: {},
      run: async ({ session, phase }) => {
        await session!.waitForUser('Go?');
        return phase('after', async () => 'done');
      },
    });
    const session = harness.create().startSession();
    await nextEvent(session, 'user:prompt');
    session.pause();
    expect(session.status).toBe('paused');
    session.reply('prompt-1', 'go');
    for (let tick = 0; tick < 5; tick++) await new Promise((resolve) => setImmediate(resolve));
    expect(outline(session.events)).not.toContain('phase:start after');
    session.resume();
    const result = await session.complete();
    expect(result.result).toBe('done');
    expect(outline(result.events)).toEqual([
      'harness:start',
      'user:prompt prompt-1',
      'session:paused',
      'user:reply prompt-1',
      'session:resumed',
      'phase:start after',
      'phase:complete after',
      'session:complete',
    ]);
  });
});

describe('branches', () => {
  it("the user's actions and replies carry no branch, even when code in a parallel branch makes them", async () => {
    const harness = defineHarness({
      name: 'branch-actions',
      agents: {},
      run: async ({ session, parallel, emit }) => {
        const main = session!.waitForUser('Main question?');
        await parallel('side', [
          async () => {
            emit('inside', {});
            return 1;
          },
        ]);
        return (await main).content;
      },
    });
    const session = harness.create().startSession();
    session.on('custom', () => {
      // Runs inside branch side#0: the reply and the message still belong to nobody's branch.
      session.reply('prompt-1', 'answered');
      session.send('a note');
    });
    const result = await session.complete();
    expect(result.result).toBe('answered');
    expect(result.events.find((event) => event.type === 'custom')?.branch).toBe('side#0');
    expect(result.events.find((event) => event.type === 'user:reply')?.branch).toBeUndefined();
    expect(result.events.find((event) => event.type === 'message:injected')?.branch).toBeUndefined();
  });
});
