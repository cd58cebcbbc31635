import { afterEach, describe, expect, it, vi } from 'vitest';
import { createScriptedBackend, step, type AgentBackend } from '../../src/backends/index.js';
import type { StreamEvent, UnsequencedEvent } from '../../src/conversation/index.js';
import { closeInterruptedTurn, createSessionManager, runTurn, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import { heldStore } from '../helpers/held-store.js';

const managers: SessionManager[] = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
});

async function setup() {
  const store = createMemoryStore();
  const manager = await createSessionManager({ store });
  managers.push(manager);
  const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
  return { store, manager, sessionId };
}

async function drain(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const all: StreamEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe('runTurn', () => {
  it('stores the user message and every event of the turn, numbered, before handing them on', async () => {
    const { manager, sessionId } = await setup();
    const backend = createScriptedBackend({
      turns: [[step.thinking('plan'), step.text('Hello there'), step.tool('Read', { path: 'a' }, 'contents')]],
    });
    const turn = await runTurn(manager, sessionId, { backend, prompt: 'hi' });
    const events = await drain(turn.events);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    const log = await manager.getEvents(sessionId);
    expect(log.map((event) => event.seq)).toEqual(log.map((_, index) => index));
    const conversation = await manager.loadConversation(sessionId);
    expect(conversation.blocks.map((block) => block.type)).toEqual([
      'user_message',
      'thinking',
      'assistant_text',
      'tool_use',
      'tool_result',
    ]);
    expect(conversation.metrics.turns).toBe(1);
    expect(backend.calls[0]!.prompt).toBe('hi');
  });

  it('a back-end failure ends the turn with an error block and keeps what was stored', async () => {
    const { manager, sessionId } = await setup();
    const backend = createScriptedBackend({
      turns: [[step.text('partial'), step.error('rate limited', { code: 'RATE_LIMITED', retryable: true })]],
    });
    await drain((await runTurn(manager, sessionId, { backend, prompt: 'go' })).events);
    const conversation = await manager.loadConversation(sessionId);
    expect(conversation.blocks.at(-1)).toMatchObject({ type: 'system', subtype: 'error' });
    expect(conversation.blocks.some((block) => block.type === 'assistant_text' && block.content === 'partial')).toBe(
      true,
    );
  });

  it('abort ends the turn gracefully with an aborted block', async () => {
    const { manager, sessionId } = await setup();
    const controller = new AbortController();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const backend = createScriptedBackend({ turns: [[step.text('working'), step.wait(gate), step.text('never')]] });
    const turn = await runTurn(manager, sessionId, { backend, prompt: 'go', signal: controller.signal });
    const seen: StreamEvent[] = [];
    for await (const event of turn.events) {
      seen.push(event);
      if (event.type === 'block_complete' && event.block.type === 'assistant_text') controller.abort();
    }
    release();
    const conversation = await manager.loadConversation(sessionId);
    expect(conversation.blocks.some((block) => block.type === 'system' && block.subtype === 'aborted')).toBe(true);
    expect(conversation.blocks.some((block) => block.type === 'assistant_text' && block.content === 'never')).toBe(
      false,
    );
    expect(conversation.metrics.turns).toBe(1);
  });

  it('inject reaches a running turn', async () => {
    const { manager, sessionId } = await setup();
    const backend = createScriptedBackend({ turns: [[step.awaitInjection()]] });
    const turn = await runTurn(manager, sessionId, { backend, prompt: 'wait for me' });
    const iterator = turn.events[Symbol.asyncIterator]();
    const pending = iterator.next();
    await turn.inject!('also check the tests');
    const rest: StreamEvent[] = [];
    let next = await pending;
    while (!next.done) {
      rest.push(next.value);
      next = await iterator.next();
    }
    expect(backend.calls[0]!.injected).toEqual(['also check the tests']);
    const texts = (await manager.loadConversation(sessionId)).blocks.filter((block) => block.type === 'assistant_text');
    expect(texts.map((block) => (block as { content: string }).content).join(' ')).toContain('also check the tests');
  });

  it('a turn cut by a crash is closed as interrupted before the next one runs', async () => {
    const { manager, sessionId } = await setup();
    await manager.addMessage(sessionId, { role: 'user', content: 'do it' });
    await manager.appendEvents(sessionId, [
      {
        type: 'block_start',
        conversationId: 'main',
        block: { id: 't', type: 'tool_use', toolUseId: 'tu', name: 'Bash', input: {}, status: 'running', createdAt: 1 },
      },
    ]);
    expect(await closeInterruptedTurn(manager, sessionId)).toBe(true);
    const conversation = await manager.loadConversation(sessionId);
    expect(conversation.blocks.find((block) => block.id === 't')).toMatchObject({ status: 'error' });
    expect(conversation.blocks.at(-1)).toMatchObject({ type: 'system', subtype: 'interrupted' });
    // Idempotent: a closed turn needs nothing more.
    expect(await closeInterruptedTurn(manager, sessionId)).toBe(false);
  });

  it('a completed turn needs no repair', async () => {
    const { manager, sessionId } = await setup();
    const backend = createScriptedBackend({ turns: [[step.text('done')]] });
    await drain((await runTurn(manager, sessionId, { backend, prompt: 'go' })).events);
    expect(await closeInterruptedTurn(manager, sessionId)).toBe(false);
  });
});

describe('runTurn keeps ids unique within a session', () => {
  it('a back end that restarts its id counter does not overwrite earlier blocks or threads', async () => {
    const { manager, sessionId } = await setup();
    const turnSteps = (word: string) => [
      step.text(`${word} reply`),
      step.subagent('helper', `${word} job`, [step.text(`${word} inner`)]),
    ];
    // Two back-end instances, as two processes would have: both count ids from 1.
    await drain(
      (
        await runTurn(manager, sessionId, {
          backend: createScriptedBackend({ turns: [turnSteps('first')] }),
          prompt: 'one',
        })
      ).events,
    );
    await drain(
      (
        await runTurn(manager, sessionId, {
          backend: createScriptedBackend({ turns: [turnSteps('second')] }),
          prompt: 'two',
        })
      ).events,
    );
    const conversation = await manager.loadConversation(sessionId);
    const texts = conversation.blocks
      .filter((block) => block.type === 'assistant_text')
      .map((block) => (block as { content: string }).content);
    expect(texts).toEqual(['first reply', 'second reply']);
    expect(new Set(conversation.blocks.map((block) => block.id)).size).toBe(conversation.blocks.length);
    expect(conversation.subagents).toHaveLength(2);
    const inner = conversation.subagents.map((thread) =>
      thread.blocks
        .filter((block) => block.type === 'assistant_text')
        .map((block) => (block as { content: string }).content),
    );
    expect(inner).toEqual([['first inner'], ['second inner']]);
    const subagentBlocks = conversation.blocks.filter((block) => block.type === 'subagent');
    expect(subagentBlocks.map((block) => (block as { subagentId: string }).subagentId).sort()).toEqual(
      conversation.subagents.map((thread) => thread.id).sort(),
    );
  });
});

describe('closeInterruptedTurn', () => {
  it('a turn cut after some streamed text (no tool open) is still marked interrupted', async () => {
    const { manager, sessionId } = await setup();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const backend = createScriptedBackend({ turns: [[step.text('half an answer'), step.wait(gate)]] });
    const turn = await runTurn(manager, sessionId, { backend, prompt: 'go' });
    // Consume until the text is complete, then stop as a crashed process would: no more events are stored.
    for await (const event of turn.events)
      if (event.type === 'block_complete' && event.block.type === 'assistant_text') break;
    release();
    expect(await closeInterruptedTurn(manager, sessionId)).toBe(true);
    const conversation = await manager.loadConversation(sessionId);
    expect(conversation.blocks.at(-1)).toMatchObject({ type: 'system', subtype: 'interrupted' });
    expect(
      conversation.blocks.some((block) => block.type === 'assistant_text' && block.content === 'half an answer'),
    ).toBe(true);
    expect(await closeInterruptedTurn(manager, sessionId)).toBe(false);
  });

  describe('events arriving while earlier ones are written', () => {
    /** A back end that streams whatever the test's generator yields. */
    function streaming(events: () => AsyncGenerator<UnsequencedEvent>): AgentBackend {
      const scripted = createScriptedBackend({ turns: [] });
      return { describe: () => scripted.describe(), execute: () => ({ events: events() }) };
    }
    const delta = (text: string): UnsequencedEvent => ({
      type: 'text_delta',
      conversationId: 'main',
      blockId: 'reply',
      delta: text,
    });
    const start: UnsequencedEvent = {
      type: 'block_start',
      conversationId: 'main',
      block: { type: 'assistant_text', id: 'reply', content: '', createdAt: 1 },
    };

    it('are appended without waiting for the earlier writes, and handed on in order once durable', async () => {
      const { store, held, hold } = heldStore();
      const manager = await createSessionManager({ store });
      managers.push(manager);
      const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
      const backend = streaming(async function* () {
        yield start;
        for (const text of ['a', 'b', 'c', 'd']) yield delta(text);
      });
      const turn = await runTurn(manager, sessionId, { backend, prompt: 'go' });
      hold();
      const drained = drain(turn.events);
      // Every event of the burst reaches the store while the first write is still pending.
      await vi.waitFor(() => expect(held).toHaveLength(5));
      for (const append of held.reverse()) append.release();
      const events = await drained;
      expect(events.map((event) => (event.type === 'text_delta' ? event.delta : event.type))).toEqual([
        'block_start',
        'a',
        'b',
        'c',
        'd',
      ]);
      expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5]);
    });

    it('a back end that throws mid-stream keeps every event before it, then an error block ends the turn', async () => {
      const { manager, sessionId } = await setup();
      const backend = streaming(async function* () {
        yield start;
        yield delta('half');
        throw new Error('socket closed');
      });
      const events = await drain((await runTurn(manager, sessionId, { backend, prompt: 'go' })).events);
      expect(events.map((event) => event.type)).toEqual([
        'block_start',
        'text_delta',
        'block_complete',
        'metadata_update',
      ]);
      expect(events[2]).toMatchObject({
        block: { type: 'system', subtype: 'error', content: expect.stringContaining('socket closed') },
      });
      expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4]);
    });

    it('a consumer that stops early stops the back end', async () => {
      const { manager, sessionId } = await setup();
      let closed = false;
      const backend = streaming(async function* () {
        try {
          yield start;
          for (let index = 0; ; index++) yield delta(String(index));
        } finally {
          closed = true;
        }
      });
      const turn = await runTurn(manager, sessionId, { backend, prompt: 'go' });
      let seen = 0;
      for await (const _event of turn.events) if (++seen === 3) break;
      await vi.waitFor(() => expect(closed).toBe(true));
    });
  });

  it('messages added with addMessage alone open no turn and need no repair', async () => {
    const { manager, sessionId } = await setup();
    await manager.addMessage(sessionId, { role: 'user', content: 'a question' });
    expect(await closeInterruptedTurn(manager, sessionId)).toBe(false);
    await manager.addMessage(sessionId, { role: 'assistant', content: 'an answer' });
    expect(await closeInterruptedTurn(manager, sessionId)).toBe(false);
  });
});
