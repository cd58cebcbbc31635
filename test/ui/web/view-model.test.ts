import { describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation, emptyMetrics } from '../../../src/conversation/index.js';
import type { CheckpointWire } from '../../../src/protocol/index.js';
import {
  chartGeometry,
  chatItems,
  checkpointHeadline,
  connectHelp,
  contextGauge,
  emptySeries,
  filterOptions,
  filterSessions,
  foldedRange,
  foldSeries,
  formatAgo,
  formatCompact,
  formatCost,
  rpcUrlFor,
  sectionShares,
  sessionLabel,
  sessionStats,
  tokenFromSearch,
  upsertSession,
  withoutToken,
} from '../../../src/ui/web/index.js';
import { LogBuilder, sessionInfo } from './events.js';

const draft = sessionInfo({
  sessionId: 'draft-1',
  scope: { kind: 'draft', role: 'dev', project: 'shop', taskSlug: 'checkout' },
  lastActivity: 5_000,
});
const qa = sessionInfo({
  sessionId: 'qa-task-auth-login-in_qa',
  agentType: 'qa',
  scope: { kind: 'task', featureId: 'auth', taskId: 'login', taskState: 'in_qa' },
  lastActivity: 4_000,
});
const dev = sessionInfo({
  sessionId: 'dev-task-auth-login-in_dev',
  scope: { kind: 'task', featureId: 'auth', taskId: 'login', taskState: 'in_dev' },
  status: 'archived',
  lastActivity: 3_000,
});
const imported = sessionInfo({
  sessionId: 'cc-1',
  type: 'claude-code-import',
  agentType: 'claude-code',
  readOnly: true,
  title: 'Plan the release',
  scope: { kind: 'imported', source: 'claude-code', path: '/x.jsonl', nativeSessionId: 'abc' },
  lastActivity: 2_000,
});
const workflow = sessionInfo({
  sessionId: 'wf-1',
  agentType: 'reviewer',
  scope: { kind: 'workflow', harness: 'code-review', agent: 'reviewer' },
});
const all = [draft, qa, dev, imported, workflow];

describe('sessions: filters, labels, stats', () => {
  it('a draft counts under its project and task slug, a task session under its feature, task and state', () => {
    expect(filterSessions(all, { feature: 'auth' }).map((session) => session.sessionId)).toEqual([
      qa.sessionId,
      dev.sessionId,
    ]);
    expect(filterSessions(all, { task: 'checkout' })).toEqual([draft]);
    expect(filterSessions(all, { feature: 'auth', state: 'in_dev' })).toEqual([dev]);
    expect(filterSessions(all, { kind: 'imported', backend: 'claude-code-import' })).toEqual([imported]);
    expect(filterSessions(all, { status: 'archived' })).toEqual([dev]);
    expect(filterSessions(all, { agentType: 'reviewer' })).toEqual([workflow]);
    expect(filterSessions(all, { agentType: 'nobody' })).toEqual([]);
  });

  it('an empty filter value means any; a search keeps only its matches, in list order', () => {
    expect(filterSessions(all, { kind: '' })).toEqual(all);
    expect(filterSessions(all, {}, new Set([imported.sessionId, draft.sessionId]))).toEqual([draft, imported]);
    expect(filterSessions(all, { kind: 'task' }, new Set([imported.sessionId]))).toEqual([]);
  });

  it('filter options are the distinct values present, sorted', () => {
    expect(filterOptions(all, 'kind')).toEqual(['draft', 'imported', 'task', 'workflow']);
    expect(filterOptions(all, 'state')).toEqual(['in_dev', 'in_qa']);
    expect(filterOptions(all, 'backend')).toEqual(['claude-code-import', 'scripted']);
  });

  it('labels a session by its scope unless it has a title', () => {
    expect(sessionLabel(draft)).toMatchObject({ title: 'dev · shop/checkout', kind: 'draft' });
    expect(sessionLabel(qa).title).toBe('qa · auth/login [in_qa]');
    expect(sessionLabel(workflow).title).toBe('code-review · reviewer');
    expect(sessionLabel(imported)).toMatchObject({ title: 'Plan the release', kind: 'imported' });
    expect(sessionLabel(imported).detail).toContain('read only');
    expect(sessionLabel(dev).detail).toContain('archived');
  });

  it('shows reported tokens when the back end reported any, else the stored estimate', () => {
    expect(sessionStats({ ...qa, stats: { totalMessages: 2, totalTokens: 40, totalCompactions: 3 } })).toMatchObject({
      tokens: 40,
      compactions: 3,
      costUsd: 0,
    });
    const metrics = {
      ...emptyMetrics(),
      inputTokens: 1_000,
      outputTokens: 200,
      cacheReadTokens: 50,
      costUsd: 0.25,
      costUnknown: true,
      turns: 4,
    };
    expect(sessionStats({ ...qa, metrics })).toMatchObject({
      tokens: 1_250,
      costUsd: 0.25,
      costUnknown: true,
      costEstimated: false,
      turns: 4,
    });
    expect(sessionStats({ ...qa, metrics: { ...metrics, costEstimated: true } }).costEstimated).toBe(true);
  });

  it('an updated session replaces its old record and the list stays most recent first', () => {
    const moved = { ...imported, lastActivity: 9_000 };
    const list = upsertSession(all, moved);
    expect(list[0]).toBe(moved);
    expect(list.filter((session) => session.sessionId === imported.sessionId)).toHaveLength(1);
    expect(list).toHaveLength(all.length);
  });
});

