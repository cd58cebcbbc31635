import { promises as fs, readFileSync, readdirSync, statSync } from 'node:fs';
import type { StreamEvent } from '../../conversation/index.js';
import { ensureDirectory, isErrno, syncDirectory, writeDurably } from '../atomic-file.js';
import type { StoreWarning } from '../errors.js';
import { IdSchema } from '../record-format.js';
import type { FileLayout } from './file-layout.js';
import { ListingIndex } from './file-listing-index.js';
import { MessageIndex, itemOf } from './file-message-index.js';
import { readSessionRecords } from './file-records.js';
import type { SessionRecord } from './records.js';
import { messageOf } from './session-search.js';

/** Session folders read between two yields to the event loop while an index is rebuilt. */
const REBUILD_CHUNK = 200;
/** A log written this long before the crashed process opened the store may still hold unindexed events (clock granularity). */
const MTIME_SLACK_MS = 2_000;

/**
 * The file store's two derived indexes (listing and search) and the marker that says whether the
 * last process to open the store closed them cleanly. Found at open, the marker means a crash (or
 * a failed index write): the listing is rebuilt from the records, and the search index catches up
 * from every log written since that process opened. Nothing here changes a session's files.
 */
export class FileIndexes {
  private listingIndex: Promise<ListingIndex> | undefined;
  private messageIndex: Promise<MessageIndex> | undefined;
  private messageState: 'unloaded' | 'loading' | 'loaded' = 'unloaded';
  /** Messages appended while the search index loads: added once it is loaded. */
  private waiting: Array<Parameters<MessageIndex['add']>[0]> = [];
  private readonly listing: ListingIndex;
  private readonly messages: MessageIndex;
  private writeFailed = false;
  private readonly openedAt = Date.now();

  private constructor(
    private readonly layout: FileLayout,
    private readonly warn: (warning: StoreWarning) => void,
    /** When the process that did not close cleanly opened the store; undefined after a clean close. */
    private readonly crashedSince: number | undefined,
  ) {
    const failed = (which: string) => (error: unknown) => {
      this.writeFailed = true;
      warn({
        code: 'INDEX_WRITE_FAILED',
        file: which,
        message: `Could not write ${which} (${String(error)}); sessions are unaffected, and the index catches up from them at the next open.`,
      });
    };
    this.listing = new ListingIndex(layout.listingIndexFile, layout.tmpDir, failed(layout.listingIndexFile));
    this.messages = new MessageIndex({
      path: layout.messageIndexFile,
      tmpDir: layout.tmpDir,
      onWriteFailure: failed(layout.messageIndexFile),
    });
  }

  /** Writes the open marker (durably, so a crash from now on is noticed). */
  static async open(layout: FileLayout, warn: (warning: StoreWarning) => void): Promise<FileIndexes> {
    await ensureDirectory(layout.indexDir);
    let crashedSince: number | undefined;
    try {
      crashedSince = (await fs.stat(layout.indexOpenMarker)).mtimeMs;
    } catch (error) {
      if (!isErrno(error, 'ENOENT')) throw error;
    }
    if (crashedSince === undefined) {
      await writeDurably(layout.indexOpenMarker, `${process.pid}\n`, 'w');
      await syncDirectory(layout.indexDir);
    }
    const indexes = new FileIndexes(layout, warn, crashedSince);
    // A listing closed cleanly loads at its first use, not here: a process that only searches or
    // reads a session (`parley search`, `parley show`) never parses it, nor waits for it at close.
    // One to rebuild is rebuilt now, from the records as they were at the open.
    if (crashedSince !== undefined || !(await exists(layout.listingIndexFile)))
      indexes.listingIndex = indexes.loadListing();
    // Without a clean close, or without an index at all, the search index is brought up to date now, not at the first search.
    if (crashedSince !== undefined || !(await exists(layout.messageIndexFile)))
      indexes.messageIndex = indexes.loadMessages();
    return indexes;
  }

  listingReady(): Promise<ListingIndex> {
    return (this.listingIndex ??= this.loadListing());
  }

  /** A page of ids from the listing index; a snapshot found damaged when it is read is rebuilt from the records first. */
  async listingPage(...query: Parameters<ListingIndex['page']>): Promise<ReturnType<ListingIndex['page']>> {
    const index = await this.listingReady();
    const page = index.page(...query);
    if (!index.damaged) return page;
    this.listingIndex = this.rebuildListing();
    return (await this.listingIndex).page(...query);
  }

  messagesReady(): Promise<MessageIndex> {
    return (this.messageIndex ??= this.loadMessages());
  }

  /** A session's record changed (or was created): never throws, never waits. */
  recordChanged(record: SessionRecord): void {
    void this.listingReady().then((index) => index.put(record));
  }

