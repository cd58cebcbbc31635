import type { StreamEvent } from '../../conversation/index.js';

/** One `get_events` answer, as far as loading a history needs it. */
export interface EventPage {
  events: StreamEvent[];
  lastSeq: number;
  hasMore: boolean;
}

/** Reads the events after `afterSeq`, at most `limit` of them. */
export type EventPageReader = (afterSeq: number, limit: number) => Promise<EventPage>;

/**
 * Reads a session's whole log in pages of `pageSize`. The first page tells the newest `seq`; the
 * rest are asked for at once, each starting `pageSize` seqs after the one before, so the server
 * prepares the next page while the page parses this one (one after another, the page waited for
 * the server about half of the time it took to open 12,000 blocks). Seqs count up one by one in
 * every store today; should they ever skip, a page covers more than `pageSize` seqs and overlaps
 * the next (its repeats are dropped), and where two pages do not meet, or the log grew meanwhile,
 * the rest is read one page after another from the last event held.
 */
export async function readHistory(read: EventPageReader, pageSize: number): Promise<StreamEvent[]> {
  const first = await read(-1, pageSize);
  const events = [...first.events];
  if (!first.hasMore || first.events.length === 0) return events;
  let cursor = first.events.at(-1)!.seq;
  const starts: number[] = [];
  for (let afterSeq = cursor; afterSeq < first.lastSeq; afterSeq += pageSize) starts.push(afterSeq);
  const pages = await Promise.all(starts.map((afterSeq) => read(afterSeq, pageSize)));
  let hasMore: boolean = true;
  for (const [index, page] of pages.entries()) {
    if (starts[index]! > cursor) break;
    for (const event of page.events) if (event.seq > cursor) events.push(event);
    cursor = events.at(-1)!.seq;
    hasMore = page.hasMore && page.events.length > 0;
    if (!hasMore) break;
  }
  while (hasMore) {
    const page = await read(cursor, pageSize);
    for (const event of page.events) if (event.seq > cursor) events.push(event);
    cursor = events.at(-1)!.seq;
    hasMore = page.hasMore && page.events.length > 0;
  }
  return events;
}