describe("the chat panel's items", () => {
  it('joins each tool result to its call, keeps a result without a call on its own, and gives a worker its thread', () => {
    const log = new LogBuilder()
      .complete({ type: 'user_message', id: 'u1', content: 'go', createdAt: 1 })
      .start({
        type: 'tool_use',
        id: 't1',
        toolUseId: 'call-1',
        name: 'read_file',
        input: { path: 'a.ts' },
        status: 'running',
        createdAt: 1,
      })
      .complete({
        type: 'tool_result',
        id: 'r1',
        toolUseId: 'call-1',
        content: 'text of a.ts',
        isError: false,
        createdAt: 1,
      })
      .update('t1', { status: 'success' })
      .complete({
        type: 'tool_result',
        id: 'r2',
        toolUseId: 'call-unknown',
        content: 'orphan',
        isError: false,
        createdAt: 1,
      })
      .start({
        type: 'subagent',
        id: 's1',
        subagentId: 'worker-1',
        name: 'tester',
        input: 'write tests',
        status: 'running',
        createdAt: 1,
      })
      .complete({ type: 'assistant_text', id: 'w1', content: 'tests written', createdAt: 1 }, 'worker-1');
    const items = chatItems(applyEvents(emptyConversation('session-1'), log.events));
    expect(items.map((item) => item.key)).toEqual(['u1', 't1', 'r2', 's1']);
    expect(items[1]!.result?.content).toBe('text of a.ts');
    expect(items[1]!.block).toMatchObject({ status: 'success' });
    expect(items[3]!.thread?.map((item) => item.block)).toEqual([
      expect.objectContaining({ id: 'w1', content: 'tests written' }),
    ]);
  });

  it('a thread that contains a worker pointing back at itself is shown once, not forever', () => {
    const log = new LogBuilder()
      .start({ type: 'subagent', id: 's1', subagentId: 'loop', name: 'a', input: '', status: 'running', createdAt: 1 })
      .start(
        { type: 'subagent', id: 's2', subagentId: 'loop', name: 'b', input: '', status: 'running', createdAt: 1 },
        'loop',
      );
    const items = chatItems(applyEvents(emptyConversation('session-1'), log.events));
    expect(items[0]!.thread).toHaveLength(1);
    expect(items[0]!.thread![0]!.thread).toBeUndefined();
  });
});

