import { closeSync, fsyncSync, openSync, promises as fs, writeSync } from 'node:fs';
import { replaceFile, isErrno } from '../atomic-file.js';

/**
 * The file an index of the file store is kept in: a header line, a snapshot line (every item, one
 * JSON array), then one line per item added since (a later line for the same key wins, as the
 * reader decides). Derived data: nothing here is ever the only copy of anything, so lines are
 * written without fsync (a crash may lose the last ones; the store's open marker then says so and
 * the index catches up from the truth), and a write that fails is reported, never thrown, so it
 * cannot fail the append or update it follows. Every write after a failure is skipped until the
 * index is rewritten whole: a journal with a hole in it must not look whole.
 */
export interface IndexJournalOptions<Item> {
  path: string;
  tmpDir: string;
  /** Written in the header and checked on load: a file of another kind is damaged. */
  kind: string;
  isItem: (value: unknown) => value is Item;
  onWriteFailure: (error: unknown) => void;
}

const FORMAT_VERSION = 1;

export class IndexJournal<Item> {
  private pending: string[] = [];
  private writing: Promise<void> = Promise.resolve();
  private scheduled = false;
  /** The file, open for appending (a plain descriptor: small writes of derived data need no thread-pool round trip). */
  private descriptor: number | undefined;
  /** Item lines after the snapshot: once they outnumber the live items, the file is rewritten. */
  private lines = 0;
  private failed = false;

  constructor(private readonly options: IndexJournalOptions<Item>) {}

  /** Every item in file order, or undefined when the file is missing or damaged. A torn last line is from a crash: left out. */
  async load(): Promise<Item[] | undefined> {
    let text: string;
    try {
      text = await fs.readFile(this.options.path, 'utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT') || isErrno(error, 'EISDIR')) return undefined;
      throw error;
    }
    const items = parseJournal(text, this.options.kind, this.options.isItem);
    if (items !== undefined) this.lines = items.lines;
    return items?.items;
  }

  /** Replaces the file with a snapshot of `items`, durably; clears an earlier failure. */
  async rewrite(items: readonly Item[]): Promise<void> {
    const run = this.writing.then(async () => {
      await this.closeHandle();
      this.pending = [];
      try {
        await replaceFile(this.options.tmpDir, this.options.path, snapshotText(this.options.kind, items));
        this.failed = false;
        this.lines = 0;
      } catch (error) {
        this.fail(error);
      }
    });
    this.writing = run;
    await run;
  }

  /** Adds an item; `count` and `snapshot` say how many live items there are and give them, for a rewrite. */
  add(item: Item, count: number, snapshot: () => Item[]): void {
    this.pending.push(`${JSON.stringify(item)}\n`);
    if (this.scheduled) return;
    this.scheduled = true;
    // Items added in one turn of the event loop go out in one write.
    setImmediate(() => {
      this.scheduled = false;
      this.writing = this.writing.then(() => this.flush(count, snapshot));
    });
  }

  private async flush(count: number, snapshot: () => Item[]): Promise<void> {
    const lines = this.pending;
    this.pending = [];
    if (lines.length === 0 || this.failed) return;
    this.lines += lines.length;
    if (this.lines > 2 * count + 1_000) {
      await this.closeHandle();
      try {
        await replaceFile(this.options.tmpDir, this.options.path, snapshotText(this.options.kind, snapshot()));
        this.lines = 0;
      } catch (error) {
        this.fail(error);
      }
      return;
    }
    try {
      this.descriptor ??= openSync(this.options.path, 'a');
      const bytes = Buffer.from(lines.join(''));
      for (let written = 0; written < bytes.length;)
        written += writeSync(this.descriptor, bytes, written, bytes.length - written);
    } catch (error) {
      this.fail(error);
    }
  }

  private fail(error: unknown): void {
    if (!this.failed) this.options.onWriteFailure(error);
    this.failed = true;
  }

  /** Settles once every item added so far is written (or its write failed). */
  async settled(): Promise<void> {
    while (this.scheduled || this.pending.length > 0) {
      await new Promise((resolve) => setImmediate(resolve));
      await this.writing;
    }
    await this.writing;
  }

  /** Writes what is pending and syncs the file; true when every write since the load reached it. */
  async close(): Promise<boolean> {
    await this.settled();
    if (this.descriptor !== undefined && !this.failed) {
      try {
        fsyncSync(this.descriptor);
      } catch (error) {
        this.fail(error);
      }
    }
    await this.closeHandle();
    return !this.failed;
  }

  private async closeHandle(): Promise<void> {
    const descriptor = this.descriptor;
    this.descriptor = undefined;
    if (descriptor !== undefined) {
      try {
        closeSync(descriptor);
      } catch {
        // Closing a descriptor of derived data: nothing to keep.
      }
    }
  }
}

function snapshotText(kind: string, items: readonly unknown[]): string {
  return `${JSON.stringify({ kind, formatVersion: FORMAT_VERSION })}\n${JSON.stringify(items)}\n`;
}

function parseJournal<Item>(
  text: string,
  kind: string,
  isItem: (value: unknown) => value is Item,
): { items: Item[]; lines: number } | undefined {
  const lines = text.split('\n');
  // The last element is what follows the last newline: empty, or a line torn by a crash.
  lines.pop();
  if (lines.length < 2) return undefined;
  try {
    const header = JSON.parse(lines[0]!) as { kind?: unknown; formatVersion?: unknown };
    if (header.kind !== kind || header.formatVersion !== FORMAT_VERSION) return undefined;
    const snapshot = JSON.parse(lines[1]!) as unknown;
    if (!Array.isArray(snapshot) || !snapshot.every(isItem)) return undefined;
    const items: Item[] = snapshot;
    for (let index = 2; index < lines.length; index++) {
      const item = JSON.parse(lines[index]!) as unknown;
      if (!isItem(item)) return undefined;
      items.push(item);
    }
    return { items, lines: lines.length - 2 };
  } catch {
    return undefined;
  }
}
