import type { StreamEvent } from '../../conversation/index.js';

/** One `get_events` answer, as far as paging a history needs it. */
export interface EventPage {
  events: StreamEvent[];
  lastSeq: number;
  hasMore: boolean;
}

/**
 * One `get_events` read: `beforeSeq` reads the newest `limit` events below it (`hasMore`: older
 * ones remain), `afterSeq` the oldest `limit` above it (`hasMore`: newer ones remain).
 */
export type EventPageRequest = { beforeSeq: number; limit: number } | { afterSeq: number; limit: number };

export type EventPageReader = (request: EventPageRequest) => Promise<EventPage>;

/** How a history is paged: events a page, and how many pages the page holds at most. */
export interface HistoryPaging {
  pageSize: number;
  maxPages: number;
}

/**
 * How the web UI pages a session's log. A session opens on its last 1,000 events (one read,
 * whatever the session's length: the first frame waits for that page only), older pages come as
 * the reader scrolls up, and the page holds at most five pages, 5,000 events: a page far from where
 * the reader is goes, and is read again when the reader comes back to it. A page of 1,000 events
 * is a few hundred blocks, more than the chat view's first window of 300.
 */
export const HISTORY_PAGING: HistoryPaging = { pageSize: 1_000, maxPages: 5 };

/** Reads `loadNewer` makes at most when answers come back with nothing new while live events say there is more. */
const NEWER_ATTEMPTS = 3;

/** A seq past the end of every log: `beforeSeq` of it reads the last page. */
const END = Number.MAX_SAFE_INTEGER;

/** Where the held pages are in the log: whether older or newer events remain on the server. */
export interface HistoryPlace {
  /** The oldest event held is the branch's first: nothing older to read. */
  atStart: boolean;
  /** The newest event held is the branch's last: live events are added to the held pages. */
  atTail: boolean;
}

/**
 * The part of a session's log the page holds: at most `maxPages` pages of at most `pageSize`
 * events, consecutive on the active branch, oldest first. It opens on the log's last page
 * (`openTail`), reads the page before the oldest one held (`loadOlder`) or after the newest
 * (`loadNewer`), and drops the page at the other end when it holds more than `maxPages`; once the
 * newest page is dropped it no longer follows the tail, and live events are only counted (their
 * seq) until `loadNewer` reads up to them again. Reads go one at a time; an event is held once
 * however its pages and the live events overlap (by seq, which counts up along the branch).
 */
export class HistoryWindow {
  private pages: StreamEvent[][] = [];
  private opened = false;
  private start = false;
  private tail = true;
  /** The newest seq the page has heard of: the last read's `lastSeq`, or a live event's. */
  private tipSeq = -1;
  /** Live events that came while the tail was being read: added once it is in. */
  private early: StreamEvent[] = [];
  private reading: Promise<boolean> | undefined;

  constructor(
    private readonly read: EventPageReader,
    private readonly paging: HistoryPaging = HISTORY_PAGING,
  ) {}

  get place(): HistoryPlace {
    return { atStart: this.start, atTail: this.tail };
  }

  /** Whether a read is on its way (at most one is). */
  get busy(): boolean {
    return this.reading !== undefined;
  }

  /** The events held, oldest first. */
  events(): StreamEvent[] {
    return this.pages.flat();
  }

  /** Whether the event of this seq is among those held. */
  holds(seq: number): boolean {
    const first = this.firstSeq;
    return first !== undefined && first <= seq && seq <= this.lastSeq;
  }

  /** How many events are held (at most `maxPages × pageSize`). */
  get size(): number {
    let count = 0;
    for (const page of this.pages) count += page.length;
    return count;
  }

  private get firstSeq(): number | undefined {
    return this.pages[0]?.[0]?.seq;
  }

  private get lastSeq(): number {
    return this.pages.at(-1)?.at(-1)?.seq ?? -1;
  }

  /** Reads the log's last page; live events that came meanwhile are added after it. */
  async openTail(): Promise<void> {
    const page = await this.read({ beforeSeq: END, limit: this.paging.pageSize });
    this.opened = true;
    this.tipSeq = Math.max(this.tipSeq, page.lastSeq);
    this.pages = page.events.length > 0 ? [page.events] : [];
    this.start = !page.hasMore;
    this.tail = true;
    this.takeEarly();
  }

