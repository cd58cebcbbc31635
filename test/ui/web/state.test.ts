import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation, type StreamEvent } from '../../../src/conversation/index.js';
import type { DraftStatus, GoalStatus } from '../../../src/protocol/index.js';
import {
  canPrompt,
  emptySeries,
  firstMessageTarget,
  foldHistory,
  HistoryFold,
  initialState,
  reduce,
  type AppAction,
  type AppState,
  type FoldedHistory,
} from '../../../src/ui/web/index.js';
import { LogBuilder, sessionInfo } from './events.js';

function run(state: AppState, ...actions: AppAction[]): AppState {
  return actions.reduce(reduce, state);
}

const log = new LogBuilder('session-1')
  .turn('first question', 'a streamed answer in several words', 0.01)
  .turn('second question', 'another answer', 0.02);

describe("the selected session's conversation", () => {
  it('is rebuilt with applyEvent from its history plus what arrived live while it loaded, nothing doubled', () => {
    const events = log.events;
    // The live subscription delivered the tail while the history was read; the history overlaps it.
    const state = run(
      initialState(),
      { type: 'select', sessionId: 'session-1' },
      { type: 'events', sessionId: 'session-1', events: events.slice(10) },
      { type: 'history_loaded', sessionId: 'session-1', events: events.slice(0, 14) },
    );
    expect(state.view?.loading).toBe(false);
    expect(state.view?.pending).toEqual([]);
    expect(state.view?.conversation).toEqual(applyEvents(emptyConversation('session-1'), events));
    expect(state.view?.series.turns).toBe(2);
  });

  it('after the active branch changed, keeps showing the old one until the new one is read, then shows only the new one and what came live meanwhile', () => {
    const events = log.events;
    // The branch left: both turns. The new one: the first turn, then a third question (seqs after the log's end).
    const third = new LogBuilder('session-1')
      .turn('third question', 'a new answer', 0.03)
      .events.map((event, index) => ({
        ...event,
        seq: events.length + index,
      }));
    const loaded = run(
      initialState(),
      { type: 'select', sessionId: 'session-1' },
      { type: 'history_loaded', sessionId: 'session-1', events },
      { type: 'history_reload', sessionId: 'session-1' },
      // Live, while the branch is read again: the next turn of the new branch.
      { type: 'events', sessionId: 'session-1', events: third.slice(0, 3) },
    );
    expect(loaded.view?.reloading).toBe(true);
    expect(loaded.view?.conversation.blocks.filter((block) => block.type === 'user_message')).toHaveLength(2);
    const firstTurn = events.slice(
      0,
      events.findIndex(
        (event, index) => index > 0 && event.type === 'block_complete' && event.block.type === 'user_message',
      ),
    );
    const after = run(
      loaded,
      { type: 'history_loaded', sessionId: 'session-1', events: [...firstTurn, ...third.slice(0, 1)] },
      { type: 'events', sessionId: 'session-1', events: third.slice(3) },
    );
    expect(after.view?.reloading).toBeUndefined();
    expect(after.view?.conversation).toEqual(applyEvents(emptyConversation('session-1'), [...firstTurn, ...third]));
    expect(after.view?.trace.runs).toEqual([
      { first: 0, last: firstTurn.length - 1 },
      { first: events.length, last: events.length + third.length - 1 },
    ]);
  });

  it('gives the same conversation however the log is split between history and live delivery (property)', () => {
    const events = log.events;
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: events.length }),
        fc.integer({ min: 0, max: events.length }),
        fc.integer({ min: 1, max: 5 }),
        (historyEnd, liveStart, chunk) => {
          let state = run(initialState(), { type: 'select', sessionId: 'session-1' });
          const live = events.slice(Math.min(liveStart, historyEnd));
          // Live events come in chunks; some before the history answer, the rest after.
          const chunks: StreamEvent[][] = [];
          for (let index = 0; index < live.length; index += chunk) chunks.push(live.slice(index, index + chunk));
          const before = Math.floor(chunks.length / 2);
          for (const part of chunks.slice(0, before))
            state = reduce(state, { type: 'events', sessionId: 'session-1', events: part });
          state = reduce(state, {
            type: 'history_loaded',
            sessionId: 'session-1',
            events: events.slice(0, historyEnd),
          });
          for (const part of chunks.slice(before))
            state = reduce(state, { type: 'events', sessionId: 'session-1', events: part });
          expect(state.view?.conversation).toEqual(applyEvents(emptyConversation('session-1'), events));
          expect(state.view?.series.turns).toBe(2);
        },
      ),
    );
  });

  it('takes a history folded page by page as it arrived (foldHistory, HistoryFold), then what came live meanwhile: the same as folding it all at once (property)', () => {
    const events = log.events;
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: events.length }), { maxLength: 4 }),
        fc.integer({ min: 0, max: events.length }),
        (cuts, liveStart) => {
          const bounds = [0, ...[...cuts].sort((a, b) => a - b), events.length];
          let folded: FoldedHistory = { conversation: emptyConversation('session-1'), series: emptySeries() };
          for (let index = 1; index < bounds.length; index += 1)
            folded = foldHistory(folded, events.slice(bounds[index - 1], bounds[index]));
          // The controller's fold of the pages as they arrive makes the same.
          const pages = new HistoryFold({ conversation: emptyConversation('session-1'), series: emptySeries() });
          for (let index = 1; index < bounds.length; index += 1)
            pages.add(events.slice(bounds[index - 1], bounds[index]));
          expect(pages.finish()).toEqual(folded);
          const state = run(
            initialState(),
            { type: 'select', sessionId: 'session-1' },
            { type: 'events', sessionId: 'session-1', events: events.slice(liveStart) },
            { type: 'history_loaded', sessionId: 'session-1', events, folded },
          );
          const whole = run(
            initialState(),
            { type: 'select', sessionId: 'session-1' },
            { type: 'history_loaded', sessionId: 'session-1', events },
          );
          expect(state.view?.conversation).toEqual(whole.view?.conversation);
          expect(state.view?.series).toEqual(whole.view?.series);
          expect(state.view?.series.turns).toBe(2);
        },
      ),
    );
  });

  it('drops what arrives for a session that is no longer selected', () => {
    const state = run(
      initialState(),
      { type: 'select', sessionId: 'session-1' },
      { type: 'select', sessionId: 'session-2' },
      { type: 'history_loaded', sessionId: 'session-1', events: log.events },
    );
    expect(state.view).toMatchObject({ sessionId: 'session-2', loading: true });
    expect(state.view?.conversation.blocks).toEqual([]);
  });

  it('keeps unchanged blocks as the same objects, so the panel rebuilds only what changed', () => {
    const loaded = run(
      initialState(),
      { type: 'select', sessionId: 'session-1' },
      { type: 'history_loaded', sessionId: 'session-1', events: log.events.slice(0, -3) },
    );
    const next = reduce(loaded, { type: 'events', sessionId: 'session-1', events: log.events.slice(-3) });
    expect(next.view!.conversation.blocks[0]).toBe(loaded.view!.conversation.blocks[0]);
  });
});

