import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  applyEvents,
  emptyConversation,
  MAIN_CONVERSATION,
  type StreamEvent,
  type ToolResultBlock,
} from '../../src/conversation/index.js';
import type { ProtocolClient, ServerFile } from '../../src/protocol/index.js';
import { allMessageText, reply, startFakeAnthropicServer } from '../fixtures/fake-anthropic-server.js';
import { startFakeOpenAiServer, type FakeOpenAiServer, type FakeOpenAiTurn } from '../fixtures/fake-openai-server.js';
import { connectToServer, startServeProcess, type ServeProcess } from '../server/serve-process.js';

/**
 * End to end: conversations between agents in a real `parley serve` process whose agents
 * run on the fake model servers (not the scripted back end). The analyst's model is scripted turn by
 * turn on the fake OpenAI server; a turn that needs the conversation id reads it from the tool
 * result in the request, as a real model would.
 */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function project(config: Record<string, unknown>, roles: Record<string, string> = {}): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'parley-converse-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  await writeFile(join(root, 'parley.config.json'), JSON.stringify(config));
  await mkdir(join(root, '.parley', 'roles'), { recursive: true });
  for (const [name, text] of Object.entries(roles)) await writeFile(join(root, '.parley', 'roles', `${name}.md`), text);
  return root;
}

