import { afterEach, describe, expect, it } from 'vitest';
import { step } from '../../src/backends/index.js';
import { RpcError, type ProtocolClient } from '../../src/protocol/index.js';
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

describe('finding sessions over the protocol', () => {
  it('searches its messages, renames, tags, pins and pages', async () => {
    harness = await startTestServer();
    const client = await harness.client();
    const first = await client.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    harness.backend.enqueue([step.text('The axolotl importer now skips empty rows.')]);
    await turn(client, 'Fix the axolotl importer\nIt fails on empty rows.');
    await client.request('undraft');
    const second = await client.request('draft', { role: 'qa', project: harness.project, task: 'first-task' });
    await turn(client, 'Review the importer change');
    await client.request('undraft');

    const title = (await client.request('get_session', { sessionId: first.sessionId })).session.title;
    expect(title).toBeDefined();

    const found = await client.request('search_sessions', { query: 'AXOLOTL rows' });
    expect(found.terms).toEqual(['axolotl', 'rows']);
    expect(found.hits.map((hit) => [hit.sessionId, hit.role])).toEqual([
      [first.sessionId, 'assistant'],
      [first.sessionId, 'user'],
    ]);
    expect(found.hits[0]).toMatchObject({ title, conversationId: 'main' });
    expect(found.hits[0]!.snippet).toContain('axolotl');
    // The hit names the block and seq to open the session at.
    const events = await client.request('get_events', { sessionId: first.sessionId });
    const event = events.events.find((each) => each.seq === found.hits[1]!.seq);
    expect(event).toMatchObject({ type: 'block_complete', block: { id: found.hits[1]!.blockId } });

    for (const query of ['', 'x'.repeat(10_000)]) {
      await expect(client.request('search_sessions', { query })).rejects.toSatisfy(
        (error) => error instanceof RpcError && error.code === -32602,
      );
    }
    expect((await client.request('search_sessions', { query: '.* %; --' })).hits).toEqual([]);

    const renamed = await client.request('update_session', {
      sessionId: second.sessionId,
      title: 'Importer review',
      addTags: ['review', 'importer'],
    });
    expect(renamed.session).toMatchObject({ title: 'Importer review', tags: ['review', 'importer'] });
    await expect(
      client.request('update_session', { sessionId: second.sessionId, addTags: ['no spaces allowed'] }),
    ).rejects.toSatisfy((error) => error instanceof RpcError && error.code === -32602 && /tag/.test(error.message));
    await client.request('update_session', { sessionId: first.sessionId, pinned: true });

    const page = await client.request('list_sessions', { limit: 1 });
    expect(page.sessions.map((session) => session.sessionId)).toEqual([first.sessionId]);
    expect(page.sessions[0]!.pinned).toBe(true);
    const next = await client.request('list_sessions', { limit: 1, cursor: page.nextCursor! });
    expect(next.sessions.map((session) => session.sessionId)).toEqual([second.sessionId]);
    expect(
      (await client.request('list_sessions', { tag: 'review' })).sessions.map((session) => session.sessionId),
    ).toEqual([second.sessionId]);
    await expect(client.request('list_sessions', { cursor: 'garbage' })).rejects.toSatisfy(
      (error) => error instanceof RpcError && error.code === -32602 && /cursor/.test(error.message),
    );
  });
});
