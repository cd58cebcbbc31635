import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ConversationBlock } from '../../src/conversation/index.js';
import { INTERRUPTED_OUTPUT, projectConversation, type ProjectedMessage } from '../../src/sessions/index.js';
import type { Checkpoint } from '../../src/store/index.js';

let seq = 0;
const at = 1_700_000_000_000;
function reset(): void {
  seq = 0;
}
function user(content: string, extra: Partial<ConversationBlock> = {}): ConversationBlock {
  const n = seq++;
  return {
    id: `u${n}`,
    seq: n,
    type: 'user_message',
    content,
    createdAt: at + n,
    completedAt: at + n,
    ...extra,
  } as ConversationBlock;
}
function assistant(content: string, extra: Record<string, unknown> = {}): ConversationBlock {
  const n = seq++;
  return {
    id: `a${n}`,
    seq: n,
    type: 'assistant_text',
    content,
    createdAt: at + n,
    completedAt: at + n,
    ...extra,
  } as ConversationBlock;
}
function call(
  toolUseId: string,
  name = 'Read',
  input: unknown = { path: 'src/a.ts' },
  status: 'pending' | 'running' | 'success' | 'error' = 'success',
): ConversationBlock {
  const n = seq++;
  return {
    id: `c${n}`,
    seq: n,
    type: 'tool_use',
    toolUseId,
    name,
    input,
    status,
    createdAt: at + n,
    ...(status === 'success' ? { completedAt: at + n } : {}),
  };
}
function result(toolUseId: string, content: string, isError = false): ConversationBlock {
  const n = seq++;
  return {
    id: `r${n}`,
    seq: n,
    type: 'tool_result',
    toolUseId,
    content,
    isError,
    createdAt: at + n,
    completedAt: at + n,
  };
}
function covering(
  throughSeq: number,
  liveHandles: Checkpoint['liveHandles'] = [],
): Pick<Checkpoint, 'covers' | 'liveHandles'> {
  return { covers: { throughSeq, messageCount: 0 }, liveHandles };
}

