import type { StreamEvent } from '../../conversation/index.js';

/** One `get_events` answer, as far as loading a history needs it. */
export interface EventPage {
  events: StreamEvent[];
  lastSeq: number;
  hasMore: boolean;
}

/** Reads the events after `afterSeq`, at most `limit` of them. */
export type EventPageReader = (afterSeq: number, limit: number) => Promise<EventPage>;

/** Called with each run of new events, oldest first, as soon as the pages before it are in. */
export type HistoryListener = (events: StreamEvent[]) => void;

/**
 * Reads a session's whole log in pages of `pageSize`. The first page tells the newest `seq`; the
 * rest are asked for at once, each starting `pageSize` seqs after the one before, so the server
 * prepares the next page while the page parses this one (one after another, the page waited for
 * the server about half of the time it took to open 12,000 blocks). Pages are taken in order as
 * they arrive, and each one's new events go to `onEvents` then, so a caller can fold them while
 * later pages are still on their way. Seqs count up one by one in every store today; should they
 * ever skip, a page covers more than `pageSize` seqs and overlaps the next (its repeats are
 * dropped), and where two pages do not meet, or the log grew meanwhile, the rest is read one page
 * after another from the last event held.
 */
export async function readHistory(read: EventPageReader, pageSize: number, onEvents?: HistoryListener): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  let cursor = -1;
  const take = (page: EventPage) => {
    const fresh = page.events.filter((event) => event.seq > cursor);
    if (fresh.length === 0) return;
    for (const event of fresh) events.push(event);
    cursor = fresh.at(-1)!.seq;
    onEvents?.(fresh);
  };
  const first = await read(-1, pageSize);
  take(first);
  if (!first.hasMore || first.events.length === 0) return events;
  const starts: number[] = [];
  for (let afterSeq = cursor; afterSeq < first.lastSeq; afterSeq += pageSize) starts.push(afterSeq);
  const pages = starts.map((afterSeq) => read(afterSeq, pageSize));
  // Awaited in order below; a later page that fails first must not go unhandled meanwhile.
  for (const page of pages) page.catch(() => undefined);
  let hasMore: boolean = true;
  for (const [index, pending] of pages.entries()) {
    if (starts[index]! > cursor) break;
    const page = await pending;
    take(page);
    hasMore = page.hasMore && page.events.length > 0;
    if (!hasMore) break;
  }
  while (hasMore) {
    const page = await read(cursor, pageSize);
    take(page);
    hasMore = page.hasMore && page.events.length > 0;
  }
  return events;
}