  /**
   * Opens at `seq` (a search hit's event): the page that ends with it and a quarter page after it,
   * so its block and what follows are among the newest blocks the chat view shows first (its window
   * of 300 blocks is more than a quarter page of events). Older and newer pages are read from there.
   */
  async openAt(seq: number): Promise<void> {
    const [before, after] = await Promise.all([
      this.read({ beforeSeq: seq + 1, limit: this.paging.pageSize }),
      this.read({ afterSeq: seq, limit: Math.ceil(this.paging.pageSize / 4) }),
    ]);
    this.opened = true;
    this.tipSeq = Math.max(this.tipSeq, before.lastSeq, after.lastSeq);
    const upTo = before.events.filter((event) => event.seq <= seq);
    const following = after.events.filter((event) => event.seq > seq);
    this.pages = [upTo, following].filter((page) => page.length > 0);
    this.start = !before.hasMore;
    this.tail = !after.hasMore;
    this.takeEarly();
  }

  /** The live events that came while the first read was on its way, added now that it is in. */
  private takeEarly(): void {
    const early = this.early;
    this.early = [];
    this.addLive(early);
    // The tail moved on between the read and now by more than the live events told: read up to it.
    if (this.lastSeq < this.tipSeq) this.tail = false;
  }

  /**
   * Live events (in seq order). Held when the newest page is the tail (a full page starts a new
   * one, and the oldest goes past `maxPages`); otherwise only their seq is kept, and they are read
   * again with the page they fall in. Returns true when a page was dropped (the caller folds the
   * held events again rather than adding these to what it folded).
   */
  addLive(events: readonly StreamEvent[]): boolean {
    if (!this.opened) {
      this.early.push(...events);
      return false;
    }
    let dropped = false;
    for (const event of events) {
      this.tipSeq = Math.max(this.tipSeq, event.seq);
      if (!this.tail || event.seq <= this.lastSeq) continue;
      const newest = this.pages.at(-1);
      if (newest && newest.length < this.paging.pageSize) newest.push(event);
      else this.pages.push([event]);
      if (this.pages.length > this.paging.maxPages) {
        this.pages.shift();
        this.start = false;
        dropped = true;
      }
    }
    return dropped;
  }

  /** Reads the page before the oldest held; false when there is none (or a read is on its way). */
  loadOlder(): Promise<boolean> {
    if (this.start || this.reading || this.firstSeq === undefined) return Promise.resolve(false);
    return this.oneAtATime(async () => {
      const before = this.firstSeq!;
      const page = await this.read({ beforeSeq: before, limit: this.paging.pageSize });
      this.tipSeq = Math.max(this.tipSeq, page.lastSeq);
      const fresh = page.events.filter((event) => event.seq < before);
      this.start = !page.hasMore || fresh.length === 0;
      if (fresh.length === 0) return false;
      this.pages.unshift(fresh);
      if (this.pages.length > this.paging.maxPages) {
        this.pages.pop();
        this.tail = false;
      }
      return true;
    });
  }

  /** Reads the page after the newest held; false when the tail is held already (or a read is on its way). */
  loadNewer(): Promise<boolean> {
    if (this.tail || this.reading) return Promise.resolve(false);
    return this.oneAtATime(async () => {
      // A live event newer than an answer (sent while it was on its way) is read by the next read.
      for (let attempt = 0; attempt < NEWER_ATTEMPTS; attempt++) {
        const after = this.lastSeq;
        const page = await this.read({ afterSeq: after, limit: this.paging.pageSize });
        this.tipSeq = Math.max(this.tipSeq, page.lastSeq);
        const fresh = page.events.filter((event) => event.seq > after);
        if (fresh.length > 0) this.pages.push(fresh);
        if (this.pages.length > this.paging.maxPages) {
          this.pages.shift();
          this.start = false;
        }
        this.tail = !page.hasMore && this.lastSeq >= this.tipSeq;
        if (fresh.length > 0 || this.tail) return true;
      }
      return false;
    });
  }

  private async oneAtATime(work: () => Promise<boolean>): Promise<boolean> {
    const reading = work();
    this.reading = reading;
    try {
      return await reading;
    } finally {
      this.reading = undefined;
    }
  }
}
