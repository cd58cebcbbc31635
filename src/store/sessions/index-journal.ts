import { closeSync, fsyncSync, openSync, promises as fs, writeSync } from 'node:fs';
import { replaceFile, isErrno } from '../atomic-file.js';

/**
 * The file an index of the file store is kept in: a header line (saying how many snapshot lines
 * follow), the snapshot (one item a line), then one line per item added since (a later line for the same key wins, as the
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

const FORMAT_VERSION = 2;

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
    const parts = await this.loadParts();
    if (parts === undefined) return undefined;
    const items = parseSnapshot(parts.snapshot, this.options.isItem);
    return items === undefined ? undefined : [...items, ...parts.added];
  }

  /**
   * The snapshot's lines unparsed (a reader that needs only the first few parses only those, see
   * `parseSnapshot`) and the items added since, parsed and checked; undefined when the file is
   * missing or damaged.
   */
  async loadParts(): Promise<{ snapshot: string[]; added: Item[] } | undefined> {
    let text: string;
    try {
      text = await fs.readFile(this.options.path, 'utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT') || isErrno(error, 'EISDIR')) return undefined;
      throw error;
    }
    const parts = splitJournal(text, this.options.kind, this.options.isItem);
    if (parts !== undefined) this.lines = parts.added.length;
    return parts;
  }

  /**
   * Replaces the file with a snapshot of the items, durably; clears an earlier failure. A function
   * is called when the write starts, so items added while earlier writes finish are in it.
   */
  async rewrite(items: readonly Item[] | (() => readonly Item[])): Promise<void> {
    const run = this.writing.then(async () => {
      await this.closeHandle();
      this.pending = [];
      const snapshot = typeof items === 'function' ? items() : items;
      try {
        await replaceFile(this.options.tmpDir, this.options.path, snapshotText(this.options.kind, snapshot));
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

/**
 * Version 2: the header says how many snapshot lines follow, one item each, so a reader can parse
 * the first few alone. Version 1 (one line holding the whole snapshot as a JSON array) is read too.
 */
function snapshotText(kind: string, items: readonly unknown[]): string {
  const lines = [JSON.stringify({ kind, formatVersion: FORMAT_VERSION, snapshot: items.length })];
  for (const item of items) lines.push(JSON.stringify(item));
  return `${lines.join('\n')}\n`;
}

/** The snapshot's lines parsed and checked; undefined when one is not an item. */
export function parseSnapshot<Item>(
  lines: readonly string[],
  isItem: (value: unknown) => value is Item,
): Item[] | undefined {
  const items: Item[] = [];
  try {
    for (const line of lines) {
      const item = JSON.parse(line) as unknown;
      if (!isItem(item)) return undefined;
      items.push(item);
    }
  } catch {
    return undefined;
  }
  return items;
}

function splitJournal<Item>(
  text: string,
  kind: string,
  isItem: (value: unknown) => value is Item,
): { snapshot: string[]; added: Item[] } | undefined {
  const lines = text.split('\n');
  // The last element is what follows the last newline: empty, or a line torn by a crash.
  lines.pop();
  if (lines.length < 1) return undefined;
  try {
    const header = JSON.parse(lines[0]!) as { kind?: unknown; formatVersion?: unknown; snapshot?: unknown };
    if (header.kind !== kind) return undefined;
    let snapshot: string[];
    let rest: number;
    if (header.formatVersion === 1) {
      if (lines.length < 2) return undefined;
      const whole = JSON.parse(lines[1]!) as unknown;
      if (!Array.isArray(whole)) return undefined;
      snapshot = whole.map((item) => JSON.stringify(item));
      rest = 2;
    } else if (header.formatVersion === FORMAT_VERSION && Number.isSafeInteger(header.snapshot)) {
      const count = header.snapshot as number;
      if (lines.length < 1 + count) return undefined;
      snapshot = lines.slice(1, 1 + count);
      rest = 1 + count;
    } else return undefined;
    const added: Item[] = [];
    for (let index = rest; index < lines.length; index++) {
      const item = JSON.parse(lines[index]!) as unknown;
      if (!isItem(item)) return undefined;
      added.push(item);
    }
    return { snapshot, added };
  } catch {
    return undefined;
  }
}
