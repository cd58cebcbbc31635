import { afterEach, describe, expect, it } from 'vitest';
import { step } from '../../src/backends/index.js';
import type { StreamEvent } from '../../src/conversation/index.js';
import { RpcError, RpcErrorCode, type ProtocolClient } from '../../src/protocol/index.js';
import { startTestServer, type TestServer } from './helpers.js';

// get_events with beforeSeq: a log read from its end, a page at a time (the web UI opens a session at its tail).

let harness: TestServer | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

const END = Number.MAX_SAFE_INTEGER;

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

/** The whole active branch read from the end in pages of `limit`, and each page's hasMore. */
async function readBackwards(
  client: ProtocolClient,
  sessionId: string,
  limit: number,
): Promise<{ events: StreamEvent[]; hasMore: boolean[] }> {
  const pages: StreamEvent[][] = [];
  const hasMore: boolean[] = [];
  for (let beforeSeq = END; ;) {
    const page = await client.request('get_events', { sessionId, beforeSeq, limit });
    pages.unshift(page.events);
    hasMore.push(page.hasMore);
    if (!page.hasMore) break;
    beforeSeq = page.events[0]!.seq;
  }
  return { events: pages.flat(), hasMore };
}

async function draftWithTurns(client: ProtocolClient, turns: number): Promise<string> {
  const { sessionId } = await client.request('draft', { role: 'dev', project: harness!.project, task: 'first-task' });
  for (let index = 0; index < turns; index += 1) {
    harness!.backend.enqueue([step.text(`answer ${index}`)]);
    await turn(client, `question ${index}`);
  }
  return sessionId;
}

describe('get_events with beforeSeq', () => {
  it('reads the newest events before a seq, oldest first, a page at a time to the start: every event once, hasMore until the first', async () => {
    harness = await startTestServer();
    const client = await harness.client();
    const sessionId = await draftWithTurns(client, 4);
    const whole = await client.request('get_events', { sessionId });
    expect(whole.events.length).toBeGreaterThan(8);

    const last = await client.request('get_events', { sessionId, beforeSeq: END, limit: 3 });
    expect(last.events).toEqual(whole.events.slice(-3));
    expect(last.hasMore).toBe(true);
    expect(last.lastSeq).toBe(whole.lastSeq);
    // lastSeq + 1 is the same read as a seq past every log.
    expect(await client.request('get_events', { sessionId, beforeSeq: whole.lastSeq + 1, limit: 3 })).toEqual(last);

    const backwards = await readBackwards(client, sessionId, 3);
    expect(backwards.events).toEqual(whole.events);
    expect(backwards.hasMore.at(-1)).toBe(false);
    expect(backwards.hasMore.slice(0, -1).every(Boolean)).toBe(true);

    const middle = whole.events[5]!.seq;
    const below = await client.request('get_events', { sessionId, beforeSeq: middle, limit: 100 });
    expect(below.events).toEqual(whole.events.slice(0, 5));
    expect(below.hasMore).toBe(false);
    // With afterSeq too: only what lies between, hasMore when more of it lies below the page.
    const between = await client.request('get_events', { sessionId, afterSeq: 1, beforeSeq: middle, limit: 2 });
    expect(between.events).toEqual(whole.events.slice(3, 5));
    expect(between.hasMore).toBe(true);
    expect((await client.request('get_events', { sessionId, afterSeq: 1, beforeSeq: middle, limit: 3 })).hasMore).toBe(
      false,
    );
    expect((await client.request('get_events', { sessionId, beforeSeq: 0 })).events).toEqual([]);
    expect((await client.request('get_events', { sessionId, afterSeq: 4, beforeSeq: 5 })).events).toEqual([]);
  });

  it('follows the active branch after a rewind and after an edit: the same events as a read from the start, page by page', async () => {
    harness = await startTestServer();
    const client = await harness.client();
    const sessionId = await draftWithTurns(client, 3);
    const before = await client.request('get_events', { sessionId });
    const second = before.events.find(
      (event) =>
        event.type === 'block_complete' &&
        event.block.type === 'user_message' &&
        JSON.stringify(event.block).includes('question 1'),
    )!;
    await client.request('rewind', { sessionId, to: second.seq - 1 });
    harness.backend.enqueue([step.text('another answer')]);
    await turn(client, 'another question');
    harness.backend.enqueue([step.text('and one more')]);
    await turn(client, 'one more question');

    await expectSameBackwards(client, sessionId, 'question 2');
    // An edit of the first answer's question: a new branch from the start.
    const first = before.events.find(
      (event) =>
        event.type === 'block_complete' &&
        event.block.type === 'user_message' &&
        JSON.stringify(event.block).includes('question 0'),
    )!;
    if (first.type !== 'block_complete') throw new Error('no first question');
    harness.backend.enqueue([step.text('edited answer')]);
    const edited = new Promise<void>((resolve) => {
      const off = client.on('draft_status', () => {
        off();
        resolve();
      });
    });
    await client.request('edit_message', { blockId: first.block.id, content: 'question 0, edited' });
    await edited;
    await expectSameBackwards(client, sessionId, 'another question');
  });
});

/** Read from the end in pages of several sizes, the active branch is what a read from the start gives, and `absent` is not in it. */
async function expectSameBackwards(client: ProtocolClient, sessionId: string, absent: string): Promise<void> {
  {
    const whole = await client.request('get_events', { sessionId });
    expect(JSON.stringify(whole.events)).not.toContain(absent);
    for (const limit of [1, 2, 5, 1_000]) {
      const backwards = await readBackwards(client, sessionId, limit);
      expect(backwards.events.map((event) => event.seq)).toEqual(whole.events.map((event) => event.seq));
      expect(backwards.events).toEqual(whole.events);
    }
    // A page that spans the rewind's point: the seqs skip where the branch left the old one.
    const tail = await client.request('get_events', { sessionId, beforeSeq: END, limit: 5_000 });
    expect(tail.events).toEqual(whole.events);
    expect(tail.hasMore).toBe(false);
  }
}

describe('get_events with beforeSeq: bad input', () => {
  it('refuses a negative beforeSeq, a beforeSeq not above afterSeq and an unknown session, saying what was wrong', async () => {
    harness = await startTestServer();
    const client = await harness.client();
    const sessionId = await draftWithTurns(client, 1);
    const negative = await errorOf(client.request('get_events', { sessionId, beforeSeq: -1 }));
    expect(negative.code).toBe(-32602);
    expect(JSON.stringify(negative.data)).toContain('beforeSeq');
    const inverted = await errorOf(client.request('get_events', { sessionId, afterSeq: 5, beforeSeq: 5 }));
    expect(inverted.code).toBe(-32602);
    expect(JSON.stringify(inverted.data)).toContain('beforeSeq: must be more than afterSeq');
    const fraction = await errorOf(client.request('get_events', { sessionId, beforeSeq: 1.5 }));
    expect(fraction.code).toBe(-32602);
    const missing = await errorOf(client.request('get_events', { sessionId: 'no-such-session', beforeSeq: END }));
    expect(missing.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(missing.message).toContain('no-such-session');
  });
});
