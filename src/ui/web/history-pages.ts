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
 * Reads a session's whole log in pages of `pageSize`. Beside the first page it asks for one event
 * only: that answer comes back at once with the newest `seq`, and the other pages are asked for
 * then, each starting `pageSize` seqs after the one before, while the server still prepares the
 * first (waiting for the first page before asking for the rest left the server idle while the
 * page took that page in). Pages are taken in order as they arrive, and each one's new events go
 * to `onEvents` then, so a caller can fold them while later pages are still on their way. Seqs
 * count up one by one in every store today; should they ever skip, a page covers more than
 * `pageSize` seqs and overlaps the next (its repeats are dropped), and where two pages do not
 * meet, or the log grew meanwhile, the rest is read one page after another from the last event held.
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
  // The probe goes first: the server answers in order, and it is quick to answer.
  const probe = read(-1, 1);
  const firstPage = read(-1, pageSize);
  // Awaited in order below; one that fails while another is awaited must not go unhandled meanwhile.
  firstPage.catch(() => undefined);
  const newest = await probe;
  const oldest = newest.events[0]?.seq;
  const starts: number[] = [];
  if (oldest !== undefined && newest.hasMore) for (let afterSeq = oldest + pageSize - 1; afterSeq < newest.lastSeq; afterSeq += pageSize) starts.push(afterSeq);
  const pages = starts.map((afterSeq) => read(afterSeq, pageSize));
  for (const page of pages) page.catch(() => undefined);
  const first = await firstPage;
  take(first);
  let hasMore = first.hasMore && first.events.length > 0;
  for (const [index, pending] of pages.entries()) {
    if (!hasMore || starts[index]! > cursor) break;
    const page = await pending;
    take(page);
    hasMore = page.hasMore && page.events.length > 0;
  }
  while (hasMore) {
    const page = await read(cursor, pageSize);
    take(page);
    hasMore = page.hasMore && page.events.length > 0;
  }
  return events;
}
