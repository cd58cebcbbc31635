import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { step } from '../../src/backends/index.js';
import { applyEvents, emptyConversation, type StreamEvent } from '../../src/conversation/index.js';
import { RpcError, RpcErrorCode, type ProtocolClient } from '../../src/protocol/index.js';
import { gate, startTestServer, type TestServer } from './helpers.js';

// `submit_prompt { draft }`: a UI's first message drafts an agent and starts its turn in one call.

let harness: TestServer | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

async function setup(): Promise<TestServer> {
  harness = await startTestServer();
  return harness;
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

function channelEvents(client: ProtocolClient): StreamEvent[] {
  const events: StreamEvent[] = [];
  client.on('channel_message', (message) => events.push(message.event));
  return events;
}

const taskSlugs = async (client: ProtocolClient, project: string) =>
  (await client.request('list_tasks', { project })).tasks.map((task) => task.slug).sort();

const draftSessions = async (client: ProtocolClient) =>
  (await client.request('list_sessions', { scopeKind: 'draft' })).sessions;

describe('submit_prompt { draft }: the first message drafts and sends in one call', () => {
  it("with no draft, makes a task titled after the message, drafts the project's default role, answers with what it made, and the turn streams", async () => {
    const test = await setup();
    const client = await test.client();
    const events = channelEvents(client);
    const turnEnded = new Promise((resolve) => client.on('draft_status', resolve));
    const answer = await client.request(
      'submit_prompt',
      { content: 'Fix the login bug\nIt fails after the redirect.', draft: { project: test.project } },
      { timeoutMs: 0 },
    );
    expect(answer).toEqual({
      mode: 'draft',
      accepted: true,
      sessionId: expect.any(String) as string,
      seq: expect.any(Number) as number,
      drafted: { role: 'product-analyst', project: test.project, taskSlug: 'fix-the-login-bug', createdTask: true },
    });
    if (answer.mode !== 'draft') return;
    await turnEnded;
    const status = await client.request('get_draft_status');
    expect(status.session).toMatchObject({
      sessionId: answer.sessionId,
      role: 'product-analyst',
      taskSlug: 'fix-the-login-bug',
      turnCount: 1,
    });
    expect(await taskSlugs(client, test.project)).toEqual(['first-task', 'fix-the-login-bug']);
    const tasks = (await client.request('list_tasks', { project: test.project })).tasks;
    expect(tasks.find((task) => task.slug === 'fix-the-login-bug')?.title).toBe('Fix the login bug');
    await vi.waitFor(() => expect(events.some((event) => event.type === 'metadata_update')).toBe(true));
    const conversation = applyEvents(emptyConversation(answer.sessionId), events);
    expect(conversation.blocks).toMatchObject([
      { type: 'user_message', content: 'Fix the login bug\nIt fails after the redirect.' },
      { type: 'assistant_text', content: 'Echo: Fix the login bug\nIt fails after the redirect.' },
    ]);

    // With the draft made, `draft` is ignored: the message goes to it, and nothing new is made.
    const next = await client.request('submit_prompt', {
      content: 'And the logout?',
      draft: { project: test.project },
    });
    expect(next).toEqual({
      mode: 'draft',
      accepted: true,
      sessionId: answer.sessionId,
      seq: expect.any(Number) as number,
    });
    expect(await taskSlugs(client, test.project)).toEqual(['first-task', 'fix-the-login-bug']);
    expect(await draftSessions(client)).toHaveLength(1);
  });

  it('drafts the role given into the task given, creating none', async () => {
    const test = await setup();
    const client = await test.client();
    const answer = await client.request('submit_prompt', {
      content: 'Release notes, please',
      draft: { project: test.project, task: 'first-task', role: 'dev' },
    });
    expect(answer).toMatchObject({
      mode: 'draft',
      drafted: { role: 'dev', project: test.project, taskSlug: 'first-task', createdTask: false },
    });
    expect(await taskSlugs(client, test.project)).toEqual(['first-task']);
    expect((await client.request('get_draft_status')).session).toMatchObject({ role: 'dev', taskSlug: 'first-task' });
  });

  it('two first messages at once on one channel make one task and one draft; the second meets the running turn', async () => {
    const test = await setup();
    const hold = gate();
    test.backend.enqueue([step.text('thinking it over'), step.wait(hold.promise), step.text('done')]);
    // Two terminals on one channel, and a second message from the first one, all at once.
    const first = await test.client({ channel: 'shared' });
    const second = await test.client({ channel: 'shared' });
    const sends = [
      first.request('submit_prompt', { content: 'Plan the release', draft: { project: test.project } }),
      second.request('submit_prompt', { content: 'Plan the launch', draft: { project: test.project } }),
      first.request('submit_prompt', { content: 'Plan the party', draft: { project: test.project } }),
      // A plain prompt right behind a first one waits for its draft instead of finding none.
      first.request('submit_prompt', { content: 'Plan the menu' }),
    ];
    const settled = await Promise.allSettled(sends);
    const accepted = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const refused = settled.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
    expect(accepted).toHaveLength(1);
    expect(accepted[0]).toMatchObject({ mode: 'draft', drafted: { createdTask: true } });
    expect(refused).toHaveLength(3);
    for (const error of refused) {
      expect(error).toBeInstanceOf(RpcError);
      expect((error as RpcError).code).toBe(RpcErrorCode.TURN_IN_PROGRESS);
    }
    expect(await draftSessions(first)).toHaveLength(1);
    expect(await taskSlugs(first, test.project)).toHaveLength(2);
    hold.open();
  });

  it('a default role that does not exist: the task made stays, the error keeps its code, names the step and the role, and nothing is sent', async () => {
    const test = await setup();
    await writeFile(join(test.root, 'parley.config.json'), JSON.stringify({ defaultRole: 'reviewer' }));
    const client = await test.client();
    const error = await errorOf(
      client.request('submit_prompt', { content: 'Write the guide', draft: { project: test.project } }),
    );
    expect(error.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(error.message).toBe(
      'Created task write-the-guide, but could not draft reviewer on it: No role "reviewer". Roles: dev, product-analyst, qa. Your message was not sent.',
    );
    expect(error.data).toMatchObject({
      code: 'NOT_FOUND',
      role: 'reviewer',
      drafting: {
        step: 'draft',
        project: test.project,
        role: 'reviewer',
        taskSlug: 'write-the-guide',
        createdTask: true,
      },
    });
    expect(await client.request('get_draft_status')).toEqual({ active: false });
    expect(await taskSlugs(client, test.project)).toEqual(['first-task', 'write-the-guide']);
    expect(await draftSessions(client)).toHaveLength(0);
  });

  it('an unknown project, an unknown task, a task drafted elsewhere: each step says so with its own code', async () => {
    const test = await setup();
    const client = await test.client();
    const noProject = await errorOf(
      client.request('submit_prompt', { content: 'hello', draft: { project: 'elsewhere' } }),
    );
    expect(noProject.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(noProject.message).toBe(
      `Could not draft an agent for your message: No project "elsewhere". Known projects: ${test.project}. Create it with create_project. Your message was not sent.`,
    );
    expect(noProject.data).toMatchObject({ drafting: { step: 'project', project: 'elsewhere', createdTask: false } });

    const noTask = await errorOf(
      client.request('submit_prompt', { content: 'hello', draft: { project: test.project, task: 'missing' } }),
    );
    expect(noTask.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(noTask.message).toMatch(
      /^Could not draft product-analyst on task missing: .*missing.* Your message was not sent\.$/,
    );
    expect(noTask.data).toMatchObject({ drafting: { step: 'draft', taskSlug: 'missing', createdTask: false } });

    const other = await test.client();
    await other.request('draft', { role: 'dev', project: test.project, task: 'first-task' });
    const taken = await errorOf(
      client.request('submit_prompt', { content: 'hello', draft: { project: test.project, task: 'first-task' } }),
    );
    expect(taken.code).toBe(RpcErrorCode.DRAFT_ALREADY_ACTIVE);
    expect(taken.message).toMatch(
      /^Could not draft product-analyst on task first-task: Task "first-task" already has an active draft \(dev\) on channel .*; undraft it there first\. Your message was not sent\.$/,
    );
    expect(await client.request('get_draft_status')).toEqual({ active: false });
    expect(await taskSlugs(client, test.project)).toEqual(['first-task']);
  });

  it('refuses `draft` with the dispatch params, and a `draft` with an unknown field, changing nothing', async () => {
    const test = await setup();
    const client = await test.client();
    const both = await errorOf(
      client.request('submit_prompt', { content: 'hello', role: 'dev', draft: { project: test.project } }),
    );
    expect(both.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect(both.message).toContain('not both');
    const unknown = await errorOf(
      client.request('submit_prompt', {
        content: 'hello',
        draft: { project: test.project, roles: 'dev' } as unknown as { project: string },
      }),
    );
    expect(unknown.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect(JSON.stringify(unknown.data)).toContain('roles');
    expect(await client.request('get_draft_status')).toEqual({ active: false });
    expect(await taskSlugs(client, test.project)).toEqual(['first-task']);
  });
});
