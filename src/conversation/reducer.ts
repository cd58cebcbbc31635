import { canTransition, hasStatus, isStreamable, type ConversationBlock } from './blocks.js';
import { MAIN_CONVERSATION, type MetadataUpdateEvent, type StreamEvent } from './events.js';
import type { ConversationState, SessionMetrics, SubagentThread } from './session-data.js';

/**
 * The one reducer. The server, the TUI, the web UI and replay all rebuild conversations with it,
 * so they cannot disagree. Pure: the input state is never mutated; unchanged parts are shared.
 *
 * Idempotent: an event whose `seq` is at or below `state.lastSeq` is already in and changes nothing,
 * so a client may re-apply a replayed range without doubling text.
 */
export function applyEvent(state: ConversationState, event: StreamEvent): ConversationState {
  return applyEvents(state, [event]);
}

/** Applies events in order, copying the state's arrays once for the whole batch (load and replay are O(n)). */
export function applyEvents(state: ConversationState, events: Iterable<StreamEvent>): ConversationState {
  const working = applyToCopy(state, undefined, events);
  return working ? working.finish() : state;
}

/** Applies events to `working` (made from `state` when the first event is new), and returns it. */
function applyToCopy(
  state: ConversationState,
  working: WorkingCopy | undefined,
  events: Iterable<StreamEvent>,
): WorkingCopy | undefined {
  for (const event of events) {
    if (event.seq <= (working?.lastSeq ?? state.lastSeq)) continue;
    if (event.sessionId !== state.sessionId) continue;
    working ??= new WorkingCopy(state);
    working.apply(event);
  }
  return working;
}

/** One `applyEvents` over a log that arrives in parts: see `foldInParts`. */
export interface ConversationFold {
  /** Applies the next part of the log (at or below the last `seq` applied is skipped, as in `applyEvents`). */
  add(events: Iterable<StreamEvent>): void;
  /** The state after every part added so far; the fold takes no more parts after it. */
  finish(): ConversationState;
}

/**
 * Folds a log that arrives in parts (a client reading a long history page by page) with one
 * working copy for all of them: the result is `applyEvents(state, all the parts)`, and so is the
 * cost. Folding each part with its own `applyEvents` copied the block list and rebuilt its id index
 * once per part (a 12,000-block history read in four pages indexed 24,000 blocks, where one fold indexes each block once).
 * `finish` hands out the working copy itself, so adding after it throws instead of changing a state
 * someone holds.
 */
export function foldInParts(state: ConversationState): ConversationFold {
  let working: WorkingCopy | undefined;
  let finished = false;
  return {
    add(events) {
      if (finished)
        throw new Error(
          'This fold is finished: its state has been handed out. Start a new fold from that state (foldInParts) to apply more events.',
        );
      working = applyToCopy(state, working, events);
    },
    finish() {
      finished = true;
      return working ? working.finish() : state;
    },
  };
}

/** A copy-on-first-write working copy of one state, private to a single `applyEvents` call. */
class WorkingCopy {
  lastSeq: number;
  private blocks: ConversationBlock[] | undefined;
  private subagents: SubagentThread[] | undefined;
  private readonly copiedThreads = new Set<string>();
  /** id → position, built on the first lookup that misses the recent window; kept current on push. */
  private readonly indexes = new Map<ConversationBlock[], Map<string, number>>();
  private metrics: SessionMetrics | undefined;

  constructor(private readonly base: ConversationState) {
    this.lastSeq = base.lastSeq;
  }

  apply(event: StreamEvent): void {
    this.lastSeq = event.seq;
    switch (event.type) {
      case 'block_start':
        this.upsert(event.conversationId, event.block, false);
        if (event.block.type === 'subagent') this.thread(event.block.subagentId);
        return;
      case 'block_complete': {
        const block = event.block;
        this.upsert(event.conversationId, block, true, block.completedAt === undefined ? event.at : undefined);
        if (block.type === 'subagent') this.thread(block.subagentId);
        return;
      }
      case 'text_delta':
        this.modify(event.conversationId, event.blockId, (block) =>
          isStreamable(block) ? { ...block, content: block.content + event.delta, updatedAt: event.at } : block,
        );
        return;
      case 'block_update':
        this.modify(event.conversationId, event.blockId, (block) => mergeUpdates(block, event.updates, event.at));
        return;
      case 'metadata_update':
        this.metrics = foldMetadata(this.metrics ?? this.base.metrics, event);
        return;
    }
  }

  finish(): ConversationState {
    return {
      sessionId: this.base.sessionId,
      lastSeq: this.lastSeq,
      blocks: this.blocks ?? this.base.blocks,
      subagents: this.subagents ?? this.base.subagents,
      metrics: this.metrics ?? this.base.metrics,
    };
  }

  private list(conversationId: string): ConversationBlock[] {
    if (conversationId === MAIN_CONVERSATION) {
      this.blocks ??= [...this.base.blocks];
      return this.blocks;
    }
    return this.thread(conversationId).blocks;
  }