describe('cost and turns over time', () => {
  it('folds metadata updates: main turns count, worker cost adds up, an unknown price marks the total', () => {
    const log = new LogBuilder()
      .turn('one', 'first answer', 0.01)
      .metadata({ costUsd: 0.005 }, { conversationId: 'worker-1' })
      .metadata({ turnComplete: true }, { conversationId: 'worker-1' })
      .metadata({ costUnknown: true, costUsd: 0 })
      .turn('two', 'second answer', 0.02);
    const series = foldSeries(emptySeries(), log.events);
    expect(series.turns).toBe(2);
    expect(series.costUsd).toBeCloseTo(0.035);
    expect(series.costUnknown).toBe(true);
    expect(series.points.filter((point) => point.turn)).toHaveLength(2);
    expect(series.lastSeq).toBe(log.events.at(-1)!.seq);
  });

  it('is idempotent by seq: a replayed range changes nothing', () => {
    const log = new LogBuilder().turn('one', 'a b c', 0.01).turn('two', 'd e', 0.02);
    const once = foldSeries(emptySeries(), log.events);
    expect(foldSeries(once, log.events)).toBe(once);
    const split = foldSeries(foldSeries(emptySeries(), log.events.slice(0, 7)), log.events.slice(3));
    expect(split).toEqual(once);
  });

  it('draws cumulative cost as a step line in time order, with one tick per turn', () => {
    const points = [
      { at: 3_000, costUsd: 0.02, turn: true },
      { at: 1_000, costUsd: 0.01, turn: true },
      { at: 2_000, costUsd: 0.01, turn: false },
    ];
    const geometry = chartGeometry(points, { width: 104, height: 54, padding: 2 })!;
    expect(geometry.startAt).toBe(1_000);
    expect(geometry.endAt).toBe(3_000);
    expect(geometry.maxCost).toBeCloseTo(0.04);
    // x from 2 to 102; y from 52 (nothing) to 2 (all of it): 0.01, 0.02, then 0.04.
    expect(geometry.costPath).toBe('M2,52 H2 V39.5 H52 V27 H102 V2');
    expect(geometry.turnTicks).toEqual([2, 102]);
    expect(geometry.costArea.endsWith('Z')).toBe(true);
  });

  it('spreads points of one instant by order, and has nothing to draw without points', () => {
    expect(chartGeometry([], { width: 100, height: 50 })).toBeUndefined();
    const burst = chartGeometry(
      [
        { at: 5, costUsd: 1, turn: true },
        { at: 5, costUsd: 1, turn: true },
      ],
      { width: 104, height: 54, padding: 2 },
    )!;
    expect(burst.turnTicks).toEqual([2, 102]);
    const single = chartGeometry([{ at: 5, costUsd: 0, turn: true }], { width: 104, height: 54, padding: 2 })!;
    expect(single.costPath).toBe('M2,52 H102');
  });

  it('draws turns closer than a pixel as one tick: 5,000 turns on a 100-pixel axis make at most 101 ticks across the whole axis', () => {
    const points = Array.from({ length: 5_000 }, (_, index) => ({
      at: 1_000 + index * 10,
      costUsd: 0.001,
      turn: true,
    }));
    const geometry = chartGeometry(points, { width: 104, height: 54, padding: 2 })!;
    expect(geometry.turnTicks.length).toBeGreaterThan(90);
    expect(geometry.turnTicks.length).toBeLessThanOrEqual(101);
    expect(geometry.turnTicks[0]).toBe(2);
    expect(geometry.turnTicks.every((x, index) => index === 0 || x - geometry.turnTicks[index - 1]! >= 0.95)).toBe(
      true,
    );
    expect(geometry.turnTicks.at(-1)).toBeGreaterThan(100);
  });

  it("draws points that land on one x as one step to the last one's cost: 5,000 turns on a 100-pixel axis make a path of at most 1,001 corners that still ends at the top", () => {
    const points = Array.from({ length: 5_000 }, (_, index) => ({
      at: 1_000 + index * 10,
      costUsd: 0.001,
      turn: true,
    }));
    const geometry = chartGeometry(points, { width: 104, height: 54, padding: 2 })!;
    const corners = geometry.costPath.match(/ H/g)!.length;
    expect(corners).toBeGreaterThan(900);
    expect(corners).toBeLessThanOrEqual(1_001);
    expect(geometry.costPath.startsWith('M2,52 H2')).toBe(true);
    // The whole cost is reached at the right edge: the last step goes up to the top of the box.
    expect(geometry.costPath.endsWith(' H102 V2')).toBe(true);
    // Each x appears once, left to right.
    const xs = [...geometry.costPath.matchAll(/ H([\d.]+)/g)].map((match) => Number(match[1]));
    expect(xs.every((x, index) => index === 0 || x > xs[index - 1]!)).toBe(true);
  });
});

describe('context and the request', () => {
  it("puts the compaction threshold on the window's scale and grades the occupancy against it", () => {
    const metrics = { ...emptyMetrics(), lastInputTokens: 50_000, contextWindow: 200_000 };
    const gauge = contextGauge(metrics, { totalTokens: 1, budget: 100_000, threshold: 90_000 });
    expect(gauge).toMatchObject({
      percent: 25,
      thresholdPercent: 45,
      level: 'ok',
      usedTokens: 50_000,
      windowTokens: 200_000,
    });
    expect(contextGauge({ ...metrics, lastInputTokens: 80_000 }, { totalTokens: 1, threshold: 90_000 }).level).toBe(
      'near',
    );
    expect(contextGauge({ ...metrics, lastInputTokens: 95_000 }, { totalTokens: 1, threshold: 90_000 }).level).toBe(
      'over',
    );
    // Without a preview (a native back end) the window's end is the limit.
    expect(contextGauge({ ...metrics, lastInputTokens: 170_000 })).toMatchObject({
      thresholdPercent: undefined,
      level: 'near',
    });
    expect(contextGauge(emptyMetrics())).toMatchObject({ percent: undefined, level: 'unknown' });
  });

  it("lists the request's sections in the request's order with their shares; unknown sections come last", () => {
    const shares = sectionShares({ userPrompt: 10, conversation: 50, extra: 0, role: 20, checkpoint: 10, context: 10 });
    expect(shares.map((share) => share.name)).toEqual([
      'role',
      'context',
      'checkpoint',
      'conversation',
      'userPrompt',
      'extra',
    ]);
    expect(shares.map((share) => share.percent)).toEqual([20, 10, 10, 50, 10, 0]);
    expect(shares[3]!.label).toBe('Recent messages');
    expect(sectionShares(undefined)).toEqual([]);
    expect(sectionShares({ role: 0 })[0]!.percent).toBe(0);
  });
});

