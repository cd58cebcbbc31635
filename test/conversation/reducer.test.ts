import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyEvent,
  applyEvents,
  emptyConversation,
  foldInParts,
  StreamEventSchema,
  type ConversationBlock,
  type StreamEvent,
  type UnsequencedEvent,
} from '../../src/conversation/index.js';

const SESSION = 's1';

function numbered(unsequenced: UnsequencedEvent[], start = 0): StreamEvent[] {
  return unsequenced.map(
    (event, index) =>
      ({ ...event, sessionId: SESSION, seq: start + index, at: event.at ?? 1000 + index }) as StreamEvent,
  );
}

function textTurn(id: string, chunks: string[], conversationId = 'main'): UnsequencedEvent[] {
  return [
    { type: 'block_start', conversationId, block: { id, type: 'assistant_text', content: '', createdAt: 1 } },
    ...chunks.map((delta) => ({ type: 'text_delta' as const, conversationId, blockId: id, delta })),
    {
      type: 'block_complete',
      conversationId,
      block: { id, type: 'assistant_text', content: chunks.join(''), createdAt: 1, completedAt: 9 },
    },
  ];
}

describe('applyEvent', () => {
  it('streams text deltas into the block and completes it', () => {
    const events = numbered(textTurn('t1', ['Hel', 'lo', ' world']));
    let state = emptyConversation(SESSION);
    state = applyEvent(state, events[0]!);
    state = applyEvent(state, events[1]!);
    state = applyEvent(state, events[2]!);
    expect(state.blocks[0]).toMatchObject({ type: 'assistant_text', content: 'Hello' });
    state = applyEvents(state, events.slice(3));
    expect(state.blocks).toHaveLength(1);
    expect(state.blocks[0]).toMatchObject({ content: 'Hello world', completedAt: 9, seq: 0 });
    expect(state.lastSeq).toBe(4);
  });

  it('applying an event twice (same seq) changes nothing', () => {
    const events = numbered(textTurn('t1', ['a', 'b']));
    const once = applyEvents(emptyConversation(SESSION), events.slice(0, 2));
    const twice = applyEvent(once, events[1]!);
    expect(twice).toBe(once);
    expect(once.blocks[0]).toMatchObject({ content: 'a' });
  });

  it('never mutates the state it is given', () => {
    const events = numbered(textTurn('t1', ['a', 'b']));
    const before = applyEvents(emptyConversation(SESSION), events.slice(0, 2));
    const snapshot = structuredClone(before);
    applyEvents(before, events.slice(2));
    expect(before).toEqual(snapshot);
  });

  it('events for a subagent land in its thread, not in main', () => {
    const unsequenced: UnsequencedEvent[] = [
      {
        type: 'block_start',
        conversationId: 'main',
        block: {
          id: 'sub',
          type: 'subagent',
          subagentId: 'agent-7',
          name: 'reviewer',
          input: 'review',
          status: 'running',
          createdAt: 1,
        },
      },
      ...textTurn('x1', ['looking'], 'agent-7'),
      { type: 'block_update', conversationId: 'main', blockId: 'sub', updates: { status: 'success', output: 'done' } },
    ];
    const state = applyEvents(emptyConversation(SESSION), numbered(unsequenced));
    expect(state.blocks.map((block) => block.type)).toEqual(['subagent']);
    expect(state.blocks[0]).toMatchObject({ status: 'success', output: 'done' });
    expect(state.subagents).toHaveLength(1);
    expect(state.subagents[0]!.id).toBe('agent-7');
    expect(state.subagents[0]!.blocks[0]).toMatchObject({ type: 'assistant_text', content: 'looking' });
  });

  it('refuses illegal status transitions (success never goes back to running)', () => {
    const unsequenced: UnsequencedEvent[] = [
      {
        type: 'block_start',
        conversationId: 'main',
        block: {
          id: 'tool',
          type: 'tool_use',
          toolUseId: 'tu1',
          name: 'Read',
          input: {},
          status: 'pending',
          createdAt: 1,
        },
      },
      { type: 'block_update', conversationId: 'main', blockId: 'tool', updates: { status: 'success' } },
      { type: 'block_update', conversationId: 'main', blockId: 'tool', updates: { status: 'running', id: 'hijack' } },
    ];
    const state = applyEvents(emptyConversation(SESSION), numbered(unsequenced));
    expect(state.blocks[0]).toMatchObject({ id: 'tool', status: 'success' });
  });

  it('folds per-turn metadata into totals; occupancy and turns come from main only', () => {
    const unsequenced: UnsequencedEvent[] = [
      {
        type: 'metadata_update',
        conversationId: 'main',
        metadata: {
          usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 50, cacheWriteTokens: 5 },
          costUsd: 0.01,
          contextWindow: 200000,
          turnComplete: true,
        },
      },
      {
        type: 'metadata_update',
        conversationId: 'worker-1',
        metadata: {
          usage: { inputTokens: 900, outputTokens: 90, cacheReadTokens: 0, cacheWriteTokens: 0 },
          costUsd: 0.02,
          turnComplete: true,
        },
      },
    ];
    const state = applyEvents(emptyConversation(SESSION), numbered(unsequenced));
    expect(state.metrics).toMatchObject({
      turns: 1,
      inputTokens: 1000,
      outputTokens: 100,
      lastInputTokens: 155,
      contextWindow: 200000,
    });
    expect(state.metrics.costUsd).toBeCloseTo(0.03);
  });

  it('ignores events of another session', () => {
    const [event] = numbered(textTurn('t1', ['a']));
    const state = applyEvent(emptyConversation('other'), event!);
    expect(state.blocks).toHaveLength(0);
  });

  it('a conversation rebuilt from its events equals the one built event by event (any chunking)', () => {
    const chunks = fc.array(fc.string({ maxLength: 8 }), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(
        fc.array(chunks, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 7 }),
        (turns, batchSize) => {
          const unsequenced = turns.flatMap((turn, index) => textTurn(`b${index}`, turn));
          const events = numbered(unsequenced);
          for (const event of events) expect(StreamEventSchema.safeParse(event).success).toBe(true);
          let stepwise = emptyConversation(SESSION);
          for (const event of events) stepwise = applyEvent(stepwise, event);
          let batched = emptyConversation(SESSION);
          for (let index = 0; index < events.length; index += batchSize)
            batched = applyEvents(batched, events.slice(index, index + batchSize));
          // Replaying everything again on top changes nothing (a reconnecting client re-applies a range).
          const replayed = applyEvents(batched, events);
          expect(batched).toEqual(stepwise);
          expect(replayed).toBe(batched);
          expect(stepwise.blocks.map((block: ConversationBlock) => (block as { content: string }).content)).toEqual(
            turns.map((turn) => turn.join('')),
          );
        },
      ),
    );
  });
});

