import type { TurnMetadata } from '../../../conversation/index.js';
import { numberOf, type JsonObject } from '../json.js';
import { groupMetadata, type MessageGroup } from './thread.js';

/**
 * Usage and cost, each counted once: an API message's usage (repeated on each of its records, and
 * again by a resumed session) once per `message.id:requestId`, and the session's cumulative
 * `cost-state` totals as per-turn deltas.
 */
export class UsageLedger {
  private readonly messageKeys = new Set<string>();
  private lastTotalCost: number | undefined;
  private costSeen = false;
  private usageSeen = false;

  /** Usage was reported but never a cost: the cost is unknown, not zero. */
  get costUnknown(): boolean {
    return this.usageSeen && !this.costSeen;
  }

  /** A finished API message's metadata (possibly empty); undefined when that message was counted already. */
  message(group: MessageGroup, endsTurns: boolean): TurnMetadata | undefined {
    if (this.messageKeys.has(group.key)) return undefined;
    this.messageKeys.add(group.key);
    if (group.usage !== undefined) this.usageSeen = true;
    if (group.costUsd !== undefined) this.costSeen = true;
    return groupMetadata(group, endsTurns);
  }

  /** A `cost-state` record's metadata: the cost since the previous one, and whether some model's cost is unknown. */
  costState(record: JsonObject): TurnMetadata {
    const total = numberOf(record['totalCostUSD']);
    const metadata: TurnMetadata = {};
    if (total !== undefined) {
      this.costSeen = true;
      // `totalCostUSD` is cumulative per session; Parley keeps per-turn deltas.
      const delta = total - (this.lastTotalCost ?? 0);
      this.lastTotalCost = total;
      if (delta > 0) metadata.costUsd = delta;
    }
    if (record['hasUnknownModelCost'] === true) metadata.costUnknown = true;
    return metadata;
  }
}