describe('projectConversation', () => {
  it('shows messages with their role, hides thinking, shows interruptions and errors as notices', () => {
    reset();
    const blocks: ConversationBlock[] = [
      user('Add a --verbose flag'),
      { id: 't1', seq: seq++, type: 'thinking', content: 'secret reasoning', createdAt: at },
      assistant('Done: args.ts parses --verbose.'),
      {
        id: 's1',
        seq: seq++,
        type: 'system',
        subtype: 'aborted',
        content: 'The user aborted the turn.',
        createdAt: at,
      },
      { id: 's2', seq: seq++, type: 'system', subtype: 'compaction', content: 'Compacted', createdAt: at },
    ];
    const { messages } = projectConversation({ blocks });
    expect(messages.map((message) => [message.role, message.content])).toEqual([
      ['user', '**User**: Add a --verbose flag'],
      ['assistant', '**Assistant**: Done: args.ts parses --verbose.'],
      ['system', '[aborted: The user aborted the turn.]'],
    ]);
    expect(messages.some((message) => message.content.includes('secret reasoning'))).toBe(false);
  });

  it('keeps a tool call and its result in one unit, also when parallel calls interleave', () => {
    reset();
    const blocks = [
      user('read both'),
      call('t1', 'Read', { path: 'a.ts' }),
      call('t2', 'Read', { path: 'b.ts' }),
      result('t1', 'A CONTENT'),
      result('t2', 'B CONTENT', true),
      assistant('ok'),
    ];
    const { messages } = projectConversation({ blocks });
    const tools = messages.filter((message) => message.kind === 'tool');
    expect(tools).toHaveLength(2);
    expect(tools[0]!.content).toBe(
      '**Assistant** called tool `Read` (call t1) with input: {"path":"a.ts"}\n**Tool result** (call t1): A CONTENT',
    );
    expect(tools[1]!.content).toContain('**Tool result** (call t2, error): B CONTENT');
    expect(tools[0]!.blockIds).toEqual(['c1', 'r3']);
    expect([tools[0]!.firstSeq, tools[0]!.lastSeq]).toEqual([1, 3]);
  });

  it('closes a call that never got a result as interrupted once a later user message shows the turn ended', () => {
    reset();
    const crashed = [
      user('run the tests'),
      call('t1', 'Bash', { command: 'npm test' }, 'running'),
      user('hello again?'),
    ];
    const settled = projectConversation({ blocks: crashed }).messages.find((message) => message.kind === 'tool')!;
    expect(settled.content).toContain(`**Tool result** (call t1): ${INTERRUPTED_OUTPUT}`);
    expect(settled.tool?.state).toBe('interrupted');
    expect(settled.complete).toBe(true);

    reset();
    const running = [user('run the tests'), call('t1', 'Bash', { command: 'npm test' }, 'running')];
    const inFlight = projectConversation({ blocks: running }).messages.find((message) => message.kind === 'tool')!;
    // Still closed for the model (a request is never sent with a dangling call), but not foldable yet.
    expect(inFlight.content).toContain(INTERRUPTED_OUTPUT);
    expect(inFlight.complete).toBe(false);
  });

  it('uses the error recorded on a failed call that has no result block', () => {
    reset();
    const blocks = [user('x'), { ...call('t1', 'Bash', {}, 'error'), error: 'exit code 2' } as ConversationBlock];
    expect(projectConversation({ blocks }).messages[1]!.content).toContain(
      '**Tool result** (call t1, error): exit code 2',
    );
  });

  it('shows compacted content as one placeholder and the rest verbatim', () => {
    reset();
    const blocks = [user('first'), assistant('one'), call('t1'), result('t1', 'out'), user('second'), assistant('two')];
    const projection = projectConversation({ blocks, checkpoint: covering(3) });
    expect(projection.compactedUnits).toBe(3);
    expect(projection.compactedMessages).toBe(2);
    expect(projection.messages[0]).toMatchObject({ kind: 'placeholder', role: 'system' });
    expect(projection.messages[0]!.content).toBe(
      '[Earlier conversation (2 messages and 1 tool call or notices, through seq 3) is summarized in the Checkpoint above; the full history is kept in the session log.]',
    );
    expect(projection.messages.slice(1).map((message) => message.content)).toEqual([
      '**User**: second',
      '**Assistant**: two',
    ]);
  });

  it('shows a tool unit whole when its result was logged after the checkpoint it straddles', () => {
    reset();
    const blocks = [user('go'), call('t1'), assistant('waiting'), result('t1', 'late result')];
    const { messages } = projectConversation({ blocks, checkpoint: covering(2) });
    const tool = messages.find((message) => message.kind === 'tool');
    expect(tool?.content).toContain('late result');
    expect(tool?.content).toContain('called tool `Read`');
  });

  it('shows a worker the checkpoint recorded as live once it has finished', () => {
    reset();
    const worker = {
      id: 'w0',
      seq: seq++,
      type: 'subagent',
      subagentId: 'agent-7',
      name: 'tester',
      input: 'run tests',
      status: 'success',
      output: '12 passed',
      createdAt: at,
    } as ConversationBlock;
    const blocks = [worker, user('and now?')];
    const live = projectConversation({
      blocks,
      checkpoint: covering(1, [{ id: 'agent-7', kind: 'worker', status: 'running' }]),
    });
    expect(live.messages.map((message) => message.kind)).toEqual(['placeholder', 'worker']);
    expect(live.messages[1]!.content).toContain('Result: 12 passed');
    const finishedBefore = projectConversation({ blocks, checkpoint: covering(1) });
    expect(finishedBefore.messages.map((message) => message.kind)).toEqual(['placeholder']);
  });

  it('hides what a clear covers, a tool call and its later result together', () => {
    reset();
    const blocks = [user('old'), call('t1'), result('t1', 'old output'), user('new')];
    const { messages } = projectConversation({ blocks, clearedThroughSeq: 1 });
    expect(messages.map((message) => message.content)).toEqual(['**User**: new']);
  });

  it('replaces pruned tool outputs with a marker naming their size and where they are kept', () => {
    reset();
    const blocks = [user('read'), call('t1'), result('t1', 'x'.repeat(5_000)), call('t2'), result('t2', 'short')];
    const { messages } = projectConversation({ blocks, prunedToolUseIds: new Set(['t1', 't2']) });
    expect(messages[1]!.content).toContain(
      '[old tool output pruned to save context: 5,000 characters; the full output is kept in the session log at seq 2]',
    );
    expect(messages[1]!.tool?.pruned).toBe(true);
    // Pruning a short output would not save anything.
    expect(messages[2]!.content).toContain('short');
    expect(messages[2]!.tool?.pruned).toBe(false);
  });

  it('shows a result whose call is nowhere in the history on its own', () => {
    reset();
    const { messages } = projectConversation({ blocks: [user('x'), result('ghost', 'orphaned output')] });
    expect(messages[1]!.content).toBe('**Tool result** (call ghost; its call is not in the history): orphaned output');
  });

  it('property: no cut, clear or checkpoint ever separates a tool call from its result', () => {
    const step = fc.oneof(
      fc.constant({ kind: 'user' as const }),
      fc.constant({ kind: 'assistant' as const }),
      fc.constant({ kind: 'call' as const }),
      fc.nat(5).map((back) => ({ kind: 'result' as const, back })),
    );
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 40 }),
        fc.integer({ min: -1, max: 40 }),
        fc.integer({ min: -1, max: 40 }),
        (steps, through, cleared) => {
          reset();
          const blocks: ConversationBlock[] = [];
          const open: string[] = [];
          let calls = 0;
          for (const item of steps) {
            if (item.kind === 'user') blocks.push(user('u'));
            else if (item.kind === 'assistant') blocks.push(assistant('a'));
            else if (item.kind === 'call') {
              const id = `t${calls++}`;
              open.push(id);
              blocks.push(call(id, 'Read', {}, 'running'));
            } else if (open.length > 0) {
              const [id] = open.splice(Math.max(0, open.length - 1 - item.back), 1);
              blocks.push(result(id!, `result of ${id}`));
            }
          }
          const { messages } = projectConversation({
            blocks,
            checkpoint: covering(through),
            clearedThroughSeq: cleared,
          });
          const callOf = new Map(
            blocks
              .filter((block) => block.type === 'tool_use')
              .map((block) => [(block as { toolUseId: string }).toolUseId, block.id]),
          );
          for (const block of blocks) {
            if (block.type !== 'tool_result') continue;
            const unit = messages.find((message: ProjectedMessage) => message.blockIds.includes(block.id));
            const callId = callOf.get(block.toolUseId)!;
            const callUnit = messages.find((message: ProjectedMessage) => message.blockIds.includes(callId));
            expect(unit).toBe(callUnit);
          }
          for (const message of messages) {
            if (message.kind === 'tool') expect(message.content).toMatch(/called tool[\s\S]*\*\*Tool result\*\*/);
          }
        },
      ),
    );
  });
});
