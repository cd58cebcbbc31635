import { describe, expect, it } from 'vitest';
import type { ConversationBlock, StreamEvent } from '../../../src/conversation/index.js';
import type { DraftStatus, GoalStatus } from '../../../src/protocol/index.js';
import {
  contextLevel,
  initialViewState,
  openBlocks,
  reduceView,
  titleText,
  type HistoryItem,
  type ViewAction,
  type ViewState,
} from '../../../src/ui/tui/index.js';

const sessionId = 'session-1';
const at = 1_700_000_000_000;

function status(overrides: Partial<DraftStatus> = {}): DraftStatus {
  return {
    sessionId,
    role: 'dev',
    project: 'demo',
    taskSlug: 'task-1',
    channelId: 'tui-1',
    backend: 'scripted',
    status: 'active',
    turnCount: 0,
    cumulativeCostUsd: 0,
    costUnknown: false,
    lastInputTokens: 0,
    lastOutputTokens: 0,
    contextWindow: 200_000,
    maxOutputTokens: 8_192,
    contextPct: 0,
    startedAt: new Date(at).toISOString(),
    lastActivityAt: new Date(at).toISOString(),
    taskDir: '/tmp/task',
    turnRunning: false,
    activeAgents: 0,
    ...overrides,
  };
}

const user = (seq: number, content: string): StreamEvent => ({
  sessionId,
  conversationId: 'main',
  seq,
  at,
  type: 'block_complete',
  block: { id: `user-${seq}`, type: 'user_message', content, createdAt: at },
});
const start = (seq: number, block: ConversationBlock, conversationId = 'main'): StreamEvent => ({
  sessionId,
  conversationId,
  seq,
  at,
  type: 'block_start',
  block,
});
const delta = (seq: number, blockId: string, text: string): StreamEvent => ({
  sessionId,
  conversationId: 'main',
  seq,
  at,
  type: 'text_delta',
  blockId,
  delta: text,
});
const complete = (seq: number, block: ConversationBlock, conversationId = 'main'): StreamEvent => ({
  sessionId,
  conversationId,
  seq,
  at,
  type: 'block_complete',
  block,
});
const turnEnd = (seq: number, costUsd = 0, conversationId = 'main'): StreamEvent => ({
  sessionId,
  conversationId,
  seq,
  at,
  type: 'metadata_update',
  metadata: {
    turnComplete: true,
    costUsd,
    usage: { inputTokens: 1_000, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 },
    contextWindow: 200_000,
  },
});
const text = (id: string, content = ''): ConversationBlock => ({ id, type: 'assistant_text', content, createdAt: at });

function run(actions: ViewAction[], state = initialViewState()): ViewState {
  return actions.reduce(reduceView, state);
}

function drafted(events: StreamEvent[] = []): ViewState {
  return run([
    { type: 'draft_loading', status: status() },
    { type: 'history_loaded', sessionId, events, historyLimit: 400, now: at },
  ]);
}

const live = (events: StreamEvent[]): ViewAction => ({ type: 'events', sessionId, events, now: at + 5_000 });
const printedBlocks = (state: ViewState) =>
  state.printed
    .filter((item): item is HistoryItem & { kind: 'block' } => item.kind === 'block')
    .map((item) => item.block);