describe('checkpoints', () => {
  const checkpoint: CheckpointWire = {
    sessionId: 's',
    version: 2,
    createdAt: '2026-01-17T12:00:00.000Z',
    trigger: 'manual',
    summary: { completed: [], inProgress: [], pending: [], decisions: [], blockers: [] },
    pinned: [],
    liveHandles: [],
    covers: {
      fromSeq: 12,
      throughSeq: 40,
      messageCount: 9,
      oldestMessageTimestamp: '2026-01-17T10:00:00.000Z',
      newestMessageTimestamp: '2026-01-17T11:55:00.000Z',
    },
    tokens: { checkpoint: 900, lastCompactionInput: 20_000, totalSaved: 19_100 },
  };

  it('says what a compaction folded in: the message count, the seq range and the time span', () => {
    expect(foldedRange(checkpoint, { utc: true })).toBe(
      '9 messages (seq 12–40), 2026-01-17 10:00:00 → 2026-01-17 11:55:00',
    );
    expect(foldedRange({ ...checkpoint, covers: { throughSeq: 5, messageCount: 1 } })).toBe('1 message (up to seq 5)');
  });

  it('names the summarizer that wrote it, when the checkpoint records one', () => {
    expect(checkpointHeadline(checkpoint)).toBe('v2 · manual · 900 tokens · saved 19,100');
    expect(checkpointHeadline({ ...checkpoint, summarizer: { kind: 'structural' } })).toBe(
      'v2 · manual · structural · 900 tokens · saved 19,100',
    );
    expect(checkpointHeadline({ ...checkpoint, summarizer: { kind: 'structural', fallback: true } })).toContain(
      '· structural (model failed) ·',
    );
    expect(
      checkpointHeadline({
        ...checkpoint,
        summarizer: { kind: 'model', backend: 'anthropic-api', model: 'claude-sonnet-4-5' },
      }),
    ).toContain('· anthropic-api claude-sonnet-4-5 ·');
  });
});

describe('connecting', () => {
  it('reads the token from the page address and takes it out again', () => {
    expect(tokenFromSearch('?token=abc123&x=1')).toBe('abc123');
    expect(tokenFromSearch('?token=')).toBeUndefined();
    expect(tokenFromSearch('')).toBeUndefined();
    expect(withoutToken('http://127.0.0.1:7433/?token=abc#top')).toBe('http://127.0.0.1:7433/#top');
  });

  it('connects back to the server that served the page', () => {
    expect(rpcUrlFor({ protocol: 'http:', host: '127.0.0.1:7433' })).toBe('ws://127.0.0.1:7433/rpc');
    expect(rpcUrlFor({ protocol: 'https:', host: 'parley.example' })).toBe('wss://parley.example/rpc');
  });

  it('tells a user without a token where the token is, and one with a refused token why', () => {
    const missing = connectHelp('missing', 'http://127.0.0.1:7433');
    expect(missing.lines.join(' ')).toMatch(/server\.json/);
    expect(missing.lines.join(' ')).toContain('http://127.0.0.1:7433/?token=<token>');
    expect(connectHelp('refused', 'http://x').title).toMatch(/refused/);
  });
});

describe('formatting', () => {
  it('costs, counts and ages read as a user expects', () => {
    expect(formatCost(0.0421)).toBe('$0.0421');
    expect(formatCost(12.3)).toBe('$12.30');
    expect(formatCost(0, true)).toBe('$0.00+');
    expect(formatCost(4.5, false, true)).toBe('~$4.50');
    expect(formatCompact(950)).toBe('950');
    expect(formatCompact(1_250)).toBe('1.3k');
    expect(formatCompact(48_000)).toBe('48k');
    expect(formatCompact(2_000_000)).toBe('2M');
    expect(formatAgo(10_000, 12_000)).toBe('just now');
    expect(formatAgo(0, 5 * 60_000)).toBe('5 min ago');
    expect(formatAgo(0, 3 * 86_400_000)).toBe('3 d ago');
  });
});
