import { matchesFilter, type SessionFilter, type SessionRecord } from './records.js';

interface Entry {
  record: SessionRecord;
  /** The record as JSON, made on the first copy: parsing it back is cheaper than structuredClone. */
  json?: string;
}

/**
 * The session records this process has read or written. The file store holds the folder's lock,
 * so nothing else changes them and this index stays true; it hands out copies only.
 */
export class RecordIndex {
  private readonly entries = new Map<string, Entry>();

  has(sessionId: string): boolean {
    return this.entries.has(sessionId);
  }

  /** The stored record itself: for reading inside the store, never to hand out. */
  peek(sessionId: string): SessionRecord | undefined {
    return this.entries.get(sessionId)?.record;
  }

  set(record: SessionRecord): void {
    this.entries.set(record.sessionId, { record });
  }

  copy(sessionId: string): SessionRecord | undefined {
    const entry = this.entries.get(sessionId);
    return entry === undefined ? undefined : copyOf(entry);
  }

  /** Copies of the records matching `filter`, taken now. */
  matching(filter: SessionFilter | undefined): SessionRecord[] {
    const copies: SessionRecord[] = [];
    for (const entry of this.entries.values()) if (matchesFilter(entry.record, filter)) copies.push(copyOf(entry));
    return copies;
  }
}

function copyOf(entry: Entry): SessionRecord {
  entry.json ??= JSON.stringify(entry.record);
  return JSON.parse(entry.json) as SessionRecord;
}
