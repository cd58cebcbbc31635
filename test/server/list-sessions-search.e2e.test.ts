import { afterEach, describe, expect, it } from 'vitest';
import { step } from '../../src/backends/index.js';
import type { ProtocolClient } from '../../src/protocol/index.js';
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

describe('list_sessions with searchContent', () => {
  it("matches text anywhere in a session's blocks (messages, streamed answers, tool calls, worker threads), case-insensitively, only when asked", async () => {
    harness = await startTestServer();
    const client = await harness.client();
    const first = await client.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    harness.backend.enqueue([
      step.text('The Flamingo parser is fixed.', { chunks: ['The Flam', 'ingo parser', ' is fixed.'] }),
      step.tool('grep', { pattern: 'quokka-config' }, 'no match'),
      step.subagent('tester', 'write tests', [step.text('Added a test for the narwhal case.')]),
    ]);
    await turn(client, 'Fix the parser, mention the ocelot. Thanks!');
    await client.request('undraft');
    const second = await client.request('draft', { role: 'qa', project: harness.project, task: 'first-task' });
    await turn(client, 'Review it. Thanks!');

    const search = async (text: string, searchContent = true) =>
      (await client.request('list_sessions', { search: text, searchContent })).sessions.map(
        (session) => session.sessionId,
      );
    expect(await search('ocelot', false)).toEqual([]);
    expect(await search('OCELOT')).toEqual([first.sessionId]);
    // Split across two streamed deltas.
    expect(await search('flamingo parser')).toEqual([first.sessionId]);
    expect(await search('quokka-config')).toEqual([first.sessionId]);
    expect(await search('narwhal')).toEqual([first.sessionId]);
    expect(await search('Review it')).toEqual([second.sessionId]);
    expect((await search('thanks')).sort()).toEqual([first.sessionId, second.sessionId].sort());
    // Metadata still matches without reading content; the limit still applies.
    expect(await search('qa', false)).toEqual([second.sessionId]);
    expect(
      (await client.request('list_sessions', { search: 'thanks', searchContent: true, limit: 1 })).sessions,
    ).toHaveLength(1);
    expect(await search('absent-word')).toEqual([]);
  });
});
