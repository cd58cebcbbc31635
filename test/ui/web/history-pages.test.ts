import { describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import {
  HistoryWindow,
  type EventPage,
  type EventPageRequest,
  type HistoryPaging,
} from '../../../src/ui/web/history-pages.js';

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

/** A server's `get_events` over the given seqs (beforeSeq: the newest `limit` below it; afterSeq: the oldest above it), and the reads made. */
function log(seqs: number[]) {
  const calls: EventPageRequest[] = [];
  const read = async (request: EventPageRequest): Promise<EventPage> => {
    calls.push(request);
    const lastSeq = seqs.at(-1) ?? -1;
    if ('beforeSeq' in request) {
      const below = seqs.filter((seq) => seq < request.beforeSeq);
      return { events: below.slice(-request.limit).map(event), lastSeq, hasMore: below.length > request.limit };
    }
    const above = seqs.filter((seq) => seq > request.afterSeq);
    return { events: above.slice(0, request.limit).map(event), lastSeq, hasMore: above.length > request.limit };
  };
  return { seqs, calls, read };
}

const range = (count: number, from = 0) => Array.from({ length: count }, (_, index) => from + index);
const seqsOf = (window: HistoryWindow) => window.events().map((entry) => entry.seq);

/** Pages of 10, at most 3 held. */
const small: HistoryPaging = { pageSize: 10, maxPages: 3 };

describe('HistoryWindow', () => {
  it('opens on the last page with one read, whatever the log’s length', async () => {
    const server = log(range(1_000));
    const window = new HistoryWindow(server.read, small);
    await window.openTail();
    expect(seqsOf(window)).toEqual(range(10, 990));
    expect(window.place).toEqual({ atStart: false, atTail: true });
    expect(server.calls).toEqual([{ beforeSeq: Number.MAX_SAFE_INTEGER, limit: 10 }]);
  });

  it('opens a short log whole (at its start and its tail), and an empty one', async () => {
    const short = new HistoryWindow(log(range(7)).read, small);
    await short.openTail();
    expect(seqsOf(short)).toEqual(range(7));
    expect(short.place).toEqual({ atStart: true, atTail: true });
    const empty = new HistoryWindow(log([]).read, small);
    await empty.openTail();
    expect(seqsOf(empty)).toEqual([]);
    expect(empty.place).toEqual({ atStart: true, atTail: true });
  });

  it('reads older pages one before the other up to the start, and drops the newest past maxPages (then it no longer follows the tail)', async () => {
    const server = log(range(45));
    const window = new HistoryWindow(server.read, small);
    await window.openTail();
    expect(await window.loadOlder()).toBe(true);
    expect(await window.loadOlder()).toBe(true);
    expect(seqsOf(window)).toEqual(range(30, 15));
    expect(window.place).toEqual({ atStart: false, atTail: true });
    expect(await window.loadOlder()).toBe(true);
    expect(seqsOf(window)).toEqual(range(30, 5));
    expect(window.place).toEqual({ atStart: false, atTail: false });
    expect(await window.loadOlder()).toBe(true);
    expect(seqsOf(window)).toEqual(range(25, 0));
    expect(window.place).toEqual({ atStart: true, atTail: false });
    expect(await window.loadOlder()).toBe(false);
    expect(server.calls.map((call) => ('beforeSeq' in call ? call.beforeSeq : -1))).toEqual([
      Number.MAX_SAFE_INTEGER,
      35,
      25,
      15,
      5,
    ]);
    // Back down: the newer pages are read again, the oldest dropped, until the tail is held.
    expect(await window.loadNewer()).toBe(true);
    expect(await window.loadNewer()).toBe(true);
    expect(seqsOf(window)).toEqual(range(30, 15));
    expect(window.place).toEqual({ atStart: false, atTail: true });
    expect(await window.loadNewer()).toBe(false);
  });

  it('holds live events at the tail (every one once, the ones that came while the tail was read too), and only counts them when the tail is not held', async () => {
    const server = log(range(25));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const window = new HistoryWindow(async (request) => {
      const page = await server.read(request);
      await held;
      return page;
    }, small);
    const opening = window.openTail();
    // Appended and sent while the tail's read was on its way: 24 is in the page too.
    server.seqs.push(25, 26);
    window.addLive([event(24), event(25), event(26)]);
    release();
    await opening;
    expect(seqsOf(window)).toEqual(range(12, 15));
    window.addLive([event(27)]);
    expect(seqsOf(window).at(-1)).toBe(27);
    await window.loadOlder();
    await window.loadOlder();
    expect(window.place.atTail).toBe(false);
    const before = seqsOf(window);
    server.seqs.push(28, 29);
    window.addLive([event(28), event(29)]);
    expect(seqsOf(window)).toEqual(before);
    while (!window.place.atTail) await window.loadNewer();
    expect(seqsOf(window).at(-1)).toBe(29);
    expect(new Set(seqsOf(window)).size).toBe(seqsOf(window).length);
  });

  it('keeps at most maxPages pages as live events come (a dropped page says so)', async () => {
    const window = new HistoryWindow(log(range(25)).read, small);
    await window.openTail();
    let dropped = false;
    for (const seq of range(40, 25)) dropped = window.addLive([event(seq)]) || dropped;
    expect(dropped).toBe(true);
    expect(window.size).toBeLessThanOrEqual(30);
    expect(seqsOf(window).at(-1)).toBe(64);
    expect(window.place).toEqual({ atStart: false, atTail: true });
  });

  it('opens at a seq (a search hit): the page up to it and a quarter page after, older and newer pages read from there', async () => {
    const server = log(range(100));
    const window = new HistoryWindow(server.read, small);
    await window.openAt(40);
    expect(seqsOf(window)).toEqual(range(13, 31));
    expect(window.place).toEqual({ atStart: false, atTail: false });
    await window.loadOlder();
    expect(seqsOf(window)[0]).toBe(21);
    while (!window.place.atTail) await window.loadNewer();
    expect(seqsOf(window).at(-1)).toBe(99);
    // Near the end, the quarter page after it reaches the tail.
    const late = new HistoryWindow(server.read, small);
    await late.openAt(98);
    expect(seqsOf(late)).toEqual(range(11, 89));
    expect(late.place).toEqual({ atStart: false, atTail: true });
  });

  it('drops repeats where seqs skip (a branch’s ranges)', async () => {
    const seqs = range(40).map((index) => index * 3);
    const window = new HistoryWindow(log(seqs).read, small);
    await window.openTail();
    while (!window.place.atStart) await window.loadOlder();
    while (!window.place.atTail) await window.loadNewer();
    expect(seqsOf(window)).toEqual(seqs.slice(-seqsOf(window).length));
  });
});
