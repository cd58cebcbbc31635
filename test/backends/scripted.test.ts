import { describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type ScriptedBackend, type ToolDefinition } from '../../src/backends/index.js';
import * as testing from '../../src/entry/testing.js';
import type { UnsequencedEvent } from '../../src/conversation/index.js';
import {
  assistantText,
  checkEventStream,
  collect,
  describeBackendConformance,
  finalMetadata,
  reduce,
  systemBlocks,
} from './conformance.js';

const never = new Promise<never>(() => undefined);

const lookupTool: ToolDefinition = {
  name: 'lookup',
  description: 'Looks a key up.',
  inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  execute: (input) => Promise.resolve({ content: `value of ${(input as { key: string }).key}`, data: { found: true } }),
};

describeBackendConformance({
  name: 'scripted',
  failureKinds: ['rate_limit', 'server_error'],
  differences: { resume: 'managed continuity: Parley rebuilds every request, so there is no native session to resume' },
  create: () => {
    const backend = createScriptedBackend();
    return Promise.resolve({
      backend,
      request: (fields) => ({ sessionId: 'scripted-session', ...fields }),
      script: {
        text: (text) => backend.enqueue([step.text(text)]),
        stall: (text) => backend.enqueue([step.text(text), step.wait(never)]),
        failure: (kind) => {
          const code = kind === 'rate_limit' ? 'RATE_LIMITED' : 'SERVER_ERROR';
          backend.enqueue([
            step.error(`Scripted ${kind}.`, {
              code,
              advice: 'Wait a moment and send the message again.',
              retryable: true,
            }),
          ]);
          return { code };
        },
        toolCall: (finalText) => {
          backend.enqueue([step.tool('lookup', { key: 'answer' }), step.text(finalText)]);
          return { request: { tools: [lookupTool] }, toolName: 'lookup' };
        },
      },
      teardown: () => Promise.resolve(),
    });
  },
});

function fixedClock(start = 1_000): () => number {
  let now = start;
  return () => now++;
}

async function run(
  backend: ScriptedBackend,
  prompt: string,
  extra: Partial<Parameters<ScriptedBackend['execute']>[0]> = {},
) {
  return collect(backend.execute({ sessionId: 's1', prompt, ...extra }));
}

