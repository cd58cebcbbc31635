import type { Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { step } from '../../src/backends/index.js';
import type { StreamEvent } from '../../src/conversation/index.js';
import { rawCall, startTestServer, type TestServer } from './helpers.js';

// A client that subscribes to every session and then never reads. The server must not keep what
// it cannot send: once the unsent bytes for that connection pass `maxBufferedBytes`, it is closed
// (1013, "reconnect and resume") and dropped from the fan-out, while a client that reads goes on
// getting every event of the same turn, in order, each once.

const LIMIT = 256 * 1024;
/** A turn far larger than the limit and the socket buffers of the loopback together (about 6 MB). */
const CHUNKS = 60;
// Short words: a tokenizer meets text of this shape, not one 100 KB word.
const CHUNK = 'a streamed word '.repeat(6_400);

let harness: TestServer | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe('a client that subscribes to everything and never reads', () => {
  it('is disconnected once its unsent bytes pass the limit, and a reading client misses nothing', async () => {
    harness = await startTestServer({ maxBufferedBytes: LIMIT });
    const hog = await harness.raw({ channel: 'hog' });
    expect(
      await rawCall(hog, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params: {} })),
    ).toMatchObject({
      id: 1,
      result: {},
    });
    // From here on the hog's side takes nothing off the wire: what the server sends piles up.
    (hog as unknown as { _socket: Socket })._socket.pause();
    const connectionsBefore = harness.server.connections;

    const drafter = await harness.client({ channel: 'reader' });
    const { sessionId } = await drafter.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    const seen: StreamEvent[] = [];
    drafter.on('channel_message', ({ event }) => seen.push(event));
    harness.backend.enqueue(Array.from({ length: CHUNKS }, () => step.text(CHUNK)));
    const accepted = await drafter.request('submit_prompt', { content: 'A long answer, please' });
    if (accepted.mode !== 'draft') throw new Error(`expected the draft path, got ${accepted.mode}`);
    const ended = (event: StreamEvent) =>
      event.type === 'metadata_update' && event.conversationId === 'main' && event.metadata.turnComplete === true;
    await vi.waitFor(() => expect(seen.some(ended)).toBe(true), { timeout: 60_000 });

    // The hog was let go, said so in the log, and is no longer among the server's connections.
    expect(harness.logs.some((entry) => entry.message.includes('fell too far behind'))).toBe(true);
    await vi.waitFor(() => expect(harness!.server.connections).toBeLessThan(connectionsBefore + 1), {
      timeout: 10_000,
    });
    // The reader got the whole turn, each event once, in order, as the log holds it.
    const log = (await drafter.request('get_events', { sessionId, afterSeq: accepted.seq - 1 })).events;
    const fromPrompt = seen.filter((event) => event.seq >= accepted.seq);
    expect(fromPrompt.map((event) => event.seq)).toEqual(log.map((event) => event.seq));
    expect(fromPrompt).toEqual(log);
    const text = log
      .filter((event) => event.type === 'block_complete' && event.block.type === 'assistant_text')
      .map((event) =>
        event.type === 'block_complete' && event.block.type === 'assistant_text' ? event.block.content : '',
      );
    expect(text.join('')).toBe(CHUNK.repeat(CHUNKS));
  }, 90_000);
});
