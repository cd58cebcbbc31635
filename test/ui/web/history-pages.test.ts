import { describe, expect, it, vi } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { readHistory, type EventPage } from '../../../src/ui/web/history-pages.js';

function event(seq: number): StreamEvent {
  return { type: 'metadata_update', conversationId: 'main', metadata: { turnComplete: true }, sessionId: 's', seq, at: 0 } as unknown as StreamEvent;
}

/** A server's `get_events` over the given seqs: the events after `afterSeq`, at most `limit`, and the calls made. */
function log(seqs: number[]) {
  const calls: number[] = [];
  const read = async (afterSeq: number, limit: number): Promise<EventPage> => {
    calls.push(afterSeq);
    const after = seqs.filter((seq) => seq > afterSeq);
    return { events: after.slice(0, limit).map(event), lastSeq: seqs.at(-1) ?? -1, hasMore: after.length > limit };
  };
  return { seqs, calls, read };
}

const range = (count: number, from = 0) => Array.from({ length: count }, (_, index) => from + index);

describe('readHistory', () => {
  it('reads a log of one page with a one-event probe and that page, asked at once, the probe first', async () => {
    const server = log(range(7));
    const limits: number[] = [];
    const read = (afterSeq: number, limit: number) => {
      limits.push(limit);
      return server.read(afterSeq, limit);
    };
    expect((await readHistory(read, 10)).map((entry) => entry.seq)).toEqual(range(7));
    expect(server.calls).toEqual([-1, -1]);
    expect(limits).toEqual([1, 10]);
  });

  it('reads an empty log', async () => {
    expect(await readHistory(log([]).read, 10)).toEqual([]);
  });

  it('asks for the other pages at once, as soon as the probe tells the newest seq, while the first page is still on its way; every event once, in order', async () => {
    const server = log(range(35));
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const read = async (afterSeq: number, limit: number) => {
      if (afterSeq === -1 && limit > 1) await firstHeld;
      return server.read(afterSeq, limit);
    };
    const done = readHistory(read, 10);
    await vi.waitFor(() => expect(server.calls).toEqual([-1, 9, 19, 29]));
    releaseFirst();
    expect((await done).map((entry) => entry.seq)).toEqual(range(35));
    expect(server.calls).toEqual([-1, 9, 19, 29, -1]);
  });

  it('starts the other pages from the oldest seq the probe saw (a log that does not start at 0)', async () => {
    const server = log(range(35, 100));
    expect((await readHistory(server.read, 10)).map((entry) => entry.seq)).toEqual(range(35, 100));
    expect(server.calls).toEqual([-1, -1, 109, 119, 129]);
  });

  it('drops the repeats where seqs skip and pages overlap', async () => {
    const seqs = range(40).map((index) => index * 3);
    const server = log(seqs);
    expect((await readHistory(server.read, 10)).map((entry) => entry.seq)).toEqual(seqs);
  });

  it('reads on from the last event when pages do not meet (a server that answers fewer than asked)', async () => {
    const server = log(range(30));
    const short = (afterSeq: number, limit: number) => server.read(afterSeq, Math.min(limit, 4));
    expect((await readHistory(short, 10)).map((entry) => entry.seq)).toEqual(range(30));
  });

  it('reads what was appended while the pages loaded', async () => {
    const server = log(range(25));
    const read = async (afterSeq: number, limit: number) => {
      const page = await server.read(afterSeq, limit);
      if (afterSeq === -1 && limit > 1) server.seqs.push(...range(12, 25));
      return page;
    };
    expect((await readHistory(read, 10)).map((entry) => entry.seq)).toEqual(range(37));
  });

  it("hands each page's new events on in order as soon as the pages before it are in, even when a later page answers first", async () => {
    const server = log(range(35));
    const gates = new Map<number, () => void>();
    const read = async (afterSeq: number, limit: number) => {
      if (afterSeq !== -1) await new Promise<void>((resolve) => gates.set(afterSeq, resolve));
      return server.read(afterSeq, limit);
    };
    const delivered: number[][] = [];
    const done = readHistory(read, 10, (events) => delivered.push(events.map((entry) => entry.seq)));
    await vi.waitFor(() => expect(gates.size).toBe(3));
    // The first page is out before any other answers; the last answers first and waits its turn.
    expect(delivered).toEqual([range(10)]);
    gates.get(29)!();
    gates.get(19)!();
    await Promise.resolve();
    expect(delivered).toEqual([range(10)]);
    gates.get(9)!();
    expect((await done).map((entry) => entry.seq)).toEqual(range(35));
    expect(delivered).toEqual([range(10), range(10, 10), range(10, 20), range(5, 30)]);
  });

  it("hands on overlapping pages' events once", async () => {
    const seqs = range(40).map((index) => index * 3);
    const delivered: number[] = [];
    await readHistory(log(seqs).read, 10, (events) => delivered.push(...events.map((entry) => entry.seq)));
    expect(delivered).toEqual(seqs);
  });

  it('fails when a page fails, also when it fails before the pages ahead of it answer', async () => {
    const server = log(range(25));
    const read = (afterSeq: number, limit: number) => (afterSeq === 19 ? Promise.reject(new Error('session is gone')) : server.read(afterSeq, limit));
    await expect(readHistory(read, 10)).rejects.toThrow('session is gone');
    const slow = async (afterSeq: number, limit: number) => {
      if (afterSeq === 19) throw new Error('session is gone');
      if (afterSeq === 9) await new Promise((resolve) => setImmediate(resolve));
      return server.read(afterSeq, limit);
    };
    await expect(readHistory(slow, 10)).rejects.toThrow('session is gone');
  });
});