describe('compaction, checkpoints and the request preview', () => {
  const selected = run(initialState(), { type: 'select', sessionId: 'session-1' });

  it('shows a compaction while it runs and its outcome after', () => {
    const running = reduce(selected, {
      type: 'compaction_started',
      payload: { sessionId: 'session-1', trigger: 'manual', tokensBefore: 12_000 },
      at: 5,
    });
    expect(running.view?.compaction).toEqual({ trigger: 'manual', tokensBefore: 12_000, startedAt: 5 });
    const done = reduce(running, {
      type: 'compaction_completed',
      payload: { sessionId: 'session-1', trigger: 'manual', version: 3, tokensBefore: 12_000, tokensAfter: 2_000 },
    });
    expect(done.view?.compaction).toBeUndefined();
    expect(done.view?.lastCompaction).toEqual({ ok: true, version: 3, tokensBefore: 12_000, tokensAfter: 2_000 });
    const failed = reduce(running, {
      type: 'compaction_failed',
      payload: { sessionId: 'session-1', trigger: 'manual', code: 'X', message: 'the summarizer failed' },
    });
    expect(failed.view?.lastCompaction).toEqual({ ok: false, message: 'the summarizer failed' });
    expect(
      reduce(selected, {
        type: 'compaction_started',
        payload: { sessionId: 'other', trigger: 'auto', tokensBefore: 1 },
        at: 1,
      }),
    ).toBe(selected);
  });

  it("a compaction that started before the page listened is shown from get_session's answer, timed from the server's startedAt, and clears as usual", () => {
    const startedAt = '2026-11-21T07:00:00.000Z';
    const running = reduce(selected, {
      type: 'compaction_status',
      sessionId: 'session-1',
      compaction: { startedAt, trigger: 'auto', tokensBefore: 9_000, summarizer: { kind: 'model' } },
    });
    expect(running.view?.compaction).toEqual({
      trigger: 'auto',
      tokensBefore: 9_000,
      startedAt: Date.parse(startedAt),
    });
    // Before the server has read the history, the tokens are not known yet.
    const early = reduce(selected, {
      type: 'compaction_status',
      sessionId: 'session-1',
      compaction: { startedAt, trigger: 'manual' },
    });
    expect(early.view?.compaction).toEqual({ trigger: 'manual', startedAt: Date.parse(startedAt) });
    const done = reduce(running, {
      type: 'compaction_completed',
      payload: { sessionId: 'session-1', trigger: 'auto', version: 1, tokensBefore: 9_000, tokensAfter: 1_000 },
    });
    expect(done.view?.compaction).toBeUndefined();
    // An answer without one clears a pill whose end the page missed (it was disconnected).
    expect(
      reduce(running, { type: 'compaction_status', sessionId: 'session-1', compaction: undefined }).view?.compaction,
    ).toBeUndefined();
    expect(
      reduce(selected, { type: 'compaction_status', sessionId: 'other', compaction: { startedAt, trigger: 'auto' } }),
    ).toBe(selected);
  });

  it('a failed preview replaces an older one with its reason', () => {
    const preview = { systemPrompt: 's', userPrompt: '', totalTokens: 10, sections: { role: 10 } };
    const shown = reduce(selected, { type: 'preview', sessionId: 'session-1', result: preview });
    const failed = reduce(shown, { type: 'preview_failed', sessionId: 'session-1', error: 'native back end' });
    expect(failed.view?.preview).toBeUndefined();
    expect(failed.view?.previewError).toBe('native back end');
  });
});

