import { describe, expect, it } from 'vitest';
import { applyEvents, emptyConversation, type StreamEvent } from '../../src/conversation/index.js';
import { LiveUpdates, replayUpdates, stopReasonOf } from '../../src/acp/index.js';

let seq = 0;
function event(partial: Record<string, unknown>): StreamEvent {
  return { sessionId: 's', conversationId: 'main', seq: seq++, at: 1, ...partial } as StreamEvent;
}

describe('Parley events as ACP session updates', () => {
  it('sends a back end that does not stream its text whole, and a streamed one only once', () => {
    const live = new LiveUpdates();
    const whole = { id: 't1', type: 'assistant_text', content: 'All at once', createdAt: 1 };
    expect(live.map(event({ type: 'block_start', block: { ...whole, content: '' } }))).toEqual([]);
    expect(live.map(event({ type: 'block_complete', block: whole }))).toEqual([
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'All at once' } },
    ]);
    live.map(event({ type: 'block_start', block: { id: 't2', type: 'assistant_text', content: '', createdAt: 1 } }));
    expect(live.map(event({ type: 'text_delta', blockId: 't2', delta: 'Hi' }))).toHaveLength(1);
    expect(
      live.map(
        event({ type: 'block_complete', block: { id: 't2', type: 'assistant_text', content: 'Hi', createdAt: 1 } }),
      ),
    ).toEqual([]);
  });

  it('closes a tool call cut short (no result) as failed when the turn ends, and a result as completed', () => {
    const live = new LiveUpdates();
    const toolUse = {
      id: 'b1',
      type: 'tool_use',
      toolUseId: 'call-1',
      name: 'Bash',
      input: { command: 'sleep 100' },
      status: 'running',
      createdAt: 1,
    };
    expect(live.map(event({ type: 'block_start', block: toolUse }))).toMatchObject([
      { sessionUpdate: 'tool_call', toolCallId: 'call-1', kind: 'execute', status: 'in_progress' },
    ]);
    expect(
      live.map(event({ type: 'block_complete', block: { ...toolUse, status: 'error', error: 'interrupted' } })),
    ).toEqual([]);
    expect(
      live.map(event({ type: 'metadata_update', metadata: { turnComplete: true, stopReason: 'aborted' } })),
    ).toEqual([
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: 'call-1',
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'interrupted' } }],
      },
    ]);
  });

  it('shows a compaction as a message and replays a Write as a new-file diff', () => {
    const events = [
      event({ type: 'block_complete', block: { id: 'u', type: 'user_message', content: 'Write it', createdAt: 1 } }),
      event({
        type: 'block_complete',
        block: {
          id: 'w',
          type: 'tool_use',
          toolUseId: 'c',
          name: 'Write',
          input: { file_path: '/p/a.txt', content: 'hello\n' },
          status: 'success',
          createdAt: 1,
        },
      }),
      event({
        type: 'block_complete',
        block: { id: 'r', type: 'tool_result', toolUseId: 'c', content: 'ok', isError: false, createdAt: 1 },
      }),
      event({
        type: 'block_complete',
        block: { id: 'k', type: 'system', subtype: 'compaction', content: '120k → 20k tokens', createdAt: 1 },
      }),
    ];
    const updates = replayUpdates(applyEvents(emptyConversation('s'), events));
    expect(updates[0]).toEqual({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'Write it' } });
    expect(updates[1]).toMatchObject({
      sessionUpdate: 'tool_call',
      title: 'Write /p/a.txt',
      kind: 'edit',
      locations: [{ path: '/p/a.txt' }],
    });
    expect(updates[2]).toMatchObject({
      sessionUpdate: 'tool_call_update',
      status: 'completed',
      content: [{ type: 'diff', path: '/p/a.txt', oldText: null, newText: 'hello\n' }],
    });
    expect(updates[3]).toMatchObject({
      sessionUpdate: 'agent_message_chunk',
      content: { text: expect.stringContaining('Context compacted: 120k → 20k tokens') },
    });
  });

  it("reads the Gemini CLI's and Claude Code's own tools: kinds, titles, an edit as a diff", () => {
    const live = new LiveUpdates();
    const replace = {
      id: 'g1',
      type: 'tool_use',
      toolUseId: 'g-1',
      name: 'replace',
      input: { file_path: '/p/b.ts', old_string: 'let x = 1;', new_string: 'const x = 1;' },
      status: 'running',
      createdAt: 1,
    };
    expect(live.map(event({ type: 'block_start', block: replace }))).toMatchObject([
      { sessionUpdate: 'tool_call', title: 'Edit /p/b.ts', kind: 'edit' },
    ]);
    expect(
      live.map(
        event({
          type: 'block_complete',
          block: { id: 'g2', type: 'tool_result', toolUseId: 'g-1', content: 'ok', isError: false, createdAt: 1 },
        }),
      ),
    ).toMatchObject([
      {
        sessionUpdate: 'tool_call_update',
        status: 'completed',
        content: [{ type: 'diff', path: '/p/b.ts', oldText: 'let x = 1;', newText: 'const x = 1;' }],
      },
    ]);
    const shell = {
      id: 'g3',
      type: 'tool_use',
      toolUseId: 'g-3',
      name: 'run_shell_command',
      input: { command: 'npm test' },
      status: 'running',
      createdAt: 1,
    };
    expect(live.map(event({ type: 'block_start', block: shell }))).toMatchObject([
      { title: 'Run `npm test`', kind: 'execute' },
    ]);
    const grep = {
      id: 'c1',
      type: 'tool_use',
      toolUseId: 'c-1',
      name: 'Grep',
      input: { pattern: 'TODO' },
      status: 'running',
      createdAt: 1,
    };
    expect(live.map(event({ type: 'block_start', block: grep }))).toMatchObject([
      { title: 'Grep TODO', kind: 'search' },
    ]);
  });

  it("maps the back ends' stop reasons to ACP's", () => {
    expect(stopReasonOf('end_turn', false)).toBe('end_turn');
    expect(stopReasonOf('max_tokens', false)).toBe('max_tokens');
    expect(stopReasonOf('error_max_turns', false)).toBe('max_turn_requests');
    expect(stopReasonOf('refusal', false)).toBe('refusal');
    expect(stopReasonOf('aborted', false)).toBe('cancelled');
    expect(stopReasonOf('end_turn', true)).toBe('cancelled');
    expect(stopReasonOf('error', false)).toBe('end_turn');
  });
});
