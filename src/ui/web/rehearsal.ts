import type { StreamEvent } from '../../conversation/index.js';
import type { SessionInfo } from '../../protocol/index.js';
import type { Actions } from './controller.js';
import { h } from './dom.js';
import { emptyView, HistoryFold, initialState, reduce, type AppState } from './state.js';
import { ChatView } from './views/chat-view.js';
import { InspectorView } from './views/inspector-view.js';

/**
 * A dress rehearsal of opening a session, run once while the page is idle before any session is
 * opened: a small made-up session (a block of each kind the chat draws) is folded, reduced and
 * drawn by a chat view and an inspector of its own, laid out in a hidden container and thrown away
 * in the same task. The browser compiles the draw code lazily, the first time it runs: without
 * this, the first session a user opens paid that for its blocks and its inspector, on the critical
 * path of its first frame (bench/web.bench.ts opens a session after the rehearsal). Nothing is
 * painted (the container is removed before the task ends, so no frame ever contains it), the
 * page's own views and state are not touched, and no request is made.
 */

/** The made-up session's id: the rehearsal's elements can never be mistaken for a real session's. */
const SESSION_ID = 'parley-rehearsal';

/** What the rehearsal's views may ask for: nothing (nobody can click a view that is never shown). */
const noActions = new Proxy({}, { get: () => () => undefined }) as Actions;

/** The steps, each small enough to run in one idle slice; `rehearseOpening` runs them all. */
export const REHEARSAL_STEPS: ReadonlyArray<() => void> = [foldAndReduce, drawOnce];

/** Runs every step at once (tests; a page with no idle callbacks). */
export function rehearseOpening(): void {
  for (const step of REHEARSAL_STEPS) step();
}

let rehearsed: AppState | undefined;

/** Folds the sample log the way the controller folds its pages, and reduces it into a state as `history_loaded` does. */
function foldAndReduce(): void {
  const events = sampleEvents();
  const empty = emptyView(SESSION_ID);
  const history = new HistoryFold({ conversation: empty.conversation, series: empty.series });
  // In two pages, as the controller folds a history.
  history.add(events.slice(0, events.length >> 1));
  history.add(events.slice(events.length >> 1));
  const folded = history.finish();
  let state = reduce(initialState('present'), { type: 'sessions_loaded', sessions: [sampleSession()] });
  state = reduce(state, { type: 'select', sessionId: SESSION_ID });
  rehearsed = reduce(state, { type: 'history_loaded', sessionId: SESSION_ID, events, folded });
}

/** Draws the folded sample with views of its own in a hidden container, forces its layout, and removes it. */
function drawOnce(): void {
  if (!rehearsed) foldAndReduce();
  const state = rehearsed!;
  rehearsed = undefined;
  const chat = new ChatView(noActions);
  const inspector = new InspectorView(noActions);
  // Laid out like the real columns (same classes), where nothing can see or reach it.
  const stage = h('main', { class: 'layout', 'aria-hidden': 'true', inert: true }, chat.element, inspector.element);
  stage.style.cssText =
    'position:fixed;left:-100000px;top:0;width:1440px;height:900px;visibility:hidden;pointer-events:none;contain:strict';
  document.body.append(stage);
  try {
    chat.update(state);
    inspector.update(state);
    void stage.offsetHeight;
  } finally {
    stage.remove();
  }
}

function sampleSession(): SessionInfo {
  return {
    sessionId: SESSION_ID,
    scope: { kind: 'workflow', harness: 'rehearsal', agent: 'rehearsal' },
    type: 'scripted',
    agentProfileReference: 'rehearsal',
    agentType: 'rehearsal',
    status: 'active',
    createdAt: 0,
    updatedAt: 0,
    settings: {},
    stats: { totalMessages: 0, totalTokens: 0, totalCompactions: 0 },
  };
}

/** A short log with a block of each kind the chat draws differently, in the shapes the server sends. */
function sampleEvents(): StreamEvent[] {
  const events: StreamEvent[] = [];
  const at = 1_700_000_000_000;
  const push = (event: Record<string, unknown>, conversationId = 'main') =>
    events.push({
      sessionId: SESSION_ID,
      conversationId,
      seq: events.length,
      at: at + events.length * 1_000,
      ...event,
    } as StreamEvent);
  const complete = (block: Record<string, unknown>, conversationId?: string) =>
    push({ type: 'block_complete', block: { createdAt: at, ...block } }, conversationId);
  const turnEnd = () =>
    push({
      type: 'metadata_update',
      metadata: {
        costUsd: 0.001,
        turnComplete: true,
        usage: { inputTokens: 1_000, outputTokens: 80, cacheReadTokens: 0, cacheWriteTokens: 0 },
        contextWindow: 200_000,
        model: 'rehearsal',
      },
    });
  // Two plain turns, then one with every kind: twelve items, all in the first step of the draw (FIRST_STEP in chat-view.ts).
  for (let turn = 0; turn < 3; turn += 1) {
    complete({
      type: 'user_message',
      id: `u${turn}`,
      content: turn === 0 ? 'A plain question' : `Question ${turn}: what **changed** in \`parse\`?`,
    });
    const full = turn === 2;
    if (full) complete({ type: 'thinking', id: `k${turn}`, content: 'Reading the parser first.' });
    complete({
      type: 'assistant_text',
      id: `a${turn}`,
      content: `Answer ${turn}: the parser now **rejects** empty input and names the \`value\` it refused.\n\n- [x] reject\n- [ ] changelog\n\n| case | result |\n|---|---|\n| empty | rejected |\n\n\`\`\`\nplain code\n\`\`\``,
    });
    if (full) {
      complete({
        type: 'tool_use',
        id: `t${turn}`,
        toolUseId: `read-${turn}`,
        name: 'read_file',
        input: { path: 'src/parse.ts' },
        status: 'success',
      });
      complete({
        type: 'tool_result',
        id: `r${turn}`,
        toolUseId: `read-${turn}`,
        content: 'export const value = 1;\n',
        isError: false,
      });
      complete({
        type: 'tool_use',
        id: `e${turn}`,
        toolUseId: `edit-${turn}`,
        name: 'Edit',
        input: { file_path: 'src/parse.ts', old_string: 'const value = 1;', new_string: 'const value = 2;' },
        status: 'success',
      });
      complete({
        type: 'tool_result',
        id: `er${turn}`,
        toolUseId: `edit-${turn}`,
        content: 'Edited src/parse.ts',
        isError: false,
      });
      complete({
        type: 'tool_use',
        id: `b${turn}`,
        toolUseId: `bash-${turn}`,
        name: 'Bash',
        input: { command: 'npm test' },
        status: 'success',
      });
      complete({
        type: 'tool_result',
        id: `br${turn}`,
        toolUseId: `bash-${turn}`,
        content: '1 passed',
        isError: false,
      });
      complete({
        type: 'tool_use',
        id: `x${turn}`,
        toolUseId: `other-${turn}`,
        name: 'web_search',
        input: { query: 'date parsing' },
        status: 'success',
      });
      complete({
        type: 'tool_result',
        id: `xr${turn}`,
        toolUseId: `other-${turn}`,
        content: 'Found **3** pages.',
        isError: false,
      });
    }
    turnEnd();
  }
  complete({ type: 'system', id: 's0', subtype: 'compaction', content: 'Compacted' });
  return events;
}
