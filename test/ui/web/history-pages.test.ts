import { describe, expect, it, vi } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { readHistory, type EventPage, type HistoryReading } from '../../../src/ui/web/history-pages.js';

function event(seq: number): StreamEvent {
  return {
    type: 'metadata_update',
    conversationId: 'main',
    metadata: { turnComplete: true },
    sessionId: 's',
    seq,
    at: 0,
  } as unknown as StreamEvent;
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

/** Pages of 10, every page asked for at once. */
const allAtOnce: HistoryReading = { pageSize: 10, pagesInFlight: Number.POSITIVE_INFINITY };

const range = (count: number, from = 0) => Array.from({ length: count }, (_, index) => from + index);

describe('readHistory', () => {
  it('reads a log of one page with a one-event probe and that page, asked at once, the probe first', async () => {
    const server = log(range(7));
    const limits: number[] = [];
    const read = (afterSeq: number, limit: number) => {
      limits.push(limit);
      return server.read(afterSeq, limit);
    };
    expect((await readHistory(read, allAtOnce)).map((entry) => entry.seq)).toEqual(range(7));
    expect(server.calls).toEqual([-1, -1]);
    expect(limits).toEqual([1, 10]);
  });

  it('reads an empty log', async () => {
    expect(await readHistory(log([]).read, allAtOnce)).toEqual([]);
  });

  it('asks for the other pages at once, as soon as the probe tells the newest seq, while the first page is still on its way; every event once, in order', async () => {
    const server = log(range(35));
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const read = async (afterSeq: number, limit: number) => {
      if (afterSeq === -1 && limit > 1) await firstHeld;
      return server.read(afterSeq, limit);
    };
    const done = readHistory(read, allAtOnce);
    await vi.waitFor(() => expect(server.calls).toEqual([-1, 9, 19, 29]));
    releaseFirst();
    expect((await done).map((entry) => entry.seq)).toEqual(range(35));
    expect(server.calls).toEqual([-1, 9, 19, 29, -1]);
  });

  it('starts the other pages from the oldest seq the probe saw (a log that does not start at 0)', async () => {
    const server = log(range(35, 100));
    expect((await readHistory(server.read, allAtOnce)).map((entry) => entry.seq)).toEqual(range(35, 100));
    expect(server.calls).toEqual([-1, -1, 109, 119, 129]);
  });

  it('drops the repeats where seqs skip and pages overlap', async () => {
    const seqs = range(40).map((index) => index * 3);
    const server = log(seqs);
    expect((await readHistory(server.read, allAtOnce)).map((entry) => entry.seq)).toEqual(seqs);
  });

  it('reads on from the last event when pages do not meet (a server that answers fewer than asked)', async () => {
    const server = log(range(30));
    const short = (afterSeq: number, limit: number) => server.read(afterSeq, Math.min(limit, 4));
    expect((await readHistory(short, allAtOnce)).map((entry) => entry.seq)).toEqual(range(30));
  });

  it('reads what was appended while the pages loaded', async () => {
    const server = log(range(25));
    const read = async (afterSeq: number, limit: number) => {
      const page = await server.read(afterSeq, limit);
      if (afterSeq === -1 && limit > 1) server.seqs.push(...range(12, 25));
      return page;
    };
    expect((await readHistory(read, allAtOnce)).map((entry) => entry.seq)).toEqual(range(37));
  });

  it("hands each page's new events on in order as soon as the pages before it are in, even when a later page answers first", async () => {
    const server = log(range(35));
    const gates = new Map<number, () => void>();
    const read = async (afterSeq: number, limit: number) => {
      if (afterSeq !== -1) await new Promise<void>((resolve) => gates.set(afterSeq, resolve));
      return server.read(afterSeq, limit);
    };
    const delivered: number[][] = [];
    const done = readHistory(read, allAtOnce, (events) => delivered.push(events.map((entry) => entry.seq)));
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
    await readHistory(log(seqs).read, allAtOnce, (events) => delivered.push(...events.map((entry) => entry.seq)));
    expect(delivered).toEqual(seqs);
  });

  it('keeps at most `pagesInFlight` pages asked for and not taken, asking for the next as each page is taken, before its events are handed on', async () => {
    const server = log(range(45));
    const gates = new Map<number, () => void>();
    const asked: number[] = [];
    const read = async (afterSeq: number, limit: number) => {
      asked.push(afterSeq);
      if (limit > 1) await new Promise<void>((resolve) => gates.set(afterSeq, resolve));
      return server.read(afterSeq, limit);
    };
    const callsWhenHandedOn: number[][] = [];
    const done = readHistory(read, { pageSize: 10, pagesInFlight: 2 }, () => callsWhenHandedOn.push([...asked]));
    // The probe, the first page and one page more; the rest wait.
    await vi.waitFor(() => expect(asked).toEqual([-1, -1, 9]));
    expect(gates.size).toBe(2);
    // A later page answering first asks for nothing: only a page taken in frees its place.
    gates.get(9)!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked).toEqual([-1, -1, 9]);
    expect(callsWhenHandedOn).toEqual([]);
    // The first page taken in asks for the next, and so does the page after it, in already.
    gates.get(-1)!();
    await vi.waitFor(() => expect(asked).toEqual([-1, -1, 9, 19, 29]));
    gates.get(19)!();
    await vi.waitFor(() => expect(asked).toEqual([-1, -1, 9, 19, 29, 39]));
    gates.get(29)!();
    gates.get(39)!();
    expect((await done).map((entry) => entry.seq)).toEqual(range(45));
    // Each page's events were handed on after the next page was asked for.
    expect(callsWhenHandedOn.map((calls) => calls.at(-1))).toEqual([19, 29, 39, 39, 39]);
    expect(asked).toEqual([-1, -1, 9, 19, 29, 39]);
  });

  it('reads one page at a time with `pagesInFlight` 1, every event once, in order', async () => {
    const server = log(range(35));
    let inFlight = 0;
    let most = 0;
    const read = async (afterSeq: number, limit: number) => {
      if (limit === 1) return server.read(afterSeq, limit);
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight -= 1;
      return server.read(afterSeq, limit);
    };
    const delivered: number[] = [];
    expect(
      (
        await readHistory(read, { pageSize: 10, pagesInFlight: 1 }, (events) =>
          delivered.push(...events.map((entry) => entry.seq)),
        )
      ).map((entry) => entry.seq),
    ).toEqual(range(35));
    expect(delivered).toEqual(range(35));
    expect(most).toBe(1);
  });

  it('fails when a page fails, also when it fails before the pages ahead of it answer', async () => {
    const server = log(range(25));
    const read = (afterSeq: number, limit: number) =>
      afterSeq === 19 ? Promise.reject(new Error('session is gone')) : server.read(afterSeq, limit);
    await expect(readHistory(read, allAtOnce)).rejects.toThrow('session is gone');
    const slow = async (afterSeq: number, limit: number) => {
      if (afterSeq === 19) throw new Error('session is gone');
      if (afterSeq === 9) await new Promise((resolve) => setImmediate(resolve));
      return server.read(afterSeq, limit);
    };
    await expect(readHistory(slow, allAtOnce)).rejects.toThrow('session is gone');
  });
});