describe('the list, search and the draft', () => {
  const one = sessionInfo({ sessionId: 'one', scope: { kind: 'draft', role: 'dev' }, lastActivity: 1 });
  const two = sessionInfo({ sessionId: 'two', scope: { kind: 'draft', role: 'qa' }, lastActivity: 2 });

  it('a listing keeps sessions learned from live updates while it was read', () => {
    const state = run(
      initialState(),
      { type: 'session_updated', session: two },
      { type: 'sessions_loaded', sessions: [one] },
    );
    expect(state.sessions.map((session) => session.sessionId)).toEqual(['two', 'one']);
    expect(state.sessionsLoaded).toBe(true);
  });

  it('an answer to an older search does not replace the newer one', () => {
    const state = run(
      initialState(),
      { type: 'search_started', query: 'a' },
      { type: 'search_started', query: 'ab' },
      { type: 'search_done', query: 'a', sessionIds: ['one'] },
    );
    expect(state.search).toMatchObject({ query: 'ab', running: true });
    const done = reduce(state, { type: 'search_done', query: 'ab', sessionIds: ['two'] });
    expect([...done.search.matches!]).toEqual(['two']);
    expect(reduce(done, { type: 'search_cleared' }).search).toEqual({ query: '', running: false });
  });

  it("the prompt box belongs to this page's draft; its turn ends with the draft_status push", () => {
    const status: DraftStatus = {
      sessionId: 'one',
      role: 'dev',
      project: 'p',
      taskSlug: 't',
      channelId: 'c',
      backend: 'scripted',
      status: 'active',
      turnCount: 0,
      cumulativeCostUsd: 0,
      costUnknown: false,
      lastInputTokens: 0,
      lastOutputTokens: 0,
      contextWindow: 0,
      maxOutputTokens: 0,
      contextPct: null,
      startedAt: 'x',
      lastActivityAt: 'x',
      taskDir: '/tmp/task',
      turnRunning: false,
      activeAgents: 0,
    };
    let state = run(initialState(), { type: 'draft', status }, { type: 'select', sessionId: 'two' });
    expect(canPrompt(state)).toBe(false);
    state = run(state, { type: 'select', sessionId: 'one' }, { type: 'turn_started' });
    expect(canPrompt(state)).toBe(true);
    expect(state.turnRunning).toBe(true);
    state = reduce(state, {
      type: 'draft_notification',
      status: { sessionId: 'one', role: 'dev', turnCount: 1, costUsd: 0.5, contextPct: 12, lastActivity: 'y' },
    });
    expect(state.turnRunning).toBe(false);
    expect(state.draft).toMatchObject({ turnCount: 1, cumulativeCostUsd: 0.5, contextPct: 12 });
    expect(reduce(state, { type: 'draft', status: undefined }).draft).toBeUndefined();
    const goal: GoalStatus = {
      goalId: 'g',
      condition: 'tests pass',
      judge: { kind: 'model' },
      budget: { turns: 5 },
      used: { turns: 1, costUsd: 0, timeMs: 0 },
      startedAt: 'x',
      state: 'running',
      judgements: [],
    };
    expect(reduce(state, { type: 'goal_status', sessionId: 'one', goal }).draft?.goal).toEqual(goal);
    expect(reduce(state, { type: 'goal_status', sessionId: 'other', goal }).draft?.goal).toBeUndefined();
  });

  it('keeps the newest four notices', () => {
    let state = initialState();
    for (let index = 0; index < 6; index += 1)
      state = reduce(state, { type: 'notice', tone: 'info', text: `n${index}` });
    expect(state.notices.map((notice) => notice.text)).toEqual(['n2', 'n3', 'n4', 'n5']);
    expect(reduce(state, { type: 'dismiss', id: state.notices[0]!.id }).notices).toHaveLength(3);
  });

  it('a failed first connection is remembered until one succeeds', () => {
    const failed = reduce(initialState(), { type: 'connection', state: 'disconnected', error: 'refused' });
    expect(failed.connectError).toBe('refused');
    const connected = reduce(failed, { type: 'connection', state: 'connected' });
    expect(connected.connectError).toBeUndefined();
    expect(connected.everConnected).toBe(true);
  });
});

