import type { TurnMetadata, Usage } from '../../../conversation/index.js';
import { computeCost, lookupModel } from '../../pricing.js';
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
  /** Usage of messages without a recorded cost, by model: priced from the table when the file records no cost at all. */
  private readonly unpricedUsage = new Map<string, Usage>();

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
    else if (group.usage !== undefined) addUsage(this.unpricedUsage, group.model ?? '', group.usage);
    return groupMetadata(group, endsTurns);
  }

  /**
   * When the file recorded usage but never a cost (no `costUSD`, no `cost-state`: most Claude Code
   * versions), the cost of that usage at the price table's list prices, marked as an estimate; a
   * model the table does not know leaves the cost unknown. Undefined when there is nothing to price.
   */
  estimate(): TurnMetadata | undefined {
    if (this.costSeen || this.unpricedUsage.size === 0) return undefined;
    let costUsd = 0;
    let unknown = false;
    for (const [model, usage] of this.unpricedUsage) {
      const cost = computeCost(lookupModel(model)?.pricing, usage);
      if ('costUsd' in cost) costUsd += cost.costUsd;
      else unknown = true;
    }
    if (costUsd === 0) return unknown ? { costUnknown: true } : undefined;
    return { costUsd, costEstimated: true, ...(unknown ? { costUnknown: true } : {}) };
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

function addUsage(byModel: Map<string, Usage>, model: string, usage: Usage): void {
  const sum = byModel.get(model);
  if (sum === undefined) {
    byModel.set(model, { ...usage });
    return;
  }
  sum.inputTokens += usage.inputTokens;
  sum.outputTokens += usage.outputTokens;
  sum.cacheReadTokens += usage.cacheReadTokens;
  sum.cacheWriteTokens += usage.cacheWriteTokens;
}