  /** The subagent thread, created when first addressed, copied once per batch before writing. */
  private thread(id: string): SubagentThread {
    this.subagents ??= [...this.base.subagents];
    let index = this.subagents.findIndex((thread) => thread.id === id);
    if (index === -1) {
      this.subagents.push({ id, blocks: [] });
      this.copiedThreads.add(id);
      index = this.subagents.length - 1;
    }
    let thread = this.subagents[index]!;
    if (!this.copiedThreads.has(id)) {
      thread = { ...thread, blocks: [...thread.blocks] };
      this.subagents[index] = thread;
      this.copiedThreads.add(id);
    }
    return thread;
  }

  /**
   * Puts `block` in its list (new) or in place of the one with its id. `completedAt`, when given,
   * is stamped on it. The block stored is the event's own when it needs no stamp, else one copy:
   * a block's fields differ by kind, so a copy is a slow, shape-generic clone, and a history of
   * 12,000 blocks paid two of them per block when the stamps were made one after the other.
   */
  private upsert(conversationId: string, block: ConversationBlock, complete: boolean, completedAt?: number): void {
    const blocks = this.list(conversationId);
    const index = this.indexOf(blocks, block.id);
    if (index === -1) {
      blocks.push(stamped(block, completedAt, block.seq ?? this.lastSeq));
      this.indexes.get(blocks)?.set(block.id, blocks.length - 1);
      return;
    }
    const existing = blocks[index]!;
    // A completed block is final: a late block_start for it must not roll it back.
    if (!complete && existing.completedAt !== undefined) return;
    blocks[index] = stamped(block, completedAt, existing.seq ?? block.seq ?? this.lastSeq, true);
  }

  /** Position of a block in a working list, -1 when absent. O(1) amortized over a batch (a load of n events is O(n)). */
  private indexOf(blocks: ConversationBlock[], id: string): number {
    const stop = Math.max(0, blocks.length - RECENT_WINDOW);
    for (let index = blocks.length - 1; index >= stop; index--) if (blocks[index]!.id === id) return index;
    if (stop === 0) return -1;
    let index = this.indexes.get(blocks);
    if (!index) {
      index = new Map();
      for (let position = 0; position < blocks.length; position++) index.set(blocks[position]!.id, position);
      this.indexes.set(blocks, index);
    }
    return index.get(id) ?? -1;
  }

  private modify(
    conversationId: string,
    blockId: string,
    change: (block: ConversationBlock) => ConversationBlock,
  ): void {
    const blocks = this.list(conversationId);
    const index = this.indexOf(blocks, blockId);
    if (index === -1) return;
    blocks[index] = change(blocks[index]!);
  }
}

/**
 * `block` with `completedAt` (when given) and `seq` set, in that order: the block itself when both
 * are already so and `copy` is not asked for, else one copy.
 */
function stamped(
  block: ConversationBlock,
  completedAt: number | undefined,
  seq: number,
  copy = false,
): ConversationBlock {
  if (!copy && completedAt === undefined && block.seq === seq) return block;
  const next = { ...block };
  if (completedAt !== undefined) next.completedAt = completedAt;
  next.seq = seq;
  return next;
}

/** Blocks in flight are at the end: look there first, before paying for an index. */
const RECENT_WINDOW = 16;

/** Fields an update may never change: identity and kind. */
const FROZEN_FIELDS = new Set(['id', 'type', 'createdAt']);

function mergeUpdates(block: ConversationBlock, updates: Record<string, unknown>, at: number): ConversationBlock {
  const next: Record<string, unknown> = { ...block, updatedAt: at };
  for (const [key, value] of Object.entries(updates)) {
    if (FROZEN_FIELDS.has(key)) continue;
    if (key === 'status' && hasStatus(block)) {
      if (typeof value !== 'string' || !canTransition(block.status, value as typeof block.status)) continue;
    }
    next[key] = value;
  }
  return next as ConversationBlock;
}

function foldMetadata(metrics: SessionMetrics, event: MetadataUpdateEvent): SessionMetrics {
  const update = event.metadata;
  const next = { ...metrics };
  const usage = update.usage;
  if (usage) {
    next.inputTokens += usage.inputTokens;
    next.outputTokens += usage.outputTokens;
    next.cacheReadTokens += usage.cacheReadTokens;
    next.cacheWriteTokens += usage.cacheWriteTokens;
  }
  if (update.costUsd !== undefined) next.costUsd += update.costUsd;
  if (update.costUnknown) next.costUnknown = true;
  if (update.costEstimated) next.costEstimated = true;
  // Occupancy, window and turns describe the main conversation; workers only add to the totals.
  if (event.conversationId !== MAIN_CONVERSATION) return next;
  if (usage) {
    next.lastInputTokens = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
    next.lastOutputTokens = usage.outputTokens;
  }
  if (update.estimatedInputTokens !== undefined) next.lastEstimatedInputTokens = update.estimatedInputTokens;
  if (update.contextWindow !== undefined) next.contextWindow = update.contextWindow;
  if (update.maxOutputTokens !== undefined) next.maxOutputTokens = update.maxOutputTokens;
  if (update.model !== undefined) next.model = update.model;
  if (update.turnComplete) next.turns += 1;
  return next;
}
