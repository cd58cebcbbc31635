import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import type { ToolResultBlock } from '../../src/conversation/index.js';
import type { NotificationParams, ProtocolClient } from '../../src/protocol/index.js';
import { startTestServer, type TestServer } from './helpers.js';

/**
 * Approvals over a real WebSocket: a dev agent (scripted back end, managed) asks before each
 * write and command; a client on the draft's channel gets `permission_requested` and answers with
 * `answer_permission`, each way.
 */

let running: TestServer | undefined;
afterEach(async () => {
  await running?.stop();
  if (running) await fs.rm(running.root, { recursive: true, force: true });
  running = undefined;
});

/** The next notification of a kind (already received, or the next to arrive). */
function collector<N extends 'permission_requested' | 'permission_resolved'>(
  client: ProtocolClient,
  name: N,
): () => Promise<NotificationParams<N>> {
  const seen: Array<NotificationParams<N>> = [];
  const waiting: Array<(value: NotificationParams<N>) => void> = [];
  client.on(name, (params) => {
    const waiter = waiting.shift();
    if (waiter) waiter(params);
    else seen.push(params);
  });
  return () => (seen.length > 0 ? Promise.resolve(seen.shift()!) : new Promise((resolve) => waiting.push(resolve)));
}

async function draftDev(server: TestServer, client: ProtocolClient): Promise<string> {
  const drafted = await client.request('draft', { role: 'dev', project: server.project, task: 'first-task' });
  return drafted.sessionId;
}

async function toolResults(client: ProtocolClient, sessionId: string): Promise<ToolResultBlock[]> {
  const { events } = await client.request('get_events', { sessionId });
  return events.flatMap((event) =>
    event.type === 'block_complete' && event.block.type === 'tool_result' ? [event.block] : [],
  );
}

describe('approvals over the protocol', () => {
  it('allow_once writes; deny leaves the file system unchanged and tells the model; allow_always stops asking for the prefix', async () => {
    const backend = createScriptedBackend();
    running = await startTestServer({ backend });
    const server = running;
    await fs.writeFile(path.join(server.root, 'notes.txt'), 'first\n');
    const client = await server.client({ channel: 'ui' });
    const requested = collector(client, 'permission_requested');
    const resolved = collector(client, 'permission_resolved');
    const sessionId = await draftDev(server, client);
    expect(await client.request('get_permissions')).toMatchObject({ sessionId, mode: 'default', requests: [] });

    backend.enqueue([
      step.tool('write_file', { path: 'notes.txt', content: 'second\n' }),
      step.tool('run_command', { command: 'rm notes.txt' }),
      step.tool('run_command', { command: 'ls -a' }),
      step.tool('run_command', { command: 'ls -l notes.txt' }),
      step.text('Done.'),
    ]);
    await client.request('submit_prompt', { content: 'Update the notes.' });

    // 1. The write: shown with its diff, allowed once.
    const write = await requested();
    expect(write).toMatchObject({
      channelId: 'ui',
      request: { sessionId, tool: 'write_file', kind: 'write', title: 'Overwrite notes.txt', path: 'notes.txt' },
    });
    expect(write.request.diff).toContain('-first\n+second');
    // A client that attaches now finds the waiting request.
    const late = await server.client({ channel: 'ui' });
    expect((await late.request('get_permissions')).requests.map((request) => request.requestId)).toEqual([
      write.request.requestId,
    ]);
    expect(
      await client.request('answer_permission', {
        sessionId,
        requestId: write.request.requestId,
        decision: 'allow_once',
      }),
    ).toEqual({
      requestId: write.request.requestId,
      sessionId,
      decision: 'allow_once',
    });
    expect(await resolved()).toMatchObject({
      requestId: write.request.requestId,
      decision: 'allow_once',
      source: 'client',
    });
    // Answering twice is an error naming the request.
    await expect(
      late.request('answer_permission', { sessionId, requestId: write.request.requestId, decision: 'deny' }),
    ).rejects.toMatchObject({ code: -32001 });

    // 2. The command: denied; nothing runs.
    const remove = await requested();
    expect(remove.request).toMatchObject({
      kind: 'command',
      command: 'rm notes.txt',
      cwd: '.',
      allowAlwaysScope: 'commands starting with "rm"',
    });
    await client.request('answer_permission', { sessionId, requestId: remove.request.requestId, decision: 'deny' });
    expect(await resolved()).toMatchObject({ decision: 'deny' });

    // 3. Allowed always for "ls"; 4. then not asked again.
    const list = await requested();
    expect(list.request.command).toBe('ls -a');
    await client.request('answer_permission', {
      sessionId,
      requestId: list.request.requestId,
      decision: 'allow_always',
    });
    await server.server.drafts.settled({ channelId: 'ui' });

    expect(await fs.readFile(path.join(server.root, 'notes.txt'), 'utf8')).toBe('second\n');
    const results = await toolResults(client, sessionId);
    expect(results).toHaveLength(4);
    expect(results[1]!.content).toMatch(/^Denied by the user: this command was not made/);
    expect(results[1]!.isError).toBe(true);
    expect(results[2]!.output).toMatchObject({ exitCode: 0 });
    expect(results[3]!.content).toContain('notes.txt');
    expect((await client.request('get_permissions')).requests).toEqual([]);
  });

  it('with nobody attached the request waits and the turn shows it; cancel denies it and changes nothing', async () => {
    const backend = createScriptedBackend();
    running = await startTestServer({ backend });
    const server = running;
    const client = await server.client({ channel: 'away' });
    const sessionId = await draftDev(server, client);
    await client.request('set_permission_mode', { mode: 'acceptEdits' });
    backend.enqueue([step.tool('run_command', { command: 'touch made.txt' }), step.text('never')]);
    await client.request('submit_prompt', { content: 'Make a file.' });
    await client.close();

    // Nobody is attached: the request waits, and the session says so.
    const watcher = await server.client({ channel: 'watcher' });
    const isWaiting = (event: {
      type: string;
      block?: { type: string; subtype?: string; content?: string };
    }): string | undefined =>
      event.type === 'block_complete' &&
      event.block?.type === 'system' &&
      event.block.subtype === 'info' &&
      event.block.content?.startsWith('Waiting')
        ? event.block.content
        : undefined;
    // Subscribed before reading the log, so the block is either in the log or on its way.
    const arriving = new Promise<string>((resolve) =>
      watcher.on('session_event', ({ event }) => {
        const text = isWaiting(event);
        if (text) resolve(text);
      }),
    );
    await watcher.request('subscribe', { sessionIds: [sessionId] });
    const { events } = await watcher.request('get_events', { sessionId });
    const waiting = events.map(isWaiting).find((text) => text !== undefined) ?? (await arriving);
    expect(waiting).toBe('Waiting for your approval: Run `touch made.txt`');

    const back = await server.client({ channel: 'away' });
    const pending = await back.request('get_permissions');
    expect(pending).toMatchObject({ mode: 'acceptEdits', requests: [{ kind: 'command', command: 'touch made.txt' }] });
    expect(await back.request('cancel')).toEqual({ cancelled: true });
    await server.server.drafts.settled({ channelId: 'away' });
    await expect(fs.access(path.join(server.root, 'made.txt'))).rejects.toThrow();
    expect((await back.request('get_permissions')).requests).toEqual([]);
  });
});
