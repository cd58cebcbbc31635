import type { SessionFilter, SessionRecord } from './records.js';
import { compareListingKeys, decodeCursor, encodeCursor, pageLimit, type ListingKey } from './session-page.js';
import { IndexJournal, parseSnapshot } from './index-journal.js';

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

/** A page of `size` from `found` (which holds one more when there is a next page). */
function pageFrom(found: readonly Entry[], size: number): { sessionIds: string[]; nextCursor?: string } {
  const page = found.slice(0, size);
  return {
    sessionIds: page.map((entry) => entry[0]),
    ...(found.length > size ? { nextCursor: encodeCursor(keyOf(page.at(-1)!)) } : {}),
  };
}

export class ListingIndex {
  private readonly entries = new Map<string, Entry>();
  /** The snapshot's lines as read, until something needs them all. */
  private unparsed: string[] | undefined;
  /** Entries added after the snapshot, until it is parsed. */
  private added: Entry[] = [];
  private broken = false;
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

  /**
   * Reads the index; false when it is missing or damaged (then `rebuild` it). The snapshot, kept in
   * listing order, stays unparsed until something needs more than the first page of it.
   */
  async load(): Promise<boolean> {
    const parts = await this.journal.loadParts();
    if (parts === undefined) return false;
    this.unparsed = parts.snapshot;
    this.added = parts.added;
    return true;
  }

  /** True when the snapshot turned out damaged once parsed: the index must be rebuilt. */
  get damaged(): boolean {
    return this.broken;
  }

  /** Parses the whole snapshot (once), with what was added since. */
  private parse(): void {
    if (this.unparsed === undefined) return;
    const snapshot = parseSnapshot(this.unparsed, isEntry);
    this.unparsed = undefined;
    if (snapshot === undefined) {
      this.broken = true;
      return;
    }
    for (const entry of [...snapshot, ...this.added]) this.entries.set(entry[0], entry);
    this.added = [];
    this.sorted = [...this.entries.values()].sort((a, b) => compareListingKeys(keyOf(a), keyOf(b)));
  }

  /**
   * The first page while the snapshot is unparsed: its lines from the top, skipping sessions that
   * changed since (their newer entry is among the added ones), merged with those. Undefined when
   * a line is not an entry or out of order: the whole snapshot is parsed instead.
   */
  private firstPage(filter: SessionFilter, size: number): Entry[] | undefined {
    const lines = this.unparsed!;
    const changed = new Map<string, Entry>();
    for (const entry of this.added) changed.set(entry[0], entry);
    const newer = [...changed.values()].sort((a, b) => compareListingKeys(keyOf(a), keyOf(b)));
    const found: Entry[] = [];
    let next = 0;
    let previous: Entry | undefined;
    for (let index = 0; index < lines.length && found.length <= size; index++) {
      let entry: unknown;
      try {
        entry = JSON.parse(lines[index]!);
      } catch {
        return undefined;
      }
      if (!isEntry(entry) || (previous !== undefined && compareListingKeys(keyOf(previous), keyOf(entry)) > 0))
        return undefined;
      previous = entry;
      if (changed.has(entry[0])) continue;
      for (; next < newer.length && compareListingKeys(keyOf(newer[next]!), keyOf(entry)) < 0; next++)
        if (matches(newer[next]!, filter)) found.push(newer[next]!);
      if (matches(entry, filter)) found.push(entry);
    }
    for (; next < newer.length && found.length <= size; next++)
      if (matches(newer[next]!, filter)) found.push(newer[next]!);
    return found.slice(0, size + 1);
  }

  /** Replaces the whole index with these records' entries, written anew. */
  async rebuild(records: readonly SessionRecord[]): Promise<void> {
    this.unparsed = undefined;
    this.added = [];
    this.broken = false;
    this.entries.clear();
    for (const record of records) this.entries.set(record.sessionId, entryOf(record));
    this.sorted = [...this.entries.values()].sort((a, b) => compareListingKeys(keyOf(a), keyOf(b)));
    await this.journal.rewrite(this.sorted);
  }

  get size(): number {
    this.parse();
    return this.entries.size;
  }

  /** Records a session's new state in memory and in the journal; a journal write that fails is reported, never thrown. */
  put(record: SessionRecord): void {
    this.parse();
    if (this.broken) return;
    const entry = entryOf(record);
    const old = this.entries.get(record.sessionId);
    if (old !== undefined && JSON.stringify(old) === JSON.stringify(entry)) return;
    if (old !== undefined) this.sorted.splice(this.positionOf(keyOf(old)), 1);
    this.sorted.splice(this.positionOf(keyOf(entry)), 0, entry);
    this.entries.set(entry[0], entry);
    this.journal.add(entry, this.entries.size, () => this.sorted);
  }

  /** The ids of one page and the next page's cursor. */
  page(
    filter: SessionFilter,
    limit: number | undefined,
    cursor: string | undefined,
  ): { sessionIds: string[]; nextCursor?: string } {
    const size = pageLimit(limit);
    // The first page of a process that has not parsed the snapshot: its head alone.
    const head = cursor === undefined && this.unparsed !== undefined ? this.firstPage(filter, size) : undefined;
    if (head !== undefined) return pageFrom(head, size);
    this.parse();
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
    return pageFrom(found, size);
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
