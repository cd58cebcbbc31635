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

describe('fork_session over a WebSocket', () => {
  it("forks a draft's session at a seq: the fork holds the history up to it, names its origin, and the source is unchanged", async () => {
    harness = await startTestServer();
    const client = await harness.client();
    const { sessionId } = await client.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    harness.backend.enqueue([step.text('first answer')]);
    await turn(client, 'first question');
    harness.backend.enqueue([step.text('second answer')]);
    await turn(client, 'second question');
    const source = await client.request('get_events', { sessionId });
    const secondQuestion = source.events.find(
      (event): event is Extract<StreamEvent, { type: 'block_complete' }> =>
        event.type === 'block_complete' &&
        event.block.type === 'user_message' &&
        JSON.stringify(event.block).includes('second question'),
    )!;

    const { session: fork } = await client.request('fork_session', { sessionId, at: secondQuestion.seq - 1 });
    expect(fork.sessionId).not.toBe(sessionId);
    expect(fork.forkedFrom).toEqual({ sessionId, seq: secondQuestion.seq - 1 });
    const forked = await client.request('get_events', { sessionId: fork.sessionId });
    expect(forked.lastSeq).toBe(secondQuestion.seq - 1);
    const text = JSON.stringify(forked.events);
    expect(text).toContain('first question');
    expect(text).toContain('first answer');
    expect(text).not.toContain('second question');
    expect((await client.request('get_session', { sessionId: fork.sessionId })).session.forkedFrom).toEqual(
      fork.forkedFrom,
    );
    expect((await client.request('get_events', { sessionId })).events).toEqual(source.events);

    // A block id is a point too; the default is the end.
    const atBlock = await client.request('fork_session', {
      sessionId,
      at: secondQuestion.block.id,
    });
    expect(atBlock.session.forkedFrom).toEqual({ sessionId, seq: secondQuestion.seq });
    const whole = await client.request('fork_session', { sessionId, backend: 'scripted' });
    expect(whole.session.forkedFrom).toEqual({ sessionId, seq: source.lastSeq });
  });

  it('refuses an unknown session, a point the session does not have, a bad seq and an unknown back end, creating nothing', async () => {
    harness = await startTestServer();
    const client = await harness.client();
    const { sessionId } = await client.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    harness.backend.enqueue([step.text('an answer')]);
    await turn(client, 'a question');
    const before = (await client.request('list_sessions', {})).sessions.length;

    const missing = await errorOf(client.request('fork_session', { sessionId: 'no-such-session' }));
    expect(missing.code).toBe(RpcErrorCode.NOT_FOUND);
    const beyond = await errorOf(client.request('fork_session', { sessionId, at: 10_000 }));
    expect(beyond.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(beyond.message).toContain('seqs 0 to');
    const noBlock = await errorOf(client.request('fork_session', { sessionId, at: 'no-such-block' }));
    expect(noBlock.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(noBlock.message).toContain('no-such-block');
    const fraction = await errorOf(client.request('fork_session', { sessionId, at: 1.5 }));
    expect(fraction.code).toBe(RpcErrorCode.INVALID_PARAMS);
    const backend = await errorOf(client.request('fork_session', { sessionId, backend: 'no-such-backend' }));
    expect(backend.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect(backend.message).toContain('no-such-backend');

    expect((await client.request('list_sessions', {})).sessions).toHaveLength(before);
  });

  it('a draft goes on in a fork of its session (draft { session }), with its turns so far; other sessions are refused, changing nothing', async () => {
    harness = await startTestServer();
    const client = await harness.client({ channel: 'forker' });
    const { sessionId } = await client.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    await turn(client, 'first question');
    const { session: fork } = await client.request('fork_session', { sessionId });

    // The running draft's own session, and a session of another task, are refused.
    await client.request('undraft');
    await harness.server.drafts.createTask({ project: harness.project, title: 'Other task', slug: 'other-task' });
    const other = await client.request('draft', { role: 'dev', project: harness.project, task: 'other-task' });
    const running = await errorOf(
      harness.client({ channel: 'second' }).then((second) =>
        second.request('draft', {
          role: 'dev',
          project: harness!.project,
          task: 'other-task',
          session: other.sessionId,
        }),
      ),
    );
    expect(running.code).toBe(RpcErrorCode.DRAFT_ALREADY_ACTIVE);
    await client.request('undraft');
    const wrongTask = await errorOf(
      client.request('draft', { role: 'dev', project: harness.project, task: 'first-task', session: other.sessionId }),
    );
    expect(wrongTask.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect(wrongTask.message).toContain('is not a draft of task "first-task"');
    const unknown = await errorOf(
      client.request('draft', {
        role: 'dev',
        project: harness.project,
        task: 'first-task',
        session: 'no-such-session',
      }),
    );
    expect(unknown.code).toBe(RpcErrorCode.NOT_FOUND);
    expect((await client.request('get_draft_status')).active).toBe(false);

    const drafted = await client.request('draft', {
      role: 'dev',
      project: harness.project,
      task: 'first-task',
      session: fork.sessionId,
    });
    expect(drafted.sessionId).toBe(fork.sessionId);
    const status = await client.request('get_draft_status');
    expect(status.session).toMatchObject({ sessionId: fork.sessionId, turnCount: 1 });
    await turn(client, 'second question');
    const forked = JSON.stringify((await client.request('get_events', { sessionId: fork.sessionId })).events);
    expect(forked).toContain('first question');
    expect(forked).toContain('second question');
    const source = JSON.stringify((await client.request('get_events', { sessionId })).events);
    expect(source).not.toContain('second question');
  });
});
