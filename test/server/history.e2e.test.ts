import { afterEach, describe, expect, it } from 'vitest';
import { step } from '../../src/backends/index.js';
import type { StreamEvent } from '../../src/conversation/index.js';
import { RpcError, RpcErrorCode, type ProtocolClient } from '../../src/protocol/index.js';
import { startTestServer, type TestServer } from './helpers.js';

let harness: TestServer | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

async function turn(client: ProtocolClient, content: string): Promise<void> {
  const done = new Promise<void>((resolve) => {
    const off = client.on('draft_status', () => {
      off();
      resolve();
    });
  });
  await client.request('submit_prompt', { content });
  await done;
}

function errorOf(promise: Promise<unknown>): Promise<RpcError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => {
      if (!(error instanceof RpcError)) throw error;
      return error;
    },
  );
}

type Completed = Extract<StreamEvent, { type: 'block_complete' }>;

function userMessage(events: readonly StreamEvent[], text: string): Completed {
  return events.find(
    (event): event is Completed =>
      event.type === 'block_complete' &&
      event.block.type === 'user_message' &&
      JSON.stringify(event.block).includes(text),
  )!;
}

describe('the history tree over a WebSocket', () => {
  it('rewinds a draft, tells the channel to reload, lists and switches branches, and edits and resends', async () => {
    harness = await startTestServer();
    const client = await harness.client();
    const { sessionId } = await client.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    harness.backend.enqueue([step.text('first answer')]);
    await turn(client, 'first question');
    harness.backend.enqueue([step.text('second answer')]);
    await turn(client, 'second question');
    const before = await client.request('get_events', { sessionId });
    const second = userMessage(before.events, 'second question');

    const changed: Array<{ reason: string; seq: number }> = [];
    client.on('history_changed', ({ reason, seq }) => changed.push({ reason, seq }));
    const rewound = await client.request('rewind', { sessionId, to: second.seq - 1 });
    expect(rewound).toMatchObject({ seq: second.seq - 1, conversation: true });
    expect(rewound.session.head).toBe(second.seq - 1);
    const after = await client.request('get_events', { sessionId });
    expect(after.lastSeq).toBe(second.seq - 1);
    expect(JSON.stringify(after.events)).not.toContain('second question');
    await expect.poll(() => changed).toEqual([{ reason: 'rewound', seq: second.seq - 1 }]);

    harness.backend.enqueue([step.text('another answer')]);
    await turn(client, 'another second question');
    const sent = harness.backend.calls.at(-1)!;
    expect(`${sent.systemPrompt ?? ''}\n${sent.prompt}`).not.toContain('second answer');

    const { branches } = await client.request('list_branches', { sessionId });
    expect(branches.map((branch) => [branch.active, branch.lastMessage])).toEqual([
      [false, 'second answer'],
      [true, 'another answer'],
    ]);
    const switched = await client.request('switch_branch', { sessionId, branch: branches[0]!.id });
    expect(switched.seq).toBe(branches[0]!.tipSeq);
    expect(JSON.stringify((await client.request('get_events', { sessionId })).events)).toContain('second answer');

    const first = userMessage((await client.request('get_events', { sessionId })).events, 'first question');
    harness.backend.enqueue([step.text('edited answer')]);
    const done = new Promise<void>((resolve) => {
      const off = client.on('draft_status', () => {
        off();
        resolve();
      });
    });
    const edited = await client.request('edit_message', { blockId: first.block.id, content: 'first question, edited' });
    await done;
    expect(edited).toMatchObject({ sessionId, branchedAt: -1 });
    const now = JSON.stringify((await client.request('get_events', { sessionId })).events);
    expect(now).toContain('first question, edited');
    expect(now).not.toContain('"first question"');
    await expect.poll(() => changed.map((change) => change.reason)).toEqual(['rewound', 'branch_switched', 'edited']);
    expect((await client.request('list_branches', { sessionId })).branches).toHaveLength(3);
  });

  it('refuses a point, a branch or a checkpoint version the session does not have, and files with no snapshots, changing nothing', async () => {
    harness = await startTestServer();
    const client = await harness.client();
    const { sessionId } = await client.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    harness.backend.enqueue([step.text('an answer')]);
    await turn(client, 'a question');
    const before = await client.request('get_session', { sessionId });

    const point = await errorOf(client.request('rewind', { sessionId, to: 999 }));
    expect(point.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(point.data?.code).toBe('FORK_POINT_NOT_FOUND');
    const files = await errorOf(client.request('rewind', { sessionId, to: 0, restore: 'files' }));
    expect(files.code).toBe(RpcErrorCode.UNSUPPORTED);
    expect(files.message).toContain('restore "conversation"');
    const branch = await errorOf(client.request('switch_branch', { sessionId, branch: 'b77' }));
    expect(branch.data?.code).toBe('BRANCH_NOT_FOUND');
    const version = await errorOf(client.request('restore_checkpoint', { sessionId, version: 3 }));
    expect(version.data?.code).toBe('CHECKPOINT_NOT_FOUND');
    const bad = await errorOf(client.request('rewind', { sessionId, to: 0, restore: 'code' as never }));
    expect(bad.code).toBe(RpcErrorCode.INVALID_PARAMS);

    const afterwards = await client.request('get_session', { sessionId });
    expect(afterwards.lastSeq).toBe(before.lastSeq);
    expect(afterwards.session.head).toBeUndefined();
    expect(afterwards.session.segments).toBeUndefined();
  });
});
