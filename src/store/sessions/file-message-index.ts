import { IndexJournal } from './index-journal.js';
import { snippetOf, termsOf, type IndexedMessage, type SessionSearchHit } from './session-search.js';

/**
 * The file store's search index, `index/messages.jsonl`: every message of every session (see
 * `messageOf`), and in memory an inverted index from each word to the messages holding it, in the
 * order they were appended. A search intersects the lists of its words from the newest end and
 * stops at the limit, so it costs the hits and the rarest word's list, not the sessions.
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

export class MessageIndex {
  private items: Item[] = [];
  private readonly postings = new Map<string, number[]>();
  /** The newest `seq` indexed per session: an item at or below it is already here. */
  private readonly indexedThrough = new Map<string, number>();
  private readonly journal: IndexJournal<Item>;

  constructor(path: string, tmpDir: string, onWriteFailure: (error: unknown) => void) {
    this.journal = new IndexJournal<Item>({ path, tmpDir, kind: 'parley-message-index', isItem, onWriteFailure });
  }

  /** Reads the index; false when it is missing or damaged (then `rebuild` it). */
  async load(): Promise<boolean> {
    const items = await this.journal.load();
    if (items === undefined) return false;
    for (const item of items) this.remember(item);
    return true;
  }

  /** Replaces the whole index with these items (every message of every log), written anew. */
  async rebuild(items: readonly Item[]): Promise<void> {
    this.items = [];
    this.postings.clear();
    this.indexedThrough.clear();
    for (const item of items) this.remember(item);
    await this.journal.rewrite(this.items);
  }

  /** The newest `seq` of the session this index holds, -1 when none. */
  indexedSeq(sessionId: string): number {
    return this.indexedThrough.get(sessionId) ?? -1;
  }

  /** Adds messages of a session (in `seq` order); ones already held are skipped. Never throws. */
  add(items: readonly Item[]): void {
    for (const item of items) {
      if (this.remember(item)) this.journal.add(item, this.items.length, () => this.items);
    }
  }

  /** Adds messages to the file only: before the index is loaded in this process, the load reads them there. */
  addToFile(items: readonly Item[]): void {
    // Never compacted from here: this process does not hold the items a snapshot would need.
    for (const item of items) this.journal.add(item, Number.POSITIVE_INFINITY, () => this.items);
  }

  private remember(item: Item): boolean {
    if (item[1] <= this.indexedSeq(item[0])) return false;
    this.indexedThrough.set(item[0], item[1]);
    const position = this.items.push(item) - 1;
    for (const term of termsOf(item[6])) {
      const list = this.postings.get(term);
      if (list === undefined) this.postings.set(term, [position]);
      else list.push(position);
    }
    return true;
  }

  /** The newest messages holding every term. */
  search(terms: readonly string[], limit: number): SessionSearchHit[] {
    if (terms.length === 0) return [];
    const lists: number[][] = [];
    for (const term of terms) {
      const list = this.postings.get(term);
      if (list === undefined) return [];
      lists.push(list);
    }
    lists.sort((a, b) => a.length - b.length);
    const [rarest, ...others] = lists as [number[], ...number[][]];
    const hits: SessionSearchHit[] = [];
    for (let index = rarest.length - 1; index >= 0 && hits.length < limit; index--) {
      const position = rarest[index]!;
      if (!others.every((list) => holds(list, position))) continue;
      const [sessionId, seq, blockId, conversationId, role, at, text] = this.items[position]!;
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

  settled(): Promise<void> {
    return this.journal.settled();
  }

  close(): Promise<boolean> {
    return this.journal.close();
  }
}

/** Binary search in an ascending list. */
function holds(list: readonly number[], value: number): boolean {
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
