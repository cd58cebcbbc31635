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

  it('sends a compaction as a compaction_update to a client that takes them, and as a message to one that does not', () => {
    const compaction = {
      id: 'k1',
      type: 'system',
      subtype: 'compaction',
      content: 'Compacted (auto): the request went from 120000 to 20000 tokens.',
      data: { tokensBefore: 120000, tokensAfter: 20000 },
      createdAt: 1,
    };
    const stored = event({ type: 'block_complete', block: compaction });
    const expected = {
      sessionUpdate: 'compaction_update',
      compactionId: 'k1',
      status: 'completed',
      summary: [{ type: 'text', text: compaction.content }],
      _meta: { parley: { tokensBefore: 120000, tokensAfter: 20000 } },
    };
    expect(new LiveUpdates(undefined, { compaction: true }).map(stored)).toEqual([expected]);
    expect(new LiveUpdates().map(stored)).toMatchObject([
      { sessionUpdate: 'agent_message_chunk', content: { text: expect.stringContaining('Context compacted') } },
    ]);
    const conversation = applyEvents(emptyConversation('s'), [stored]);
    expect(replayUpdates(conversation, undefined, { compaction: true })).toEqual([expected]);
    expect(replayUpdates(conversation)[0]).toMatchObject({ sessionUpdate: 'agent_message_chunk' });
  });

  it("sends Claude Code's and the Gemini CLI's to-do lists as the plan, live and replayed", () => {
    const todoWrite = {
      id: 'p1',
      type: 'tool_use',
      toolUseId: 'todo-1',
      name: 'TodoWrite',
      input: {
        todos: [
          { content: 'Read the code', status: 'completed', activeForm: 'Reading the code' },
          { content: 'Fix the bug', status: 'in_progress', activeForm: 'Fixing the bug' },
          { content: 'Run the tests', status: 'pending', activeForm: 'Running the tests' },
        ],
      },
      status: 'success',
      createdAt: 1,
    };
    const plan = {
      sessionUpdate: 'plan',
      entries: [
        { content: 'Read the code', priority: 'medium', status: 'completed' },
        { content: 'Fix the bug', priority: 'medium', status: 'in_progress' },
        { content: 'Run the tests', priority: 'medium', status: 'pending' },
      ],
    };
    const live = new LiveUpdates();
    live.map(event({ type: 'block_start', block: { ...todoWrite, input: {}, status: 'pending' } }));
    expect(live.map(event({ type: 'block_complete', block: todoWrite }))).toEqual([plan]);
    const writeTodos = {
      ...todoWrite,
      id: 'p2',
      toolUseId: 'todo-2',
      name: 'write_todos',
      input: {
        todos: [
          { description: 'Plan it', status: 'cancelled' },
          { description: 'Do it', status: 'in_progress' },
          { status: 'pending' },
        ],
      },
    };
    const updates = replayUpdates(
      applyEvents(emptyConversation('s'), [
        event({ type: 'block_complete', block: todoWrite }),
        event({ type: 'block_complete', block: writeTodos }),
      ]),
    );
    expect(updates.filter((update) => update.sessionUpdate === 'plan')).toEqual([
      plan,
      {
        sessionUpdate: 'plan',
        entries: [
          { content: 'Plan it', priority: 'medium', status: 'completed' },
          { content: 'Do it', priority: 'medium', status: 'in_progress' },
        ],
      },
    ]);
    // Another tool's input with a list is no plan.
    expect(
      live.map(event({ type: 'block_complete', block: { ...todoWrite, id: 'p3', toolUseId: 'x', name: 'Bash' } })),
    ).not.toContainEqual(expect.objectContaining({ sessionUpdate: 'plan' }));
  });

  it('updates a tool call the permission prompt announced, rather than announcing it twice', () => {
    const live = new LiveUpdates();
    expect(live.announce({ toolCallId: 'call-5', title: 'create_task (needs projects-create)' })).toEqual([
      {
        sessionUpdate: 'tool_call',
        toolCallId: 'call-5',
        title: 'create_task (needs projects-create)',
        status: 'pending',
      },
    ]);
    expect(live.announce({ toolCallId: 'call-5' })).toEqual([]);
    const toolUse = {
      id: 'b5',
      type: 'tool_use',
      toolUseId: 'call-5',
      name: 'create_task',
      input: { title: 'A task' },
      status: 'pending',
      createdAt: 1,
    };
    expect(live.map(event({ type: 'block_start', block: toolUse }))).toMatchObject([
      { sessionUpdate: 'tool_call_update', toolCallId: 'call-5', title: 'create_task', status: 'pending' },
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