describe('firstMessageTarget', () => {
  const shop = {
    name: 'shop',
    path: '/p/shop',
    dataDir: '/p/shop/.parley',
    current: true,
    defaultRole: 'product-analyst',
  };
  const docs = { name: 'docs', path: '/p/docs', dataDir: '/p/docs/.parley', current: false, defaultRole: 'dev' };
  const connected = run(
    initialState(),
    { type: 'connection', state: 'connected' },
    { type: 'catalog', projects: [shop, docs], project: 'shop' },
  );

  it("offers a first message only when connected, with a project chosen and no draft; the role is the chosen project's", () => {
    expect(firstMessageTarget(connected)).toEqual({ project: 'shop', role: 'product-analyst' });
    expect(firstMessageTarget(run(connected, { type: 'catalog', project: 'docs' }))).toEqual({
      project: 'docs',
      role: 'dev',
    });
    expect(firstMessageTarget(run(connected, { type: 'connection', state: 'reconnecting' }))).toBeUndefined();
    expect(firstMessageTarget(run(initialState(), { type: 'connection', state: 'connected' }))).toBeUndefined();
    const status = {
      sessionId: 's',
      role: 'dev',
      project: 'shop',
      taskSlug: 't',
      status: 'active',
      turnRunning: false,
    } as DraftStatus;
    expect(firstMessageTarget(run(connected, { type: 'draft', status }))).toBeUndefined();
  });

  it("drafts into the form's chosen task only while that task is in the chosen project's list", () => {
    const withTask = run(connected, {
      type: 'catalog',
      tasks: [
        {
          project: 'shop',
          slug: 'checkout',
          title: 'Checkout',
          description: '',
          state: 'open',
          taskDir: '/t',
          createdAt: '2026-11-21T07:00:00.000Z',
          updatedAt: '2026-11-21T07:00:00.000Z',
        },
      ],
      task: 'checkout',
    });
    expect(firstMessageTarget(withTask)).toEqual({ project: 'shop', role: 'product-analyst', task: 'checkout' });
    // Another project chosen: its task list replaces the old one, so the old task is not used.
    expect(firstMessageTarget(run(withTask, { type: 'catalog', project: 'docs', tasks: [] }))).toEqual({
      project: 'docs',
      role: 'dev',
    });
  });
});
