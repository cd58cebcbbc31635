import type { SessionFilter, SessionRecord } from './records.js';
import { compareListingKeys, decodeCursor, encodeCursor, pageLimit, type ListingKey } from './session-page.js';
import { IndexJournal } from './index-journal.js';

/**
 * The file store's listing index, `index/sessions.jsonl`: one small entry per session (its place in
 * the listing order and what filters select on), kept sorted in memory, so a page is a binary
 * search and a walk instead of a read of every `session.json`. Derived data: session.json stays
 * the truth, a page's records are read from it, and the index is rebuilt from the records when it
 * is missing, damaged, or may have missed a change (see index-journal.ts).
 */

/** `[sessionId, pinned, activity, status, type, agentType, scopeKind, featureId, taskId, taskState, tags]` */
type Entry = [
  sessionId: string,
  pinned: 0 | 1,
  activity: number,
  status: string,
  type: string,
  agentType: string,
  scopeKind: string,
  featureId: string | null,
  taskId: string | null,
  taskState: string | null,
  tags: string[],
];

export function entryOf(record: SessionRecord): Entry {
  const scope = record.scope;
  return [
    record.sessionId,
    record.pinned === true ? 1 : 0,
    record.lastActivity ?? record.updatedAt,
    record.status,
    record.type,
    record.agentType,
    scope.kind,
    scope.kind === 'feature' || scope.kind === 'task' ? scope.featureId : null,
    scope.kind === 'task' ? scope.taskId : null,
    scope.kind === 'task' ? scope.taskState : null,
    record.tags ?? [],
  ];
}

function keyOf(entry: Entry): ListingKey {
  return { pinned: entry[1] === 1, activity: entry[2], sessionId: entry[0] };
}

function matches(entry: Entry, filter: SessionFilter): boolean {
  return (
    (filter.status === undefined || entry[3] === filter.status) &&
    (filter.type === undefined || entry[4] === filter.type) &&
    (filter.agentType === undefined || entry[5] === filter.agentType) &&
    (filter.scopeKind === undefined || entry[6] === filter.scopeKind) &&
    (filter.featureId === undefined || entry[7] === filter.featureId) &&
    (filter.taskId === undefined || entry[8] === filter.taskId) &&
    (filter.taskState === undefined || entry[9] === filter.taskState) &&
    (filter.tag === undefined || entry[10].includes(filter.tag)) &&
    (filter.pinned === undefined || (entry[1] === 1) === filter.pinned)
  );
}

function isEntry(value: unknown): value is Entry {
  return (
    Array.isArray(value) &&
    value.length === 11 &&
    typeof value[0] === 'string' &&
    (value[1] === 0 || value[1] === 1) &&
    Number.isSafeInteger(value[2]) &&
    Array.isArray(value[10])
  );
}

export class ListingIndex {
  private readonly entries = new Map<string, Entry>();
  /** Every entry in listing order. */
  private sorted: Entry[] = [];
  private readonly journal: IndexJournal<Entry>;

  constructor(path: string, tmpDir: string, onWriteFailure: (error: unknown) => void) {
    this.journal = new IndexJournal<Entry>({
      path,
      tmpDir,
      kind: 'parley-session-index',
      isItem: isEntry,
      onWriteFailure,
    });
  }

  /** Reads the index; false when it is missing or damaged (then `rebuild` it). */
  async load(): Promise<boolean> {
    const items = await this.journal.load();
    if (items === undefined) return false;
    for (const entry of items) this.entries.set(entry[0], entry);
    this.sorted = [...this.entries.values()].sort((a, b) => compareListingKeys(keyOf(a), keyOf(b)));
    return true;
  }

  /** Replaces the whole index with these records' entries, written anew. */
  async rebuild(records: readonly SessionRecord[]): Promise<void> {
    this.entries.clear();
    for (const record of records) this.entries.set(record.sessionId, entryOf(record));
    this.sorted = [...this.entries.values()].sort((a, b) => compareListingKeys(keyOf(a), keyOf(b)));
    await this.journal.rewrite([...this.entries.values()]);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Records a session's new state in memory and in the journal; a journal write that fails is reported, never thrown. */
  put(record: SessionRecord): void {
    const entry = entryOf(record);
    const old = this.entries.get(record.sessionId);
    if (old !== undefined && JSON.stringify(old) === JSON.stringify(entry)) return;
    if (old !== undefined) this.sorted.splice(this.positionOf(keyOf(old)), 1);
    this.sorted.splice(this.positionOf(keyOf(entry)), 0, entry);
    this.entries.set(entry[0], entry);
    this.journal.add(entry, this.entries.size, () => [...this.entries.values()]);
  }

  /** The ids of one page and the next page's cursor. */
  page(
    filter: SessionFilter,
    limit: number | undefined,
    cursor: string | undefined,
  ): { sessionIds: string[]; nextCursor?: string } {
    const size = pageLimit(limit);
    let index = 0;
    if (cursor !== undefined) {
      const after = decodeCursor(cursor);
      index = this.positionOf(after);
      // The cursor's own session (if it is still there, unchanged) was on the page before.
      if (index < this.sorted.length && compareListingKeys(keyOf(this.sorted[index]!), after) === 0) index++;
    }
    const found: Entry[] = [];
    for (; index < this.sorted.length && found.length <= size; index++) {
      const entry = this.sorted[index]!;
      if (matches(entry, filter)) found.push(entry);
    }
    const page = found.slice(0, size);
    return {
      sessionIds: page.map((entry) => entry[0]),
      ...(found.length > size ? { nextCursor: encodeCursor(keyOf(page.at(-1)!)) } : {}),
    };
  }

  /** The first position whose entry is not listed before `key`. */
  private positionOf(key: ListingKey): number {
    let low = 0;
    let high = this.sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareListingKeys(keyOf(this.sorted[middle]!), key) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Writes what is pending and syncs it; true when every write since the open reached the file. */
  close(): Promise<boolean> {
    return this.journal.close();
  }
}