describe('reduceView', () => {
  it('keeps a block in flight open and prints it once, complete, when it completes', () => {
    let state = drafted([user(0, 'hi')]);
    state = run([live([start(1, text('a')), delta(2, 'a', 'Hel'), delta(3, 'a', 'lo')])], state);
    expect(state.open).toEqual(['a']);
    expect(openBlocks(state).map((block) => (block as { content: string }).content)).toEqual(['Hello']);
    expect(printedBlocks(state).map((block) => block.id)).toEqual(['user-0']);
    state = run([live([complete(4, text('a', 'Hello'))])], state);
    expect(state.open).toEqual([]);
    expect(printedBlocks(state).map((block) => [block.id, (block as { content: string }).content])).toEqual([
      ['user-0', 'hi'],
      ['a', 'Hello'],
    ]);
  });

  it('changes nothing for events it already has: a replayed range prints nothing twice', () => {
    const events = [
      user(0, 'hi'),
      start(1, text('a')),
      delta(2, 'a', 'Hello'),
      complete(3, text('a', 'Hello')),
      turnEnd(4),
    ];
    const once = run([live(events.slice(2))], drafted(events.slice(0, 2)));
    const twice = run([live(events), live(events.slice(1))], once);
    expect(twice).toBe(once);
    expect(printedBlocks(twice)).toHaveLength(2);
  });

  it('prints a block that starts already complete (a tool result) at once', () => {
    const result: ConversationBlock = {
      id: 'r',
      type: 'tool_result',
      toolUseId: 't',
      content: 'ok',
      isError: false,
      createdAt: at,
      completedAt: at,
    };
    const state = run([live([start(1, result)])], drafted([user(0, 'go')]));
    expect(state.open).toEqual([]);
    expect(printedBlocks(state).map((block) => block.id)).toEqual(['user-0', 'r']);
  });

  it('prints the newest blocks of a long history and says how many earlier ones are not shown', () => {
    const events = Array.from({ length: 10 }, (_, seq) => user(seq, `message ${seq}`));
    const state = run([
      { type: 'draft_loading', status: status() },
      { type: 'history_loaded', sessionId, events, historyLimit: 3, now: at },
    ]);
    expect(state.printed[0]).toMatchObject({
      kind: 'note',
      lines: [{ text: expect.stringContaining('… 7 earlier blocks of this conversation are not shown') }],
    });
    expect(printedBlocks(state).map((block) => block.id)).toEqual(['user-7', 'user-8', 'user-9']);
  });

  it('holds live events while the history loads and merges them in seq order, without doubles', () => {
    let state = run([{ type: 'draft_loading', status: status() }]);
    state = run([live([delta(3, 'a', ' world'), complete(4, text('a', 'Hello world'))])], state);
    expect(state.pending).toHaveLength(2);
    state = run(
      [
        {
          type: 'history_loaded',
          sessionId,
          events: [user(0, 'hi'), start(1, text('a')), delta(2, 'a', 'Hello'), delta(3, 'a', ' world')],
          historyLimit: 400,
          now: at,
        },
      ],
      state,
    );
    expect(state.loading).toBe(false);
    expect(printedBlocks(state).map((block) => (block as { content: string }).content)).toEqual(['hi', 'Hello world']);
  });

  it('runs a turn from a sent message or from a user message in the log until a main turnComplete, never from a status snapshot', () => {
    let state = drafted([user(0, 'hi'), turnEnd(1)]);
    expect(state.turn).toBeUndefined();
    state = run([{ type: 'draft_status', status: status({ turnRunning: true }) }], state);
    expect(state.turn).toBeUndefined();
    state = run([{ type: 'turn_started', at: at + 1 }], state);
    expect(state.turn).toEqual({ startedAt: at + 1, afterSeq: 1 });
    state = run([live([user(2, 'again'), turnEnd(3, 0, 'worker-1')])], state);
    expect(state.turn).toBeDefined();
    state = run([live([turnEnd(4)])], state);
    expect(state.turn).toBeUndefined();
    // Another terminal on the channel sent a message.
    state = run([live([user(5, 'from elsewhere')])], state);
    expect(state.turn).toEqual({ startedAt: at + 5_000, afterSeq: 4 });
    // A history whose last user message has no end is a turn in flight.
    expect(drafted([user(0, 'hi'), turnEnd(1), user(2, 'cut')]).turn).toEqual({ startedAt: at, afterSeq: 1 });
  });

  it("follows the log for the title bar between draft_status pushes, and adds up each worker thread's cost", () => {
    const subagent: ConversationBlock = {
      id: 's',
      type: 'subagent',
      subagentId: 'dev-1',
      name: 'dev',
      input: 'do it',
      status: 'running',
      createdAt: at,
    };
    const state = run(
      [live([start(1, subagent), turnEnd(2, 0.03, 'dev-1'), turnEnd(3, 0.2)])],
      drafted([user(0, 'hi')]),
    );
    expect(state.draft).toMatchObject({ turnCount: 1, costUsd: 0.23, contextPct: 0.5 });
    expect(state.threadCosts).toEqual({ 'dev-1': 0.03 });
    expect(state.open).toEqual(['s']);
  });

  it('prints what was in flight when the draft closes', () => {
    const state = run(
      [live([start(1, text('a')), delta(2, 'a', 'half an answer')]), { type: 'draft_closed' }],
      drafted([user(0, 'hi')]),
    );
    expect(state.draft).toBeUndefined();
    expect(printedBlocks(state).map((block) => (block as { content: string }).content)).toEqual([
      'hi',
      'half an answer',
    ]);
  });
});

describe('contextLevel', () => {
  it('is yellow past 80% of the way to the compaction point and red from 95%; the window is the point when none is known', () => {
    expect(contextLevel(30, 45)).toBe('normal');
    expect(contextLevel(36, 45)).toBe('warning');
    expect(contextLevel(42.75, 45)).toBe('critical');
    expect(contextLevel(79, undefined)).toBe('normal');
    expect(contextLevel(80, undefined)).toBe('warning');
    expect(contextLevel(96, undefined)).toBe('critical');
    expect(contextLevel(null, 45)).toBe('normal');
  });
});

describe('goals in the view', () => {
  const goal = (overrides: Partial<GoalStatus> = {}): GoalStatus => ({
    goalId: 'goal-1',
    condition: 'the tests pass',
    judge: { kind: 'command', command: 'npm test' },
    budget: { turns: 10, costUsd: 1 },
    used: { turns: 2, costUsd: 0.25, timeMs: 1_000 },
    startedAt: new Date(at).toISOString(),
    state: 'running',
    judgements: [],
    ...overrides,
  });

  it('the title bar shows the running goal and its budget, then how it ended', () => {
    let state = run([{ type: 'draft_loading', status: status() }]);
    state = run([{ type: 'goal_status', sessionId, goal: goal() }], state);
    expect(titleText(state)).toContain('| Goal: the tests pass 2/10 turns, $0.25/$1.00');
    state = run([{ type: 'goal_status', sessionId: 'another', goal: goal({ condition: 'other' }) }], state);
    expect(titleText(state)).toContain('the tests pass');
    const ended = goal({ state: 'ended', ended: { reason: 'turns', message: 'Out of budget', at: 'x' } });
    state = run([{ type: 'draft_status', status: status({ goal: ended }) }], state);
    expect(titleText(state)).toContain('| Goal stopped (turns): the tests pass');
  });
});
