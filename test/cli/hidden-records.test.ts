import { describe, expect, it } from 'vitest';
import { parseClaudeCodeTranscript } from '../../src/backends/index.js';
import { ConversationText } from '../../src/cli/conversation-text.js';
import { renderConversation } from '../../src/cli/render.js';
import { applyEvents, emptyConversation, type StreamEvent } from '../../src/conversation/index.js';
import { SESSION, assistantRecord, jsonl, userRecord } from '../fixtures/transcripts/shapes.js';

/** A Claude Code 2.1 session: half of its records are bookkeeping Parley keeps but does not render. */
const text = jsonl([
  JSON.stringify({
    type: 'queue-operation',
    operation: 'enqueue',
    timestamp: '2026-09-01T10:00:00.000Z',
    sessionId: SESSION,
  }),
  JSON.stringify({
    type: 'file-history-snapshot',
    messageId: 'u-1',
    snapshot: { messageId: 'u-1', trackedFileBackups: {} },
    isSnapshotUpdate: false,
  }),
  userRecord('u-1', null, 'Run the tests'),
  JSON.stringify({
    type: 'progress',
    uuid: 'p-1',
    parentUuid: 'u-1',
    sessionId: SESSION,
    data: { type: 'hook_progress' },
    timestamp: '2026-09-01T10:00:01.000Z',
  }),
  JSON.stringify({
    type: 'progress',
    uuid: 'p-2',
    parentUuid: 'p-1',
    sessionId: SESSION,
    data: { type: 'bash_progress' },
    timestamp: '2026-09-01T10:00:02.000Z',
  }),
  assistantRecord('a-1', 'p-2', 'All 12 pass.'),
  JSON.stringify({ type: 'summary', summary: 'Running tests', leafUuid: 'a-1' }),
]);

function folded() {
  const parsed = parseClaudeCodeTranscript(text);
  const events = parsed.events.map((event, seq) => ({ ...event, sessionId: 's', seq }) as StreamEvent);
  return { events, state: applyEvents(emptyConversation('s'), events) };
}

describe('parley show: records Parley keeps but does not render', () => {
  it('keeps them in the session and prints none of them', () => {
    const { events, state } = folded();
    expect(state.blocks.filter((block) => block.type === 'system' && block.subtype === 'unknown_record')).toHaveLength(
      5,
    );
    const shown = renderConversation(state.blocks, state.subagents);
    expect(shown).toBe('> Run the tests\nAll 12 pass.');
    const streamed = new ConversationText('s');
    streamed.add(events);
    expect(streamed.text()).toBe(shown);
  });

  it('with --verbose, ends with one line counting them by kind', () => {
    const { events, state } = folded();
    const line =
      '-- 5 native record(s) kept but not shown: progress 2, file-history-snapshot 1, queue-operation 1, summary 1';
    expect(renderConversation(state.blocks, state.subagents, { verbose: true })).toBe(
      `> Run the tests\nAll 12 pass.\n${line}`,
    );
    const streamed = new ConversationText('s', { verbose: true });
    streamed.add(events);
    expect(streamed.text()).toBe(`> Run the tests\nAll 12 pass.\n${line}`);
  });
});
