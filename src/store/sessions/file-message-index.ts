import { promises as fs, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { IndexJournal } from './index-journal.js';
import { SearchSegment } from './file-search-segment.js';
import { snippetOf, termsOf, type IndexedMessage, type SessionSearchHit } from './session-search.js';

/**
 * The file store's search index: every message of every session (see `messageOf`), in the order
 * they were appended. Most of them sit in a segment on disk (`index/messages-<n>.segment`, see
 * file-search-segment.ts), read a word's postings and a hit's message at a time; the ones added
 * since are in `index/messages.jsonl` and in memory, until there are enough of them to merge
 * into the next segment. So a process's first search reads the segment's dictionary, the
 * journal, and the postings of the words it looks for, not the whole index. A search intersects
 * the lists of its words from the newest end and stops at the limit, so it costs the hits and the
 * rarest word's list, not the sessions.
 *
 * Derived data: the logs are the truth. It is added to after an append is durable, rebuilt from the
 * logs when it is missing or damaged, and brought up to date from them after a crash (index-journal.ts);
 * it never writes inside a session's folder.
 */

/** `[sessionId, seq, blockId, conversationId, role, at, text]`, role `u` or `a`. */
type Item = [
  sessionId: string,
  seq: number,
  blockId: string,
  conversationId: string,
  role: 'u' | 'a',
  at: number,
  text: string,
];

function isItem(value: unknown): value is Item {
  return (
    Array.isArray(value) &&
    value.length === 7 &&
    typeof value[0] === 'string' &&
    Number.isSafeInteger(value[1]) &&
    typeof value[2] === 'string' &&
    typeof value[3] === 'string' &&
    (value[4] === 'u' || value[4] === 'a') &&
    Number.isSafeInteger(value[5]) &&
    typeof value[6] === 'string'
  );
}

export function itemOf(sessionId: string, seq: number, message: IndexedMessage): Item {
  return [
    sessionId,
    seq,
    message.blockId,
    message.conversationId,
    message.role === 'user' ? 'u' : 'a',
    message.at,
    message.text,
  ];
}

export interface MessageIndexOptions {
  /** `index/messages.jsonl`: the messages added since the newest segment was written. */
  path: string;
  tmpDir: string;
  onWriteFailure: (error: unknown) => void;
  /** Messages added since the segment before they are merged into a new one (default 20,000). */
  mergeAt?: number;
}

const SEGMENT_NAME = /^messages-(\d+)\.segment$/;
const DEFAULT_MERGE_AT = 20_000;

export class MessageIndex {
  /** The messages on disk (file-search-segment.ts); undefined before the first is written. */
  private segment: SearchSegment | undefined;
  private generation = 0;
  /** Messages added since the segment was written, kept in memory and in the journal. */
  private tail: Item[] = [];
  /** Word → ordinals in the tail, counted on from the segment's last (so a merge keeps them). */
  private readonly postings = new Map<string, number[]>();
  /** The newest `seq` indexed per session (the segment's table read only when needed). */
  private indexedThrough: Map<string, number> | undefined;
  private readonly tailThrough = new Map<string, number>();
  private readonly journal: IndexJournal<Item>;
  private readonly folder: string;
  private readonly mergeAt: number;
  private merging: Promise<void> | undefined;

  constructor(private readonly options: MessageIndexOptions) {
    this.folder = dirname(options.path);
    this.mergeAt = options.mergeAt ?? DEFAULT_MERGE_AT;
    this.journal = new IndexJournal<Item>({
      path: options.path,
      tmpDir: options.tmpDir,
      kind: 'parley-message-index',
      isItem,
      onWriteFailure: options.onWriteFailure,
    });
  }

  private get base(): number {
    return this.segment?.count ?? 0;
  }

  /**
   * Opens the newest whole segment and reads the journal of what came after it; false when the
   * journal is missing or damaged, or the segment it follows is (then `rebuild` it).
   */
  async load(): Promise<boolean> {
    const items = await this.journal.load();
    if (items === undefined) return false;
    const generations = segmentGenerations(this.folder);
    const newest = generations.at(-1);
    if (newest !== undefined) {
      const segment = SearchSegment.open(join(this.folder, segmentName(newest)));
      if (segment === undefined) return false;
      this.segment = segment;
      this.generation = newest;
      // Older generations are left by a crash between a merge's rename and its clean-up.
      for (const old of generations.slice(0, -1)) rmSync(join(this.folder, segmentName(old)), { force: true });
    }
    for (const item of items) this.remember(item);
    // An index written before segments existed holds everything in its journal: it is merged now.
    if (this.tail.length >= this.mergeAt) this.merging = this.merge();
    return true;
  }

  /** Replaces the whole index with these items (every message of every log): one new segment, an empty journal. */
  async rebuild(items: readonly Item[]): Promise<void> {
    this.tail = [];
    this.postings.clear();
    this.tailThrough.clear();
    this.indexedThrough = new Map();
    const old = this.segment;
    const generation = this.generation + 1;
    const path = join(this.folder, segmentName(generation));
    // Too few for a segment to pay: they stay in the journal until a merge.
    if (items.length < this.mergeAt) {
      this.segment = undefined;
      old?.close();
      for (const item of items) this.remember(item);
      await this.journal.rewrite(() => this.tail);
      this.removeOlderSegments(Number.POSITIVE_INFINITY);
      return;
    }
    try {
      await SearchSegment.write({ path, tmpDir: this.options.tmpDir, base: undefined, items, termsOf: itemTerms });
      this.segment = SearchSegment.open(path);
      if (this.segment === undefined) throw new Error(`${path} could not be read back`);
      this.generation = generation;
      for (const item of items) this.noteSeq(item);
      old?.close();
      await this.journal.rewrite(() => []);
      this.removeOlderSegments();
    } catch (error) {
      // The segment could not be written: hold every item in memory and in the journal instead.
      this.options.onWriteFailure(error);
      this.segment = undefined;
      old?.close();
      for (const item of items) this.remember(item);
      await this.journal.rewrite(() => this.tail);
    }
  }

  private seqs(): Map<string, number> {
    if (this.indexedThrough === undefined) {
      this.indexedThrough = this.segment?.sessions() ?? new Map();
      for (const [sessionId, seq] of this.tailThrough) this.noteSeq([sessionId, seq]);
    }
    return this.indexedThrough;
  }

  private noteSeq(item: readonly [string, number, ...unknown[]]): void {
    const seqs = this.indexedThrough;
    if (seqs !== undefined && item[1] > (seqs.get(item[0]) ?? -1)) seqs.set(item[0], item[1]);
  }

  /** The newest `seq` of the session this index holds, -1 when none. */
  indexedSeq(sessionId: string): number {
    return this.seqs().get(sessionId) ?? -1;
  }

  /** Adds messages of a session (in `seq` order); ones already held are skipped. Never throws. */
  add(items: readonly Item[]): void {
    for (const item of items) {
      if (this.remember(item)) this.journal.add(item, this.tail.length, () => this.tail);
    }
    if (this.tail.length >= this.mergeAt && this.merging === undefined) this.merging = this.merge();
  }

  /** Adds messages to the file only: before the index is loaded in this process, the load reads them there. */
  addToFile(items: readonly Item[]): void {
    // Never compacted from here: this process does not hold the items a snapshot would need.
    for (const item of items) this.journal.add(item, Number.POSITIVE_INFINITY, () => this.tail);
  }

  private remember(item: Item): boolean {
    if (item[1] <= this.indexedSeq(item[0])) return false;
    this.seqs().set(item[0], item[1]);
    this.tailThrough.set(item[0], item[1]);
    const position = this.base + this.tail.push(item) - 1;
    for (const term of termsOf(item[6])) {
      const list = this.postings.get(term);
      if (list === undefined) this.postings.set(term, [position]);
      else list.push(position);
    }
    return true;
  }

  /**
   * Writes the segment and the tail so far as the next generation, then keeps in memory (and in
   * the journal) only what was added meanwhile. The ordinals of those stay as they were.
   */
  private async merge(): Promise<void> {
    const merged = this.tail.length;
    const generation = this.generation + 1;
    const path = join(this.folder, segmentName(generation));
    try {
      await this.journal.settled();
      await SearchSegment.write({
        path,
        tmpDir: this.options.tmpDir,
        base: this.segment,
        items: this.tail.slice(0, merged),
        termsOf: itemTerms,
      });
      const segment = SearchSegment.open(path);
      if (segment === undefined) throw new Error(`${path} could not be read back`);
      const old = this.segment;
      this.segment = segment;
      this.generation = generation;
      this.tail = this.tail.slice(merged);
      this.tailThrough.clear();
      for (const item of this.tail) this.tailThrough.set(item[0], item[1]);
      for (const [term, list] of this.postings) {
        const kept = list.filter((position) => position >= segment.count);
        if (kept.length === 0) this.postings.delete(term);
        else this.postings.set(term, kept);
      }
      old?.close();
      // The journal now holds only what the segment does not; a crash before this line leaves
      // items in both, which `remember` skips at the next load.
      await this.journal.rewrite(() => this.tail);
      this.removeOlderSegments();
    } catch (error) {
      await fs.rm(path, { force: true }).catch(() => undefined);
      this.options.onWriteFailure(error);
    } finally {
      this.merging = undefined;
    }
  }

  private removeOlderSegments(below = this.generation): void {
    for (const generation of segmentGenerations(this.folder))
      if (generation < below) rmSync(join(this.folder, segmentName(generation)), { force: true });
  }

  private postingsOf(term: string): ArrayLike<number> {
    const onDisk = this.segment?.postings(term);
    const inMemory = this.postings.get(term);
    if (onDisk === undefined || onDisk.length === 0) return inMemory ?? [];
    if (inMemory === undefined) return onDisk;
    const list = new Uint32Array(onDisk.length + inMemory.length);
    list.set(onDisk);
    list.set(inMemory, onDisk.length);
    return list;
  }

  private itemAt(position: number): Item | undefined {
    if (position >= this.base) return this.tail[position - this.base];
    const item = this.segment!.item(position);
    return isItem(item) ? item : undefined;
  }

  /** The newest messages holding every term. */
  search(terms: readonly string[], limit: number): SessionSearchHit[] {
    if (terms.length === 0) return [];
    const lists: Array<ArrayLike<number>> = [];
    for (const term of terms) {
      const list = this.postingsOf(term);
      if (list.length === 0) return [];
      lists.push(list);
    }
    lists.sort((a, b) => a.length - b.length);
    const [rarest, ...others] = lists as [ArrayLike<number>, ...Array<ArrayLike<number>>];
    const hits: SessionSearchHit[] = [];
    for (let index = rarest.length - 1; index >= 0 && hits.length < limit; index--) {
      const position = rarest[index]!;
      if (!others.every((list) => holds(list, position))) continue;
      const item = this.itemAt(position);
      // A segment whose bytes were changed under it: the hit is left out (the next rebuild mends it).
      if (item === undefined) continue;
      const [sessionId, seq, blockId, conversationId, role, at, text] = item;
      hits.push({
        sessionId,
        seq,
        blockId,
        conversationId,
        role: role === 'u' ? 'user' : 'assistant',
        snippet: snippetOf(text, terms),
        at,
      });
    }
    return hits;
  }

  async settled(): Promise<void> {
    await this.merging;
    await this.journal.settled();
  }

  async close(): Promise<boolean> {
    await this.merging;
    const clean = await this.journal.close();
    this.segment?.close();
    return clean;
  }
}

function itemTerms(item: Item): string[] {
  return termsOf(item[6]);
}

function segmentName(generation: number): string {
  return `messages-${generation}.segment`;
}

/** The generations of the segments in the folder, oldest first. */
function segmentGenerations(folder: string): number[] {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  const generations: number[] = [];
  for (const name of names) {
    const match = SEGMENT_NAME.exec(name);
    if (match) generations.push(Number(match[1]));
  }
  return generations.sort((a, b) => a - b);
}

/** Binary search in an ascending list. */
function holds(list: ArrayLike<number>, value: number): boolean {
  let low = 0;
  let high = list.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const found = list[middle]!;
    if (found === value) return true;
    if (found < value) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}