async function serve(root: string, env: Record<string, string> = {}): Promise<ServeProcess> {
  const server = await startServeProcess(root, {
    OPENAI_API_KEY: '',
    ANTHROPIC_API_KEY: '',
    ANTHROPIC_BASE_URL: '',
    ...env,
  });
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

async function connect(info: ServerFile): Promise<ProtocolClient> {
  const client = await connectToServer(info, 'tui-project');
  cleanups.push(async () => client.close());
  return client;
}

async function fakeOpenAi(): Promise<FakeOpenAiServer> {
  const models = await startFakeOpenAiServer();
  cleanups.push(() => models.close());
  return models;
}

function nextStatus(client: ProtocolClient): Promise<unknown> {
  return new Promise((resolve) => {
    const off = client.on('draft_status', (status) => {
      off();
      resolve(status);
    });
  });
}

async function draftAnalyst(client: ProtocolClient): Promise<string> {
  const projectName = (await client.request('list_projects')).projects.find((entry) => entry.current)!.name;
  await client.request('create_task', { project: projectName, title: 'Checkout', slug: 'checkout' });
  return (await client.request('draft', { role: 'product-analyst', project: projectName, task: 'checkout' })).sessionId;
}

/** The content of the last tool message in a chat completion request: the result the model reads. */
function lastToolResult(body: Record<string, unknown>): Record<string, unknown> {
  const messages = body['messages'] as Array<{ role: string; content: unknown }>;
  const tool = messages.filter((message) => message.role === 'tool').at(-1);
  if (!tool) throw new Error(`No tool result in the request: ${JSON.stringify(messages)}`);
  return JSON.parse(String(tool.content)) as Record<string, unknown>;
}

function callTool(
  name: string,
  args: (body: Record<string, unknown>) => unknown,
): (body: Record<string, unknown>) => FakeOpenAiTurn {
  return (body) => ({ toolCalls: [{ name, arguments: args(body) }] });
}

async function toolResults(
  client: ProtocolClient,
  sessionId: string,
): Promise<Array<{ isError: boolean; content: string }>> {
  const { blocks } = applyEvents(
    emptyConversation(sessionId),
    (await client.request('get_events', { sessionId })).events,
  );
  return blocks
    .filter((block): block is ToolResultBlock => block.type === 'tool_result')
    .map((block) => ({ isError: block.isError, content: block.content }));
}

describe('conversations between agents, end to end', () => {
  it('after a SIGKILL while the dev is answering and a restart, the analyst says again with the same conversation id and gets a reply; the turn count goes on', async () => {
    const models = await fakeOpenAi();
    const root = await project({
      backend: 'openai-compatible',
      model: 'fake-model',
      backends: { 'openai-compatible': { baseUrl: models.url } },
    });
    let conversationId = '';
    models.enqueue(
      { toolCalls: [{ name: 'open_conversation', arguments: { role: 'dev', topic: 'Payment retries' } }] },
      callTool('say', (body) => {
        conversationId = String(lastToolResult(body)['conversationId']);
        return { conversationId, message: 'Should retries be synchronous?' };
      }),
      // The dev starts answering and stalls there: the server is killed mid-reply.
      { text: 'Dev: let me think', stall: true },
    );
    const first = await serve(root);
    const client = await connect(first.info);
    const analystSession = await draftAnalyst(client);
    const seen: StreamEvent[] = [];
    client.on('channel_message', (message) => seen.push(message.event));
    await client.request('submit_prompt', { content: 'Plan checkout retries with a developer.' });
    await vi.waitFor(
      () =>
        expect(seen.some((event) => event.type === 'text_delta' && event.conversationId !== MAIN_CONVERSATION)).toBe(
          true,
        ),
      { timeout: 20_000 },
    );
    expect(models.completions()).toHaveLength(3);

    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');

    models.enqueue(
      callTool('say', () => ({ conversationId, message: 'Then what about idempotency keys?' })),
      { text: 'Dev: use idempotency keys per payment.' },
      callTool('close_conversation', () => ({ conversationId })),
      { text: 'Analyst: retries with idempotency keys.' },
    );
    const acknowledged = [...seen];
    const restarted = await serve(root);
    const again = await connect(restarted.info);
    // Every event a client saw before the kill (the thread's streamed start of the dev's reply included) is still stored, unchanged.
    const afterCrash = (await again.request('get_events', { sessionId: analystSession })).events;
    for (const event of acknowledged) expect(afterCrash.find((stored) => stored.seq === event.seq)).toEqual(event);
    const status = nextStatus(again);
    await again.request('submit_prompt', { content: 'Go on with the developer.' });
    await status;

    const results = await toolResults(again, analystSession);
    const [saidAgain, closed] = results.slice(-2);
    expect([saidAgain?.isError, closed?.isError]).toEqual([false, false]);
    expect(JSON.parse(saidAgain!.content)).toMatchObject({
      conversationId,
      reply: 'Dev: use idempotency keys per payment.',
      turn: 2,
      turnsLeft: 18,
    });
    // The message cut by the kill counts: the conversation closes with two.
    expect(JSON.parse(closed!.content)).toMatchObject({
      conversationId,
      role: 'dev',
      turns: 2,
      closedBecause: 'closed',
    });
    // The dev's request after the restart holds the message said before the kill (in its system prompt's history): nothing lost.
    const devRequest = JSON.stringify(models.completions()[4]!['messages']);
    expect(devRequest).toContain('Should retries be synchronous?');
    expect(devRequest).toContain('Then what about idempotency keys?');
    const devSession = applyEvents(
      emptyConversation(conversationId),
      (await again.request('get_events', { sessionId: conversationId })).events,
    );
    const said = devSession.blocks.flatMap((block) => (block.type === 'user_message' ? [block.content] : []));
    expect(said.slice(1)).toEqual(['Should retries be synchronous?', 'Then what about idempotency keys?']);
    expect(devSession.blocks.some((block) => block.type === 'system' && block.subtype === 'interrupted')).toBe(true);
    expect(
      devSession.blocks
        .filter((block) => block.type === 'assistant_text')
        .map((block) => (block as { content: string }).content)
        .at(-1),
    ).toBe('Dev: use idempotency keys per payment.');
    const analyst = applyEvents(
      emptyConversation(analystSession),
      (await again.request('get_events', { sessionId: analystSession })).events,
    );
    expect(
      analyst.blocks
        .filter((block) => block.type === 'assistant_text')
        .map((block) => (block as { content: string }).content),
    ).toContain('Analyst: retries with idempotency keys.');
  });

  it('an analyst on openai-compatible talks with a dev on anthropic-api: three messages, a close with its summary, and an answer that uses the outcome', async () => {
    const models = await fakeOpenAi();
    let devCalls = 0;
    const anthropic = await startFakeAnthropicServer({
      script: () => {
        devCalls += 1;
        return reply(`Dev answer ${devCalls}: use a queue.`, { usage: { input_tokens: 1000, output_tokens: 100 } });
      },
    });
    cleanups.push(() => anthropic.close());
    const root = await project(
      { backend: 'openai-compatible', model: 'fake-model', backends: { 'openai-compatible': { baseUrl: models.url } } },
      { dev: '---\ndescription: Developer\nbackend: anthropic-api\n---\nYou implement tasks.\n' },
    );
    let conversationId = '';
    models.enqueue(
      { toolCalls: [{ name: 'open_conversation', arguments: { role: 'dev', topic: 'Payment retries' } }] },
      callTool('say', (body) => {
        conversationId = String(lastToolResult(body)['conversationId']);
        return { conversationId, message: 'Message one: sync or async retries?' };
      }),
      callTool('say', () => ({ conversationId, message: 'Message two: idempotency?' })),
      callTool('say', () => ({ conversationId, message: 'Message three: timeouts?' })),
      callTool('close_conversation', () => ({ conversationId })),
      (body) => {
        const summary = lastToolResult(body);
        return { text: `Plan: a queue, as the dev said over ${String(summary['turns'])} messages.` };
      },
    );
    const server = await serve(root, { ANTHROPIC_BASE_URL: anthropic.url, ANTHROPIC_API_KEY: 'test-key' });
    const client = await connect(server.info);
    const analystSession = await draftAnalyst(client);
    const status = nextStatus(client);
    await client.request('submit_prompt', { content: 'Plan checkout retries with a developer.' });
    await status;

    const results = await toolResults(client, analystSession);
    expect(results.map((result) => result.isError)).toEqual([false, false, false, false, false]);
    const [, one, two, three, closed] = results.map((result) => JSON.parse(result.content) as Record<string, unknown>);
    expect([one, two, three]).toMatchObject([
      { reply: 'Dev answer 1: use a queue.', turn: 1 },
      { reply: 'Dev answer 2: use a queue.', turn: 2 },
      { reply: 'Dev answer 3: use a queue.', turn: 3 },
    ]);
    expect(closed).toMatchObject({ conversationId, role: 'dev', turns: 3, closedBecause: 'closed' });
    expect(closed!['costUsd']).toBeGreaterThan(0);

    // The dev ran on anthropic-api; each of its requests holds the conversation so far.
    const devRequests = anthropic.messageRequests();
    expect(devRequests).toHaveLength(3);
    // Managed back ends show the history in the system prompt's "Recent Conversation" and the new message as the user turn.
    const third = `${String(devRequests[2]!.body?.system)}\n${allMessageText(devRequests[2]!.body)}`;
    expect(allMessageText(devRequests[2]!.body)).toBe('Message three: timeouts?');
    for (const earlier of [
      'Payment retries',
      'Message one: sync or async retries?',
      'Dev answer 1: use a queue.',
      'Message two: idempotency?',
      'Dev answer 2: use a queue.',
      'Message three: timeouts?',
    ])
      expect(third).toContain(earlier);
    // The analyst ran on openai-compatible: six calls, the last one reading the dev's replies and the summary.
    expect(models.completions()).toHaveLength(6);
    const lastAnalystRequest = JSON.stringify(models.completions()[5]!['messages']);
    expect(lastAnalystRequest).toContain('Dev answer 3: use a queue.');
    const analyst = applyEvents(
      emptyConversation(analystSession),
      (await client.request('get_events', { sessionId: analystSession })).events,
    );
    expect(
      analyst.blocks
        .filter((block) => block.type === 'assistant_text')
        .map((block) => (block as { content: string }).content),
    ).toEqual(['Plan: a queue, as the dev said over 3 messages.']);
  });
});
