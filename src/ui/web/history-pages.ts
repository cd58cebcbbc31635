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

/** How a history is read: events a page, and how many pages the server is asked for at a time. */
export interface HistoryReading {
  pageSize: number;
  /** Pages asked for and not yet taken, the first page included (at least 1). */
  pagesInFlight: number;
}

/**
 * How the web UI reads a session's log. Pages of 2,500 events, three asked for at a time: the server
 * works on the pages it is asked for side by side (its reads interleave), so pages asked for all at
 * once all came back near the end, and the page's own work on them (JSON.parse, the check, the
 * fold) waited until then; three at a time keep the server busy while the page takes each one in,
 * and leave only the last small page's work after the server's last answer, so the page's longest
 * task while a long history loads is shorter. The time to the first frame is mostly the server's
 * reads: bench/web.bench.ts opens a long session beside a Node floor that reads with the same page size.
 */
export const HISTORY_READING: HistoryReading = { pageSize: 2_500, pagesInFlight: 3 };

/**
 * Reads a session's whole log in pages of `pageSize`. Beside the first page it asks for one event
 * only: that answer comes back at once with the newest `seq`, and the other pages are asked for
 * then, each starting `pageSize` seqs after the one before, while the server still prepares the
 * first. At most `pagesInFlight` pages are asked for and not yet taken: each page taken in asks
 * for the next before its events are handed on. Pages are taken in order as they arrive, and each
 * one's new events go to `onEvents` then, so a caller can fold them while later pages are still on
 * their way. Seqs count up one by one in every store today; should they ever skip, a page covers
 * more than `pageSize` seqs and overlaps the next (its repeats are dropped), and where two pages do
 * not meet, or the log grew meanwhile, the rest is read one page after another from the last event held.
 */
export async function readHistory(
  read: EventPageReader,
  reading: HistoryReading,
  onEvents?: HistoryListener,
): Promise<StreamEvent[]> {
  const { pageSize } = reading;
  const pagesInFlight = Math.max(1, Math.floor(reading.pagesInFlight));
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
  if (oldest !== undefined && newest.hasMore)
    for (let afterSeq = oldest + pageSize - 1; afterSeq < newest.lastSeq; afterSeq += pageSize) starts.push(afterSeq);
  const pages: Array<Promise<EventPage>> = [];
  const askNext = () => {
    const afterSeq = starts[pages.length];
    if (afterSeq === undefined) return;
    const page = read(afterSeq, pageSize);
    page.catch(() => undefined);
    pages.push(page);
  };
  // The first page is in flight already.
  while (pages.length < pagesInFlight - 1 && pages.length < starts.length) askNext();
  const first = await firstPage;
  askNext();
  take(first);
  let hasMore = first.hasMore && first.events.length > 0;
  for (let index = 0; index < starts.length && hasMore && starts[index]! <= cursor; index += 1) {
    const page = await pages[index]!;
    // The next page is asked for before this one is folded, so the server works on it meanwhile.
    askNext();
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