  /** Events are durable in a session's log: their messages join the search index. Never throws. */
  appended(sessionId: string, events: readonly StreamEvent[]): void {
    const items = [];
    for (const event of events) {
      const message = messageOf(event);
      if (message !== undefined) items.push(itemOf(sessionId, event.seq, message));
    }
    if (items.length === 0) return;
    if (this.messageState === 'loaded') this.messages.add(items);
    else if (this.messageState === 'loading') this.waiting.push(items);
    // Not loaded in this process: the lines go to the file, which the load reads.
    else this.messages.addToFile(items);
  }

  private async loadListing(): Promise<ListingIndex> {
    const loaded = this.crashedSince === undefined && (await this.listing.load());
    return loaded ? this.listing : this.rebuildListing();
  }

  private async rebuildListing(): Promise<ListingIndex> {
    const records = await this.allRecords();
    await this.listing.rebuild(records);
    this.rebuilt(this.layout.listingIndexFile, records.length);
    return this.listing;
  }

  private async loadMessages(): Promise<MessageIndex> {
    // Writes made before the load reach the file first, so the load reads them.
    await this.messages.settled();
    this.messageState = 'loading';
    try {
      if (!(await this.messages.load())) {
        const items = [];
        for (const sessionId of await this.sessionIds())
          items.push(...(await messagesOfLog(this.layout, sessionId, -1)));
        await this.messages.rebuild(items);
        this.rebuilt(this.layout.messageIndexFile, items.length);
      } else if (this.crashedSince !== undefined || this.writeFailed) {
        // After a crash, from when that process opened; after a failed write in this one, from this open.
        let caughtUp = 0;
        const since = (this.crashedSince ?? this.openedAt) - MTIME_SLACK_MS;
        for (const sessionId of await this.sessionIds()) {
          if (modifiedMs(this.layout.logFile(sessionId)) < since) continue;
          const items = await messagesOfLog(this.layout, sessionId, this.messages.indexedSeq(sessionId));
          this.messages.add(items);
          caughtUp += items.length;
        }
        if (caughtUp > 0)
          this.warn({
            code: 'INDEX_REBUILT',
            file: this.layout.messageIndexFile,
            message: `The search index was behind the logs (the store was not closed cleanly, or an index write failed); ${caughtUp} messages were added from the logs.`,
          });
      }
    } finally {
      this.messageState = 'loaded';
      for (const items of this.waiting) this.messages.add(items);
      this.waiting = [];
    }
    return this.messages;
  }

  private rebuilt(file: string, count: number): void {
    if (count === 0) return;
    this.warn({
      code: 'INDEX_REBUILT',
      file,
      message: `Rebuilt ${file} from the sessions (${count} entries): it was missing, damaged, or the store was not closed cleanly.`,
    });
  }

  private async sessionIds(): Promise<string[]> {
    let names: string[];
    try {
      names = readdirSync(this.layout.sessionsDir);
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return [];
      throw error;
    }
    return names.filter((name) => IdSchema.safeParse(name).success);
  }

  private async allRecords(): Promise<SessionRecord[]> {
    // An unreadable record is left out here; listing the sessions whole reports it.
    return (await readSessionRecords(this.layout, await this.sessionIds())).records;
  }

  /** Waits for pending index writes (tests, and close). */
  async settled(): Promise<void> {
    await this.listingIndex;
    if (this.messageIndex !== undefined) await this.messageIndex;
    await this.messages.settled();
  }

  /** Writes and syncs both indexes; the marker is removed only when every index write since the open succeeded. */
  async close(): Promise<void> {
    await Promise.allSettled([this.listingIndex, this.messageIndex]);
    const clean = (await this.listing.close()) && (await this.messages.close()) && !this.writeFailed;
    if (clean) await fs.rm(this.layout.indexOpenMarker, { force: true }).catch(() => undefined);
  }
}

let readSinceYield = 0;

/** The messages of a session's log after `afterSeq`, read from the file (the index never opens the store's own log handles). */
async function messagesOfLog(
  layout: FileLayout,
  sessionId: string,
  afterSeq: number,
): Promise<ReturnType<typeof itemOf>[]> {
  if (++readSinceYield >= REBUILD_CHUNK) {
    readSinceYield = 0;
    await new Promise((resolve) => setImmediate(resolve));
  }
  let text: string;
  try {
    text = readFileSync(layout.logFile(sessionId), 'utf8');
  } catch {
    return [];
  }
  const items = [];
  const lines = text.split('\n');
  for (let index = 1; index < lines.length; index++) {
    const line = lines[index]!;
    // Only complete message blocks are indexed: skip the rest without parsing it.
    if (!line.includes('"block_complete"')) continue;
    let event: StreamEvent;
    try {
      event = JSON.parse(line) as StreamEvent;
    } catch {
      continue;
    }
    if (typeof event.seq !== 'number' || event.seq <= afterSeq) continue;
    const message = messageOf(event);
    if (message !== undefined) items.push(itemOf(sessionId, event.seq, message));
  }
  return items;
}

function modifiedMs(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await fs.stat(path);
    return true;
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return false;
    throw error;
  }
}