describe('foldInParts', () => {
  /** Enough blocks that lookups go past the recent window to the id index, a worker thread among them, and metadata. */
  function longLog(turns: number): StreamEvent[] {
    const unsequenced: UnsequencedEvent[] = [];
    for (let turn = 0; turn < turns; turn += 1) {
      unsequenced.push({
        type: 'block_complete',
        conversationId: 'main',
        block: { id: `u${turn}`, type: 'user_message', content: `question ${turn}`, createdAt: 1 },
      });
      unsequenced.push(...textTurn(`a${turn}`, ['an', 'swer']));
      if (turn === 3) {
        unsequenced.push({
          type: 'block_start',
          conversationId: 'main',
          block: {
            id: 'w',
            type: 'subagent',
            subagentId: 'worker',
            name: 'worker',
            input: 'go',
            status: 'running',
            createdAt: 1,
          },
        });
        unsequenced.push(...textTurn('wt', ['in ', 'thread'], 'worker'));
      }
      unsequenced.push({
        type: 'metadata_update',
        conversationId: 'main',
        metadata: { costUsd: 0.5, turnComplete: true },
      });
    }
    // Late updates to early blocks: found through the index, not the recent window.
    unsequenced.push({
      type: 'block_update',
      conversationId: 'main',
      blockId: 'w',
      updates: { status: 'success', output: 'done' },
    });
    unsequenced.push({ type: 'text_delta', conversationId: 'worker', blockId: 'wt', delta: ' (late)' });
    return numbered(unsequenced);
  }

  it('folds a log added in parts (any cuts, parts that overlap) into what one applyEvents over all of it makes', () => {
    const events = longLog(30);
    const whole = applyEvents(emptyConversation(SESSION), events);
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: events.length }), { maxLength: 6 }),
        fc.integer({ min: 0, max: 5 }),
        (cuts, overlap) => {
          const bounds = [0, ...[...cuts].sort((a, b) => a - b), events.length];
          const fold = foldInParts(emptyConversation(SESSION));
          // Each part may repeat the end of the one before (a page read again): repeats change nothing.
          for (let index = 1; index < bounds.length; index += 1)
            fold.add(events.slice(Math.max(0, bounds[index - 1]! - overlap), bounds[index]));
          expect(fold.finish()).toEqual(whole);
        },
      ),
    );
  });

  it('starts from the state given and never changes it; with nothing new added it hands that state back', () => {
    const events = longLog(20);
    const start = applyEvents(emptyConversation(SESSION), events.slice(0, 40));
    const snapshot = structuredClone(start);
    const fold = foldInParts(start);
    fold.add(events.slice(40, 70));
    fold.add(events.slice(70));
    expect(fold.finish()).toEqual(applyEvents(emptyConversation(SESSION), events));
    expect(start).toEqual(snapshot);
    const idle = foldInParts(start);
    idle.add(events.slice(0, 40));
    expect(idle.finish()).toBe(start);
  });

  it('takes no part after finish: the state it handed out stays as it was', () => {
    const events = longLog(5);
    const fold = foldInParts(emptyConversation(SESSION));
    fold.add(events.slice(0, 10));
    const handed = fold.finish();
    const snapshot = structuredClone(handed);
    expect(() => fold.add(events.slice(10))).toThrow(/finished.*foldInParts/);
    expect(handed).toEqual(snapshot);
  });
});
