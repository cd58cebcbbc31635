import type { JsonObject } from '../json.js';
import type { WindowLimits } from './thread.js';

/** A record read before its parent, held until the parent is placed. */
export interface HeldRecord {
  record: JsonObject;
  lineNumber: number;
  bytes: number;
}

/**
 * Places records by their `parentUuid` chain rather than by file order: Claude Code may write a
 * child before its parent (concurrent writers, a flush out of order), so a record whose parent has
 * not been read yet is held until the parent arrives, then placed right after it.
 *
 * What is held is bounded like the thread windows: past the limits the oldest held record is let go
 * in file order (its parent may be in another file, e.g. a session resumed from an earlier one), and
 * `end` lets every one still held go in file order.
 */
export class ChainOrder {
  private readonly placed = new Set<string>();
  /** Parent uuid → the records waiting for it, in file order. */
  private readonly waiting = new Map<string, HeldRecord[]>();
  private heldRecords = 0;
  private heldBytes = 0;

  constructor(private readonly limits: WindowLimits) {}

  /** Whether a record naming this parent can be placed now. */
  isPlaced(uuid: string): boolean {
    return this.placed.has(uuid);
  }

  markPlaced(uuid: string): void {
    this.placed.add(uuid);
  }

  hold(parent: string, held: HeldRecord): void {
    const list = this.waiting.get(parent);
    if (list === undefined) this.waiting.set(parent, [held]);
    else list.push(held);
    this.heldRecords++;
    this.heldBytes += held.bytes;
  }

  get overLimits(): boolean {
    return this.heldRecords > this.limits.records || this.heldBytes > this.limits.bytes;
  }

  /** The records that waited for this uuid, in file order (removed from the held set). */
  takeChildren(uuid: string): HeldRecord[] | undefined {
    if (this.heldRecords === 0) return undefined;
    const list = this.waiting.get(uuid);
    if (list === undefined) return undefined;
    this.waiting.delete(uuid);
    for (const held of list) this.forget(held);
    return list;
  }

  /** The held record read first, whatever it waits for. */
  takeOldest(): HeldRecord | undefined {
    let oldestParent: string | undefined;
    let oldest: HeldRecord | undefined;
    for (const [parent, list] of this.waiting) {
      const first = list[0]!;
      if (oldest === undefined || first.lineNumber < oldest.lineNumber) {
        oldest = first;
        oldestParent = parent;
      }
    }
    if (oldest === undefined || oldestParent === undefined) return undefined;
    const list = this.waiting.get(oldestParent)!;
    list.shift();
    if (list.length === 0) this.waiting.delete(oldestParent);
    this.forget(oldest);
    return oldest;
  }

  private forget(held: HeldRecord): void {
    this.heldRecords--;
    this.heldBytes -= held.bytes;
  }
}
