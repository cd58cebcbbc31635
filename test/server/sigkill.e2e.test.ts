import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { applyEvents, emptyConversation, type StreamEvent } from '../../src/conversation/index.js';
import type { ProtocolClient, ServerFile } from '../../src/protocol/index.js';
import { connectToServer, startServeProcess, type ServeProcess } from './serve-process.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function project(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'parley-serve-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  return root;
}

async function serve(root: string, script: unknown): Promise<ServeProcess> {
  const path = join(root, `script-${cleanups.length}.json`);
  await writeFile(path, JSON.stringify(script));
  const server = await startServeProcess(root, { PARLEY_SCRIPTED_SCRIPT: path });
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

async function connect(info: ServerFile, channel: string): Promise<ProtocolClient> {
  const client = await connectToServer(info, channel);
  cleanups.push(() => Promise.resolve(client.close()));
  return client;
}

function nextStatus(client: ProtocolClient): Promise<unknown> {
  return new Promise((resolve) => {
    const off = client.on('draft_status', (status) => {
      off();
      resolve(status);
    });
  });
}

describe('parley serve as a process', () => {
  it('after SIGKILL mid-turn and a restart, the channel gets its draft back, the cut turn shows as interrupted, nothing acknowledged is lost, and the next prompt resumes', async () => {
    const root = await project();
    const first = await serve(root, {
      turns: [
        [{ type: 'text', text: 'The first answer.' }],
        [
          { type: 'text', text: 'A partial answer' },
          { type: 'delay', ms: 600_000 },
          { type: 'text', text: 'never sent' },
        ],
      ],
    });
    const client = await connect(first.info, 'tui-project');
    const projectName = (await client.request('list_projects')).projects.find((entry) => entry.current)!.name;
    await client.request('create_task', { project: projectName, title: 'Crash test', slug: 'crash-test' });
    const { sessionId } = await client.request('draft', {
      role: 'product-analyst',
      project: projectName,
      task: 'crash-test',
    });
    const seen: StreamEvent[] = [];
    client.on('channel_message', (message) => seen.push(message.event));

    let status = nextStatus(client);
    await client.request('submit_prompt', { content: 'First question' });
    await status;
    const second = await client.request('submit_prompt', { content: 'Second question, cut short' });
    expect(second.mode).toBe('draft');
    await vi.waitFor(
      () =>
        expect(
          seen.some(
            (event) =>
              event.type === 'block_complete' &&
              event.block.type === 'assistant_text' &&
              event.block.content === 'A partial answer',
          ),
        ).toBe(true),
      { timeout: 10_000 },
    );
    const acknowledged = [...seen];

    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');

    const restarted = await serve(root, { defaultTurn: [{ type: 'text', text: 'Resumed and answered.' }] });
    expect(restarted.info.pid).not.toBe(first.info.pid);
    const again = await connect(restarted.info, 'tui-project');
    const draftStatus = await again.request('get_draft_status');
    // The cut turn counts as a turn (interrupted), like an aborted one.
    expect(draftStatus).toMatchObject({
      active: true,
      session: { sessionId, role: 'product-analyst', taskSlug: 'crash-test', turnCount: 2 },
    });

    const log = (await again.request('get_events', { sessionId })).events;
    // Every event a client saw (so the server had stored it) is still there, unchanged.
    for (const event of acknowledged) expect(log.find((stored) => stored.seq === event.seq)).toEqual(event);
    const afterCrash = applyEvents(emptyConversation(sessionId), log);
    const userMessages = afterCrash.blocks
      .filter((block) => block.type === 'user_message')
      .map((block) => (block as { content: string }).content);
    expect(userMessages).toEqual(['First question', 'Second question, cut short']);
    expect(afterCrash.blocks.some((block) => block.type === 'system' && block.subtype === 'interrupted')).toBe(true);
    expect(JSON.stringify(afterCrash.blocks)).not.toContain('never sent');

    status = nextStatus(again);
    await again.request('submit_prompt', { content: 'Third question' });
    expect(await status).toMatchObject({ sessionId, turnCount: 3 });
    const final = applyEvents(emptyConversation(sessionId), (await again.request('get_events', { sessionId })).events);
    const texts = final.blocks
      .filter((block) => block.type === 'assistant_text')
      .map((block) => (block as { content: string }).content);
    expect(texts).toEqual(['The first answer.', 'A partial answer', 'Resumed and answered.']);
  });

  it('SIGTERM ends the running turn cleanly, saves state, removes server.json and exits 0; the draft survives', async () => {
    const root = await project();
    const server = await serve(root, {
      turns: [
        [
          { type: 'text', text: 'Working on it' },
          { type: 'delay', ms: 600_000 },
        ],
      ],
    });
    const client = await connect(server.info, 'tui-project');
    const projectName = (await client.request('list_projects')).projects.find((entry) => entry.current)!.name;
    await client.request('create_task', { project: projectName, title: 'Term test', slug: 'term-test' });
    const { sessionId } = await client.request('draft', { role: 'dev', project: projectName, task: 'term-test' });
    const seen: StreamEvent[] = [];
    client.on('channel_message', (message) => seen.push(message.event));
    await client.request('submit_prompt', { content: 'Long job' });
    await vi.waitFor(() => expect(seen.some((event) => event.type === 'text_delta')).toBe(true), { timeout: 10_000 });
    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    await expect(stat(join(root, '.parley', 'server.json'))).rejects.toMatchObject({ code: 'ENOENT' });

    const restarted = await serve(root, { defaultTurn: [{ type: 'text', text: 'Back.' }] });
    const again = await connect(restarted.info, 'tui-project');
    expect(await again.request('get_draft_status')).toMatchObject({ active: true, session: { sessionId } });
    const conversation = applyEvents(
      emptyConversation(sessionId),
      (await again.request('get_events', { sessionId })).events,
    );
    expect(conversation.blocks.some((block) => block.type === 'system' && block.subtype === 'aborted')).toBe(true);
    expect(
      conversation.blocks.some((block) => block.type === 'assistant_text' && block.content === 'Working on it'),
    ).toBe(true);
  });
});