describe('scripted back end', () => {
  it('is exported from parley/testing', () => {
    expect(testing.createScriptedBackend).toBe(createScriptedBackend);
    expect(testing.step).toBe(step);
  });

  it('plays the same script to the same events, ids and timestamps included', async () => {
    const script = () => [
      [step.thinking('Let me think.'), step.text('Hello there, friend.'), step.tool('lookup', { key: 'a' }, 'A')],
    ];
    const first = await run(createScriptedBackend({ turns: script(), clock: fixedClock() }), 'hi');
    const second = await run(createScriptedBackend({ turns: script(), clock: fixedClock() }), 'hi');
    expect(first).toEqual(second);
    checkEventStream(first);
    expect(first[0]).toMatchObject({
      type: 'block_start',
      at: 1_001,
      block: { type: 'thinking', id: 'scripted-thinking-1', createdAt: 1_001 },
    });
  });

  it('plays turns in order, then echoes the prompt once the script runs out', async () => {
    const backend = createScriptedBackend({ turns: [[step.text('first')], [step.text('second')]] });
    expect(assistantText(await run(backend, 'a'))).toBe('first');
    expect(backend.pendingTurns).toBe(1);
    expect(assistantText(await run(backend, 'b'))).toBe('second');
    expect(assistantText(await run(backend, 'what now?'))).toBe('Echo: what now?');
  });

  it('answers a request with an output schema with JSON that matches it once the script runs out', async () => {
    const backend = createScriptedBackend();
    const events = await run(backend, 'work', {
      outputSchema: {
        type: 'object',
        properties: {
          done: { type: 'boolean' },
          files: { type: 'array' },
          state: { enum: ['ok', 'failed'] },
          count: { type: 'integer' },
        },
        required: ['done', 'files', 'state', 'count'],
      },
    });
    expect(JSON.parse(assistantText(events))).toEqual({ done: false, files: [], state: 'ok', count: 0 });
  });

  it('a turn may be a function of the call, so a script can answer the prompt', async () => {
    const backend = createScriptedBackend({
      turns: [(call) => [step.text(`You asked: ${call.prompt.toUpperCase()}`)]],
    });
    expect(assistantText(await run(backend, 'why'))).toBe('You asked: WHY');
  });

  it('a script function that throws ends the turn with an error block, not an exception', async () => {
    const backend = createScriptedBackend({
      turns: [
        () => {
          throw new Error('bad script');
        },
      ],
    });
    const events = await run(backend, 'x');
    checkEventStream(events);
    expect(systemBlocks(events, 'error')[0]?.content).toContain('bad script');
  });

  it('records every call without its signal, and the messages injected into it', async () => {
    let release!: () => void;
    const backend = createScriptedBackend({
      turns: [[step.wait(new Promise<void>((resolve) => (release = resolve))), step.text('done')]],
    });
    const controller = new AbortController();
    const turn = backend.execute({
      sessionId: 's1',
      prompt: 'p',
      systemPrompt: 'sys',
      model: 'scripted-1',
      signal: controller.signal,
    });
    const events = collect(turn);
    await turn.inject('also this');
    release();
    await events;
    expect(backend.calls).toHaveLength(1);
    expect(backend.calls[0]).toEqual({
      sessionId: 's1',
      prompt: 'p',
      systemPrompt: 'sys',
      model: 'scripted-1',
      injected: ['also this'],
    });
    expect('signal' in backend.calls[0]!).toBe(false);
  });

  it('an injected message reaches the running turn: awaitInjection waits for it and answers it', async () => {
    const backend = createScriptedBackend({
      turns: [[step.text('Waiting for you.'), step.awaitInjection(), step.text('Bye.')]],
    });
    const turn = backend.execute({ sessionId: 's1', prompt: 'start' });
    const events = await collect(turn, (event) => {
      if (
        event.type === 'block_complete' &&
        event.block.type === 'assistant_text' &&
        event.block.content === 'Waiting for you.'
      ) {
        void turn.inject('here I am');
      }
    });
    checkEventStream(events);
    expect(reduce(events).blocks.flatMap((block) => (block.type === 'assistant_text' ? [block.content] : []))).toEqual([
      'Waiting for you.',
      'Received: here I am',
      'Bye.',
    ]);
  });

  it('injecting into a turn that has ended rejects with TURN_NOT_RUNNING', async () => {
    const backend = createScriptedBackend();
    const turn = backend.execute({ sessionId: 's1', prompt: 'x' });
    await collect(turn);
    await expect(turn.inject('late')).rejects.toMatchObject({ code: 'TURN_NOT_RUNNING' });
  });

  it('a tool step without output runs the request tool of that name and records its output', async () => {
    const backend = createScriptedBackend({ turns: [[step.tool('lookup', { key: 'k' }), step.tool('missing', {})]] });
    const events = await run(backend, 'x', { tools: [lookupTool] });
    checkEventStream(events);
    const results = reduce(events).blocks.filter((block) => block.type === 'tool_result');
    expect(results[0]).toMatchObject({ content: 'value of k', isError: false, output: { found: true } });
    expect(results[1]).toMatchObject({
      isError: true,
      content: 'Tool "missing" is not available (available: lookup).',
    });
    const uses = reduce(events).blocks.filter((block) => block.type === 'tool_use');
    expect(uses.map((block) => (block.type === 'tool_use' ? block.status : ''))).toEqual(['success', 'error']);
  });

  it('a throwing tool gives an error tool result and the turn goes on', async () => {
    const failing: ToolDefinition = { ...lookupTool, execute: () => Promise.reject(new Error('disk full')) };
    const backend = createScriptedBackend({ turns: [[step.tool('lookup', {}), step.text('after')]] });
    const events = await run(backend, 'x', { tools: [failing] });
    expect(reduce(events).blocks.find((block) => block.type === 'tool_result')).toMatchObject({
      isError: true,
      content: 'Tool "lookup" failed: disk full',
    });
    expect(assistantText(events)).toBe('after');
  });

  it('a subagent streams into its own thread and a subagent block in main', async () => {
    const backend = createScriptedBackend({
      turns: [
        [
          step.text('Delegating.'),
          step.subagent('reviewer', 'Review auth.', [step.text('Found 3 issues.')]),
          step.text('Done.'),
        ],
      ],
    });
    const events = await run(backend, 'review');
    checkEventStream(events);
    const state = reduce(events);
    const subagent = state.blocks.find((block) => block.type === 'subagent');
    expect(subagent).toMatchObject({
      name: 'reviewer',
      input: 'Review auth.',
      status: 'success',
      output: 'Found 3 issues.',
    });
    const thread = state.subagents.find((entry) => subagent?.type === 'subagent' && entry.id === subagent.subagentId);
    expect(thread?.blocks.map((block) => block.type)).toEqual(['system', 'user_message', 'assistant_text', 'system']);
    const subagentEvents = events.filter(
      (event: UnsequencedEvent) => subagent?.type === 'subagent' && event.conversationId === subagent.subagentId,
    );
    expect(subagentEvents.some((event) => event.type === 'text_delta')).toBe(true);
    expect(state.metrics.turns).toBe(1);
  });

  it('reports a 200k-window model, estimated usage, zero known cost, or the scripted usage and cost', async () => {
    const backend = createScriptedBackend({
      turns: [
        [step.text('one two three')],
        [step.text('x'), step.usage({ inputTokens: 500, outputTokens: 7 }), step.cost(0.25)],
      ],
    });
    const first = finalMetadata(await run(backend, 'count these words', { systemPrompt: 'be brief' }));
    expect(first).toMatchObject({
      model: 'scripted-1',
      contextWindow: 200_000,
      costUsd: 0,
      turnComplete: true,
      usage: { inputTokens: 5, outputTokens: 3 },
    });
    expect(first.costUnknown).toBeUndefined();
    expect(backend.describe().models[0]?.pricing).toMatchObject({ inputPerMillion: 0, outputPerMillion: 0 });
    const second = finalMetadata(await run(backend, 'y'));
    expect(second).toMatchObject({ usage: { inputTokens: 500, outputTokens: 7 }, costUsd: 0.25 });
  });

  it('abort while waiting ends with an aborted block and final metadata; the promise is not awaited', async () => {
    const controller = new AbortController();
    const backend = createScriptedBackend({
      turns: [[step.text('before'), step.wait(never), step.text('never shown')]],
    });
    const turn = backend.execute({ sessionId: 's1', prompt: 'x', signal: controller.signal });
    const events = await collect(turn, (event) => {
      if (event.type === 'block_complete') controller.abort();
    });
    checkEventStream(events);
    expect(assistantText(events)).toBe('before');
    expect(systemBlocks(events, 'aborted')).toHaveLength(1);
    expect(finalMetadata(events)).toMatchObject({ stopReason: 'aborted', turnComplete: true });
  });

  it('a wait step may wait for a signal', async () => {
    const go = new AbortController();
    const backend = createScriptedBackend({ turns: [[step.wait(go.signal), step.text('went')]] });
    const turn = backend.execute({ sessionId: 's1', prompt: 'x' });
    const done = collect(turn);
    go.abort();
    expect(assistantText(await done)).toBe('went');
  });

  it('an already aborted signal plays no step', async () => {
    const controller = new AbortController();
    controller.abort();
    const backend = createScriptedBackend({ turns: [[step.text('nothing')]] });
    const events = await run(backend, 'x', { signal: controller.signal });
    checkEventStream(events);
    expect(assistantText(events)).toBe('');
    expect(systemBlocks(events, 'aborted')).toHaveLength(1);
  });

  it('an error step closes an open thinking stream and ends the turn, skipping later steps', async () => {
    const backend = createScriptedBackend({
      turns: [
        [step.text('start'), step.error('The model is overloaded.', { code: 'SERVER_ERROR' }), step.text('not played')],
      ],
    });
    const events = await run(backend, 'x');
    checkEventStream(events);
    expect(assistantText(events)).toBe('start');
    expect(systemBlocks(events, 'error')[0]).toMatchObject({ data: { code: 'SERVER_ERROR', backend: 'scripted' } });
    expect(finalMetadata(events).stopReason).toBe('error');
  });

  it('streams text as the given chunks when the script names them', async () => {
    const backend = createScriptedBackend({ turns: [[step.text('abc', { chunks: ['a', 'b', 'c'] })]] });
    const deltas = (await run(backend, 'x')).flatMap((event) => (event.type === 'text_delta' ? [event.delta] : []));
    expect(deltas).toEqual(['a', 'b', 'c']);
  });
});
